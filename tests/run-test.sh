#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one test the way `make check` does (it is every test directory's
# LOG_COMPILER, see tests/tests.am), so that a test sees the same environment
# from make as by hand:
#   tests/run-test.sh [--top SRCDIR] [--build BUILDDIR] [--cc CC] TEST [ARGS...]
# SRCDIR defaults to the tree this script is in, BUILDDIR to $WEFT_BUILDDIR or
# SRCDIR/_build, CC to $CC or cc. TEST is a shell script (*.sh, run by
# /bin/sh), a Python script (*.py, run by /usr/bin/python3, else python3) or a
# program. Its exit status is the test's: 0 pass, 77 skip, anything else fail.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILDDIR:-$top/_build}
cc=${CC:-cc}
usage() { echo "run-test.sh: $1; usage: run-test.sh [--top DIR] [--build DIR] [--cc CC] TEST [ARGS...]" >&2; exit 99; }
while [ $# -gt 0 ]; do
  case $1 in
    --top|--build|--cc) [ $# -ge 2 ] || usage "$1 needs a value" ;;
  esac
  case $1 in
    --top) top=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage "unknown option '$1'" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || usage "no test given"

# Where the sources, the data (topologies, presets, help) and the build are.
WEFT_TOPDIR=$top WEFT_DATADIR=$top/share/weft WEFT_BUILDDIR=$build CC=$cc
export WEFT_TOPDIR WEFT_DATADIR WEFT_BUILDDIR CC
# Open MPI refuses to run as root without these; CI runs as root.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
# The user's own settings must not change what a test sees.
unset WEFT_TOPOLOGY WEFT_VERBOSE
# No test may reach the real GCE metadata server, even when CI runs on a GCE VM:
# DMI is read from an empty tree unless a test points WEFT_GCP_SYSROOT elsewhere.
unset GCE_METADATA_HOST
WEFT_GCP_SYSROOT=/nonexistent-weft-gcp-sysroot
export WEFT_GCP_SYSROOT

t=$1
shift
case $t in
  *.sh) exec /bin/sh "$t" "$@" ;;
  *.py) py=/usr/bin/python3
        [ -x "$py" ] || py=python3
        exec "$py" "$t" "$@" ;;
  *) exec "$t" "$@" ;;
esac
