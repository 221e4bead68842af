#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-errors on 1, 2, 3 and 4 ranks.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
for np in 1 2 3 4; do
  mpirun_np -v $np "$bin/test-rt-errors"
done
# Bad settings fail weft_init with a message naming the variable.
out=$tmp/out
for setting in WEFT_COLL_TIMEOUT=abc WEFT_BACKEND=gloo WEFT_ALLREDUCE=ring WEFT_GPU=x \
               WEFT_INIT_TIMEOUT=-1 WEFT_HIER_THRESHOLD=lots WEFT_RANKS_PER_NODE=0; do
  if (export "$setting"; mpirun_np 1 "$bin/test-rt-errors") >"$out" 2>&1; then
    cat "$out"
    echo "FAIL: $setting was accepted"
    exit 1
  fi
  grep -q "${setting%%=*}=" "$out" || { cat "$out"; echo "FAIL: $setting: no message naming it"; exit 1; }
  echo "# $setting: refused"
done
