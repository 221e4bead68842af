#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Rehearses tests/gpu/run.sh here, where there is no GPU, as far as it can go:
#
#   tests/gpu/dry-run.sh [DIR]      DIR: the folder prepare.sh made (default .gpu-carry)
#
# It runs run.sh in a mount namespace where this machine's Open MPI, PMIx,
# libevent, hwloc and hwloc's plugins are hidden (as on the bare GPU machine),
# three times:
#  1. as it is: the carried build and Open MPI must work (configure, mpi), and
#     the GPU steps are skipped (no GPU here);
#  2. WEFT_GPU_DRY_RUN=standin, on the CUDA/NCCL stand-in with one device: every
#     GPU step runs, and counts as skipped (the stand-in is not a GPU); a
#     failure is a fault of the script or of weft. weft-topo and weftrun see
#     this machine with one GPU added (WEFT_GPU_DRY_TOPOLOGY: lstopo's XML of
#     this machine and a PCI device of class 0302, at the stand-in's bus);
#     $OUT must hold the summary, the log, the figures and the archive;
#  3. with a fake nvidia-smi that lists a GPU, and this machine's CUDA
#     libraries hidden so that only the stand-in is there, but no dry run:
#     run.sh must refuse the stand-in.
# Each says how long it took (run.sh must end within 8 minutes on the GPU
# machine; tests/gpu/test-rt-gpu-run-killed.sh checks what it leaves when killed).
# Needs root (unshare, mount) and lstopo. Exit 0 when all three went as they should.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
carry=${1:-$top/.gpu-carry}
case "$carry" in /*) ;; *) carry=$(pwd)/$carry ;; esac
standin=${WEFT_STANDIN_DIR:-$top/_build/tests/standin/.libs}
[ -x "$carry/bin/test-rt-gpu" ] || { echo "dry-run: no $carry; run tests/gpu/prepare.sh first"; exit 1; }
[ -e "$standin/libnccl.so.2" ] || { echo "dry-run: no stand-in in $standin (WEFT_STANDIN_DIR)"; exit 1; }
command -v lstopo-no-graphics >/dev/null 2>&1 ||
  { echo "dry-run: no lstopo-no-graphics here (Debian's hwloc package)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# This machine with one GPU (an H200's PCI ids) at bus c1, where the stand-in's
# one device is (WEFT_STANDIN_PCI_BUS).
timeout 30 lstopo-no-graphics --of xml >"$tmp/here.xml" || { echo "dry-run: lstopo failed"; exit 1; }
awk 'done == 0 && /type="Bridge"/ && /depth="0"/ {
       print
       print "<object type=\"PCIDev\" gp_index=\"99999\" pci_busid=\"0000:c1:00.0\" pci_type=\"0302 [10de:2335] [10de:18be] a1\" pci_link_speed=\"0.000000\"/>"
       done = 1; next }
     { print }' "$tmp/here.xml" >"$tmp/one-gpu.xml"
grep -q 'pci_busid="0000:c1:00.0"' "$tmp/one-gpu.xml" ||
  { echo "dry-run: lstopo's XML of this machine has no PCI bridge to put a GPU under"; exit 1; }
mkdir -p "$tmp/empty" "$tmp/fakebin"
cat >"$tmp/fakebin/nvidia-smi" <<'SH'
#!/bin/sh
echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000) [fake, for a dry run]"
SH
chmod +x "$tmp/fakebin/nvidia-smi"
m=/usr/lib/x86_64-linux-gnu
cat >"$tmp/hide" <<SH
set -e
for d in $m/openmpi $m/pmix2 $m/hwloc /usr/share/openmpi /etc/openmpi; do
  [ -d "\$d" ] && mount --bind "$tmp/empty" "\$d"
done
for f in $m/libmpi.so.40 $m/libopen-pal.so.40 $m/libopen-rte.so.40 $m/libhwloc.so.15 \\
         $m/libevent_core-2.1.so.7 $m/libevent_pthreads-2.1.so.7 $m/libpmix.so.2 \\
         $m/libmunge.so.2 $m/libpciaccess.so.0 /usr/bin/orterun /usr/bin/orted; do
  [ -e "\$f" ] && mount --bind /dev/null "\$f"
done
if [ -n "\${HIDE_CUDA:-}" ]; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "\$d" ] && mount --bind "$tmp/empty" "\$d"
  done
fi
cd "$tmp"
exec "\$@"
SH
# The GPU steps of run.sh (its table "steps").
nsteps=$(sed -n '/^steps="/,/"$/p' "$top/tests/gpu/run.sh" | tr ' ' '\n' | grep -c ':[0-9]')
status=0
# took N T0: how long part N took, which must leave run.sh within 8 minutes.
took()
{
  t=$(($(date +%s) - $2))
  echo "dry-run: $1 took $t s"
  [ $t -lt 480 ] || { echo "dry-run: $1 took 8 minutes or more"; status=1; }
}
echo "dry-run: 1. as on a machine without a GPU"
t0=$(date +%s)
OUT=$tmp/out1 timeout 600 unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/one" 2>&1 || true
cat "$tmp/one"
grep -q '^gpu: pass: configure' "$tmp/one" && grep -q '^gpu: pass: mpi' "$tmp/one" &&
  grep -q "^gpu: 2 passed, 0 failed, $nsteps skipped, in " "$tmp/one" || { echo "dry-run: 1 FAILED"; status=1; }
took 1 "$t0"
echo "dry-run: 2. WEFT_GPU_DRY_RUN=standin"
t0=$(date +%s)
OUT=$tmp/out2 WEFT_GPU_DRY_RUN=standin LD_LIBRARY_PATH=$standin WEFT_STANDIN_DEVICES=1 \
  WEFT_STANDIN_PCI_BUS=c1 WEFT_GPU_DRY_TOPOLOGY=$tmp/one-gpu.xml \
  timeout 600 unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/two" 2>&1 || true
cat "$tmp/two"
grep -q "^gpu: 0 passed, 0 failed, $((nsteps + 2)) skipped, in .* (dry run" "$tmp/two" ||
  { echo "dry-run: 2 FAILED"; status=1; }
for f in gpu-summary.txt gpu-log.txt gpu-figures.txt; do
  [ -s "$tmp/out2/$f" ] || { echo "dry-run: 2 left no $f, or an empty one"; status=1; }
done
[ "$(grep -c '^gpu: ' "$tmp/out2/gpu-summary.txt")" -eq $((nsteps + 3)) ] ||
  { echo "dry-run: 2: gpu-summary.txt has not one line per step and the last"; status=1; }
[ "$(grep -c '^==== ' "$tmp/out2/gpu-log.txt")" -eq $((nsteps + 3)) ] ||
  { echo "dry-run: 2: gpu-log.txt has not a header per step"; status=1; }
tar tzf "$tmp/out2/gpu-logs.tar.gz" >/dev/null || { echo "dry-run: 2 left no log archive"; status=1; }
took 2 "$t0"
echo "dry-run: 3. the stand-in with a GPU listed, no dry run: refused"
t0=$(date +%s)
OUT=$tmp/out3 PATH=$tmp/fakebin:$PATH LD_LIBRARY_PATH=$standin HIDE_CUDA=1 \
  timeout 600 unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/three" 2>&1 || true
cat "$tmp/three"
grep -q "^gpu: fail: libraries: not a GPU's CUDA and NCCL" "$tmp/three" &&
  grep -q '^gpu: [0-9]* passed, [1-9][0-9]* failed' "$tmp/three" || { echo "dry-run: 3 FAILED"; status=1; }
took 3 "$t0"
[ $status -eq 0 ] && echo "dry-run: all three as they should be (nothing here is a GPU)"
exit $status
