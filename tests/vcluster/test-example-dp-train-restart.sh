#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 28's first test: examples/dp_train through weftrun --restarts 2
# --min-hosts 2 on 4 vnodes, one rank on each; vnode2 is killed after epoch 3
# (dp_train --epoch-delay leaves time to kill it between epochs): the job
# restarts on 3 vnodes, dp_train resumes from its checkpoint (written on 4
# ranks) and ends with the accuracy of the same run never interrupted on 4
# vnodes (the same seed and global batch; the loss to 1e-5 relative, as the
# gradient sums are rounded in another order on 3 ranks). Exits 77 without
# namespaces, or where weftrun has no --restarts.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
"$weftrun" --help 2>/dev/null | grep -q -- '--restarts' || skip "weftrun has no --restarts"
unique_name
dp=$WEFT_BUILDDIR/examples/dp_train
[ -x "$dp" ] || make -C "$WEFT_BUILDDIR/examples" dp_train >/dev/null
vc_up 4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args="--samples 2048 --batch 128 --epochs 6 --lr 0.5"
vrun() { timeout 180 "$vc" --prefix "$prefix" run -- "$weftrun" -q -N 1 --bind-to none "$@"; }

vrun "$dp" $args >"$tmp/ref" 2>"$tmp/ref.err" || fail_run "dp_train uninterrupted on 4 vnodes exited $?" "$tmp/ref"
grep -q '^dp_train: 4 ranks' "$tmp/ref" || fail_run "not 4 ranks" "$tmp/ref"

ck=$tmp/ck
mkdir "$ck"
# vnode2 killed while every rank waits after epoch 3 (3 s), its checkpoint written
(
  i=0
  while ! grep -q '^epoch   3 ' "$tmp/out" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 0.5
  "$vc" --prefix "$prefix" kill vnode2 >/dev/null 2>&1
) &
rc=0
vrun --restarts 2 --min-hosts 2 --checkpoint-dir "$ck" "$dp" $args --epoch-delay 3000 >"$tmp/out" 2>"$tmp/out.err" || rc=$?
wait
[ $rc -eq 0 ] || fail_run "dp_train with a vnode killed: exit $rc, not 0" "$tmp/out"
grep -q '^weftrun: restart 1 of 2: vnode2 lost (75); running again on 3 hosts (vnode0, vnode1, vnode3), world size 3 (was 4)' \
  "$tmp/out.err" || fail_run "no restart on 3 vnodes" "$tmp/out"
grep -q "^dp_train: resuming after epoch 3 from $ck/dp_train.ckpt (written on 4 ranks, now 3; the same global batch 128)$" \
  "$tmp/out" || fail_run "the restart did not resume after epoch 3" "$tmp/out"
# Epochs 1-3 from the first attempt, 4-6 from the restart: the uninterrupted run's.
grep '^epoch' "$tmp/ref" >"$tmp/ref.ep"
grep '^epoch' "$tmp/out" >"$tmp/out.ep"
paste "$tmp/ref.ep" "$tmp/out.ep" | awk '
  { a = $4; b = $10; d = a - b; if (d < 0) d = -d
    if (NF != 12 || $2 != $8 || $6 != $12 || d > 1e-5 * a) { print "differs: " $0; bad = 1 } }
  END { if (NR != 6) { print NR " epoch lines, not 6"; bad = 1 }; exit bad }' ||
  fail_run "interrupted and resumed on 3 vnodes is not the uninterrupted run" "$tmp/ref" "$tmp/out"
nothing_left || fail "processes or segments left behind"
echo "PASS: dp_train restarted on 3 vnodes after vnode2 was killed in epoch 3 ends as the uninterrupted run:"
tail -n 1 "$tmp/ref.ep"
tail -n 1 "$tmp/out.ep"
