#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/dp_train gives the same loss curve (to 1e-5 relative) on 1, 2 and 4
# ranks, with the fused bucket and with one all-reduce per tensor, through
# mpirun and through weftrun, and learns.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"
args="--samples 2048 --batch 128 --epochs 5 --lr 0.5"

for np in 1 2 4; do
  run_np $np "$tmp/np$np" "$examples/dp_train" $args || fail_run "dp_train on $np ranks exited $?" "$tmp/np$np"
done
run_np 2 "$tmp/nofusion" "$examples/dp_train" $args --no-fusion ||
  fail_run "dp_train --no-fusion on 2 ranks exited $?" "$tmp/nofusion"
runs="np2 np4 nofusion"
# The quickstart's way: through weftrun, when it is built.
rc=0
run_weftrun 4 "$tmp/weftrun" "$examples/dp_train" $args || rc=$?
case $rc in
  0) runs="$runs weftrun" ;;
  77) echo "weftrun is not built: skipping the weftrun run" ;;
  *) fail_run "weftrun -np 4 dp_train exited $rc" "$tmp/weftrun" ;;
esac

# The loss column of the 1-rank run is the reference.
grep '^epoch' "$tmp/np1" >"$tmp/ref"
[ "$(wc -l <"$tmp/ref")" -eq 5 ] || fail_run "dp_train printed no 5 epoch lines" "$tmp/np1"
for run in $runs; do
  grep '^epoch' "$tmp/$run" >"$tmp/$run.ep"
  paste "$tmp/ref" "$tmp/$run.ep" | awk -v run="$run" '
    { a = $4; b = $10; d = a - b; if (d < 0) d = -d
      if (NF != 12 || d > 1e-5 * (a < 0 ? -a : a)) { print run ": epoch " $2 ": loss " b " vs " a " on 1 rank"; bad = 1 } }
    END { exit bad }' || fail_run "loss curves differ" "$tmp/np1" "$tmp/$run"
done
# It learns: the last epoch's loss is well below the first one's.
awk 'NR == 1 { first = $4 } END { if (!($4 < 0.8 * first)) { print "loss did not fall: " first " -> " $4; exit 1 } }' \
  "$tmp/ref" || fail_run "dp_train does not learn" "$tmp/np1"
cat "$tmp/np4"
echo "PASS: dp_train loss curve equal on 1, 2, 4 ranks ($runs)"
