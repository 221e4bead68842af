#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Golden output of weft-topo for every topology file in share/weft/topologies
# (new files are picked up by themselves) and each policy that applies to it:
# the report, map-by gpu at full and half size, pe, core, numa, ppr:2:numa,
# text and --json, and the error for one rank too many. The CPU layouts are
# Open MPI's (ompi-oracle.cases checks the same against mpirun). Each expected file
# holds stdout, then stderr, then the exit status when it is not 0.
# WEFT_UPDATE_GOLDEN=1 writes the expected files; a topology without them
# fails until they are written.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
topo="$WEFT_BUILDDIR/src/weft-topo/weft-topo"
golden="$WEFT_TOPDIR/tests/cli/weft-topo-golden"
fail=0 checked=0

# The files name topologies as given: run where they are.
cd "$topos"

run() { # name, weft-topo args...
  name=$1
  shift
  rc=0
  timeout 30 "$topo" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  {
    echo "\$ weft-topo $*"
    cat "$tmp/out" "$tmp/err"
    [ "$rc" = 0 ] || echo "[exit $rc]"
  } >"$tmp/$name.out"
  if golden_check "$golden/$name.out" "$tmp/$name.out"; then
    checked=$((checked + 1))
  else
    fail=1
  fi
}

for f in *.xml; do
  t=${f%.xml}
  json=$(timeout 30 "$topo" --topology "$f" --json --map-by core -np 1 2>/dev/null) || {
    echo "FAIL $t: weft-topo cannot read $f"
    fail=1
    continue
  }
  gpus=$(printf '%s\n' "$json" | sed -n 's/.*"gpus": \([0-9]*\).*/\1/p')
  numa=$(timeout 30 "$topo" --topology "$f" | sed -n 's/^Machine: .* \([0-9]*\) NUMA node.*/\1/p')
  run "$t.report" --topology "$f"
  if [ "$gpus" -gt 0 ]; then
    half=$(( (gpus + 1) / 2 ))
    run "$t.gpu-full" --topology "$f" -np "$gpus"
    run "$t.gpu-full.json" --topology "$f" -np "$gpus" --json
    run "$t.gpu-half" --topology "$f" -np "$half"
    run "$t.gpu-half.json" --topology "$f" -np "$half" --json
    run "$t.gpu-pe2" --topology "$f" -np "$gpus" --map-by gpu:pe=2
    run "$t.gpu-too-many" --topology "$f" -np $((gpus + 1))
  else
    run "$t.gpu-none" --topology "$f" -np 1 --map-by gpu
  fi
  run "$t.core" --topology "$f" -np 4 --map-by core
  run "$t.core.json" --topology "$f" -np 4 --map-by core --json
  run "$t.core-pe2" --topology "$f" -np 4 --map-by core:pe=2
  run "$t.numa" --topology "$f" -np $((2 * numa)) --map-by numa
  run "$t.ppr2numa" --topology "$f" -np $((2 * numa)) --map-by ppr:2:numa
  run "$t.ppr2numa.json" --topology "$f" -np $((2 * numa)) --map-by ppr:2:numa --json
done
echo "$checked outputs match their golden files"
exit $fail
