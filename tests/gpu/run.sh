#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The one proof of weft's GPU path on a real GPU, for a bare machine (NVIDIA
# driver, CUDA 13, NCCL from PyTorch's nvidia-nccl-cu13 wheel; no Open MPI, no
# autotools, no network), in a few minutes on one GPU:
#
#   tests/gpu/prepare.sh            here: build, and gather Open MPI into .gpu-carry
#   tests/gpu/run.sh [DIR]          there, with DIR (default .gpu-carry) carried along
#
# Checks: configure found CUDA and NCCL; the carried Open MPI starts ranks; the
# CUDA runtime and NCCL the programs load are a GPU's, not weft's stand-in
# (refused); the runtime's device tests (test-rt-gpu: every type and operation,
# in place and not, mesh groups, send/recv, buckets) on 1 rank, then 2 and 3
# ranks sharing the GPU (distinct NCCL_HOSTID, NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1, sockets over loopback); the device scenarios that need no
# fault injection (deadline, pair, split-drain, late-root); weft-bench
# --memory device --baseline on 1 rank, the speedup (raw NCCL time / weft time)
# at 1 GiB at least 0.95 out of place and in place; every
# type and operation through weft-bench's data check; the bucket's packing
# against two device-to-device copies, batched and tensor by tensor.
#
# Every log goes into $OUT/gpu-logs.tar.gz ($OUT: the device tool's folder,
# else ./gpu-out); the last line is "gpu: N passed, N failed" (", N skipped").
# Where nvidia-smi lists a GPU, a skipped check is a failure. Exit status: 0
# when nothing failed (and something passed), 1 otherwise, 77 without a GPU.
#
# WEFT_GPU_DRY_RUN=standin rehearses the script where there is no GPU: the
# checks run on the CUDA/NCCL stand-in (LD_LIBRARY_PATH must select it), and
# count as skipped, never passed: the stand-in is not a GPU.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
carry=${1:-$top/.gpu-carry}
case "$carry" in /*) ;; *) carry=$(pwd)/$carry ;; esac
out=${OUT:-$(pwd)/gpu-out}
mkdir -p "$out"
work=$(mktemp -d)
logs=$work/gpu-logs
mkdir -p "$logs"
trap 'rm -rf "$work"' EXIT
dry=${WEFT_GPU_DRY_RUN:-}
pass=0 fail=0 skip=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset WEFT_COLL_TIMEOUT WEFT_INIT_TIMEOUT WEFT_GPU WEFT_BACKEND WEFT_BUCKET_COPY

# result NAME pass|fail|skip DETAIL
result()
{
  status=$2
  [ -n "$dry" ] && [ "$status" = pass ] && status=dry
  [ "$status" = skip ] && [ "${gpus:-0}" -gt 0 ] && [ -z "$dry" ] && status=fail
  case "$status" in
    pass) pass=$((pass + 1)) ;;
    fail) fail=$((fail + 1)) ;;
    *) skip=$((skip + 1)) ;;
  esac
  echo "gpu: $status: $1${3:+: $3}" | tee -a "$logs/summary"
}

finish()
{
  tar czf "$out/gpu-logs.tar.gz" -C "$work" gpu-logs 2>/dev/null ||
    echo "gpu: could not write $out/gpu-logs.tar.gz"
  line="gpu: $pass passed, $fail failed"
  [ $skip -eq 0 ] || line="$line, $skip skipped"
  [ -z "$dry" ] || line="$line (dry run on the stand-in: nothing here is a GPU)"
  echo "$line"
  if [ $fail -gt 0 ]; then exit 1; fi
  if [ "${gpus:-0}" -eq 0 ] || [ $pass -eq 0 ]; then exit 77; fi
  exit 0
}

# run NAME TIMEOUT COMMAND...: the command's output in logs/NAME; its status.
run()
{
  name=$1 limit=$2
  shift 2
  echo "# $*" >"$logs/$name"
  timeout "$limit" "$@" >>"$logs/$name" 2>&1
}

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpus=${gpus:-0}
{ nvidia-smi 2>&1 || echo "no nvidia-smi"; } >"$logs/nvidia-smi"
echo "gpu: $gpus GPU(s) listed by nvidia-smi${dry:+; dry run on the stand-in}"

# ---- the carried build and Open MPI ----
if [ ! -f "$carry/configure.txt" ] || [ ! -x "$carry/bin/test-rt-gpu" ]; then
  result carry fail "no build in $carry: run tests/gpu/prepare.sh where weft builds, and carry its folder"
  finish
fi
cp "$carry/configure.txt" "$logs/"
if grep -q '^#define WEFT_HAVE_CUDA 1' "$carry/configure.txt" &&
   grep -q '^#define WEFT_HAVE_NCCL 1' "$carry/configure.txt"; then
  result configure pass "CUDA and NCCL found ($(sed -n 's/^#define WEFT_CUDART_SONAME //p' "$carry/configure.txt"))"
else
  result configure fail "the build in $carry was configured without CUDA or NCCL"
fi
bin=$carry/bin
root=$carry/root
if [ -x "$root/usr/bin/orterun" ]; then
  m=x86_64-linux-gnu
  export OPAL_PREFIX="$root/usr" OPAL_EXEC_PREFIX="$root/usr" OPAL_BINDIR="$root/usr/bin" \
    OPAL_LIBDIR="$root/usr/lib/$m/openmpi/lib" OPAL_PKGLIBDIR="$root/usr/lib/$m/openmpi/lib/openmpi3" \
    OPAL_DATAROOTDIR="$root/usr/share" OPAL_DATADIR="$root/usr/share" \
    OPAL_PKGDATADIR="$root/usr/share/openmpi" OPAL_SYSCONFDIR="$root/etc/openmpi" \
    PMIX_PREFIX="$root/usr/lib/$m/pmix2" PMIX_EXEC_PREFIX="$root/usr/lib/$m/pmix2" \
    PMIX_LIBDIR="$root/usr/lib/$m/pmix2/lib" PMIX_PKGLIBDIR="$root/usr/lib/$m/pmix2/lib/pmix" \
    PMIX_PKGDATADIR="$root/usr/lib/$m/pmix2/share/pmix"
  PATH=$root/usr/bin:$PATH
  LD_LIBRARY_PATH=$root/usr/lib/$m:$root/usr/lib/$m/openmpi/lib:$root/usr/lib/$m/pmix2/lib:$root/lib/$m${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  mpirun=$root/usr/bin/orterun
else
  mpirun=$(command -v mpirun || true)
fi
# One machine, no fast fabric, no CMA in a container: plain shared memory.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_plm=isolated OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
  OMPI_MCA_mca_base_component_show_load_errors=0

# ---- CUDA's runtime and NCCL of this machine ----
dirs=
for lib in libcudart.so.13 libnccl.so.2; do
  d=
  for c in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null) \
           $(ldconfig -p 2>/dev/null | sed -n "s|.*$lib .*=> \(.*\)/$lib\$|\1|p"); do
    if [ -e "$c/$lib" ]; then d=$c; break; fi
  done
  echo "# $lib: ${d:-not found}" >>"$logs/libraries"
  [ -n "$d" ] && case ":$dirs:" in *":$d:"*) ;; *) dirs=$dirs${dirs:+:}$d ;; esac
done
[ -z "$dry" ] && [ -n "$dirs" ] && LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH LD_LIBRARY_PATH
env | sort >"$logs/environment"

if [ -n "$mpirun" ] && run mpi 120 "$mpirun" -np 2 "$bin/test-rt-device-faults" cpu &&
   grep -q '^ok: cpu on 2 ranks' "$logs/mpi"; then
  result mpi pass "$mpirun started 2 ranks of a weft program (host buffers)"
else
  result mpi fail "Open MPI does not start ranks here (see logs/mpi)"
  finish
fi

# ---- a GPU's libraries, not the stand-in ----
ldd "$bin/test-rt-gpu" >>"$logs/libraries" 2>&1
standin=
for lib in libcudart.so.13 libnccl.so.2; do
  p=$(ldd "$bin/weft-bench" 2>/dev/null | sed -n "s|.*$lib => \([^ ]*\).*|\1|p")
  if [ -z "$p" ] || [ ! -e "$p" ]; then
    standin="$standin $lib not found;"
  elif readelf -W --dyn-syms "$p" 2>/dev/null | grep -q weft_standin_marker; then
    standin="$standin $lib is weft's stand-in ($p);"
  fi
done
if [ -n "$dry" ]; then
  echo "gpu: dry run:$standin (the stand-in is what a dry run runs on)"
elif [ -n "$standin" ]; then
  result libraries fail "not a GPU's CUDA and NCCL:$standin"
  finish
elif [ "$gpus" -eq 0 ]; then
  for c in rt-1 rt-2-one-gpu rt-3-one-gpu scenarios bench-1gib bench-types bucket-pack; do
    result "$c" skip "no GPU here (nvidia-smi lists none)"
  done
  finish
else
  result libraries pass "$(sed -n 's/^# //p' "$logs/libraries" | tr '\n' ' ')"
fi

# ---- the runtime on the GPU ----
# Ranks sharing GPU 0 as NCCL allows it: each its own "host" (NCCL_HOSTID),
# no peer-to-peer or shared-memory transport, sockets over loopback.
cat >"$work/one-gpu" <<'SH'
#!/bin/sh
NCCL_HOSTID=weft-gpu-run-$OMPI_COMM_WORLD_RANK
export NCCL_HOSTID
exec "$@"
SH
chmod +x "$work/one-gpu"
shared="env CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1
        NCCL_SOCKET_IFNAME=lo"
gpu_ok()
{
  grep -q 'device checks passed' "$logs/$1" && ! grep -q 'weft-standin:' "$logs/$1" &&
    { [ -n "$dry" ] || ! grep -q 'weft stand-in' "$logs/$1"; }
}

if run rt-1 180 "$mpirun" -np 1 "$bin/test-rt-gpu" && gpu_ok rt-1; then
  result rt-1 pass "$(grep -E '^# device|passed' "$logs/rt-1" | tr '\n' ' ')"
else
  result rt-1 fail "see logs/rt-1"
fi
for np in 2 3; do
  if run "rt-$np-one-gpu" 180 $shared "$mpirun" -np $np "$work/one-gpu" "$bin/test-rt-gpu" &&
     gpu_ok "rt-$np-one-gpu"; then
    result "rt-$np-one-gpu" pass "$(grep passed "$logs/rt-$np-one-gpu")"
  else
    result "rt-$np-one-gpu" fail "see logs/rt-$np-one-gpu"
  fi
done
bad=
for s in "2 deadline WEFT_COLL_TIMEOUT=5" "3 pair WEFT_INIT_TIMEOUT=60" "4 split-drain" \
         "2 late-root WEFT_INIT_TIMEOUT=2"; do
  set -- $s
  np=$1 name=$2
  shift 2
  if ! $shared "$@" timeout 120 "$mpirun" -np "$np" "$work/one-gpu" \
       "$bin/test-rt-device-faults" "$name" >"$logs/scenario-$name" 2>&1 ||
     ! grep -q "^ok: $name" "$logs/scenario-$name"; then
    bad="$bad $name"
  fi
done
if [ -z "$bad" ]; then
  result scenarios pass "deadline, pair, split-drain, late-root on ranks sharing the GPU"
else
  result scenarios fail "failed:$bad (see logs/scenario-*)"
fi

# ---- weft-bench: weft against raw NCCL ----
# (A dry run uses 16 MiB, and its speedup is no measurement.) The row's
# columns 17 and 21 are the speedups out of place and in place; the lower counts.
size=1073741824
[ -z "$dry" ] || size=16777216
if run bench-1gib 240 "$mpirun" -np 1 "$bin/weft-bench" allreduce -b $size -e $size -n 20 -w 5 \
     --memory device --baseline && grep -q '^# Out of bounds values : 0 OK$' "$logs/bench-1gib"; then
  speedup=$(awk -v s=$size '!/^#/ && $1 == s && NF == 21 { print ($17 < $21 ? $17 : $21) }' \
            "$logs/bench-1gib")
  row=$(awk -v s=$size '!/^#/ && $1 == s' "$logs/bench-1gib" | tr -s ' ')
  if [ -n "$speedup" ] && { [ -n "$dry" ] || awk -v r="$speedup" 'BEGIN { exit !(r >= 0.95) }'; }; then
    result bench-1gib pass "speedup $speedup (the lower of out of and in place) at $size bytes on 1 rank (row:$row)"
  else
    result bench-1gib fail "speedup ${speedup:-?} at $size bytes, want 0.95 or more (row:$row)"
  fi
else
  result bench-1gib fail "see logs/bench-1gib"
fi
if run bench-types 240 $shared "$mpirun" -np 2 "$work/one-gpu" "$bin/weft-bench" allreduce -d all \
     -o all -b 8 -e 1M -f 32 -n 2 -w 1 --memory device &&
   grep -q '^# Out of bounds values : 0 OK$' "$logs/bench-types"; then
  result bench-types pass "every type and operation checked on 2 ranks sharing the GPU"
else
  result bench-types fail "see logs/bench-types"
fi

# ---- the bucket's packing (defect 11: which is faster) ----
: >"$logs/bucket-pack"
ok=1
for mode in batch each; do
  WEFT_BUCKET_COPY=$mode timeout 120 "$mpirun" -np 1 "$bin/bench-bucket-pack" >>"$logs/bucket-pack" 2>&1 ||
    ok=0
done
if [ $ok -eq 1 ] && [ "$(grep -c '^bucket-pack: ' "$logs/bucket-pack")" -eq 2 ] &&
   ! grep -q WRONG "$logs/bucket-pack"; then
  result bucket-pack pass "$(grep '^bucket-pack: ' "$logs/bucket-pack" | tr '\n' ' ')"
else
  result bucket-pack fail "see logs/bucket-pack"
fi
finish
