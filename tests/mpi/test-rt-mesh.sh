#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-mesh on 1, 2, 3 and 4 ranks.
set -eu
. "${WEFT_TOPDIR:?}/tests/mpi/rt-run.sh"
for np in 1 2 3 4; do
  rt_mpirun $np "$bin/test-rt-mesh"
done
WEFT_COLL_TIMEOUT=30 rt_mpirun 3 "$bin/test-rt-mesh"
WEFT_RANKS_PER_NODE=2 WEFT_ALLREDUCE=hier rt_mpirun 4 "$bin/test-rt-mesh"
