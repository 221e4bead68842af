#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch DistributedDataParallel (examples/train_ddp.py, gloo) resuming as torchrun's
# elastic jobs do, under weftrun --restarts on 3 vnodes, one rank each: an uninterrupted
# run (its snapshot in WEFT_CHECKPOINT_DIR) gives the reference loss curve; then the
# same job with --checkpoint in --checkpoint-dir and --epoch-delay, vnode2 killed once
# epoch 1's snapshot is there (while the ranks wait after it): weftrun restarts the job
# on vnode0 and vnode1 (world size 2, TORCHELASTIC_RESTART_COUNT=1), rank 0 says it
# resumes after epoch 1, the job ends 0, and epochs 1 (before the kill), 2 and 3 (after)
# are the reference's to 1e-4 relative (same global batch; 2 ranks sum in another
# order than 3). Exit 77 without namespaces or torch.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
need_root
py=/usr/bin/python3
$py -c 'import torch.distributed' 2>/dev/null || skip "torch is not installed for $py (Debian: python3-torch)"
unique_name
vc_up 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
script="$tmp/$uniq-train_ddp.py"
cp "$WEFT_TOPDIR/examples/train_ddp.py" "$script"
# a global batch that 3 and 2 ranks share
args="--epochs 3 --samples 1536 --batch 192"
vrun() { timeout 150 "$vc" --prefix "$prefix" run -- "$weftrun" -q --restarts 1 --min-hosts 2 -N 1 "$@"; }

# the reference: uninterrupted on 3 vnodes, its snapshot train_ddp.pt in WEFT_CHECKPOINT_DIR
mkdir "$tmp/ref"
rc=0
vrun --checkpoint-dir "$tmp/ref" $py "$script" $args >"$tmp/ref.out" 2>"$tmp/ref.err" || rc=$?
[ $rc -eq 0 ] && grep -q '^train_ddp: 3 ranks, backend gloo, master ' "$tmp/ref.out" && [ -s "$tmp/ref/train_ddp.pt" ] ||
  { cat "$tmp/ref.out" "$tmp/ref.err"; ls -l "$tmp/ref"; fail "the uninterrupted run on 3 vnodes: exit $rc"; }
grep '^epoch' "$tmp/ref.out" >"$tmp/ref.epochs"
[ "$(wc -l <"$tmp/ref.epochs")" -eq 3 ] || { cat "$tmp/ref.out"; fail "the uninterrupted run: not 3 epoch lines"; }

# vnode2 killed after epoch 1's snapshot: the 4 s after each epoch leave the time to
# kill it before epoch 2 (whose all-reduce then cannot end, so no rank saves it)
ck=$tmp/ck
mkdir "$ck"
(
  i=0
  while [ ! -s "$ck/x.pt" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  date +%s.%N >"$tmp/killed"
  "$vc" --prefix "$prefix" kill vnode2 >/dev/null 2>&1
) &
killer=$!
t0=$(now)
rc=0
vrun --checkpoint-dir "$ck" $py "$script" $args --checkpoint "$ck/x.pt" --epoch-delay 4000 \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
t1=$(now)
wait $killer
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ $rc -eq 0 ] || bad "vnode2 killed: exit $rc, not 0"
[ -s "$tmp/killed" ] || bad "vnode2 was not killed"
grep -q '^weftrun: restart 1 of 1: vnode2 lost (75); running again on 2 hosts (vnode0, vnode1), world size 2 (was 3); the job was down [0-9.]* s$' "$tmp/err" ||
  bad "no restart line"
grep -q "^train_ddp: resuming after epoch 1 from $ck/x.pt (restart 1, 2 ranks)\$" "$tmp/out" ||
  bad "the restart did not resume after epoch 1"
grep -q '^train_ddp: 2 ranks, backend gloo, master ' "$tmp/out" || bad "the restart did not end on 2 ranks"
grep '^epoch' "$tmp/out" >"$tmp/epochs"
paste "$tmp/ref.epochs" "$tmp/epochs" | awk '
  { d = $4 - $8; if (d < 0) d = -d
    if (NF != 8 || $2 != $6 || d > 1e-4 * $4) { print "differs: " $0; bad = 1 } }
  END { if (NR != 3) { print NR " epochs, not 3"; bad = 1 }; exit bad }' ||
  bad "killed after epoch 1 on 3 ranks and resumed on 2 is not the uninterrupted run"
if [ $fail -ne 0 ]; then
  echo "--- reference"; cat "$tmp/ref.out"; echo "--- killed and restarted"; cat "$tmp/out" "$tmp/err"
  exit 1
fi
grep '^weftrun: restart' "$tmp/err"
echo "ok the reference: $(tr '\n' ' ' <"$tmp/ref.epochs")"
echo "ok killed after epoch 1 and resumed on 2 ranks: $(tr '\n' ' ' <"$tmp/epochs")"
echo "# the killed job: $(elapsed "$t0" "$t1") s"
nothing_left
