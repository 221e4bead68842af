#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench scale on this host alone (1 node x 2 ranks, through mpirun):
# the table, CSV, JSON, gnuplot script and plot it writes, each measurement
# repeated (--repeat, default 3) with its spread, and its exit status; busbw on
# a log axis; more ranks than processors is said plainly (the ranks share
# cores, the efficiencies measure that), not called OK. The multi-node run is
# tests/vcluster/test-bench-scale-vcluster.sh.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
printf 'localhost slots=2\n' >"$tmp/hosts"

rc=0
timeout 120 "$bench" scale --hostfile "$tmp/hosts" --nodes 1 --ppn 2 --sizes 4K,64K,256K \
  --iters 3 --warmup 1 --out "$tmp/o" --launcher mpirun \
  --launcher-arg --oversubscribe --launcher-arg --bind-to --launcher-arg none \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/out"
[ $rc -eq 0 ] || { cat "$tmp/err" "$tmp"/o/runs/*.err 2>/dev/null; echo "FAIL: scale exited $rc"; exit 1; }
if [ "$(nproc)" -ge 2 ]; then
  grep -q '^# Scaling test concluded: OK$' "$tmp/out" || { echo "FAIL: no OK verdict"; exit 1; }
else
  grep -q '^# Scaling test concluded: SHARED CORES ' "$tmp/out" || { echo "FAIL: no SHARED CORES verdict on 1 processor"; exit 1; }
fi
grep -q 'set logscale y' "$tmp/o/scale.gp" || { echo "FAIL: busbw is not on a log axis"; exit 1; }
[ "$(grep -c '^measured,1,2,' "$tmp/o/scale.csv")" -eq 3 ] || { cat "$tmp/o/scale.csv"; echo "FAIL: scale.csv lacks 3 measured rows"; exit 1; }
head -n 1 "$tmp/o/scale.csv" | grep -q '^kind,nodes,ranks,size,time_us,algbw,busbw,efficiency,wrong,busbw_min,busbw_max,repeats$' ||
  { echo "FAIL: scale.csv header"; exit 1; }
# The default: every run 3 times, round after round, each kept.
for r in 1 2 3; do
  grep -q "run $r of 3: ok" "$tmp/out" || { echo "FAIL: no run $r of 3"; exit 1; }
  [ -s "$tmp/o/runs/allreduce-1nodes-r$r.txt" ] || { echo "FAIL: run $r's output is not kept"; exit 1; }
done
grep -q '^# each figure is the median of 3 runs' "$tmp/out" || { echo "FAIL: no word on the repeats"; exit 1; }
grep -Eq '^ +1 +2 +4096 .* [0-9]+% ' "$tmp/out" || { echo "FAIL: no spread in the table"; exit 1; }
[ -s "$tmp/o/scale.gp" ] || { echo "FAIL: no scale.gp"; exit 1; }
if command -v gnuplot >/dev/null 2>&1; then
  [ -s "$tmp/o/scale.png" ] || [ -s "$tmp/o/scale.svg" ] || { cat "$tmp/o/gnuplot.log"; echo "FAIL: gnuplot is here but no plot"; exit 1; }
fi
if [ -x $PY ] || command -v $PY >/dev/null 2>&1; then
  $PY - "$tmp/o/scale.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["version"] == 2 and r["repeat"] == 3
assert r["collective"] == "allreduce" and r["ppn"] == 2 and r["sizes"] == [4096, 65536, 262144]
run = r["runs"][0]
assert run["nodes"] == 1 and run["ranks"] == 2 and run["exit_status"] == 0 and run["runs"] == 3, run
assert run["memory"] == "host", run
assert [x["size"] for x in run["results"]] == [4096, 65536, 262144]
assert all(x["wrong"] == 0 and x["busbw"] > 0 and x["repeats"] == 3 for x in run["results"]), run
assert all(x["busbw_min"] <= x["busbw"] <= x["busbw_max"] for x in run["results"]), run
assert all(abs(x["spread"] - (x["busbw_max"] - x["busbw_min"]) / x["busbw"]) < 1e-3 * (1 + x["spread"])
           for x in run["results"]), run
assert run["bandwidth_gbs"] is None or run["bandwidth_gbs"] > 0
assert run["model"] in (True, False) and (run["model"] or run["alpha_us"] is None), run
assert r["pairs"] == [] and r["status"] == "OK" and r["exit_status"] == 0
assert r["links"]["judged"] is False and r["slowest"] is None and r["machine"] is None
print("scale.json ok")
PYEOF
fi
# With a machine family: a run on one node (and on host memory) is not held
# against its healthy range, and says why.
rc=0
WEFT_MACHINE_TYPE=a3-megagpu-8g timeout 120 "$bench" scale --hostfile "$tmp/hosts" --nodes 1 \
  --ppn 2 --sizes 4K,64K --iters 1 --warmup 0 --repeat 1 --out "$tmp/fam" --launcher mpirun \
  --launcher-arg --oversubscribe --launcher-arg --bind-to --launcher-arg none >"$tmp/out3" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$tmp/out3"; echo "FAIL: scale with WEFT_MACHINE_TYPE exited $rc"; exit 1; }
grep -q '^# machine a3-megagpu-8g (from WEFT_MACHINE_TYPE): healthy busbw 150-189 GB/s' "$tmp/out3" &&
  grep -q '^#   1 node, 64 KiB: not compared (1 node: ' "$tmp/out3" ||
  { cat "$tmp/out3"; echo "FAIL: a 1-node run was not kept from the family's range"; exit 1; }
! grep -q 'healthy range$' "$tmp/out3" || { cat "$tmp/out3"; echo "FAIL: a verdict on a 1-node run"; exit 1; }
# A failing run (an injected wrong element) makes scale fail with exit 1.
rc=0
WEFT_BENCH_INJECT_ERROR=1 timeout 120 "$bench" scale --hostfile "$tmp/hosts" --nodes 1 --ppn 2 \
  --sizes 4K --iters 1 --warmup 0 --repeat 1 --out "$tmp/bad" --launcher mpirun \
  --launcher-arg --oversubscribe --launcher-arg --bind-to --launcher-arg none >"$tmp/out2" 2>&1 || rc=$?
[ $rc -eq 1 ] || { cat "$tmp/out2"; echo "FAIL: scale with wrong data exited $rc, not 1"; exit 1; }
# More ranks than processors: the ranks share cores, and scale says so instead of OK.
over=$(( $(nproc) + 1 ))
printf 'localhost slots=%d\n' "$over" >"$tmp/hosts-over"
rc=0
timeout 120 "$bench" scale --hostfile "$tmp/hosts-over" --nodes 1 --ppn "$over" --sizes 4K --iters 1 \
  --warmup 0 --repeat 1 --out "$tmp/over" --launcher mpirun \
  --launcher-arg --oversubscribe --launcher-arg --bind-to --launcher-arg none >"$tmp/out3" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$tmp/out3"; echo "FAIL: scale with $over ranks on $(nproc) processors exited $rc"; exit 1; }
grep -q '^# ranks share cores: in the runs on 1 node .* measure how the ranks share its cores' "$tmp/out3" &&
  grep -q '^# Scaling test concluded: SHARED CORES (every run passed, but ranks shared one machine' "$tmp/out3" &&
  grep -q '"shared_cores": true' "$tmp/over/scale.json" &&
  grep -q '"status": "SHARED CORES"' "$tmp/over/scale.json" &&
  grep -q '^# sharing: the 1 host is 1 machine' "$tmp/over/runs/allreduce-1nodes.txt" ||
  { cat "$tmp/out3"; echo "FAIL: $over ranks on $(nproc) processors not said to share cores"; exit 1; }
echo "ok $over ranks on $(nproc) processors: SHARED CORES, said plainly"
echo "PASS: weft-bench scale on 1 node writes its table, CSV, JSON and plot"
