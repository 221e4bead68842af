#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-rt-errors on 1, 2, 3 and 4 ranks.
set -eu
. "${WEFT_TOPDIR:?}/tests/mpi/rt-run.sh"
for np in 1 2 3 4; do
  rt_mpirun $np "$bin/test-rt-errors"
done
# Bad settings fail weft_init with a message naming the variable.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for setting in WEFT_COLL_TIMEOUT=abc WEFT_BACKEND=gloo WEFT_ALLREDUCE=ring WEFT_GPU=x \
               WEFT_INIT_TIMEOUT=-1 WEFT_HIER_THRESHOLD=lots WEFT_RANKS_PER_NODE=0; do
  if env "$setting" timeout 60 mpirun --oversubscribe --bind-to none -np 1 "$bin/test-rt-errors" \
      >"$out" 2>&1; then
    cat "$out"
    echo "FAIL: $setting was accepted"
    exit 1
  fi
  grep -q "${setting%%=*}=" "$out" || { cat "$out"; echo "FAIL: $setting: no message naming it"; exit 1; }
  echo "# $setting: refused"
done
