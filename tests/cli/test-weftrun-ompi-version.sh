#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun plans with the rules of its mpirun's Open MPI (issue 33), without either
# installed: a stand-in mpirun that answers --version as Open MPI 4.1.4 or 5.0.7.
#   - the version is asked once and kept in the cache (a stand-in that then fails is not
#     asked again; one that changes is);
#   - 5.0: ppr:2:socket binds to the socket (4.1: NUMA here, a core with 2 ranks),
#     package is a word, --rank-by core is refused as its mpirun refuses it;
#   - 4.1: package, --display and --runtime-options refused in one line naming 5;
#   - WEFT_OMPI_VERSION says the version instead, and a bad one is refused.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
no_host_defaults
export XDG_CACHE_HOME="$tmp/cache" WEFT_NO_PROBE=1
unset WEFT_OMPI_VERSION
mkdir -p "$tmp/cache" && chmod 700 "$tmp/cache"
fake() { # VERSION: a stand-in mpirun
  printf '#!/bin/sh\n[ "$1" = --version ] && { echo "mpirun (Open MPI) %s"; echo; exit 0; }\nexit 1\n' "$1" \
    >"$tmp/mpirun.new" && chmod +x "$tmp/mpirun.new" && mv "$tmp/mpirun.new" "$tmp/mpirun"
}
export WEFT_MPIRUN="$tmp/mpirun"
topo="$topos/flat-vm-2numa.xml"
plan() { "$weftrun" --dry-run --topology "$topo" "$@" true 2>&1 | head -1; }

fake 5.0.7
out=$(plan -np 4 --map-by ppr:2:socket)
echo "$out" | grep -q "Open MPI 5.0's mpirun would: map-by ppr:2:socket, rank-by slot, bind-to socket" ||
  fail "5.0, ppr:2:socket: $out"
grep -q "	5\.0$" "$tmp/cache/weft/mpirun-versions" || fail "5.0 not kept in the cache"
out=$(plan -np 2 --map-by ppr:1:package)
echo "$out" | grep -q "map-by ppr:1:socket, rank-by slot, bind-to socket" || fail "5.0, ppr:1:package: $out"
out=$(plan -np 2 --map-by ppr:2:socket)
echo "$out" | grep -q "bind-to socket" || fail "5.0, 2 ranks of ppr:2:socket: $out"
out=$(plan -np 2 --map-by core --rank-by core)
echo "$out" | grep -q "Open MPI 5 ranks by slot, node, fill or span" || fail "5.0, --rank-by core: $out"
out=$(plan -np 2 --display map,bind)
echo "$out" | grep -q "^# weftrun plan: 2 ranks" || fail "5.0, --display map,bind: $out"

# kept: a stand-in that fails now is not asked (same file, same time and size)
touch -r "$tmp/mpirun" "$tmp/stamp"
new=$(sed 's/exit 0/exit 9/' "$tmp/mpirun") # the same file (inode), size and time
printf '%s\n' "$new" >"$tmp/mpirun" && touch -r "$tmp/stamp" "$tmp/mpirun"
out=$(plan -np 2 --map-by ppr:2:socket)
echo "$out" | grep -q "Open MPI 5.0's" || fail "the cached version was not used: $out"

# another mpirun: asked again
fake 4.1.4
out=$(plan -np 4 --map-by ppr:2:socket)
echo "$out" | grep -q "Open MPI 4.1's mpirun would: map-by ppr:2:socket, rank-by slot, bind-to numa" ||
  fail "4.1, ppr:2:socket: $out"
out=$(plan -np 2 --map-by ppr:2:socket)
echo "$out" | grep -q "bind-to core" || fail "4.1, 2 ranks of ppr:2:socket: $out"
out=$(plan -np 2 --map-by ppr:1:package)
[ "$out" = "weftrun: ppr pattern '1:package': package is Open MPI 5's word: Open MPI 4.1 calls the package socket; write ppr:1:socket (mpirun refuses it too)" ] ||
  fail "4.1, ppr:1:package: $out"
for o in "--display map" "--runtime-options error-nonzero-status"; do
  out=$(plan -np 2 $o)
  echo "$out" | grep -q "is Open MPI 5's option, and this mpirun is Open MPI 4.1" || fail "4.1, $o: $out"
done
out=$(plan -np 2 --output tag)
echo "$out" | grep -q "^# weftrun plan" || fail "4.1, --output tag: $out"

# said instead
out=$(WEFT_OMPI_VERSION=5.0 plan -np 4 --map-by ppr:2:socket)
echo "$out" | grep -q "Open MPI 5.0's" || fail "WEFT_OMPI_VERSION=5.0: $out"
out=$(WEFT_OMPI_VERSION=6 plan -np 2)
echo "$out" | grep -q "WEFT_OMPI_VERSION '6': weftrun models Open MPI 4.1 and 5.0" || fail "WEFT_OMPI_VERSION=6: $out"
# a mpirun that is not 4 or 5
fake 3.1.6
out=$(plan -np 2)
echo "$out" | grep -q "is Open MPI 3.1; weftrun models Open MPI 4.1 and 5.0" || fail "3.1: $out"
echo "ok"
