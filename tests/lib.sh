# SPDX-License-Identifier: BSD-3-Clause
# What the shell tests share, written once. Every tests/*/test-*.sh starts with
#   set -eu
#   . "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
# and then has a scratch directory $tmp (removed when the test exits; KEEP=1
# keeps it), the programs' paths ($weftrun, $bench, $vc, the shipped $topos)
# and these helpers:
#   skip REASON                   SKIP: REASON, exit 77
#   fail WHAT                     FAIL: WHAT, exit 1
#   fail_run WHAT FILE...         FAIL: WHAT, each FILE and FILE.err, exit 1
#   at_exit COMMAND               run the string COMMAND when the test exits
#   need_mpirun                   skip unless $MPIRUN (default mpirun) is found
#   need_root                     skip unless root (network namespaces need it)
#   mpirun_np [-v] N PROG [ARG]   N ranks of PROG here, oversubscribed, unbound,
#                                 within $mpirun_timeout s (60); -v: print it first
#   run_np N OUT PROG [ARG...]    mpirun_np, stdout to OUT, stderr to OUT.err
#   no_host_defaults              hosts only from the command line, not from a
#                                 Slurm allocation or a default hostfile
#   unique_name                   $uniq, a word only this test's processes have,
#                                 and $tmp/$uniq-sleep; all killed at exit
#   nothing_left                  0 when nothing named $uniq runs and /dev/shm holds
#                                 no Open MPI segment (vader_segment.*) of the jobs
#                                 listed in $tmp/ompi-jobids (waits 5 s)
#   note_ompi_job                 a word for a job's sh -c: it appends the job's id
#                                 (OMPI_MCA_ess_base_jobid, in hex as Open MPI names
#                                 its segments) to $tmp/ompi-jobids
#   local_jobs                    for a test that starts jobs on this host:
#                                 need_mpirun, no_host_defaults, unique_name
#   vc_up N [UP OPTIONS]          a virtual cluster named $prefix, $hostfile;
#                                 down at exit; skips where it cannot be made
#   vc_up_slurm N [UP OPTIONS]    vc_up N --slurm, without the SLURM_* variables
#                                 of a job this test may run in; skips where
#                                 Slurm or munge is not installed
#   on NODE CMD...                CMD on NODE of the cluster (weft-vcluster
#                                 exec), within 60 s
#   sbatch_wait NODE ARGS...      sbatch ARGS from NODE, wait for the job to end
#                                 (60 s at most); returns the script's status
#   hold_port PORT [NODE]         a process listening on TCP PORT here (or on NODE
#                                 of the cluster), its pid in $holder; killed at exit
#   golden_check EXPECTED ACTUAL  compare with a golden file (strict: a missing
#                                 one fails); WEFT_UPDATE_GOLDEN=1 rewrites it
#   now, elapsed T0 T1            wall clock in seconds, whole seconds between
# Helpers set only variables named with a leading underscore, besides those above.
: "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}" "${WEFT_BUILDDIR:?run through make check or tests/run-test.sh}"
weftrun=$WEFT_BUILDDIR/src/weftrun/weftrun
bench=$WEFT_BUILDDIR/src/weft-bench/weft-bench
vc=$WEFT_TOPDIR/contrib/vcluster/weft-vcluster
topos=$WEFT_TOPDIR/share/weft/topologies
MPIRUN=${MPIRUN:-mpirun}
# The test's directory under tests/ (for messages: a test may cd elsewhere).
_lib_area=$(basename "$(cd "$(dirname "$0")" && pwd)")
# A virtual cluster of the test's own (weft-vcluster takes 40 characters).
prefix=wvc-$(basename "$0" .sh | sed 's/^test-//' | cut -c1-24)-$$

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

fail_run()
{
  echo "FAIL: $1"
  shift
  for _f in "$@"; do
    echo "--- $_f"; cat "$_f"; echo "--- $_f.err"; cat "$_f.err"
  done
  exit 1
}

# The commands at_exit collected run newest first, then $tmp goes; the test's
# exit status stays what it was.
_lib_exit=
at_exit() { _lib_exit="$1
$_lib_exit"; }
_lib_on_exit()
{
  _rc=$?
  set +e
  eval "$_lib_exit"
  if [ -n "${KEEP:-}" ]; then echo "KEEP: $tmp"; else rm -rf "$tmp"; fi
  exit $_rc
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-$(basename "$0" .sh).XXXXXX")
trap _lib_on_exit EXIT
trap 'exit 1' INT TERM

need_mpirun() { command -v "$MPIRUN" >/dev/null 2>&1 || skip "$MPIRUN not found"; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "not root: weft-vcluster needs root for network namespaces"; }

mpirun_np()
{
  _v=
  [ "$1" != -v ] || { _v=1; shift; }
  _n=$1
  shift
  [ -z "$_v" ] || echo "# mpirun -np $_n $*"
  timeout "${mpirun_timeout:-60}" "$MPIRUN" --oversubscribe --bind-to none -np "$_n" "$@"
}

run_np()
{
  _n=$1 _o=$2
  shift 2
  mpirun_np "$_n" "$@" >"$_o" 2>"$_o.err"
}

no_host_defaults()
{
  unset SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE OMPI_MCA_orte_default_hostfile PRTE_MCA_prte_default_hostfile
}

unique_name()
{
  uniq="wft$$x$(date +%N)"
  cp "$(command -v sleep)" "$tmp/$uniq-sleep"
  at_exit 'pkill -KILL -f "$uniq" 2>/dev/null'
}

nothing_left()
{
  _i=0
  while pgrep -f "$uniq" >/dev/null 2>&1 || [ -n "$(_lib_shm_left)" ]; do
    _i=$((_i + 1))
    if [ $_i -ge 50 ]; then
      echo "FAIL: left behind:"
      pgrep -af "$uniq" || true
      _lib_shm_left
      return 1
    fi
    sleep 0.1
  done
  return 0
}

# The Open MPI shared-memory segments in /dev/shm of the jobs in $tmp/ompi-jobids
# (vader_segment.NODE[.UID].JOBID.LOCALRANK), one per line.
_lib_shm_left()
{
  [ -s "$tmp/ompi-jobids" ] || return 0
  for _j in $(sort -u "$tmp/ompi-jobids"); do
    ls /dev/shm 2>/dev/null | grep "^vader_segment\..*\.$_j\.[0-9]*\$" | sed 's|^|/dev/shm/|' || true
  done
}
note_ompi_job='printf "%x\n" "$OMPI_MCA_ess_base_jobid" >>'"'$tmp/ompi-jobids'"';'

local_jobs() { need_mpirun; no_host_defaults; unique_name; }

vc_up()
{
  [ -x "$vc" ] || skip "$vc not found"
  need_root
  if [ -z "${_lib_vc:-}" ]; then
    _lib_vc=1
    at_exit 'timeout 60 "$vc" --prefix "$prefix" down >/dev/null 2>&1'
  fi
  _rc=0
  hostfile=$(timeout 120 "$vc" --prefix "$prefix" up "$@" 2>"$tmp/vc-up.err") || _rc=$?
  [ $_rc -ne 3 ] || skip "network namespaces cannot be made here: $(tail -n 1 "$tmp/vc-up.err")"
  [ $_rc -ne 5 ] || skip "Slurm or munge is not installed (contrib/quickstart.sh installs them): $(tail -n 1 "$tmp/vc-up.err")"
  [ $_rc -eq 0 ] || { cat "$tmp/vc-up.err"; fail "weft-vcluster up $* exited $_rc"; }
  [ -f "$hostfile" ] || fail "weft-vcluster up $* printed '$hostfile', which is not a file"
  cat "$tmp/vc-up.err"
}

golden_check()
{
  _g=${1#"$WEFT_TOPDIR"/}
  _how="WEFT_UPDATE_GOLDEN=1 make -C $WEFT_BUILDDIR/tests/$_lib_area check TESTS=$(basename "$0")"
  if [ "${WEFT_UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$(dirname "$1")"
    cp "$2" "$1"
    echo "updated $_g"
  elif [ ! -f "$1" ]; then
    echo "FAIL: no golden file $_g; check the output below, then $_how writes it"
    cat "$2"
    return 1
  elif ! diff -u "$1" "$2"; then
    echo "FAIL: output differs from $_g; if the change is meant, $_how rewrites it"
    return 1
  fi
}

vc_up_slurm()
{
  for _v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$_v"; done
  vc_up "$@" --slurm
}

on()
{
  _on=$1
  shift
  timeout -k 5 60 "$vc" --prefix "$prefix" exec "$_on" "$@"
}

# sbatch --wait polls every few seconds; this polls every tenth. A job that
# was cancelled, timed out or never started returns 1; one killed by signal N
# 128+N.
sbatch_wait()
{
  _on=$1
  shift
  _id=$(on "$_on" sbatch --parsable "$@") || fail "sbatch $* failed"
  _id=${_id%%;*}
  _t0=$(date +%s)
  while :; do
    _st=$(on vnode0 squeue -h -t all -j "$_id" -o %T 2>/dev/null || true)
    case $_st in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) break ;; esac
    [ $(($(date +%s) - _t0)) -lt 60 ] || fail "batch job $_id (sbatch $*) did not end within 60 s (state '$_st')"
    sleep 0.1
  done
  _x=$(on vnode0 scontrol show job "$_id" | sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p')
  [ -n "$_x" ] || fail "scontrol show job $_id gives no ExitCode"
  [ "$_st" = COMPLETED ] || [ "$_st" = FAILED ] || return 1
  [ "${_x#* }" = 0 ] || return $((128 + ${_x#* }))
  return "${_x% *}"
}

hold_port()
{
  _code="import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('', $1)); s.listen(); time.sleep(120)"
  if [ $# -ge 2 ]; then on "$2" /usr/bin/python3 -c "$_code" & else /usr/bin/python3 -c "$_code" & fi
  holder=$!
  at_exit "kill $holder 2>/dev/null"
  _hex=$(printf %04X "$1")
  _i=0
  until { if [ $# -ge 2 ]; then on "$2" cat /proc/net/tcp; else cat /proc/net/tcp; fi; } |
        grep -qi ":$_hex [0-9A-F:]* 0A "; do
    _i=$((_i + 1))
    [ $_i -le 50 ] || fail "nothing listens on TCP port $1${2:+ on $2} after 5 s"
    sleep 0.1
  done
}

now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{ printf "%d", $2 - $1 }'; }
