#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A plain Open MPI mpirun inside Slurm allocations of the virtual cluster:
# "salloc -N3 -n6 mpirun mpi-hello" gives 2 ranks on each node and a right
# all-reduce, with mpirun's daemons started by srun, never by a remote shell;
# an sbatch script of the same job writes its output file.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
need_mpirun
vc_up_slurm 3 --slots 2 --gpus-per-node 2
work=$tmp
gres=$(on vnode0 sinfo -h -N -o '%N %c %G' | tr '\n' ' ')
[ "$gres" = "vnode0 2 gpu:2 vnode1 2 gpu:2 vnode2 2 gpu:2 " ] ||
  fail "sinfo shows '$gres', not 2 CPUs and gpu:2 on each node"

# A remote shell agent that leaves a mark: Open MPI must not need it.
cat >"$work/rsh" <<AGENT
#!/bin/sh
echo "\$*" >>"$work/rsh-used"
exit 255
AGENT
chmod +x "$work/rsh"
cat >"$work/job.sh" <<JOB
#!/bin/sh
echo "batch on \$(hostname)"
mpirun "$hello" || exit \$?
# Where each rank runs and in which Slurm step: remote ranks run under
# orted, which srun started (step 0 and up); those on the first node do not.
mpirun sh -c 'echo "where \$(hostname) step=\${SLURM_STEP_ID:-none}"'
JOB
chmod +x "$work/job.sh"

check_job() { # check_job OUTPUT WHAT
  cat "$1"
  hosts=$(sed -n 's/^rank [0-9]* of 6 on //p' "$1" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
  [ "$hosts" = "vnode0=2 vnode1=2 vnode2=2 " ] || fail "$2: expected 2 ranks on each node; got '$hosts'"
  grep -qx 'allreduce ok 6' "$1" || fail "$2: no 'allreduce ok 6'"
  steps=$(sed -n 's/^where //p' "$1" | sort | tr '\n' ' ')
  case "$steps" in
    "vnode0 step=none vnode0 step=none vnode1 step="[0-9]*" vnode1 step="[0-9]*" vnode2 step="[0-9]*" vnode2 step="[0-9]*" ") ;;
    *) fail "$2: ranks on vnode1 and vnode2 should run in a Slurm step (daemons started by srun): '$steps'" ;;
  esac
  [ ! -e "$work/rsh-used" ] || fail "$2: Open MPI used a remote shell: $(cat "$work/rsh-used")"
}

rc=0
OMPI_MCA_plm_rsh_agent=$work/rsh on vnode0 salloc -N3 -n6 "$work/job.sh" >"$work/salloc.out" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$work/salloc.out"; fail "salloc -N3 -n6 job.sh exited $rc"; }
check_job "$work/salloc.out" "salloc -N3 -n6 mpirun"

# sbatch from another node; the batch script runs on the first node.
rc=0
OMPI_MCA_plm_rsh_agent=$work/rsh sbatch_wait vnode1 -N3 -n6 -o "$work/batch.out" "$work/job.sh" || rc=$?
[ -f "$work/batch.out" ] || fail "sbatch exited $rc and wrote no $work/batch.out"
[ $rc -eq 0 ] || { cat "$work/batch.out"; fail "the batch job job.sh exited $rc"; }
grep -qx 'batch on vnode0' "$work/batch.out" || fail "the batch script did not run on vnode0"
check_job "$work/batch.out" "sbatch -N3 -n6 mpirun"
echo "ok"
