#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/train_ddp.py (PyTorch DDP, gloo on CPU) through weftrun on 1 and 2
# ranks, with Open MPI's variables removed so that only what torchrun would
# set reaches it: the same loss curve on both (the global batch is split, the
# gradients averaged), a loss that falls, and one-line errors without
# torchrun's variables or with a batch the ranks cannot share.
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
run() { # np, output
  timeout 180 "$weftrun" -np "$1" --bind-to none --mca mpi_yield_when_idle 1 \
    sh -c 'unset $(env | sed -n "s/^\(OMPI_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\)=.*/\1/p"); exec "$0" "$@"' \
    $py "$script" $args >"$2" 2>"$2.err"
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
