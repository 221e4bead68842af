#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/tp_matmul on 1, 2 and 4 ranks (and 4 through weftrun) matches the
# serial product, and refuses sizes that the ranks do not divide.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"

for np in 1 2 4; do
  run_np $np "$tmp/np$np" "$examples/tp_matmul" --batch 16 --dmodel 24 --hidden 32 ||
    fail_run "tp_matmul on $np ranks exited $?" "$tmp/np$np"
  grep -q '^tp_matmul: OK$' "$tmp/np$np" || fail_run "tp_matmul on $np ranks: no OK" "$tmp/np$np"
done
rc=0
run_weftrun 4 "$tmp/weftrun" "$examples/tp_matmul" --batch 16 --dmodel 24 --hidden 32 || rc=$?
if [ $rc -eq 0 ]; then
  grep -q '^tp_matmul: OK$' "$tmp/weftrun" || fail_run "tp_matmul through weftrun: no OK" "$tmp/weftrun"
  launch="mpirun and weftrun"
elif [ $rc -ne 77 ]; then
  fail_run "weftrun -np 4 tp_matmul exited $rc" "$tmp/weftrun"
fi
if run_np 4 "$tmp/bad" "$examples/tp_matmul" --batch 6; then
  fail_run "tp_matmul --batch 6 on 4 ranks should fail" "$tmp/bad"
fi
grep -q 'must be multiples' "$tmp/bad.err" || fail_run "no message for --batch 6" "$tmp/bad"
cat "$tmp/np4"
echo "PASS: tp_matmul equal to the serial product on 1, 2, 4 ranks ($launch)"
