# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_CUDA: the CUDA runtime, optional. --with-cuda[=DIR] requires it,
# --without-cuda turns it off, nothing means "use it when DIR (default /usr/local/cuda) has it".
# Links against lib64/stubs too, so that build hosts without a GPU driver link.
# Sets CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, AM_CONDITIONAL WEFT_HAVE_CUDA, WEFT_CUDA_DIR.
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
    CUDA_CPPFLAGS="-I$WEFT_CUDA_DIR/include"
    CUDA_LDFLAGS="-L$WEFT_CUDA_DIR/lib64 -L$WEFT_CUDA_DIR/lib64/stubs -Wl,-rpath,$WEFT_CUDA_DIR/lib64"
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
    AC_DEFINE([WEFT_HAVE_CUDA], [1], [Define to 1 when the CUDA runtime is available])],
    [CUDA_CPPFLAGS=; CUDA_LDFLAGS=; CUDA_LIBS=])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AM_CONDITIONAL([WEFT_HAVE_CUDA], [test "$weft_have_cuda" = yes])
])
