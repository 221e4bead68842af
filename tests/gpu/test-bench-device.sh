#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench --memory device --baseline (weft against raw NCCL on the same
# buffers) on 2 and 4 ranks under the CUDA/NCCL stand-in: every collective,
# the data check of every row, every type and operation of all-reduce, the
# device lines as nccl-tests writes them (bus id and model). The
# stand-in reports a copy that is not ordered before the collective that reads
# it. Its times are those of a test double on a shared CPU: never a GPU figure.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
unset WEFT_BENCH_INJECT_ERROR
bad=0
run()
{
  np=$1 name=$2
  shift 2
  if standin_mpirun "$np" "$bench" "$@" --memory device >"$tmp/$name" 2>&1 &&
     grep -q '^# Out of bounds values : 0 OK$' "$tmp/$name" &&
     grep -q 'weft stand-in (not a GPU)' "$tmp/$name" && ! grep -q 'weft-standin:' "$tmp/$name" &&
     grep -E -q '^#  Rank  1 Group  0 Pid +[0-9]+ on +[^ ]+ device +[0-9]+ \[0000:[0-9a-f]{2}:00\] weft stand-in' \
       "$tmp/$name"; then
    echo "ok: $np ranks: $*"
  else
    cat "$tmp/$name"
    echo "FAIL: weft-bench $* --memory device on $np ranks"
    bad=1
  fi
}
for np in 2 4; do
  run $np ar$np allreduce -b 8 -e 256K -f 8 -n 2 -w 1 --baseline
  grep -q 'raw NCCL' "$tmp/ar$np" || { echo "FAIL: no raw NCCL baseline on $np ranks"; bad=1; }
  run $np all$np allreduce -d all -o all -b 64 -e 4K -f 8 -n 1 -w 0
  run $np ag$np allgather -b 64 -e 64K -f 16 -n 2 -w 1 --baseline
  run $np rs$np reduce_scatter -b 64 -e 64K -f 16 -n 2 -w 1 --baseline
  run $np bc$np broadcast -b 64 -e 64K -f 16 -n 2 -w 1 --baseline
  run $np sr$np sendrecv -b 64 -e 64K -f 16 -n 2 -w 1 --baseline
  run $np bk$np bucket -b 64K -e 1M -f 4 --tensors 50 -n 2 -w 1 --baseline
done
[ $bad -eq 0 ] || exit 1
echo "PASS: weft-bench --memory device --baseline on 2 and 4 ranks under the stand-in (not a GPU)"
