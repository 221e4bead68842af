#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/heat2d on 2, 3 and 4 ranks (uneven bands included), through mpirun
# and weftrun, ends with the very grid of the 1-rank run: the same checksum,
# centre value and hash.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"
args="--nx 48 --ny 67 --steps 200"

for np in 1 2 3 4; do
  run_np $np "$tmp/np$np" "$examples/heat2d" $args || fail_run "heat2d on $np ranks exited $?" "$tmp/np$np"
  grep '^checksum' "$tmp/np$np" >"$tmp/sum$np" || fail_run "heat2d on $np ranks printed no checksum" "$tmp/np$np"
done
for np in 2 3 4; do
  cmp -s "$tmp/sum1" "$tmp/sum$np" || fail_run "heat2d on $np ranks differs from 1 rank" "$tmp/np1" "$tmp/np$np"
done
# Through weftrun too, when it is built.
rc=0
run_weftrun 3 "$tmp/weftrun" "$examples/heat2d" $args || rc=$?
if [ $rc -eq 0 ]; then
  grep '^checksum' "$tmp/weftrun" | cmp -s "$tmp/sum1" - ||
    fail_run "heat2d through weftrun differs from 1 rank" "$tmp/np1" "$tmp/weftrun"
  launch="mpirun and weftrun"
elif [ $rc -ne 77 ]; then
  fail_run "weftrun -np 3 heat2d exited $rc" "$tmp/weftrun"
fi
# Heat has flowed in from the edges: the checksum is not the initial one.
awk '{ if (!($2 + 0 > 85)) { print "no diffusion: " $2; exit 1 } }' "$tmp/sum1" ||
  fail_run "heat2d did not diffuse" "$tmp/np1"
cat "$tmp/np4"
echo "PASS: heat2d grid equal on 1, 2, 3, 4 ranks ($launch)"
