#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft's CPU layouts against mpirun itself: every case of ompi-oracle.cases is
# mapped by mpirun --do-not-launch on a shipped topology and by the Open MPI
# 4.1 model (lib/map/ompi-*.c) three ways: the ompi-model helper, weft-topo,
# and weftrun --engine srun's plan with each rank's weft-rank binding itself
# from it; ranks, hosts, local ranks, bindings and refusals must agree
# (ompi-oracle.py says how they are compared and which cases each tool takes).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
command -v python3 >/dev/null || skip "python3 is needed to compare the maps"
"$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI) 4\.1' ||
  skip "the model is of Open MPI 4.1; $MPIRUN is $("$MPIRUN" --version 2>/dev/null | head -n 1)"
WEFT_TOPO="$WEFT_BUILDDIR/src/weft-topo/weft-topo" WEFTRUN="$weftrun" \
  WEFT_RANK="$WEFT_BUILDDIR/src/weft-rank/weft-rank" TMPDIR=$tmp \
  timeout 900 python3 "$WEFT_TOPDIR/tests/cli/ompi-oracle.py" \
  "$WEFT_BUILDDIR/tests/cli/ompi-model" "$WEFT_TOPDIR/tests/cli/ompi-oracle.cases"

# Live, on this machine: a rank srun starts (its agent binds it, srun does not) ends up
# on the processors mpirun binds the same rank to.
me=$(hostname | cut -d. -f1)
show='echo "${OMPI_COMM_WORLD_RANK:-$RANK} $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
live() { # NP OPTIONS...
  _np=$1
  shift
  timeout 60 "$MPIRUN" -np "$_np" "$@" sh -c "$show" 2>"$tmp/err" | sort >"$tmp/mpirun" ||
    { cat "$tmp/err"; fail "mpirun -np $_np $*"; }
  # this host without a slot count: its cores, as mpirun's own host has them
  echo "$me" >"$tmp/me"
  SLURM_JOB_ID=1 SLURM_JOB_NODELIST=$me timeout 60 "$weftrun" --engine srun --dry-run \
    --hostfile "$tmp/me" -np "$_np" "$@" true >"$tmp/plan" 2>"$tmp/err" ||
    { cat "$tmp/err"; fail "weftrun --engine srun $*"; }
  _args=$(sed -n 's/^# command: .* [^ ]*weft-rank \(.*\) -- true$/\1/p' "$tmp/plan")
  [ -n "$_args" ] || { cat "$tmp/plan"; fail "no weft-rank in the plan of $*"; }
  : >"$tmp/srun"
  _r=0
  while [ $_r -lt "$_np" ]; do
    # shellcheck disable=SC2086 # the agent's arguments, one word each
    env -i PATH="$PATH" SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_PROCID=$_r SLURM_NTASKS="$_np" \
      SLURM_LOCALID=$_r SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE="$_np" PMIX_RANK=$_r \
      timeout 60 "$WEFT_BUILDDIR/src/weft-rank/weft-rank" $_args -- sh -c "$show" >>"$tmp/srun" ||
      fail "weft-rank as srun's task $_r of $*"
    _r=$((_r + 1))
  done
  sort -o "$tmp/srun" "$tmp/srun"
  cmp -s "$tmp/mpirun" "$tmp/srun" ||
    { echo "mpirun:"; cat "$tmp/mpirun"; echo "srun:"; cat "$tmp/srun"; fail "-np $_np $*: srun's ranks are not bound as mpirun's"; }
  echo "ok live -np $_np $*: $(tr '\n' ' ' <"$tmp/srun")"
}
live 2
live 2 --map-by core --bind-to none
live 1 --map-by socket
live "$(($(nproc) + 1))" --oversubscribe
