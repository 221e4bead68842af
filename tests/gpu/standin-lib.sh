# SPDX-License-Identifier: BSD-3-Clause
# Sourced after tests/lib.sh by the device tests that run under the CUDA/NCCL
# stand-in (tests/standin/README): selects it with LD_LIBRARY_PATH, or skips
# when it was not built. Nothing run this way is a GPU or counts as one.
standin=$WEFT_BUILDDIR/tests/standin/.libs
[ -e "$standin/libnccl.so.2" ] ||
  skip "the CUDA/NCCL stand-in was not built (configure found no CUDA or no NCCL)"
need_mpirun
LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset CUDA_VISIBLE_DEVICES WEFT_GPU WEFT_BACKEND WEFT_COLL_TIMEOUT WEFT_INIT_TIMEOUT \
  WEFT_BUCKET_COPY WEFT_STANDIN_DEVICES WEFT_STANDIN_NCCL_FAULT WEFT_STANDIN_LOG \
  WEFT_STANDIN_NO_DRIVER NCCL_HOSTID
mpirun_timeout=120

# standin_mpirun NP PROGRAM ARGS...: on NP ranks of this machine, said first.
standin_mpirun() { mpirun_np -v "$@"; }
