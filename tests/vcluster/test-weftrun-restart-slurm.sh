#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --restarts inside Slurm allocations of the virtual cluster (weftrun(1)
# RESTARTS; the cluster's SlurmdTimeout is 15 s): with "salloc --no-kill", vnode2
# killed mid-run, the job restarts at once on vnode0 and vnode1 (its daemons' job step
# sharing the CPUs the dead step still holds) and goes on after Slurm finds vnode2 down,
# ending 0; without --no-kill, the restart is ended when Slurm ends the allocation and
# weftrun exits 75 for a requeueing batch script, saying so. Nothing is left running
# (mpirun's srun of the dead step neither), no Slurm job left. Exit 77 without
# namespaces or Slurm.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-slurm-lib.sh"
"$weftrun" --help 2>/dev/null | grep -q -- '--restarts' || skip "weftrun has no --restarts"
slurm_up

# a rank: its attempt in a line; the first attempt runs until its vnode dies, the
# restart until Slurm has found vnode2 down (SlurmdTimeout, 15 s) and 3 s more
prog=$work/$uniq-prog.sh
cat >"$prog" <<PROG
#!/bin/sh
echo "rank \$RANK of \$WORLD_SIZE on \$(hostname) attempt \$WEFT_RESTART_COUNT at \$(date +%s.%N)"
[ "\$WEFT_RESTART_COUNT" = 0 ] && exec "$tmp/$uniq-sleep" 120
i=0
until sinfo -h -n vnode2 -o %T | grep -q '^down' || [ \$i -ge 90 ]; do "$tmp/$uniq-sleep" 1; i=\$((i + 1)); done
[ "\$RANK" != 0 ] || echo "rank 0 saw vnode2 \$(sinfo -h -n vnode2 -o %T) after \$i s"
exec "$tmp/$uniq-sleep" 3
PROG
chmod +x "$prog"

# srun processes of this cluster (their namespace is vnode0's): mpirun's srun of its
# daemons must not outlive weftrun, even when the node it waits for is dead
srun_left() {
  ns0=$(on vnode0 readlink /proc/self/ns/net)
  for p in $(pgrep -x srun); do
    [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" != Z ] || continue
    [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" != "$ns0" ] || echo "$p"
  done
}

# vnode2 killed 11 s after all 6 ranks run (a job that ran that long restarts without
# a backoff)
kill_vnode2() {
  i=0
  while [ "$(pgrep -f "^$tmp/$uniq-sleep 120" | wc -l)" -lt 6 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 11
  date +%s.%N >"$work/killed"
  "$vc" --prefix "$prefix" kill vnode2 >/dev/null 2>&1
}

# 1. --no-kill: the job goes on without vnode2
kill_vnode2 &
rc=0
on vnode0 salloc -N3 -n6 --no-kill "$weftrun" -q --restarts 1 --min-hosts 2 "$prog" \
  >"$work/nokill.out" 2>&1 || rc=$?
wait
grep -v 'bound it to cpus' "$work/nokill.out" >"$work/nokill.txt" || true
[ $rc -eq 0 ] || { cat "$work/nokill.txt"; fail "salloc --no-kill, vnode2 killed: exit $rc, not 0"; }
grep -q "^weftrun: Slurm has not yet found vnode2 down (it waits SlurmdTimeout); restarting now on job [0-9]*'s other nodes" "$work/nokill.txt" ||
  { cat "$work/nokill.txt"; fail "--no-kill: no line saying that Slurm has not decided yet"; }
grep -q '^weftrun: restart 1 of 1: vnode2 lost (75); running again on 2 hosts (vnode0, vnode1), world size 4 (was 6)' "$work/nokill.txt" ||
  { cat "$work/nokill.txt"; fail "--no-kill: no restart on vnode0 and vnode1"; }
[ "$(grep -c '^rank [0-3] of 4 on vnode[01] attempt 1 ' "$work/nokill.txt")" -eq 4 ] ||
  { cat "$work/nokill.txt"; fail "--no-kill: not 4 ranks of the restart on vnode0 and vnode1"; }
# Slurm found vnode2 down while the restart ran, and the allocation went on
grep -q '^rank 0 saw vnode2 down' "$work/nokill.txt" ||
  { cat "$work/nokill.txt"; fail "--no-kill: the restart ended before Slurm found vnode2 down"; }
awk -v k="$(cat "$work/killed")" '/^rank [0-3] of 4 .* attempt 1 at / { if ($NF > s) s = $NF }
  END { printf "ok salloc --no-kill: vnode2 killed, the job ran again on vnode0 and vnode1 %.2f s later and outlived Slurm'"'"'s verdict\n", s - k }' \
  "$work/nokill.txt"
nothing_left || fail "--no-kill: processes left"
[ -z "$(srun_left)" ] || { ps -o pid,args -p "$(srun_left | tr '\n' ',' | sed 's/,$//')"; fail "--no-kill: srun left running"; }
no_job_left "--no-kill"

# 2. without --no-kill: Slurm ends the allocation, weftrun exits 75 and says why
slurm_up >/dev/null
i=0
until [ "$(on vnode0 sinfo -h -o %T -n vnode2)" = idle ]; do
  i=$((i + 1)); [ $i -lt 300 ] || fail "vnode2 did not come back idle after up"; sleep 0.1
done
kill_vnode2 &
rc=0
on vnode0 salloc -N3 -n6 "$weftrun" -q --restarts 1 --min-hosts 2 "$prog" >"$work/kill.out" 2>&1 || rc=$?
wait
grep -v 'bound it to cpus' "$work/kill.out" >"$work/kill.txt" || true
[ $rc -eq 75 ] || { cat "$work/kill.txt"; fail "salloc without --no-kill, vnode2 killed: exit $rc, not 75"; }
grep -q "^weftrun: Slurm ended job [0-9]*'s allocation (.*) when its node failed (it was not made with --no-kill); no restart; exit 75, which a batch script can requeue on" "$work/kill.txt" ||
  { cat "$work/kill.txt"; fail "without --no-kill: no line saying that Slurm ended the allocation"; }
echo "ok salloc without --no-kill: vnode2 killed, Slurm ended the allocation, weftrun said so and exited 75"
nothing_left || fail "without --no-kill: processes left"
[ -z "$(srun_left)" ] || fail "without --no-kill: srun left running"
no_job_left "without --no-kill"
