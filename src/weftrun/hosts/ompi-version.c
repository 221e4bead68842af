/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which Open MPI the engine's mpirun is, for the plan, which models that
 * version's placement rules (4.1's ORTE or 5.0's PRRTE; weftx/ompi.h). Learnt
 * once from `mpirun --version` ("mpirun (Open MPI) 5.0.7") and kept in weft's
 * per-user cache beside the topology (weftx_cache_get()), one line per mpirun:
 * its real path, size, modification time and inode, then the version; a
 * reinstalled or upgraded mpirun changes the line's key and is asked again.
 * WEFT_OMPI_VERSION=4.1|5.0 says it instead (a plan for another machine with
 * --dry-run, the tests); without mpirun the plan follows 4.1's rules, as
 * --dry-run says.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hosts.h"

#define CACHE_NAME "mpirun-versions"
#define CACHE_MAX 8192
#define VERSION_DEADLINE_S 10 /* a real one answers in a fraction of a second */

/* "4.1.4" -> 401, "5.0" -> 500; -1 when it is not MAJOR.MINOR[...]. */
static int parse_version(const char *s)
{
  char *end;
  long major = strtol(s, &end, 10), minor;
  if (end == s || *end != '.' || major < 1 || major > 99)
    return -1;
  s = end + 1;
  minor = strtol(s, &end, 10);
  if (end == s || minor < 0 || minor > 99)
    return -1;
  return (int)(major * 100 + minor);
}

/* The version in `mpirun --version`'s first line, "mpirun (Open MPI) 5.0.7" (prterun
 * says the same under Open MPI 5): its number, or -1 when the line is not Open MPI's. */
static int parse_output(const char *out)
{
  const char *m = strstr(out, "(Open MPI) ");
  const char *nl = strchr(out, '\n');
  if (!m || (nl && m > nl))
    return -1;
  return parse_version(m + strlen("(Open MPI) "));
}

/* "REALPATH SIZE MTIME INO" of the mpirun at \p path. */
static int key_of(const char *path, char *key, size_t len)
{
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path, real) || stat(real, &st))
    return -1;
  int n = snprintf(key, len, "%s %lld %lld.%09ld %llu", real, (long long)st.st_size,
                   (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
  return n < 0 || (size_t)n >= len || strchr(real, '\n') ? -1 : 0;
}

/* The cached version of \p key, or -1. */
static int cached(const char *text, const char *key)
{
  size_t k = strlen(key);
  for (const char *l = text; *l;) {
    size_t n = strcspn(l, "\n");
    if (n > k + 1 && !strncmp(l, key, k) && l[k] == '\t')
      return parse_version(l + k + 1);
    l += n + (l[n] == '\n');
  }
  return -1;
}

/* The cache with \p key's line replaced (other mpiruns' lines kept, the newest last). */
static void remember(const char *text, const char *key, int v)
{
  char out[CACHE_MAX];
  size_t used = 0, k = strlen(key);
  out[0] = '\0';
  for (const char *l = text; *l;) {
    size_t n = strcspn(l, "\n");
    if (!(n > k && !strncmp(l, key, k) && l[k] == '\t') && used + n + 1 < sizeof(out) / 2) {
      memcpy(out + used, l, n);
      used += n;
      out[used++] = '\n';
      out[used] = '\0';
    }
    l += n + (l[n] == '\n');
  }
  if (snprintf(out + used, sizeof(out) - used, "%s\t%d.%d\n", key, v / 100, v % 100) <
      (int)(sizeof(out) - used))
    weftx_cache_put(CACHE_NAME, out);
}

int wr_ompi_version(const char *mpirun, int stop_fd, int *version)
{
  const char *env = getenv("WEFT_OMPI_VERSION");
  char key[PATH_MAX + 128], text[CACHE_MAX] = "", why[600] = "";
  int v;

  *version = WR_OMPI_DEFAULT;
  if (env && *env) {
    v = parse_version(env);
    if (v / 100 != 4 && v / 100 != 5) {
      fprintf(stderr,
              "weftrun: WEFT_OMPI_VERSION '%s': weftrun models Open MPI 4.1 and 5.0; set it to "
              "4.1 or 5.0, or unset it to ask mpirun\n",
              env);
      return WR_EXIT_USAGE;
    }
    *version = v;
    return 0;
  }
  if (!mpirun)
    return 0;
  int have_key = key_of(mpirun, key, sizeof(key)) == 0;
  if (have_key && weftx_cache_get(CACHE_NAME, text, sizeof(text)) == 0 &&
      (v = cached(text, key)) > 0) {
    *version = v;
    return 0;
  }
  char *argv[] = {(char *)mpirun, (char *)"--version", NULL};
  weftx_proc_spec s;
  weftx_proc_result r;
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.out = WEFTX_PROC_PIPE;
  s.max_output = 1 << 16;
  s.timeout = VERSION_DEADLINE_S;
  s.grace = 1;
  s.stop_fd = stop_fd;
  int failed = weftx_proc_run(&s, &r, why, sizeof(why));
  if (r.stopped) {
    free(r.output);
    fprintf(stderr, "weftrun: got signal %d; nothing was started (exit %d)\n", r.stopped,
            128 + r.stopped);
    return 128 + r.stopped;
  }
  if (failed || r.status) {
    fprintf(stderr, "weftrun: %s --version, to learn which Open MPI it is: %s\n", mpirun,
            why[0]        ? why
            : r.timed_out ? "no answer"
                          : "failed");
    free(r.output);
    return WR_EXIT_ENGINE;
  }
  v = parse_output(r.output ? r.output : "");
  free(r.output);
  if (v < 0) {
    /* not Open MPI's mpirun: the engine says so when it runs; the plan is 4.1's */
    *version = WR_OMPI_NOT;
    return 0;
  }
  if (v / 100 != 4 && v / 100 != 5) {
    fprintf(stderr,
            "weftrun: %s is Open MPI %d.%d; weftrun models Open MPI 4.1 and 5.0 (their "
            "placement rules); set WEFT_MPIRUN to the mpirun of one of those\n",
            mpirun, v / 100, v % 100);
    return WR_EXIT_ENGINE;
  }
  if (have_key)
    remember(text, key, v);
  *version = v;
  return 0;
}
