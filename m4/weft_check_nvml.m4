# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_NVML: NVML, optional. --with-nvml[=DIR] requires it, --without-nvml turns it off.
# NVML comes with the driver (libnvidia-ml) and its header with the CUDA toolkit or the GDK;
# the stub library in lib64/stubs lets hosts without a driver link.
# Sets NVML_CPPFLAGS, NVML_LDFLAGS, NVML_LIBS, AM_CONDITIONAL WEFT_HAVE_NVML.
AC_DEFUN([WEFT_CHECK_NVML], [
  AC_REQUIRE([WEFT_CHECK_CUDA])
  AC_ARG_WITH([nvml],
    [AS_HELP_STRING([--with-nvml@<:@=DIR@:>@], [use NVML from DIR (default: auto, the CUDA directory)])],
    [], [with_nvml=check])
  weft_have_nvml=no
  weft_nvml_dir=
  AS_CASE([$with_nvml],
    [no], [],
    [yes|check], [weft_nvml_dir=${WEFT_CUDA_DIR:-/usr/local/cuda}],
    [weft_nvml_dir=$with_nvml])
  AS_IF([test -n "$weft_nvml_dir"], [
    NVML_CPPFLAGS="-I$weft_nvml_dir/include"
    NVML_LDFLAGS="-L$weft_nvml_dir/lib64 -L$weft_nvml_dir/lib64/stubs"
    weft_save_CPPFLAGS="$CPPFLAGS"; weft_save_LDFLAGS="$LDFLAGS"; weft_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $NVML_CPPFLAGS"; LDFLAGS="$LDFLAGS $NVML_LDFLAGS"
    AC_CHECK_HEADER([nvml.h], [AC_CHECK_LIB([nvidia-ml], [nvmlInit_v2], [weft_have_nvml=yes])])
    CPPFLAGS="$weft_save_CPPFLAGS"; LDFLAGS="$weft_save_LDFLAGS"; LIBS="$weft_save_LIBS"])
  AS_IF([test "$weft_have_nvml" = no && test "$with_nvml" != no && test "$with_nvml" != check],
    [AC_MSG_ERROR([--with-nvml was given but nvml.h and libnvidia-ml were not found under $weft_nvml_dir.])])
  AS_IF([test "$weft_have_nvml" = yes], [
    NVML_LIBS="-lnvidia-ml"
    AC_DEFINE([WEFT_HAVE_NVML], [1], [Define to 1 when NVML is available])],
    [NVML_CPPFLAGS=; NVML_LDFLAGS=; NVML_LIBS=])
  AC_SUBST([NVML_CPPFLAGS])
  AC_SUBST([NVML_LDFLAGS])
  AC_SUBST([NVML_LIBS])
  AM_CONDITIONAL([WEFT_HAVE_NVML], [test "$weft_have_nvml" = yes])
])
