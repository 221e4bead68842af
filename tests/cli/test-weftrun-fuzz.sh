#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# 300 random option lines, hostfiles and -H lists through weftrun --dry-run
# (fuzz-weftrun.py; run it by hand for the full 10,000): no crash, no hang, only
# documented exit statuses, and no unclear message (one line that says what is
# wrong; fuzz-weftrun.py's head lists what it counts as unclear), each failing
# input printed with what weftrun said.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 not found"
FUZZ_N=${FUZZ_N:-300} exec /usr/bin/python3 "$WEFT_TOPDIR/tests/cli/fuzz-weftrun.py"
