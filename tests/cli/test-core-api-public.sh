#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The public API is <weft.h> and nothing else:
#  - libweft.so exports exactly the functions the installed headers declare
#    (the same count, every declared one present), and fewer than 70;
#  - a program that includes <weft.h> compiles without hwloc's or CUDA's
#    headers (none is even opened) and links with -lweft alone;
#  - libweft.so needs neither the tools' libraries nor CUDA's or NCCL's.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
top=$WEFT_TOPDIR build=$WEFT_BUILDDIR
cc=${CC:-cc}
so=$build/lib/.libs/libweft.so
[ -f "$so" ] || skip "$so not built (--disable-shared?)"

# Functions declared in the installed headers: the name before "(" in every
# "WEFT_EXPORT ...;" declaration.
for h in "$top/lib/include/weft.h" "$top"/lib/include/weft/*.h; do
  tr '\n' ' ' <"$h" | grep -o 'WEFT_EXPORT[^;]*;' | sed 's/(.*//; s/.*[ *]//'
done | sort -u >"$tmp/declared"
nm -D --defined-only "$so" | awk '$2 == "T" { print $3 }' | grep '^weft' | sort -u >"$tmp/exported"
nd=$(wc -l <"$tmp/declared") ne=$(wc -l <"$tmp/exported")
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: libweft.so exports other functions than <weft.h> declares (< declared only, > exported only):"
  diff "$tmp/declared" "$tmp/exported" || true
  exit 1
fi
[ "$ne" -lt 70 ] || { echo "FAIL: $ne exported functions; the public API should stay under 70"; exit 1; }
echo "ok: $nd functions declared, $ne exported"

# A program of the public API only, compiled with weft's include directories alone.
cat >"$tmp/prog.c" <<'C'
#include <weft.h>
#include <stdio.h>
int main(void)
{
  printf("%s %s %zu\n", weft_version_string(), weft_strerror(WEFT_EINVAL), weft_dtype_size(WEFT_BFLOAT16));
  return weft_dtype_size(WEFT_FLOAT64) == 8 ? 0 : 1;
}
C
"$cc" -H -I"$top/lib/include" -I"$build/lib/include" -c "$tmp/prog.c" -o "$tmp/prog.o" 2>"$tmp/headers"
if grep -Ei 'hwloc|cuda|nccl|mpi\.h|weftx' "$tmp/headers"; then
  echo "FAIL: <weft.h> pulls in the headers above"
  exit 1
fi
# A library built with --enable-sanitize needs its program linked the same way
# (ASan's runtime must come first).
san=
if readelf -d "$so" | grep NEEDED | grep -q libasan; then
  san=-fsanitize=address,undefined
fi
"$cc" $san "$tmp/prog.o" -L"$build/lib/.libs" -lweft -Wl,-rpath,"$build/lib/.libs" -o "$tmp/prog"
out=$("$tmp/prog") || { echo "FAIL: the program linked with -lweft alone failed: $out"; exit 1; }
echo "ok: <weft.h> alone: $out"
# And nothing of the tools' tier is needed at run time, nor CUDA or NCCL
# (opened when a device buffer first needs them: CPU-only programs never load
# NCCL's 200 MB).
if readelf -d "$so" | grep NEEDED | grep -Ei 'hwloc|curl|cuda|nccl|nvidia'; then
  echo "FAIL: libweft.so needs the libraries above (the tools' tier, or CUDA and NCCL)"
  exit 1
fi
echo "ok: libweft.so needs neither hwloc, libcurl, CUDA nor NCCL"
