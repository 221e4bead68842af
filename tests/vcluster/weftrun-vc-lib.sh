# SPDX-License-Identifier: BSD-3-Clause
# Shared by the weftrun vcluster tests (sourced): a 3-node virtual cluster with
# a different topology per node (a3-highgpu-8g, a2-highgpu-8g, g2-standard-48),
# a scratch directory, a unique program name for pgrep, and cleanup.
: "${WEFT_BUILDDIR:?}" "${WEFT_TOPDIR:?}"
weftrun="$WEFT_BUILDDIR/src/weftrun/weftrun"
vc="$WEFT_TOPDIR/contrib/vcluster/weft-vcluster"
topos="$WEFT_TOPDIR/share/weft/topologies"
[ -x "$vc" ] || { echo "SKIP: $vc not found"; exit 77; }
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
prefix="wr$$"
tmp=$(mktemp -d)
uniq="wfv$$x$(date +%N)"
cp "$(command -v sleep)" "$tmp/$uniq-sleep"
cleanup() {
  "$vc" --prefix "$prefix" down >/dev/null 2>&1 || true
  pkill -KILL -f "$uniq" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail=0

up() {
  set +e
  "$vc" --prefix "$prefix" up 3 --topology "vnode0=$topos/a3-highgpu-8g.xml" \
    --topology "vnode1=$topos/a2-highgpu-8g.xml" --topology "vnode2=$topos/g2-standard-48.xml" \
    >"$tmp/up.out" 2>"$tmp/up.err"
  rc=$?
  set -e
  if [ $rc = 3 ]; then
    echo "SKIP: weft-vcluster cannot make namespaces here: $(cat "$tmp/up.err")"
    exit 77
  fi
  [ $rc = 0 ] || { echo "FAIL: weft-vcluster up: $(cat "$tmp/up.err")"; exit 1; }
}
nothing_left() {
  i=0
  while pgrep -f "$uniq" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 50 ] || { echo "FAIL: left running:"; pgrep -af "$uniq"; return 1; }
    sleep 0.1
  done
}
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- "$weftrun" "$@"; }

