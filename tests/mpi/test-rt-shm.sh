#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The host shared-memory collectives: against the MPI path (test-rt-shm) on 2,
# 3 and 4 ranks, and with WEFT_HOST_SHM_STAGED=0; the MPI path on one host against exact references
# (test-rt-coll, test-rt-bucket with WEFT_HOST_SHM=0); the host stages of the
# hierarchical all-reduce;
# and the fallbacks, each with its WEFT_VERBOSE=rt line: WEFT_HOST_SHM=0, a
# group over two hosts, and cross-memory attach forbidden by seccomp.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
out=$tmp/out
# Open MPI 4.1's AVX reductions saturate 8-bit integer sums instead of
# wrapping them (open-mpi/ompi#8045); the MPI path is compared without them.
noavx="--mca op ^avx"
for np in 2 3 4; do
  mpirun_np -v $np $noavx "$bin/test-rt-shm"
done
# All-reduces and buckets above 64 KiB per rank through cross-memory attach
# instead of the slots (test-rt-shm checks which way each went).
WEFT_HOST_SHM_STAGED=0 mpirun_np -v 3 $noavx "$bin/test-rt-shm"
# test-rt-coll and test-rt-bucket check the shared-memory path against exact
# references by default; the MPI path on one host is checked here.
WEFT_HOST_SHM=0 mpirun_np -v 3 "$bin/test-rt-coll"
WEFT_HOST_SHM=0 mpirun_np -v 4 "$bin/test-rt-bucket"
# Two pretend hosts of 2 ranks: the world is not on one host, each host's
# stage of the hierarchical all-reduce is.
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier mpirun_np -v 4 $noavx "$bin/test-rt-shm" hier
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier WEFT_COLL_TIMEOUT=30 mpirun_np -v 4 "$bin/test-rt-coll"

# Each fallback runs the comparisons too, and says why on every rank.
fallback() { # PATTERN NP [MPIRUN ARGS] MODE
  _want=$1 _np=$2
  shift 2
  WEFT_VERBOSE=rt mpirun_np -v "$_np" $noavx "$@" >"$out" 2>"$out.err" ||
    fail_run "test-rt-shm $*" "$out"
  cat "$out"
  n=$(grep -c "host shared memory off: .*$_want" "$out.err" || true)
  [ "$n" -eq "$_np" ] || fail_run "$n of $_np ranks said 'host shared memory off: ... $_want'" "$out"
  echo "# fallback: $(grep -m1 "host shared memory off" "$out.err" | sed 's/.*rt: //')"
}
WEFT_HOST_SHM=0 fallback "WEFT_HOST_SHM=0" 2 "$bin/test-rt-shm" off
WEFT_RANKS_PER_NODE=1 fallback "on different hosts" 2 "$bin/test-rt-shm" off
# Open MPI's own shared-memory transport uses cross-memory attach too: in a
# container that forbids it, it is told not to (as users there do).
fallback "not permitted" 2 --mca btl_vader_single_copy_mechanism none "$bin/test-rt-shm" seccomp
