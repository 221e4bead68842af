#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Style rules that review should not have to repeat: no sprintf/strcpy/atoi
# and friends, no // comments, no trailing whitespace (contrib/checksrc).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
"$WEFT_TOPDIR/contrib/checksrc" "$WEFT_TOPDIR/lib" "$WEFT_TOPDIR/src" "$WEFT_TOPDIR/examples" "$WEFT_TOPDIR/tests"
