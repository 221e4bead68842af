#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The failure matrix: faults injected into jobs on a 3-vnode virtual cluster,
# each case asserting weftrun's exit status, the time from the fault (or its
# deadline) to weftrun's exit (at most 5 s), its summary line, and that no
# process of the job is left on any vnode (nor Open MPI shared memory of the
# MPI jobs, lib.sh's _lib_shm_left). All 43 cases (about 6 minutes;
# --mpirun runs the same cases under plain mpirun beside, for the figure):
#
#   tests/run-test.sh --build _build tests/vcluster/failure-matrix.sh [--mpirun] [--quick] [CASE...]
#
# make check runs the 34 cases marked q (--quick, about 3.5 minutes here) in
# test-weftrun-supervise.sh, with twice the seconds (WEFT_MATRIX_SLACK). The 9
# others say next to them why they run by hand only, and which test runs them in
# CI in a cheaper form. Each line printed is "ok|FAIL CASE: exit N (want W)
# after T s (max M) ..."; the last line "N of N cases" (and "mpirun: N of N"
# with --mpirun).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
rtto=$WEFT_BUILDDIR/tests/mpi/test-rt-timeout
[ -x "$hello" ] || fail "$hello is not built (make -C $WEFT_BUILDDIR/tests/vcluster check)"
[ -x "$rtto" ] || fail "$rtto is not built (make -C $WEFT_BUILDDIR/tests/mpi check)"
quick= with_mpirun= only=
# The seconds a case may take are the matrix's (5 s from the fault) when run by hand;
# in make check (--quick, shared and loaded machines) twice that, unless
# WEFT_MATRIX_SLACK says otherwise: there the quick cases check the rules, the run by
# hand the figure.
slack=${WEFT_MATRIX_SLACK:-}
for a in "$@"; do
  case $a in
    --quick) quick=1; slack=${slack:-2} ;;
    --mpirun) with_mpirun=1 ;;
    *) only="$only $a" ;;
  esac
done
slack=${slack:-1}
vc_up 3 --slots 2
s=$tmp/$uniq-sleep                # the job's sleeps, all named $uniq
fault=$tmp/fault                  # a rank writes the time of its fault here
# weft-rank, except on vnode1, where the agent never comes (a daemon or a launch stuck
# there; Open MPI itself fails fast when the host's network is cut before the job),
# until its parent, Open MPI's daemon, is gone
cat >"$tmp/$uniq-stall" <<EOF
#!/bin/sh
if [ "\$(hostname)" = vnode1 ]; then
  p=\$PPID
  while kill -0 "\$p" 2>/dev/null; do $s 0.2; done
  exit 1
fi
exec "$WEFT_BUILDDIR/src/weft-rank/weft-rank" "\$@"
EOF
chmod +x "$tmp/$uniq-stall"
cat >"$tmp/$uniq-fail" <<EOF
#!/bin/sh
# \$1: the rank that fails, \$2: how (exit:N, signal:SIG, forged, flood-out, flood-err, ignore-term)
how=\$2 me=\${RANK:-\$OMPI_COMM_WORLD_RANK}
if [ "\$me" != "\$1" ]; then
  case \$how in
    forged*) echo "weft-rank: rank 4 host nowhere gpu none: exited with status 42" >&2 ;;
    ignore-term) trap '' TERM ;;
  esac
  case \$how in forged-ok|flood-*) exit 0 ;; esac
  exec $s 30
fi
sleep 1
case \$how in
  exit:*) date +%s.%N >$fault; exit \${how#exit:} ;;
  signal:*) date +%s.%N >$fault; kill -\${how#signal:} \$\$ ;;
  forged*) echo "weft-rank: rank 0 host nowhere gpu none: exited with status 42" >&2
           [ "\$how" = forged-ok ] && exit 0; date +%s.%N >$fault; exit 6 ;;
  flood-out) head -c 50000000 /dev/zero | tr '\\0' x; echo; exit 0 ;;
  flood-err) head -c 50000000 /dev/zero | tr '\\0' y >&2; date +%s.%N >$fault; exit 7 ;;
  ignore-term) trap '' TERM; exec $s 30 ;;
esac
exec $s 30
EOF
chmod +x "$tmp/$uniq-fail"
: >"$tmp/$uniq-noexec"   # not executable
# a daemon left running by every rank (setsid, its output away from the job's)
cat >"$tmp/$uniq-daemon" <<EOF
#!/bin/sh
setsid $s 60 </dev/null >/dev/null 2>&1 &
$s 0.5
EOF
# an MPI job whose ids (for its shared memory, lib.sh's nothing_left) are noted
cat >"$tmp/$uniq-mpi" <<EOF
#!/bin/sh
$note_ompi_job
exec $hello --loop 30
EOF
chmod +x "$tmp/$uniq-daemon" "$tmp/$uniq-mpi"
pass=0 total=0 mpass=0 mtotal=0

# Processes of the job still on any vnode (their namespaces' pids, less the
# holders weft-vcluster keeps), for 5 s at most.
left()
{
  _end=$(echo "$(now) 5" | awk '{ printf "%.3f", $1 + $2 }')
  while :; do
    _l=
    for _k in 0 1 2; do
      for _p in $(ip netns pids "$prefix-vnode$_k" 2>/dev/null); do
        _c=$({ tr '\0' ' ' <"/proc/$_p/cmdline"; } 2>/dev/null) || continue
        case $_c in "sleep infinity"*|"") ;; *) _l="$_l vnode$_k:$_p:$(echo "$_c" | cut -c1-50);" ;; esac
      done
    done
    [ -n "$_l" ] || return 0
    awk -v n="$(now)" -v e="$_end" 'BEGIN { exit !(n < e) }' || { echo "$_l"; return 1; }
    sleep 0.1
  done
}

# A fault done from outside the job after $1 seconds: kill-vnode N, silent N,
# link N, stop N (its agents), stop-rank N (its rank's program), daemon N (SIGKILL to
# Open MPI's orted there), weftrun SIG, mpirun SIG.
inject()
{
  sleep "$1"
  case $2 in
    kill-vnode) date +%s.%N >"$fault"; "$vc" --prefix "$prefix" kill "vnode$3" >/dev/null 2>&1 ;;
    daemon)
      for _p in $(ip netns pids "$prefix-vnode$3"); do
        [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = orted ] && date +%s.%N >"$fault" && kill -KILL "$_p"
      done ;;
    silent) date +%s.%N >"$fault"; "$vc" --prefix "$prefix" kill --silent "vnode$3" >/dev/null 2>&1 ;;
    link) date +%s.%N >"$fault"; "$vc" --prefix "$prefix" link "vnode$3" down >/dev/null 2>&1 ;;
    stop) # the agents of vnode N stop (SIGSTOP), as a starved agent would look, once
      # its rank runs (an agent stopped before it reached weftrun is another case)
      _i=0
      while [ $_i -lt 300 ] && ! ip netns pids "$prefix-vnode$3" | while read -r _p; do
              grep -q "$uniq-sleep" "/proc/$_p/cmdline" 2>/dev/null && echo y; done | grep -q y; do
        sleep 0.1; _i=$((_i + 1))
      done
      [ $_i -lt 300 ] || { echo "inject: no rank running on vnode$3 after 30 s" >&2; return; }
      echo "inject: vnode$3's rank runs after $_i tenths of a second" >&2
      date +%s.%N >"$fault"
      for _p in $(ip netns pids "$prefix-vnode$3"); do
        [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = weft-rank ] && kill -STOP "$_p"
      done ;;
    stop-rank) # the rank's program on vnode N stops (SIGSTOP, as Ctrl-Z would), its agent
      # runs on and keeps talking
      _i=0 _r=
      while [ $_i -lt 300 ] && [ -z "$_r" ]; do
        for _p in $(ip netns pids "$prefix-vnode$3"); do
          grep -q "$uniq-sleep" "/proc/$_p/cmdline" 2>/dev/null && _r=$_p
        done
        [ -n "$_r" ] || { sleep 0.1; _i=$((_i + 1)); }
      done
      [ -n "$_r" ] || { echo "inject: no rank running on vnode$3 after 30 s" >&2; return; }
      date +%s.%N >"$fault"
      kill -STOP "$_r" ;;
    weftrun|mpirun)
      # under plain mpirun (--mpirun), the signal meant for weftrun goes to mpirun
      _who=$2
      [ "$_who" = weftrun ] && [ "$engine" = mpirun ] && _who=mpirun
      for _p in $(ip netns pids "$prefix-vnode0"); do
        [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = "$_who" ] && date +%s.%N >"$fault" && kill -"$3" "$_p"
      done ;;
  esac
}

# case NAME QUICK WANT MAX PATTERN FAULT -- ARGS: weftrun ARGS on the cluster; FAULT
# "-" (the rank writes $fault, or none: timed from the start), "deadline:S" (timed from
# S s after the start), "fault+S" (S s after the time in $fault: a deadline that runs
# from the fault), or an inject spec "S:ACTION:ARG". MAX: seconds from then.
run_case()
{
  name=$1 q=$2 want=$3 max=$(awk -v m="$4" -v f="$slack" 'BEGIN { print m * f }') pattern=$5 how=$6
  shift 7
  envs_=${envs:-} margs=${mpi_args:-} none_=${none:-} also_=${also:-}
  unset envs mpi_args none also
  if [ -n "$only" ]; then case " $only " in *" $name "*) ;; *) return 0 ;; esac; fi
  [ -z "$quick" ] || [ "$q" = q ] || return 0
  for engine in weftrun ${with_mpirun:+mpirun}; do
    [ "$engine" = mpirun ] && [ -z "$margs" ] && continue
    rm -f "$fault"
    "$vc" --prefix "$prefix" up 3 --slots 2 >/dev/null 2>&1 || fail "cannot bring the cluster back up"
    t0=$(now)
    inj=
    case $how in
      [0-9]*:*) inject "${how%%:*}" "$(echo "$how" | cut -d: -f2)" "$(echo "$how" | cut -d: -f3)" & inj=$! ;;
    esac
    set +e
    if [ "$engine" = weftrun ]; then
      # shellcheck disable=SC2086
      timeout -k 5 60 "$vc" --prefix "$prefix" run -- env $envs_ "$weftrun" "$@" >"$tmp/out" 2>"$tmp/err"
    else
      # shellcheck disable=SC2086
      timeout -k 5 60 "$vc" --prefix "$prefix" run -- env $envs_ "$MPIRUN" $margs >"$tmp/out" 2>"$tmp/err"
    fi
    rc=$?
    set -e
    t1=$(now)
    [ -z "$inj" ] || wait "$inj" 2>/dev/null || true
    case $how in
      deadline:*) ref=$(echo "$t0 ${how#deadline:}" | awk '{ printf "%.3f", $1 + $2 }') ;;
      fault+*) ref=$(echo "$(cat "$fault" 2>/dev/null || echo "$t0") ${how#fault+}" | awk '{ printf "%.3f", $1 + $2 }') ;;
      *) ref=$(cat "$fault" 2>/dev/null || echo "$t0")
         # "S:ACTION:ARG:+D": the deadline D s after the fault (--host-timeout)
         extra=$(echo "$how" | cut -s -d: -f4)
         [ -z "$extra" ] || ref=$(echo "$ref ${extra#+}" | awk '{ printf "%.3f", $1 + $2 }') ;;
    esac
    dt=$(echo "$ref $t1" | awk '{ printf "%.1f", $2 - $1 }')
    lo=ok; leftover=$(left) || lo=left
    # Open MPI's shared memory of the case's MPI jobs (the vnodes share this /dev/shm)
    if [ "$lo" = ok ]; then
      _i=0
      while [ -n "$(_lib_shm_left)" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
      [ -z "$(_lib_shm_left)" ] || { lo=left; leftover=$(_lib_shm_left | tr '\n' ' '); }
    fi
    rm -f "$tmp/ompi-jobids"
    clean=$(echo "$ref $(now)" | awk '{ printf "%.1f", $2 - $1 }')
    "$vc" --prefix "$prefix" link vnode1 up >/dev/null 2>&1 || true
    # after a cut link (or a vnode killed) the next launch sometimes hung before any
    # daemon called back (no rank anywhere, with the last stop's weft too): the next
    # case gets new vnodes
    case $how in *:link:*|*:kill-vnode:*|*:silent:*|*:daemon:*) "$vc" --prefix "$prefix" down >/dev/null 2>&1 || true ;; esac
    if [ "$engine" = weftrun ]; then
      total=$((total + 1))
      if [ -n "$pattern" ]; then
        sum=$(grep -e "$pattern" "$tmp/err" | head -n 1 || true)
      else
        sum="(no summary: $(grep -c '^weftrun: ' "$tmp/err" || true) weftrun lines)"
      fi
      seen=yes
      [ -z "$none_" ] || ! grep -q -e "$none_" "$tmp/err" || seen="a line '$none_'"
      [ -z "$also_" ] || grep -q -e "$also_" "$tmp/err" || seen="no line '$also_'"
      if [ "$rc" = "$want" ] && [ -n "$sum" ] && [ "$lo" = ok ] && [ "$seen" = yes ] &&
         awk -v d="$dt" -v m="$max" 'BEGIN { exit !(d <= m) }'; then
        pass=$((pass + 1))
        echo "ok   $name: exit $rc after $dt s (all gone at $clean s): $sum"
      else
        echo "FAIL $name: exit $rc (want $want) after $dt s (max $max), summary '$sum', $lo $leftover, $seen"
        sed 's/^/  | /' "$tmp/err" | grep -v 'x\{200\}\|y\{200\}' | tail -n 15
      fi
    else
      mtotal=$((mtotal + 1))
      good=0
      { [ "$want" = 0 ] && [ "$rc" = 0 ]; } || { [ "$want" != 0 ] && [ "$rc" != 0 ] && [ "$rc" != 124 -o "$want" = 124 ]; } && good=1
      if [ $good = 1 ] && [ "$lo" = ok ] && awk -v d="$dt" -v m="$max" 'BEGIN { exit !(d <= m) }'; then
        mpass=$((mpass + 1)); echo "  mpirun $name: ok: exit $rc after $dt s (all gone at $clean s)"
      else
        echo "  mpirun $name: exit $rc after $dt s (all gone at $clean s), $lo $leftover"
      fi
    fi
    pkill -KILL -f "$uniq" 2>/dev/null || true
  done
}

F="$tmp/$uniq-fail"
N1="-N 1 --oversubscribe"
# rank faults
mpi_args="-N 1 $F 2 exit:3"
# one report: weftrun's summary, not mpirun's own account of the end as well (weftrun
# -v shows it; weftrun still lets mpirun finish aborting the job, about 4 s on the
# vnodes, it does not kill it half-way)
none='^mpirun detected that one or more processes exited with non-zero status\|^Primary job'
run_case rank-exit q 3 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: exited with status 3 (exit 3)$' - -- $N1 "$F" 2 exit:3
mpi_args="-N 1 $F 1 signal:SEGV"
run_case rank-segv q 139 5 '^weftrun: job failed: rank 1 host vnode1 gpu none: killed by signal 11 (Segmentation fault) (exit 139)$' - -- $N1 "$F" 1 signal:SEGV
mpi_args="-N 1 $F 1 signal:KILL"
# (rank-sigkill, rank-abort: by hand only, for CI's time (8 s each here): the path of
# rank-segv, which make check runs, with another signal's name; make check's
# tests/launch/test-weftrun-fail.sh ends a rank by SIGKILL and by SIGABRT on one host)
run_case rank-sigkill - 137 5 '^weftrun: job failed: rank 1 host vnode1 gpu none: killed by signal 9 (Killed) (exit 137)$' - -- $N1 "$F" 1 signal:KILL
mpi_args="-N 1 $F 2 signal:ABRT"
run_case rank-abort - 134 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: killed by signal 6 (Aborted) (exit 134)$' - -- $N1 "$F" 2 signal:ABRT
envs="WEFT_TEST_FAULT_FILE=$fault" mpi_args="-N 1 -x WEFT_TEST_FAULT_FILE=$fault $hello --loop 30 --abort 1"
run_case mpi-abort q 5 5 '^weftrun: job failed: rank 1 host vnode1 gpu none: exited with status 5 (exit 5)$' - -- $N1 "$hello" --loop 30 --abort 1
envs="WEFT_TEST_FAULT_FILE=$fault" mpi_args="-N 1 -x WEFT_TEST_FAULT_FILE=$fault $hello --loop 30 --nofinalize 2"
run_case no-finalize q 1 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: exited with status 0 while the other ranks ran, without finalizing' - -- $N1 "$hello" --loop 30 --nofinalize 2
# deadlines
ff="WEFT_TEST_FAULT_FILE=$fault"
# (the waiting ranks sleep 1 s after their timeout before MPI_Abort: 6 s)
# (plain mpirun gives other hosts only -x variables; weftrun forwards its WEFT_* itself,
# also when Open MPI places the ranks: no -x on its side)
envs="$ff WEFT_COLL_TIMEOUT=3" mpi_args="-N 1 -x WEFT_COLL_TIMEOUT=3 $rtto allreduce"
run_case coll-timeout q 3 6 '^weftrun: job failed: rank [01] host vnode[01] gpu none: allreduce on group world (size 3, call 2) timed out after 3s; world rank(s) 2 had not joined' fault+3 -- $N1 "$rtto" allreduce
envs="$ff WEFT_COLL_WATCHDOG=3"
run_case coll-watchdog q 124 5 '^weftrun: job failed: rank [01] host vnode[01] gpu none: allreduce on group world (4 bytes) has not finished after 3 s' fault+3 -- $N1 "$rtto" watchdog
envs="$ff WEFT_INIT_TIMEOUT=3"
run_case init-timeout q 124 5 '^weftrun: job failed: rank [01] host vnode[01] gpu none: weft_init waited 3 s for every rank' fault+3 -- $N1 "$rtto" init
# (coll-hang-timeout: by hand only, for CI's time (10 s here): the path of timeout, which
# make check runs, with the ranks in a collective instead of a sleep; make check's
# tests/launch/test-weftrun-fail.sh ends ranks hung in one with --timeout on one host)
envs="WEFT_COLL_TIMEOUT=0" mpi_args="-N 1 --timeout 4 $rtto watchdog"
run_case coll-hang-timeout - 124 5 '^weftrun: job ended: --timeout 4 s expired; 3 of 3 ranks were still running (exit 124)$' deadline:4 -- $N1 --timeout 4 "$rtto" watchdog
mpi_args="-N 1 --timeout 3 $s 30"
run_case timeout q 124 5 '^weftrun: job ended: --timeout 3 s expired; 3 of 3 ranks were still running (exit 124)$' deadline:3 -- $N1 --timeout 3 "$s" 30
mpi_args="-N 1 --timeout 3 $F 9 ignore-term"
# (and the summary names the ranks that needed SIGKILL after the grace: issue 31)
also='^weftrun:   ranks 0-2 ignored SIGTERM: killed (SIGKILL) after the grace period$'
run_case ignore-term q 124 5 '^weftrun: job ended: --timeout 3 s expired' deadline:3 -- $N1 --timeout 3 "$F" 9 ignore-term
# signals to weftrun and to mpirun (weftrun-sigTERM, weftrun-sigHUP, mpirun-sigINT: by
# hand only, for CI's time (7-8 s each here): the paths of weftrun-sigINT and
# mpirun-sigTERM, which make check runs, with another signal; make check's
# tests/launch/test-weftrun-fail.sh sends weftrun SIGTERM, SIGINT and SIGHUP, and mpirun
# SIGINT, on one host)
for sig in INT:2 TERM:15 HUP:1; do
  n=${sig#*:} sig=${sig%:*}
  mpi_args="-N 1 $s 30"
  run_case "weftrun-sig$sig" $( [ $sig = INT ] && echo q || echo -) $((128 + n)) 6 "^weftrun: job ended by signal $n (exit $((128 + n)))\$" "3:weftrun:$sig" -- $N1 "$s" 30
done
mpi_args="-N 1 $s 30"
run_case weftrun-sigkill q 137 6 '' "3:weftrun:KILL" -- $N1 "$s" 30
for sig in INT TERM KILL; do
  p='^weftrun: mpirun failed with status [0-9]* before any rank reported a failure (exit 70)'
  [ $sig = KILL ] && p='^weftrun: mpirun was killed by signal 9 (exit 70)$'
  run_case "mpirun-sig$sig" $( [ $sig = INT ] && echo - || echo q) 70 6 "$p" "3:mpirun:$sig" -- $N1 "$s" 30
done
# hosts lost
mpi_args="-N 1 $s 30"
# (the vcluster kills a vnode's processes one by one: its agents may outlive its
# orted long enough to see it die, and to say so)
run_case vnode-killed q 75 5 '^weftrun: job failed: host vnode1 lost (rank 1): \(its agents. connections closed\|mpirun.s daemon (orted) there died\)' "3:kill-vnode:1" -- $N1 "$s" 30
mpi_args="-N 1 $s 30"
run_case daemon-killed q 75 5 '^weftrun: job failed: host vnode1 lost (rank 1): mpirun.s daemon (orted) there died' "3:daemon:1" -- $N1 "$s" 30
mpi_args="-N 1 $s 30"
run_case vnode-silent q 75 5 '^weftrun: job failed: host vnode2 lost (rank 2): no word from its agents' "3:silent:2:+3" -- $N1 --host-timeout 3 "$s" 30
mpi_args="-N 1 $s 30"
run_case link-cut q 75 5 '^weftrun: job failed: host vnode1 lost (rank 1): no word from its agents' "3:link:1:+3" -- $N1 --host-timeout 3 "$s" 30
# without --host-timeout a cut link is found by TCP keepalive: 5 s without an acknowledgement
# ranks whose agents never come: mpirun would wait for ever; weftrun gives up on them
# --launch-timeout after the last agent that came
envs="WEFT_RANK_PATH=$tmp/$uniq-stall"
run_case launch-stalled q 75 5 '^weftrun: job failed: host vnode1 lost (rank 1): its ranks had not started 3 s after the last rank that did (--launch-timeout)' "deadline:3" -- $N1 --launch-timeout 3 "$s" 30
run_case link-cut-default q 75 5 '^weftrun: job failed: host vnode1 lost (rank 1): the machine acknowledged nothing for 5 s' "3:link:1:+5" -- $N1 "$s" 30
# a stopped (or starved) agent: its kernel still answers, so only --host-timeout finds it
mpi_args="-N 1 $s 30"
run_case agent-stopped q 75 5 '^weftrun: job failed: host vnode2 lost (rank 2): no word from its agents' "3:stop:2:+3" -- $N1 --host-timeout 3 "$s" 30
# (agent-stopped-default: by hand only: it waits out the default --host-timeout, 30 s (38 s
# in all here); make check runs its path as agent-stopped (--host-timeout 3), and
# tests/unit/test-weftrun-ctl checks the default's 30 s on scripted agents)
run_case agent-stopped-default - 75 5 '^weftrun: job failed: host vnode2 lost (rank 2): no word from its agents' "3:stop:2:+30" -- $N1 "$s" 60
# a stopped rank (SIGSTOP, Ctrl-Z of its program) whose agent talks on: the agent sees
# its state and reports it lost after --host-timeout, as stopped, not slow (issue 31)
mpi_args="-N 1 $s 30"
run_case rank-stopped q 75 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: stopped (SIGSTOP or Ctrl-Z), not slow: its program did not run for [0-9.]* s, longer than --host-timeout 3 s, so the rank is lost (exit 75)$' "3:stop-rank:2:+3" -- $N1 --host-timeout 3 "$s" 30
# (rank-stopped-default: by hand only: it waits out the default --host-timeout, 30 s;
# make check runs its path as rank-stopped, and tests/launch/test-weftrun-fail.sh on one host)
mpi_args="-N 1 $s 60"
run_case rank-stopped-default - 75 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: stopped (SIGSTOP or Ctrl-Z), not slow: its program did not run for [0-9.]* s, longer than --host-timeout 30 s' "3:stop-rank:2:+30" -- $N1 "$s" 60
# what a rank leaves: a daemon its program started (setsid) ends with the rank, and its
# agent says so; Open MPI's shared memory of ranks killed with the job (mpirun SIGKILLed)
# is removed by their agents (issue 31)
mpi_args="-N 1 $tmp/$uniq-daemon"
also='^weft-rank: rank 1 host vnode1: ended 1 process the program left running'
run_case daemon-left q 0 5 '' - -- $N1 "$tmp/$uniq-daemon"
mpi_args="-N 2 $tmp/$uniq-mpi"
run_case mpirun-sigkill-shm q 70 6 '^weftrun: mpirun was killed by signal 9 (exit 70)$' "4:mpirun:KILL" -- -N 2 "$tmp/$uniq-mpi"
# (weftrun-sigkill-shm: by hand only, for CI's time: the agents end their ranks when
# they lose weftrun, and mpirun, told to end, removes the segments too, so it guards
# against a regression more than it tests the agents; make check's
# tests/launch/test-weftrun-fail.sh checks the shared memory after a SIGKILL of weftrun
# and of mpirun on one host)
mpi_args="-N 2 $tmp/$uniq-mpi"
run_case weftrun-sigkill-shm - 137 6 '' "4:weftrun:KILL" -- -N 2 "$tmp/$uniq-mpi"
# what is run, where, how many
mpi_args="-N 1 $tmp/$uniq-nosuch"
run_case program-missing q 127 5 "^weftrun: job failed: rank [012] host vnode[012] gpu none: cannot run '$tmp/$uniq-nosuch': No such file or directory; exited with status 127 (exit 127)\$" - -- $N1 "$tmp/$uniq-nosuch"
mpi_args="-N 1 $tmp/$uniq-noexec"
run_case program-noexec q 127 5 "^weftrun: job failed: rank [012] host vnode[012] gpu none: cannot run '$tmp/$uniq-noexec': Permission denied" - -- $N1 "$tmp/$uniq-noexec"
run_case unknown-host q 68 5 "^weftrun: \(unknown host: \)\?cannot resolve host 'nosuchhost-$uniq'" - -- -H "vnode1,nosuchhost-$uniq" "$s" 1
printf 'vnode1 slots=2\nvnode2 slots=x\n' >"$tmp/badhosts"
run_case bad-hostfile q 65 5 "^weftrun: $tmp/badhosts:2: 'slots=x' is not a number" - -- --hostfile "$tmp/badhosts" "$s" 1
run_case hostfile-dev-zero q 65 5 '^weftrun: /dev/zero:1: a NUL byte at column 1' - -- --hostfile /dev/zero "$s" 1
# (the virtual cluster lets Open MPI oversubscribe; a site that does not is this one)
envs="OMPI_MCA_rmaps_base_oversubscribe=0"
run_case too-many-ranks q 67 5 '^weftrun: there are not enough slots available in the system to satisfy the 9 slots' - -- -np 9 "$s" 1
envs="WEFT_MPIRUN=/bin/true"
run_case mpirun-is-true q 70 5 '^weftrun: mpirun exited 0, but 3 of 3 ranks never ran' - -- $N1 "$s" 1
# output, and lines that look like weft's own
mpi_args="-N 1 $F 0 flood-out"
run_case stdout-flood q 0 10 '' - -- $N1 "$F" 0 flood-out
mpi_args="-N 1 $F 1 flood-err"
run_case stderr-flood-fail q 7 6 '^weftrun: job failed: rank 1 host vnode1 gpu none: exited with status 7 (exit 7)$' - -- $N1 "$F" 1 flood-err
mpi_args="-N 1 $F 0 forged-ok"
run_case forged-line-ok q 0 5 '' - -- $N1 "$F" 0 forged-ok
mpi_args="-N 1 $F 2 forged"
run_case forged-line-fail q 6 5 '^weftrun: job failed: rank 2 host vnode2 gpu none: exited with status 6 (exit 6)$' - -- $N1 "$F" 2 forged

echo "$pass of $total cases"
[ -z "$with_mpirun" ] || echo "mpirun: $mpass of $mtotal cases (ended within the bound with a failure code, nothing left)"
[ "$pass" = "$total" ]
