#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# lib/gcp on a virtual cluster: every vnode runs its own fake metadata server
# (on the vnode's own loopback) that claims a machine type (vnode0
# a3-highgpu-8g, vnode1 a3-megagpu-8g) and lists the MACs of the vnode's
# interfaces: eth0 as the host NIC and four "GPU NICs" (veth devices, jumbo
# MTU) named as on Ubuntu A3 VMs; both vnodes have the a3-highgpu-8g topology.
# Checks that each vnode finds its family, matches the NICs by MAC and fills
# Google's TCPX / TCPXO variables with them; that weftrun --dry-run on vnode0
# shows the TCPX variables and keeps every rank off the TCPX cores; that a
# launched job's ranks get their host's variables; that weftrun's probe brings
# back every vnode's machine type and physical_host (vnode1 on rack r0, vnode0
# on r1): the mixed-types warning, and hosts (so ranks) ordered by
# physical_host, vnode1 first, at --dry-run and at launch; that weftrun
# --check reports each vnode's Google Cloud warnings; and that a
# preemption notice on vnode1 stops the job with WEFT_EXIT_PREEMPTED (79) in
# bounded time.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
fake=$WEFT_TOPDIR/tests/cli/gcp-fake-metadata.py
probe=$WEFT_BUILDDIR/tests/vcluster/gcp-probe
topo=$topos/a3-highgpu-8g.xml
# Each vnode has its own loopback: the same port is free on every one of them.
port=8088

need_root
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3 for the fake metadata server"
command -v ip >/dev/null 2>&1 || skip "needs iproute2"
grep -q "define WEFT_HAVE_CURL 1" "$WEFT_BUILDDIR/config.h" || skip "weft is built without libcurl"

# The vnodes' own /sys/class/net, and their own fake servers (named explicitly below).
unset WEFT_GCP_SYSROOT GCE_METADATA_HOST
vc_up 2 --topology "$topo"
pids=
at_exit 'for p in $pids; do kill "$p" 2>/dev/null; done'
on() { node=$1; shift; timeout 60 "$vc" --prefix "$prefix" exec "$node" "$@"; }

gpu_nics="enp6s0 enp12s0 enp134s0 enp140s0"
types="a3-highgpu-8g a3-megagpu-8g"
n=0
for type in $types; do
  node=vnode$n
  on "$node" sh -c "k=0; for i in $gpu_nics; do k=\$((k + 1)); ip link add \$i mtu 8244 type veth peer name peer\$k mtu 8244 || exit 1; done" ||
    skip "veth devices cannot be made in a vnode"
  {
    printf '{"instance": {"machine-type": "projects/1/machineTypes/%s", "zone": "projects/1/zones/us-central1-a",\n' "$type"
    printf ' "hostname": "%s.c.test.internal", "preempted": "FALSE", "maintenance-event": "NONE",\n' "$node"
    printf ' "attributes": {"physical_host": "/c1/r%d/h1"}, "network-interfaces": {\n' $((1 - n))
    i=0
    for nic in eth0 $gpu_nics; do
      mac=$(on "$node" cat "/sys/class/net/$nic/address")
      [ $i = 0 ] || printf ',\n'
      printf '  "%d": {"mac": "%s", "ip": "10.%d.0.%d", "network": "projects/1/networks/net%d"}' \
        $i "$mac" $i $((n + 2)) $i
      i=$((i + 1))
    done
    printf '}}}\n'
  } >"$tmp/tree$n.json"
  "$vc" --prefix "$prefix" exec "$node" /usr/bin/python3 "$fake" --data "$tmp/tree$n.json" \
    --port "$port" --port-file "$tmp/port$n" >"$tmp/server$n.log" 2>&1 &
  pids="$pids $!"
  n=$((n + 1))
done
for n in 0 1; do
  i=0
  while [ ! -s "$tmp/port$n" ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || { echo "FAIL: fake metadata server on vnode$n did not start"; cat "$tmp/server$n.log"; exit 1; }
    sleep 0.1
  done
done

probe_on() {
  n=$1; shift
  on "vnode$n" env GCE_METADATA_HOST="127.0.0.1:$port" WEFT_DATADIR="$WEFT_DATADIR" \
    "$probe" "$@"
}
expect() {
  grep -qF -- "$2" "$1" || { echo "FAIL: $1 lacks: $2"; cat "$1"; exit 1; }
}

# vnode0 claims a3-highgpu-8g: Google's TCPX variables with this vnode's NIC names.
probe_on 0 env auto 1 >"$tmp/env0"
expect "$tmp/env0" "# on_gce 1 machine-type a3-highgpu-8g family a3-highgpu-8g preset a3-highgpu-8g"
expect "$tmp/env0" "NCCL_NET=GPUDirectTCPX_v7  # preset a3-highgpu-8g"
expect "$tmp/env0" "NCCL_SOCKET_IFNAME=eth0  # preset a3-highgpu-8g"
expect "$tmp/env0" "NCCL_GPUDIRECTTCPX_CTRL_DEV=eth0"
expect "$tmp/env0" "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0"
expect "$tmp/env0" "NCCL_GPUDIRECTTCPX_RX_BINDINGS=enp6s0:22-35,126-139;enp12s0:22-35,126-139;enp134s0:74-87,178-191;enp140s0:74-87,178-191"
expect "$tmp/env0" "reserve-cpus 8-35,112-139,60-87,164-191"
expect "$tmp/env0" "NCCL network plugin /var/lib/tcpx/lib64/libnccl-net.so is missing"
# veth devices have no PCI device: gVNIC unknown, no warning.
if grep -q "not a gVNIC" "$tmp/env0"; then echo "FAIL: gVNIC warning without PCI data"; exit 1; fi
# A single-VM job gets no preset from auto, but does from an explicit family.
probe_on 0 env auto 0 >"$tmp/env0s"
expect "$tmp/env0s" "preset -"
probe_on 0 env a3-highgpu-8g 0 >"$tmp/env0x"
expect "$tmp/env0x" "NCCL_NET=GPUDirectTCPX_v7"

# vnode1 claims a3-megagpu-8g: TCPXO variables, no TCPX core reservation.
probe_on 1 env auto 1 >"$tmp/env1"
expect "$tmp/env1" "family a3-megagpu-8g preset a3-megagpu-8g"
expect "$tmp/env1" "NCCL_FASTRAK_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0  # preset a3-megagpu-8g"
expect "$tmp/env1" "NCCL_FASTRAK_CTRL_DEV=eth0"
expect "$tmp/env1" "reserve-cpus -"
if grep -q "NCCL_NET=GPUDirectTCPX" "$tmp/env1"; then echo "FAIL: TCPX on a3-megagpu-8g"; exit 1; fi

# A preemption notice on vnode1 reaches the watcher there.
probe_on 1 watch 20 >"$tmp/watch1" 2>&1 &
watcher=$!
pids="$pids $watcher"
i=0
until grep -q watching "$tmp/watch1"; do
  i=$((i + 1)); [ $i -lt 200 ] || { echo "FAIL: watcher did not start"; cat "$tmp/watch1"; exit 1; }
  sleep 0.05
done
sleep 0.3
control() { # node path value
  on "$1" /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/control/set?path=%s&value=%s" % tuple(sys.argv[1:]), timeout=5).read()' "$port" "$2" "$3"
}
control vnode1 instance/preempted TRUE
set +e
wait $watcher
rc=$?
set -e
[ $rc = 79 ] || { echo "FAIL: watcher exit $rc, expected 79 (WEFT_EXIT_PREEMPTED)"; cat "$tmp/watch1"; exit 1; }
expect "$tmp/watch1" "notice preempted TRUE"
control vnode1 instance/preempted FALSE

# weftrun --dry-run on vnode0 (the launcher): TCPX variables with vnode0's NIC names, and
# every rank's processors off the TCPX cores (8-35,112-139 on NUMA 0, 60-87,164-191 on NUMA 1).
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- env GCE_METADATA_HOST="127.0.0.1:$port" "$weftrun" "$@"; }
vrun --dry-run true >"$tmp/dry" 2>"$tmp/dry.err" || { echo "FAIL: weftrun --dry-run"; cat "$tmp/dry.err"; exit 1; }
expect "$tmp/dry" "# nccl preset a3-highgpu-8g (machine type a3-highgpu-8g), reserved cpus 8-35,112-139,60-87,164-191"
expect "$tmp/dry" "# env NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0  (preset a3-highgpu-8g)"
expect "$tmp/dry" "# env NCCL_GPUDIRECTTCPX_CTRL_DEV=eth0  (preset a3-highgpu-8g)"
# The probe brought back both vnodes' facts: vnode1 (rack r0) comes first.
expect "$tmp/dry" "# hosts ordered by physical_host (cluster/rack/host)"
expect "$tmp/dry" "# host vnode0: machine type a3-highgpu-8g, physical_host /c1/r1/h1"
expect "$tmp/dry" "# host vnode1: machine type a3-megagpu-8g, physical_host /c1/r0/h1"
expect "$tmp/dry.err" "weftrun: warning: mixed machine types in one job: vnode0 is a3-highgpu-8g but vnode1 is a3-megagpu-8g"
[ "$(grep '^# host vnode' "$tmp/dry" | head -1 | cut -d: -f1)" = "# host vnode1" ] ||
  { echo "FAIL: hosts not ordered by physical_host"; cat "$tmp/dry"; exit 1; }
expect "$tmp/dry" "vnode1 rank 0 (local 0): GPU 0 (0000:04:00.0) cores 0-5,104-109 NUMA 0 NIC enp6s0"
expect "$tmp/dry" "vnode0 rank 15 (local 7): GPU 7 (0000:8b:00.0) cores 98-103,202-207 NUMA 1 NIC enp140s0"
[ "$(grep -c ' cores ' "$tmp/dry")" = 16 ] || { echo "FAIL: 16 ranks expected"; cat "$tmp/dry"; exit 1; }
/usr/bin/python3 - "$tmp/dry" <<'PY' || { echo "FAIL: a rank on a TCPX core"; cat "$tmp/dry"; exit 1; }
import re, sys
def expand(s):
    out = set()
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
reserved = expand("8-35,112-139,60-87,164-191")
for line in open(sys.argv[1]):
    m = re.search(r" cores (\S+) ", line)
    if m and expand(m.group(1)) & reserved:
        sys.exit(1)
PY

# weftrun --check asks every vnode's metadata server too: each vnode's Google Cloud
# checks (the TCPX plugin is not installed) and the mixed machine types are warnings.
rc=0
vrun --check true >"$tmp/check" 2>"$tmp/check.err" || rc=$?
[ $rc = 80 ] || { echo "FAIL: weftrun --check exited $rc, not 80 (warnings)"; cat "$tmp/check" "$tmp/check.err"; exit 1; }
expect "$tmp/check" "WARN [net] vnode0: vnode0.c.test.internal: NCCL network plugin /var/lib/tcpx/lib64/libnccl-net.so is missing"
expect "$tmp/check" "WARN [net] vnode1: machine type a3-megagpu-8g, a3-highgpu-8g on vnode0"
expect "$tmp/check" "# check: WARN (exit 80)"

# A launched job: each rank gets its own host's preset; a preemption notice on vnode1
# stops the job with 79 and the line that says why.
vrun -N 1 -x GCE_METADATA_HOST="127.0.0.1:$port" sh -c \
  'echo "E $RANK $(hostname) ${NCCL_NET:-none} ${NCCL_GPUDIRECTTCPX_SOCKET_IFNAME:-none} ${NCCL_FASTRAK_IFNAME:-none}"; exec sleep 60' \
  >"$tmp/run" 2>"$tmp/run.err" &
job=$!
pids="$pids $job"
i=0
until [ "$(grep -c '^E ' "$tmp/run" 2>/dev/null)" = 2 ]; do
  i=$((i + 1))
  [ $i -lt 600 ] || { echo "FAIL: the job did not start"; cat "$tmp/run" "$tmp/run.err"; exit 1; }
  sleep 0.05
done
sleep 0.5
t0=$(date +%s)
control vnode1 instance/preempted TRUE
set +e
wait $job
rc=$?
set -e
dt=$(($(date +%s) - t0))
# ordered by physical_host at launch too: rank 0 on vnode1
expect "$tmp/run" "E 1 vnode0 GPUDirectTCPX_v7 enp6s0,enp12s0,enp134s0,enp140s0 none"
expect "$tmp/run" "E 0 vnode1 none none enp6s0,enp12s0,enp134s0,enp140s0"
expect "$tmp/run.err" "mixed machine types in one job"
[ $rc = 79 ] && [ $dt -le 20 ] || { echo "FAIL: preempted job: exit $rc after ${dt}s, expected 79"; cat "$tmp/run.err"; exit 1; }
expect "$tmp/run.err" "rank 0 host vnode1 gpu 0 (0000:04:00.0): GCE notice instance/preempted = TRUE"
expect "$tmp/run.err" "preempted (instance/preempted = TRUE); exited with status 79"
echo "PASS: per-vnode metadata, families, NIC names by MAC, presets, dry-run, --check and launch on vnodes, mixed types, host order by physical_host, preemption (79 in ${dt}s)"
