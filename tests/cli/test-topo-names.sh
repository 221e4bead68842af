#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Topologies by name (weftx_topo_find): from a directory that holds no
# topology file, --topology NAME and NAME.xml and WEFT_TOPOLOGY=NAME give what
# the file's path gives, in weft-topo and in weftrun --dry-run; an unknown
# name is one line that says where weft looked, the nearest name and the names
# there; a file here wins over a name; --list-topologies lists every shipped
# file with its description, and a file added to the data directory (by
# weft-gather-topology, with its description) is known by its name.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
no_host_defaults
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
[ "$WEFT_DATADIR/topologies" -ef "$topos" ] || fail "WEFT_DATADIR is not this tree's share/weft"
fail=0
cd "$tmp"

same() { # what, file a, file b
  if cmp -s "$2" "$3"; then
    echo "ok $1"
  else
    echo "FAIL $1:"
    diff -u "$2" "$3" | head -20
    fail=1
  fi
}

timeout 30 "$topo" --topology "$topos/a3-highgpu-8g.xml" -np 8 >path.out
timeout 30 "$topo" --topology a3-highgpu-8g -np 8 >name.out
same "weft-topo --topology a3-highgpu-8g" path.out name.out
timeout 30 "$topo" --topology a3-highgpu-8g.xml -np 8 >name.out
same "weft-topo --topology a3-highgpu-8g.xml" path.out name.out
WEFT_TOPOLOGY=a3-highgpu-8g timeout 30 "$topo" -np 8 >name.out
same "WEFT_TOPOLOGY=a3-highgpu-8g weft-topo" path.out name.out
grep -q "^7     7     0000:8b:00.0" name.out || { echo "FAIL: rank 7 is not on GPU 7"; fail=1; }

timeout 30 "$weftrun" --dry-run --json -H a,b --topology "$topos/a3-highgpu-8g.xml" -np 16 true >path.json
timeout 30 "$weftrun" --dry-run --json -H a,b --topology a3-highgpu-8g.xml -np 16 true >name.json
same "weftrun --topology a3-highgpu-8g.xml" path.json name.json
timeout 30 "$weftrun" --dry-run --json -H a,b --topology a=a3-highgpu-8g.xml --topology b=a2-highgpu-8g \
  -np 16 true >mixed.json
grep -q '"name": "b", "slots": 8, "gpus": 8, "topology": "a2-highgpu-8g"' mixed.json ||
  { echo "FAIL: weftrun --topology b=a2-highgpu-8g:"; cat mixed.json; fail=1; }

# An unknown name: exit 3, one line, where it looked, the nearest name, the names there.
rc=0
timeout 30 "$topo" --topology a3-higpu-8g >out 2>err || rc=$?
if [ "$rc" != 3 ] || [ "$(wc -l <err)" != 1 ] || [ -s out ] ||
   ! grep -q "topology 'a3-higpu-8g' not found: not a file in the current directory, nor a3-higpu-8g.xml in $topos; did you mean 'a3-highgpu-8g'? names there (weft-topo --list-topologies): a2-highgpu-8g, " err ||
   ! grep -q "n2-standard-16" err; then
  echo "FAIL unknown name: exit $rc: $(cat err)"
  fail=1
else
  echo "ok unknown name: $(cat err)"
fi
rc=0
timeout 30 "$weftrun" --dry-run -H a --topology a3-higpu-8g true >out 2>err || rc=$?
if [ "$rc" != 66 ] || ! grep -q "did you mean 'a3-highgpu-8g'" err; then
  echo "FAIL weftrun with an unknown name: exit $rc: $(cat err)"
  fail=1
fi

# A file here wins over a name; a path is never looked up.
cp "$topos/n2-standard-16.xml" a3-highgpu-8g.xml
timeout 30 "$topo" --topology a3-highgpu-8g.xml | grep -q "0 GPUs" ||
  { echo "FAIL: the file in the current directory did not win"; fail=1; }
rm a3-highgpu-8g.xml
rc=0
timeout 30 "$topo" --topology ./a3-highgpu-8g.xml >out 2>err || rc=$?
[ "$rc" = 3 ] && grep -q "cannot open ./a3-highgpu-8g.xml" err ||
  { echo "FAIL: a path was looked up: exit $rc: $(cat err)"; fail=1; }

# --list-topologies: every shipped file, sorted, each with its description.
timeout 30 "$topo" --list-topologies >list
ls "$topos" | sed -n 's/\.xml$//p' | LC_ALL=C sort >names
cut -d' ' -f1 list >listed
same "--list-topologies names" names listed
if grep -v -q '^[a-z0-9-]*  *[A-Za-z]' list; then
  echo "FAIL: a topology without a description:"
  cat list
  fail=1
fi
grep -q '^a3-highgpu-8g  *Google Cloud A3 High: 8 x H100 80GB' list ||
  { echo "FAIL: no description of a3-highgpu-8g:"; cat list; fail=1; }

# A topology added to the data directory, with its own description.
if command -v python3 >/dev/null 2>&1; then
  mkdir -p data/topologies
  timeout 120 "$WEFT_TOPDIR/contrib/gather-topology" --input "$topos/g2-standard-48.xml" \
    --name lab-box --description "the lab's box with 4 L4" -o data/topologies/lab-box.xml >/dev/null
  WEFT_DATADIR="$tmp/data" timeout 30 "$topo" --list-topologies >list
  printf 'lab-box  the lab'"'"'s box with 4 L4\n' >want
  same "--list-topologies of a gathered file" want list
  WEFT_DATADIR="$tmp/data" timeout 30 "$topo" --topology lab-box | grep -q "4 GPUs" ||
    { echo "FAIL: --topology lab-box"; fail=1; }
else
  echo "note: no python3, weft-gather-topology not tried"
fi
rc=0
WEFT_DATADIR="$tmp/nowhere" timeout 30 "$topo" --list-topologies >out 2>err || rc=$?
[ "$rc" = 3 ] && grep -q "cannot read $tmp/nowhere/topologies" err ||
  { echo "FAIL: --list-topologies without a data directory: exit $rc: $(cat err)"; fail=1; }
exit $fail
