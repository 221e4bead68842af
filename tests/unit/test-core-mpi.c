/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of which MPI a program was built with (lib/core/mpi.c): small ELF
 * programs made here with cc, linked to stub libraries named as each MPI's
 * (libmpich.so.12, libmpi.so.40, libmpi.so.12 with and without an Intel run
 * path), so that no MPI need be installed; a Python script importing mpi4py,
 * with a stand-in mpi4py package whose MPI module is such a program; the
 * script rules and damaged ELF images. Skipped without cc. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <elf.h>

#include <weftx.h>

static char dir[256];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  return system(cmd);
}

/* DIR/NAME: a program needing the stub library SONAME, made with extra linker words. */
static int program(const char *name, const char *soname, const char *extra)
{
  char cmd[2048];
  snprintf(cmd, sizeof(cmd),
           "cd %s && printf 'int MPI_Init(void){return 0;}\\n' > stub.c && "
           "cc -shared -fPIC -o %s stub.c -Wl,-soname,%s && "
           "printf 'int MPI_Init(void);int main(void){return MPI_Init();}\\n' > main.c && "
           "cc -o %s main.c %s -Wl,--no-as-needed %s >/dev/null 2>&1",
           dir, soname, soname, name, extra, soname);
  return system(cmd);
}

static weftx_mpi kind_of(const char *name, weftx_mpi_info *info)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  char *argv[] = {path, NULL};
  weftx_mpi_of_command(argv, 20, info);
  return info->kind;
}

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "%s/weft-mpi-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir))
    return -1;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  sh("rm -rf %s", dir);
  return 0;
}

static void test_programs(void **state)
{
  weftx_mpi_info info;
  (void)state;
  if (system("cc --version >/dev/null 2>&1"))
    skip();
  assert_int_equal(program("mpich_prog", "libmpich.so.12", ""), 0);
  assert_int_equal(kind_of("mpich_prog", &info), WEFTX_MPI_MPICH);
  assert_string_equal(info.lib, "libmpich.so.12");
  assert_int_equal(program("ompi_prog", "libmpi.so.40", ""), 0);
  assert_int_equal(kind_of("ompi_prog", &info), WEFTX_MPI_OPENMPI);
  assert_string_equal(info.lib, "libmpi.so.40");
  assert_int_equal(program("family_prog", "libmpi.so.12", ""), 0);
  assert_int_equal(kind_of("family_prog", &info), WEFTX_MPI_MPICH_FAMILY);
  assert_int_equal(
    program("intel_prog", "libmpi.so.12", "-Wl,-rpath,/opt/intel/oneapi/mpi/latest/lib"), 0);
  assert_int_equal(kind_of("intel_prog", &info), WEFTX_MPI_INTEL);
  assert_int_equal(program("plain_prog", "libfoo.so.1", ""), 0);
  assert_int_equal(kind_of("plain_prog", &info), WEFTX_MPI_NONE);
  assert_string_equal(info.lib, "");
  /* not there, not ELF, a shell script */
  assert_int_equal(kind_of("absent", &info), WEFTX_MPI_UNKNOWN);
  assert_non_null(strstr(info.why, "not an executable"));
  assert_int_equal(sh("printf '#!/bin/sh\\nexec ./x\\n' > %s/s.sh && chmod +x %s/s.sh", dir, dir),
                   0);
  assert_int_equal(kind_of("s.sh", &info), WEFTX_MPI_UNKNOWN);
  assert_non_null(strstr(info.why, "not a Python one"));
}

static void test_mpi4py(void **state)
{
  weftx_mpi_info info;
  char py[512], script[512];
  (void)state;
  if (system("cc --version >/dev/null 2>&1") || system("python3 -c 1 >/dev/null 2>&1"))
    skip();
  /* a stand-in mpi4py whose MPI module needs MPICH */
  assert_int_equal(program("mpich_mod", "libmpich.so.12", "-shared -fPIC"), 0);
  assert_int_equal(sh("mkdir -p %s/py/mpi4py && touch %s/py/mpi4py/__init__.py && "
                      "cp %s/mpich_mod %s/py/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so",
                      dir, dir, dir, dir),
                   0);
  assert_int_equal(sh("printf '#!/usr/bin/env python3\\nimport os\\nfrom mpi4py import MPI\\n' "
                      "> %s/hello.py && chmod +x %s/hello.py",
                      dir, dir),
                   0);
  snprintf(py, sizeof(py), "%s/py", dir);
  assert_int_equal(setenv("PYTHONPATH", py, 1), 0);
  assert_int_equal(kind_of("hello.py", &info), WEFTX_MPI_MPICH);
  assert_int_equal(info.mpi4py, 1);
  assert_non_null(strstr(info.file, "MPI.cpython"));
  /* "python3 SCRIPT" the same */
  snprintf(script, sizeof(script), "%s/hello.py", dir);
  char *argv[] = {(char *)"python3", script, NULL};
  weftx_mpi_of_command(argv, 20, &info);
  assert_int_equal(info.kind, WEFTX_MPI_MPICH);
  /* without mpi4py on the path: unknown, and said why */
  assert_int_equal(setenv("PYTHONPATH", "/nonexistent", 1), 0);
  if (system("python3 -c 'import mpi4py' >/dev/null 2>&1")) {
    assert_int_equal(kind_of("hello.py", &info), WEFTX_MPI_UNKNOWN);
    assert_non_null(strstr(info.why, "mpi4py"));
  }
  unsetenv("PYTHONPATH");
}

static void test_script_rules(void **state)
{
  char out[64];
  (void)state;
#define S(x) x, sizeof(x) - 1
  assert_int_equal(weftx_script_interpreter(S("#!/usr/bin/python3 -u\nx"), out, sizeof(out)), 0);
  assert_string_equal(out, "/usr/bin/python3");
  assert_int_equal(weftx_script_interpreter(S("#! /usr/bin/env python3.11\n"), out, sizeof(out)),
                   0);
  assert_string_equal(out, "python3.11");
  assert_int_equal(weftx_script_interpreter(S("#!/usr/bin/env -S python3 -u\n"), out, sizeof(out)),
                   -1);
  assert_int_equal(weftx_script_interpreter(S("\x7f"
                                              "ELF"),
                                            out, sizeof(out)),
                   -1);
  assert_int_equal(weftx_script_interpreter(S("#!\n"), out, sizeof(out)), -1);
  assert_true(weftx_is_python("/usr/bin/python3"));
  assert_true(weftx_is_python("python3.11"));
  assert_true(weftx_is_python("python"));
  assert_false(weftx_is_python("/usr/bin/python3-config"));
  assert_false(weftx_is_python("bash"));
  assert_true(weftx_script_imports_mpi4py(S("import os\nfrom mpi4py import MPI\n")));
  assert_true(weftx_script_imports_mpi4py(S("  import mpi4py.MPI as M")));
  assert_true(weftx_script_imports_mpi4py(S("import mpi4py\n")));
  assert_false(weftx_script_imports_mpi4py(S("import mpi4pyx\n")));
  assert_false(weftx_script_imports_mpi4py(S("# from mpi4py import MPI\n")));
  assert_false(weftx_script_imports_mpi4py(S("print('import mpi4py')\n")));
#undef S
}

static void test_bad_elf(void **state)
{
  weftx_elf_dyn d;
  unsigned char buf[256];
  const char *lib;
  (void)state;
  memset(buf, 0, sizeof(buf));
  assert_int_equal(weftx_elf_dyn_read(buf, sizeof(buf), &d), WEFT_EINVAL);
  memcpy(buf, ELFMAG, SELFMAG);
  buf[EI_CLASS] = ELFCLASS64;
  buf[EI_DATA] = ELFDATA2LSB;
  /* program headers past the end */
  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof(eh));
  memcpy(&eh, buf, EI_NIDENT);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phoff = 200;
  eh.e_phnum = 3;
  memcpy(buf, &eh, sizeof(eh));
  assert_int_equal(weftx_elf_dyn_read(buf, sizeof(buf), &d), WEFT_EINVAL);
  /* no program headers: static, needs nothing */
  eh.e_phnum = 0;
  memcpy(buf, &eh, sizeof(eh));
  assert_int_equal(weftx_elf_dyn_read(buf, sizeof(buf), &d), 0);
  assert_int_equal(d.nneeded, 0);
  assert_int_equal(weftx_mpi_classify(&d, &lib), WEFTX_MPI_NONE);
  assert_null(lib);
  /* shorter than its header */
  assert_int_equal(weftx_elf_dyn_read(buf, 10, &d), WEFT_EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_programs),
    cmocka_unit_test(test_mpi4py),
    cmocka_unit_test(test_script_rules),
    cmocka_unit_test(test_bad_elf),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
