#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime's device tests (test-rt-gpu: every type and operation in place
# and not, broadcast, all-gather, reduce-scatter, mesh groups split from the
# world, send/recv around a ring, buckets on a stream and on NULL) on 2, 3 and
# 4 ranks under the CUDA/NCCL stand-in, and again with deadlines on. The
# stand-in ends any rank that breaks a CUDA or NCCL rule.
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
for np in 2 3 4; do
  run standin_mpirun "$np" "$bin" 65536
done
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
echo "PASS: the runtime's device path on 2, 3 and 4 ranks under the stand-in (not a GPU)"
