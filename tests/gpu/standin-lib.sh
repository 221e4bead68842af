# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the device tests that run under the CUDA/NCCL stand-in
# (tests/standin/README): selects it with LD_LIBRARY_PATH, or skips when it was
# not built. Nothing run this way is a GPU or counts as one.
standin=${WEFT_BUILDDIR:?run through make check}/tests/standin/.libs
if [ ! -e "$standin/libnccl.so.2" ]; then
  echo "SKIP: the CUDA/NCCL stand-in was not built (configure found no CUDA or no NCCL)"
  exit 77
fi
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset CUDA_VISIBLE_DEVICES WEFT_GPU WEFT_BACKEND WEFT_COLL_TIMEOUT WEFT_INIT_TIMEOUT \
  WEFT_STANDIN_DEVICES WEFT_STANDIN_NCCL_FAULT WEFT_STANDIN_LOG WEFT_STANDIN_NO_DRIVER NCCL_HOSTID

# standin_mpirun NP PROGRAM ARGS...: on NP ranks of this machine, bounded in time.
standin_mpirun()
{
  np=$1
  shift
  echo "# mpirun -np $np $*"
  timeout 120 mpirun --oversubscribe --bind-to none -np "$np" "$@"
}
