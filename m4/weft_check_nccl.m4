# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_NCCL: NCCL >= 2.14, optional, needs the CUDA runtime. --with-nccl[=DIR] requires it
# (default: the CUDA directory), --without-nccl turns it off. NCCL is not part of the CUDA
# toolkit: its tarballs and the pip wheel (nvidia-nccl-cu13) keep the library in DIR/lib, with
# only libnccl.so.2 in the wheel; distribution packages use DIR/lib64 or the system directory.
# CUDA found without NCCL is said loudly: that libweft refuses device buffers (WEFT_ENONCCL).
# ncclCommSplit (2.18) is looked up at run time; before 2.18 mesh groups come up on their own.
# Sets NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS, AM_CONDITIONAL WEFT_HAVE_NCCL, and defines
# WEFT_NCCL_LIBDIR.
AC_DEFUN([WEFT_CHECK_NCCL], [
  AC_REQUIRE([WEFT_CHECK_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [use NCCL in DIR (default: auto, in the CUDA directory)])],
    [], [with_nccl=check])
  weft_have_nccl=no
  weft_nccl_dir=
  weft_nccl_why="not looked for (--without-nccl)"
  AS_CASE([$with_nccl],
    [no], [],
    [yes|check], [weft_nccl_dir=$WEFT_CUDA_DIR],
    [weft_nccl_dir=$with_nccl])
  AS_IF([test "$weft_have_cuda" = no && test "$with_nccl" != no && test "$with_nccl" != check],
    [AC_MSG_ERROR([--with-nccl needs the CUDA runtime, which was not found: give --with-cuda=DIR too.])])
  AS_IF([test -n "$weft_nccl_dir" && test "$weft_have_cuda" = yes], [
    weft_nccl_libdir=
    for weft_d in lib64 lib; do
      AS_IF([test -e "$weft_nccl_dir/$weft_d/libnccl.so.2" || test -e "$weft_nccl_dir/$weft_d/libnccl.so"],
        [weft_nccl_libdir=$weft_nccl_dir/$weft_d; break])
    done
    weft_nccl_why="no libnccl.so.2 in $weft_nccl_dir/lib64 or $weft_nccl_dir/lib"
    AS_IF([test -n "$weft_nccl_libdir"], [
      # The wheel has no libnccl.so link for -lnccl: name the file.
      AS_IF([test -e "$weft_nccl_libdir/libnccl.so"], [weft_nccl_l=-lnccl], [weft_nccl_l=-l:libnccl.so.2])
      NCCL_CPPFLAGS="-I$weft_nccl_dir/include"
      NCCL_LDFLAGS="-L$weft_nccl_libdir -Wl,-rpath,$weft_nccl_libdir"
      weft_save_CPPFLAGS="$CPPFLAGS"; weft_save_LDFLAGS="$LDFLAGS"; weft_save_LIBS="$LIBS"
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS $NCCL_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS $NCCL_LDFLAGS"
      weft_nccl_why="no nccl.h in $weft_nccl_dir/include"
      AC_CHECK_HEADER([nccl.h], [
        weft_nccl_version=`sed -n 's/^#define NCCL_VERSION_CODE \(.*\)/\1/p' "$weft_nccl_dir/include/nccl.h" 2>/dev/null`
        weft_nccl_why="nccl.h in $weft_nccl_dir/include is NCCL ${weft_nccl_version:-?}, older than 2.14"
        AS_IF([test "${weft_nccl_version:-0}" -ge 21400], [
          weft_nccl_why="$weft_nccl_libdir/libnccl.so.2 does not link (ncclCommInitRankConfig)"
          LIBS="$weft_nccl_l $CUDA_LIBS $LIBS"
          AC_MSG_CHECKING([for ncclCommInitRankConfig in $weft_nccl_l])
          AC_LINK_IFELSE([AC_LANG_CALL([], [ncclCommInitRankConfig])],
            [AC_MSG_RESULT([yes]); weft_have_nccl=yes], [AC_MSG_RESULT([no])])])])
      CPPFLAGS="$weft_save_CPPFLAGS"; LDFLAGS="$weft_save_LDFLAGS"; LIBS="$weft_save_LIBS"])])
  AS_IF([test "$weft_have_nccl" = no && test "$with_nccl" != no && test "$with_nccl" != check],
    [AC_MSG_ERROR([--with-nccl was given but NCCL >= 2.14 was not found: $weft_nccl_why.
    Give the directory that holds include/nccl.h and lib/ or lib64/ (--with-nccl=DIR).])])
  AS_IF([test "$weft_have_nccl" = yes], [
    NCCL_LIBS=$weft_nccl_l
    AC_DEFINE_UNQUOTED([WEFT_NCCL_LIBDIR], ["$weft_nccl_libdir"], [Where configure found libnccl.so.2])
    AC_DEFINE([WEFT_HAVE_NCCL], [1], [Define to 1 when NCCL is available])],
    [NCCL_CPPFLAGS=; NCCL_LDFLAGS=; NCCL_LIBS=
     AS_IF([test "$weft_have_cuda" = yes && test "$with_nccl" != no],
       [AC_MSG_WARN([
  CUDA was found but NCCL was not ($weft_nccl_why).
  NCCL is not part of the CUDA toolkit. This libweft will refuse device buffers with
  WEFT_ENONCCL. Install NCCL, or give --with-nccl=DIR (the directory holding include/nccl.h
  and lib/ or lib64/), or --without-nccl to silence this.])])])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LDFLAGS])
  AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([WEFT_HAVE_NCCL], [test "$weft_have_nccl" = yes])
])
