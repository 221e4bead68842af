#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Style rules that review should not have to repeat: no sprintf/strcpy/atoi
# and friends, no // comments, no trailing whitespace (contrib/checksrc).
set -eu
top=${WEFT_TOPDIR:?}
exec "$top/contrib/checksrc" "$top/lib" "$top/src" "$top/examples" "$top/tests"
