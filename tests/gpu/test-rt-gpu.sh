#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime on device memory (test-rt-gpu): one rank per GPU, at most 4.
# Exits 77 where there is no GPU (the program checks that NCCL is refused).
set -eu
bin=${WEFT_BUILDDIR:?run through make check}/tests/gpu/test-rt-gpu
n=1
if command -v nvidia-smi >/dev/null 2>&1; then
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "$n" -ge 1 ] || n=1
  [ "$n" -le 4 ] || n=4
fi
echo "# mpirun -np $n $bin"
timeout 300 mpirun --oversubscribe --bind-to none -np "$n" "$bin" || exit $?
# With deadlines on, device calls wait for their stream (bounded).
echo "# WEFT_COLL_TIMEOUT=60 mpirun -np $n $bin"
WEFT_COLL_TIMEOUT=60 timeout 300 mpirun --oversubscribe --bind-to none -np "$n" "$bin"
