#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun inside Slurm allocations of the virtual cluster, through Open MPI's
# mpirun (the default engine): "salloc -N3 -n6 weftrun" takes the allocation's
# hosts and slots and says so in --dry-run, places every rank where its plan
# says (never by SLURM_PROCID), runs mpi-hello's all-reduce across the 3
# nodes with mpirun's daemons started by srun (no ssh); an sbatch script of
# the same writes its output file; a failed rank ends the job with its code,
# and SIGTERM to weftrun with 143; root without Open MPI's permission is said as
# mpirun's refusal (70), not as hosts unreachable; nothing is left running, no
# Slurm job left.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-slurm-lib.sh"
slurm_up

cat >"$work/job.sh" <<JOB
#!/bin/sh
echo "batch on \$(hostname)"
"$weftrun" --dry-run "$work/$uniq-check" || exit \$?
"$weftrun" "$hello" || exit \$?
"$weftrun" "$work/$uniq-check"
JOB
chmod +x "$work/job.sh"

rc=0
on vnode0 salloc -N3 -n6 "$work/job.sh" >"$work/salloc.out" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$work/salloc.out"; fail "salloc -N3 -n6 job.sh exited $rc"; }
grep -q '^# hosts from the Slurm allocation SLURM_JOB_ID=[0-9]*: SLURM_JOB_NODELIST=vnode\[0-2\], SLURM_TASKS_PER_NODE=2(x3)$' \
  "$work/salloc.out" || { cat "$work/salloc.out"; fail "--dry-run does not say the hosts come from the allocation"; }
grep -q '^# engine: mpirun (auto: ' "$work/salloc.out" || fail "--dry-run does not name the engine"
check_hello "$work/salloc.out" "salloc -N3 -n6 weftrun mpi-hello"
check_placed "$work/salloc.out" "salloc -N3 -n6 weftrun"
echo "ok salloc -N3 -n6 weftrun: hosts from the allocation, all-reduce over 3 nodes, ranks as planned"

rc=0
sbatch_wait vnode1 -N3 -n6 -o "$work/batch.out" "$work/job.sh" || rc=$?
[ -f "$work/batch.out" ] || fail "sbatch exited $rc and wrote no $work/batch.out"
[ $rc -eq 0 ] || { cat "$work/batch.out"; fail "the batch job job.sh exited $rc"; }
grep -qx 'batch on vnode0' "$work/batch.out" || fail "the batch script did not run on vnode0"
check_hello "$work/batch.out" "sbatch weftrun mpi-hello"
check_placed "$work/batch.out" "sbatch weftrun"
echo "ok sbatch -N3 -n6 of a weftrun script: its output file"

check_failure mpirun

# As root without Open MPI's two variables, mpirun refuses to start anything: weftrun
# says so (70) before it probes the allocation's hosts through mpirun (as it does for
# --report-bindings and --dry-run), not that no host can be reached (75, what the
# probe's refusal read as before).
for how in --report-bindings --dry-run; do
  rc=0
  on vnode0 env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM salloc -N2 -n4 "$weftrun" $how -np 4 "$hello" \
    >"$work/root.out" 2>&1 || rc=$?
  [ $rc -eq 70 ] && grep -q '^weftrun: running as root, which mpirun refuses; add --allow-run-as-root' "$work/root.out" &&
    ! grep -q 'cannot be reached' "$work/root.out" ||
    { cat "$work/root.out"; fail "weftrun $how as root without OMPI_ALLOW_RUN_AS_ROOT: exit $rc, not 70 with mpirun's refusal said"; }
  echo "ok weftrun $how as root without OMPI_ALLOW_RUN_AS_ROOT: exit 70, mpirun's refusal said before the probe"
done
no_job_left "weftrun as root without OMPI_ALLOW_RUN_AS_ROOT"

# SIGTERM to weftrun (as a user's kill, or a wrapper's): 143, the job gone.
rc=0
# (ranks that only sleep: with $uniq-fail rank 3 could fail first on a fast launch)
on vnode0 salloc -N3 -n6 sh -c "\"$weftrun\" \"$tmp/$uniq-sleep\" 60 & p=\$!; sleep 3; kill -TERM \$p; wait \$p" \
  >"$work/term.out" 2>&1 || rc=$?
[ $rc -eq 143 ] && grep -q '^weftrun: job ended by signal 15 (exit 143)$' "$work/term.out" ||
  { cat "$work/term.out"; fail "SIGTERM to weftrun: exit $rc, not 143 with its line"; }
nothing_left || fail "processes left after SIGTERM to weftrun"
no_job_left "SIGTERM to weftrun"
echo "ok SIGTERM to weftrun: exit 143, nothing left"
