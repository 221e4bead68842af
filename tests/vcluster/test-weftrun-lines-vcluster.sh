#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ranks' output in whole lines across hosts (issue 30): on 2 vnodes, 4
# print-heavy ranks (2 a node) writing 10,000 numbered lines each (and every
# tenth to stderr) in pieces cut anywhere: no line glued, none missing, each
# rank's order kept, with and without --tag-output (each tagged line carries its
# own rank). mpirun's daemon on the other node forwards what it reads to mpirun
# here, so the records must stay whole across that hop too. Exit 77 when
# namespaces cannot be made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
vc_up 2
py=/usr/bin/python3
lines="$WEFT_TOPDIR/tests/launch/weftrun-lines.py"
for tag in "" --tag-output; do
  rc=0
  timeout 180 "$vc" --prefix "$prefix" run -- "$weftrun" -np 4 -N 2 --bind-to none $tag \
    $py "$lines" load 10000 >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc = 0 ] || fail_run "weftrun $tag: exit $rc" "$tmp/err"
  # both nodes' ranks ran
  for r in 0 1 2 3; do
    grep -q "^\(\[[0-9]*,$r\]<stdout>:\)\{0,1\}R$r-O09999-" "$tmp/out" || fail_run "rank $r's last line" "$tmp/err"
  done
  # weftrun's own lines (its note of the variables that stay on this host) are no rank's
  { cat "$tmp/out"; grep -v '^weftrun: ' "$tmp/err" || true; } | $py "$lines" count 4 10000 ${tag:+tag} >"$tmp/count" ||
    fail_run "weftrun $tag on 2 vnodes: $(cat "$tmp/count")" "$tmp/count"
  echo "ok 2 vnodes, 4 ranks x 10,000 lines${tag:+ with $tag}: $(cat "$tmp/count")"
done
nothing_left
