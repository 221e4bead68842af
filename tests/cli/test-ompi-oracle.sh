#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Open MPI 4.1 model (lib/map/ompi-*.c) against mpirun itself: every case of
# ompi-oracle.cases is mapped by mpirun --do-not-launch on a shipped topology and by
# the model (the ompi-model helper); ranks, hosts, local ranks, bindings and
# refusals must agree (ompi-oracle.py says how the two are compared).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
command -v python3 >/dev/null || skip "python3 is needed to compare the maps"
"$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI) 4\.1' ||
  skip "the model is of Open MPI 4.1; $MPIRUN is $("$MPIRUN" --version 2>/dev/null | head -n 1)"
TMPDIR=$tmp timeout 600 python3 "$WEFT_TOPDIR/tests/cli/ompi-oracle.py" \
  "$WEFT_BUILDDIR/tests/cli/ompi-model" "$WEFT_TOPDIR/tests/cli/ompi-oracle.cases"
