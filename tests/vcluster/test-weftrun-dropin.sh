#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun as a drop-in for mpirun: the quick set of the corpus (the lines of
# dropin-corpus.txt marked with '*'), each run under mpirun and under weftrun,
# here and on 3 vnodes of 2 slots, compared by dropin-compare.py (ranks, hosts,
# order, OMPI_COMM_WORLD_*, cwd, environment, output, binding, exit status).
# Fails on any silent difference or broken line. The whole corpus:
#   WEFT_TOPDIR=. WEFT_BUILDDIR=_build tests/vcluster/dropin-compare.py \
#     tests/vcluster/dropin-corpus.txt
# Exit 77 without mpirun, Python 3, root or network namespaces.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
no_host_defaults
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
vc_up 3 --slots 2 >/dev/null
"$WEFT_TOPDIR/tests/vcluster/dropin-compare.py" --quick --vc "$prefix" \
  "$WEFT_TOPDIR/tests/vcluster/dropin-corpus.txt" >"$tmp/out" 2>&1 || {
  cat "$tmp/out"; fail "weftrun differs from mpirun"; }
cat "$tmp/out"
grep -Eq ': [1-9][0-9]* identical' "$tmp/out" || fail "no line compared"
