#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A node killed while a job runs across it ends that job with a non-zero exit
# within seconds instead of a hang; the dead node refuses rsh at once; up
# brings it back.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
need_mpirun
vc_up 3 --slots 1

out=$tmp/out
job=
at_exit '[ -z "$job" ] || kill -9 $job 2>/dev/null'
timeout -k 5 60 "$vc" --prefix "$prefix" run -- mpirun -np 3 --map-by node "$hello" --loop 50 >"$out" 2>&1 &
job=$!
# Wait until every rank runs (at most 30 s), then kill vnode2.
i=0
while [ "$(grep -c '^rank [0-9] of 3 on ' "$out")" -lt 3 ]; do
  i=$((i + 1))
  [ $i -le 300 ] || { cat "$out"; fail "the job did not start within 30 s"; }
  kill -0 $job 2>/dev/null || { cat "$out"; fail "the job ended before vnode2 was killed"; }
  sleep 0.1
done
t0=$(date +%s)
"$vc" --prefix "$prefix" kill vnode2
rc=0
wait $job || rc=$?
job=
t1=$(date +%s)
cat "$out"
echo "job exit $rc, $((t1 - t0)) s after the kill"
[ $rc -ne 0 ] || fail "the job exited 0 although vnode2 died"
[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the job hung until timeout(1) ended it (exit $rc)"
[ $((t1 - t0)) -le 40 ] || fail "the job took $((t1 - t0)) s to end after the kill"
grep -q 'allreduce ok' "$out" && fail "rank 0 reported success although vnode2 died"

# The dead node: no processes, rsh refuses at once, status says so.
[ -z "$(ip netns pids "$prefix-vnode2")" ] || fail "processes left on the killed vnode2"
rc=0; timeout 10 "$vc" --prefix "$prefix" rsh vnode2 true 2>/dev/null || rc=$?
[ $rc -eq 255 ] || fail "rsh to the killed vnode2 exited $rc, not 255"
"$vc" --prefix "$prefix" status | grep -q '^vnode2 .* killed ' || fail "status does not show vnode2 killed"

# up restarts it.
"$vc" --prefix "$prefix" up 3 --slots 1 >/dev/null 2>&1 || fail "up after a kill failed"
h=$("$vc" --prefix "$prefix" rsh vnode2 hostname) || fail "rsh to the restarted vnode2 failed"
[ "$h" = vnode2 ] || fail "the restarted vnode2 calls itself '$h'"
echo "ok"
