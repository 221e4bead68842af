#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# share/weft/discovery/slurm.sh against a fake scontrol on PATH: the nodes the
# job holds now (scontrol show job's NodeList, not the SLURM_JOB_NODELIST it
# started with: with --no-kill a failed node leaves the job), without those
# Slurm marks down, drained or not responding; slots from --slots,
# SLURM_NTASKS_PER_NODE or each node's count in SLURM_TASKS_PER_NODE; one line
# on stderr and exit 1 outside a job, when scontrol fails, or with no slots.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
script=$WEFT_TOPDIR/share/weft/discovery/slurm.sh
mkdir "$tmp/bin"
# The fake knows vn[0-3]; the job now holds $FAKE_NODELIST.
cat >"$tmp/bin/scontrol" <<'SH'
#!/bin/sh
expand() {
  case $1 in
    'vn[0-3]') echo vn0; echo vn1; echo vn2; echo vn3 ;;
    'vn[0,2-3]') echo vn0; echo vn2; echo vn3 ;;
    *) echo "scontrol: error: Invalid hostlist: $1" >&2; exit 1 ;;
  esac
}
case "$1 $2" in
  'show job')
    [ "$3" = -o ] && [ "$4" = 4242 ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
    echo "JobId=4242 JobName=train JobState=RUNNING NumNodes=3 NodeList=$FAKE_NODELIST BatchHost=vn0" ;;
  'show hostnames') expand "$3" ;;
  'show node')
    [ -z "${FAKE_NODE_FAIL-}" ] || { echo "slurm_load_node error: $FAKE_NODE_FAIL" >&2; exit 1; }
    for n in $(expand "$4"); do
      st=ALLOCATED
      [ $n != vn3 ] || st=${FAKE_VN3_STATE:-ALLOCATED}
      echo "NodeName=$n Arch=x86_64 CoresPerSocket=2 State=$st ThreadsPerCore=1"
    done ;;
  *) echo "scontrol: unexpected: $*" >&2; exit 1 ;;
esac
SH
chmod +x "$tmp/bin/scontrol"
fail=0
# run STATUS [VAR=VALUE...] -- ARGS: slurm.sh in a job of vn[0-3] whose vn1 was lost
run() {
  _want=$1; shift
  _rc=0
  env -u SLURM_NTASKS_PER_NODE -u WEFT_DISCOVERY_SLOTS PATH="$tmp/bin:$PATH" SLURM_JOB_ID=4242 \
    SLURM_JOB_NODELIST='vn[0-3]' SLURM_TASKS_PER_NODE='2(x3),1' FAKE_NODELIST='vn[0,2-3]' "$@" \
    >"$tmp/out" 2>"$tmp/err" </dev/null || _rc=$?
  [ "$_rc" = "$_want" ] || { echo "FAIL: $* exited $_rc, not $_want: $(cat "$tmp/out" "$tmp/err")"; fail=1; return 1; }
}
want() { # the expected lines, as one string
  printf '%s\n' "$@" >"$tmp/want"
  cmp -s "$tmp/want" "$tmp/out" || { echo "FAIL: want: $*; got: $(cat "$tmp/out")"; fail=1; }
}
run 0 "$script" --slots 4 && want "vn0 slots=4" "vn2 slots=4" "vn3 slots=4"
run 0 SLURM_NTASKS_PER_NODE=2 "$script" && want "vn0 slots=2" "vn2 slots=2" "vn3 slots=2"
run 0 WEFT_DISCOVERY_SLOTS=3 "$script" && want "vn0 slots=3" "vn2 slots=3" "vn3 slots=3"
# Per node from SLURM_TASKS_PER_NODE over the original list: vn3 had 1.
run 0 "$script" && want "vn0 slots=2" "vn2 slots=2" "vn3 slots=1"
# A node Slurm says is down or not responding is left out.
run 0 FAKE_VN3_STATE='ALLOCATED+NOT_RESPONDING' "$script" --slots 1 && want "vn0 slots=1" "vn2 slots=1"
run 0 FAKE_VN3_STATE='DOWN+DRAIN' "$script" --slots 1 && want "vn0 slots=1" "vn2 slots=1"

refused() { # WORDS [VAR=VALUE...] ARGS: exit 1, one line on stderr with WORDS
  _words=$1; shift
  run 1 "$@" || return 0
  if [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q -- "$_words" "$tmp/err"; then
    echo "FAIL: $*: want one line with '$_words'; got: $(cat "$tmp/out" "$tmp/err")"
    fail=1
  fi
}
refused "SLURM_JOB_ID is not set: run inside an allocation" SLURM_JOB_ID= "$script" --slots 1
refused "scontrol show job 99 failed: slurm_load_jobs error" SLURM_JOB_ID=99 "$script" --slots 1
refused "scontrol show node vn\[0,2-3\] failed: slurm_load_node error: down" FAKE_NODE_FAIL=down "$script" --slots 1
refused "give --slots N, or allocate with --ntasks-per-node" SLURM_TASKS_PER_NODE= "$script"
refused "slots 'two' is not a whole number" "$script" --slots two
refused "cannot read SLURM_TASKS_PER_NODE=2(x" SLURM_TASKS_PER_NODE='2(x' "$script"
refused "holds no node now" FAKE_NODELIST='(null)' "$script" --slots 1
refused "unknown argument '-n'" "$script" -n 3
[ $fail = 0 ] && echo "PASS: slurm.sh: the job's nodes now, states, slots, and every failure in one line"
exit $fail
