#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/moe (an expert-parallel top-1 mixture-of-experts layer, tokens
# dispatched and combined with weft_alltoall and weft_alltoallv) on ep=2 (2
# ranks), ep=2 x dp=2 and ep=4 (4 ranks), and through weftrun: the same output
# as the dense layer, with tokens dropped past capacity.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"

check() # NAME OUTFILE
{
  grep -q '^moe: OK$' "$2" || fail_run "moe $1: no OK" "$2"
  grep -q 'tokens kept, [1-9][0-9]* dropped past capacity' "$2" ||
    fail_run "moe $1: no token was dropped, so the capacity was not tried" "$2"
}
run_np 2 "$tmp/ep2" "$examples/moe" || fail_run "moe on 2 ranks exited $?" "$tmp/ep2"
check "ep=2" "$tmp/ep2"
run_np 4 "$tmp/dp" "$examples/moe" || fail_run "moe on 4 ranks exited $?" "$tmp/dp"
check "ep=2,dp=2" "$tmp/dp"
grep -q '(ep=2,dp=\*, host memory)' "$tmp/dp" || fail_run "moe: not ep=2,dp=*" "$tmp/dp"
run_np 4 "$tmp/ep4" "$examples/moe" --ep 4 --experts 1 --tokens 40 ||
  fail_run "moe --ep 4 exited $?" "$tmp/ep4"
check "ep=4" "$tmp/ep4"
WEFT_HOST_SHM=0 run_np 4 "$tmp/mpi" "$examples/moe" || fail_run "moe through MPI exited $?" "$tmp/mpi"
check "through MPI (WEFT_HOST_SHM=0)" "$tmp/mpi"
rc=0
run_weftrun 4 "$tmp/weftrun" "$examples/moe" || rc=$?
if [ $rc -eq 0 ]; then
  check "through weftrun" "$tmp/weftrun"
  launch="mpirun and weftrun"
elif [ $rc -ne 77 ]; then
  fail_run "weftrun -np 4 moe exited $rc" "$tmp/weftrun"
fi
cat "$tmp/dp"
echo "PASS: moe equal to the dense layer on ep=2, ep=2 x dp=2 and ep=4, tokens dropped ($launch)"
