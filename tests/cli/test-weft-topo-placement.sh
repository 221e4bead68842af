#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The placement weft-topo --json gives, checked against the XML read apart
# from libweft (weft-topo-check.py): on a3-highgpu-8g -np 8 every rank has its
# own GPU, cores only from that GPU's NUMA node and the NIC on its PCI switch;
# the same on every shipped topology with GPUs at its default size, and on the
# machine whose GPU PCI order does not follow its NUMA order.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
check="$WEFT_TOPDIR/tests/cli/weft-topo-check.py"
fail=0

command -v python3 >/dev/null || skip "python3 is needed to read the JSON"

plan() { # file, weft-topo args... -> $tmp/plan.json
  f=$1
  shift
  if ! timeout 30 "$topo" --topology "$topos/$f" --json "$@" >"$tmp/plan.json" 2>"$tmp/err"; then
    echo "FAIL $f $*: $(cat "$tmp/err")"
    fail=1
    return 1
  fi
}

verify() { # file, weft-topo args...
  f=$1
  if plan "$@"; then
    if python3 "$check" "$topos/$f" <"$tmp/plan.json"; then
      echo "ok $*"
    else
      echo "FAIL $*"
      fail=1
    fi
  fi
}

# The Done-when check of issue #2, then the published facts spelled out: 13
# cores each without the NCCL preset, 6 each with it (the preset reserves
# 8-35,112-139,60-87,164-191 for GPUDirect-TCPX, issue 30).
verify a3-highgpu-8g.xml -np 8
for preset in none auto; do
if plan a3-highgpu-8g.xml -np 8 --nccl-preset $preset; then
  python3 - "$tmp/plan.json" "$preset" <<'PY' || fail=1
import json, sys
plan = json.load(open(sys.argv[1]))
preset = sys.argv[2]
pci = ["0000:%s:00.0" % b for b in ("04", "05", "0a", "0b", "84", "85", "8a", "8b")]
node = [set(range(0, 52)) | set(range(104, 156)), set(range(52, 104)) | set(range(156, 208))]
def cpus(s):
    out = set()
    for p in s.split(","):
        lo, _, hi = p.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
reserved = cpus("8-35,112-139,60-87,164-191") if preset == "auto" else set()
bad = 0
for r in plan["ranks"]:
    i = r["rank"]
    n = 0 if i < 4 else 1
    c = cpus(r["cpus"])
    if (r["gpu"]["pci"] != pci[i] or not c <= node[n] - reserved or r["numa"] != [n]
            or len(c) != (12 if reserved else 26)):
        print("FAIL a3 facts (--nccl-preset %s): rank %d got %s" % (preset, i, r)); bad = 1
if plan["np"] != 8 or plan["hosts"][0]["gpus"] != 8 or plan["hosts"][0]["topology"] != "a3-highgpu-8g.xml":
    print("FAIL a3 facts: header %s" % plan["hosts"]); bad = 1
print("ok a3 facts, --nccl-preset %s" % preset if not bad else "FAIL a3 facts")
sys.exit(bad)
PY
fi
done

# Fewer ranks than GPUs, pe, and every shape with GPUs at its default size.
verify a3-highgpu-8g.xml -np 4
verify a3-highgpu-8g.xml -np 2
verify a3-highgpu-8g.xml -np 8 --map-by gpu:pe=4
for f in "$topos"/*.xml; do
  f=$(basename "$f")
  if plan "$f" --map-by core -np 1 && grep -q '"gpus": 0' "$tmp/plan.json"; then
    continue
  fi
  verify "$f"
done

# GPU PCI order unlike NUMA order: 2 ranks land on different NUMA nodes.
verify gpu-numa-interleaved.xml -np 4
if plan gpu-numa-interleaved.xml -np 2; then
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["ranks"]
sys.exit(0 if sorted(x["numa"][0] for x in r) == [0, 1] else 1)' "$tmp/plan.json" &&
    echo "ok interleaved -np 2 spreads over NUMA nodes" ||
    { echo "FAIL interleaved -np 2 stays on one NUMA node"; fail=1; }
fi
exit $fail
