#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench's documented exit codes: 3 below --min-busbw, 4 for --memory
# device without a GPU, 2 for a job or request it cannot run; and a run on
# one host is not held against a machine family's ceiling.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
quick="-b 1K -e 2K -n 1 -w 0"

expect()
{
  want=$1 name=$2 np=$3
  shift 3
  rc=0
  run_np "$np" "$tmp/$name" "$bench" "$@" || rc=$?
  [ $rc -eq "$want" ] || fail_run "weft-bench $* on $np ranks: exit $rc, expected $want" "$tmp/$name"
}

expect 0 ok 2 allreduce $quick --min-busbw 0
export WEFT_MACHINE_TYPE=a3-megagpu-8g
expect 0 family 2 allreduce $quick
unset WEFT_MACHINE_TYPE
grep -q '^# Machine a3-megagpu-8g (from WEFT_MACHINE_TYPE): .* healthy busbw 150-189 GB/s' "$tmp/family" &&
  grep -q "^# Peak bus bandwidth   : .* not compared with a3-megagpu-8g's ceiling (1 host: " "$tmp/family" ||
  fail_run "a 1-host run was held against the family's ceiling" "$tmp/family"
expect 3 slow 2 allreduce $quick --min-busbw 1e9
grep -q 'min-busbw 1e+09: FAILED' "$tmp/slow" || fail_run "no FAILED for --min-busbw" "$tmp/slow"
expect 2 np1 1 sendrecv $quick
grep -q 'needs at least 2 ranks' "$tmp/np1.err" || fail_run "no message for sendrecv on 1 rank" "$tmp/np1"
expect 2 root 2 broadcast $quick -r 5
grep -q 'not a rank' "$tmp/root.err" || fail_run "no message for --root 5" "$tmp/root"
expect 2 pair 2 allreduce $quick -d int32 -o avg
grep -q 'does not take' "$tmp/pair.err" || fail_run "no message for int32 avg" "$tmp/pair"
# An nccl-tests option weft-bench refuses: one line for the whole job, no abort.
expect 2 ngpus 3 allreduce $quick -g 8
[ "$(grep -c '^weft-bench: -g 8: ' "$tmp/ngpus.err")" -eq 1 ] || fail_run "-g 8: not one line" "$tmp/ngpus"
! grep -q 'MPI_ABORT' "$tmp/ngpus.err" || fail_run "-g 8: an MPI abort" "$tmp/ngpus"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is here: --memory device is tested by tests/gpu"
else
  expect 4 device 2 allreduce $quick --memory device
  grep -q -- '--memory device: rank 0' "$tmp/device.err" || fail_run "no message for --memory device" "$tmp/device"
  [ "$(grep -c -- '--memory device' "$tmp/device.err")" -eq 1 ] ||
    fail_run "--memory device: one line expected" "$tmp/device"
fi
echo "PASS: weft-bench exit codes 0, 2, 3, 4"
