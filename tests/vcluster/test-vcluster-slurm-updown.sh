#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-vcluster up 3 --slurm makes a Slurm cluster: srun -N3 hostname runs on
# the 3 nodes, status shows sinfo, a repeated up changes nothing, a killed
# node comes back with the next up. down, with a job still running, leaves
# nothing: no namespace, daemon, job process, state directory or /dev/shm
# file. Twice in a row, timed. (vcluster-cli.sh checks bad --slurm options.)
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
err=$tmp/err
round=1
while [ $round -le 2 ]; do
  t0=$(date +%s%N)
  vc_up_slurm 3
  t1=$(date +%s%N)
  echo "round $round: up 3 --slurm: $(( (t1 - t0) / 1000000 )) ms"
  state=$(dirname "$hostfile")

  got=$(on vnode0 srun -N3 hostname | sort | tr '\n' ' ')
  [ "$got" = "vnode0 vnode1 vnode2 " ] || fail "srun -N3 hostname printed '$got'"
  st=$("$vc" --prefix "$prefix" status)
  echo "$st" | grep -q '^debug\*  *up .* 3  *idle vnode\[0-2\]$' ||
    fail "status does not show sinfo with 3 idle nodes: $st"

  # The daemons, by their pid files; a repeated up leaves them alone.
  pidfiles="$state/slurm/run/slurmctld.pid $state/slurm/run/munged.vnode0.pid $state/slurm/run/munged.vnode1.pid
            $state/slurm/run/munged.vnode2.pid $state/slurm/run/slurmd.vnode0.pid $state/slurm/run/slurmd.vnode1.pid
            $state/slurm/run/slurmd.vnode2.pid"
  daemons=$(cat $pidfiles | tr '\n' ' ')
  [ "$(echo $daemons | wc -w)" -eq 7 ] || fail "expected 7 daemon pids, got '$daemons'"
  if [ $round -eq 1 ]; then
    "$vc" --prefix "$prefix" up 3 --slurm >/dev/null 2>"$err" || fail "a repeated up failed: $(cat "$err")"
    [ "$(cat $pidfiles | tr '\n' ' ')" = "$daemons" ] || fail "a repeated up restarted daemons"
    rc=0; "$vc" --prefix "$prefix" up 3 >/dev/null 2>"$err" || rc=$?
    [ $rc -eq 2 ] && grep -q 'runs Slurm: add --slurm' "$err" || fail "up without --slurm exited $rc: $(cat "$err")"
    # A killed node's daemons are back after up, and it takes jobs again.
    "$vc" --prefix "$prefix" kill vnode1 2>/dev/null
    "$vc" --prefix "$prefix" up 3 --slurm >/dev/null 2>"$err" || fail "up after kill vnode1 failed: $(cat "$err")"
    got=$(on vnode1 srun -N3 hostname | sort | tr '\n' ' ')
    [ "$got" = "vnode0 vnode1 vnode2 " ] || fail "after kill and up, srun -N3 hostname printed '$got'"
    daemons=$(cat $pidfiles | tr '\n' ' ')
  fi

  # Something for down to clean up: a job that would run for 5 minutes, and a
  # file in a node's /dev/shm (its own: the machine's stays as it was).
  on vnode2 sbatch -N3 -o /dev/null --wrap 'srun sleep 300' >/dev/null
  on vnode1 sh -c "echo x >/dev/shm/weft-slurm-updown-$$"
  i=0
  until on vnode0 squeue -h -t R -o %i | grep -q .; do
    i=$((i + 1)); [ $i -le 100 ] || fail "the sleep job did not start within 10 s"; sleep 0.1
  done
  on vnode1 cat "/dev/shm/weft-slurm-updown-$$" >/dev/null || fail "vnode1 cannot read back its /dev/shm file"
  [ ! -e "/dev/shm/weft-slurm-updown-$$" ] || fail "vnode1's /dev/shm is the machine's"
  procs=$(for k in 0 1 2; do ip netns pids "$prefix-vnode$k"; done | tr '\n' ' ')

  t0=$(date +%s%N)
  "$vc" --prefix "$prefix" down 2>"$err" || fail "down failed: $(cat "$err")"
  t1=$(date +%s%N)
  echo "round $round: down (one job running): $(( (t1 - t0) / 1000000 )) ms"
  left=$(ip netns list | cut -d' ' -f1 | grep "^$prefix-" || true)
  [ -z "$left" ] || fail "namespaces left after down: $left"
  # A zombie is dead (init reaps late).
  for p in $daemons $procs; do
    s=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$p/status 2>/dev/null || true)
    [ -z "$s" ] || [ "$s" = Z ] || fail "process $p ($(cat /proc/$p/cmdline | tr '\0' ' ')) survived down"
  done
  [ ! -e "$state" ] || fail "state directory $state left after down"
  # Other tests may use the machine's /dev/shm meanwhile: only ours is checked.
  [ ! -e "/dev/shm/weft-slurm-updown-$$" ] || fail "vnode1's /dev/shm file is left after down"
  round=$((round + 1))
done
echo "ok"
