#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where the runtime's device path can go wrong, under the CUDA/NCCL stand-in,
# which ends a rank that breaks a CUDA or NCCL rule: CPU-only jobs make no
# CUDA context and device jobs one per rank on its own device; one visible GPU
# is device 0; a split waits for queued calls; a send uses the group's
# communicator (which every member must bring up); a late unique id does not
# land in a dead stack frame; asynchronous errors and timeouts abort the
# communicator on every rank; a deadline counts from the call's start and no
# call waits for the GPU; the watchdog ends a rank whose call never finishes
# while the program waits outside weft; weft leaves the thread's current
# device as it was; and a build without NCCL refuses device buffers.
# test-rt-device-faults.c has the scenarios.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-device-faults
bad=0

# scenario NP NAME [PROGRAM]: runs, says "ok: NAME", breaks no stand-in rule.
scenario()
{
  np=$1 name=$2 prog=${3:-$bin}
  if standin_mpirun "$np" "$prog" "$name" >"$tmp/$name" 2>&1 && grep -q "^ok: $name" "$tmp/$name" &&
     ! grep -q 'weft-standin:' "$tmp/$name"; then
    echo "ok: $name on $np ranks"
  else
    cat "$tmp/$name"
    echo "FAIL: scenario $name"
    bad=1
  fi
}

# contexts FILE: "RANK DEVICE" for each context the stand-in made.
contexts()
{
  sed -n 's/^pid=[0-9]* rank=\([0-9]*\) context device=\([0-9]*\) .*/\1 \2/p' "$1" | sort
}

WEFT_STANDIN_LOG=$tmp/cpu.log scenario 4 cpu
if [ -s "$tmp/cpu.log" ] && [ -n "$(contexts "$tmp/cpu.log")" ]; then
  echo "FAIL: a CPU-only job made CUDA contexts (rank device):"; contexts "$tmp/cpu.log"; bad=1
fi
WEFT_STANDIN_LOG=$tmp/dev.log scenario 4 contexts
if [ "$(contexts "$tmp/dev.log" | tr '\n' ' ')" != "0 0 1 1 2 2 3 3 " ]; then
  echo "FAIL: contexts of a 4-rank device job (want one per rank, on its own device):"
  contexts "$tmp/dev.log"; bad=1
fi
# Each rank sees one GPU of its own, as with Slurm's --gpus-per-task=1.
cat >"$tmp/own-gpu" <<'SH'
#!/bin/sh
CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$@"
SH
chmod +x "$tmp/own-gpu"
if standin_mpirun 2 "$tmp/own-gpu" "$bin" one-visible >"$tmp/one" 2>&1 && grep -q '^ok: one-visible' "$tmp/one"; then
  echo "ok: one-visible on 2 ranks"
else
  cat "$tmp/one"; echo "FAIL: scenario one-visible"; bad=1
fi
scenario 4 split-drain
WEFT_INIT_TIMEOUT=30 scenario 3 p2p-up
WEFT_INIT_TIMEOUT=3 scenario 3 p2p-first
# 3 s: weft_init itself must fit (slow under AddressSanitizer on a loaded machine)
WEFT_INIT_TIMEOUT=3 scenario 2 late-root
WEFT_COLL_TIMEOUT=10 WEFT_STANDIN_NCCL_FAULT=async-error:1:2 scenario 2 async-error
# Rank 0's first all-reduce ends a second after rank 1's; by then rank 1 has
# failed its second and told rank 0, whose first call has all it needs from
# rank 1 and must still succeed (a loaded machine does this by itself).
WEFT_COLL_TIMEOUT=10 WEFT_STANDIN_NCCL_FAULT=async-error:1:2,late:0:1 scenario 2 async-late
# The same race the other way round: rank 0's first call has finished, but
# its thread comes back to weft only after rank 1's notice (a loaded machine
# did this in CI); that call must succeed too.
WEFT_COLL_TIMEOUT=10 WEFT_STANDIN_NCCL_FAULT=async-error:1:2,held:0:1 scenario 2 async-held
WEFT_COLL_TIMEOUT=3 WEFT_STANDIN_NCCL_FAULT=hang:1:2 scenario 2 abort-all
WEFT_COLL_TIMEOUT=5 scenario 2 deadline
# A call that never finishes while the program waits in cudaStreamSynchronize:
# the watchdog ends the rank (exit 124) a second after WEFT_COLL_TIMEOUT, with
# one line naming the call.
t0=$(date +%s)
if WEFT_COLL_TIMEOUT=3 WEFT_STANDIN_NCCL_FAULT=hang:1:2 standin_mpirun 2 "$bin" watchdog \
    >"$tmp/watchdog" 2>&1; then
  cat "$tmp/watchdog"; echo "FAIL: scenario watchdog: the job ended well"; bad=1
elif ! grep -q 'device allreduce on group world (device call 2) has not finished' "$tmp/watchdog" ||
     ! grep -q 'ending the rank' "$tmp/watchdog"; then
  cat "$tmp/watchdog"; echo "FAIL: scenario watchdog: no watchdog line"; bad=1
elif [ $(($(date +%s) - t0)) -gt 30 ]; then
  cat "$tmp/watchdog"; echo "FAIL: scenario watchdog: took $(($(date +%s) - t0))s"; bad=1
else
  echo "ok: watchdog on 2 ranks ($(($(date +%s) - t0))s)"
fi
# The thread's current device is put back: the only contexts are each rank's
# own device's and the one the program made itself (device + 1).
WEFT_STANDIN_LOG=$tmp/kept.log scenario 2 device-kept
if [ "$(contexts "$tmp/kept.log" | tr '\n' ' ')" != "0 0 0 1 1 1 1 2 " ]; then
  echo "FAIL: contexts of device-kept (want each rank's and the next device, nothing else):"
  contexts "$tmp/kept.log"; bad=1
fi
# NCCL_COMM_BLOCKING=1: honoured, and said once per host.
NCCL_COMM_BLOCKING=1 scenario 4 blocking
if [ "$(grep -c 'NCCL_COMM_BLOCKING=1 (environment) makes NCCL.s calls block' "$tmp/blocking")" != 1 ]; then
  cat "$tmp/blocking"; echo "FAIL: scenario blocking: not said exactly once"; bad=1
fi
# ... and a rank that never comes to a blocking init: the watchdog ends the
# ranks waiting in it after WEFT_INIT_TIMEOUT.
t0=$(date +%s)
if NCCL_COMM_BLOCKING=1 WEFT_INIT_TIMEOUT=3 WEFT_STANDIN_NCCL_FAULT=init-absent:1 \
    standin_mpirun 2 "$bin" blocking-absent >"$tmp/blocking-absent" 2>&1; then
  cat "$tmp/blocking-absent"; echo "FAIL: scenario blocking-absent: the job ended well"; bad=1
elif ! grep -q "NCCL's ncclCommInitRankConfig on group world has not returned after" \
    "$tmp/blocking-absent"; then
  cat "$tmp/blocking-absent"; echo "FAIL: scenario blocking-absent: no watchdog line"; bad=1
elif [ $(($(date +%s) - t0)) -gt 30 ]; then
  echo "FAIL: scenario blocking-absent: took $(($(date +%s) - t0))s"; bad=1
else
  echo "ok: blocking-absent on 2 ranks ($(($(date +%s) - t0))s)"
fi
scenario 2 nonccl "$WEFT_BUILDDIR/tests/gpu/test-rt-device-nonccl"
[ $bad -eq 0 ] || exit 1
echo "PASS: device faults under the stand-in (not a GPU)"
