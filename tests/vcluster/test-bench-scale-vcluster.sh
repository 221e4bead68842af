#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Done-when of weft-bench: on a 4-node virtual cluster,
# "weft-vcluster run -- weft-bench scale --nodes 1,2,4" produces the table,
# scale.csv, scale.json and the plot (or the gnuplot script), with the
# pairwise test of the 4 links and the verdict on them, each measured twice
# (--repeat 2), and with WEFT_MACHINE_TYPE set says that host-memory runs are
# not held against the family's range; the vnodes being one machine, it says
# the ranks share cores and ends SHARED CORES, not OK (issue 30). Exits 77
# where namespaces cannot be made.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
vc_up 4 --slots 2

# The launcher is weft-bench scale's default, weftrun (WEFT_BENCH_SCALE_LAUNCHER
# chooses another, e.g. mpirun).
rc=0
WEFT_MACHINE_TYPE=a3-highgpu-8g timeout 300 "$vc" --prefix "$prefix" run -- "$bench" scale \
  --nodes 1,2,4 --repeat 2 --timeout 60 --out "$tmp/o" \
  ${WEFT_BENCH_SCALE_LAUNCHER:+--launcher "$WEFT_BENCH_SCALE_LAUNCHER"} \
  >"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
if [ $rc -ne 0 ]; then
  for f in "$tmp"/o/runs/*.err; do echo "--- $f"; tail -n 20 "$f"; done
  echo "FAIL: weft-bench scale exited $rc"
  exit 1
fi
# The vnodes are one machine: scale says the ranks share its cores instead of OK.
grep -q '^# Scaling test concluded: SHARED CORES (every run passed' "$tmp/out" &&
  grep -q '^# ranks share cores: in the runs on 2, 4 nodes and the pairs the nodes are one machine' "$tmp/out" ||
  { echo "FAIL: no SHARED CORES verdict for vnodes of one machine"; exit 1; }
[ -n "${WEFT_BENCH_SCALE_LAUNCHER:-}" ] || grep -q '^# hosts from .*, launcher .*/weftrun$' "$tmp/out" ||
  { echo "FAIL: the default launcher is not weftrun"; exit 1; }
for n in 1 2 4; do
  [ "$(grep -c "^measured,$n,$n," "$tmp/o/scale.csv")" -eq 3 ] ||
    { cat "$tmp/o/scale.csv"; echo "FAIL: scale.csv lacks the 3 sizes on $n nodes"; exit 1; }
done
[ "$(grep -c '^vnode' "$tmp/o/pairs.csv")" -eq 4 ] || { cat "$tmp/o/pairs.csv"; echo "FAIL: not 4 links"; exit 1; }
grep -q '^# links: ' "$tmp/out" || { echo "FAIL: no verdict on the links"; exit 1; }
grep -q '^#   2 nodes, 4 MiB: not compared (host memory: ' "$tmp/out" ||
  { echo "FAIL: a host-memory run was held against the family's range"; exit 1; }
[ -s "$tmp/o/scale.gp" ] || { echo "FAIL: no scale.gp"; exit 1; }
if command -v gnuplot >/dev/null 2>&1; then
  [ -s "$tmp/o/scale.png" ] || [ -s "$tmp/o/scale.svg" ] || { echo "FAIL: no plot"; exit 1; }
fi
grep -q 'set logscale y' "$tmp/o/scale.gp" || { echo "FAIL: busbw is not on a log axis"; exit 1; }
$PY - "$tmp/o/scale.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["nodes"] for x in r["runs"]] == [1, 2, 4], r["runs"]
assert r["sizes"] == [65536, 1048576, 4194304], r["sizes"]   # the virtual cluster's default
assert all(x["exit_status"] == 0 and len(x["results"]) == 3 and x["runs"] == 2 for x in r["runs"]), r["runs"]
assert all(p["repeats"] == 2 for x in r["runs"] for p in x["results"])
assert all(p["wrong"] == 0 for x in r["runs"] for p in x["results"])
assert len(r["pairs"]) == 4 and all(p["exit_status"] == 0 for p in r["pairs"]), r["pairs"]
assert {p["a"] for p in r["pairs"]} == {"vnode0", "vnode1", "vnode2", "vnode3"}
assert r["links"]["judged"] and r["links"]["median_busbw"] > 0, r["links"]
assert all(o["way"] in ("slower", "faster") for o in r["links"]["outliers"])
assert [v["verdict"] for v in r["machine"]["verdicts"]] == ["not compared"] * 3, r["machine"]
assert r["status"] == "SHARED CORES" and r["shared_cores"] is True, (r["status"], r["shared_cores"])
print("scale.json ok:", len(r["runs"]), "runs,", len(r["pairs"]), "pairs,", len(r["predictions"]), "predictions")
PYEOF
echo "PASS: weft-bench scale --nodes 1,2,4 on a 4-node virtual cluster"
