#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-mesh on 1, 2, 3 and 4 ranks.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
for np in 1 2 3 4; do
  mpirun_np -v $np "$bin/test-rt-mesh"
done
WEFT_COLL_TIMEOUT=30 mpirun_np -v 3 "$bin/test-rt-mesh"
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier mpirun_np -v 4 "$bin/test-rt-mesh"
