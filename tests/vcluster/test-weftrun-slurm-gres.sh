#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun and the GPUs Slurm gives a job, on 3 a3-highgpu-8g "VMs" (8 fake
# GPUs each as GRES): while another job holds GPUs 0-2 of every node,
# "--gres=gpu:2" gets GPUs 3-4, and weftrun plans only those (the plan says
# so), under salloc and sbatch with mpirun and with --engine srun. Every
# rank's WEFT_GPU is the planned one and lies within its CUDA_VISIBLE_DEVICES,
# which holds exactly the job's GPUs with the rank's first (never the batch
# node's or a daemon step's CUDA_VISIBLE_DEVICES, never another GPU). A job
# given no GPU gets CPU ranks, and --map-by gpu says why (exit 69).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-slurm-lib.sh"
vc_up_slurm 3 --topology "$topos/a3-highgpu-8g.xml"
holder=$(on vnode0 sbatch --parsable -N3 --gres=gpu:3 -o /dev/null --wrap "exec \"$tmp/$uniq-sleep\" 300")
i=0
until [ "$(on vnode0 squeue -h -t R -o %b)" = gres:gpu:3 ]; do
  i=$((i + 1)); [ $i -le 100 ] || fail "the job holding 3 GPUs per node did not start within 10 s"; sleep 0.1
done

cat >"$work/job.sh" <<JOB
#!/bin/sh
"$weftrun" "\$@" --dry-run "$work/$uniq-check" && "$weftrun" "\$@" "$work/$uniq-check"
JOB
chmod +x "$work/job.sh"

# Each rank on its planned GPU, one of the job's 3 and 4, device LOCAL_RANK of its
# CUDA_VISIBLE_DEVICES, which holds GPUs 3 and 4 and no other.
check_gpus() { # FILE WHAT
  grep -q '^# host vnode1: 2 of 2 slots, 2 GPUs (3-4 of 8: Slurm job [0-9]*), ' "$1" ||
    { cat "$1"; fail "$2: the plan does not say vnode1's ranks have GPUs 3-4 of Slurm's job"; }
  check_placed "$1" "$2"
  awk '$1 == "R" { n = split($8, d, ","); set = d[1] < d[2] ? d[1] "," d[2] : d[2] "," d[1]
                   if ($7 != 3 + $5 || n != 2 || set != "3,4" || d[$5 + 1] != $7) { print "bad: " $0; bad = 1 } }
       END { exit bad }' "$1" || { cat "$1"; fail "$2: WEFT_GPU or CUDA_VISIBLE_DEVICES outside the job's GPUs 3-4"; }
  echo "ok $2: GPUs 3-4 as Slurm gave them, in the plan and in every rank"
}

for engine in mpirun srun; do
  rc=0
  on vnode0 salloc -N3 -n6 --gres=gpu:2 "$work/job.sh" --engine $engine >"$work/$engine.out" 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat "$work/$engine.out"; fail "salloc --gres=gpu:2 weftrun --engine $engine: exit $rc"; }
  check_gpus "$work/$engine.out" "salloc -N3 -n6 --gres=gpu:2 weftrun --engine $engine"
done
rc=0
sbatch_wait vnode2 -N3 -n6 --gres=gpu:2 -o "$work/batch.out" "$work/job.sh" || rc=$?
[ $rc -eq 0 ] || { cat "$work/batch.out" 2>/dev/null; fail "sbatch --gres=gpu:2 of weftrun: exit $rc"; }
check_gpus "$work/batch.out" "sbatch -N3 -n6 --gres=gpu:2 weftrun"

# No GPU asked for: the job has none, its ranks none; --map-by gpu is refused.
rc=0
on vnode0 salloc -N1 -n2 "$work/job.sh" >"$work/none.out" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q '^# host vnode0: 2 of 2 slots, 0 GPUs (none of 8: Slurm job [0-9]*), ' "$work/none.out" &&
  [ "$(awk '$1 == "R" && $7 == -1 && $8 == "none"' "$work/none.out" | wc -l)" -eq 2 ] ||
  { cat "$work/none.out"; fail "salloc without GPUs: exit $rc, or ranks with a GPU"; }
rc=0
on vnode0 salloc -N1 -n2 "$weftrun" --map-by gpu "$work/$uniq-check" >"$work/gpu.out" 2>&1 || rc=$?
[ $rc -eq 69 ] && grep -q "^weftrun: --map-by gpu but Slurm job [0-9]* has no GPU on host 'vnode0'; ask for GPUs" "$work/gpu.out" ||
  { cat "$work/gpu.out"; fail "--map-by gpu in a job without GPUs: exit $rc, not 69 with the reason"; }
echo "ok a job without GPUs: CPU ranks; --map-by gpu refused with 69"
on vnode0 scancel "${holder%%;*}"
nothing_left || fail "processes left"
