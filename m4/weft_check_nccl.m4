# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_NCCL: NCCL, optional, needs the CUDA runtime. --with-nccl[=DIR] requires it
# (default: the CUDA directory), --without-nccl turns it off.
# Sets NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS, AM_CONDITIONAL WEFT_HAVE_NCCL.
AC_DEFUN([WEFT_CHECK_NCCL], [
  AC_REQUIRE([WEFT_CHECK_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [use NCCL in DIR (default: auto, in the CUDA directory)])],
    [], [with_nccl=check])
  weft_have_nccl=no
  weft_nccl_dir=
  AS_CASE([$with_nccl],
    [no], [],
    [yes|check], [weft_nccl_dir=$WEFT_CUDA_DIR],
    [weft_nccl_dir=$with_nccl])
  AS_IF([test "$weft_have_cuda" = no && test "$with_nccl" != no && test "$with_nccl" != check],
    [AC_MSG_ERROR([--with-nccl needs the CUDA runtime, which was not found: give --with-cuda=DIR too.])])
  AS_IF([test -n "$weft_nccl_dir" && test "$weft_have_cuda" = yes], [
    NCCL_CPPFLAGS="-I$weft_nccl_dir/include"
    NCCL_LDFLAGS="-L$weft_nccl_dir/lib64 -L$weft_nccl_dir/lib -Wl,-rpath,$weft_nccl_dir/lib64"
    weft_save_CPPFLAGS="$CPPFLAGS"; weft_save_LDFLAGS="$LDFLAGS"; weft_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS $NCCL_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS $NCCL_LDFLAGS"
    AC_CHECK_HEADER([nccl.h], [
      AC_CHECK_LIB([nccl], [ncclCommInitRankConfig], [weft_have_nccl=yes], [], [$CUDA_LIBS])])
    AS_IF([test "$weft_have_nccl" = yes], [
      AC_CHECK_DECLS([ncclCommSplit], [], [], [[#include <nccl.h>]])])
    CPPFLAGS="$weft_save_CPPFLAGS"; LDFLAGS="$weft_save_LDFLAGS"; LIBS="$weft_save_LIBS"])
  AS_IF([test "$weft_have_nccl" = no && test "$with_nccl" != no && test "$with_nccl" != check],
    [AC_MSG_ERROR([--with-nccl was given but NCCL >= 2.14 (nccl.h, libnccl with ncclCommInitRankConfig) was not found under $weft_nccl_dir.])])
  AS_IF([test "$weft_have_nccl" = yes], [
    NCCL_LIBS="-lnccl"
    weft_nccl_version=`sed -n 's/^#define NCCL_VERSION_CODE \(.*\)/\1/p' $weft_nccl_dir/include/nccl.h 2>/dev/null`
    AC_DEFINE([WEFT_HAVE_NCCL], [1], [Define to 1 when NCCL is available])],
    [NCCL_CPPFLAGS=; NCCL_LDFLAGS=; NCCL_LIBS=])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LDFLAGS])
  AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([WEFT_HAVE_NCCL], [test "$weft_have_nccl" = yes])
])
