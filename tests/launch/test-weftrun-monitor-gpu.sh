#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --monitor's GPU figures on this host, through NVML's stand-in
# (tests/standin, never a GPU) on an a3-highgpu-8g topology: 3 ranks on GPUs
# 0, 2 and 4, the stand-in reporting GPU 2 at 5% and the others at 90%. The
# timeline carries gpu, gpu_mem, gpu_power and gpu_temp; rank 1 (GPU 2) is
# named a straggler by its GPU; the closing figures give each GPU's average
# and peak; the host's Prometheus file has every rank's GPU metrics with a gpu
# label. Each rank's GPU is found in NVML by its PCI address: with NVML's
# indexes in reverse PCI order each rank still reports its own GPU, and an
# NVML that does not know the address gives no figures (one line why). Without
# NVML the GPU fields are absent and one line says why, once; an NVML that
# hangs stops nothing (it is read on a thread of the agent's own).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
standin=$WEFT_BUILDDIR/tests/standin/.libs
[ -e "$standin/libnvidia-ml.so.1" ] || fail "the NVML stand-in is not built ($standin)"
export WEFT_TOPOLOGY=$topos/a3-highgpu-8g.xml
# the stand-in's GPUs at the topology's PCI addresses (weft-topo lists them)
pci_bus=04,05,0a,0b,84,85,8a,8b
export WEFT_STANDIN_PCI_BUS=$pci_bus
s="$tmp/$uniq-sleep"
mkdir "$tmp/prom"
# copies the host's Prometheus file once it has all 3 ranks' GPU lines (the
# first sample may come late on a loaded machine), within 30 s
cat >"$tmp/takeprom" <<EOS
#!/bin/sh
i=0
until [ "\$(cat $tmp/prom/weft-*.prom 2>/dev/null | grep -c '^weft_rank_gpu_utilization_ratio{')" = 3 ]; do
  i=\$((i + 1)); [ \$i -lt 300 ] || { echo "no Prometheus file with 3 GPU lines within 30 s" >&2; exit 1; }
  $s 0.1
done
cp $tmp/prom/weft-*.prom "\$1"
EOS
chmod +x "$tmp/takeprom"

rc=0
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} WEFT_STANDIN_NVML_UTIL=2:5 \
  timeout 60 "$weftrun" -np 3 --monitor=0.3 --monitor-out "$tmp/mon" --monitor-prom "$tmp/prom" \
  sh -c "$s 2; [ \$RANK != 1 ] || $tmp/takeprom $tmp/host.prom; $s 1" \
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

# each rank's GPU found by its PCI address: NVML numbers the GPUs in reverse
# PCI order here, GPU G (the topology's, CUDA's) at 10+G%, so that a figure
# read by the index would be another GPU's (GPU 0 would read 17%)
rc=0
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} WEFT_STANDIN_NVML_ORDER=reverse \
  WEFT_STANDIN_NVML_UTIL=0:10,1:11,2:12,3:13,4:14,5:15,6:16,7:17 \
  timeout 60 "$weftrun" -np 3 --monitor=0.3 --monitor-prom "$tmp/prom" \
  sh -c "$s 1.5; [ \$RANK != 0 ] || $tmp/takeprom $tmp/host2.prom; $s 0.5" \
  >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 0 ] || fail_run "weftrun with NVML in reverse order exited $rc" "$tmp/out"
grep '^weftrun: GPUs: ' "$tmp/out.err" || :
grep -q '^weftrun: GPUs: rank 0 gpu 0 (0000:04:00.0) 10% avg, 4.0 GiB peak, rank 1 gpu 2 (0000:0a:00.0) 12% avg, 4.0 GiB peak, rank 2 gpu 4 (0000:84:00.0) 14% avg, ' \
  "$tmp/out.err" || fail_run "a rank's GPU figures are not its GPU's (looked up by index?)" "$tmp/out"
for g in 0:0.1 2:0.12 4:0.14; do
  grep -q "^weft_rank_gpu_utilization_ratio{job=\"[^\"]*\",rank=\"[0-2]\",host=\"[^\"]*\",gpu=\"${g%%:*}\"} ${g#*:}\$" \
    "$tmp/host2.prom" || fail_run "GPU ${g%%:*}'s Prometheus line" "$tmp/host2.prom"
done
echo "ok NVML in reverse order: each rank's figures are its own GPU's (found by PCI address)"

# an NVML that does not know the rank's GPU's address gives no figures, never
# another GPU's: one line says why
rc=0
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} WEFT_STANDIN_PCI_BUS=10,11,12,13,14,15,16,17 \
  timeout 60 "$weftrun" -np 2 --monitor=0.3 --monitor-out "$tmp/mon3" "$s" 1.5 \
  >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 0 ] || fail_run "weftrun with NVML at other addresses exited $rc" "$tmp/out"
[ "$(grep -c "^weftrun: --monitor: no GPU figures (rank [01] on [^ ]*: NVML has no GPU at 0000:[0-9a-f]*:00.0 (the rank's GPU [0-9]): Not Found)\$" "$tmp/out.err")" = 1 ] ||
  fail_run "the line for a GPU NVML does not know" "$tmp/out"
! grep -q '"gpu' "$tmp/mon3/timeline.jsonl" || fail "GPU fields of a GPU NVML does not know"
echo "ok a GPU NVML does not know: no figures, one line why"

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
