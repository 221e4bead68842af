#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/tp_mlp (a tensor-parallel two-layer MLP, forward and backward) on
# tp=2 and tp=4, on tp=2 x dp=2, and on 4 ranks through weftrun: Y, the loss
# and every gradient equal the MLP computed on one rank to within float
# rounding; sizes the group does not divide are refused.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"

check() # NAME OUTFILE
{
  grep -q '^tp_mlp: OK$' "$2" || fail_run "tp_mlp $1: no OK" "$2"
  grep -q 'relative error dW1 .* dX ' "$2" || fail_run "tp_mlp $1: no gradients compared" "$2"
}
for np in 2 4; do
  run_np $np "$tmp/tp$np" "$examples/tp_mlp" || fail_run "tp_mlp on tp=$np exited $?" "$tmp/tp$np"
  check "tp=$np" "$tmp/tp$np"
  grep -q "(tp=$np,dp=\*, host memory)" "$tmp/tp$np" || fail_run "tp_mlp: not tp=$np" "$tmp/tp$np"
done
run_np 4 "$tmp/dp" "$examples/tp_mlp" --tp 2 --hidden 48 || fail_run "tp_mlp --tp 2 on 4 ranks exited $?" "$tmp/dp"
check "tp=2,dp=2" "$tmp/dp"
rc=0
run_weftrun 4 "$tmp/weftrun" "$examples/tp_mlp" || rc=$?
if [ $rc -eq 0 ]; then
  check "through weftrun" "$tmp/weftrun"
  launch="mpirun and weftrun"
elif [ $rc -ne 77 ]; then
  fail_run "weftrun -np 4 tp_mlp exited $rc" "$tmp/weftrun"
fi
if run_np 4 "$tmp/bad" "$examples/tp_mlp" --hidden 30; then
  fail_run "tp_mlp --hidden 30 on tp=4 should fail" "$tmp/bad"
fi
grep -q 'must be multiples' "$tmp/bad.err" || fail_run "no message for --hidden 30" "$tmp/bad"
cat "$tmp/tp4"
echo "PASS: tp_mlp equal to the serial MLP on tp=2, tp=4 and tp=2 x dp=2 ($launch)"
