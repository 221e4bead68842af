#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-topo(1) cannot drift from the option table: every spelling that
# weft-topo --help lists appears in the man page, and the page's OPTIONS are
# what weft-topo --man-options writes from the same table.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
man="$WEFT_TOPDIR/share/man/weft-topo.1"
fail=0 n=0

timeout 30 "$topo" --help >"$tmp/help"
# Option lines start with two spaces and a dash: "  -np, -n, --np N   place ..."
for opt in $(sed -n 's/^  \(-[^ ]*\).*/\1/p; s/^  -[^ ]*, \(-[^ ,]*\).*/\1/p' "$tmp/help" |
             sed 's/,$//'); do
  n=$((n + 1))
  roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
  if ! grep -q -e "$roff" "$man"; then
    echo "FAIL: $opt is in weft-topo --help but not in $man"
    fail=1
  fi
done
[ "$n" -ge 10 ] || { echo "FAIL: found only $n options in --help"; fail=1; }

# The OPTIONS section is the table's own rendering.
timeout 30 "$topo" --man-options >"$tmp/options"
sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$man" | sed '1d;$d' >"$tmp/page"
if ! diff -u "$tmp/options" "$tmp/page"; then
  echo "FAIL: OPTIONS in $man differ from weft-topo --man-options; paste its output there"
  fail=1
fi
[ "$fail" = 0 ] && echo "ok: $n option spellings of --help are in weft-topo.1"
exit $fail
