#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Small sweeps of every collective on 2-4 local ranks: the output's shape
# (header, columns, sizes, counts, #wrong, footer) against a golden file with
# the measured numbers masked. WEFT_UPDATE_GOLDEN=1 rewrites the golden file.
set -eu
. "${WEFT_TOPDIR:?}/tests/mpi/bench-lib.sh"
golden=$WEFT_TOPDIR/tests/mpi/bench-sweep.out
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
common="-n 2 -w 1"

step()
{
  np=$1 name=$2
  shift 2
  echo "## weft-bench $* on $np ranks" >>"$tmp/all"
  run_np "$np" "$tmp/$name" "$@" $common || fail_run "weft-bench $* on $np ranks exited $?" "$tmp/$name"
  mask "$tmp/$name" >>"$tmp/all"
}
step 2 allreduce allreduce -b 1K -e 4K --baseline
step 3 allgather allgather -b 1K -e 4K -d int32
step 4 reduce_scatter reduce_scatter -b 1K -e 4K -o max -d float64
step 3 broadcast broadcast -r 2 -b 1K -e 2K -d bfloat16
step 3 sendrecv sendrecv -b 1K -e 2K -d uint8
step 2 bucket bucket -b 1K -e 4K -t 10 --baseline -o avg

if [ "${WEFT_UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$tmp/all" "$golden"
  echo "updated $golden"
  exit 0
fi
if ! diff -u "$golden" "$tmp/all"; then
  echo "FAIL: weft-bench output differs from $golden (WEFT_UPDATE_GOLDEN=1 to accept)"
  exit 1
fi
cat "$tmp/allreduce"
echo "PASS: weft-bench sweeps of 6 collectives match the golden output"
