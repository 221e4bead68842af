#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# WEFT_COLL_TIMEOUT=2 with one rank absent (or a recv from it, or a send to
# or receive from it in a batch): every other rank must report
# WEFT_ETIMEDOUT naming it, and the job must end in bounded time.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
out=$tmp/out
for what in allreduce barrier bcast recv alltoall sendrecv; do
  start=$(date +%s)
  WEFT_COLL_TIMEOUT=2 mpirun_np -v 3 "$bin/test-rt-timeout" $what >"$out" 2>&1 || true
  took=$(($(date +%s) - start))
  cat "$out"
  n=$(grep -c '^TIMEDOUT-OK rank' "$out" || true)
  if [ "$n" -ne 2 ]; then
    echo "FAIL: $what: $n of 2 waiting ranks reported the timeout"
    exit 1
  fi
  grep -q "world rank(s) 2 had not joined\|recv with world rank 2 \|not matched: .* world rank 2;" "$out" ||
    { echo "FAIL: no stderr line naming rank 2"; exit 1; }
  if [ "$took" -gt 25 ]; then
    echo "FAIL: $what: took ${took}s with a 2s deadline"
    exit 1
  fi
  echo "# $what: timed out and ended in ${took}s"
done
