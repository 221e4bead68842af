#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch DistributedDataParallel (examples/train_ddp.py, gloo) under
# "salloc -N3 -n3 weftrun" on the Slurm virtual cluster: one rank per node,
# rendezvous at the MASTER_ADDR weftrun chose on the cluster's network,
# gloo on the interface weftrun gives it (GLOO_SOCKET_IFNAME): a process group
# of 3 and a loss that falls. (That the ranks' gradients are averaged, the same
# loss on any number of ranks, is tests/launch/test-weftrun-train-ddp.sh's.)
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
py=/usr/bin/python3
$py -c 'import torch.distributed' 2>/dev/null || skip "torch is not installed for $py (Debian: python3-torch)"
vc_up_slurm 3 --slots 2
script="$tmp/$uniq-train_ddp.py"
cp "$WEFT_TOPDIR/examples/train_ddp.py" "$script"
args="--epochs 3 --samples 1536 --batch 192"

rc=0
on vnode0 salloc -N3 -n3 "$weftrun" --bind-to none --mca mpi_yield_when_idle 1 \
  $py "$script" $args >"$tmp/three" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q '^train_ddp: 3 ranks, backend gloo, master 198\.1[89]\.[0-9.]*:[0-9]*$' "$tmp/three" ||
  { cat "$tmp/three"; fail "salloc -N3 -n3 weftrun train_ddp.py: exit $rc"; }
grep '^epoch' "$tmp/three" >"$tmp/got"
[ "$(wc -l <"$tmp/got")" -eq 3 ] || { cat "$tmp/three"; fail "not 3 epoch lines"; }
awk 'NR == 1 { first = $4 } END { exit !($4 < 0.95 * first) }' "$tmp/got" ||
  { cat "$tmp/three"; fail "the loss did not fall"; }
echo "ok train_ddp.py over 3 Slurm nodes: $(tr '\n' ' ' <"$tmp/got")"
nothing_left || fail "processes left"
