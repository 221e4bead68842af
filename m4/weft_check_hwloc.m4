# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_HWLOC: hwloc >= 2.0 is required. Sets HWLOC_CFLAGS, HWLOC_LIBS.
AC_DEFUN([WEFT_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [weft_have_hwloc=yes], [
    AC_MSG_ERROR([hwloc >= 2.0 was not found (pkg-config hwloc).
    On Debian or Ubuntu: apt-get install libhwloc-dev hwloc
    Elsewhere: set PKG_CONFIG_PATH to the directory that holds hwloc.pc.])])
  weft_hwloc_version=`$PKG_CONFIG --modversion hwloc`
])
