#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# All-to-all and batches of sends and receives on device memory, under the
# CUDA/NCCL stand-in (which ends a rank that breaks a CUDA or NCCL rule; a
# send finishes there only once its receive has started, as in NCCL 2.28):
#  - the model examples with --device: tp_mlp (tp=2, tp=4), pp_1f1b (4
#    stages; its exchanges are batches) and moe (ep=2 x dp=2), each equal to
#    its model on one rank;
#  - weft-bench alltoall --memory device --baseline: the data check of every
#    type, beside raw NCCL's group;
#  - pp_1f1b --unbatched (weft_send then weft_recv): the 1F1B steady state
#    hangs as on a GPU, and the watchdog ends the ranks (exit 124) naming the
#    device send, which is why the batches exist;
#  - deadlines (WEFT_COLL_TIMEOUT=3): a device all-to-all and a batch that
#    the last rank never comes to fail on the others naming it, and the
#    absent rank, back later, is told and aborts too.
# test-rt-device.sh runs test-rt-gpu's data checks of the same calls.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
examples=$WEFT_BUILDDIR/examples
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-gpu
bad=0

# example NP NAME ARGS...: NAME says OK on device memory, no stand-in rule broken.
example()
{
  np=$1 name=$2
  shift 2
  if standin_mpirun "$np" "$examples/$name" --device "$@" >"$tmp/out" 2>&1 &&
     grep -q "^$name: OK$" "$tmp/out" && grep -q 'device memory' "$tmp/out" &&
     ! grep -q 'weft-standin:' "$tmp/out"; then
    echo "ok: $name --device${*:+ $*} on $np ranks: $(grep -m1 'relative error' "$tmp/out")"
  else
    cat "$tmp/out"; echo "FAIL: $name --device $* on $np ranks"; bad=1
  fi
}
example 2 tp_mlp
example 4 tp_mlp
example 4 pp_1f1b
example 4 moe

# weft-bench alltoall on device memory: its data check, and the raw-NCCL
# baseline (a group of sends and receives) beside it (no figure: not a GPU).
if standin_mpirun 3 "$bench" alltoall -b 1K -e 256K -f 16 -n 2 -w 1 -d all --memory device \
     --baseline >"$tmp/bench" 2>&1 && grep -q '^# Out of bounds values : 0 OK$' "$tmp/bench" &&
   grep -q 'raw NCCL' "$tmp/bench" && ! grep -q 'weft-standin:' "$tmp/bench"; then
  echo "ok: weft-bench alltoall --memory device --baseline, every type, 3 ranks"
else
  cat "$tmp/bench"; echo "FAIL: weft-bench alltoall on device memory"; bad=1
fi

t0=$(date +%s)
if WEFT_COLL_TIMEOUT=3 standin_mpirun 2 "$examples/pp_1f1b" --device --unbatched >"$tmp/hang" 2>&1; then
  cat "$tmp/hang"; echo "FAIL: pp_1f1b --unbatched on device memory finished"; bad=1
elif ! grep -q 'device send on group pp .* has not finished' "$tmp/hang"; then
  cat "$tmp/hang"; echo "FAIL: pp_1f1b --unbatched: no watchdog line naming the send"; bad=1
elif [ $(($(date +%s) - t0)) -gt 40 ]; then
  cat "$tmp/hang"; echo "FAIL: pp_1f1b --unbatched: took $(($(date +%s) - t0))s"; bad=1
else
  echo "ok: pp_1f1b --unbatched hangs on device memory as on a GPU, ended by the watchdog"
fi

for what in alltoall-absent batch-absent; do
  # Ranks 0 and 1 each fail at their deadline naming rank 2, or, when the
  # other's came first, on its notice; rank 2 is told when it comes back.
  if WEFT_COLL_TIMEOUT=3 standin_mpirun 3 "$bin" $what >"$tmp/$what" 2>&1 &&
     [ "$(grep -c '^ABSENT-OK rank [01]' "$tmp/$what")" = 2 ] &&
     grep -q '^ABSENT-OK rank [01]: .*world rank(s) 2 \(had not joined\|never posted\)' "$tmp/$what" &&
     grep -q '^ABSENT-OK rank 2 told' "$tmp/$what" && ! grep -q 'weft-standin:' "$tmp/$what"; then
    echo "ok: $what: $(grep -m1 '^ABSENT-OK rank [01]: .*world rank(s) 2' "$tmp/$what")"
  else
    cat "$tmp/$what"; echo "FAIL: $what"; bad=1
  fi
done
[ $bad -eq 0 ] || exit 1
echo "PASS: all-to-all and batches on device memory under the stand-in (not a GPU)"
