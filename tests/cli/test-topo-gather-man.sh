#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-gather-topology as make builds it for installing (contrib/gather-topology
# with configure's python3 in its first line) runs under its installed name,
# and weft-gather-topology(1) names every option its --help lists.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
tool="$WEFT_BUILDDIR/share/weft-gather-topology"
man="$WEFT_TOPDIR/share/man/weft-gather-topology.1"
fail=0 n=0

[ -x "$tool" ] || fail "$tool was not built"
interp=$(sed -n '1s/^#!//p' "$tool")
case $interp in
  /*python3) [ -x "$interp" ] || skip "$interp is not installed here" ;;
  "/usr/bin/env python3") command -v python3 >/dev/null 2>&1 || skip "no python3" ;;
  *) fail "$tool starts with #!$interp" ;;
esac
timeout 60 "$tool" --help >"$tmp/help"
grep -q '^usage: weft-gather-topology ' "$tmp/help" || { echo "FAIL: usage line:"; head -2 "$tmp/help"; fail=1; }
# option lines: "  -o FILE, --output FILE   write here ..."
for opt in $(sed -n 's/^  \(-[^ ].*\)/\1/p' "$tmp/help" | sed 's/   .*//' | tr ',' '\n' |
             sed -n 's/^ *\(-[-a-z]*\).*/\1/p' | sort -u); do
  n=$((n + 1))
  roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
  grep -q -e "fB$roff" "$man" || { echo "FAIL: $opt is in --help but not in $man"; fail=1; }
done
[ "$n" -ge 6 ] || { echo "FAIL: found only $n options in --help"; fail=1; }
rc=0
timeout 60 "$tool" --input "$tmp/nothing.xml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -q "^weft-gather-topology: cannot read $tmp/nothing.xml" "$tmp/err" ||
  { echo "FAIL: a missing input: exit $rc: $(cat "$tmp/err")"; fail=1; }
[ $fail = 0 ] && echo "ok weft-gather-topology: $n options in --help and in the man page"
exit $fail
