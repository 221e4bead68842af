#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench --floor: under every row a floor line with the size, the copy
# floor and the best times with their ratio to it (weft's, raw MPI's, and
# for bucket the contiguous all-reduce's with bucket/contiguous), the table's
# columns as without it, a floor object in --json; and bucket --gap (tensors
# lying apart) reduces every type and operation right on 3 ranks. Without a
# shared window (Open MPI's osc sm left out) the exchange is left out, said.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/bench-lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
command -v $PY >/dev/null 2>&1 || skip "no python3"

run_np 2 "$tmp/ar" "$bench" allreduce --sizes 4K,64K,1M -n 2 -w 0 --baseline --floor \
  --json "$tmp/ar.json" || fail_run "allreduce --floor exited $?" "$tmp/ar"
# Every row, then its floor line: size, copy, and four best/ratio pairs.
awk '!/^#/ { size = $1; rows++; next }
     /^#  floor / { if ($3 != size || $4 != "copy" || !($5 > 0) || $6 != "us") exit 1;
                    n = 0; for (i = 7; i <= NF; i++) if ($i ~ /^[0-9.]+$/) n++;
                    if (n != 8) exit 1; floors++ }
     END { exit !(rows == 3 && floors == 3) }' "$tmp/ar" ||
  fail_run "allreduce --floor: not one well-formed floor line per row" "$tmp/ar"
grep -q '^# floor = every rank copies the size' "$tmp/ar" || fail_run "no floor legend" "$tmp/ar"
# On one host an exchange line follows each floor line: the size, the exchange's
# best time, weft's best / it out of place and in place, that ratio right; and the
# exchange costs more than the copy (it is a copy in and a copy out).
awk '/^#  floor / { size = $3; copy = $5; oop = $9; ip = $12; want = 1; next }
     want && /^#  exchange / { want = 0;
       if ($3 != size || !($4 > 0) || $5 != "us" || $11 != "x" || $13 != "x") exit 1;
       if (($6 " " $7 " " $8 " " $9) != "weft best / exchange") exit 1;
       # the ratio of the printed times, to their rounding
       d = oop / $4 - $10; if (d > 0.01 * $10 + 0.01 || d < -0.01 * $10 - 0.01) exit 1;
       d = ip / $4 - $12; if (d > 0.01 * $12 + 0.01 || d < -0.01 * $12 - 0.01) exit 1;
       if (size >= 1048576 && !($4 > copy)) exit 1;
       n++; next }
     want { exit 1 }
     END { exit !(n == 3) }' "$tmp/ar" ||
  fail_run "allreduce --floor: not one well-formed exchange line after each floor line" "$tmp/ar"
grep -q '^# exchange = every rank copies the size into shared memory' "$tmp/ar" ||
  fail_run "no exchange legend" "$tmp/ar"
# The rows keep their 21 columns.
[ "$(grep -v '^#' "$tmp/ar" | awk '{ print NF }' | sort -u)" = 21 ] ||
  fail_run "--floor changed the table's columns" "$tmp/ar"
$PY - "$tmp/ar.json" <<'PYEOF' || fail_run "--json: no floor object" "$tmp/ar"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    f = r["floor"]
    assert f["time"] > 0, f
    assert f["exchange"] > 0, f
    for k in ("best", "baseline_best"):
        for p in ("out_of_place", "in_place"):
            c = f[k][p]
            assert c["time"] > 0 and abs(c["over_floor"] - c["time"] / f["time"]) <= 0.01 * c["over_floor"] + 0.01, c
PYEOF

# Where MPI cannot make the exchange's shared window (here: Open MPI without its
# shared-memory window component), the run goes on without the exchange and says
# why: a warning on stderr, a header line, no exchange lines, the JSON's reason.
run_np 2 "$tmp/nx" --mca osc ^sm "$bench" allreduce --sizes 4K,1M -n 2 -w 0 --floor \
  --json "$tmp/nx.json" || fail_run "allreduce --floor without a shared window exited $?" "$tmp/nx"
grep -q '^weft-bench: warning: --floor: no exchange floor: MPI could not make a shared-memory window on this host (MPI_Win_allocate_shared' \
  "$tmp/nx.err" || fail_run "no shared window: no warning that says so" "$tmp/nx"
grep -q '^# exchange = not measured: MPI could not make a shared-memory window' "$tmp/nx" ||
  fail_run "no shared window: the header does not say the exchange is not measured" "$tmp/nx"
[ "$(grep -c '^#  floor ' "$tmp/nx")" = 2 ] && ! grep -q '^#  exchange ' "$tmp/nx" ||
  fail_run "no shared window: not 2 floor lines and no exchange line" "$tmp/nx"
$PY - "$tmp/nx.json" <<'PYEOF' || fail_run "no shared window: the JSON" "$tmp/nx"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exchange_note"].startswith("MPI could not make a shared-memory window"), d.get("exchange_note")
assert all(r["floor"]["exchange"] is None and r["floor"]["time"] > 0 for r in d["results"])
PYEOF

run_np 3 "$tmp/bk" "$bench" bucket -d all -o all -b 8 -e 1K -f 5 -n 1 -w 0 --tensors 7 --gap 24 \
  --floor || fail_run "bucket --gap --floor exited $?" "$tmp/bk"
grep -q '^# Out of bounds values : 0 OK$' "$tmp/bk" || fail_run "bucket --gap: wrong data" "$tmp/bk"
[ "$(grep -c '^#  floor .* contiguous best .* bucket/contiguous *[0-9.N/A]*$' "$tmp/bk")" -eq \
  "$(grep -vc '^#' "$tmp/bk")" ] ||
  fail_run "bucket --floor: no bucket/contiguous" "$tmp/bk"
echo "PASS: weft-bench --floor: a floor line per row, an exchange line on one host (and why not, without a shared window), columns unchanged, JSON floor; bucket --gap right"
