#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Real programs under weftrun over a 3-node virtual cluster, one rank per
# vnode: an mpi4py script, a PyTorch DDP script (gloo) that reads only the
# torchrun variables, and LAMMPS. Exit 77 when namespaces cannot be made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-vc-lib.sh"
up
# mpi4py across the nodes
if /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
  if vrun -N 1 --bind-to none /usr/bin/python3 "$WEFT_TOPDIR/tests/launch/weftrun-mpi4py.py" \
      >"$tmp/out" 2>"$tmp/err" && grep -q "^mpi4py ok: 3 ranks, sum 6, hosts \['vnode0', 'vnode1', 'vnode2'\]" "$tmp/out"; then
    echo "ok mpi4py over 3 vnodes"
  else
    echo "FAIL: mpi4py over vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
fi
# PyTorch DDP (gloo) reading only the torchrun variables, one rank per vnode
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
  if vrun -N 1 --bind-to none /usr/bin/python3 "$WEFT_TOPDIR/tests/launch/weftrun-ddp.py" \
      >"$tmp/out" 2>"$tmp/err" && grep -q "^ddp ok: 3 ranks, local rank 0, master 198\.1[89]\." "$tmp/out"; then
    echo "ok DDP over 3 vnodes: $(cat "$tmp/out")"
  else
    echo "FAIL: DDP over vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
fi
# LAMMPS, one rank per vnode
if command -v lmp >/dev/null 2>&1; then
  if (cd "$tmp" && vrun -N 1 --bind-to none -x OMP_NUM_THREADS=1 lmp -in "$WEFT_TOPDIR/tests/launch/weftrun-lj.in" -log none) \
      >"$tmp/out" 2>"$tmp/err" && grep -q 'Loop time of .* on 3 procs' "$tmp/out"; then
    echo "ok LAMMPS over 3 vnodes"
  else
    echo "FAIL: LAMMPS over vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
fi
nothing_left || fail=1
exit $fail
