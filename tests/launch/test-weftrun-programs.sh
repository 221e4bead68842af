#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Real programs under weftrun on this host: an mpi4py script, a PyTorch DDP
# script (gloo, CPU) that reads only the torchrun variables, and LAMMPS on a
# tiny LJ melt. Each part is skipped (with a reason) when its program is not
# installed; the test skips when none is.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs  # this host alone, whatever allocation or default hostfile the machine has
py=/usr/bin/python3
here="$WEFT_TOPDIR/tests/launch"
fail=0 ran=0
# 2 ranks, unbound, yielding when idle: these share 2 loaded cores in CI
wr() { timeout 120 "$weftrun" -np 2 --bind-to none --mca mpi_yield_when_idle 1 "$@"; }

if $py -c 'import mpi4py' 2>/dev/null; then
  ran=1
  if wr $py "$here/weftrun-mpi4py.py" >"$tmp/out" 2>"$tmp/err" && grep -q '^mpi4py ok: 2 ranks, sum 3' "$tmp/out"; then
    echo "ok $(cat "$tmp/out")"
  else
    echo "FAIL: mpi4py:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
else
  echo "skip mpi4py: not installed for $py"
fi

if $py -c 'import torch.distributed' 2>/dev/null; then
  ran=1
  # only what torchrun sets reaches the script's logic; Open MPI's variables are removed
  if wr -x PYTHONHASHSEED=0 sh -c 'unset $(env | sed -n "s/^\(OMPI_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\)=.*/\1/p"); exec "$0" "$@"' \
       $py "$here/weftrun-ddp.py" >"$tmp/out" 2>"$tmp/err" && grep -q '^ddp ok: 2 ranks' "$tmp/out"; then
    echo "ok $(cat "$tmp/out")"
  else
    echo "FAIL: PyTorch DDP:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
else
  echo "skip PyTorch DDP: torch not installed for $py"
fi

if command -v lmp >/dev/null 2>&1; then
  ran=1
  if (cd "$tmp" && wr -x OMP_NUM_THREADS=1 lmp -in "$here/weftrun-lj.in" -log none) >"$tmp/out" 2>"$tmp/err" &&
     grep -q 'Loop time of .* on 2 procs' "$tmp/out"; then
    echo "ok LAMMPS: $(grep 'Loop time' "$tmp/out")"
  else
    echo "FAIL: LAMMPS:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
else
  echo "skip LAMMPS: lmp not installed"
fi
nothing_left || fail=1
[ $ran = 1 ] || skip "none of mpi4py, torch, lmp is installed"
exit $fail
