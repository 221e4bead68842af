#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where the runtime's device path used to go wrong (issue 12, part 1), under
# the CUDA/NCCL stand-in, which ends a rank that breaks a CUDA or NCCL rule:
# CPU-only jobs make no CUDA context and device jobs one per rank on its own
# device; one visible GPU is device 0; a split waits for queued calls; a
# send needs no third rank; a late unique id does not land in a dead stack
# frame; asynchronous errors and timeouts abort the communicator on every
# rank; a deadline counts from the collective's start; and a build without
# NCCL refuses device buffers. test-rt-device-faults.c has the scenarios.
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
WEFT_INIT_TIMEOUT=30 scenario 3 pair
WEFT_INIT_TIMEOUT=1 scenario 2 late-root
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
scenario 2 nonccl "$WEFT_BUILDDIR/tests/gpu/test-rt-device-nonccl"
[ $bad -eq 0 ] || exit 1
echo "PASS: device faults under the stand-in (not a GPU)"
