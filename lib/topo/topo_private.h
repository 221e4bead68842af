/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files of lib/topo share: the weftx_topo structure, the device
 * discovery and locality passes that topo.c runs after hwloc has loaded, the
 * optional NVML/CUDA enrichment of GPUs found on the live machine, and the
 * per-user cache of this machine's topology (topo-cache.c).
 */
#ifndef WEFT_TOPO_PRIVATE_H
#define WEFT_TOPO_PRIVATE_H

#include "weft_private.h"

#include <weftx/topo.h>

struct weftx_topo {
  hwloc_topology_t h;
  char *source; /* "live" or the XML path */
  int live;
  char hostname[256];
  weftx_gpu *gpus;
  hwloc_obj_t *gpu_obj; /* the PCI device of each GPU */
  int ngpus;
  weftx_nic *nics;
  int nnics;
  weftx_numa *numa;
  int nnuma;
  int npackages, ncores, npus;
  int has_locality;
  char **warnings;
  int nwarnings;
  int cache; /* weftx_topo_cache_state() */
  char *xml; /* the XML text it was loaded from or cached as, or NULL */
  size_t xmllen;
};

/* Bounds on what a topology file may hold, far above any machine's and low enough that
 * a file past them costs nothing to refuse (weftrun(1), weft-topo(1)): the largest
 * machines weft models write under 200 KB of XML (hwloc parses 32 MiB in seconds; 256
 * MiB, the bound before, took minutes), and Linux numbers at most 8192 processors in
 * Debian's kernels (a processor or NUMA node numbered near 10^12 cost hwloc seconds
 * and gigabytes of bitmaps). PCI objects' os_index, domain:bus:dev.fn packed, and
 * hwloc's "unknown" (2^32-1) are not bounded. */
#define WEFT__TOPO_XML_MAX (32L << 20)
#define WEFT__TOPO_INDEX_MAX 1048575L

/* A topology with nothing loaded yet, named \p source; NULL when out of memory. */
weftx_topo *weft__topo_new(const char *source);
/* Load \p t from the XML text \p xml (NUL-terminated, \p xmllen bytes before the NUL;
 * already through weft__topo_xml_sane()) or, when \p xml is NULL, from the live machine,
 * and find its devices and locality. On failure the caller destroys \p t. */
int weft__topo_fill(weftx_topo *t, const char *xml, size_t xmllen, unsigned flags, char *why,
                    size_t whylen);
/* What hwloc would crash on or misread in a whole file's text (empty, not XML, NUL
 * bytes, weft__topo_xml_check()); WEFT_EPARSE with a reason naming \p path. */
int weft__topo_xml_sane(const char *buf, size_t n, const char *path, char *why, size_t whylen);
/* This machine's topology through the per-user cache (topo-cache.c): the cached XML
 * when every key agrees, else a live probe that is then cached. */
int weft__topo_cache_load(unsigned flags, weftx_topo **out, char *why, size_t whylen);
/* The cache key of the machine seen under \p root ("" for this one): "name=HASH"
 * words, one per part (topo-cache-key.c). 0, or WEFT_ERANGE / WEFT_ENOENT (no boot id). */
int weft__topo_cache_key(const char *root, char *key, size_t len);

/* Check what hwloc would crash on in an XML buffer (topo-xmlcheck.c); WEFT_EPARSE with a reason. */
int weft__topo_xml_check(const char *buf, size_t len, const char *path, char *why, size_t whylen);
/* Find the GPUs and NICs and fill in their locality (topo-pci.c). */
int weft__topo_find_devices(weftx_topo *t);
/* Last resort for a GPU's model: the PCI device name hwloc found in pci.ids. */
void weft__topo_model_fallback(weftx_topo *t);
/* NUMA nodes with their package and memory (topo-locality.c). */
int weft__topo_find_numa(weftx_topo *t);
/* Decide has_locality and add the load-time warnings (topo-locality.c). */
int weft__topo_check(weftx_topo *t);
/* printf into \p why when it is not NULL (the one-line reasons of lib/topo). */
void weft__topo_why(char *why, size_t whylen, const char *fmt, ...) WEFT_PRINTF(3, 4);
/* Append one warning (printf-style); WEFT_ENOMEM when out of memory. */
int weft__topo_warn(weftx_topo *t, const char *fmt, ...) WEFT_PRINTF(2, 3);

#ifdef WEFT_HAVE_NVML
/* Fill unknown model/uuid/memory from NVML; errors mean "unknown", never a failure. */
void weft__topo_nvml_enrich(weftx_topo *t);
#endif
#ifdef WEFT_HAVE_CUDA
/* Same from the CUDA runtime. */
void weft__topo_cuda_enrich(weftx_topo *t);
#endif

#endif /* WEFT_TOPO_PRIVATE_H */
