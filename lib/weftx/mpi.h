/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which MPI a program was built with, as its own ELF file says: the libraries
 * it needs (DT_NEEDED). Open MPI's libmpi.so.40; MPICH's libmpich.so.12, or
 * libmpi.so.12, which MPICH, MVAPICH and Intel MPI all name (Intel MPI told
 * apart only by an Intel or oneAPI run path, else "MPICH-family"). A script
 * is followed to its interpreter only where that can be told: a Python
 * script (#! python, or "python3 SCRIPT") that imports mpi4py is mpi4py's
 * MPI module's MPI; any other script is unknown. A program that links MPI
 * only through another library reads as none: this is not ldd.
 * Internal tier: not installed, no ABI promise (see weftx.h).
 */
#ifndef WEFTX_MPI_H
#define WEFTX_MPI_H

#include <stddef.h>

#include <weft/common.h>

typedef enum weftx_mpi {
  WEFTX_MPI_UNKNOWN = 0,  /* cannot tell: not found, not ELF, a script of another kind */
  WEFTX_MPI_NONE,         /* an ELF program that needs no MPI library itself */
  WEFTX_MPI_OPENMPI,      /* libmpi.so.40 (Open MPI 3 to 5) */
  WEFTX_MPI_MPICH,        /* libmpich.so.* */
  WEFTX_MPI_MPICH_FAMILY, /* libmpi.so.12: MPICH, MVAPICH or Intel MPI */
  WEFTX_MPI_INTEL,        /* libmpi.so.12 from an Intel MPI (or oneAPI) directory */
} weftx_mpi;

#define WEFTX_ELF_NEEDED_MAX 64

/* What an ELF file's dynamic section says: the names point into the caller's buffer. */
typedef struct weftx_elf_dyn {
  const char *needed[WEFTX_ELF_NEEDED_MAX];
  int nneeded;
  const char *runpath; /* DT_RUNPATH, else DT_RPATH; NULL when neither */
} weftx_elf_dyn;

/* What weftx_mpi_of_command() found. */
typedef struct weftx_mpi_info {
  weftx_mpi kind;
  char lib[64];       /* the library that says it ("libmpich.so.12"); empty when none */
  char program[1024]; /* the program, or the Python script, as named */
  char file[1024];    /* the ELF file read: the program, or mpi4py's MPI module */
  int mpi4py;         /* 1: a Python script importing mpi4py */
  char why[300];      /* with UNKNOWN: why it cannot be told */
} weftx_mpi_info;

WEFT_BEGIN_DECLS

/** \brief The dynamic section of the 64-bit little-endian ELF image \p buf (\p len
 * bytes), found as the loader finds it (PT_DYNAMIC, DT_STRTAB through PT_LOAD).
 * \return 0; WEFT_EINVAL when it is not such an ELF file or its dynamic section is
 * out of bounds (a static program: 0 with nothing needed). */
int weftx_elf_dyn_read(const void *buf, size_t len, weftx_elf_dyn *d);

/** \brief The MPI that libraries \p d needs say; \p lib gets the one that says it. */
weftx_mpi weftx_mpi_classify(const weftx_elf_dyn *d, const char **lib);

/** \brief The interpreter of a script that starts with "#!" (its path, or the word
 * after /usr/bin/env) into \p out. 0, or -1 when \p buf is no script or the line is
 * not read reliably (env with options). */
int weftx_script_interpreter(const char *buf, size_t len, char *out, size_t outlen);

/** \brief 1 when Python source \p buf has a line "import mpi4py..." or "from mpi4py
 * import ..." (leading blanks allowed), else 0. */
int weftx_script_imports_mpi4py(const char *buf, size_t len);

/** \brief 1 when \p path's last component names a Python interpreter (python, python3,
 * python3.11). */
int weftx_is_python(const char *path);

/** \brief Which MPI command \p argv (argv[0] looked up on $PATH) was built with, as
 * above. mpi4py's directory is asked of the script's interpreter (it imports mpi4py,
 * not mpi4py.MPI: no MPI is started), within \p timeout seconds. Never fails: what
 * cannot be read is WEFTX_MPI_UNKNOWN with info->why. */
void weftx_mpi_of_command(char *const *argv, double timeout, weftx_mpi_info *info);

/** \brief "Open MPI", "MPICH", "an MPICH-family MPI (MPICH, MVAPICH or Intel MPI)", ... */
const char *weftx_mpi_name(weftx_mpi m);

WEFT_END_DECLS

#endif /* WEFTX_MPI_H */
