#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# contrib/gather-topology: an lstopo XML goes in with a host name, serial
# numbers, UUIDs and MAC addresses, and comes out without them, still loading
# in weft-topo with the same GPUs and NICs. Then the same for this machine.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
gather="$WEFT_TOPDIR/contrib/gather-topology"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
a3="$topos/a3-highgpu-8g.xml"
for tool in python3 lstopo; do
  command -v $tool >/dev/null 2>&1 || skip "no $tool"
done
fail=0

# A "captured" file with things that identify a machine.
sed -e 's|<info name="HostName" value="a3-highgpu-8g"/>|<info name="HostName" value="secret-host-17"/><info name="DMIProductSerial" value="SERIAL-4711"/><info name="DMIProductUUID" value="UUID-4711"/>|' \
  "$a3" >"$tmp/in.xml"
grep -q secret-host-17 "$tmp/in.xml"
timeout 120 "$gather" --input "$tmp/in.xml" --name a3-test -o "$tmp/out.xml" >/dev/null
for secret in secret-host-17 SERIAL-4711 UUID-4711 'name="NVIDIAUUID"' 'name="Address"' 42:01:0a GPU-0000; do
  if grep -q -e "$secret" "$tmp/out.xml"; then
    echo "FAIL: $secret is still in the gathered file"
    fail=1
  fi
done
grep -q '<info name="HostName" value="a3-test"/>' "$tmp/out.xml" || { echo "FAIL: no HostName a3-test"; fail=1; }
tail -n 4 "$tmp/out.xml" | grep -q "Scrubbed: .*DMIProductSerial" || { echo "FAIL: no closing comment"; fail=1; }
if [ -x "$topo" ]; then
  timeout 30 "$topo" --topology "$tmp/out.xml" >"$tmp/report"
  grep -q "2 packages, 2 NUMA nodes, 104 cores, 208 processors, 8 GPUs, 5 NICs" "$tmp/report" ||
    { echo "FAIL: the gathered file does not describe the same machine:"; head -3 "$tmp/report"; fail=1; }
  grep -q "enp140s0" "$tmp/report" || { echo "FAIL: NIC names lost"; fail=1; }
fi

# This machine: whatever it is, the result loads and says who captured it.
timeout 120 "$gather" --name live-test -o "$tmp/live.xml" >/dev/null
grep -q '<info name="HostName" value="live-test"/>' "$tmp/live.xml" || { echo "FAIL: live HostName"; fail=1; }
if grep -q "\"$(hostname)\"" "$tmp/live.xml"; then
  echo "FAIL: the host name $(hostname) is in the gathered file"
  fail=1
fi
if [ -x "$topo" ]; then
  timeout 30 "$topo" --topology "$tmp/live.xml" >/dev/null || { echo "FAIL: weft-topo cannot load it"; fail=1; }
fi
[ $fail = 0 ] && echo "ok gather-topology"
exit $fail
