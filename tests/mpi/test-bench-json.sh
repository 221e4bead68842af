#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench --json: valid JSON with the rows of the table (out of place and
# in place, nccl-tests' keys and type names), the nccl-tests bandwidth
# definitions, the baseline with its speedup, and the verdict.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
command -v $PY >/dev/null 2>&1 || skip "no python3"

run_np 4 "$tmp/out" "$bench" allreduce -b 1K -e 8K -n 2 -w 1 --baseline --json "$tmp/r.json" ||
  fail_run "weft-bench --json exited $?" "$tmp/out"
$PY - "$tmp/r.json" "$tmp/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
table = [l.split() for l in open(sys.argv[2]) if not l.startswith('#')]
assert r["version"] == 2 and r["tool"] == "weft-bench" and r["collective"] == "allreduce", r
assert r["ranks"] == 4 and len(r["rank_info"]) == 4, r["rank_info"]
assert r["dtypes"] == ["float"] and r["ops"] == ["sum"]   # nccl-tests' type names
assert abs(r["busbw_factor"] - 1.5) < 1e-9, r["busbw_factor"]   # 2(n-1)/n, n = 4
rows = r["results"]
assert [x["size"] for x in rows] == [1024, 2048, 4096, 8192], rows
assert len(rows) == len(table)
speedups = []
for x, t in zip(rows, table):
    assert x["count"] == x["size"] // 4 and x["type"] == "float" and x["root"] == -1, x
    assert int(t[0]) == x["size"] and int(t[1]) == x["count"] and t[2] == "float"
    assert len(t) == 21, t   # 13 nccl-tests columns, 8 of the baseline
    for k, place in enumerate(("out_of_place", "in_place")):
        c, b = x[place], x["baseline"][place]
        assert c["nwrong"] == 0 and t[8 + 4 * k] == "0", (place, x, t)
        assert abs(c["alg_bw"] - x["size"] / c["time"] / 1e3) <= 0.01 * c["alg_bw"] + 1e-6, x
        assert abs(c["bus_bw"] - 1.5 * c["alg_bw"]) <= 0.01 * c["bus_bw"] + 1e-6, x
        assert b["time"] > 0 and abs(b["speedup"] - b["time"] / c["time"]) <= 1e-3 * b["speedup"], x
        # the table's speedup column is the same figure, rounded
        assert abs(float(t[16 + 4 * k]) - b["speedup"]) <= 0.01 + 0.001 * b["speedup"], (t, b)
        speedups.append(b["speedup"])
assert r["status"] == "OK" and r["exit_status"] == 0 and r["out_of_bounds"] == 0
assert r["average_speedup"] > 0 and min(speedups) <= r["average_speedup"] <= max(speedups)
assert "above 1, weft is faster" in r["speedup"]
print("json ok:", len(rows), "rows")
PYEOF
echo "PASS: weft-bench --json"
