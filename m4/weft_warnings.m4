# SPDX-License-Identifier: BSD-3-Clause
# WEFT_WARNINGS: -Wall -Wextra and friends that the compiler accepts, into WEFT_CFLAGS.
# --enable-werror adds -Werror (CI); --enable-sanitize adds ASan and UBSan.
AC_DEFUN([WEFT_CFLAG_TRY], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  weft_save_CFLAGS="$CFLAGS"; CFLAGS="$CFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); WEFT_CFLAGS="$WEFT_CFLAGS $1"], [AC_MSG_RESULT([no])])
  CFLAGS="$weft_save_CFLAGS"
])
AC_DEFUN([WEFT_WARNINGS], [
  AC_ARG_ENABLE([werror], [AS_HELP_STRING([--enable-werror], [turn warnings into errors])],
    [], [enable_werror=no])
  AC_ARG_ENABLE([sanitize], [AS_HELP_STRING([--enable-sanitize], [build with -fsanitize=address,undefined])],
    [], [enable_sanitize=no])
  WEFT_CFLAGS=
  for f in -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wformat=2 \
           -Wno-unused-parameter -Wno-missing-field-initializers -fvisibility=hidden; do
    WEFT_CFLAG_TRY([$f])
  done
  AS_IF([test "$enable_werror" = yes], [WEFT_CFLAGS="$WEFT_CFLAGS -Werror"])
  AS_IF([test "$enable_sanitize" = yes], [
    WEFT_CFLAGS="$WEFT_CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer"
    WEFT_LDFLAGS="$WEFT_LDFLAGS -fsanitize=address,undefined"])
  AC_SUBST([WEFT_CFLAGS])
  AC_SUBST([WEFT_LDFLAGS])
])
