#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Small sweeps of every collective on 2-4 local ranks: the output's shape
# (header, columns, sizes, counts, #wrong, footer) against a golden file with
# the measured numbers masked. WEFT_UPDATE_GOLDEN=1 rewrites the golden file.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
golden=$WEFT_TOPDIR/tests/mpi/bench-sweep.out
common="-n 2 -w 1"

step()
{
  np=$1 name=$2
  shift 2
  echo "## weft-bench $* on $np ranks" >>"$tmp/all"
  run_np "$np" "$tmp/$name" "$bench" "$@" $common || fail_run "weft-bench $* on $np ranks exited $?" "$tmp/$name"
  mask "$tmp/$name" >>"$tmp/all"
}
step 2 allreduce allreduce -b 1K -e 4K --baseline
step 3 allgather allgather -b 1K -e 4K -d int32
step 4 reduce_scatter reduce_scatter -b 1K -e 4K -o max -d float64
step 3 broadcast broadcast -r 2 -b 1K -e 2K -d bfloat16
step 3 sendrecv sendrecv -b 1K -e 2K -d uint8
step 2 bucket bucket -b 1K -e 4K -t 10 --baseline -o avg

golden_check "$golden" "$tmp/all" || exit 1
cat "$tmp/allreduce"
echo "PASS: weft-bench sweeps of 6 collectives match the golden output"
