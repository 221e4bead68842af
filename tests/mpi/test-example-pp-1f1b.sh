#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/pp_1f1b (a 4-stage pipeline, 1F1B schedule, micro-batches passed
# with weft_sendrecv) on 4 ranks, with fewer micro-batches than stages, on 2
# stages x dp=2, and on 4 ranks through weftrun: the loss and every stage's
# gradients equal the unpipelined model's to within float rounding.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"

check() # NAME OUTFILE
{
  grep -q '^pp_1f1b: OK$' "$2" || fail_run "pp_1f1b $1: no OK" "$2"
}
run_np 4 "$tmp/pp4" "$examples/pp_1f1b" || fail_run "pp_1f1b on 4 stages exited $?" "$tmp/pp4"
check "4 stages" "$tmp/pp4"
grep -q '4 stages, 8 micro-batches' "$tmp/pp4" || fail_run "pp_1f1b: not 4 stages of 8" "$tmp/pp4"
run_np 4 "$tmp/few" "$examples/pp_1f1b" --micro 2 || fail_run "pp_1f1b --micro 2 exited $?" "$tmp/few"
check "2 micro-batches" "$tmp/few"
run_np 4 "$tmp/dp" "$examples/pp_1f1b" --pp 2 --micro 5 || fail_run "pp_1f1b --pp 2 exited $?" "$tmp/dp"
check "pp=2,dp=2" "$tmp/dp"
rc=0
run_weftrun 4 "$tmp/weftrun" "$examples/pp_1f1b" || rc=$?
if [ $rc -eq 0 ]; then
  check "through weftrun" "$tmp/weftrun"
  launch="mpirun and weftrun"
elif [ $rc -ne 77 ]; then
  fail_run "weftrun -np 4 pp_1f1b exited $rc" "$tmp/weftrun"
fi
cat "$tmp/pp4"
echo "PASS: pp_1f1b equal to the unpipelined model on 4 stages and 2 x dp=2 ($launch)"
