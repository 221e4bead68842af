#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun across a 3-node virtual cluster with a different topology per node
# (a3-highgpu-8g, a2-highgpu-8g, g2-standard-48): hosts from Open MPI's default
# hostfile, every rank's NODE_RANK, GPU, CUDA_VISIBLE_DEVICES and network
# variables; a rank that fails on vnode2 ends the job with its code; a vnode
# that dies ends it with 75; an mpi4py job over the nodes; nothing left
# running anywhere. Exit 77 when namespaces cannot be made here.
set -eu
: "${WEFT_BUILDDIR:?}" "${WEFT_TOPDIR:?}"
weftrun="$WEFT_BUILDDIR/src/weftrun/weftrun"
vc="$WEFT_TOPDIR/contrib/vcluster/weft-vcluster"
topos="$WEFT_TOPDIR/share/weft/topologies"
[ -x "$vc" ] || { echo "SKIP: $vc not found"; exit 77; }
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
prefix="wr$$"
tmp=$(mktemp -d)
uniq="wfv$$x$(date +%N)"
cp "$(command -v sleep)" "$tmp/$uniq-sleep"
cleanup() {
  "$vc" --prefix "$prefix" down >/dev/null 2>&1 || true
  pkill -KILL -f "$uniq" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail=0

up() {
  set +e
  "$vc" --prefix "$prefix" up 3 --topology "vnode0=$topos/a3-highgpu-8g.xml" \
    --topology "vnode1=$topos/a2-highgpu-8g.xml" --topology "vnode2=$topos/g2-standard-48.xml" \
    >"$tmp/up.out" 2>"$tmp/up.err"
  rc=$?
  set -e
  if [ $rc = 3 ]; then
    echo "SKIP: weft-vcluster cannot make namespaces here: $(cat "$tmp/up.err")"
    exit 77
  fi
  [ $rc = 0 ] || { echo "FAIL: weft-vcluster up: $(cat "$tmp/up.err")"; exit 1; }
}
nothing_left() {
  i=0
  while pgrep -f "$uniq" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 50 ] || { echo "FAIL: left running:"; pgrep -af "$uniq"; return 1; }
    sleep 0.1
  done
}
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- "$weftrun" "$@"; }

up
cat >"$tmp/$uniq-check" <<'EOS'
#!/bin/sh
echo "R $RANK $(hostname) $NODE_RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT" \
     "${NCCL_SOCKET_IFNAME:-none} ${WEFT_GPU:-none} ${CUDA_VISIBLE_DEVICES:-none} ${CUDA_DEVICE_ORDER:-none}"
EOS
chmod +x "$tmp/$uniq-check"

# 2 ranks per node: ranks 0-1 on vnode0, 2-3 on vnode1, 4-5 on vnode2
if vrun -N 2 --report-bindings "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err"; then
  if ! awk '/^R / {
        n++; want = int($2 / 2)
        if ($3 != "vnode" want || $4 != want || $5 != $2 % 2 || $6 != 6 || $7 !~ /^198\.1[89]\./ ||
            $9 == "none" || $10 == "none" || $12 != "PCI_BUS_ID") { print "bad: " $0; bad = 1 }
        split($11, d, ","); if (d[$5 + 1] != $10) { print "GPU not at LOCAL_RANK: " $0; bad = 1 }
        port[$8] = 1; addr[$7] = 1 }
      END { np = 0; for (p in port) np++; na = 0; for (a in addr) na++
            if (n != 6 || np != 1 || na != 1) { print "ranks " n ", ports " np ", addrs " na; bad = 1 }
            exit bad }' "$tmp/out"; then
    echo "FAIL: rank environment over 3 vnodes:"; cat "$tmp/out"; fail=1
  fi
  # the g2 node has 4 GPUs (CUDA_VISIBLE_DEVICES of 4), the others 8
  grep -q '^R 4 vnode2 .* [0-3],[0-9],[0-9],[0-9] PCI_BUS_ID$' "$tmp/out" ||
    { echo "FAIL: vnode2 (g2-standard-48) GPUs:"; cat "$tmp/out"; fail=1; }
  n=$(grep -c '^\[weft\] vnode[012] rank [0-5] (local [01]): GPU ' "$tmp/err" || true)
  [ "$n" = 6 ] || { echo "FAIL: --report-bindings over vnodes: $n lines"; cat "$tmp/err"; fail=1; }
  echo "ok 6 ranks over 3 vnodes"
else
  echo "FAIL: weftrun over vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
fi

# a rank on vnode2 exits 3: the job ends with 3, named
set +e
vrun -N 1 sh -c "if [ \$RANK = 2 ]; then exit 3; fi; exec $tmp/$uniq-sleep 30" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc != 3 ] || ! grep -q '^weftrun: job failed: rank 2 host vnode2 gpu 0 (0000:[0-9a-f:.]*): exited with status 3 (exit 3)$' "$tmp/err"; then
  echo "FAIL: rank exit on vnode2: exit $rc"; cat "$tmp/err"; fail=1
else
  echo "ok rank 2 on vnode2 exits 3"
fi
nothing_left || fail=1

# vnode1 dies while the job runs: 75, naming the host, within seconds
( sleep 2; "$vc" --prefix "$prefix" kill vnode1 >/dev/null 2>&1 ) &
t0=$(date +%s)
set +e
vrun -N 1 "$tmp/$uniq-sleep" 30 >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
dt=$(($(date +%s) - t0))
wait
if [ $rc != 75 ] || [ $dt -gt 20 ] || ! grep -q '^weftrun: job failed: host vnode1 lost (rank 1)' "$tmp/err"; then
  echo "FAIL: vnode1 killed: exit $rc after ${dt}s"; cat "$tmp/err"; fail=1
else
  echo "ok vnode1 killed: 75 after ${dt}s"
fi
nothing_left || fail=1

# mpi4py across the nodes (vnode1 restarted)
up
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
