#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A plain Open MPI mpirun, through "weft-vcluster run", runs mpi-hello across
# 3 nodes: the ranks report 3 different hostnames and the all-reduce is right;
# each rank sees its node's WEFT_TOPOLOGY.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
need_mpirun
# vnode1 has a topology of its own (2 GPUs: 2 slots); its ranks must see it.
out=$tmp/out
xml=$tmp/vnode1.xml
cat >"$xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0">
    <object type="PCIDev" pci_busid="0000:04:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1"/>
    <object type="PCIDev" pci_busid="0000:05:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1"/>
  </object>
</topology>
XML
vc_up 3 --slots 2 --topology "vnode1=$xml"
rc=0
timeout -k 5 60 "$vc" --prefix "$prefix" run -- mpirun -np 6 --map-by node "$hello" >"$out" 2>&1 || rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "mpirun -np 6 over 3 nodes exited $rc"
hosts=$(sed -n 's/^rank [0-9]* of 6 on //p' "$out" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
[ "$hosts" = "vnode0=2 vnode1=2 vnode2=2 " ] ||
  fail "expected 2 ranks on each of vnode0, vnode1, vnode2; got '$hosts'"
grep -qx 'allreduce ok 6' "$out" || fail "no 'allreduce ok 6' from rank 0"

# Every rank sees its own node's WEFT_TOPOLOGY (through Open MPI's daemons).
rc=0
timeout -k 5 60 "$vc" --prefix "$prefix" run -- mpirun -np 3 --map-by node \
  sh -c 'echo "$(hostname) ${WEFT_TOPOLOGY:-none}"' >"$out" 2>"$out.err" || rc=$?
# stdout only: Open MPI 4.1 may warn on stderr that setpgid raced with the
# remote shell agent ("plm:rsh: Warning: setpgid(...) failed"), harmlessly.
cat "$out" "$out.err"
[ $rc -eq 0 ] || fail "mpirun of sh over 3 nodes exited $rc"
got=$(sort "$out" | tr '\n' ' ')
[ "$got" = "vnode0 none vnode1 $xml vnode2 none " ] ||
  fail "expected only vnode1 to see WEFT_TOPOLOGY=$xml; got '$got'"
echo "ok"
