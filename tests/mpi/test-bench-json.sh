#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench --json: valid JSON with the rows of the table, the nccl-tests
# bandwidth definitions, the baseline and the verdict.
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
assert r["tool"] == "weft-bench" and r["collective"] == "allreduce", r
assert r["ranks"] == 4 and len(r["rank_info"]) == 4, r["rank_info"]
assert r["dtypes"] == ["float32"] and r["ops"] == ["sum"]
assert abs(r["busbw_factor"] - 1.5) < 1e-9, r["busbw_factor"]   # 2(n-1)/n, n = 4
rows = r["results"]
assert [x["size"] for x in rows] == [1024, 2048, 4096, 8192], rows
assert len(rows) == len(table)
for x, t in zip(rows, table):
    assert x["count"] == x["size"] // 4 and x["wrong"] == 0, x
    assert int(t[0]) == x["size"] and int(t[1]) == x["count"]
    assert abs(x["algbw"] - x["size"] / x["time_us"] / 1e3) <= 0.01 * x["algbw"] + 1e-6, x
    assert abs(x["busbw"] - 1.5 * x["algbw"]) <= 0.01 * x["busbw"] + 1e-6, x
    assert x["raw"]["time_us"] > 0 and x["ratio"] > 0, x
assert r["status"] == "OK" and r["exit_status"] == 0 and r["out_of_bounds"] == 0
print("json ok:", len(rows), "rows")
PYEOF
echo "PASS: weft-bench --json"
