/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Find an executable: at a given path, next to this program ("$ORIGIN/...",
 * as ld.so spells it: a build tree or an installed prefix), or on $PATH.
 */
#include "weft_private.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weftx/proc.h>

#define ORIGIN "$ORIGIN/"

static int executable(const char *p)
{
  struct stat st;

  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* \p rel under the directory of /proc/self/exe, canonical, into buf. */
static int near_self(const char *rel, char *buf, size_t len)
{
  char self[PATH_MAX], *slash, *real;
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

  if (n <= 0)
    return -1;
  self[n] = '\0';
  slash = strrchr(self, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  if (weft__snprintf(buf, len, "%s/%s", self, rel) || !executable(buf))
    return -1;
  real = realpath(buf, NULL);
  if (!real)
    return -1;
  n = weft__snprintf(buf, len, "%s", real);
  free(real);
  return n ? -1 : 0;
}

static int on_path(const char *name, char *buf, size_t len)
{
  const char *path = getenv("PATH");

  if (!path)
    path = "/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    /* an empty entry is the current directory, as for execvp() */
    if (!weft__snprintf(buf, len, "%.*s%s%s", (int)n, path, n ? "/" : "", name) && executable(buf))
      return 0;
    path += n + (path[n] == ':');
  }
  return -1;
}

int weftx_self_exe(char *buf, size_t len)
{
  char exe[PATH_MAX], wrapper[PATH_MAX], *slash, *base;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

  if (n <= 0)
    return -1;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  if (slash && slash - exe >= 6 && !strncmp(slash - 6, "/.libs", 6)) {
    base = slash + 1;
    if (!strncmp(base, "lt-", 3))
      base += 3;
    slash[-6] = '\0';
    if (!weft__snprintf(wrapper, sizeof(wrapper), "%s/%s", exe, base) && executable(wrapper))
      return weft__snprintf(buf, len, "%s", wrapper) ? -1 : 0;
    slash[-6] = '/';
  }
  return weft__snprintf(buf, len, "%s", exe) ? -1 : 0;
}

const char *weftx_find_exe(const char *const *look, char *buf, size_t len)
{
  for (; look && *look; look++) {
    const char *w = *look;
    if (!*w)
      continue;
    if (!strncmp(w, ORIGIN, strlen(ORIGIN))) {
      if (near_self(w + strlen(ORIGIN), buf, len) == 0)
        return buf;
    } else if (strchr(w, '/')) {
      if (!weft__snprintf(buf, len, "%s", w) && executable(buf))
        return buf;
    } else if (on_path(w, buf, len) == 0) {
      return buf;
    }
  }
  return NULL;
}
