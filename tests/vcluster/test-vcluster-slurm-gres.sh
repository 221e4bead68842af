#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A Slurm cluster of a3-highgpu-8g "VMs" (vnode2 a g2-standard-48): each
# node's CPUs and GPUs (GRES) come from its topology, and every task sees its
# own node's WEFT_TOPOLOGY. What Slurm sets for --gres=gpu:2 in job steps, in
# a batch script and in an salloc shell (CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS,
# SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_NODE) is checked here,
# as weftrun will rely on it; GPUs held by one job are not given to another.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
vc_up_slurm 3 --topology "$topos/a3-highgpu-8g.xml" --topology "vnode2=$topos/g2-standard-48.xml"
work=$tmp
got=$(on vnode0 sinfo -h -N -o '%N %c %X:%Y:%Z %G' | tr '\n' ' ')
[ "$got" = "vnode0 208 2:52:2 gpu:8 vnode1 208 2:52:2 gpu:8 vnode2 48 1:24:2 gpu:4 " ] ||
  fail "sinfo shows '$got', not the CPUs (sockets:cores:threads) and GPUs of the topologies"

# One line per task: host, task id, the GPU variables, its topology file.
show='echo "$(hostname) $SLURM_PROCID cvd=${CUDA_VISIBLE_DEVICES-unset} job=${SLURM_JOB_GPUS-unset}'
show=$show' step=${SLURM_STEP_GPUS-unset} on=${SLURM_GPUS_ON_NODE-unset} pn=${SLURM_GPUS_PER_NODE-unset}'
show=$show' ord=${GPU_DEVICE_ORDINAL-unset} topo=${WEFT_TOPOLOGY##*/}"'
printf '#!/bin/sh\n%s\n' "$show" >"$work/show"
chmod +x "$work/show"
expect() { # expect WHAT WANT GOT
  [ "$2" = "$3" ] || fail "$1:
  want: $2
  got:  $3"
}

# A job step of 2 GPUs per node, 2 tasks per node.
got=$(on vnode0 srun -N3 --ntasks-per-node=2 --gres=gpu:2 "$work/show" | sort | tr '\n' ' ')
a3='cvd=0,1 job=unset step=0,1 on=2 pn=unset ord=0,1 topo=a3-highgpu-8g.xml'
g2='cvd=0,1 job=unset step=0,1 on=2 pn=unset ord=0,1 topo=g2-standard-48.xml'
expect "srun -N3 --ntasks-per-node=2 --gres=gpu:2" \
  "vnode0 0 $a3 vnode0 1 $a3 vnode1 2 $a3 vnode1 3 $a3 vnode2 4 $g2 vnode2 5 $g2 " "$got"

# The batch script of sbatch --gres=gpu:2: the job's GPUs, no step's.
sbatch_wait vnode1 -w vnode1 --gres=gpu:2 -o "$work/batch.out" "$work/show" ||
  fail "sbatch --gres=gpu:2 failed: $(cat "$work/batch.out" 2>/dev/null)"
expect "the batch script of sbatch --gres=gpu:2" \
  "vnode1 0 cvd=0,1 job=0,1 step=unset on=2 pn=unset ord=0,1 topo=a3-highgpu-8g.xml" "$(cat "$work/batch.out")"

# The salloc shell has no GPU variables but SLURM_GPUS_PER_NODE.
got=$(on vnode0 salloc -N2 --gpus-per-node=2 "$work/show" 2>/dev/null)
expect "the shell of salloc -N2 --gpus-per-node=2" \
  "vnode0  cvd=unset job=unset step=unset on=unset pn=2 ord=unset topo=a3-highgpu-8g.xml" "$got"

# GPUs are Slurm's to give: while a job holds 2 of vnode1's, the next one
# gets 3 others (their indices are the node's: no device cgroups here).
on vnode0 sbatch -w vnode1 --gres=gpu:2 -o /dev/null --wrap 'sleep 60' >/dev/null
i=0
until [ "$(on vnode0 squeue -h -t R -w vnode1 -o %b)" = gres:gpu:2 ]; do
  i=$((i + 1)); [ $i -le 100 ] || fail "the job holding 2 GPUs of vnode1 did not start within 10 s"; sleep 0.1
done
got=$(on vnode0 srun -w vnode1 --gres=gpu:3 "$work/show" 2>/dev/null)
expect "srun --gres=gpu:3 beside a job holding 2 GPUs" \
  "vnode1 0 cvd=2,3,4 job=unset step=2,3,4 on=3 pn=unset ord=2,3,4 topo=a3-highgpu-8g.xml" "$got"
rc=0
on vnode0 srun -w vnode2 --gres=gpu:5 true >/dev/null 2>"$work/err" || rc=$?
[ $rc -ne 0 ] && grep -q 'Requested node configuration is not available' "$work/err" ||
  fail "5 GPUs on vnode2 (4 in its topology) should be refused; exit $rc: $(cat "$work/err")"
echo "ok"
