# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_CMOCKA: cmocka for the unit tests. Without it the unit tests are skipped, not failed.
# Sets CMOCKA_CFLAGS, CMOCKA_LIBS, AM_CONDITIONAL WEFT_HAVE_CMOCKA.
AC_DEFUN([WEFT_CHECK_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [weft_have_cmocka=yes], [weft_have_cmocka=no])
  AM_CONDITIONAL([WEFT_HAVE_CMOCKA], [test "$weft_have_cmocka" = yes])
])
