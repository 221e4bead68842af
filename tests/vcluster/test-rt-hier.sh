#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Hierarchical against flat all-reduce on a virtual cluster of 2 nodes x 2
# ranks: test-rt-coll's checks (exact references, every dtype and op) pass
# with WEFT_ALLREDUCE=hier and =flat, and hier is really taken (2 hosts x 2
# ranks). Exits 77 where weft-vcluster cannot make namespaces.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi/test-rt-coll
[ -x "$bin" ] || make -C "$WEFT_BUILDDIR/tests/mpi" test-rt-coll >/dev/null
out=$tmp/out
vc_up 2 --slots 2
for algo in hier flat; do
  echo "# WEFT_ALLREDUCE=$algo mpirun -np 4 (2 nodes x 2)"
  timeout 120 "$vc" --prefix "$prefix" run -- mpirun -np 4 --bind-to none \
    -x WEFT_ALLREDUCE=$algo -x WEFT_VERBOSE=rt "$bin" >"$out" 2>&1 || {
    cat "$out"
    echo "FAIL: test-rt-coll with WEFT_ALLREDUCE=$algo"
    exit 1
  }
  grep -v 'rt: rank' "$out" || true
  n=$(grep -c 'hierarchical all-reduce available' "$out" || true)
  if [ "$algo" = hier ] && [ "$n" -ne 4 ]; then
    echo "FAIL: $algo: $n of 4 ranks saw 2 hosts x 2 ranks"
    exit 1
  fi
done
