# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the vcluster tests: the tool's path, a prefix of the test's own,
# and vc_up, which brings a cluster up or exits 77 where namespaces cannot be
# made here, and takes it down again when the test exits.
: "${WEFT_TOPDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${WEFT_BUILDDIR:=$WEFT_TOPDIR}"
vc=$WEFT_TOPDIR/contrib/vcluster/weft-vcluster
prefix=wvc-$(basename "$0" .sh | sed 's/^vcluster-//')-$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

fail() { echo "FAIL: $*" >&2; exit 1; }

vc_skip_unless_root() {
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: weft-vcluster needs root for network namespaces"; exit 77; }
}

vc_cleanup() {
  "$vc" --prefix "$prefix" down >/dev/null 2>&1 || true
}

# vc_up N [up options]: sets $hostfile.
vc_up() {
  vc_skip_unless_root
  trap vc_cleanup EXIT
  trap 'exit 1' INT TERM
  rc=0
  hostfile=$("$vc" --prefix "$prefix" up "$@") || rc=$?
  if [ $rc -eq 3 ]; then
    echo "SKIP: network namespaces cannot be made here (weft-vcluster up exit 3)"
    exit 77
  fi
  [ $rc -eq 0 ] || fail "weft-vcluster up $* exited $rc"
  [ -f "$hostfile" ] || fail "up printed '$hostfile', which is not a file"
}
