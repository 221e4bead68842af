#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The one proof of weft's GPU path on a real GPU, for a bare machine (NVIDIA
# driver, CUDA 13, NCCL from PyTorch's nvidia-nccl-cu13 wheel; no Open MPI, no
# autotools, no network) with one GPU, within a time budget:
#
#   tests/gpu/prepare.sh            here: build, and gather Open MPI and hwloc into .gpu-carry
#   tests/gpu/run.sh [DIR]          there, with DIR (default .gpu-carry) carried along
#
# Time: the whole run has a budget, WEFT_GPU_BUDGET seconds (default 420, so
# that it ends well inside 8 minutes). Each step has a limit of its own (the
# table "steps" below) and every command in it a deadline; a step starts only
# when the budget still holds its whole limit, otherwise it is reported as
# "not run (time)". Steps run most valuable first.
#
# Output, written as it goes, so that a run killed at any moment (even with
# SIGKILL) leaves what it did in $OUT ($OUT: the device tool's folder, else
# ./gpu-out):
#   gpu-summary.txt   one line per result, appended as each step ends (and a
#                     first line, "# ...", on the machine)
#   gpu-log.txt       every command's output, streamed, under a header per step
#   gpu-figures.txt   the measured figures, gated or not
#   gpu-logs.tar.gz   at the end only: the same, one file per step
# The last line is "gpu: N passed, N failed" (", N skipped", ", N not run
# (time)"), with the seconds taken.
# On SIGTERM, SIGINT or SIGHUP it stops the command in progress, reports its
# step failed and ends with that line at once.
#
# Steps: configure found CUDA and NCCL; the carried Open MPI starts ranks; the
# CUDA runtime and NCCL the programs load are a GPU's, not weft's stand-in
# (refused); then, on the GPU:
#   rt-1, rt-2-one-gpu   the runtime's device tests (test-rt-gpu) on 1 rank,
#                        then 2 ranks sharing the GPU
#   bench-1-rank         weft-bench --baseline, 1 rank: gated on the out-of-place
#                        speedup (raw NCCL time / weft time) at 1 GiB, at least
#                        0.90: both do one device copy. In place is reported,
#                        not gated: NCCL does nothing at all for 1 rank in place
#                        (src/device/onerank.cu, ncclLaunchOneRank), so the
#                        ratio is one of two empty calls.
#   bench-2-ranks        weft-bench --baseline, 2 ranks sharing the GPU, 128 MiB
#                        and 512 MiB: gated on the median of the four speedups
#                        (2 sizes, out of and in place), at least 0.90: weft and
#                        raw NCCL do the same all-reduce over the same sockets.
#                        0.90 leaves room for noise (weft-bench alternates the
#                        two in up to 5 rounds and prints means only).
#   alltoall-2-ranks     weft-bench alltoall --baseline, 2 ranks sharing the GPU,
#                        64 MiB and 256 MiB a rank (figures): weft's all-to-all
#                        (one group of ncclSend/ncclRecv, its deadline events and
#                        checks) against raw NCCL's same group (alltoall_perf's
#                        form); aim 0.95 or better, gated on the median
#                        out-of-place speedup at 0.90 as bench-2-ranks (in place
#                        N/A: weft refuses it)
#   pipeline-2-ranks     weft-bench sendrecv --baseline, the same sizes: a
#                        pipeline stage's exchange as one weft_sendrecv (a batch
#                        on the group's communicator) against raw NCCL's group
#                        of the same send and receive; aim and gate as
#                        alltoall-2-ranks (in place, blocking weft_send and
#                        weft_recv, reported, not gated)
#   weft-topo            the machine as hwloc shows it (carried hwloc and its
#                        pci plugin): the GPUs nvidia-smi lists, at the same
#                        PCI addresses, and their NUMA node
#   weftrun-check        weftrun --check on the real driver: its table, the GPU
#                        column gated (the GPU seen through NVML); the other
#                        columns, facts of the machine, reported
#   weftrun-np1          weftrun -np 1 --map-by gpu test-rt-gpu: the rank gets
#                        the GPU (CUDA_VISIBLE_DEVICES, WEFT_GPU) and passes
#   weftrun-np2          weftrun -np 2 --map-by gpu: refused with one GPU (exit
#                        67, "add --oversubscribe"); with --oversubscribe both
#                        ranks share the GPU (distinct NCCL_HOSTID) and
#                        weft-bench's data check passes
#   scenarios            the device scenarios that need no fault injection
#                        (deadline, p2p-up, p2p-first, split-drain, late-root,
#                        blocking)
#   rt-3-one-gpu         test-rt-gpu on 3 ranks sharing the GPU
#   bench-types          every type and operation through weft-bench's data
#                        check, 2 ranks sharing the GPU
#   bucket-pack          the bucket's packing against two device-to-device
#                        copies, batched and tensor by tensor (figures)
# Ranks sharing the GPU each get their own NCCL_HOSTID (NCCL refuses two ranks
# of one host hash on one GPU: "Duplicate GPU detected" up to 2.29, and from
# 2.30 unless NCCL_MULTI_RANK_GPU_ENABLE=1, which is also set), no
# peer-to-peer or shared-memory transport, and sockets over loopback.
#
# Where nvidia-smi lists a GPU, a skipped check is a failure. Exit status: 0
# when nothing failed, every step ran and something passed; 1 otherwise; 77
# without a GPU.
#
# WEFT_GPU_DRY_RUN=standin rehearses the script where there is no GPU: the
# checks run on the CUDA/NCCL stand-in (LD_LIBRARY_PATH must select it), and
# count as skipped, never passed: the stand-in is not a GPU. There,
# WEFT_GPU_DRY_TOPOLOGY=FILE gives weft-topo and weftrun a machine with a GPU
# (an hwloc XML file; tests/gpu/dry-run.sh makes one).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
carry=${1:-$top/.gpu-carry}
case "$carry" in /*) ;; *) carry=$(pwd)/$carry ;; esac
out=${OUT:-$(pwd)/gpu-out}
budget=${WEFT_GPU_BUDGET:-420}
case "$budget" in
  '' | *[!0-9]*) echo "gpu: WEFT_GPU_BUDGET is '$budget', not a number of seconds"; exit 2 ;;
esac
t0=$(date +%s)
mkdir -p "$out" || exit 1
summary=$out/gpu-summary.txt
log=$out/gpu-log.txt
figures=$out/gpu-figures.txt
rm -f "$out/gpu-logs.tar.gz"
: >"$summary"
: >"$log"
: >"$figures"
work=$(mktemp -d) || exit 1
logs=$work/gpu-logs
mkdir -p "$logs"
dry=${WEFT_GPU_DRY_RUN:-}
pass=0 fail=0 skip=0 notrun=0
step='' step_limit=0 step_t0=0 step_end=0 cmd_pid=''
reserve=10 # seconds kept for the end (the summary line and the archive)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset WEFT_COLL_TIMEOUT WEFT_INIT_TIMEOUT WEFT_GPU WEFT_BACKEND WEFT_BUCKET_COPY WEFT_TOPOLOGY \
  NCCL_HOSTID
# Line-buffered output from every program, so that a run cut short keeps it.
sb=
command -v stdbuf >/dev/null 2>&1 && sb="stdbuf -oL -eL"

# The GPU steps, in the order they run, each NAME:LIMIT (seconds).
steps="rt-1:120 rt-2-one-gpu:120 bench-1-rank:120 bench-2-ranks:150 alltoall-2-ranks:90
       pipeline-2-ranks:90 weft-topo:30 weftrun-check:60 weftrun-np1:120 weftrun-np2:90 scenarios:150
       rt-3-one-gpu:120 bench-types:120 bucket-pack:90"

now() { echo $(($(date +%s) - t0)); }
oneline() { tr '\n' ' ' | sed 's/ *$//'; }
say() { echo "$*"; echo "$*" >>"$log"; }

# result NAME pass|fail|skip|notrun DETAIL: one line in the summary, at once.
result()
{
  status=$2
  [ -n "$dry" ] && [ "$status" = pass ] && status=dry
  [ "$status" = skip ] && [ "${gpus:-0}" -gt 0 ] && [ -z "$dry" ] && status=fail
  case "$status" in
    pass) pass=$((pass + 1)) ;;
    fail) fail=$((fail + 1)) ;;
    notrun) notrun=$((notrun + 1)); status="not run (time)" ;;
    *) skip=$((skip + 1)) ;;
  esac
  line="gpu: $status: $1${3:+: $3}"
  echo "$line" >>"$summary"
  say "$line"
}

figure() { echo "$*" >>"$figures"; echo "# figure: $*" >>"$log"; }

finish()
{
  trap - TERM INT HUP
  line="gpu: $pass passed, $fail failed"
  [ $skip -eq 0 ] || line="$line, $skip skipped"
  [ $notrun -eq 0 ] || line="$line, $notrun not run (time)"
  line="$line, in $(now) s of a $budget s budget"
  [ -z "$dry" ] || line="$line (dry run on the stand-in: nothing here is a GPU)"
  echo "$line" >>"$summary"
  say "$line"
  cp "$summary" "$figures" "$logs/" 2>/dev/null
  timeout 20 tar czf "$out/gpu-logs.tar.gz" -C "$work" gpu-logs 2>/dev/null ||
    echo "gpu: could not write $out/gpu-logs.tar.gz"
  rm -rf "$work"
  if [ $fail -gt 0 ]; then exit 1; fi
  if [ "${gpus:-0}" -gt 0 ] && [ -z "$dry" ] && [ $notrun -gt 0 ]; then exit 1; fi
  if [ "${gpus:-0}" -eq 0 ] || [ $pass -eq 0 ]; then exit 77; fi
  exit 0
}

stopped()
{
  [ -z "$cmd_pid" ] || kill -TERM "$cmd_pid" 2>/dev/null
  result "${step:-run.sh}" fail "stopped by SIG$1 at $(now) s"
  finish
}
trap 'stopped TERM' TERM
trap 'stopped INT' INT
trap 'stopped HUP' HUP

# open NAME LIMIT: starts step NAME, which may take LIMIT seconds.
open()
{
  step=$1 step_limit=$2 step_t0=$(date +%s)
  step_end=$((step_t0 + step_limit))
  : >"$logs/$step"
  say "==== $step: started at $(now) s, limit $step_limit s"
}

# begin NAME LIMIT: open NAME, true; false (and "not run (time)") when the
# budget no longer holds LIMIT seconds.
begin()
{
  left=$((budget - reserve - $(now)))
  if [ "$left" -lt "$2" ]; then
    result "$1" notrun "$left s of the budget left, the step needs up to $2 s"
    return 1
  fi
  open "$1" "$2"
}

# end pass|fail|skip DETAIL: the step's result, with the seconds it took.
end()
{
  result "$step" "$1" "${2:+$2 }[$(($(date +%s) - step_t0)) s]"
  step=
}

# cmd LIMIT COMMAND...: COMMAND's output streamed into the log (and copied to
# logs/STEP), within LIMIT seconds and what is left of the step's; its status.
cmd()
{
  lim=$1
  shift
  rest=$((step_end - $(date +%s)))
  [ "$lim" -le "$rest" ] || lim=$rest
  off=$(wc -c <"$log")
  if [ "$lim" -le 0 ]; then
    echo "# $*: not started, the step's $step_limit s are up" >>"$log"
    tail -c +$((off + 1)) "$log" >>"$logs/$step"
    return 124
  fi
  echo "# $* (limit $lim s)" >>"$log"
  c0=$(date +%s)
  timeout -k 5 "$lim" $sb "$@" >>"$log" 2>&1 </dev/null &
  cmd_pid=$!
  wait "$cmd_pid"
  rc=$?
  cmd_pid=
  c1=$(date +%s)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "# exit $rc after $((c1 - c0)) s: cut off at its limit of $lim s" >>"$log"
  else
    echo "# exit $rc after $((c1 - c0)) s" >>"$log"
  fi
  tail -c +$((off + 1)) "$log" >>"$logs/$step"
  return $rc
}

# ---- what this machine is ----
say "gpu: run.sh $carry, budget $budget s, output in $out${dry:+; dry run on the stand-in}"
open setup 60
cmd 20 nvidia-smi
gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpus=${gpus:-0}
[ -n "$dry" ] || [ "$gpus" -eq 0 ] ||
  cmd 20 nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
say "gpu: $gpus GPU(s) listed by nvidia-smi${dry:+; dry run on the stand-in}"
echo "# run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s; $gpus GPU(s): $(timeout 20 nvidia-smi \
  --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader 2>/dev/null | oneline)" >>"$summary"

# ---- the carried build and Open MPI ----
if [ ! -f "$carry/configure.txt" ] || [ ! -x "$carry/bin/test-rt-gpu" ]; then
  result carry fail "no build in $carry: run tests/gpu/prepare.sh where weft builds, and carry its folder"
  finish
fi
cat "$carry/configure.txt" >>"$log"
if grep -q '^#define WEFT_HAVE_CUDA 1' "$carry/configure.txt" &&
   grep -q '^#define WEFT_HAVE_NCCL 1' "$carry/configure.txt"; then
  result configure pass "CUDA and NCCL found ($(sed -n 's/^#define WEFT_CUDART_SONAME //p' "$carry/configure.txt"))"
else
  result configure fail "the build in $carry was configured without CUDA or NCCL"
fi
bin=$carry/bin
root=$carry/root
m=x86_64-linux-gnu
if [ -x "$root/usr/bin/orterun" ]; then
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
# hwloc's plugins (pci) from the carried tree, not a system's.
[ -d "$root/usr/lib/$m/hwloc" ] && export HWLOC_PLUGINS_PATH="$root/usr/lib/$m/hwloc"
# One machine, no fast fabric, no CMA in a container: plain shared memory.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_plm=isolated OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
  OMPI_MCA_mca_base_component_show_load_errors=0
# weftrun: this mpirun, the carried agent, the repository's data, a fresh cache.
export WEFT_MPIRUN="$mpirun" WEFT_RANK_PATH="$bin/weft-rank" WEFT_DATADIR="$top/share/weft" \
  XDG_CACHE_HOME="$work/cache"

# ---- CUDA's runtime and NCCL of this machine ----
dirs='' found=''
pydirs=$(timeout 30 python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null)
for lib in libcudart.so.13 libnccl.so.2; do
  d=
  for c in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib $pydirs \
           $(ldconfig -p 2>/dev/null | sed -n "s|.*$lib .*=> \(.*\)/$lib\$|\1|p"); do
    if [ -e "$c/$lib" ]; then d=$c; break; fi
  done
  say "# $lib: ${d:-not found}"
  found="$found$lib: ${d:-not found}; "
  [ -n "$d" ] && case ":$dirs:" in *":$d:"*) ;; *) dirs=$dirs${dirs:+:}$d ;; esac
done
[ -z "$dry" ] && [ -n "$dirs" ] && LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH LD_LIBRARY_PATH
{ echo "# environment"; env | sort; } >>"$log"

open mpi 60
if [ -n "$mpirun" ] && cmd 60 "$mpirun" -np 2 "$bin/test-rt-device-faults" cpu &&
   grep -q '^ok: cpu on 2 ranks' "$logs/mpi"; then
  end pass "$mpirun started 2 ranks of a weft program (host buffers)"
else
  end fail "Open MPI does not start ranks here (see the log)"
  finish
fi

# ---- a GPU's libraries, not the stand-in ----
open libraries 30
cmd 15 ldd "$bin/test-rt-gpu" "$bin/weft-bench" "$bin/weftrun"
standin=
for lib in libcudart.so.13 libnccl.so.2; do
  p=$(timeout 15 ldd "$bin/weft-bench" 2>/dev/null | sed -n "s|.*$lib => \([^ ]*\).*|\1|p")
  if [ -z "$p" ] || [ ! -e "$p" ]; then
    standin="$standin $lib not found;"
  elif readelf -W --dyn-syms "$p" 2>/dev/null | grep -q weft_standin_marker; then
    standin="$standin $lib is weft's stand-in ($p);"
  fi
done
if [ -n "$dry" ]; then
  say "gpu: dry run:$standin (the stand-in is what a dry run runs on)"
  step=
elif [ -n "$standin" ]; then
  end fail "not a GPU's CUDA and NCCL:$standin"
  finish
elif [ "$gpus" -eq 0 ]; then
  step=
  for s in $steps; do
    result "${s%%:*}" skip "no GPU here (nvidia-smi lists none)"
  done
  finish
else
  end pass "$found"
fi

# ---- the steps on the GPU ----
# Ranks sharing GPU 0 as NCCL allows it: each its own "host" (NCCL_HOSTID,
# which NCCL hashes into the host hash it compares: src/misc/utils.cc), no
# peer-to-peer or shared-memory transport, sockets over loopback.
# NCCL_MULTI_RANK_GPU_ENABLE=1: NCCL 2.30's switch for ranks of one host on one
# GPU (src/init.cc, docs/userguide env.rst; earlier versions ignore it).
cat >"$work/one-gpu" <<'SH'
#!/bin/sh
NCCL_HOSTID=weft-gpu-run-${OMPI_COMM_WORLD_RANK:-${RANK:-${PMIX_RANK:-0}}}
export NCCL_HOSTID
echo "one-gpu: rank ${RANK:-${OMPI_COMM_WORLD_RANK:-?}}: NCCL_HOSTID=$NCCL_HOSTID" \
  "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} WEFT_GPU=${WEFT_GPU-unset}" \
  "WEFT_CPUS=${WEFT_CPUS-unset} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME-unset}" >&2
exec "$@"
SH
chmod +x "$work/one-gpu"
nccl_shared="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
             NCCL_MULTI_RANK_GPU_ENABLE=1"
shared="env CUDA_VISIBLE_DEVICES=0 $nccl_shared"
# weftrun chooses the GPU itself: no CUDA_VISIBLE_DEVICES of ours.
launch="env -u CUDA_VISIBLE_DEVICES $nccl_shared"
if [ -n "$dry" ] && [ -n "${WEFT_GPU_DRY_TOPOLOGY:-}" ]; then
  export WEFT_TOPOLOGY="$WEFT_GPU_DRY_TOPOLOGY"
fi
gpu_ok()
{
  grep -q 'device checks passed' "$logs/$step" && ! grep -q 'weft-standin:' "$logs/$step" &&
    { [ -n "$dry" ] || ! grep -q 'weft stand-in' "$logs/$step"; }
}
bench_ok() { grep -q '^# Out of bounds values : 0 OK$' "$logs/$step"; }
# The rows of weft-bench --baseline (21 columns): size $1, weft time out of
# place $6 and in place $10, raw NCCL time out of place $14 and in place $18,
# speedups (raw / weft) $17 and $21.
bench_rows() { awk '!/^#/ && NF == 21 && $1 ~ /^[0-9]+$/' "$logs/$step"; }
bench_figures()
{
  note=$1
  bench_rows | while read -r r; do
    set -- $r
    figure "$step: $1 B: out of place weft $6 us, NCCL ${14} us, speedup ${17}; in place weft ${10} us, NCCL ${18} us, speedup ${21}$note"
  done
}

# (A dry run's sizes are small, and its speedups are no measurement.)
if [ -n "$dry" ]; then
  size1=1M,4M,16M size1max=16777216 size2=1M,4M size3=4M size4=1M,4M want="not judged on the stand-in"
else
  size1=64M,256M,1G size1max=1073741824 size2=128M,512M size3=64M size4=64M,256M want="want 0.90 or more"
fi

step_rt_1()
{
  if cmd 110 "$mpirun" -np 1 "$bin/test-rt-gpu" && gpu_ok; then
    end pass "$(grep -E '^# device|passed' "$logs/$step" | oneline)"
  else
    end fail "see the log"
  fi
}

step_rt_np_one_gpu()
{
  if cmd 110 $shared "$mpirun" -np "$1" "$work/one-gpu" "$bin/test-rt-gpu" && gpu_ok; then
    end pass "$(grep passed "$logs/$step")"
  else
    end fail "see the log"
  fi
}
step_rt_2_one_gpu() { step_rt_np_one_gpu 2; }
step_rt_3_one_gpu() { step_rt_np_one_gpu 3; }

step_bench_1_rank()
{
  if ! cmd 110 "$mpirun" -np 1 "$bin/weft-bench" allreduce -s $size1 -n 20 -w 5 --memory device \
         --baseline || ! bench_ok; then
    end fail "see the log"
    return
  fi
  bench_figures " (in place not gated: NCCL does nothing for 1 rank in place)"
  sp=$(bench_rows | awk -v s=$size1max '$1 == s { print $17 }')
  if [ -z "$sp" ]; then
    end fail "no out-of-place speedup at $size1max bytes in weft-bench's table"
  elif [ -n "$dry" ] || awk -v r="$sp" 'BEGIN { exit !(r >= 0.90) }'; then
    end pass "out-of-place speedup $sp at $size1max bytes, $want (raw NCCL time / weft time; in place not gated)"
  else
    end fail "out-of-place speedup $sp at $size1max bytes, want 0.90 or more (see $(basename "$figures"))"
  fi
}

step_bench_2_ranks()
{
  if ! cmd 140 $shared "$mpirun" -np 2 "$work/one-gpu" "$bin/weft-bench" allreduce -s $size2 -n 10 -w 2 \
         --memory device --baseline || ! bench_ok; then
    end fail "see the log"
    return
  fi
  bench_figures ""
  all=$(bench_rows | awk '{ print $17; print $21 }' | sort -n | oneline)
  med=$(echo "$all" | awk '{ if (NF == 0) exit; print (NF % 2 ? $((NF + 1) / 2) : ($(NF / 2) + $(NF / 2 + 1)) / 2) }')
  if [ -z "$med" ]; then
    end fail "no speedups in weft-bench's table"
  elif [ -n "$dry" ] || awk -v r="$med" 'BEGIN { exit !(r >= 0.90) }'; then
    end pass "median speedup $med (of $all) at $size2 bytes on 2 ranks sharing the GPU, $want"
  else
    end fail "median speedup $med (of $all) at $size2 bytes on 2 ranks sharing the GPU, want 0.90 or more"
  fi
}

# All-to-all and the pipeline exchange on device memory against raw NCCL's
# group of sends and receives (the issue 29 device figures): the out-of-place
# speedups, aim 0.95, gated at 0.90. $1: weft-bench's collective, $2: what the
# in-place columns are.
step_exchange_2_ranks()
{
  if ! cmd 80 $shared "$mpirun" -np 2 "$work/one-gpu" "$bin/weft-bench" "$1" -s $size4 -n 10 -w 2 \
         --memory device --baseline || ! bench_ok; then
    end fail "see the log"
    return
  fi
  bench_figures " ($2)"
  all=$(bench_rows | awk '{ print $17 }' | sort -n | oneline)
  med=$(echo "$all" | awk '{ if (NF == 0) exit; print (NF % 2 ? $((NF + 1) / 2) : ($(NF / 2) + $(NF / 2 + 1)) / 2) }')
  aim=$(echo "$med" | awk '{ print ($1 >= 0.95 ? "the aim, 0.95, met" : "below the aim of 0.95") }')
  if [ -z "$med" ]; then
    end fail "no speedups in weft-bench's table"
  elif [ -n "$dry" ] || awk -v r="$med" 'BEGIN { exit !(r >= 0.90) }'; then
    end pass "$1: median out-of-place speedup $med (of $all) at $size4 bytes on 2 ranks sharing the GPU, $want; $aim"
  else
    end fail "$1: median out-of-place speedup $med (of $all) at $size4 bytes on 2 ranks sharing the GPU, want 0.90 or more"
  fi
}
step_alltoall_2_ranks() { step_exchange_2_ranks alltoall "in place N/A: weft refuses it"; }
step_pipeline_2_ranks() { step_exchange_2_ranks sendrecv "in place not gated: blocking send and receive"; }

step_weft_topo()
{
  if ! cmd 20 env HWLOC_PLUGINS_VERBOSE=1 "$bin/weft-topo"; then
    end fail "weft-topo failed (see the log)"
    return
  fi
  seen=$(sed -n 's/^Machine: .* \([0-9][0-9]*\) GPUs*, .*/\1/p' "$logs/$step" | head -1)
  list=$(awk '$1 ~ /^GPU[0-9]+$/ && $2 ~ /:/ { printf "%s%s %s NUMA %s", n++ ? "; " : "", $1, $2, $3 }' \
         "$logs/$step")
  figure "weft-topo: ${seen:-?} GPU(s): $list"
  bad=
  [ -n "$dry" ] || [ "${seen:-0}" -eq "$gpus" ] || bad="$bad it sees ${seen:-no} GPU(s), nvidia-smi lists $gpus;"
  if [ -z "$dry" ]; then
    for b in $(timeout 20 nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
      b=$(echo "$b" | tr 'A-F' 'a-f' | sed 's/^0000\(....:\)/\1/')
      grep -q "^GPU[0-9]* *$b " "$logs/$step" || bad="$bad nvidia-smi's GPU at $b is not in its table;"
    done
  fi
  if [ -z "$bad" ] && [ "${seen:-0}" -gt 0 ]; then
    end pass "$list"
  else
    end fail "${bad:- it sees no GPU}"
  fi
}

step_weftrun_check()
{
  cmd 45 env -u CUDA_VISIBLE_DEVICES "$bin/weftrun" --check -np 1 --map-by gpu "$bin/test-rt-gpu"
  rc=$?
  cmd 10 env -u CUDA_VISIBLE_DEVICES "$bin/weftrun" --check --json -np 1 --map-by gpu "$bin/test-rt-gpu"
  cell=$(awk '/^HOST / { g = index($0, " GPUS ") + 1; n = index($0, " NET ") + 1; next }
              g && !/^#/ { print substr($0, g, n - g); exit }' "$logs/$step" | sed 's/ *$//')
  problems=$(grep -E '^(FAIL|WARN) \[' "$logs/$step" | oneline)
  facts=$(grep -o '\["\(ver\|gpu\)\.[a-z]*", "[^"]*"\]' "$logs/$step" |
          sed 's/\["\([^"]*\)", "\([^"]*\)"\]/\1 \2,/' | oneline | sed 's/,$//')
  figure "weftrun-check: exit $rc; gpus: ${cell:-?}; ${facts:-no facts}${problems:+; $problems}"
  n=$(echo "$cell" | awk '{ print $2 }')
  case "$rc:$cell" in
    0:OK* | 80:OK* | 80:WARN* | 81:OK* | 81:WARN*)
      case "$cell" in
        *"no NVML"*) end fail "exit $rc, no GPU through NVML: $cell" ;;
        *) if [ -n "$dry" ] || [ "$n" = "$gpus" ]; then
             end pass "exit $rc, gpus: $cell${problems:+; reported: $problems}"
           else
             end fail "exit $rc, gpus: $cell, not the $gpus nvidia-smi lists"
           fi ;;
      esac ;;
    *) end fail "exit $rc, gpus: ${cell:-no table}${problems:+; $problems}" ;;
  esac
}

step_weftrun_np1()
{
  if cmd 110 $launch "$bin/weftrun" -np 1 --map-by gpu "$work/one-gpu" "$bin/test-rt-gpu" && gpu_ok &&
     grep -q '^one-gpu: rank 0: .* CUDA_VISIBLE_DEVICES=[^u].* WEFT_GPU=[0-9]' "$logs/$step"; then
    end pass "$(sed -n 's/^one-gpu: //p' "$logs/$step" | head -1); $(grep passed "$logs/$step")"
  else
    end fail "see the log"
  fi
}

step_weftrun_np2()
{
  bad='' why='' gpu=''
  if [ "$gpus" -le 1 ]; then
    cmd 20 $launch "$bin/weftrun" -np 2 --map-by gpu --dry-run true
    rc=$?
    why=$(grep '^weftrun: 2 ranks but' "$logs/$step")
    if [ $rc -ne 67 ] || [ -z "$why" ]; then
      bad="without --oversubscribe: exit $rc, not 67 with \"2 ranks but ...\";"
    fi
  fi
  if cmd 60 $launch "$bin/weftrun" -np 2 --map-by gpu --oversubscribe "$work/one-gpu" "$bin/weft-bench" \
       allreduce -b 1M -e $size3 -f 8 -n 5 -w 1 --memory device && bench_ok; then
    ids=$(sed -n 's/^one-gpu: rank .*NCCL_HOSTID=\([^ ]*\) .*/\1/p' "$logs/$step" | sort -u | wc -l)
    gpu=$(sed -n 's/^one-gpu: rank .* WEFT_GPU=\([^ ]*\) .*/\1/p' "$logs/$step" | sort -u | oneline)
    [ "$ids" -eq 2 ] || bad="$bad $ids distinct NCCL_HOSTID, not 2;"
  else
    bad="$bad with --oversubscribe: failed;"
  fi
  if [ -z "$bad" ]; then
    end pass "${why:+refused: \"${why#weftrun: }\"; }with --oversubscribe 2 ranks on GPU(s) $gpu, distinct NCCL_HOSTID, data checked"
  else
    end fail "$bad (see the log)"
  fi
}

step_scenarios()
{
  bad=
  for s in "2 deadline WEFT_COLL_TIMEOUT=5" "3 p2p-up WEFT_INIT_TIMEOUT=30" "3 p2p-first WEFT_INIT_TIMEOUT=3" \
           "4 split-drain" "2 late-root WEFT_INIT_TIMEOUT=2" "4 blocking NCCL_COMM_BLOCKING=1"; do
    set -- $s
    np=$1 name=$2
    shift 2
    at=$(wc -c <"$logs/$step")
    if ! cmd 60 $shared "$@" "$mpirun" -np "$np" "$work/one-gpu" "$bin/test-rt-device-faults" "$name" ||
       ! tail -c +$((at + 1)) "$logs/$step" | grep -q "^ok: $name"; then
      bad="$bad $name"
    fi
  done
  if [ -z "$bad" ]; then
    end pass "deadline, p2p-up, p2p-first, split-drain, late-root, blocking on ranks sharing the GPU"
  else
    end fail "failed:$bad (see the log)"
  fi
}

step_bench_types()
{
  if cmd 110 $shared "$mpirun" -np 2 "$work/one-gpu" "$bin/weft-bench" allreduce -d all -o all \
       -b 8 -e 1M -f 32 -n 2 -w 1 --memory device && bench_ok; then
    end pass "every type and operation checked on 2 ranks sharing the GPU"
  else
    end fail "see the log"
  fi
}

step_bucket_pack()
{
  ok=1
  for mode in batch each; do
    cmd 40 env WEFT_BUCKET_COPY=$mode "$mpirun" -np 1 "$bin/bench-bucket-pack" || ok=0
  done
  grep '^bucket-pack: ' "$logs/$step" | while read -r l; do figure "$l"; done
  if [ $ok -eq 1 ] && [ "$(grep -c '^bucket-pack: ' "$logs/$step")" -eq 2 ] &&
     ! grep -q WRONG "$logs/$step"; then
    end pass "$(grep '^bucket-pack: ' "$logs/$step" | oneline)"
  else
    end fail "see the log"
  fi
}

for s in $steps; do
  name=${s%%:*}
  begin "$name" "${s#*:}" && "step_$(echo "$name" | tr - _)"
done
finish
