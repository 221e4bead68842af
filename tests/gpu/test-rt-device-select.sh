#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Each rank on its planned GPU where CUDA numbers the GPUs otherwise than PCI
# order, under the CUDA/NCCL stand-in (not a GPU). WEFT_GPU is the GPU's index
# in PCI order and WEFT_GPU_PCI its address (as weft-rank sets them); the
# stand-in's 4 devices are at buses 54, 04, 44, 14 in CUDA's default order
# (FASTEST_FIRST), so that PCI index G is physical device 1, 3, 2, 0 and the
# index taken as CUDA's ordinal would be another GPU. Each planned run checks
# weft_device() against the address (cudaDeviceGetPCIBusId, in the program)
# and the device each rank's context was made on (the stand-in's log), after
# a device all-reduce. Cases: CUDA's default order, PCI_BUS_ID (the index is
# trusted, no driver call), UUIDs in CUDA_VISIBLE_DEVICES in another order,
# UUID prefixes, a MIG instance; refusals on every rank, none left waiting: a
# GPU the UUIDs leave out, WEFT_GPU without WEFT_GPU_PCI; no driver: device
# -1; and through weftrun on gpu-numa-interleaved (the same buses) with the
# user's UUIDs and with CUDA_DEVICE_ORDER=FASTEST_FIRST. test-rt-device-select.c
# has the program.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
bin=$WEFT_BUILDDIR/tests/gpu/test-rt-device-select
bad=0
unset CUDA_DEVICE_ORDER WEFT_GPU_PCI
WEFT_STANDIN_DEVICES=4 WEFT_STANDIN_PCI_BUS=54,04,44,14
export WEFT_STANDIN_DEVICES WEFT_STANDIN_PCI_BUS
# the buses in PCI order (WEFT_GPU's numbering, gpu-numa-interleaved's GPUs),
# and "RANK PHYSICAL," where rank r has GPU r: the stand-in's device at its bus
SELECT_PCI=04,14,44,54
export SELECT_PCI
want_all="0 1,1 3,2 2,3 0,"
# uuid P: the stand-in's UUID of physical device P (tests/standin/pci.h)
uuid() { printf 'GPU-575349%02x-0000-0000-0000-0000000000%02x' "$1" "$1"; }

# WEFT_GPU = the local rank, WEFT_GPU_PCI its address (none with SELECT_NO_PCI)
cat >"$tmp/as-planned" <<'SH'
#!/bin/sh
r=$OMPI_COMM_WORLD_LOCAL_RANK
WEFT_GPU=$r
export WEFT_GPU
if [ -z "${SELECT_NO_PCI:-}" ]; then
  WEFT_GPU_PCI=0000:$(echo "$SELECT_PCI" | cut -d, -f$((r + 1))):00.0
  export WEFT_GPU_PCI
fi
exec "$@"
SH
chmod +x "$tmp/as-planned"

# "RANK PHYSICAL," for each context the stand-in made, by rank
contexts()
{
  sed -n 's/^pid=[0-9]* rank=\([0-9]*\) context device=[0-9]* physical=\([0-9]*\) .*/\1 \2/p' "$1" |
    sort -n | tr '\n' ','
}

# verdict NAME OUT LOG WANT: "ok: planned", no stand-in rule broken, the contexts WANT
# (one per rank: none made at weft_init on another device)
verdict()
{
  if grep -q '^ok: planned' "$2" && ! grep -q 'weft-standin:' "$2" &&
     [ "$(contexts "$3")" = "$4" ]; then
    echo "ok: $1"
  else
    cat "$2"
    echo "FAIL: $1: contexts (rank physical) '$(contexts "$3")', want '$4'"
    bad=1
  fi
}

# planned NAME NP WANT: each rank on its planned GPU, under plain mpirun
planned()
{
  rm -f "$tmp/$1.log"
  WEFT_STANDIN_LOG=$tmp/$1.log standin_mpirun "$2" "$tmp/as-planned" "$bin" planned \
    >"$tmp/$1" 2>&1 || true
  verdict "$1" "$tmp/$1" "$tmp/$1.log" "$3"
}

# refused NAME NP TEXT: weft_init fails on every rank, the line says TEXT, and
# asking the driver made no context
refused()
{
  rm -f "$tmp/$1.log"
  if WEFT_INIT_TIMEOUT=30 WEFT_STANDIN_LOG=$tmp/$1.log standin_mpirun "$2" "$tmp/as-planned" \
       "$bin" refused >"$tmp/$1" 2>&1 &&
     grep -q '^ok: refused' "$tmp/$1" && grep -qF "$3" "$tmp/$1" &&
     ! grep -q 'weft-standin:' "$tmp/$1" && [ -z "$(contexts "$tmp/$1.log" 2>/dev/null)" ]; then
    echo "ok: $1"
  else
    cat "$tmp/$1"
    echo "FAIL: $1: want weft_init refused on every rank with '$3', and no context" \
      "(rank physical: '$(contexts "$tmp/$1.log" 2>/dev/null)')"
    bad=1
  fi
}

# CUDA's default order (FASTEST_FIRST): the driver says which device is where
planned fastest-first 4 "$want_all"
# PCI_BUS_ID and no list: the index is CUDA's numbering, nothing asked
CUDA_DEVICE_ORDER=PCI_BUS_ID planned pci-bus-id 4 "$want_all"
# the user's UUIDs, in an order of their own
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$(uuid 2),$(uuid 0),$(uuid 3),$(uuid 1)" \
  planned uuid 4 "$want_all"
# UUID prefixes (CUDA takes as much of one as names one GPU), GPU 1 listed first
CUDA_VISIBLE_DEVICES=GPU-57534903,GPU-57534901 planned uuid-prefix 2 "0 1,1 3,"
# a MIG instance of GPU 0 (physical 1): CUDA shows that instance alone
CUDA_VISIBLE_DEVICES=MIG-57534d01-0000-0000-0000-000000000001 planned mig 1 "0 1,"
# GPU 1 (bus 14) is not among the UUIDs: both ranks refuse, rank 1 says why
line="rank 1: this rank's GPU 1 at 0000:14:00.0 (WEFT_GPU, WEFT_GPU_PCI) is not one CUDA sees"
line="$line with CUDA_VISIBLE_DEVICES=$(uuid 1),$(uuid 2) CUDA_DEVICE_ORDER=PCI_BUS_ID"
line="$line (CUDA sees 2 device(s): 0 at 0000:04:00.0, 1 at 0000:44:00.0); list it in"
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$(uuid 1),$(uuid 2)" refused unseen 2 "$line"
# WEFT_GPU by hand, without its address, in CUDA's default order: refused
SELECT_NO_PCI=1 refused by-hand 2 "WEFT_GPU=1 is a GPU's index in PCI order, but CUDA may number \
the GPUs otherwise here (CUDA_DEVICE_ORDER is unset: CUDA's default, FASTEST_FIRST), and without"
SELECT_NO_PCI=1 CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$(uuid 1),$(uuid 3)" \
  refused by-hand-uuid 2 "(CUDA_VISIBLE_DEVICES names a GPU by UUID: $(uuid 1)), and without"
# no driver: no device CUDA could use, -1, and weft_init still comes up
if WEFT_STANDIN_NO_DRIVER=1 standin_mpirun 2 "$tmp/as-planned" "$bin" nodevice \
     >"$tmp/nodriver" 2>&1 && grep -q '^ok: nodevice' "$tmp/nodriver"; then
  echo "ok: no driver"
else
  cat "$tmp/nodriver"; echo "FAIL: no driver"; bad=1
fi

# Through weftrun: WEFT_GPU and WEFT_GPU_PCI from the topology's placement
# (GPU r for rank r), the user's CUDA_VISIBLE_DEVICES of UUIDs kept as given
local_jobs
topo=$topos/gpu-numa-interleaved.xml
# weftrun_planned NAME WANT [weftrun options]
weftrun_planned()
{
  name=$1 want=$2
  shift 2
  rm -f "$tmp/$name.log"
  WEFT_STANDIN_LOG=$tmp/$name.log timeout 120 "$weftrun" -np 4 --topology "$topo" "$@" \
    "$bin" planned >"$tmp/$name" 2>&1 || true
  verdict "$name" "$tmp/$name" "$tmp/$name.log" "$want"
}
CUDA_VISIBLE_DEVICES="$(uuid 3),$(uuid 2),$(uuid 1),$(uuid 0)" \
  weftrun_planned weftrun-uuid "$want_all"
weftrun_planned weftrun-fastest-first "$want_all" -x CUDA_DEVICE_ORDER=FASTEST_FIRST
[ $bad -eq 0 ] || exit 1
echo "PASS: each rank on its planned GPU under the stand-in (not a GPU)"
