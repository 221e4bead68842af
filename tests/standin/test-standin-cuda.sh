#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The CUDA side of the stand-in on its own (cuda-rules.c): device order and
# visibility, contexts, stream capture and graphs, each rule broken once.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
b=$WEFT_BUILDDIR/tests/standin
LD_LIBRARY_PATH=$b/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER WEFT_STANDIN_DEVICES WEFT_STANDIN_PCI_BUS \
  WEFT_STANDIN_NO_DRIVER WEFT_STANDIN_LOG WEFT_STANDIN_NVML_ORDER WEFT_STANDIN_NVML_FAULT
exec timeout 120 "$b/standin-cuda-rules"
