#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The host shared-memory collectives: against the MPI path (test-rt-shm) on 2,
# 3 and 4 ranks, and against exact references (test-rt-coll, test-rt-bucket
# with the threshold at 0); the host stages of the hierarchical all-reduce;
# and the fallbacks, each with its WEFT_VERBOSE=rt line: WEFT_HOST_SHM=0, a
# group over two hosts, and cross-memory attach forbidden by seccomp.
set -eu
. "${WEFT_TOPDIR:?}/tests/mpi/rt-run.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Open MPI 4.1's AVX reductions saturate 8-bit integer sums instead of
# wrapping them (open-mpi/ompi#8045); the MPI path is compared without them.
noavx="--mca op ^avx"
for np in 2 3 4; do
  rt_mpirun $np $noavx "$bin/test-rt-shm"
done
WEFT_HOST_SHM_THRESHOLD=0 rt_mpirun 3 "$bin/test-rt-coll"
WEFT_HOST_SHM_THRESHOLD=0 rt_mpirun 4 "$bin/test-rt-bucket"
# Two pretend hosts of 2 ranks: the world is not on one host, each host's
# stage of the hierarchical all-reduce is.
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier rt_mpirun 4 $noavx "$bin/test-rt-shm"
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier WEFT_HOST_SHM_THRESHOLD=0 WEFT_COLL_TIMEOUT=30 \
  rt_mpirun 4 "$bin/test-rt-coll"

expect_line() { # PATTERN: the fallback said why, once per rank
  n=$(grep -c "host shared memory off: .*$1" "$out" || true)
  if [ "$n" -lt 1 ]; then
    cat "$out"
    echo "FAIL: no WEFT_VERBOSE=rt line saying '$1'"
    exit 1
  fi
  echo "# fallback said: $(grep -m1 "host shared memory off" "$out" | sed 's/.*rt: //')"
}
WEFT_HOST_SHM=0 WEFT_VERBOSE=rt rt_mpirun 2 $noavx "$bin/test-rt-shm" off >"$out" 2>&1 ||
  { cat "$out"; exit 1; }
expect_line "WEFT_HOST_SHM=0"
WEFT_RANKS_PER_NODE=1 WEFT_VERBOSE=rt rt_mpirun 2 $noavx "$bin/test-rt-shm" off >"$out" 2>&1 ||
  { cat "$out"; exit 1; }
expect_line "on different hosts"
# Open MPI's own shared-memory transport uses cross-memory attach too: in a
# container that forbids it, it is told not to (as users there do).
WEFT_VERBOSE=rt rt_mpirun 2 $noavx --mca btl_vader_single_copy_mechanism none \
  "$bin/test-rt-shm" seccomp >"$out" 2>&1 || { cat "$out"; exit 1; }
expect_line "not permitted"
