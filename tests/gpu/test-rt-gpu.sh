#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime on device memory (test-rt-gpu): one rank per GPU, at most 4.
# Exits 77 where there is no GPU (the program checks that NCCL is refused).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-gpu
mpirun_timeout=300
n=1
if command -v nvidia-smi >/dev/null 2>&1; then
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "$n" -ge 1 ] || n=1
  [ "$n" -le 4 ] || n=4
fi
mpirun_np -v "$n" "$bin" || exit $?
# With deadlines on, device calls wait for their stream (bounded).
echo "# WEFT_COLL_TIMEOUT=60 mpirun -np $n $bin"
WEFT_COLL_TIMEOUT=60 mpirun_np "$n" "$bin"
