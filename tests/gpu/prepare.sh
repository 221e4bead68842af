#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prepares here (Debian 12 with CUDA 13 and NCCL under /usr/local/cuda, as on
# CI) what tests/gpu/run.sh needs on a bare GPU machine, one that has the
# NVIDIA driver, CUDA and NCCL (PyTorch's wheels) but no Open MPI, no autotools
# and no network:
#
#   tests/gpu/prepare.sh [DIR]      DIR: default .gpu-carry in the repository
#
# - builds weft in _build-gpu; configure must find CUDA and NCCL (it stops
#   otherwise), and its summary goes to DIR/configure.txt for run.sh to check;
# - copies the programs run.sh runs into DIR/bin: the test programs and
#   weft-bench (they link weft statically and need only libmpi, libcudart and
#   libnccl at run time), and the launcher, weftrun, weft-rank and weft-topo
#   (they need only libhwloc; NVML and libcurl are opened at run time when there);
# - downloads the runtime packages of Open MPI, PMIx, libevent and hwloc, with
#   hwloc's plugins (apt-get download, so `apt-get update` must have run) and
#   unpacks them (dpkg -x) into DIR/root, without what mpirun and weftrun do not
#   use (documentation, Fortran, Java, OpenSHMEM, and the components whose
#   libraries are not there: InfiniBand, UCX, libfabric; of hwloc's plugins
#   only hwloc_pci stays, with libpciaccess: Debian's has none that reads
#   NVML or CUDA, and gl, opencl and xml_libxml need X11, OpenCL and libxml2;
#   run.sh points HWLOC_PLUGINS_PATH at the carried folder).
#
# DIR is ignored by git: carry it beside the repository (the device tool's
# carry list: ".gpu-carry"); both must stay under 64 MiB together, which the
# last line checks.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
carry=${1:-$top/.gpu-carry}
build=$top/_build-gpu
cuda=${CUDA_DIR:-/usr/local/cuda}
multi=x86_64-linux-gnu
pkgs="openmpi-bin libopenmpi3 openmpi-common libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7
      libhwloc15 libhwloc-plugins libpciaccess0 libmunge2 libudev1"
# Libraries every Linux with glibc has (not carried).
base='^(libc|libm|libdl|libpthread|librt|libz|libstdc\+\+|libgcc_s|ld-linux-x86-64|libutil|libcrypt)\.so'

say() { echo "prepare: $*"; }
die() { echo "prepare: $*" >&2; exit 1; }

# 1. weft, built against the real CUDA and NCCL.
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
if [ ! -f "$build/Makefile" ]; then
  say "configure in $build (CUDA and NCCL in $cuda)"
  (cd "$build" && "$top/configure" -q --enable-werror --with-cuda="$cuda" --with-nccl="$cuda") \
    >"$build/configure.txt" 2>&1 || { cat "$build/configure.txt"; die "configure failed"; }
fi
grep -q '^#define WEFT_HAVE_NCCL 1' "$build/config.h" || die "configure did not find NCCL: see $build/config.log"
grep -q '^#define WEFT_HAVE_CUDA 1' "$build/config.h" || die "configure did not find CUDA: see $build/config.log"
say "make in $build"
make -s -C "$build" -j"$(nproc)" >/dev/null
make -s -C "$build/lib/rt" libweft-rt-nonccl.la >/dev/null
make -s -C "$build/tests/gpu" test-rt-gpu test-rt-device-faults bench-bucket-pack >/dev/null
progs="tests/gpu/test-rt-gpu tests/gpu/test-rt-device-faults tests/gpu/bench-bucket-pack
       src/weft-bench/weft-bench src/weftrun/weftrun src/weft-rank/weft-rank src/weft-topo/weft-topo"

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/root"
for p in $progs; do
  f=$build/$p
  [ -f "$build/$(dirname "$p")/.libs/$(basename "$p")" ] && f=$build/$(dirname "$p")/.libs/$(basename "$p")
  head -c 4 "$f" | grep -q ELF || die "$f is not a program (a libtool wrapper?)"
  cp "$f" "$carry/bin/"
  strip "$carry/bin/$(basename "$p")" 2>/dev/null || true
done
{
  echo "# weft $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'), built $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
  grep -E '^#define WEFT_(HAVE_CUDA|HAVE_NCCL|CUDART_SONAME|NCCL_LIBDIR|CUDA_LIBDIR) ' "$build/config.h"
  sed -n '/^weft .* configured/,$p' "$build/configure.txt" 2>/dev/null || true
} >"$carry/configure.txt"

# 2. Open MPI's runtime from Debian's packages.
tmp=$(mktemp -d)
chmod 777 "$tmp" # apt-get downloads as the _apt user
trap 'rm -rf "$tmp"' EXIT INT TERM
say "apt-get download:" $pkgs
# shellcheck disable=SC2086
(cd "$tmp" && apt-get download -q $pkgs >/dev/null) ||
  die "apt-get download failed: run apt-get update first (as root)"
for deb in "$tmp"/*.deb; do
  dpkg -x "$deb" "$carry/root"
done
r=$carry/root
rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/lintian" "$r/usr/share/locale" \
  "$r/usr/lib/$multi/pmix2/lib/libpmix.a" "$r/usr/lib/$multi/openmpi/include" \
  "$r/usr/lib/$multi/openmpi/lib/pkgconfig" "$r/lib/udev" "$r/usr/lib/$multi/openmpi/lib/openmpi3/"*java* \
  "$r/etc/munge" "$r/usr/sbin" "$r/lib/systemd" "$r/usr/lib/systemd"
find "$r" \( -name '*fort*' -o -name '*usempi*' -o -name '*mpifh*' -o -name '*java*' -o -name '*oshmem*' \
  -o -name 'liboshmem*' -o -name '*.a' -o -name '*.la' -o -name '*.mod' \) -exec rm -rf {} + 2>/dev/null || true

# Everything carried must find its libraries in the carried tree or the base
# set; a component that cannot (InfiniBand, UCX, libfabric, CUDA-aware
# pieces; hwloc's gl, opencl and xml_libxml plugins) is left out, so that Open
# MPI and hwloc do not even try it.
have=$tmp/have
needs()
{
  readelf -d "$1" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'
}
missing()
{
  needs "$1" | grep -Ev "$base" | while read -r l; do
    case "$l" in libcudart.so*|libnccl.so*|libmpi.so.40) continue ;; esac
    grep -qxF "$l" "$have" || echo "$l"
  done
}
# Drop what cannot load, until what stays can (a component may need a
# library dropped in the round before).
dropped=
while :; do
  find "$r" -name 'lib*.so*' -exec basename {} \; | sort -u >"$have"
  gone=0
  for f in $(find "$r" -name 'mca_*.so' -o -name 'pmix_mca_*.so' -o -name 'libmca_common_*.so*' \
             -o -name 'hwloc_*.so'); do
    [ -e "$f" ] || continue
    if [ -n "$(missing "$f")" ]; then
      b=$(basename "$f")
      rm -f "$f"
      case "$b" in libmca_common_*) rm -f "$(dirname "$f")/${b%%.so*}".so* ;; esac
      dropped="$dropped ${b%%.so*}"
      gone=1
    fi
  done
  [ $gone -eq 1 ] || break
done
[ -z "$dropped" ] || say "left out (their libraries are not carried):$dropped"
bad=
for f in "$carry/bin/"* "$r/usr/bin/orterun" "$r/usr/bin/orted" $(find "$r" -name 'lib*.so.*' -type f); do
  m=$(missing "$f" | tr '\n' ' ')
  [ -z "$m" ] || bad="$bad $(basename "$f"): $m;"
done
[ -z "$bad" ] || die "not carried, but needed:$bad"
[ -e "$r/usr/lib/$multi/hwloc/hwloc_pci.so" ] || die "hwloc's pci plugin is not in $r/usr/lib/$multi/hwloc"
# Only what run.sh runs stays in bin.
for f in "$r/usr/bin/"*; do
  case "$(basename "$f")" in orterun|orted|mpirun.openmpi|mpiexec.openmpi|ompi_info) ;; *) rm -f "$f" ;; esac
done

size=$(du -sk "$carry" | cut -f1)
repo=$(cd "$top" && git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
say "$carry: $((size / 1024)) MiB; the repository's tracked files: $((repo / 1024)) MiB"
[ $((size + repo)) -lt $((60 * 1024)) ] || die "together over 60 MiB: the device tool carries 64 MiB at most"
say "ready: carry $(basename "$carry") and run tests/gpu/run.sh $(basename "$carry") on the GPU machine"
