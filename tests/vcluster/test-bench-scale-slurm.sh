#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# "salloc -N4 weft-bench scale" on the Slurm virtual cluster takes the
# allocation's 4 nodes (and says so), and measures 1, 2 and 4 of them through
# weftrun inside the allocation. Exits 77 without namespaces or Slurm.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
vc_up_slurm 4 --slots 2
rc=0
on vnode0 salloc -N4 "$bench" scale --nodes 1,2,4 --sizes 64K --no-pairs --timeout 50 --out "$tmp/o" \
  >"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
if [ $rc -ne 0 ]; then
  for f in "$tmp"/o/runs/*.err; do echo "--- $f"; tail -n 20 "$f"; done
  fail "salloc -N4 weft-bench scale exited $rc"
fi
grep -q '^# hosts from the Slurm allocation SLURM_JOB_ID=[0-9]* (SLURM_JOB_NODELIST=vnode\[0-3\]) (4), launcher .*/weftrun$' \
  "$tmp/out" || fail "weft-bench scale does not say it took the allocation's 4 nodes"
for n in 1 2 4; do
  [ "$(grep -c "^measured,$n,$n," "$tmp/o/scale.csv")" -eq 1 ] ||
    { cat "$tmp/o/scale.csv"; fail "scale.csv lacks the run on $n nodes"; }
done
# Each of the 3 repeats (--repeat's default) writes its own hostfile.
for r in 1 2 3; do
  grep -q 'vnode3' "$tmp/o/runs/allreduce-4nodes-r$r.hosts" || fail "the 4-node run $r of 3 did not use vnode3"
done
grep -q '^# Scaling test concluded: SHARED CORES (every run passed' "$tmp/out" ||
  fail "no SHARED CORES verdict for vnodes of one machine"
echo "ok salloc -N4 weft-bench scale: the allocation's 4 nodes"
