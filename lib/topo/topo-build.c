/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building a topology object: hwloc loaded from checked XML text or from
 * the live machine, the devices and locality found (topo-pci.c,
 * topo-locality.c), and freeing it. topo.c and the cache (topo-cache.c)
 * both build through here.
 */
#include "topo_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPO_HINT "give an hwloc XML file (lstopo --of xml, or weft-gather-topology)"

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
    weft__topo_why(why, whylen,
                   "%s is not an hwloc XML topology (no <topology> element); " TOPO_HINT, path);
    return WEFT_EPARSE;
  }
  if (memchr(buf, '\0', n)) {
    weft__topo_why(why, whylen,
                   "%s is not an hwloc XML topology (it contains NUL bytes); " TOPO_HINT, path);
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
      weft__topo_why(why, whylen, "%s is not a valid hwloc XML topology (%s); " TOPO_HINT,
                     t->source, strerror(errno));
      return WEFT_EPARSE;
    }
  }
  if (hwloc_topology_load(t->h) != 0) {
    if (xml) {
      weft__topo_why(why, whylen,
                     "%s is not a valid hwloc XML topology (hwloc refused it: %s); " TOPO_HINT,
                     t->source, strerror(errno));
      return WEFT_EPARSE;
    }
    weft__topo_why(why, whylen, "hwloc could not read this machine's topology: %s",
                   strerror(errno));
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
    weft__topo_why(why, whylen, "%s while reading the topology of %s", weft_strerror(rc),
                   t->source);
    return rc;
  }
  WEFT__LOG(TOPO, "loaded %s: %d packages, %d NUMA nodes, %d cores, %d PUs, %d GPUs, %d NICs%s",
            t->source, t->npackages, t->nnuma, t->ncores, t->npus, t->ngpus, t->nnics,
            t->has_locality ? "" : ", no PCI locality");
  return 0;
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
