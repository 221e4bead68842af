#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/train_ddp.py (PyTorch DDP, gloo on CPU) through weftrun on 1 and 2
# ranks, with Open MPI's variables removed so that only what torchrun would
# set reaches it: the same loss curve on both (the global batch is split, the
# gradients averaged), a loss that falls, and one-line errors without
# torchrun's variables or with a batch the ranks cannot share. And resuming as
# torchrun's elastic jobs do: a run on 2 ranks stopped after epoch 1 with a
# snapshot (--checkpoint), then a restart on 1 rank (TORCHELASTIC_RESTART_COUNT=1)
# that loads it, ends with the loss curve of the uninterrupted run on 2 ranks
# (to 1e-4 relative: 1 rank sums the batch's gradient in another order).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
py=/usr/bin/python3
$py -c 'import torch.distributed' 2>/dev/null || skip "torch is not installed for $py (Debian: python3-torch)"
fail=0
script="$tmp/$uniq-train_ddp.py"
cp "$WEFT_TOPDIR/examples/train_ddp.py" "$script"
args="--epochs 3 --samples 2048 --batch 256"
# unbound, yielding when idle: the ranks share 2 loaded cores in CI
run() { # np, output, [VAR=VALUE... (one word, or "")], [more arguments]
  timeout 180 "$weftrun" -np "$1" --bind-to none --mca mpi_yield_when_idle 1 \
    sh -c 'unset $(env | sed -n "s/^\(OMPI_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\)=.*/\1/p"); exec env "$@"' \
    train ${3-} $py "$script" $args ${4-} >"$2" 2>"$2.err"
}

for np in 1 2; do
  if ! run $np "$tmp/np$np" || ! grep -q "^train_ddp: $np ranks, backend gloo, master " "$tmp/np$np"; then
    echo "FAIL: train_ddp.py on $np ranks:"
    cat "$tmp/np$np" "$tmp/np$np.err"
    fail=1
  fi
done
if [ $fail = 0 ]; then
  grep '^epoch' "$tmp/np1" >"$tmp/ref"
  grep '^epoch' "$tmp/np2" >"$tmp/two"
  [ "$(wc -l <"$tmp/ref")" = 3 ] || { echo "FAIL: not 3 epoch lines"; cat "$tmp/np1"; fail=1; }
  paste "$tmp/ref" "$tmp/two" | awk '
    { d = $4 - $8; if (d < 0) d = -d
      if (NF != 8 || d > 1e-4 * $4) { print "loss differs: " $0; bad = 1 } }
    NR == 1 { first = $4 } END { if (!($4 < 0.95 * first)) { print "loss did not fall"; bad = 1 }; exit bad }' ||
    { echo "FAIL: loss curves on 1 and 2 ranks:"; cat "$tmp/np1" "$tmp/np2"; fail=1; }
  [ $fail = 0 ] && echo "ok train_ddp.py: the same loss on 1 and 2 ranks: $(tr '\n' ' ' <"$tmp/two")"
fi

# Interrupted after epoch 1 on 2 ranks, resumed on 1.
if [ $fail = 0 ]; then
  ck="$tmp/ckpt/train_ddp.pt"
  mkdir "$tmp/ckpt"
  if ! run 2 "$tmp/stop" "" "--checkpoint $ck --stop-after 1" ||
    ! grep -q "^train_ddp: stopping after epoch 1 (--stop-after)" "$tmp/stop" || [ ! -s "$ck" ]; then
    echo "FAIL: the run stopped after epoch 1:"; cat "$tmp/stop" "$tmp/stop.err"; ls -l "$tmp/ckpt"; fail=1
  elif ! run 1 "$tmp/resume" TORCHELASTIC_RESTART_COUNT=1 "--checkpoint $ck" ||
    ! grep -q "^train_ddp: resuming after epoch 1 from $ck (restart 1, 1 ranks)" "$tmp/resume"; then
    echo "FAIL: the restart on 1 rank:"; cat "$tmp/resume" "$tmp/resume.err"; fail=1
  else
    grep '^epoch' "$tmp/stop" "$tmp/resume" | sed 's/^[^:]*://' >"$tmp/joined"
    paste "$tmp/two" "$tmp/joined" | awk '
      { d = $4 - $8; if (d < 0) d = -d
        if (NF != 8 || $2 != $6 || d > 1e-4 * $4) { print "differs: " $0; bad = 1 } }
      END { if (NR != 3) { print NR " epochs, not 3"; bad = 1 }; exit bad }' ||
      { echo "FAIL: stopped on 2 ranks and resumed on 1 is not the uninterrupted run:"; cat "$tmp/two" "$tmp/joined"; fail=1; }
    [ $fail = 0 ] && echo "ok train_ddp.py: stopped after epoch 1 on 2 ranks, resumed on 1: $(tr '\n' ' ' <"$tmp/joined")"
  fi
  # A snapshot of another run is refused, not resumed.
  rc=0
  RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 $py "$script" $args --checkpoint "$ck" \
    --batch 128 >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] && grep -q "is of a run with --batch 256, not 128" "$tmp/err" ||
    { echo "FAIL: a snapshot of another run: exit $rc: $(cat "$tmp/err")"; fail=1; }
fi

# Started without a launcher, or with a batch 3 ranks cannot share: one line, exit 1.
rc=0
env -u RANK -u WORLD_SIZE -u LOCAL_RANK $py "$script" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "RANK is not set; start it with weftrun" "$tmp/err" ||
  { echo "FAIL: without torchrun's variables: exit $rc: $(cat "$tmp/err")"; fail=1; }
rc=0
RANK=0 WORLD_SIZE=3 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 $py "$script" --batch 256 \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -q "multiple of the 3 ranks" "$tmp/err" ||
  { echo "FAIL: a batch 3 ranks cannot share: exit $rc: $(cat "$tmp/err")"; fail=1; }
nothing_left || fail=1
exit $fail
