#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-topo places as weftrun does (issue 30): the same ranks on the same GPUs,
# cores, NUMA nodes and NICs in weft-topo --json and weftrun --dry-run --json,
# on a3-highgpu-8g with its NCCL preset (which reserves cores for
# GPUDirect-TCPX: weft-topo's auto applies it, as weftrun does in a job of more
# than one VM, and says so in one line), without it, at full and half size and
# with :pe=2, and on the other GPU shapes with their presets (a3-ultragpu-8g and
# a4-highgpu-8g included).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
weftrun="$WEFT_BUILDDIR/src/weftrun/weftrun"
fail=0

command -v python3 >/dev/null || skip "python3 is needed to read the JSON"

same() { # label; weft-topo args || weftrun args (split by --)
  label=$1
  shift
  targs=
  while [ "$1" != -- ]; do targs="$targs $1"; shift; done
  shift
  # shellcheck disable=SC2086
  if ! timeout 30 "$topo" --json $targs >"$tmp/topo.json" 2>"$tmp/topo.err"; then
    echo "FAIL $label: weft-topo$targs: $(cat "$tmp/topo.err")"
    fail=1
    return
  fi
  if ! timeout 30 "$weftrun" --dry-run --json "$@" true >"$tmp/run.json" 2>"$tmp/run.err"; then
    echo "FAIL $label: weftrun $*: $(cat "$tmp/run.err")"
    fail=1
    return
  fi
  if python3 - "$tmp/topo.json" "$tmp/run.json" "$label" <<'PY'; then :; else fail=1; fi
import json, sys
a, b = (json.load(open(p))["ranks"] for p in sys.argv[1:3])
key = lambda r: (r["rank"], r["local_rank"], r.get("gpu"), r["cpus"], r.get("numa"), r.get("nic"))
if len(a) != len(b) or [key(r) for r in a] != [key(r) for r in b]:
    print("FAIL %s: weft-topo and weftrun place differently" % sys.argv[3])
    for r, s in zip(a, b):
        if key(r) != key(s):
            print("  weft-topo %s\n  weftrun   %s" % (key(r), key(s)))
    sys.exit(1)
print("ok %s (%d ranks)" % (sys.argv[3], len(a)))
PY
}

t=a3-highgpu-8g
same "$t, preset by auto" --topology $t -np 8 -- --nccl-preset $t --topology $t -np 8
same "$t, preset by name" --topology $t -np 8 --nccl-preset $t -- --nccl-preset $t --topology $t -np 8
same "$t, half" --topology $t -np 4 -- --nccl-preset $t --topology $t -np 4
same "$t, pe=2" --topology $t -np 8 --map-by gpu:pe=2 -- --nccl-preset $t --topology $t -np 8 --map-by gpu:pe=2
same "$t, no preset" --topology $t -np 8 --nccl-preset none -- --nccl-preset none --topology $t -np 8
same "$t, CPU layout (no reserved cores in Open MPI's)" --topology $t -np 4 --map-by core -- \
  --nccl-preset $t --topology $t -np 4 --map-by core
for tp in a3-megagpu-8g:a3-megagpu-8g a3-ultragpu-8g:a3-ultragpu-8g a4-highgpu-8g:a4-highgpu-8g \
          a2-highgpu-8g:a2; do
  t=${tp%:*}
  same "$t" --topology "$t" -np 8 -- --nccl-preset "${tp#*:}" --topology "$t" -np 8
done

# The reserved cores are said once, with when weftrun differs.
timeout 30 "$topo" --topology a3-highgpu-8g -np 8 >"$tmp/out" 2>&1 || true
n=$(grep -c '^# nccl preset a3-highgpu-8g (auto) reserves cores 8-35,112-139,60-87,164-191, as weftrun does in a job of more than one VM; in a job of one VM weftrun applies no preset' "$tmp/out" || true)
if [ "$n" = 1 ]; then echo "ok the preset's line"; else echo "FAIL the preset's line:"; cat "$tmp/out"; fail=1; fi
if grep -q '^0 .* 0-5,104-109$' "$tmp/out"; then echo "ok rank 0 off the TCPX cores"
else echo "FAIL rank 0 on TCPX cores:"; cat "$tmp/out"; fail=1; fi

exit $fail
