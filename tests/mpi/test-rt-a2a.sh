#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-a2a (all-to-all, alltoallv, batches of sends and receives) on 1 to 4
# ranks: within one host through shared memory, and through MPI (shared
# memory off; 2 pretend hosts; small MPI chunks, so that blocks and messages
# are cut; deadlines on, the non-blocking path). Then counts that do not
# match fail on every rank with one line naming the two ranks.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi/test-rt-a2a
for np in 1 2 3 4; do
  mpirun_np -v $np "$bin"
done
WEFT_HOST_SHM=0 mpirun_np -v 3 "$bin"
WEFT_RANKS_PER_NODE=2 mpirun_np -v 4 "$bin"
WEFT_MPI_CHUNK=1000 WEFT_HOST_SHM=0 mpirun_np -v 3 "$bin"
WEFT_COLL_TIMEOUT=30 mpirun_np -v 3 "$bin"
WEFT_COLL_TIMEOUT=30 WEFT_HOST_SHM=0 mpirun_np -v 2 "$bin"
mpirun_np -v 3 "$bin" mismatch >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "mismatch"; }
n=$(grep -c '^MISMATCH-OK' "$tmp/out" || true)
[ "$n" -eq 3 ] || { cat "$tmp/out"; fail "mismatched counts: $n of 3 ranks failed as they should"; }
echo "ok: mismatched counts fail on all 3 ranks: $(grep -m1 '^MISMATCH-OK' "$tmp/out")"
