#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Damaged topology files given to weft-topo --topology: each one must end in
# exit status 3 and exactly one line on stderr naming the file, never a crash
# or hwloc's own multi-line reports. Among them are the damages that crash
# hwloc 2.9 itself (an object without complete_cpuset, a root that is not the
# Machine, a bitmap that trips hwloc_bitmap_sscanf's assertion).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
src="$topos/gpu-numa-interleaved.xml"
[ -x "$topo" ] || skip "$topo is not built"
fail=0

check() { # file, text the message must hold
  rc=0
  timeout 30 "$topo" --topology "$1" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != 3 ]; then
    echo "FAIL $1: exit $rc, want 3: $(head -c 300 "$tmp/err")"
    fail=1
  elif [ "$(wc -l <"$tmp/err")" != 1 ]; then
    echo "FAIL $1: want one line on stderr, got:"
    head -20 "$tmp/err"
    fail=1
  elif ! grep -q -F "$1" "$tmp/err" || ! grep -q -e "$2" "$tmp/err"; then
    echo "FAIL $1: the message does not name the file and say '$2': $(cat "$tmp/err")"
    fail=1
  else
    echo "ok $(basename "$1"): $(cat "$tmp/err")"
  fi
}

: >"$tmp/empty.xml"
check "$tmp/empty.xml" "empty"
printf '\n \n\t\n' >"$tmp/blank.xml"
check "$tmp/blank.xml" "empty"
printf 'GPU0 GPU1 CPU Affinity\n' >"$tmp/text.xml"
check "$tmp/text.xml" "not an hwloc XML"
printf '\177ELF\002\001\001\000\000\000<topology' >"$tmp/binary.xml"
check "$tmp/binary.xml" "not an hwloc XML"
printf '<?xml version="1.0"?>\n<html><body>topology</body></html>\n' >"$tmp/html.xml"
check "$tmp/html.xml" "not an hwloc XML"
for n in 60 200 3000 14000; do
  head -c $n "$src" >"$tmp/cut-$n.xml"
  check "$tmp/cut-$n.xml" "hwloc XML"
done
head -n 60 "$src" >"$tmp/lines.xml"
check "$tmp/lines.xml" "not a valid hwloc XML"
first() { # pattern, replacement: in the first line holding type="$3" only
  awk -v pat="$1" -v rep="$2" -v type="type=\"$3\"" \
    '!done && index($0, type) { sub(pat, rep); done = 1 } { print }' "$src"
}
first complete_cpuset comXlete_cpuset PU >"$tmp/no-complete.xml"
check "$tmp/no-complete.xml" "PU object has no complete_cpuset"
first 'type="Machine"' 'type="NUMANode"' Machine >"$tmp/root.xml"
check "$tmp/root.xml" "first object is not the Machine"
first ' cpuset="0x' ' cpuset=",x' Core >"$tmp/bitmap.xml"
check "$tmp/bitmap.xml" "attribute cpuset is not an hwloc bitmap"
grep -v 'type="PU"' "$src" >"$tmp/no-pu.xml"
check "$tmp/no-pu.xml" "hwloc XML"
sed 's/<\/topology>/<\/topolog>/' "$src" >"$tmp/close.xml"
check "$tmp/close.xml" "not a valid hwloc XML"
# bounds (issue 31): a processor numbered near 10^12 cost hwloc seconds and gigabytes; a
# file over 32 MiB is refused before it is read
first 'os_index="[0-9]*"' 'os_index="1000000000000"' PU >"$tmp/index.xml"
check "$tmp/index.xml" "PU object numbered 1000000000000 (os_index), over 1048575"
first 'os_index="[0-9]*"' 'os_index="1048576"' NUMANode >"$tmp/index-numa.xml"
check "$tmp/index-numa.xml" "NUMANode object numbered 1048576 (os_index), over 1048575"
first 'os_index="[0-9]*"' 'os_index="1048575"' PU >"$tmp/index-ok.xml"
if ! timeout 30 "$topo" --topology "$tmp/index-ok.xml" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: a PU numbered 1048575 is refused: $(cat "$tmp/err")"
  fail=1
fi
cp "$src" "$tmp/huge.xml"
truncate -s 33M "$tmp/huge.xml"
t0=$(date +%s)
check "$tmp/huge.xml" "too large for a topology (the most is 32 MiB"
[ $(($(date +%s) - t0)) -le 2 ] || { echo "FAIL: refusing a 33 MiB topology took over 2 s"; fail=1; }
check "$tmp/nosuch.xml" "cannot open"
mkdir "$tmp/dir.xml"
check "$tmp/dir.xml" "directory"
exit $fail
