#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The README's main job, as contrib/quickstart.sh run starts it: weft-topo's
# placement for 4 ranks on this machine, then examples/dp_train on 4 ranks
# through weftrun with weft's default placement and binding (not --bind-to
# none as the other example tests use). Every rank reports its binding, the
# loss falls, and the job ends 0.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs  # this host alone, whatever allocation or default hostfile the machine has
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
dp="$WEFT_BUILDDIR/examples/dp_train"
[ -x "$dp" ] || skip "$dp not built"
fail=0

if ! "$topo" -np 4 --oversubscribe >"$tmp/topo" 2>&1; then
  echo "FAIL: weft-topo -np 4 --oversubscribe:"; cat "$tmp/topo"; fail=1
fi
[ "$(grep -c '^[0-3] ' "$tmp/topo")" = 4 ] || { echo "FAIL: weft-topo shows no 4 ranks:"; cat "$tmp/topo"; fail=1; }

if timeout 120 "$weftrun" --oversubscribe -np 4 --report-bindings "$dp" >"$tmp/out" 2>"$tmp/err"; then
  # Open MPI's binding report (this host has no GPU: Open MPI placed the ranks)
  n=$(grep -c '\] MCW rank [0-3] \(bound to\|is not bound\)' "$tmp/err" || true)
  [ "$n" = 4 ] || { echo "FAIL: $n binding lines, not 4:"; cat "$tmp/err"; fail=1; }
  first=$(awk '/^epoch/ { print $4; exit }' "$tmp/out")
  last=$(awk '/^epoch/ { l = $4 } END { print l }' "$tmp/out")
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(a != "" && b != "" && b + 0 < a + 0) }' ||
    { echo "FAIL: the loss did not fall ($first -> $last):"; cat "$tmp/out"; fail=1; }
  echo "ok main job: loss $first -> $last"
else
  echo "FAIL: the main job exited $?:"; cat "$tmp/out" "$tmp/err"; fail=1
fi
exit $fail
