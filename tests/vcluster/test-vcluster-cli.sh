#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-vcluster's command line: bad arguments give a clear message and exit 2
# (bad --slurm options too, leaving nothing behind), a cluster that is not up
# exit 4 (rsh 255), not root exit 3 (also from a source tree other users
# cannot read); --prefix after the command, but never out of the program run
# or exec run; per-node topologies set slots and WEFT_TOPOLOGY; link down
# makes a node unreachable; netem works or says that the kernel lacks it
# (exit 6).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
err=$tmp/err

# expect CODE PATTERN ARGS...: weft-vcluster ARGS exits CODE and says PATTERN.
expect() {
  want=$1; pat=$2; shift 2
  rc=0
  "$vc" "$@" >/dev/null 2>"$err" || rc=$?
  [ $rc -eq "$want" ] || fail "weft-vcluster $* exited $rc, not $want: $(cat "$err")"
  grep -q -- "$pat" "$err" || fail "weft-vcluster $* did not say '$pat': $(cat "$err")"
}

"$vc" --help | grep -q '^usage: weft-vcluster' || fail "--help prints no usage"
expect 2 'usage:'
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown option '--bogus'" --bogus status
expect 2 "bad prefix" --prefix 'a/b' status
expect 2 'how many nodes' --prefix "$prefix" up
expect 2 "node count 'four' is not a number" --prefix "$prefix" up four
expect 2 'not in 1..250' --prefix "$prefix" up 0
expect 2 "'--slots' needs\|--slots 'x' is not a number" --prefix "$prefix" up 2 --slots x
expect 2 'must be a /24 inside 198.18.0.0/15' --prefix "$prefix" up 2 --subnet 10.0.0.0/24
expect 2 "cannot read '/nonexistent.xml'" --prefix "$prefix" up 2 --topology /nonexistent.xml
expect 2 "'a9-nonesuch' is neither a file nor a topology name in .*weft-topo --list-topologies" \
  --prefix "$prefix" up 2 --topology a9-nonesuch
expect 2 'there is no vnode5 in a 2-node cluster' --prefix "$prefix" up 2 --topology "vnode5=$WEFT_TOPDIR/COPYING"
expect 2 'is not an hwloc XML topology' --prefix "$prefix" up 2 --topology "$WEFT_TOPDIR/COPYING"
expect 4 'is not up' --prefix "$prefix" status
expect 4 'is not up' --prefix "$prefix" kill vnode0
expect 255 'is not up' --prefix "$prefix" rsh vnode0 true
expect 2 'usage:' --prefix "$prefix" run
# --prefix after the command names the cluster too (not the default one).
expect 4 "cluster '$prefix' is not up" run --prefix "$prefix" -- true
expect 4 "cluster '$prefix' is not up" status --prefix="$prefix"
expect 4 "cluster '$prefix' is not up" kill --prefix "$prefix" vnode0
expect 2 '--prefix needs a value' status --prefix
expect 2 'add --slurm' --prefix "$prefix" up 2 --gpus-per-node 2
expect 2 "'x' is not a number" --prefix "$prefix" up 2 --slurm --gpus-per-node x
expect 2 'not in 0..64' --prefix "$prefix" up 2 --slurm --gpus-per-node 65
expect 2 'has 8 NVIDIA GPUs' --prefix "$prefix" up 2 --slurm --gpus-per-node 2 \
  --topology "$topos/a3-highgpu-8g.xml"
for f in "${WEFT_VCLUSTER_STATE:-/run/weft-vcluster}/$prefix" "${WEFT_VCLUSTER_STATE:-/run/weft-vcluster}/.$prefix.lock"; do
  [ ! -e "$f" ] || fail "a refused up left $f behind"
done

need_root
# As another user: the script is copied where that user may read it, since the
# source tree may not be (a clone under /root), and run from /.
if command -v setpriv >/dev/null 2>&1; then
  pub=$(mktemp -d /tmp/weft-vcluster-cli.XXXXXX)
  at_exit 'rm -rf "$pub"'
  cp "$vc" "$pub/weft-vcluster"
  chmod 755 "$pub" "$pub/weft-vcluster"
  rc=0
  (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh "$pub/weft-vcluster" \
     --prefix "$prefix" up 2) >/dev/null 2>"$err" || rc=$?
  [ $rc -eq 3 ] || fail "up as a user exited $rc, not 3: $(cat "$err")"
  grep -q 'needs root' "$err" || fail "up as a user did not say it needs root: $(cat "$err")"
else
  echo "note: setpriv is not installed: up as another user is not tried"
fi

# Topologies: GPU count -> slots; the node's processes see WEFT_TOPOLOGY.
topos=$WEFT_TOPDIR/share/weft/topologies
xml() {
  cat >"$1" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0">
    <object type="PCIDev" pci_busid="0000:04:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1"/>
    <object type="PCIDev" pci_busid="0000:05:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1"/>
    <object type="PCIDev" pci_busid="0000:06:00.0" pci_type="0300 [10de:2330] [10de:16c1] a1"/>
    <object type="PCIDev" pci_busid="0000:00:0c.0" pci_type="0200 [1ae0:0042] [1ae0:0058] 00"/>
  </object>
</topology>
XML
}
x3=$tmp/x3.xml; xml "$x3"
vc_up 3 --topology "vnode1=$x3" --slots 4
grep -qx 'vnode0 slots=4' "$hostfile" || fail "vnode0 should have --slots 4: $(cat "$hostfile")"
grep -qx 'vnode1 slots=3' "$hostfile" || fail "vnode1 should have its 3 GPUs as slots: $(cat "$hostfile")"
t=$("$vc" --prefix "$prefix" rsh vnode1 'echo $WEFT_TOPOLOGY')
[ "$t" = "$x3" ] || fail "vnode1 sees WEFT_TOPOLOGY='$t', not '$x3'"
t=$(WEFT_TOPOLOGY=/leak "$vc" --prefix "$prefix" exec vnode0 sh -c 'echo ${WEFT_TOPOLOGY-unset}')
[ "$t" = unset ] || fail "vnode0 has no topology but sees WEFT_TOPOLOGY='$t'"
if [ -f "$topos/a3-highgpu-8g.xml" ]; then
  "$vc" --prefix "$prefix" up 3 --topology "$topos/a3-highgpu-8g.xml" >/dev/null 2>&1 || fail "up with a3-highgpu-8g.xml failed"
  [ "$(grep -c 'slots=8$' "$hostfile")" -eq 3 ] || fail "a3-highgpu-8g should give 8 slots: $(cat "$hostfile")"
  # By name, as weftrun and weft-topo take it.
  "$vc" --prefix "$prefix" up 3 --topology vnode2=g2-standard-48 >/dev/null 2>"$err" || fail "up with a name: $(cat "$err")"
  grep -qx 'vnode2 slots=4' "$hostfile" || fail "g2-standard-48 by name should give 4 slots: $(cat "$hostfile")"
  t=$("$vc" --prefix "$prefix" rsh vnode2 'echo $WEFT_TOPOLOGY')
  [ "$t" -ef "$topos/g2-standard-48.xml" ] || fail "vnode2 sees WEFT_TOPOLOGY='$t', not g2-standard-48.xml"
fi

# rsh: ssh-like options are skipped, the command words are joined, the
# caller's environment stays behind.
t=$(WEFT_SECRET=1 "$vc" --prefix "$prefix" rsh -x -o BatchMode=yes root@vnode2 echo '$(hostname)' '${WEFT_SECRET-clean}')
[ "$t" = "vnode2 clean" ] || fail "rsh gave '$t', not 'vnode2 clean'"
t=$("$vc" --prefix "$prefix" rsh vnode2 'exit 7' || echo "rc=$?")
[ "$t" = "rc=7" ] || fail "rsh did not pass on the command's exit status: '$t'"
expect 255 'no such node' --prefix "$prefix" rsh vnode9 true
expect 4 "no node 'vnode9'" --prefix "$prefix" kill vnode9
expect 2 "neither 'down' nor 'up'" --prefix "$prefix" link vnode1 sideways

# link down: the node is unreachable for rsh but alive; link up: back.
"$vc" --prefix "$prefix" link vnode1 down
expect 255 'link is down' --prefix "$prefix" rsh vnode1 true
"$vc" --prefix "$prefix" status | grep -q '^vnode1 .* link-down ' || fail "status does not show vnode1 link-down"
"$vc" --prefix "$prefix" link vnode1 up
"$vc" --prefix "$prefix" rsh vnode1 true || fail "rsh after link up failed"

# netem: works, or exit 6 with a clear reason.
rc=0
"$vc" --prefix "$prefix" netem vnode1 delay 1ms 2>"$err" || rc=$?
case $rc in
  0) "$vc" --prefix "$prefix" exec vnode1 tc qdisc show dev eth0 | grep -q netem || fail "netem did not show up"
     "$vc" --prefix "$prefix" netem vnode1 off ;;
  6) grep -q 'no netem' "$err" || fail "netem exit 6 without a reason: $(cat "$err")"
     echo "note: $(cat "$err")" ;;
  *) fail "netem exited $rc: $(cat "$err")" ;;
esac

# run/env: what a plain mpirun needs.
e=$("$vc" --prefix "$prefix" env)
for v in OMPI_MCA_plm_rsh_agent OMPI_MCA_orte_default_hostfile OMPI_MCA_btl_tcp_if_include \
         OMPI_MCA_oob_tcp_if_include WEFT_VCLUSTER_HOSTFILE; do
  printf '%s\n' "$e" | grep -q "^export $v=" || fail "env does not set $v"
done
h=$("$vc" --prefix "$prefix" run -- sh -c 'echo $(hostname) $WEFT_VCLUSTER_HOSTFILE')
[ "$h" = "vnode0 $hostfile" ] || fail "run gave '$h', not 'vnode0 $hostfile'"
# Global options after the command, before what it runs; the program's own
# --prefix stays its own.
h=$("$vc" run --prefix "$prefix" -- sh -c 'echo $(hostname) $WEFT_VCLUSTER_PREFIX')
[ "$h" = "vnode0 $prefix" ] || fail "run --prefix P -- gave '$h', not 'vnode0 $prefix'"
h=$("$vc" run --prefix="$prefix" echo --prefix x)
[ "$h" = "--prefix x" ] || fail "run took the program's --prefix: '$h'"
h=$("$vc" exec --prefix "$prefix" vnode1 sh -c 'echo $(hostname)')
[ "$h" = vnode1 ] || fail "exec --prefix P vnode1 gave '$h'"
h=$("$vc" --prefix "$prefix" exec vnode1 echo --prefix y)
[ "$h" = "--prefix y" ] || fail "exec took the program's --prefix: '$h'"
"$vc" status --prefix "$prefix" | grep -q "^cluster $prefix: 3 nodes" || fail "status --prefix P"
"$vc" --prefix "$prefix" nodes --help | grep -q '^usage: weft-vcluster' || fail "nodes --help gives no usage"
echo "ok"
