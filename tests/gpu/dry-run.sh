#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Rehearses tests/gpu/run.sh here, where there is no GPU, as far as it can go:
#
#   tests/gpu/dry-run.sh [DIR]      DIR: the folder prepare.sh made (default .gpu-carry)
#
# It runs run.sh in a mount namespace where this machine's Open MPI, PMIx,
# libevent and hwloc are hidden (as on the bare GPU machine), three times:
#  1. as it is: the carried build and Open MPI must work (configure, mpi), and
#     the GPU checks are skipped (no GPU here);
#  2. WEFT_GPU_DRY_RUN=standin, on the CUDA/NCCL stand-in: every GPU check
#     runs, and counts as skipped (the stand-in is not a GPU); a failure is a
#     fault of the script or of weft;
#  3. with a fake nvidia-smi that lists a GPU, and this machine's CUDA
#     libraries hidden so that only the stand-in is there, but no dry run:
#     run.sh must refuse the stand-in.
# Needs root (unshare, mount). Exit 0 when all three went as they should.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
carry=${1:-$top/.gpu-carry}
case "$carry" in /*) ;; *) carry=$(pwd)/$carry ;; esac
standin=${WEFT_STANDIN_DIR:-$top/_build/tests/standin/.libs}
[ -x "$carry/bin/test-rt-gpu" ] || { echo "dry-run: no $carry; run tests/gpu/prepare.sh first"; exit 1; }
[ -e "$standin/libnccl.so.2" ] || { echo "dry-run: no stand-in in $standin (WEFT_STANDIN_DIR)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/empty" "$tmp/fakebin"
cat >"$tmp/fakebin/nvidia-smi" <<'SH'
#!/bin/sh
echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000) [fake, for a dry run]"
SH
chmod +x "$tmp/fakebin/nvidia-smi"
m=/usr/lib/x86_64-linux-gnu
cat >"$tmp/hide" <<SH
set -e
for d in $m/openmpi $m/pmix2 /usr/share/openmpi /etc/openmpi; do
  [ -d "\$d" ] && mount --bind "$tmp/empty" "\$d"
done
for f in $m/libmpi.so.40 $m/libopen-pal.so.40 $m/libopen-rte.so.40 $m/libhwloc.so.15 \\
         $m/libevent_core-2.1.so.7 $m/libevent_pthreads-2.1.so.7 $m/libpmix.so.2 \\
         $m/libmunge.so.2 /usr/bin/orterun /usr/bin/orted; do
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
status=0
echo "dry-run: 1. as on a machine without a GPU"
OUT=$tmp/out1 unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/one" 2>&1 || rc=$?
cat "$tmp/one"
grep -q '^gpu: pass: configure' "$tmp/one" && grep -q '^gpu: pass: mpi' "$tmp/one" &&
  grep -q '^gpu: 2 passed, 0 failed, 7 skipped$' "$tmp/one" || { echo "dry-run: 1 FAILED"; status=1; }
echo "dry-run: 2. WEFT_GPU_DRY_RUN=standin"
OUT=$tmp/out2 WEFT_GPU_DRY_RUN=standin LD_LIBRARY_PATH=$standin \
  unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/two" 2>&1 || true
cat "$tmp/two"
grep -q '^gpu: 0 passed, 0 failed, 9 skipped (dry run' "$tmp/two" || { echo "dry-run: 2 FAILED"; status=1; }
tar tzf "$tmp/out2/gpu-logs.tar.gz" >/dev/null || { echo "dry-run: 2 left no log archive"; status=1; }
echo "dry-run: 3. the stand-in with a GPU listed, no dry run: refused"
OUT=$tmp/out3 PATH=$tmp/fakebin:$PATH LD_LIBRARY_PATH=$standin HIDE_CUDA=1 \
  unshare -m sh "$tmp/hide" sh "$top/tests/gpu/run.sh" "$carry" >"$tmp/three" 2>&1 || true
cat "$tmp/three"
grep -q "^gpu: fail: libraries: not a GPU's CUDA and NCCL" "$tmp/three" &&
  grep -q '^gpu: [0-9]* passed, [1-9][0-9]* failed' "$tmp/three" || { echo "dry-run: 3 FAILED"; status=1; }
[ $status -eq 0 ] && echo "dry-run: all three as they should be (nothing here is a GPU)"
exit $status
