/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files of lib/topo share: the weftx_topo structure, the device
 * discovery and locality passes that topo.c runs after hwloc has loaded, and
 * the optional NVML/CUDA enrichment of GPUs found on the live machine.
 */
#ifndef WEFT_TOPO_PRIVATE_H
#define WEFT_TOPO_PRIVATE_H

#include "weft_private.h"

struct weftx_topo {
  hwloc_topology_t h;
  char *source;            /* "live" or the XML path */
  int live;
  char hostname[256];
  weftx_gpu *gpus;
  hwloc_obj_t *gpu_obj;    /* the PCI device of each GPU */
  int ngpus;
  weftx_nic *nics;
  int nnics;
  weftx_numa *numa;
  int nnuma;
  int npackages, ncores, npus;
  int has_locality;
  char **warnings;
  int nwarnings;
};

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
