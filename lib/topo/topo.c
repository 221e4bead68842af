/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loading a topology (the live machine through hwloc, or an hwloc XML file,
 * given by path or by name (topo-names.c), that is read and sanity-checked
 * here before hwloc sees it, so that a missing, empty or damaged file is a
 * one-line error and never a crash),
 * and its export as XML; building it is topo-build.c's, its accessors are
 * topo-access.c's.
 */
#include "topo_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOPO_HINT "give an hwloc XML file (lstopo --of xml, or weft-gather-topology)"

static int read_xml(const char *path, char **out, size_t *outlen, char *why, size_t whylen)
{
  FILE *f;
  struct stat st;
  char *buf;
  size_t n;
  int rc;

  f = fopen(path, "rb");
  if (!f) {
    weft__topo_why(why, whylen, "cannot open %.200s: %s; " TOPO_HINT, path, strerror(errno));
    return WEFT_ENOENT;
  }
  if (fstat(fileno(f), &st) != 0) {
    weft__topo_why(why, whylen, "cannot read %s: %s; " TOPO_HINT, path, strerror(errno));
    fclose(f);
    return WEFT_ENOENT;
  }
  if (!S_ISREG(st.st_mode)) {
    weft__topo_why(why, whylen, "cannot read %s: %s; " TOPO_HINT, path,
                   S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
    fclose(f);
    return WEFT_ENOENT;
  }
  if (st.st_size > WEFT__TOPO_XML_MAX) {
    weft__topo_why(why, whylen,
                   "%s is %lld bytes, too large for a topology (the most is %ld "
                   "MiB; a machine's is under 1 MiB); " TOPO_HINT,
                   path, (long long)st.st_size, WEFT__TOPO_XML_MAX >> 20);
    fclose(f);
    return WEFT_EPARSE;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (!buf) {
    fclose(f);
    weft__topo_why(why, whylen, "out of memory reading %s", path);
    return WEFT_ENOMEM;
  }
  n = fread(buf, 1, (size_t)st.st_size, f);
  if (ferror(f)) {
    weft__topo_why(why, whylen, "cannot read %s: %s; " TOPO_HINT, path, strerror(errno));
    free(buf);
    fclose(f);
    return WEFT_ENOENT;
  }
  fclose(f);
  buf[n] = '\0';
  if ((rc = weft__topo_xml_sane(buf, n, path, why, whylen)) != 0) {
    free(buf);
    return rc;
  }
  *out = buf;
  *outlen = n;
  return 0;
}

int weftx_topo_load(const char *path, unsigned flags, weftx_topo **out, char *why, size_t whylen)
{
  weftx_topo *t = NULL;
  char *xml = NULL, found[4096];
  size_t xmllen = 0;
  int rc, from_env = 0;

  if (why && whylen)
    why[0] = '\0';
  if (!out) {
    weft__topo_why(why, whylen, "weftx_topo_load: no place for the result");
    return WEFT_EINVAL;
  }
  *out = NULL;
  if (!path && !(flags & WEFTX_TOPO_IGNORE_ENV)) {
    const char *env = getenv("WEFT_TOPOLOGY");
    if (env && *env) {
      path = env;
      from_env = 1;
    }
  }
  if (!path && (flags & WEFTX_TOPO_CACHE))
    return weft__topo_cache_load(flags, out, why, whylen);
  if (path) {
    rc = weftx_topo_find(path, found, sizeof(found), why, whylen);
    if (rc != 0)
      goto fail;
    path = found;
  }
  if (!(t = weft__topo_new(path ? path : "live"))) {
    weft__topo_why(why, whylen, "out of memory loading a topology");
    return WEFT_ENOMEM;
  }
  if (path && (rc = read_xml(path, &xml, &xmllen, why, whylen)) != 0)
    goto fail;
  rc = weft__topo_fill(t, xml, xmllen, flags, why, whylen);
  if (rc != 0)
    goto fail;
  free(xml);
  *out = t;
  return 0;

fail:
  free(xml);
  weftx_topo_destroy(t);
  if (from_env && why && whylen > 16) { /* say where the file name came from */
    char tmp[1024];
    if (weft__snprintf(tmp, sizeof(tmp), "WEFT_TOPOLOGY: %s", why) == 0)
      weft__snprintf(why, whylen, "%s", tmp); /* truncation keeps the start, which names the file */
  }
  return rc;
}

int weftx_topo_export_xml(const weftx_topo *t, FILE *out)
{
  char *xml = NULL;
  int len = 0, rc = 0;

  if (!t || !out)
    return WEFT_EINVAL;
  if (t->xml)
    return fwrite(t->xml, 1, t->xmllen, out) == t->xmllen ? 0 : WEFT_EIO;
  if (hwloc_topology_export_xmlbuffer(t->h, &xml, &len, 0) != 0 || !xml || len < 1)
    return WEFT_ENOMEM;
  if (fwrite(xml, 1, (size_t)len - 1, out) != (size_t)len - 1)
    rc = WEFT_EIO;
  hwloc_free_xmlbuffer(t->h, xml);
  return rc;
}
