#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Direct launch: "srun --mpi=pmix -n 6 mpi-hello" on the 3 nodes of the Slurm
# virtual cluster, with no mpirun: 2 ranks on each node, MPI ranks equal to
# Slurm's task ids, a right all-reduce. Open MPI 4.1.4's TCP transport crashes
# in MPI_Init in about 3 of 100 direct launches on a loaded machine
# (shared/reference/slurm.md): a crash is retried once, and said so; a crash
# that repeats, or any other failure, fails the test.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
vc_up_slurm 3 --slots 2
out=$tmp/out
on vnode0 srun --mpi=list 2>&1 | grep -q pmix ||
  { echo "SKIP: this Slurm has no PMIx plugin (srun --mpi=list)"; exit 77; }

launch() {
  rc=0
  on vnode0 srun --mpi=pmix -N3 -n 6 "$hello" >"$out" 2>&1 || rc=$?
  cat "$out"
}
crashed() {
  [ $rc -ne 0 ] && grep -Eq 'Segmentation fault|signal 11|Signal: Segmentation|core dumped' "$out"
}
launch
if crashed; then
  echo "NOTE: srun --mpi=pmix crashed (exit $rc; Open MPI 4.1.4's known TCP crash, see slurm.md); retrying once"
  launch
  crashed && fail "srun --mpi=pmix crashed twice in a row (exit $rc): not the rare known crash"
fi
[ $rc -eq 0 ] || fail "srun --mpi=pmix -n 6 mpi-hello exited $rc"
hosts=$(sed -n 's/^rank [0-9]* of 6 on //p' "$out" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
[ "$hosts" = "vnode0=2 vnode1=2 vnode2=2 " ] || fail "expected 2 ranks on each node; got '$hosts'"
grep -qx 'allreduce ok 6' "$out" || fail "no 'allreduce ok 6' from rank 0"

# Each task's MPI rank is its Slurm task id (SLURM_PROCID), and PMIx's rank.
rc=0
on vnode0 srun --mpi=pmix -N3 -n 6 sh -c 'echo "$SLURM_PROCID ${PMIX_RANK:-none} $(hostname)"' >"$out.ids" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$out.ids"; fail "srun --mpi=pmix sh exited $rc"; }
got=$(sort -n "$out.ids" | tr '\n' ' ')
[ "$got" = "0 0 vnode0 1 1 vnode0 2 2 vnode1 3 3 vnode1 4 4 vnode2 5 5 vnode2 " ] ||
  fail "SLURM_PROCID, PMIX_RANK, host per task: '$got'"
echo "ok"
