#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# GPU checks of weft, for a machine with a GPU, in a few minutes:
#   tests/gpu/run.sh [BUILDDIR]
# Builds the tree (autogen.sh and configure where needed), then runs the GPU tests
# (make check in tests/gpu) and prints their logs. Exit status: that of make.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/_build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L || echo "# nvidia-smi not found: the tests will skip"
# A fresh checkout has no configure (it is generated).
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
if [ ! -f "$build/Makefile" ]; then
  mkdir -p "$build"
  (cd "$build" && "$top/configure" -q)
fi
make -C "$build" -j"$(nproc)" >/dev/null
rc=0
make -C "$build/tests/gpu" check || rc=$?
for log in "$build"/tests/gpu/*.log; do
  [ -f "$log" ] && { echo "=== $log"; cat "$log"; }
done
exit $rc
