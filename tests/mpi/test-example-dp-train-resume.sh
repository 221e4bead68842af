#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/dp_train checkpoints every epoch and resumes (issue 28), the way a
# job restarted by weftrun --restarts does, here by hand with mpirun: a run of
# 6 epochs on 4 ranks is the reference; a run on 4 ranks that stops after
# epoch 3 (--stop-after 3, as if its host had been lost; --epoch-delay checked
# on the way) is then resumed
# - on 3 ranks, with the variables weftrun gives a restart (WEFT_RESTART_COUNT=1,
#   WEFT_PREV_WORLD_SIZE=4, WEFT_CHECKPOINT_DIR): the same global batch, cut
#   in 3 shares instead of 4, so the gradient sums are rounded in another
#   order: every later epoch's accuracy the same, its loss to 1e-5 relative;
# - on 4 ranks from a copy of the same checkpoint: the same shares and order,
#   so the same run bit for bit (the model checksum of the reference).
# And refused, on every rank: a checkpoint of a run with other options, a
# damaged one, and a malformed WEFT_RESTART_COUNT.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/mpi/examples-lib.sh"
args="--samples 2048 --batch 128 --epochs 6 --lr 0.5"
dp=$examples/dp_train
ck=$tmp/ckpt

run_np 4 "$tmp/ref" "$dp" $args || fail_run "dp_train on 4 ranks exited $?" "$tmp/ref"
run_np 4 "$tmp/stop" "$dp" $args --checkpoint-dir "$ck" --stop-after 3 --epoch-delay 300 ||
  fail_run "dp_train --stop-after 3 exited $?" "$tmp/stop"
# --epoch-delay (for tests that kill a host in a given epoch) waited 3 x 0.3 s.
awk '/^dp_train: done in/ { t = $4 } END { exit !(t >= 0.9) }' "$tmp/stop" ||
  fail_run "--epoch-delay 300 did not wait 0.3 s after each of 3 epochs" "$tmp/stop"
grep -q '^dp_train: stopping after epoch 3 (--stop-after)$' "$tmp/stop" && [ -s "$ck/dp_train.ckpt" ] ||
  fail_run "no stop after epoch 3, or no checkpoint in $ck" "$tmp/stop"
ls "$ck" | grep -v '^dp_train.ckpt$' && fail "temporary files left in $ck (above)"
grep '^epoch' "$tmp/stop" >"$tmp/stop.ep"
grep '^epoch' "$tmp/ref" | head -n 3 | cmp -s - "$tmp/stop.ep" || fail_run "epochs 1-3 differ from the reference" "$tmp/ref" "$tmp/stop"
mkdir "$tmp/ckpt4"
cp "$ck/dp_train.ckpt" "$tmp/ckpt4/"

# On 3 ranks, as weftrun's restart would start it.
(
  export WEFT_RESTART_COUNT=1 WEFT_PREV_WORLD_SIZE=4 WEFT_CHECKPOINT_DIR="$ck"
  run_np 3 "$tmp/resume3" "$dp" $args
) || fail_run "the restart on 3 ranks exited $?" "$tmp/resume3"
grep -q "^dp_train: resuming after epoch 3 from $ck/dp_train.ckpt (written on 4 ranks, now 3; the same global batch 128)$" \
  "$tmp/resume3" || fail_run "the restart on 3 ranks did not resume after epoch 3" "$tmp/resume3"
grep '^epoch' "$tmp/ref" | tail -n 3 >"$tmp/ref.late"
grep '^epoch' "$tmp/resume3" >"$tmp/resume3.ep"
paste "$tmp/ref.late" "$tmp/resume3.ep" | awk '
  { a = $4; b = $10; d = a - b; if (d < 0) d = -d
    if (NF != 12 || $2 != $8 || $6 != $12 || d > 1e-5 * a) { print "differs: " $0; bad = 1 } }
  END { if (NR != 3) { print NR " epochs after the restart, not 3"; bad = 1 }; exit bad }' ||
  fail_run "resumed on 3 ranks, epochs 4-6 are not the uninterrupted run's" "$tmp/ref" "$tmp/stop" "$tmp/resume3"
tail -n 1 "$tmp/ref.late" | cut -d% -f1 >"$tmp/ref.last"
tail -n 1 "$tmp/resume3.ep" | cut -d% -f1 | sed 's/loss [0-9.]*/loss/' >"$tmp/r3.last"
sed 's/loss [0-9.]*/loss/' "$tmp/ref.last" | cmp -s - "$tmp/r3.last" ||
  fail_run "the final accuracy differs" "$tmp/ref" "$tmp/resume3"

# On 4 ranks again: the same bits as the uninterrupted run.
run_np 4 "$tmp/resume4" "$dp" $args --checkpoint-dir "$tmp/ckpt4" || fail_run "the resume on 4 ranks exited $?" "$tmp/resume4"
sum() { sed -n 's/^dp_train: done in .*, model checksum \([0-9a-f]*\)$/\1/p' "$1"; }
[ -n "$(sum "$tmp/ref")" ] && [ "$(sum "$tmp/ref")" = "$(sum "$tmp/resume4")" ] ||
  fail_run "resumed on 4 ranks: not the reference's model, bit for bit" "$tmp/ref" "$tmp/resume4"
grep '^epoch' "$tmp/resume4" | cmp -s - "$tmp/ref.late" || fail_run "resumed on 4 ranks: other epochs 4-6" "$tmp/ref" "$tmp/resume4"
echo "ok: stopped after epoch 3 on 4 ranks, resumed on 3 (accuracy equal, loss to 1e-5) and on 4 (bit for bit):"
cat "$tmp/ref.late" "$tmp/resume3.ep"

# A restart that finds no checkpoint says so and starts over.
mkdir "$tmp/empty"
(
  export WEFT_RESTART_COUNT=1 WEFT_PREV_WORLD_SIZE=4 WEFT_CHECKPOINT_DIR="$tmp/empty"
  run_np 2 "$tmp/none" "$dp" --samples 256 --batch 64 --epochs 1
) || fail_run "a restart with no checkpoint exited $?" "$tmp/none"
grep -q "^dp_train: restart 1 found no checkpoint in $tmp/empty: starting from epoch 1$" "$tmp/none" ||
  fail_run "a restart with no checkpoint did not say so" "$tmp/none"

# Refused on every rank, with one line: exit status 1 from each rank.
refused() { # WORDS OUT ARGS...
  _words=$1 _out=$2
  shift 2
  _rc=0
  run_np 2 "$_out" "$dp" "$@" || _rc=$?
  [ $_rc != 0 ] && grep -q -- "$_words" "$_out.err" && ! grep -q '^epoch' "$_out" ||
    fail_run "want a failure saying '$_words' (exit $_rc)" "$_out"
}
refused "$ck/dp_train.ckpt was written by a run with another --batch; resume with the options" \
  "$tmp/otherbatch" $args --batch 64 --checkpoint-dir "$ck"
head -c 100 "$tmp/ckpt4/dp_train.ckpt" >"$ck/dp_train.ckpt"
refused "$ck/dp_train.ckpt is not a dp_train checkpoint, or is damaged; move it away" "$tmp/damaged" $args --checkpoint-dir "$ck"
(
  export WEFT_RESTART_COUNT=x
  refused "WEFT_RESTART_COUNT='x' is not a whole number" "$tmp/badvar" $args
)
echo "PASS: dp_train resumes after epoch 3 on 3 or 4 ranks as if never stopped; bad checkpoints refused"
