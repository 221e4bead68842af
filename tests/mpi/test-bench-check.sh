#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The data check of weft-bench: every type and every operation weft takes,
# with odd sizes, on 3 ranks, gives no wrong element; and an element spoilt
# on purpose (WEFT_BENCH_INJECT_ERROR=1) is counted and fails the run.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
small="-b 8 -e 1K -f 5 -n 1 -w 0"

for coll in allreduce reduce_scatter bucket; do
  run_np 3 "$tmp/$coll" "$bench" $coll -d all -o all $small --tensors 7 ||
    fail_run "$coll -d all -o all exited $?" "$tmp/$coll"
done
for coll in allgather broadcast sendrecv alltoall; do
  run_np 3 "$tmp/$coll" "$bench" $coll -d all $small -r 1 || fail_run "$coll -d all exited $?" "$tmp/$coll"
done
for coll in allreduce reduce_scatter bucket allgather broadcast sendrecv alltoall; do
  grep -q '^# Out of bounds values : 0 OK$' "$tmp/$coll" || fail_run "$coll: wrong data" "$tmp/$coll"
  rows=$(grep -vc '^#' "$tmp/$coll" || true)
  [ "$rows" -ge 8 ] || fail_run "$coll: only $rows rows" "$tmp/$coll"
done

# One spoilt element: counted once, FAILED, exit 1.
rc=0
WEFT_BENCH_INJECT_ERROR=1 run_np 2 "$tmp/inject" "$bench" allreduce -b 1K -e 4K -n 1 -w 0 || rc=$?
[ $rc -eq 1 ] || fail_run "injected error: exit $rc, not 1" "$tmp/inject"
grep -q '^# Out of bounds values : 1 FAILED$' "$tmp/inject" || fail_run "injected error not counted" "$tmp/inject"
grep -q 'Collective test concluded: allreduce: FAILED' "$tmp/inject" ||
  fail_run "no FAILED verdict" "$tmp/inject"
echo "PASS: weft-bench data check: all types and ops correct, injected error caught (exit 1)"
