#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --monitor's GPU figures on this host, through NVML's stand-in
# (tests/standin, never a GPU) on an a3-highgpu-8g topology: 3 ranks on GPUs
# 0, 2 and 4, the stand-in reporting GPU 2 at 5% and the others at 90%. The
# timeline carries gpu, gpu_mem, gpu_power and gpu_temp; rank 1 (GPU 2) is
# named a straggler by its GPU; the closing figures give each GPU's average
# and peak; the host's Prometheus file has every rank's GPU metrics with a gpu
# label. Without
# NVML the GPU fields are absent and one line says why, once; an NVML that
# hangs stops nothing (it is read on a thread of the agent's own).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
standin=$WEFT_BUILDDIR/tests/standin/.libs
[ -e "$standin/libnvidia-ml.so.1" ] || fail "the NVML stand-in is not built ($standin)"
export WEFT_TOPOLOGY=$topos/a3-highgpu-8g.xml
s="$tmp/$uniq-sleep"
mkdir "$tmp/prom"

rc=0
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} WEFT_STANDIN_NVML_UTIL=2:5 \
  timeout 60 "$weftrun" -np 3 --monitor=0.3 --monitor-out "$tmp/mon" --monitor-prom "$tmp/prom" \
  sh -c "$s 2; [ \$RANK != 1 ] || cp $tmp/prom/weft-*.prom $tmp/host.prom; $s 1" \
  >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 0 ] || fail_run "weftrun exited $rc" "$tmp/out"
cat "$tmp/out.err"
grep -q '^weftrun: GPUs: rank 0 gpu 0 ([^)]*) 90% avg, 4.0 GiB peak, rank 1 gpu 2 ([^)]*) 5% avg, 4.0 GiB peak, rank 2 gpu 4 ' \
  "$tmp/out.err" || fail_run "the GPUs' closing line" "$tmp/out"
grep -q '^weftrun: straggler: rank 1 on [^ ]*: GPU 2 (.*) at 5% for the last 3 samples, its peers. median 90%$' \
  "$tmp/out.err" || fail_run "no GPU straggler line for rank 1" "$tmp/out"
[ "$(grep -c '^weftrun: straggler: ' "$tmp/out.err")" = 1 ] || fail_run "other stragglers named" "$tmp/out"
! grep -q 'no GPU figures' "$tmp/out.err" || fail_run "GPU figures said absent with NVML" "$tmp/out"
/usr/bin/python3 - "$tmp/mon/timeline.jsonl" <<'EOP' || fail "timeline's GPU fields"
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    want = 0.05 if r["rank"] == 1 else 0.90
    assert r["gpu"] == want and r["gpu_mem"] > 0 and r["gpu_power"] > 0 and r["gpu_temp"] > 0, line
    n += 1
assert n >= 9, n
print("ok %d records with GPU figures" % n)
EOP
# the host's one file: every rank's GPU line, each labelled with its own GPU
grep -q '^weft_rank_gpu_utilization_ratio{job="[^"]*",rank="0",host="[^"]*",gpu="0"} 0.9$' "$tmp/host.prom" &&
  grep -q '^weft_rank_gpu_utilization_ratio{job="[^"]*",rank="1",host="[^"]*",gpu="2"} 0.05$' "$tmp/host.prom" &&
  grep -q '^weft_rank_gpu_utilization_ratio{job="[^"]*",rank="2",host="[^"]*",gpu="4"} 0.9$' "$tmp/host.prom" &&
  [ "$(grep -c '^# TYPE weft_rank_gpu_power_watts gauge$' "$tmp/host.prom")" = 1 ] ||
  fail_run "the host's Prometheus GPU metrics" "$tmp/host.prom"
[ -z "$(ls -A "$tmp/prom")" ] || fail "Prometheus files left after the job"
echo "ok GPU straggler, closing figures, timeline and Prometheus GPU metrics"

# without NVML (no driver): no GPU field, one line saying why
rc=0
timeout 60 "$weftrun" -np 3 --monitor=0.3 --monitor-out "$tmp/mon2" "$s" 1.5 >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 0 ] || fail_run "weftrun without NVML exited $rc" "$tmp/out"
[ "$(grep -c '^weftrun: --monitor: no GPU figures (rank [0-2] on [^ ]*: no libnvidia-ml.so.1 (no NVIDIA driver))$' "$tmp/out.err")" = 1 ] ||
  fail_run "the line saying why (once)" "$tmp/out"
! grep -q '"gpu' "$tmp/mon2/timeline.jsonl" || fail "GPU fields without NVML"
grep -q '"rank":2' "$tmp/mon2/timeline.jsonl" || fail "no timeline without NVML"
echo "ok without NVML: one line why, no GPU fields"

# an NVML that hangs (nvmlInit_v2 never returns) stops nothing: the job runs and ends
# as usual (its agents' heartbeats go on), and one line says so
rc=0
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} WEFT_STANDIN_NVML_FAULT=hang \
  timeout 60 "$weftrun" -np 2 --monitor=0.5 "$s" 7 >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 0 ] || fail_run "weftrun with a hung NVML exited $rc" "$tmp/out"
[ "$(grep -c '^weftrun: --monitor: no GPU figures (rank [01] on [^ ]*: NVML did not start within 5 s)$' "$tmp/out.err")" = 1 ] ||
  fail_run "the line for a hung NVML" "$tmp/out"
echo "ok a hung NVML: the job ran, one line says so"
nothing_left
