#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Failures end the whole job quickly, with weftrun's documented exit status,
# one summary line naming the rank, its host and GPU, and nothing left running:
# a rank exits 3; a rank is killed by SIGKILL, or SIGABRT; --timeout, also with
# ranks hung in a collective (named in it); SIGTERM, SIGINT and SIGHUP to
# weftrun; SIGINT to mpirun; a program that does not exist; output sent to
# files; a rank printing a failure line of weft-rank's (it changes nothing);
# one report per failure (mpirun's account of the end left to -v, a later failing
# peer named as a consequence);
# weft_init and collective deadlines naming the absent rank; SIGKILL of weftrun
# (nothing outlives it: no process, no Open MPI shared memory, and its job
# directory goes with the next weftrun); WEFT_MPIRUN=/bin/true; --get-stack-traces;
# a rank's program stopped (SIGSTOP), named as stopped; the ranks that ignored
# SIGTERM named; daemons a rank left ended with it, or kept with
# WEFT_KEEP_DAEMONS=1; Open MPI's shared memory of killed ranks removed. (Several
# are the failure matrix's cases that run by hand only on the virtual cluster:
# tests/vcluster/failure-matrix.sh.)
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs  # this host alone, whatever allocation or default hostfile the machine has
fail=0
s="$tmp/$uniq-sleep"

run() { # expected-code max-seconds summary-pattern weftrun-args...
  want=$1 max=$2 pattern=$3
  shift 3
  t0=$(now)
  set +e
  timeout 60 "$weftrun" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  dt=$(elapsed "$t0" "$(now)")
  if [ "$rc" != "$want" ] || { [ -n "$pattern" ] && ! grep -q -e "$pattern" "$tmp/err"; } ||
     [ "$dt" -gt "$max" ] || { [ -z "$pattern" ] && grep -q '^weftrun: ' "$tmp/err"; }; then
    echo "FAIL: weftrun $*: exit $rc (want $want) after ${dt}s (max $max); stderr:"
    cat "$tmp/err"
    fail=1
  else
    echo "ok ($rc, ${dt}s): $(if [ -n "$pattern" ]; then grep -e "$pattern" "$tmp/err"; else echo "no summary"; fi)"
  fi
  nothing_left || fail=1
}

run 3 15 '^weftrun: job failed: rank 2 host .* gpu none: exited with status 3 (exit 3)$' \
  -np 4 --oversubscribe sh -c "if [ \$RANK = 2 ]; then $s 0.5; exit 3; fi; exec $s 30"
run 137 15 '^weftrun: job failed: rank 1 host .* gpu none: killed by signal 9 (Killed) (exit 137)$' \
  -np 3 --oversubscribe sh -c "if [ \$RANK = 1 ]; then $s 0.5; kill -9 \$\$; fi; exec $s 30"
run 134 15 '^weftrun: job failed: rank 2 host .* gpu none: killed by signal 6 (Aborted) (exit 134)$' \
  -np 3 --oversubscribe sh -c "if [ \$RANK = 2 ]; then $s 0.5; kill -ABRT \$\$; fi; exec $s 30"
run 124 16 '^weftrun: job ended: --timeout 2 s expired; 2 of 2 ranks were still running (exit 124)$' \
  -np 2 --oversubscribe --timeout 2 "$s" 30
grep -q "^weftrun:   rank 1 host .* gpu none: pid [0-9]*, running for [0-9.]* s, never in a weft call" "$tmp/err" ||
  { echo "FAIL: --timeout does not name the running ranks:"; cat "$tmp/err"; fail=1; }
run 127 15 "^weftrun: job failed: rank [01] host .*: cannot run '$tmp/$uniq-nosuch'" \
  -np 2 --oversubscribe "$tmp/$uniq-nosuch"
# a GPU rank is named with its GPU (placement from a topology file)
run 3 15 '^weftrun: job failed: rank 1 host .* gpu [0-9] (0000:[0-9a-f:.]*): exited with status 3' \
  -np 2 --oversubscribe --topology "$WEFT_TOPDIR/share/weft/topologies/a3-highgpu-8g.xml" \
  sh -c "if [ \$RANK = 1 ]; then exit 3; fi; exec $s 30"

# SIGTERM (143), SIGINT (130) and SIGHUP (129) to weftrun end every rank
for sig in TERM:15 INT:2 HUP:1; do
  num=${sig#*:}
  sig=${sig%:*}
  want=$((128 + num))
  t0=$(now)
  timeout 60 "$weftrun" -np 3 --oversubscribe "$s" 30 >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  i=0
  while [ "$(pgrep -f "$s 30" | wc -l)" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -$sig $pid
  set +e
  wait $pid
  rc=$?
  set -e
  dt=$(elapsed "$t0" "$(now)")
  if [ "$rc" != $want ] || [ "$dt" -gt 20 ] || ! grep -q "job ended by signal $((want - 128)) (exit $want)" "$tmp/err"; then
    echo "FAIL: SIG$sig: exit $rc after ${dt}s:"; cat "$tmp/err"; fail=1
  else
    echo "ok ($rc, ${dt}s): SIG$sig"
  fi
  nothing_left || fail=1
done
# SIGINT to mpirun (a user's Ctrl-C meant for it): it ends the job and fails, before any
# rank did: exit 70, every rank ended
t0=$(now)
timeout 60 "$weftrun" -np 3 --oversubscribe "$s" 30 >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ "$(pgrep -f "$s 30" | wc -l)" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mp=
for p in $(pgrep -x mpirun); do
  grep -q "$uniq" "/proc/$p/cmdline" 2>/dev/null && mp=$p
done
if [ -z "$mp" ]; then
  echo "FAIL: SIGINT to mpirun: no mpirun of this job found"; fail=1
else
  kill -INT "$mp"
fi
set +e
wait $pid
rc=$?
set -e
dt=$(elapsed "$t0" "$(now)")
if [ -n "$mp" ]; then
  if [ "$rc" != 70 ] || [ "$dt" -gt 20 ] ||
     ! grep -q '^weftrun: mpirun failed with status [0-9]* before any rank reported a failure (exit 70)' "$tmp/err"; then
    echo "FAIL: SIGINT to mpirun: exit $rc after ${dt}s:"; cat "$tmp/err"; fail=1
  else
    echo "ok ($rc, ${dt}s): SIGINT to mpirun"
  fi
fi
nothing_left || fail=1
# a failing rank's output going to files: the control channel names it all the same
run 4 15 '^weftrun: job failed: rank 1 .*exited with status 4 (exit 4)$' \
  -np 3 --oversubscribe --output-filename "$tmp/outdir" sh -c "if [ \$RANK = 1 ]; then exit 4; fi; exec $s 30"
# forged failure lines change nothing: the job succeeds, or the real failure is named
run 0 15 '' -np 2 --oversubscribe sh -c 'echo "weft-rank: rank 1 host nowhere gpu none: exited with status 42" >&2'
run 5 15 '^weftrun: job failed: rank 0 host .* gpu none: exited with status 5 (exit 5)$' \
  -np 2 --oversubscribe sh -c "echo 'weft-rank: rank 1 host x gpu none: exited with status 42' >&2; if [ \$RANK = 0 ]; then $s 0.5; exit 5; fi; exec $s 30"
# weft deadlines: the absent rank is named, not the ranks that waited for it
rtto=$WEFT_BUILDDIR/tests/mpi/test-rt-timeout
if [ -x "$rtto" ]; then
  export WEFT_COLL_WATCHDOG=2
  run 124 15 '^weftrun:   absent: rank 2 host .* gpu none: pid [0-9]*, in no weft call' \
    -np 3 --oversubscribe "$rtto" watchdog
  unset WEFT_COLL_WATCHDOG
  export WEFT_INIT_TIMEOUT=2
  run 124 15 '^weftrun:   absent: rank 2 host .* gpu none: pid [0-9]*, running for .* never in a weft call' \
    -np 3 --oversubscribe "$rtto" init
  unset WEFT_INIT_TIMEOUT
  # no deadline of weft's: --timeout ends ranks hung in a collective, and names it
  export WEFT_COLL_TIMEOUT=0
  run 124 15 '^weftrun: job ended: --timeout 2 s expired; 3 of 3 ranks were still running (exit 124)$' \
    -np 3 --oversubscribe --timeout 2 "$rtto" watchdog
  [ "$(grep -c '^weftrun:   rank [01] host .* gpu none: pid [0-9]*, in allreduce on group world' "$tmp/err")" = 2 ] ||
    { echo "FAIL: --timeout does not name the collective ranks 0 and 1 are in:"; cat "$tmp/err"; fail=1; }
  unset WEFT_COLL_TIMEOUT
else
  echo "# $rtto not built: deadline cases left out"
fi
# a rank's program stopped (SIGSTOP, Ctrl-Z) while its agent runs on is lost after
# --host-timeout and named as stopped, not slow (issue 31)
run 75 15 '^weftrun: job failed: rank 1 host .* gpu none: stopped (SIGSTOP or Ctrl-Z), not slow: its program did not run for [0-9.]* s, longer than --host-timeout 3 s, so the rank is lost (exit 75)$' \
  -np 3 --oversubscribe --host-timeout 3 sh -c "if [ \$RANK = 1 ]; then $s 0.5; kill -STOP \$\$; fi; exec $s 30"
# a slow rank is not a stopped one: a rank that waits and computes longer than
# --host-timeout is not lost
run 0 15 '' -np 2 --oversubscribe --host-timeout 3 sh -c "$s 4; i=0; while [ \$i -lt 20000 ]; do i=\$((i + 1)); done"
# the ranks that ignored SIGTERM are named: SIGKILL ended them after the grace
run 124 16 '^weftrun:   ranks 0,2 ignored SIGTERM: killed (SIGKILL) after the grace period$' \
  -np 3 --oversubscribe --timeout 2 sh -c "if [ \$RANK != 1 ]; then trap '' TERM; fi; exec $s 30"
# what a rank's program left running (a setsid daemon, a double fork) ends with the
# rank, whose agent says so once; nothing_left (in run) finds what survived
run 0 15 '' -np 2 --oversubscribe sh -c "setsid $s 60 </dev/null >/dev/null 2>&1 & ( ( $s 61 </dev/null >/dev/null 2>&1 & ) & ); $s 0.5; exit 0"
[ "$(grep -c '^weft-rank: rank [01] host .*: ended 2 processes the program left running (WEFT_KEEP_DAEMONS=1 keeps them): [0-9]* (wft.*), [0-9]* (wft.*)$' "$tmp/err")" = 2 ] ||
  { echo "FAIL: the daemons ended are not said once per rank:"; cat "$tmp/err"; fail=1; }
# ... also when the rank fails, and a daemon that ignores SIGTERM
run 3 15 '^weftrun: job failed: rank 0 host .* gpu none: exited with status 3 (exit 3)$' \
  -np 1 sh -c "setsid sh -c 'trap \"\" TERM; exec $s 60' </dev/null >/dev/null 2>&1 & $s 0.5; exit 3"
grep -q '^weft-rank: rank 0 host .*: ended 1 process the program left running (WEFT_KEEP_DAEMONS=1 keeps them): [0-9]* (wft.*); SIGKILL after 1 s$' "$tmp/err" ||
  { echo "FAIL: the daemon that ignored SIGTERM is not said:"; cat "$tmp/err"; fail=1; }
# WEFT_KEEP_DAEMONS=1: a service the program must leave running is kept
rc=0
WEFT_KEEP_DAEMONS=1 timeout 60 "$weftrun" -np 1 sh -c "setsid $s 62 </dev/null >/dev/null 2>&1 & exit 0" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc = 0 ] && pgrep -f "$s 62" >/dev/null && ! grep -q '^weft-rank: ' "$tmp/err"; then
  echo "ok WEFT_KEEP_DAEMONS=1: the daemon kept"
else
  echo "FAIL: WEFT_KEEP_DAEMONS=1: exit $rc, daemon $(pgrep -f "$s 62" || echo gone):"; cat "$tmp/err"; fail=1
fi
pkill -KILL -f "$s 62" || true
nothing_left || fail=1
# --get-stack-traces: the stack of every rank still running when --timeout ends the job,
# or a line saying why there is none
if command -v eu-stack >/dev/null 2>&1 || command -v gdb >/dev/null 2>&1; then stack='nanosleep'
else stack='no stack: neither eu-stack (elfutils) nor gdb is installed'; fi
run 124 40 '^weftrun: stack of rank 1 host ' -np 2 --oversubscribe --timeout 2 --get-stack-traces "$s" 30
grep -q "$stack" "$tmp/err" || { echo "FAIL: --get-stack-traces: no '$stack':"; cat "$tmp/err"; fail=1; }
# no fixed buffers on the way: a 5,000-character -x value reaches the rank whole (defect 5)
long=$(awk 'BEGIN { while (i++ < 5000) printf "v" }')
run 0 15 '' -np 1 -x "LONG=$long" sh -c '[ ${#LONG} = 5000 ]'
# mpirun that runs nothing is not success
export WEFT_MPIRUN=/bin/true
run 70 15 '^weftrun: mpirun exited 0, but 2 of 2 ranks never ran' -np 2 --oversubscribe "$s" 1
unset WEFT_MPIRUN

# one report per failure: the program's own lines and weftrun's summary, nothing of
# mpirun's account of the end (its rules of dashes, "Primary job terminated normally",
# "Exit code: 143" for a --timeout) nor weft-rank's line, which the summary says; a peer
# that fails after the cause is named as its consequence; -v shows mpirun's account
one_voice() { # WHAT: stderr has only the given lines (a file of patterns, $tmp/want)
  if grep -q '^-----\|Primary job\|mpirun detected\|Exit code:\|^weft-rank: ' "$tmp/err" ||
     [ "$(grep -cvf "$tmp/want" "$tmp/err")" != 0 ]; then
    echo "FAIL: $1: more than one report:"; cat "$tmp/err"; fail=1
  else
    echo "ok $1: $(wc -l <"$tmp/err") lines on stderr"
  fi
}
run 3 15 '^weftrun: job failed: rank 1 host .* gpu none: exited with status 3 (exit 3)$' \
  -np 2 --oversubscribe sh -c "if [ \$RANK = 1 ]; then echo 'rank 1 fails' >&2; exit 3; fi; exec $s 30"
printf '%s\n' '^rank 1 fails$' '^weftrun: job failed: rank 1 ' >"$tmp/want"
one_voice "a rank exits 3"
run 3 15 '^weftrun:   then rank 0 host .* gpu none: exited with status 1 (after rank 1: a consequence, most likely)$' \
  -np 3 --oversubscribe sh -c "if [ \$RANK = 1 ]; then exit 3; fi; if [ \$RANK = 0 ]; then $s 0.3; echo 'Connection closed by peer' >&2; exit 1; fi; exec $s 30"
printf '%s\n' '^Connection closed by peer$' '^weftrun: job failed: rank 1 ' '^weftrun:   then rank 0 ' >"$tmp/want"
one_voice "a peer fails after the cause"
run 124 16 '^weftrun: job ended: --timeout 1 s expired' -np 2 --oversubscribe --timeout 1 "$s" 30
printf '%s\n' '^weftrun: ' >"$tmp/want"
one_voice "--timeout"
t0=$(now)
rc=0
timeout 60 "$weftrun" -v -np 2 --oversubscribe sh -c "if [ \$RANK = 1 ]; then exit 3; fi; exec $s 30" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc = 3 ] && grep -q '^Primary job  terminated normally' "$tmp/err"; then echo "ok -v: mpirun's account shown"
else echo "FAIL: -v: exit $rc, mpirun's account not shown:"; cat "$tmp/err"; fail=1; fi
nothing_left || fail=1

# SIGKILL of weftrun: the agents lose it, end their ranks; mpirun gets SIGTERM. With
# MPI ranks when they are built: none of their shared memory in /dev/shm is left
# (mpirun's orderly end removes it, and the agents do); the job directory is left
# to the next weftrun, which removes it
prog="$s 30"
[ -x "$rtto" ] && prog="$rtto watchdog"
WEFT_COLL_TIMEOUT=0 "$weftrun" -np 3 --oversubscribe sh -c "$note_ompi_job exec $prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ "$(pgrep -f "$prog" | wc -l)" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -x "$rtto" ]; then # every rank's segment made (MPI_Init done)
  while [ "$(_lib_shm_left | wc -l)" -lt 3 ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
  [ "$(_lib_shm_left | wc -l)" = 3 ] || { echo "FAIL: no shared memory of the job's 3 ranks"; fail=1; }
fi
kill -KILL $pid  # weftrun itself (no timeout(1) between: it would not pass SIGKILL on)
wait $pid || true
if nothing_left; then echo "ok SIGKILL of weftrun: nothing left"; else fail=1; fi
jobdir=$(ls -d "${TMPDIR:-/tmp}/weft-$pid-"?????? 2>/dev/null || true)
timeout 60 "$weftrun" -np 1 true || { echo "FAIL: the next weftrun failed"; fail=1; }
if [ -z "$jobdir" ]; then
  echo "FAIL: SIGKILL of weftrun left no job directory (weft-$pid-*) to clean up"; fail=1
elif [ -e "$jobdir" ]; then
  echo "FAIL: the next weftrun left $jobdir of the killed one"; fail=1
else
  echo "ok the next weftrun removed $jobdir"
fi
rm -f "$tmp/ompi-jobids"
# SIGKILL of mpirun with MPI ranks: Open MPI leaves their shared memory then (a SIGKILL
# of weftrun has mpirun end the job in order, which removes it); their agents remove it
if [ -x "$rtto" ]; then
  WEFT_COLL_TIMEOUT=0 timeout 60 "$weftrun" -np 3 --oversubscribe sh -c "$note_ompi_job exec $rtto watchdog" \
    "$uniq-mpi" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  i=0
  while [ "$(_lib_shm_left | wc -l)" -lt 3 ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
  mp=
  for p in $(pgrep -x mpirun); do
    grep -q "$uniq" "/proc/$p/cmdline" 2>/dev/null && mp=$p
  done
  if [ "$(_lib_shm_left | wc -l)" != 3 ] || [ -z "$mp" ]; then
    echo "FAIL: SIGKILL of mpirun: no mpirun of this job, or no shared memory of its 3 ranks"; fail=1
  else
    kill -KILL "$mp"
  fi
  rc=0
  wait $pid || rc=$?
  if [ $rc = 70 ] && nothing_left; then echo "ok SIGKILL of mpirun: no shared memory left"
  else echo "FAIL: SIGKILL of mpirun: exit $rc (want 70)"; cat "$tmp/err"; fail=1; fi
  rm -f "$tmp/ompi-jobids"
fi
exit $fail
