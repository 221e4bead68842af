#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# share/weft/discovery/file.sh: a host file an operator edits, checked and
# printed (comments and blank lines dropped, one "HOST slots=N" per host);
# every mistake refused with one line naming the file and line.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
script=$WEFT_TOPDIR/share/weft/discovery/file.sh
fail=0
cat >"$tmp/hosts" <<'EOF2'
# the training pool
node-a slots=8

node-b   slots=8   # back from maintenance
#node-c slots=8
10.0.0.7 slots=4
EOF2
rc=0
"$script" "$tmp/hosts" >"$tmp/out" 2>"$tmp/err" || rc=$?
printf 'node-a slots=8\nnode-b slots=8\n10.0.0.7 slots=4\n' >"$tmp/want"
[ $rc = 0 ] && cmp -s "$tmp/want" "$tmp/out" && [ ! -s "$tmp/err" ] ||
  { echo "FAIL: exit $rc: got: $(cat "$tmp/out" "$tmp/err")"; fail=1; }
# Every line commented out: nothing available now, exit 0.
printf '# all drained\n\n' >"$tmp/none"
rc=0
"$script" "$tmp/none" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/out" ] || { echo "FAIL: an empty pool: exit $rc: $(cat "$tmp/out" "$tmp/err")"; fail=1; }

refused() { # WORDS FILE-CONTENT (with \n escapes)
  printf %b "$2" >"$tmp/bad"
  _rc=0
  "$script" "$tmp/bad" >"$tmp/out" 2>"$tmp/err" || _rc=$?
  if [ $_rc != 1 ] || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q -- "$1" "$tmp/err"; then
    echo "FAIL: '$2': exit $_rc, want one line with '$1'; got: $(cat "$tmp/out" "$tmp/err")"
    fail=1
  fi
}
refused 'bad:2: expected "HOST slots=N" (N from 1), got "node-b"' 'node-a slots=2\nnode-b\n'
refused 'bad:1: expected "HOST slots=N" (N from 1), got "node-a slots=0"' 'node-a slots=0\n'
refused 'bad:1: expected "HOST slots=N"' 'node-a slots=4 max_slots=8\n'
refused 'bad:1: expected "HOST slots=N"' 'node-a slot=4\n'
refused 'bad:3: node-a is listed again (first on line 1)' 'node-a slots=1\nnode-b slots=1\nnode-a slots=2\n'
refused 'bad:1: "-a" is not a host name or address' '-a slots=1\n'
rc=0
"$script" "$tmp/missing" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 1 ] && grep -q "cannot read the host file '$tmp/missing'" "$tmp/err" ||
  { echo "FAIL: a missing file: exit $rc: $(cat "$tmp/err")"; fail=1; }
rc=0
"$script" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 1 ] && grep -q "usage: file.sh FILE" "$tmp/err" || { echo "FAIL: no file: exit $rc: $(cat "$tmp/err")"; fail=1; }
[ $fail = 0 ] && echo "PASS: file.sh: hosts checked and printed, every mistake in one line"
exit $fail
