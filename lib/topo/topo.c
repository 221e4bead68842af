/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loading a topology (the live machine through hwloc, or an hwloc XML file,
 * given by path or by name (topo-names.c), that is read and sanity-checked
 * here before hwloc sees it, so that a missing, empty or damaged file is a
 * one-line error and never a crash),
 * freeing it, and the plain accessors of weft/topo.h.
 */
#include "topo_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOPO_HINT "give an hwloc XML file (lstopo --of xml, or weft-gather-topology)"

void weft__topo_why(char *why, size_t whylen, const char *fmt, ...)
{
  va_list ap;

  if (!why || whylen == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

/* Read the whole file, NUL-terminated, after the checks hwloc does not make. */
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
    weft__topo_why(why, whylen, "%s is %lld bytes, too large for a topology; " TOPO_HINT, path,
            (long long)st.st_size);
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

int weft__topo_xml_sane(const char *buf, size_t n, const char *path, char *why, size_t whylen)
{
  const char *p;

  for (p = buf; p < buf + n && strchr(" \t\r\n", *p); p++)
    ;
  if (p == buf + n) {
    weft__topo_why(why, whylen, "%s is empty; " TOPO_HINT, path);
    return WEFT_EPARSE;
  }
  if (*p != '<' || !strstr(p, "<topology")) {
    weft__topo_why(why, whylen, "%s is not an hwloc XML topology (no <topology> element); " TOPO_HINT,
            path);
    return WEFT_EPARSE;
  }
  if (memchr(buf, '\0', n)) {
    weft__topo_why(why, whylen, "%s is not an hwloc XML topology (it contains NUL bytes); " TOPO_HINT,
            path);
    return WEFT_EPARSE;
  }
  if (weft__topo_xml_check(buf, n, path, why, whylen) != 0) {
    size_t used = why ? strlen(why) : 0;
    if (why && used + 3 < whylen)
      weft__snprintf(why + used, whylen - used, "; " TOPO_HINT);
    return WEFT_EPARSE;
  }
  return 0;
}

static void count_objects(weftx_topo *t)
{
  const char *host;
  hwloc_obj_t root = hwloc_get_root_obj(t->h);

  t->npackages = hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_PACKAGE);
  t->ncores = hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_CORE);
  t->npus = hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_PU);
  if (t->ncores <= 0)
    t->ncores = t->npus; /* a topology without Core objects: every PU is its own core */
  if (t->npackages < 0)
    t->npackages = 0;
  host = hwloc_obj_get_info_by_name(root, "HostName");
  if (host)
    weft__snprintf(t->hostname, sizeof(t->hostname), "%s", host); /* truncation is harmless */
}

/* hwloc prints multi-line reports about damaged XML on stderr; weft reports one
 * line instead. HWLOC_HIDE_ERRORS is read once per process by hwloc, so this
 * only takes effect when nothing set it and no hwloc load happened before.
 * WEFT_VERBOSE=topo keeps hwloc's reports. */
static int hide_errors_set; /* weft set HWLOC_HIDE_ERRORS, not the user */

static void quiet_hwloc_xml(void)
{
  if (getenv("HWLOC_HIDE_ERRORS") || weft_log_enabled(WEFT_LOG_TOPO))
    return;
  if (setenv("HWLOC_HIDE_ERRORS", "2", 0) != 0)
    WEFT__LOG(TOPO, "cannot set HWLOC_HIDE_ERRORS: %s", strerror(errno));
  else
    hide_errors_set = 1;
}

void weftx_topo_env_restore(void)
{
  /* hwloc has read it by now; the processes weft starts must not inherit it */
  if (hide_errors_set)
    unsetenv("HWLOC_HIDE_ERRORS");
  hide_errors_set = 0;
}

/* An XML of this machine needs none of hwloc's plugins (they discover hardware, and
 * hwloc parses XML itself), and loading them (PCI, OpenCL, GL and libxml2 with their
 * libraries) costs a rank start twice the rest of the load. hwloc reads
 * HWLOC_PLUGINS_PATH when its first topology in the process is initialised; it is
 * pointed nowhere only for that moment, and only when the user set none of hwloc's
 * plugin variables. Returns 1 when it has to be unset again. */
static int no_plugins_begin(unsigned flags, const char *xml)
{
  if (!xml || !(flags & WEFTX_TOPO_THIS_SYSTEM) || getenv("HWLOC_PLUGINS_PATH") ||
      getenv("HWLOC_PLUGINS_BLACKLIST") || getenv("HWLOC_COMPONENTS"))
    return 0;
  return setenv("HWLOC_PLUGINS_PATH", "/dev/null/weft-no-hwloc-plugins", 0) == 0;
}

static int load_hwloc(weftx_topo *t, const char *xml, size_t xmllen, unsigned flags, char *why,
                      size_t whylen)
{
  int unset = no_plugins_begin(flags, xml);
  int rc = hwloc_topology_init(&t->h);
  if (unset)
    unsetenv("HWLOC_PLUGINS_PATH");
  if (rc != 0) {
    t->h = NULL;
    weft__topo_why(why, whylen, "hwloc could not initialise a topology: %s", strerror(errno));
    return WEFT_ETOPO;
  }
  if (xml && (flags & WEFTX_TOPO_THIS_SYSTEM) &&
      hwloc_topology_set_flags(t->h, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) != 0) {
    weft__topo_why(why, whylen, "hwloc refused the this-system flag: %s", strerror(errno));
    return WEFT_ETOPO;
  }
  /* GPUs and NICs are I/O objects, which hwloc leaves out by default. */
  if (hwloc_topology_set_io_types_filter(t->h, xml ? HWLOC_TYPE_FILTER_KEEP_ALL
                                                   : HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    weft__topo_why(why, whylen, "hwloc refused the I/O device filter: %s", strerror(errno));
    return WEFT_ETOPO;
  }
  if (xml) {
    quiet_hwloc_xml();
    if (hwloc_topology_set_xmlbuffer(t->h, xml, (int)xmllen + 1) != 0) {
      weft__topo_why(why, whylen, "%s is not a valid hwloc XML topology (%s); " TOPO_HINT, t->source,
              strerror(errno));
      return WEFT_EPARSE;
    }
  }
  if (hwloc_topology_load(t->h) != 0) {
    if (xml) {
      weft__topo_why(why, whylen, "%s is not a valid hwloc XML topology (hwloc refused it: %s); " TOPO_HINT,
              t->source, strerror(errno));
      return WEFT_EPARSE;
    }
    weft__topo_why(why, whylen, "hwloc could not read this machine's topology: %s", strerror(errno));
    return WEFT_ETOPO;
  }
  if (hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_PU) <= 0 ||
      hwloc_bitmap_iszero(hwloc_topology_get_topology_cpuset(t->h))) {
    weft__topo_why(why, whylen, "%s has no processors (no PU objects); " TOPO_HINT, t->source);
    return xml ? WEFT_EPARSE : WEFT_ETOPO;
  }
  return 0;
}

weftx_topo *weft__topo_new(const char *source)
{
  weftx_topo *t = calloc(1, sizeof(*t));

  if (!t)
    return NULL;
  t->has_locality = 1;
  if (!(t->source = strdup(source))) {
    free(t);
    return NULL;
  }
  return t;
}

int weft__topo_fill(weftx_topo *t, const char *xml, size_t xmllen, unsigned flags, char *why,
                    size_t whylen)
{
  int rc = load_hwloc(t, xml, xmllen, flags, why, whylen);

  if (rc != 0)
    return rc;
  t->live = (!xml || (flags & WEFTX_TOPO_THIS_SYSTEM)) && hwloc_topology_is_thissystem(t->h);
  count_objects(t);
  rc = weft__topo_find_numa(t);
  if (rc == 0)
    rc = weft__topo_find_devices(t);
#ifdef WEFT_HAVE_NVML
  if (rc == 0 && t->live && !(flags & WEFTX_TOPO_NO_DETAILS))
    weft__topo_nvml_enrich(t);
#endif
#ifdef WEFT_HAVE_CUDA
  if (rc == 0 && t->live && !(flags & WEFTX_TOPO_NO_DETAILS))
    weft__topo_cuda_enrich(t);
#endif
  if (rc == 0) {
    weft__topo_model_fallback(t);
    rc = weft__topo_check(t);
  }
  if (rc != 0) {
    weft__topo_why(why, whylen, "%s while reading the topology of %s", weft_strerror(rc), t->source);
    return rc;
  }
  WEFT__LOG(TOPO, "loaded %s: %d packages, %d NUMA nodes, %d cores, %d PUs, %d GPUs, %d NICs%s",
            t->source, t->npackages, t->nnuma, t->ncores, t->npus, t->ngpus, t->nnics,
            t->has_locality ? "" : ", no PCI locality");
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

int weftx_topo_cache_state(const weftx_topo *t)
{
  return t ? t->cache : WEFTX_TOPO_CACHE_OFF;
}

void weftx_topo_destroy(weftx_topo *t)
{
  if (!t)
    return;
  for (int i = 0; i < t->nwarnings; i++)
    free(t->warnings[i]);
  free(t->warnings);
  free(t->gpus);
  free(t->gpu_obj);
  free(t->nics);
  free(t->numa);
  if (t->h)
    hwloc_topology_destroy(t->h);
  free(t->source);
  free(t->xml);
  free(t);
}

int weft__topo_warn(weftx_topo *t, const char *fmt, ...)
{
  char buf[512];
  char **w;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  w = realloc(t->warnings, (size_t)(t->nwarnings + 1) * sizeof(*w));
  if (!w)
    return WEFT_ENOMEM;
  t->warnings = w;
  w[t->nwarnings] = strdup(buf);
  if (!w[t->nwarnings])
    return WEFT_ENOMEM;
  t->nwarnings++;
  WEFT__LOG(TOPO, "warning: %s", buf);
  return 0;
}

const char *weftx_topo_source(const weftx_topo *t)
{
  return t ? t->source : "";
}

int weftx_topo_is_live(const weftx_topo *t)
{
  return t ? t->live : 0;
}

hwloc_topology_t weftx_topo_hwloc(const weftx_topo *t)
{
  return t ? t->h : NULL;
}

const char *weftx_topo_hostname(const weftx_topo *t)
{
  return t ? t->hostname : "";
}

int weftx_topo_ngpus(const weftx_topo *t)
{
  return t ? t->ngpus : 0;
}

const weftx_gpu *weftx_topo_gpu(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->ngpus ? &t->gpus[i] : NULL;
}

int weftx_topo_nnics(const weftx_topo *t)
{
  return t ? t->nnics : 0;
}

const weftx_nic *weftx_topo_nic(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->nnics ? &t->nics[i] : NULL;
}

const weftx_nic *weftx_topo_nic_by_name(const weftx_topo *t, const char *name)
{
  if (!t || !name || !*name)
    return NULL;
  for (int i = 0; i < t->nnics; i++)
    if (!strcmp(t->nics[i].name, name))
      return &t->nics[i];
  return NULL;
}

int weftx_topo_nnuma(const weftx_topo *t)
{
  return t ? t->nnuma : 0;
}

const weftx_numa *weftx_topo_numa(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->nnuma ? &t->numa[i] : NULL;
}

int weftx_topo_npackages(const weftx_topo *t)
{
  return t ? t->npackages : 0;
}

int weftx_topo_ncores(const weftx_topo *t)
{
  return t ? t->ncores : 0;
}

int weftx_topo_npus(const weftx_topo *t)
{
  return t ? t->npus : 0;
}

hwloc_const_cpuset_t weftx_topo_cpuset(const weftx_topo *t)
{
  return t ? hwloc_topology_get_topology_cpuset(t->h) : NULL;
}

int weftx_topo_has_locality(const weftx_topo *t)
{
  return t ? t->has_locality : 0;
}

int weftx_topo_nwarnings(const weftx_topo *t)
{
  return t ? t->nwarnings : 0;
}

const char *weftx_topo_warning(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->nwarnings ? t->warnings[i] : NULL;
}

int weftx_cpuset_format(hwloc_const_bitmap_t set, char *buf, size_t len)
{
  int n;

  if (!buf || len == 0)
    return WEFT_EINVAL;
  buf[0] = '\0';
  if (!set || hwloc_bitmap_iszero(set))
    return 0;
  n = hwloc_bitmap_list_snprintf(buf, len, set);
  if (n < 0)
    return WEFT_EINVAL;
  if ((size_t)n >= len)
    return WEFT_ERANGE;
  return 0;
}
