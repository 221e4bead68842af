#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A rank absent from, killed in, or stopped in host shared-memory all-reduces
# and all-to-alls (WEFT_COLL_TIMEOUT=2): every other rank must report an error naming it, and
# the job must end in bounded time. mpirun --enable-recovery keeps the others
# alive after a rank dies, so that they can report; without it mpirun ends
# the job itself, which must not hang either.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
bin=$WEFT_BUILDDIR/tests/mpi
out=$tmp/out
export WEFT_COLL_TIMEOUT=2
fault() { # HOW
  start=$(date +%s)
  mpirun_np -v 3 --enable-recovery "$bin/test-rt-shm-fault" "$1" >"$out" 2>&1 || true
  took=$(($(date +%s) - start))
  cat "$out"
  n=$(grep -c '^FAULT-OK rank' "$out" || true)
  [ "$n" -eq 2 ] || fail "$1: $n of 2 waiting ranks reported the failure"
  [ "$took" -le 25 ] || fail "$1: took ${took}s with a 2s deadline"
  echo "# $1: reported by both other ranks, ended in ${took}s"
}
# The 4 MiB all-reduces go through the slots; with WEFT_HOST_SHM_STAGED=0
# through cross-memory attach.
for how in absent killed stopped; do
  fault $how
done
WEFT_HOST_SHM_STAGED=0 fault killed
# All-to-alls of 4 MiB per rank (peers read from the send buffers).
fault a2a-killed
fault a2a-absent
start=$(date +%s)
mpirun_np -v 3 "$bin/test-rt-shm-fault" killed >"$out" 2>&1 || true
took=$(($(date +%s) - start))
[ "$took" -le 25 ] || { cat "$out"; fail "killed, without --enable-recovery: took ${took}s"; }
echo "# killed, without --enable-recovery: mpirun ended the job in ${took}s"
