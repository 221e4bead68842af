/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which MPI a program was built with (weftx/mpi.h): its DT_NEEDED entries,
 * read from the file as the loader reads them (program headers, not section
 * headers, which a stripped program may lack). Pure functions read buffers;
 * weftx_mpi_of_command() maps the files and asks a Python interpreter where
 * mpi4py is.
 */
#include "weft_private.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weftx/mpi.h>
#include <weftx/proc.h>

/* A file offset of virtual address \p v through the PT_LOAD segments; -1 when none. */
static long long vaddr_offset(const Elf64_Phdr *ph, int n, Elf64_Addr v)
{
  for (int i = 0; i < n; i++)
    if (ph[i].p_type == PT_LOAD && v >= ph[i].p_vaddr && v - ph[i].p_vaddr < ph[i].p_filesz)
      return (long long)(v - ph[i].p_vaddr + ph[i].p_offset);
  return -1;
}

int weftx_elf_dyn_read(const void *buf, size_t len, weftx_elf_dyn *d)
{
  const unsigned char *b = buf;
  Elf64_Ehdr eh;
  const Elf64_Phdr *ph;
  const Elf64_Phdr *dyn = NULL;
  memset(d, 0, sizeof(*d));
  if (len < sizeof(eh) || memcmp(b, ELFMAG, SELFMAG) || b[EI_CLASS] != ELFCLASS64 ||
      b[EI_DATA] != ELFDATA2LSB)
    return WEFT_EINVAL;
  memcpy(&eh, b, sizeof(eh));
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff % 8 || eh.e_phoff > len ||
      (size_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
    return WEFT_EINVAL;
  ph = (const Elf64_Phdr *)(b + eh.e_phoff);
  for (int i = 0; i < eh.e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = &ph[i];
  if (!dyn)
    return 0; /* static */
  if (dyn->p_offset % 8 || dyn->p_offset > len || dyn->p_filesz > len - dyn->p_offset)
    return WEFT_EINVAL;
  const Elf64_Dyn *dt = (const Elf64_Dyn *)(b + dyn->p_offset);
  size_t ndt = dyn->p_filesz / sizeof(Elf64_Dyn);
  Elf64_Addr strtab = 0;
  Elf64_Xword strsz = 0;
  int have_tab = 0;
  for (size_t i = 0; i < ndt && dt[i].d_tag != DT_NULL; i++) {
    if (dt[i].d_tag == DT_STRTAB) {
      strtab = dt[i].d_un.d_ptr;
      have_tab = 1;
    } else if (dt[i].d_tag == DT_STRSZ)
      strsz = dt[i].d_un.d_val;
  }
  if (!have_tab)
    return WEFT_EINVAL;
  long long off = vaddr_offset(ph, eh.e_phnum, strtab);
  if (off < 0 || (size_t)off > len)
    return WEFT_EINVAL;
  if (!strsz || strsz > len - (size_t)off)
    strsz = len - (size_t)off;
  const char *str = (const char *)b + off, *rpath = NULL;
  for (size_t i = 0; i < ndt && dt[i].d_tag != DT_NULL; i++) {
    Elf64_Sxword tag = dt[i].d_tag;
    Elf64_Xword at = dt[i].d_un.d_val;
    if (tag != DT_NEEDED && tag != DT_RUNPATH && tag != DT_RPATH)
      continue;
    if (at >= strsz || !memchr(str + at, '\0', strsz - at))
      return WEFT_EINVAL;
    if (tag == DT_NEEDED && d->nneeded < WEFTX_ELF_NEEDED_MAX)
      d->needed[d->nneeded++] = str + at;
    else if (tag == DT_RUNPATH)
      d->runpath = str + at;
    else if (tag == DT_RPATH)
      rpath = str + at;
  }
  if (!d->runpath)
    d->runpath = rpath;
  return 0;
}

/* 1 when library name \p n is \p base (".so" included) followed by nothing or ".N...". */
static int is_lib(const char *n, const char *base)
{
  size_t k = strlen(base);
  return !strncmp(n, base, k) && (n[k] == '\0' || n[k] == '.');
}

weftx_mpi weftx_mpi_classify(const weftx_elf_dyn *d, const char **lib)
{
  const char *rp = d->runpath ? d->runpath : "";
  *lib = NULL;
  for (int i = 0; i < d->nneeded; i++) {
    const char *n = d->needed[i];
    *lib = n;
    if (is_lib(n, "libmpich.so"))
      return WEFTX_MPI_MPICH;
    if (!strcmp(n, "libmpi.so.40") || is_lib(n, "libopen-rte.so") || is_lib(n, "libopen-pal.so"))
      return WEFTX_MPI_OPENMPI;
    if (!strcmp(n, "libmpi.so.12") || !strcmp(n, "libmpi_ilp64.so.12"))
      return strstr(rp, "intel") || strstr(rp, "oneapi") || strstr(rp, "impi")
               ? WEFTX_MPI_INTEL
               : WEFTX_MPI_MPICH_FAMILY;
  }
  *lib = NULL;
  return WEFTX_MPI_NONE;
}

int weftx_script_interpreter(const char *buf, size_t len, char *out, size_t outlen)
{
  size_t end = 2, at, k;
  if (len < 3 || buf[0] != '#' || buf[1] != '!')
    return -1;
  while (end < len && buf[end] != '\n')
    end++;
  at = 2 + strspn(buf + 2, " \t");
  if (at >= end)
    return -1;
  k = strcspn(buf + at, " \t\n");
  if (at + k > end)
    k = end - at;
  /* /usr/bin/env NAME: the next word, unless it is an option (env -S ...) */
  if (k >= 4 && !strncmp(buf + at + k - 4, "/env", 4)) {
    at += k;
    at += strspn(buf + at, " \t");
    if (at >= end || buf[at] == '-')
      return -1;
    k = strcspn(buf + at, " \t\n");
    if (at + k > end)
      k = end - at;
  }
  if (k == 0 || k >= outlen)
    return -1;
  memcpy(out, buf + at, k);
  out[k] = '\0';
  return 0;
}

int weftx_script_imports_mpi4py(const char *buf, size_t len)
{
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(buf + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - buf) : len, i = at;
    while (i < end && (buf[i] == ' ' || buf[i] == '\t'))
      i++;
    for (int w = 0; w < 2; w++) {
      const char *kw = w ? "from" : "import";
      size_t n = strlen(kw);
      if (end - i >= n + 7 && !strncmp(buf + i, kw, n) &&
          (buf[i + n] == ' ' || buf[i + n] == '\t')) {
        size_t j = i + n;
        while (j < end && (buf[j] == ' ' || buf[j] == '\t'))
          j++;
        if (end - j >= 6 && !strncmp(buf + j, "mpi4py", 6) &&
            (j + 6 == end || strchr(" \t.,;\r#", buf[j + 6])))
          return 1;
      }
    }
    at = end + 1;
  }
  return 0;
}

int weftx_is_python(const char *path)
{
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strncmp(base, "python", 6))
    return 0;
  return strspn(base + 6, "0123456789.") == strlen(base + 6);
}

const char *weftx_mpi_name(weftx_mpi m)
{
  switch (m) {
  case WEFTX_MPI_NONE: return "no MPI";
  case WEFTX_MPI_OPENMPI: return "Open MPI";
  case WEFTX_MPI_MPICH: return "MPICH";
  case WEFTX_MPI_MPICH_FAMILY: return "an MPICH-family MPI (MPICH, MVAPICH or Intel MPI)";
  case WEFTX_MPI_INTEL: return "Intel MPI";
  default: return "an unknown MPI";
  }
}

/* A file mapped read-only; NULL when it cannot be (why said). */
static void *map_file(const char *path, size_t *len, weftx_mpi_info *info)
{
  struct stat st;
  void *m = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0)
    snprintf(info->why, sizeof(info->why), "cannot read %s", path);
  else if ((m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
    snprintf(info->why, sizeof(info->why), "cannot map %s", path);
    m = NULL;
  } else
    *len = (size_t)st.st_size;
  if (fd >= 0)
    close(fd);
  return m;
}

/* ELF file \p path: its MPI into info; -1 (UNKNOWN, why said) when it is no ELF file. */
static int of_elf(const char *path, const void *m, size_t len, weftx_mpi_info *info)
{
  weftx_elf_dyn d;
  const char *lib;
  if (weftx_elf_dyn_read(m, len, &d)) {
    snprintf(info->why, sizeof(info->why), "%s is not a 64-bit ELF file weft can read", path);
    return -1;
  }
  info->kind = weftx_mpi_classify(&d, &lib);
  snprintf(info->lib, sizeof(info->lib), "%s", lib ? lib : "");
  snprintf(info->file, sizeof(info->file), "%s", path);
  return 0;
}

/* mpi4py's MPI module as \p python finds it: its directory, asked without importing
 * mpi4py.MPI, then the MPI*.so there. */
static void of_mpi4py(const char *python, double timeout, weftx_mpi_info *info)
{
  char *argv[] = {(char *)python, (char *)"-c", (char *)"import mpi4py; print(mpi4py.__path__[0])",
                  NULL};
  weftx_proc_spec s;
  weftx_proc_result r;
  char why[300] = "", dir[900] = "", found[1024] = "";
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.in = WEFTX_PROC_NULL;
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_NULL;
  s.timeout = timeout;
  s.grace = 1;
  s.drain = 1;
  s.max_output = 4096;
  info->mpi4py = 1;
  memset(&r, 0, sizeof(r));
  if (weftx_proc_run(&s, &r, why, sizeof(why)) || r.status || !r.output) {
    snprintf(info->why, sizeof(info->why), "%s could not import mpi4py%s%s", python,
             r.timed_out ? " in time" : "", why[0] ? why : "");
    free(r.output);
    return;
  }
  snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(r.output, "\r\n"), r.output);
  free(r.output);
  DIR *dh = opendir(dir);
  for (struct dirent *de; dh && (de = readdir(dh));) {
    size_t n = strlen(de->d_name);
    if (!strncmp(de->d_name, "MPI.", 4) && n > 7 && !strcmp(de->d_name + n - 3, ".so")) {
      snprintf(found, sizeof(found), "%s/%s", dir, de->d_name);
      break;
    }
  }
  if (dh)
    closedir(dh);
  if (!found[0]) {
    snprintf(info->why, sizeof(info->why), "no MPI.*.so in mpi4py's directory %s", dir);
    return;
  }
  size_t len = 0;
  void *m = map_file(found, &len, info);
  if (m) {
    of_elf(found, m, len, info);
    munmap(m, len);
  }
}

/* A Python interpreter named by a script (a path, or a name on PATH). */
static const char *find(const char *name, char *buf, size_t len)
{
  const char *look[] = {name, NULL};
  return weftx_find_exe(look, buf, len);
}

void weftx_mpi_of_command(char *const *argv, double timeout, weftx_mpi_info *info)
{
  char path[1024], interp[512], ipath[1024];
  const char *prog, *python = NULL, *script = NULL;
  size_t len = 0;
  void *m = NULL;
  memset(info, 0, sizeof(*info));
  if (!argv || !argv[0]) {
    snprintf(info->why, sizeof(info->why), "no program");
    return;
  }
  snprintf(info->program, sizeof(info->program), "%s", argv[0]);
  if (!(prog = find(argv[0], path, sizeof(path)))) {
    snprintf(info->why, sizeof(info->why), "%s is not an executable file here", argv[0]);
    return;
  }
  /* "python3 SCRIPT ...": the script's imports say */
  if (weftx_is_python(prog) && argv[1] && argv[1][0] != '-') {
    python = prog;
    script = argv[1];
    snprintf(info->program, sizeof(info->program), "%s", script);
  }
  if (!script) {
    if (!(m = map_file(prog, &len, info)))
      return;
    if (len >= 2 && !memcmp(m, "#!", 2)) {
      if (weftx_script_interpreter(m, len, interp, sizeof(interp)) || !weftx_is_python(interp) ||
          !(python = find(interp, ipath, sizeof(ipath))))
        snprintf(info->why, sizeof(info->why), "%s is a script, not a Python one weft can follow",
                 prog);
      else if (weftx_script_imports_mpi4py(m, len)) {
        munmap(m, len);
        of_mpi4py(python, timeout, info);
        return;
      } else
        snprintf(info->why, sizeof(info->why), "Python script %s does not import mpi4py", prog);
    } else
      of_elf(prog, m, len, info);
    munmap(m, len);
    return;
  }
  if (!(m = map_file(script, &len, info)))
    return;
  if (weftx_script_imports_mpi4py(m, len))
    of_mpi4py(python, timeout, info);
  else
    snprintf(info->why, sizeof(info->why), "Python script %s does not import mpi4py", script);
  munmap(m, len);
}
