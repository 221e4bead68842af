# SPDX-License-Identifier: BSD-3-Clause
# WEFT_CHECK_MPI: an MPI library (Open MPI first) is required.
# Sets MPI_CFLAGS, MPI_LIBS, MPIRUN (the path of mpirun found at configure time).
AC_DEFUN([WEFT_CHECK_MPI], [
  AC_ARG_VAR([MPI_CFLAGS], [C compiler flags for MPI, overriding pkg-config and mpicc])
  AC_ARG_VAR([MPI_LIBS], [linker flags for MPI, overriding pkg-config and mpicc])
  weft_mpi_found=no
  AS_IF([test -n "$MPI_LIBS"], [weft_mpi_found=yes])
  AS_IF([test "$weft_mpi_found" = no],
    [PKG_CHECK_MODULES([MPI], [ompi-c], [weft_mpi_found=yes], [weft_mpi_found=no])])
  AS_IF([test "$weft_mpi_found" = no], [
    AC_PATH_PROG([WEFT_MPICC], [mpicc])
    AS_IF([test -n "$WEFT_MPICC"], [
      MPI_CFLAGS=`$WEFT_MPICC --showme:compile 2>/dev/null`
      MPI_LIBS=`$WEFT_MPICC --showme:link 2>/dev/null`
      AS_IF([test -n "$MPI_LIBS"], [weft_mpi_found=yes])])])
  AS_IF([test "$weft_mpi_found" = yes], [
    weft_save_CPPFLAGS="$CPPFLAGS"; weft_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
    AC_MSG_CHECKING([whether an MPI program links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                    [[int n; MPI_Init(0, 0); MPI_Comm_size(MPI_COMM_WORLD, &n);]])],
                   [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); weft_mpi_found=no])
    CPPFLAGS="$weft_save_CPPFLAGS"; LIBS="$weft_save_LIBS"])
  AS_IF([test "$weft_mpi_found" = no],
    [AC_MSG_ERROR([MPI was not found (pkg-config ompi-c, or mpicc).
    On Debian or Ubuntu: apt-get install openmpi-bin libopenmpi-dev
    Elsewhere: set MPI_CFLAGS and MPI_LIBS, or put mpicc on PATH.])])
  AC_PATH_PROG([MPIRUN], [mpirun], [mpirun])
  AC_DEFINE_UNQUOTED([WEFT_MPIRUN_DEFAULT], ["$MPIRUN"], [mpirun found at configure time])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  weft_mpi_version=`$MPIRUN --version 2>/dev/null | head -n 1`
  # Open MPI's own parameter file (<sysconfdir>/openmpi-mca-params.conf), whose defaults
  # weftrun's plan reads as mpirun does; OPAL_SYSCONFDIR and OPAL_PREFIX move it at run time.
  AC_PATH_PROG([OMPI_INFO], [ompi_info])
  weft_ompi_sysconfdir=
  AS_IF([test -n "$OMPI_INFO"],
    [weft_ompi_sysconfdir=`$OMPI_INFO --path sysconfdir --parsable 2>/dev/null | sed -n 's/^path:sysconfdir://p'`])
  AS_IF([test -z "$weft_ompi_sysconfdir"],
    [weft_ompi_sysconfdir=`AS_DIRNAME(["$MPIRUN"])`/../etc])
  AC_DEFINE_UNQUOTED([WEFT_OMPI_SYSCONFDIR], ["$weft_ompi_sysconfdir"],
                     [Open MPI's sysconfdir, where openmpi-mca-params.conf is])
])
