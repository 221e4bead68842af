/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Topologies by name. A --topology or WEFT_TOPOLOGY value that is no file
 * here and has no '/' in it is looked up in weftx_datadir()/topologies, with
 * or without ".xml", so that the shipped machine shapes work from any
 * directory ("--topology a3-highgpu-8g"). The names there, each with the
 * one-line description its file's trailing comment starts with, are listed
 * for `weft-topo --list-topologies` and for the error about an unknown name.
 */
#include "topo_private.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOPO_SUFFIX ".xml"
#define TOPO_TAIL 4096 /* the description comment is at the very end of the file */

static int is_regular(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int weftx_topo_dir(char *buf, size_t len)
{
  return weft__snprintf(buf, len, "%s/topologies", weftx_datadir());
}

/* The description in the comment that ends an XML file: its first line, less a
 * leading "NAME:" (gen-topologies.py and weft-gather-topology both begin it so).
 * Only the file's tail is read. */
static void describe(const char *path, const char *name, char *desc, size_t len)
{
  char buf[TOPO_TAIL + 1], *c, *end;
  size_t n, nl = strlen(name);
  FILE *f = fopen(path, "rb");

  desc[0] = '\0';
  if (!f)
    return;
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (size > TOPO_TAIL && fseek(f, size - TOPO_TAIL, SEEK_SET) != 0)
      size = 0;
    else if (size <= TOPO_TAIL)
      rewind(f);
  }
  n = fread(buf, 1, TOPO_TAIL, f);
  fclose(f);
  buf[n] = '\0';
  if (memchr(buf, '\0', n))
    return; /* not text: no description */
  c = strstr(buf, "</topology>");
  if (!c || !(c = strstr(c, "<!--")))
    return;
  while (strstr(c + 4, "<!--"))
    c = strstr(c + 4, "<!--"); /* the last comment: weft-gather-topology --input appends one */
  for (c += 4; *c == ' ' || *c == '\t' || *c == '\r' || *c == '\n'; c++)
    ;
  if (!strncmp(c, name, nl) && c[nl] == ':')
    for (c += nl + 1; *c == ' ' || *c == '\t'; c++)
      ;
  end = c + strcspn(c, "\r\n");
  if (end - c >= 3 && !strncmp(end - 3, "-->", 3))
    end -= 3; /* a one-line comment */
  while (end > c && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  if ((size_t)(end - c) >= len)
    end = c + len - 1; /* a long first line is cut, never spilled into the next */
  memcpy(desc, c, (size_t)(end - c));
  desc[end - c] = '\0';
}

static int by_name(const void *a, const void *b)
{
  return strcmp(((const weftx_topo_entry *)a)->name, ((const weftx_topo_entry *)b)->name);
}

int weftx_topo_list(weftx_topo_entry **list, int *n, char *why, size_t whylen)
{
  char dir[4096], path[4096 + 256];
  weftx_topo_entry *v = NULL;
  struct dirent *d;
  DIR *dp;
  int count = 0, cap = 0;

  if (!list || !n)
    return WEFT_EINVAL;
  *list = NULL;
  *n = 0;
  if (weftx_topo_dir(dir, sizeof(dir)) != 0) {
    weft__topo_why(why, whylen, "the data directory path is too long; check WEFT_DATADIR");
    return WEFT_ERANGE;
  }
  dp = opendir(dir);
  if (!dp) {
    weft__topo_why(why, whylen, "cannot read %s: %s; reinstall weft or set WEFT_DATADIR", dir,
                   strerror(errno));
    return WEFT_ENOENT;
  }
  while ((d = readdir(dp)) != NULL) {
    size_t nl = strlen(d->d_name), sl = strlen(TOPO_SUFFIX);
    if (d->d_name[0] == '.' || nl <= sl || nl - sl >= sizeof(v->name) ||
        strcmp(d->d_name + nl - sl, TOPO_SUFFIX) != 0)
      continue;
    if (weft__snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) != 0 || !is_regular(path))
      continue;
    if (count == cap) {
      int ncap = cap ? 2 * cap : 16;
      weftx_topo_entry *nv = realloc(v, (size_t)ncap * sizeof(*v));
      if (!nv) {
        free(v);
        closedir(dp);
        weft__topo_why(why, whylen, "out of memory listing %s", dir);
        return WEFT_ENOMEM;
      }
      v = nv;
      cap = ncap;
    }
    memcpy(v[count].name, d->d_name, nl - sl);
    v[count].name[nl - sl] = '\0';
    describe(path, v[count].name, v[count].desc, sizeof(v[count].desc));
    count++;
  }
  closedir(dp);
  if (count > 1)
    qsort(v, (size_t)count, sizeof(*v), by_name);
  *list = v;
  *n = count;
  return 0;
}

/* Append s to buf (NUL-terminated, size len) at *used; 1 when it did not all fit. */
static int append(char *buf, size_t len, size_t *used, const char *s)
{
  size_t sl = strlen(s);
  if (*used + sl >= len)
    return 1;
  memcpy(buf + *used, s, sl + 1);
  *used += sl;
  return 0;
}

/* "topology 'X' not found: ..." saying where it looked, the nearest name and the names there. */
static void not_found(const char *name, const char *dir, const char *want, char *why, size_t whylen)
{
  weftx_topo_entry *v = NULL;
  char sub[256], stem[128];
  int n = 0, best = -1, bestd = 4, cut = 0;
  size_t used;

  if (!why || whylen == 0)
    return;
  if (weftx_topo_list(&v, &n, sub, sizeof(sub)) != 0) {
    weft__topo_why(why, whylen,
                   "topology '%s' not found: not a file in the current directory, "
                   "and %s",
                   name, sub);
    return;
  }
  weft__snprintf(stem, sizeof(stem), "%.*s", (int)(strlen(want) - strlen(TOPO_SUFFIX)), want);
  for (int i = 0; i < n; i++) {
    int d = weftx_edit_distance(stem, v[i].name, 1);
    if (d < bestd) {
      bestd = d;
      best = i;
    }
  }
  weft__topo_why(why, whylen,
                 "topology '%s' not found: not a file in the current directory, "
                 "nor %s in %s; %s%s%s%s",
                 name, want, dir, best < 0 ? "" : "did you mean '", best < 0 ? "" : v[best].name,
                 best < 0 ? "" : "'? ",
                 n ? "names there (weft-topo --list-topologies): " : "that directory is empty");
  used = strlen(why);
  for (int i = 0; i < n && !cut; i++)
    cut = (i && append(why, whylen, &used, ", ")) || append(why, whylen, &used, v[i].name);
  if (cut && whylen > 4)
    memcpy(why + whylen - 4, "...", 4);
  free(v);
}

int weftx_topo_find(const char *name, char *path, size_t len, char *why, size_t whylen)
{
  char dir[4096], want[512];
  size_t nl, sl = strlen(TOPO_SUFFIX);
  int has_suffix;

  if (why && whylen)
    why[0] = '\0';
  if (!name || !*name || !path || len == 0) {
    weft__topo_why(why, whylen, "no topology named");
    return WEFT_EINVAL;
  }
  /* A path, or a file that is there, is what it says (read_xml() reports what is wrong with it). */
  if (strchr(name, '/') || access(name, F_OK) == 0 || errno != ENOENT) {
    if (weft__snprintf(path, len, "%s", name) != 0) {
      weft__topo_why(why, whylen, "topology path too long: %.64s...", name);
      return WEFT_ERANGE;
    }
    return 0;
  }
  nl = strlen(name);
  has_suffix = nl > sl && !strcmp(name + nl - sl, TOPO_SUFFIX);
  if (weftx_topo_dir(dir, sizeof(dir)) != 0 ||
      weft__snprintf(want, sizeof(want), "%s%s", name, has_suffix ? "" : TOPO_SUFFIX) != 0 ||
      weft__snprintf(path, len, "%s/%s", dir, want) != 0) {
    weft__topo_why(why, whylen, "topology name too long: %.64s...", name);
    return WEFT_ERANGE;
  }
  if (is_regular(path))
    return 0;
  not_found(name, dir, want, why, whylen);
  return WEFT_ENOENT;
}
