#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The stand-in on its own: what it does, NCCL's behaviour as its source has
# it, and each of its rules broken once (standin-rules.c). Fails when a rule
# does not end the program with its words.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
b=$WEFT_BUILDDIR/tests/standin
LD_LIBRARY_PATH=$b/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset CUDA_VISIBLE_DEVICES WEFT_STANDIN_DEVICES WEFT_STANDIN_NCCL_FAULT NCCL_HOSTID \
  WEFT_STANDIN_NCCL_VERSION WEFT_STANDIN_NCCL_TRANSPORT NCCL_COMM_BLOCKING NCCL_P2P_DISABLE \
  NCCL_SHM_DISABLE
exec timeout 120 "$b/standin-rules"
