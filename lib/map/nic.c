/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which NIC a rank uses: the nearest to its GPU (same PCI switch, then NUMA
 * node, then package, then any), the nearest to its cores for a rank without
 * a GPU. A NIC without an interface name is never chosen over a named one.
 * Equally near NICs are shared out evenly: GPUs in order each take the least
 * loaded of their nearest NICs (lowest index on ties); CPU ranks take turns.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>

/* Lower is better: named before unnamed, then nearness. */
static int rank_of(const weftx_nic *nic, weftx_near near)
{
  return (nic->name[0] == '\0' ? 16 : 0) + (int)near;
}

int weft__nic_for_gpus(const weftx_topo *t, const int *sel, int m, int k)
{
  int nn = weftx_topo_nnics(t), *load, i, j, pick = -1;

  if (nn <= 0 || k < 0 || k >= m)
    return -1;
  load = calloc((size_t)nn, sizeof(*load));
  if (!load)
    return -1;
  for (i = 0; i <= k; i++) {
    int best = -1, bestr = 0;
    for (j = 0; j < nn; j++) {
      int rj = rank_of(weftx_topo_nic(t, j), weftx_topo_gpu_nic_near(t, sel[i], j));
      if (best < 0 || rj < bestr || (rj == bestr && load[j] < load[best])) {
        best = j;
        bestr = rj;
      }
    }
    load[best]++;
    pick = best;
  }
  free(load);
  return pick;
}

/* The package OS index holding processor \p pu, or -1. */
static int package_of(const weftx_topo *t, int pu)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  hwloc_obj_t o = NULL;

  if (pu < 0)
    return -1;
  while ((o = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_isset(o->cpuset, (unsigned)pu))
      return (int)o->os_index;
  return -1;
}

static weftx_near cpus_nic_near(const weftx_topo *t, hwloc_const_cpuset_t set, const weftx_nic *nic,
                                int pkg)
{
  int i;

  if (!weftx_topo_has_locality(t) || nic->numa < 0)
    return WEFTX_NEAR_SYSTEM;
  for (i = 0; i < weftx_topo_nnuma(t); i++) {
    const weftx_numa *nu = weftx_topo_numa(t, i);
    if (nu->os_index == nic->numa && nu->cpuset && hwloc_bitmap_intersects(nu->cpuset, set))
      return WEFTX_NEAR_NUMA;
  }
  if (pkg >= 0 && nic->package == pkg)
    return WEFTX_NEAR_PACKAGE;
  return WEFTX_NEAR_SYSTEM;
}

int weft__nic_for_cpus(const weftx_topo *t, hwloc_const_cpuset_t set, int turn)
{
  int nn = weftx_topo_nnics(t), pkg = package_of(t, hwloc_bitmap_first(set));
  int j, best = -1, count = 0;

  if (nn <= 0)
    return -1;
  for (j = 0; j < nn; j++) {
    const weftx_nic *nic = weftx_topo_nic(t, j);
    int rj = rank_of(nic, cpus_nic_near(t, set, nic, pkg));
    if (best < 0 || rj < best) {
      best = rj;
      count = 1;
    } else if (rj == best)
      count++;
  }
  turn %= count;
  for (j = 0; j < nn; j++) {
    const weftx_nic *nic = weftx_topo_nic(t, j);
    if (rank_of(nic, cpus_nic_near(t, set, nic, pkg)) == best && turn-- == 0)
      return j;
  }
  return -1;
}
