# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_CURL: libcurl, optional (GCE metadata). --with-curl requires it, --without-curl turns it off.
# Sets CURL_CFLAGS, CURL_LIBS, AM_CONDITIONAL WEFT_HAVE_CURL.
AC_DEFUN([WEFT_CHECK_CURL], [
  AC_ARG_WITH([curl],
    [AS_HELP_STRING([--with-curl], [use libcurl for the GCE metadata server (default: auto)])],
    [], [with_curl=check])
  weft_have_curl=no
  AS_IF([test "$with_curl" != no], [
    PKG_CHECK_MODULES([CURL], [libcurl >= 7.50], [weft_have_curl=yes], [weft_have_curl=no])])
  AS_IF([test "$weft_have_curl" = no && test "$with_curl" != no && test "$with_curl" != check],
    [AC_MSG_ERROR([--with-curl was given but libcurl was not found.
    On Debian or Ubuntu: apt-get install libcurl4-openssl-dev])])
  AS_IF([test "$weft_have_curl" = yes],
    [AC_DEFINE([WEFT_HAVE_CURL], [1], [Define to 1 when libcurl is available])],
    [CURL_CFLAGS=; CURL_LIBS=])
  AM_CONDITIONAL([WEFT_HAVE_CURL], [test "$weft_have_curl" = yes])
])
