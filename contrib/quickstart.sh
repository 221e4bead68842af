#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# weft on a fresh Debian 12 machine, in one command:
#   contrib/quickstart.sh run    install what weft needs, build it, run a 4-rank job here
#   contrib/quickstart.sh test   install what weft needs, build it, run the whole test suite
#                                (WEFT_SANITIZE=1: and again under ASan + UBSan, as CI does)
#
# Installs Debian packages with apt-get when something is missing (as root, or
# through sudo), builds in _build/, and never touches anything outside it.
set -eu

mode=${1:-}
case "$mode" in
  run|test) ;;
  *) echo "usage: contrib/quickstart.sh run|test" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Build tools, required libraries, optional ones, the real programs the tests run under weftrun,
# Slurm with munge for weft-vcluster's Slurm clusters (which run daemons of their own, never the system's),
# modulecmd for the modulefile's test, what tests/install/test-install-deb.sh builds packages with,
# clang-format, which keeps the one C style (tests/cli/test-core-format.sh), debootstrap, which makes the
# Debian 13 root of the Open MPI 5 test (contrib/trixie-root, tests/cli/test-ompi5-root.sh), and MPICH
# beside Open MPI for weftrun's hydra engine (tests/launch/test-weftrun-hydra.sh): Debian registers MPICH's
# mpirun and mpicc at a lower priority (40) than Open MPI's (50), so mpirun and mpicc stay Open MPI's.
pkgs="build-essential autoconf automake libtool pkg-config
      openmpi-bin libopenmpi-dev libhwloc-dev hwloc libcmocka-dev libcurl4-openssl-dev mpich libmpich-dev
      iproute2 procps python3 python3-mpi4py python3-torch lammps hpcc gnuplot-nox
      slurmd slurmctld slurm-client munge environment-modules debhelper lintian clang-format
      debootstrap"
missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "quickstart: installing Debian packages:$missing"
  sudo=
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
case "$(readlink -f /usr/bin/mpirun 2>/dev/null)" in
  *mpich*|*hydra*) echo "quickstart: /usr/bin/mpirun is MPICH's; weft's tests expect Open MPI's" \
    "(update-alternatives --auto mpirun)" >&2; exit 1 ;;
esac

[ -x configure ] || ./autogen.sh
mkdir -p _build
cd _build
[ -f Makefile ] || ../configure --enable-werror
make -s -j"$(nproc)"

if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

if [ "$mode" = test ]; then
  # Every test's verdict is in the test-suite.log of its directory; the
  # counts of all of them (and of the sanitizer pass) make the last line.
  pass=0 fail=0 skip=0
  tally()
  {
    for log in $(find . -name test-suite.log); do
      p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
      x=$(sed -n 's/^# XPASS: *//p' "$log"); e=$(sed -n 's/^# ERROR: *//p' "$log")
      s=$(sed -n 's/^# SKIP: *//p' "$log")
      pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${x:-0} + ${e:-0})); skip=$((skip + ${s:-0}))
      if [ "${f:-0}${e:-0}${x:-0}" != "000" ]; then cat "$log"; fi
    done
  }
  rc=0
  make -j"$(nproc)" check || rc=$?
  tally
  [ $rc -eq 0 ] || [ $fail -gt 0 ] || fail=$((fail + 1))

  # WEFT_SANITIZE=1 (CI sets it): the same sources built with ASan and UBSan,
  # and the tests that run weft's code on one machine run again with them
  # (the device path too, on the CUDA/NCCL stand-in).
  # Leak checking is off: Open MPI's and hwloc's PCI plugin's own allocations
  # are reported as leaks at exit.
  if [ "${WEFT_SANITIZE:-0}" = 1 ]; then
    mkdir -p "$top/_build-sanitize"
    cd "$top/_build-sanitize"
    [ -f Makefile ] || ../configure -q --enable-sanitize
    rc=0
    # the tools run at build time (the man pages)
    if ASAN_OPTIONS=detect_leaks=0 make -s -j"$(nproc)"; then
      for d in unit cli mpi launch standin gpu; do
        ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
          make -j"$(nproc)" -C tests/$d check || rc=$?
      done
      tally
    else
      echo "FAIL: the ASan/UBSan build"
      rc=1
    fi
    [ $rc -eq 0 ] || [ $fail -gt 0 ] || fail=$((fail + 1))
  fi
  # CI (WEFT_SANITIZE=1), or WEFT_TEST_INSTALL=1: the Debian packages built, linted,
  # installed into an overlay of this machine's root, used and purged (about 3 minutes).
  if [ "${WEFT_SANITIZE:-0}" = 1 ] || [ "${WEFT_TEST_INSTALL:-0}" = 1 ]; then
    rc=0
    "$top/tests/install/test-install-deb.sh" >"$top/_build/test-install-deb.log" 2>&1 || rc=$?
    case $rc in
      0) pass=$((pass + 1)); echo "PASS: tests/install/test-install-deb.sh" ;;
      77) skip=$((skip + 1)); echo "SKIP: tests/install/test-install-deb.sh: $(tail -n 1 "$top/_build/test-install-deb.log")" ;;
      *) fail=$((fail + 1)); cat "$top/_build/test-install-deb.log"; echo "FAIL: tests/install/test-install-deb.sh" ;;
    esac
  fi
  echo "$pass passed, $fail failed, $skip skipped"
  [ $fail -eq 0 ]
  exit
fi

# The main job on this machine: where weftrun puts 4 ranks here, then a
# data-parallel training run (examples/dp_train) on 4 ranks through weftrun.
# This machine may have fewer cores than ranks: --oversubscribe says that is fine.
export WEFT_DATADIR="$top/share/weft"
src/weft-topo/weft-topo -np 4 --oversubscribe
exec src/weftrun/weftrun --oversubscribe -np 4 --report-bindings examples/dp_train
