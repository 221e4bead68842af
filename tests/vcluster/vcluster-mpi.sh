#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A plain Open MPI mpirun, through "weft-vcluster run", runs mpi-hello across
# 3 nodes: the ranks report 3 different hostnames and the all-reduce is right.
set -eu
. "${WEFT_TOPDIR:-$(dirname "$0")/../..}/tests/vcluster/vcluster-lib.sh"
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun on PATH"; exit 77; }
vc_up 3 --slots 2

out=$(mktemp)
trap 'rm -f "$out"; vc_cleanup' EXIT
rc=0
timeout -k 5 60 "$vc" --prefix "$prefix" run -- mpirun -np 6 --map-by node "$hello" >"$out" 2>&1 || rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "mpirun -np 6 over 3 nodes exited $rc"
hosts=$(sed -n 's/^rank [0-9]* of 6 on //p' "$out" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
[ "$hosts" = "vnode0=2 vnode1=2 vnode2=2 " ] ||
  fail "expected 2 ranks on each of vnode0, vnode1, vnode2; got '$hosts'"
grep -qx 'allreduce ok 6' "$out" || fail "no 'allreduce ok 6' from rank 0"
echo "ok"
