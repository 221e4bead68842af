#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-rank as an srun task, without Slurm: its rank, local rank and node from
# srun's variables (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID,
# SLURM_STEP_TASKS_PER_NODE, checked against PMIX_RANK), Open MPI's winning
# over them; its GPU among those weftrun sends (--gpus) and the step's
# (SLURM_STEP_GPUS with Slurm's CUDA_VISIBLE_DEVICES), renumbered as device
# cgroups renumber them; a user's CUDA_VISIBLE_DEVICES kept; contradictions
# refused with the agent's exit 70; --output-filename's files; the rank from
# MPICH Hydra's PMI_RANK and MPI_LOCALRANKID instead where Hydra started it.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
agent=$WEFT_BUILDDIR/src/weft-rank/weft-rank
a3=$topos/a3-highgpu-8g.xml
show='echo "$RANK $LOCAL_RANK $NODE_RANK $WORLD_SIZE $WEFT_GPU ${CUDA_VISIBLE_DEVICES:-unset}"'
# task 3 of 4, the second of 2 on the second node, as srun --mpi=pmix starts it
task() { # ENV... -- AGENT ARGS
  env -i PATH="$PATH" SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_LOCALID=1 \
    SLURM_NODEID=1 'SLURM_STEP_TASKS_PER_NODE=2(x2)' PMIX_RANK=3 "$@"
}
expect() { # WANT WHAT ENV... [--] weft-rank args
  _want=$1 _what=$2
  shift 2
  _got=$(task "$@" 2>"$tmp/err") || { cat "$tmp/err"; fail "$_what: exit $?"; }
  [ "$_got" = "$_want" ] || { cat "$tmp/err"; fail "$_what: got '$_got', want '$_want'"; }
  echo "ok $_what: $_got"
}
refused() { # PATTERN WHAT ENV... weft-rank args
  _p=$1 _what=$2
  shift 2
  _rc=0
  task "$@" >"$tmp/out" 2>"$tmp/err" || _rc=$?
  [ $_rc -eq 70 ] && grep -q "^weft-rank: rank .*$_p" "$tmp/err" && [ ! -s "$tmp/out" ] ||
    { cat "$tmp/out" "$tmp/err"; fail "$_what: exit $_rc, not 70 with '$_p'"; }
  echo "ok $_what: refused"
}

# 2 ranks on an a3-highgpu-8g: GPU 0 and 4 (one per socket), all GPUs visible
expect "3 1 1 4 4 0,4,1,2,3,5,6,7" "srun task 3" "$agent" --layout 2x2 --topology "$a3" -- sh -c "$show"
# Open MPI's variables win (mpirun in an allocation: the daemon step's SLURM_PROCID is not the rank)
expect "2 0 1 4 0 0,1,2,3,4,5,6,7" "OMPI_COMM_WORLD_* over SLURM_PROCID" OMPI_COMM_WORLD_RANK=2 \
  OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
  "$agent" --layout 2x2 --topology "$a3" -- sh -c "$show"
# the job's GPUs 3-4 on both hosts; the step's are those too (no device cgroups)
expect "3 1 1 4 4 3,4" "the job's GPUs" SLURM_STEP_GPUS=3,4 CUDA_VISIBLE_DEVICES=3,4 \
  "$agent" --layout 2x2 --topology "$a3" --gpus '3-4*2' -- sh -c "$show"
# device cgroups: the step's GPUs 3,4 are devices 0,1 of this task
expect "3 1 1 4 1 0,1" "GPUs renumbered by a device cgroup" SLURM_STEP_GPUS=3,4 CUDA_VISIBLE_DEVICES=0,1 \
  "$agent" --layout 2x2 --topology "$a3" --gpus '3-4*2' -- sh -c "$show"
# no --gpus from weftrun, in a step of GPUs 5,6: never a GPU outside them
expect "3 1 1 4 6 5,6" "the step's GPUs alone" SLURM_STEP_GPUS=5,6 CUDA_VISIBLE_DEVICES=5,6 \
  "$agent" --layout 2x2 --topology "$a3" -- sh -c "$show"
# a user's own CUDA_VISIBLE_DEVICES is kept, and the GPU is one of it
expect "3 1 1 4 4 4,0" "the user's CUDA_VISIBLE_DEVICES" CUDA_VISIBLE_DEVICES=4,0 \
  "$agent" --layout 2x2 --topology "$a3" --gpus '0,4*2' -- sh -c "$show"

refused "weftrun planned GPUs 0-1 on this host .* only SLURM_STEP_GPUS=3,4" "--gpus outside the step's" \
  SLURM_STEP_GPUS=3,4 CUDA_VISIBLE_DEVICES=3,4 "$agent" --layout 2x2 --topology "$a3" --gpus '0-1*2' -- true
refused "PMIX_RANK=2 but SLURM_PROCID=3" "PMIX_RANK against SLURM_PROCID" PMIX_RANK=2 \
  "$agent" --layout 2x2 --topology "$a3" -- true
refused "srun placed this rank as local rank 1 of 2, weftrun planned 0 of 1" "a layout srun did not follow" \
  "$agent" --layout 1x4 --topology "$a3" -- true
# MPICH's Hydra: PMI_RANK and Hydra's local rank win over a step's SLURM_PROCID (Hydra's
# proxies started by srun); a local rank Hydra gave that the layout does not have is refused
expect "2 0 1 4 0 0,1,2,3,4,5,6,7" "Hydra's PMI_RANK over SLURM_PROCID" PMI_RANK=2 PMI_SIZE=4 \
  MPI_LOCALRANKID=0 MPI_LOCALNRANKS=2 "$agent" --layout 2x2 --topology "$a3" -- sh -c "$show"
refused "Hydra placed this rank as local rank 0 of 1, weftrun planned 0 of 2" "a layout Hydra did not follow" \
  PMI_RANK=2 PMI_SIZE=4 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=1 "$agent" --layout 2x2 --topology "$a3" -- true
rc=0
env -i PATH="$PATH" "$agent" --layout 2 -- true >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 70 ] && grep -q 'none of OMPI_COMM_WORLD_RANK.* (mpirun), PMI_RANK and MPI_LOCALRANKID (mpiexec.hydra), SLURM_PROCID and SLURM_STEP_ID (srun)' "$tmp/err" ||
  { cat "$tmp/err"; fail "weft-rank by hand: exit $rc"; }
echo "ok weft-rank by hand: refused"

# --output-filename: DIR/1/rank.3/stdout and stderr, and the terminal too (as mpirun)
rc=0
task "$agent" --layout 2x2 --topology "$a3" --output-filename "$tmp/of" -- sh -c 'echo out; echo err >&2' \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] && [ "$(cat "$tmp/of/1/rank.3/stdout")" = out ] && [ "$(cat "$tmp/of/1/rank.3/stderr")" = err ] &&
  [ "$(cat "$tmp/out")" = out ] && [ "$(cat "$tmp/err")" = err ] ||
  { ls -R "$tmp/of"; cat "$tmp/out" "$tmp/err"; fail "--output-filename: exit $rc or files wrong"; }
rc=0
task "$agent" --layout 2x2 --topology "$a3" --output-filename "$tmp/of" -- sh -c 'exit 4' \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 4 ] && grep -q '^weft-rank: rank 3 host .*: exited with status 4$' "$tmp/of/1/rank.3/stderr" ||
  fail "--output-filename: a failure's line is not in the rank's stderr file (exit $rc)"
echo "ok --output-filename"
