#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime's device path on each NCCL version it supports, under the
# CUDA/NCCL stand-in reporting that version (WEFT_STANDIN_NCCL_VERSION; a call
# to a function the version does not have ends the rank): 2.13 is refused in
# one line; 2.14 to 2.17 have no ncclCommSplit, so mesh groups bring up their
# own communicators; from 2.18 they are split from the world's, and every
# communicator is destroyed or aborted, none leaked. test-rt-gpu on 4 ranks
# (mesh tp=2,dp=*), its log read for how each communicator came up.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-gpu
bad=0

# comms LOG HOW: how many communicators rank 0 brought up HOW ("by init",
# "by split"); NCCL before 2.27 has no commName, so names are not compared.
comms()
{
  grep -c "^pid=[0-9]* rank=0 nccl comm [^ ]* rank [0-9]*/[0-9]* device [0-9]* up $2" "$1" || true
}

for v in 2.13.4 2.14.3 2.18.1 2.19.3 2.23.4 2.28.9; do
  log=$tmp/nccl-$v.log
  if WEFT_STANDIN_NCCL_VERSION=$v WEFT_STANDIN_LOG=$log standin_mpirun 4 "$bin" 1021 \
      >"$tmp/out-$v" 2>&1; then
    ok=1
  else
    ok=0
  fi
  case $v in
    2.13.*)
      if [ $ok = 0 ] && grep -q "libnccl.so.2 is NCCL 2.13.4; weft needs 2.14 or later" \
          "$tmp/out-$v" && ! grep -q 'weft-standin:' "$tmp/out-$v"; then
        echo "ok: NCCL $v refused"
      else
        cat "$tmp/out-$v"; echo "FAIL: NCCL $v was not refused in one line"; bad=1
      fi
      continue ;;
  esac
  if [ $ok = 0 ] || grep -q 'weft-standin:' "$tmp/out-$v"; then
    cat "$tmp/out-$v"; echo "FAIL: NCCL $v"; bad=1; continue
  fi
  case $v in
    2.14.*) want_split=0 want_init=3 ;;
    *) want_split=2 want_init=1 ;;
  esac
  if [ "$(comms "$log" "by split")" != "$want_split" ] ||
     [ "$(comms "$log" "by init")" != "$want_init" ]; then
    echo "FAIL: NCCL $v: rank 0 brought up $(comms "$log" "by split") communicator(s) by split" \
      "(want $want_split) and $(comms "$log" "by init") by init (want $want_init)"
    grep 'nccl comm' "$log" | head -20; bad=1; continue
  fi
  if grep -q ' aborted\| leaked' "$log"; then
    echo "FAIL: NCCL $v: a communicator was aborted or leaked:"; grep ' aborted\| leaked' "$log"
    bad=1; continue
  fi
  echo "ok: NCCL $v: mesh groups $([ $want_split = 0 ] && echo 'by init (no ncclCommSplit)' || echo 'split from the world')"
done
[ $bad -eq 0 ] || exit 1
echo "PASS: NCCL 2.13 refused; 2.14, 2.18, 2.19, 2.23 and 2.28 under the stand-in (not a GPU)"
