#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --dry-run on a VM that says it is an a3-highgpu-8g: a fake metadata
# server on loopback and a fake /sys/class/net (WEFT_GCP_SYSROOT) whose MACs
# match it. The plan must show Google's TCPX variables with these NIC names,
# keep every rank off the TCPX cores, let the user's variables win, and apply
# nothing to a single-VM job or with --nccl-preset none.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo=$topos/a3-highgpu-8g.xml
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3 for the fake metadata server"
grep -q "define WEFT_HAVE_CURL 1" "$WEFT_BUILDDIR/config.h" || skip "built without libcurl"

server=
at_exit '[ -z "$server" ] || kill "$server" 2>/dev/null'

root=$tmp/root
nic() { # name mac mtu pci
  mkdir -p "$root/sys/class/net/$1/device"
  echo "$2" >"$root/sys/class/net/$1/address"
  echo "$3" >"$root/sys/class/net/$1/mtu"
  printf 'DRIVER=gve\nPCI_ID=1AE0:0042\nPCI_SLOT_NAME=%s\n' "$4" >"$root/sys/class/net/$1/device/uevent"
}
mkdir -p "$root/sys/class/dmi/id"
echo "Google Compute Engine" >"$root/sys/class/dmi/id/product_name"
nic enp0s12 42:01:0a:00:00:02 1460 0000:00:0c.0
nic enp6s0 42:01:0a:01:00:02 8244 0000:06:00.0
nic enp12s0 42:01:0a:02:00:02 8244 0000:0c:00.0
nic enp134s0 42:01:0a:03:00:02 8244 0000:86:00.0
nic enp140s0 42:01:0a:04:00:02 8244 0000:8c:00.0
cat >"$tmp/tree.json" <<'JSON'
{"instance": {"machine-type": "projects/1/machineTypes/a3-highgpu-8g", "zone": "projects/1/zones/us-east4-a",
  "hostname": "a3-0.c.test.internal", "preempted": "FALSE", "maintenance-event": "NONE",
  "attributes": {"physical_host": "/c1/r1/h1"},
  "network-interfaces": {
    "0": {"mac": "42:01:0a:00:00:02", "ip": "10.0.0.2", "network": "projects/1/networks/host"},
    "1": {"mac": "42:01:0a:03:00:02", "ip": "10.3.0.2", "network": "projects/1/networks/gpu2"},
    "2": {"mac": "42:01:0a:01:00:02", "ip": "10.1.0.2", "network": "projects/1/networks/gpu0"},
    "3": {"mac": "42:01:0a:04:00:02", "ip": "10.4.0.2", "network": "projects/1/networks/gpu3"},
    "4": {"mac": "42:01:0a:02:00:02", "ip": "10.2.0.2", "network": "projects/1/networks/gpu1"}}}}
JSON
/usr/bin/python3 "$WEFT_TOPDIR/tests/cli/gcp-fake-metadata.py" --data "$tmp/tree.json" \
  --port-file "$tmp/port" 2>"$tmp/server.log" &
server=$!
i=0
while [ ! -s "$tmp/port" ]; do
  i=$((i + 1))
  [ $i -lt 200 ] || { echo "FAIL: fake metadata server did not start"; cat "$tmp/server.log"; exit 1; }
  sleep 0.05
done
export GCE_METADATA_HOST="127.0.0.1:$(cat "$tmp/port")" WEFT_GCP_SYSROOT="$root"
unset NCCL_ALGO NCCL_NET NCCL_SOCKET_IFNAME 2>/dev/null || true

fail() { echo "FAIL: $1"; cat "$2"; exit 1; }
expect() { grep -qF -- "$2" "$1" || fail "$1 lacks: $2" "$1"; }

# Two VMs: the TCPX preset, with this VM's NIC names, and the user's NCCL_ALGO kept.
NCCL_ALGO=Tree timeout 60 "$weftrun" --dry-run -H vm-a:8,vm-b:8 -np 16 --topology "$topo" \
  -x NCCL_PROTO=LL128 true >"$tmp/out" 2>"$tmp/err" || fail "weftrun --dry-run failed" "$tmp/err"
expect "$tmp/out" "# nccl preset a3-highgpu-8g (machine type a3-highgpu-8g), reserved cpus 8-35,112-139,60-87,164-191"
expect "$tmp/out" "# env NCCL_NET=GPUDirectTCPX_v7  (preset a3-highgpu-8g)"
expect "$tmp/out" "# env NCCL_SOCKET_IFNAME=enp0s12  (preset a3-highgpu-8g)"
expect "$tmp/out" "# env NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0  (preset a3-highgpu-8g)"
expect "$tmp/out" "# env NCCL_GPUDIRECTTCPX_TX_BINDINGS=enp6s0:8-21,112-125;enp12s0:8-21,112-125;enp134s0:60-73,164-177;enp140s0:60-73,164-177  (preset a3-highgpu-8g)"
if grep -q "^# env NCCL_ALGO=Ring\|^# env NCCL_PROTO=Simple" "$tmp/out"; then fail "the user's NCCL_ALGO/NCCL_PROTO were overridden" "$tmp/out"; fi
# ... and shown as the user's, over the preset's
expect "$tmp/out" "# env NCCL_ALGO=Tree  (user, overrides preset a3-highgpu-8g)"
expect "$tmp/out" "# env NCCL_PROTO=LL128  (-x, overrides preset a3-highgpu-8g)"
expect "$tmp/err" "libnccl-net.so is missing"
# Every rank's processors avoid the TCPX cores.
grep "rank .* cores " "$tmp/out" | sed 's/.* cores \([^ ]*\) .*/\1/' >"$tmp/cpus"
[ "$(wc -l <"$tmp/cpus")" = 16 ] || fail "16 rank lines expected" "$tmp/out"
/usr/bin/python3 - "$tmp/cpus" <<'PY' || fail "a rank is bound to a TCPX core" "$tmp/out"
import sys
def expand(s):
    out = set()
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
reserved = expand("8-35,112-139,60-87,164-191")
for line in open(sys.argv[1]):
    if expand(line.strip()) & reserved:
        sys.exit(1)
PY
# The plan JSON carries the same variables.
timeout 60 "$weftrun" --dry-run --json -H vm-a:8,vm-b:8 -np 16 --topology "$topo" true >"$tmp/json" 2>/dev/null
expect "$tmp/json" '"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "enp6s0,enp12s0,enp134s0,enp140s0"'

# One VM: auto applies nothing; --nccl-preset none applies nothing to two VMs either.
timeout 60 "$weftrun" --dry-run -np 8 --topology "$topo" true >"$tmp/one"
if grep -q "nccl preset" "$tmp/one"; then fail "a preset on a single-VM job" "$tmp/one"; fi
grep -q "cores 0-12,104-116 " "$tmp/one" || fail "single-VM ranks should use every core" "$tmp/one"
timeout 60 "$weftrun" --dry-run --nccl-preset none -H vm-a:8,vm-b:8 -np 16 --topology "$topo" true >"$tmp/none"
if grep -q "nccl preset" "$tmp/none"; then fail "a preset with --nccl-preset none" "$tmp/none"; fi
echo "PASS: weftrun --dry-run on a3-highgpu-8g: TCPX variables, NIC names by MAC, TCPX cores reserved"
