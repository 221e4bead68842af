/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plain accessors of a loaded topology (weftx/topo.h).
 */
#include "topo_private.h"

#include <stdio.h>
#include <string.h>

int weftx_topo_cache_state(const weftx_topo *t) { return t ? t->cache : WEFTX_TOPO_CACHE_OFF; }

const char *weftx_topo_source(const weftx_topo *t) { return t ? t->source : ""; }

int weftx_topo_is_live(const weftx_topo *t) { return t ? t->live : 0; }

hwloc_topology_t weftx_topo_hwloc(const weftx_topo *t) { return t ? t->h : NULL; }

const char *weftx_topo_hostname(const weftx_topo *t) { return t ? t->hostname : ""; }

int weftx_topo_ngpus(const weftx_topo *t) { return t ? t->ngpus : 0; }

const weftx_gpu *weftx_topo_gpu(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->ngpus ? &t->gpus[i] : NULL;
}

int weftx_topo_nnics(const weftx_topo *t) { return t ? t->nnics : 0; }

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

int weftx_topo_nnuma(const weftx_topo *t) { return t ? t->nnuma : 0; }

const weftx_numa *weftx_topo_numa(const weftx_topo *t, int i)
{
  return t && i >= 0 && i < t->nnuma ? &t->numa[i] : NULL;
}

int weftx_topo_npackages(const weftx_topo *t) { return t ? t->npackages : 0; }

int weftx_topo_ncores(const weftx_topo *t) { return t ? t->ncores : 0; }

int weftx_topo_npus(const weftx_topo *t) { return t ? t->npus : 0; }

hwloc_const_cpuset_t weftx_topo_cpuset(const weftx_topo *t)
{
  return t ? hwloc_topology_get_topology_cpuset(t->h) : NULL;
}

int weftx_topo_has_locality(const weftx_topo *t) { return t ? t->has_locality : 0; }

int weftx_topo_nwarnings(const weftx_topo *t) { return t ? t->nwarnings : 0; }

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
