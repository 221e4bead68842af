#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-coll on 1, 2, 3 and 4 ranks.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
for np in 1 2 3 4; do
  mpirun_np -v $np "$bin/test-rt-coll"
done
# The same checks through the hierarchical all-reduce (2 pretend hosts x 2
# ranks), and with deadlines on (the non-blocking path).
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier mpirun_np -v 4 "$bin/test-rt-coll"
WEFT_RANKS_PER_NODE=2 WEFT_HIER_THRESHOLD=0 WEFT_COLL_TIMEOUT=30 mpirun_np -v 4 "$bin/test-rt-coll"
WEFT_COLL_TIMEOUT=30 mpirun_np -v 3 "$bin/test-rt-coll"
# Counts above MPI's int are cut into chunks: the same path with chunks of 100.
WEFT_MPI_CHUNK=100 mpirun_np -v 3 "$bin/test-rt-coll"
# Uneven hosts (2 + 1): the rule falls back to flat.
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier mpirun_np -v 3 "$bin/test-rt-coll"
