#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every C source and header of the tree is as clang-format writes it with the
# tree's .clang-format (the one style, kept by a tool). Needs clang-format 14,
# Debian 12's (other versions lay some lines out otherwise): skips without it.
# To reformat: clang-format -i $(git ls-files '*.c' '*.h')
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
command -v clang-format >/dev/null 2>&1 || skip "no clang-format here (Debian: apt-get install clang-format)"
v=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$v" = 14 ] || skip "clang-format $v here; the tree's layout is clang-format 14's"
[ -f "$WEFT_TOPDIR/.clang-format" ] || fail "no .clang-format in $WEFT_TOPDIR"
cd "$WEFT_TOPDIR"
find lib src tests examples -name '*.[ch]' ! -name config.h ! -name version.h | sort >"$tmp/files"
bad=0
while read -r f; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "not as clang-format writes it: $f"
    bad=$((bad + 1))
  fi
done <"$tmp/files"
[ $bad -eq 0 ] || fail "$bad file(s) need clang-format -i (see the head of this test)"
echo "ok: $(wc -l <"$tmp/files") files as clang-format writes them"
