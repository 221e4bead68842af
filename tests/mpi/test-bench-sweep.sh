#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Small sweeps of every collective on 2-4 local ranks: the output's shape
# (header, columns, sizes, counts, #wrong, footer) against a golden file with
# the measured numbers masked, and nccl-tests' column layout character for
# character (its printf formats, src/util.cu of nccl-tests 2.19) in the
# unmasked output. WEFT_UPDATE_GOLDEN=1 rewrites the golden file.
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
step 4 alltoall alltoall -b 1K -e 4K -d int64 --baseline
step 2 bucket bucket -b 1K -e 4K --tensors 10 --baseline -o avg

golden_check "$golden" "$tmp/all" || exit 1

# nccl-tests' header lines and rows, printed with its own formats, must be the
# start of ours (ours go on with the baseline's columns).
nccl_head()
{
  printf '# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n' '' '' '' '' ''
  printf '# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n' size count type redop root \
    time algbw busbw '#wrong' time algbw busbw '#wrong'
  printf '# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n' '(B)' '(elements)' '' '' '' \
    '(us)' '(GB/s)' '(GB/s)' '' '(us)' '(GB/s)' '(GB/s)' ''
}
nccl_head | sed 's/ *$//' >"$tmp/nccl-head"
for name in allreduce allgather reduce_scatter broadcast sendrecv alltoall bucket; do
  grep -A3 '^#  *size  *count' "$tmp/$name" >/dev/null || fail_run "$name: no column heads" "$tmp/$name"
  grep -B1 -A1 '^#  *size  *count' "$tmp/$name" | cut -c1-"$(wc -L <"$tmp/nccl-head")" | sed 's/ *$//' >"$tmp/head"
  diff "$tmp/nccl-head" "$tmp/head" >/dev/null || fail_run "$name: the column heads are not nccl-tests': $(diff "$tmp/nccl-head" "$tmp/head")" "$tmp/$name"
  grep -v '^#' "$tmp/$name" | while IFS= read -r line; do
    # shellcheck disable=SC2086
    set -- $line
    want=$(printf '%12s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s' \
      "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "${12}" "${13}")
    case "$line" in
      "$want"|"$want  "*) ;;
      *) fail "$name: a row is not in nccl-tests' layout:
$line
$want" ;;
    esac
  done
done
cat "$tmp/allreduce"
echo "PASS: weft-bench sweeps of 7 collectives match the golden output"
