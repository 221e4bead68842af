/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How two devices are linked, in the words of nvidia-smi topo -m: the PCI
 * path between them (PIX, PXB, PHB, NODE, SYS) from hwloc's tree, and the
 * NVLinks between two GPUs from hwloc's NVLinkBandwidth matrix (its NVML
 * backend; through NVSwitch once the switch ports are merged and closed over,
 * as nvidia-smi counts them). hwloc counts 25,000 MB/s per link of NVLink 2
 * to 4, so links = bandwidth / 25,000.
 */
#include "topo_private.h"

#include <hwloc/distances.h>
#include <string.h>

#define NVLINK_MBPS 25000

/* The PCI object of GPU \p g or NIC \p n (one of them is -1), or NULL. */
static hwloc_obj_t pci_obj(const weftx_topo *t, int g, int n)
{
  if (g >= 0)
    return g < t->ngpus ? t->gpu_obj[g] : NULL;
  if (n < 0 || n >= t->nnics || !t->nics[n].pci[0])
    return NULL;
  return hwloc_get_pcidev_by_busidstring(t->h, t->nics[n].pci);
}

/* Bridges strictly between \p o and its ancestor \p anc. */
static int bridges_between(hwloc_obj_t o, hwloc_obj_t anc)
{
  int n = 0;

  for (o = o->parent; o && o != anc; o = o->parent)
    n += o->type == HWLOC_OBJ_BRIDGE;
  return n;
}

static weftx_path path(const weftx_topo *t, int ga, int na, int gb, int nb)
{
  hwloc_obj_t x = pci_obj(t, ga, na), y = pci_obj(t, gb, nb), anc;
  int numa_a = ga >= 0 ? t->gpus[ga].numa : na >= 0 ? t->nics[na].numa : -1;
  int numa_b = gb >= 0 ? t->gpus[gb].numa : nb >= 0 ? t->nics[nb].numa : -1;

  if (x && y && (anc = hwloc_get_common_ancestor_obj(t->h, x, y)) &&
      anc->type == HWLOC_OBJ_BRIDGE) {
    if (anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
      return WEFTX_PATH_PHB;
    /* below one PCIe switch: each device behind one port of it */
    return bridges_between(x, anc) <= 1 && bridges_between(y, anc) <= 1 ? WEFTX_PATH_PIX
                                                                        : WEFTX_PATH_PXB;
  }
  if (t->has_locality && numa_a >= 0 && numa_a == numa_b)
    return WEFTX_PATH_NODE;
  return WEFTX_PATH_SYS;
}

weftx_path weftx_topo_gpu_gpu_path(const weftx_topo *t, int a, int b)
{
  if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus)
    return WEFTX_PATH_SYS;
  return path(t, a, -1, b, -1);
}

weftx_path weftx_topo_gpu_nic_path(const weftx_topo *t, int gpu, int nic)
{
  if (gpu < 0 || nic < 0 || gpu >= t->ngpus || nic >= t->nnics)
    return WEFTX_PATH_SYS;
  return path(t, gpu, -1, -1, nic);
}

weftx_path weftx_topo_nic_nic_path(const weftx_topo *t, int a, int b)
{
  if (a < 0 || b < 0 || a >= t->nnics || b >= t->nnics)
    return WEFTX_PATH_SYS;
  return path(t, -1, a, -1, b);
}

const char *weftx_path_label(weftx_path p)
{
  switch (p) {
  case WEFTX_PATH_PIX: return "PIX";
  case WEFTX_PATH_PXB: return "PXB";
  case WEFTX_PATH_PHB: return "PHB";
  case WEFTX_PATH_NODE: return "NODE";
  case WEFTX_PATH_SYS: break;
  }
  return "SYS";
}

/* The GPU whose PCI device holds OS device \p o, or -1. */
static int gpu_of(const weftx_topo *t, hwloc_obj_t o)
{
  for (int g = 0; o && g < t->ngpus; g++)
    if (o == t->gpu_obj[g] || o->parent == t->gpu_obj[g])
      return g;
  return -1;
}

#if HWLOC_API_VERSION >= 0x00020100
int weftx_topo_gpu_nvlinks(const weftx_topo *t, int a, int b)
{
  struct hwloc_distances_s *d = NULL;
  unsigned nr = 1;
  int links = 0;

  if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus || a == b)
    return 0;
  if (hwloc_distances_get_by_name(t->h, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0 || !d)
    return 0;
#if HWLOC_API_VERSION >= 0x00020500
  /* GPUs linked through NVSwitch ports: one switch, then every GPU pair through it */
  if (d->kind & HWLOC_DISTANCES_KIND_HETEROGENEOUS_TYPES) {
    hwloc_distances_transform(t->h, d, HWLOC_DISTANCES_TRANSFORM_MERGE_SWITCH_PORTS, NULL, 0);
    hwloc_distances_transform(t->h, d, HWLOC_DISTANCES_TRANSFORM_TRANSITIVE_CLOSURE, NULL, 0);
  }
#endif
  for (unsigned i = 0; i < d->nbobjs; i++) {
    if (gpu_of(t, d->objs[i]) != a)
      continue;
    for (unsigned j = 0; j < d->nbobjs; j++)
      if (gpu_of(t, d->objs[j]) == b)
        links = (int)((d->values[i * d->nbobjs + j] + NVLINK_MBPS / 2) / NVLINK_MBPS);
  }
  hwloc_distances_release(t->h, d);
  return links;
}
#else
/* hwloc 2.0 has no distances by name: no NVLinks known */
int weftx_topo_gpu_nvlinks(const weftx_topo *t, int a, int b)
{
  (void)t;
  (void)a;
  (void)b;
  return 0;
}
#endif
