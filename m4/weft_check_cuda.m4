# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_CUDA: the CUDA runtime, optional. --with-cuda[=DIR] requires it,
# --without-cuda turns it off, nothing means "use it when DIR (default /usr/local/cuda) has it".
# The libraries are in DIR/lib64 (toolkit) or DIR/lib (some packages); lib64/stubs lets build
# hosts without a GPU driver link. libweft itself links none of them: it opens the runtime by
# its soname when a device buffer first needs it (lib/rt/nccl-dl.c).
# Sets CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, AM_CONDITIONAL WEFT_HAVE_CUDA, WEFT_CUDA_DIR,
# and defines WEFT_CUDART_SONAME and WEFT_CUDA_LIBDIR.
AC_DEFUN([WEFT_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [use the CUDA runtime in DIR (default: auto, /usr/local/cuda)])],
    [], [with_cuda=check])
  weft_have_cuda=no
  WEFT_CUDA_DIR=
  AS_CASE([$with_cuda],
    [no], [],
    [yes|check], [WEFT_CUDA_DIR=/usr/local/cuda],
    [WEFT_CUDA_DIR=$with_cuda])
  AS_IF([test -n "$WEFT_CUDA_DIR"], [
    weft_cuda_libdir=$WEFT_CUDA_DIR/lib64
    for weft_d in lib64 lib; do
      AS_IF([ls "$WEFT_CUDA_DIR/$weft_d"/libcudart.so* >/dev/null 2>&1],
        [weft_cuda_libdir=$WEFT_CUDA_DIR/$weft_d; break])
    done
    CUDA_CPPFLAGS="-I$WEFT_CUDA_DIR/include"
    CUDA_LDFLAGS="-L$weft_cuda_libdir -L$WEFT_CUDA_DIR/lib64/stubs -Wl,-rpath,$weft_cuda_libdir"
    weft_save_CPPFLAGS="$CPPFLAGS"; weft_save_LDFLAGS="$LDFLAGS"; weft_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
    AC_CHECK_HEADER([cuda_runtime_api.h], [
      AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [weft_have_cuda=yes])])
    CPPFLAGS="$weft_save_CPPFLAGS"; LDFLAGS="$weft_save_LDFLAGS"; LIBS="$weft_save_LIBS"])
  AS_IF([test "$weft_have_cuda" = no && test "$with_cuda" != no && test "$with_cuda" != check],
    [AC_MSG_ERROR([--with-cuda was given but no CUDA runtime (cuda_runtime_api.h, libcudart) was found under $WEFT_CUDA_DIR.
    Give the CUDA installation directory (--with-cuda=/usr/local/cuda-13.0), or --without-cuda.])])
  AS_IF([test "$weft_have_cuda" = yes], [
    CUDA_LIBS="-lcudart"
    # The soname to open at run time: the library's own, else from the header's version.
    AC_MSG_CHECKING([for the soname of libcudart])
    weft_cudart_soname=`objdump -p "$weft_cuda_libdir/libcudart.so" 2>/dev/null | sed -n 's/^ *SONAME *//p'`
    AS_IF([test -z "$weft_cudart_soname"], [
      weft_cudart_major=`sed -n 's/^#define CUDART_VERSION *\([[0-9]]*\)[[0-9]][[0-9]][[0-9]]$/\1/p' "$WEFT_CUDA_DIR/include/cuda_runtime_api.h"`
      weft_cudart_soname=libcudart.so.${weft_cudart_major:-13}])
    AC_MSG_RESULT([$weft_cudart_soname])
    AC_DEFINE_UNQUOTED([WEFT_CUDART_SONAME], ["$weft_cudart_soname"], [The CUDA runtime libweft opens])
    AC_DEFINE_UNQUOTED([WEFT_CUDA_LIBDIR], ["$weft_cuda_libdir"], [Where configure found the CUDA runtime])
    AC_DEFINE([WEFT_HAVE_CUDA], [1], [Define to 1 when the CUDA runtime is available])],
    [CUDA_CPPFLAGS=; CUDA_LDFLAGS=; CUDA_LIBS=])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AM_CONDITIONAL([WEFT_HAVE_CUDA], [test "$weft_have_cuda" = yes])
])
