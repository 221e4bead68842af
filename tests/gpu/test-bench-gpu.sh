#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench on device memory: every collective on 1 rank (2 when the host
# has 2 GPUs) through NCCL, with the data check, every type and operation on
# small sizes, out of place and in place, and a sweep to 64 MiB beside raw
# NCCL (--baseline). Without a GPU: checks that --memory device is refused
# with exit 4, then exits 77.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
unset WEFT_BENCH_INJECT_ERROR WEFT_GPU

rc=0
mpirun_np 1 "$bench" allreduce -b 1K -e 4K --memory device -n 2 -w 1 >"$tmp/probe" 2>&1 || rc=$?
if [ $rc -eq 4 ]; then
  grep -q -- '--memory device: rank 0' "$tmp/probe" || { cat "$tmp/probe"; echo "FAIL: exit 4 without the reason"; exit 1; }
  skip "no usable GPU here: $(grep -- '--memory device' "$tmp/probe")"
fi
[ $rc -eq 0 ] || { cat "$tmp/probe"; echo "FAIL: weft-bench --memory device exited $rc"; exit 1; }

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
np=1
[ "${ngpus:-0}" -ge 2 ] && np=2
fail=0
mpirun_timeout=300
run()
{
  name=$1
  shift
  if mpirun_np $np "$bench" "$@" --memory device >"$tmp/$name" 2>&1 &&
     grep -q '^# Out of bounds values : 0 OK$' "$tmp/$name"; then
    grep -E '^#  Rank|Avg bus|concluded' "$tmp/$name"
  else
    cat "$tmp/$name"
    echo "FAIL: weft-bench $* --memory device on $np rank(s)"
    fail=1
  fi
}
for coll in allreduce reduce_scatter bucket; do
  run "$coll-all" $coll -d all -o all -b 8 -e 64K -f 8 -n 2 -w 1
done
for coll in allgather broadcast; do
  run "$coll-all" $coll -d all -b 8 -e 64K -f 8 -n 2 -w 1
done
[ $np -ge 2 ] && run sendrecv sendrecv -b 1K -e 64M -f 4 -n 5 -w 2
run sweep allreduce -b 1K -e 64M -f 4 -n 10 -w 2 --baseline --json "$tmp/r.json"
grep -q 'baseline: raw NCCL' "$tmp/sweep" || { echo "FAIL: no raw NCCL baseline"; fail=1; }
run bucket-baseline bucket -b 64K -e 16M -f 4 --tensors 100 -n 5 -w 1 --baseline
[ $fail -eq 0 ] || exit 1
echo "PASS: weft-bench on device memory ($np rank(s))"
