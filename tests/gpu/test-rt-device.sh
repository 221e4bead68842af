#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime's device tests (test-rt-gpu: every type and operation in place
# and not, non-integer floats in NCCL's ring order, broadcast, all-gather,
# reduce-scatter, an all-reduce captured into a CUDA graph, mesh groups split
# from the world, send/recv around a ring, buckets on a stream and on NULL) on
# 1, 2, 3 and 4 ranks under the CUDA/NCCL stand-in, and again with deadlines
# on. The stand-in ends any rank that breaks a CUDA or NCCL rule; on 4 ranks
# its log must show the mesh groups split from the world's communicator, no
# communicator of a pair of ranks, and every communicator destroyed: none
# aborted, none leaked.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-gpu
bad=0
run()
{
  if "$@" >"$tmp/out" 2>&1 && grep -q 'device checks passed' "$tmp/out" &&
     grep -q 'weft stand-in (not a GPU)' "$tmp/out" && ! grep -q 'weft-standin:' "$tmp/out"; then
    grep -E 'passed' "$tmp/out"
  else
    cat "$tmp/out"
    echo "FAIL: $*"
    bad=1
  fi
}
for np in 1 2 3; do
  run standin_mpirun "$np" "$bin" 65536
done
WEFT_STANDIN_LOG=$tmp/comms.log run standin_mpirun 4 "$bin" 65536
up=$(sed -n 's/^pid=[0-9]* rank=\([0-9]*\) nccl comm \([^ ]*\) rank [0-9/]* device [0-9]* up \(.*\)/\1 \2 \3/p' \
  "$tmp/comms.log" | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')
want="1 0 dp by split of world;1 0 tp by split of world;1 0 world by init;"
want="${want}1 1 dp by split of world;1 1 tp by split of world;1 1 world by init;"
want="${want}1 2 dp by split of world;1 2 tp by split of world;1 2 world by init;"
want="${want}1 3 dp by split of world;1 3 tp by split of world;1 3 world by init;"
if [ "$up" != "$want" ]; then
  echo "FAIL: the communicators of 4 ranks (count rank name how):"; echo "$up" | tr ';' '\n'
  echo "want:"; echo "$want" | tr ';' '\n'; bad=1
elif grep -q ' aborted\| leaked' "$tmp/comms.log"; then
  echo "FAIL: a communicator was aborted or leaked:"; grep ' aborted\| leaked' "$tmp/comms.log"
  bad=1
elif [ "$(grep -c ' destroyed$' "$tmp/comms.log")" != 12 ]; then
  echo "FAIL: $(grep -c ' destroyed$' "$tmp/comms.log") of 12 communicators destroyed"; bad=1
else
  echo "ok: 4 ranks: world, and tp and dp split from it, on each; all 12 destroyed"
fi
WEFT_COLL_TIMEOUT=60 run standin_mpirun 4 "$bin" 4096
# The bucket packing benchmark of run.sh, both ways (its times here are no
# GPU's: only that it runs and the data is right).
for mode in batch each; do
  if WEFT_BUCKET_COPY=$mode standin_mpirun 1 "$WEFT_BUILDDIR/tests/gpu/bench-bucket-pack" 300 4096 \
      >"$tmp/pack" 2>&1 && grep -q "^bucket-pack: $mode, 300 tensors" "$tmp/pack" &&
      ! grep -q 'WRONG\|weft-standin:' "$tmp/pack"; then
    echo "ok: bench-bucket-pack ($mode)"
  else
    cat "$tmp/pack"; echo "FAIL: bench-bucket-pack ($mode)"; bad=1
  fi
done
[ $bad -eq 0 ] || exit 1
echo "PASS: the runtime's device path on 1, 2, 3 and 4 ranks under the stand-in (not a GPU)"
