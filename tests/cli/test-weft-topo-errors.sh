#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-topo's exit statuses (weft-topo(1) EXIT STATUS) and their one-line
# messages: bad options and arguments 2, topologies that do not load 3,
# placements that cannot be met 1, --help and --version 0.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
a3="$topos/a3-highgpu-8g.xml"
n2="$topos/n2-standard-16.xml"
fail=0

expect() { # status, text the message must hold, weft-topo args...
  want=$1 text=$2
  shift 2
  rc=0
  timeout 30 "$topo" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL weft-topo $*: exit $rc, want $want: $(cat "$tmp/err")"
    fail=1
  elif [ "$want" != 0 ] && [ "$(wc -l <"$tmp/err")" != 1 ]; then
    echo "FAIL weft-topo $*: want one line on stderr, got:"
    cat "$tmp/err"
    fail=1
  elif ! grep -q -e "$text" "$tmp/out" "$tmp/err"; then
    echo "FAIL weft-topo $*: no '$text' in: $(cat "$tmp/out" "$tmp/err")"
    fail=1
  else
    echo "ok $want weft-topo $*"
  fi
}

expect 0 "Usage:" --help
expect 0 "^weft-topo [0-9]" --version
expect 2 "did you mean '--map-by'" --mapby gpu
expect 2 "unknown option" --frobnicate
expect 2 "needs an argument" --topology
expect 2 "whole number" --topology "$a3" -np zero
expect 2 "whole number" --topology "$a3" -np 0
expect 2 "1 to 65536" --topology "$a3" -np 65537
expect 2 "unexpected argument" --topology "$a3" extra
expect 2 "did you mean 'gpu'" --topology "$a3" -np 2 --map-by gpus
expect 2 "did you mean 'core'" --topology "$a3" -np 2 --bind-to cores
expect 2 "ppr:N:OBJ" --topology "$a3" -np 2 --map-by ppr:2
expect 2 "disagree" --topology "$a3" -np 2 --map-by gpu:pe=2 --pe 3
expect 2 "gpu-local" --topology "$a3" -np 2 --map-by core --bind-to gpu-local
expect 2 "reserved" --topology "$a3" -np 2 --reserved-cpus lots
expect 3 "nosuch.xml" --topology "$tmp/nosuch.xml"
: >"$tmp/empty.xml"
expect 3 "empty.xml" --topology "$tmp/empty.xml"
printf '<?xml version="1.0"?>\n<topology version="2.0">\n  <object type="Machine"' >"$tmp/cut.xml"
expect 3 "cut.xml" --topology "$tmp/cut.xml"
expect 3 "nosuch.xml" -np 2 --topology "$tmp/nosuch.xml"
WEFT_TOPOLOGY="$tmp/nosuch.xml" expect 3 "nosuch.xml" -np 2
expect 1 "9 ranks but a3-highgpu-8g.xml has 8 GPUs; use -np 8 or fewer" --topology "$a3" -np 9
expect 1 "pe=53" --topology "$a3" -np 1 --map-by gpu:pe=53
expect 1 "no GPUs" --topology "$n2" -np 1 --map-by gpu
expect 1 "n2-standard-16.xml: there are not enough slots available in the system to satisfy the 9 slots" \
  --topology "$n2" -np 9 --map-by core
expect 0 "oversubscribed" --topology "$a3" -np 9 --oversubscribe
# CPU layouts are mpirun's: oversubscribed ranks are left unbound, as mpirun leaves them
expect 0 "oversubscribed: 9 ranks on 8 slots, which Open MPI leaves unbound" --topology "$n2" -np 9 --oversubscribe
expect 2 "Open MPI 4.1 calls the package socket" --topology "$a3" -np 2 --bind-to package
expect 2 "reserved processors (0-1)" --topology "$n2" -np 2 --reserved-cpus 0-1
WEFT_TOPOLOGY="$a3" expect 0 "enp140s0" -np 8
expect 0 '"name": "vm-a", "slots": 8, "gpus": 8' --topology "$a3" -np 1 --json --host vm-a
expect 0 "map-by ppr:2:numa:PE=3, rank-by slot, bind-to core, as mpirun does" --topology "$a3" -n 4 \
  --map-by ppr:2:numa --pe 3
exit $fail
