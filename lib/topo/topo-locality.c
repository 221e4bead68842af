/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NUMA nodes, how near two devices are (same PCI switch, NUMA node, package,
 * or only the same machine), and the load-time warnings: PCI devices with no
 * locality and GPUs with no NIC nearby. Advice that holds only on Google Cloud
 * (gVNIC) is lib/gcp's, weftx_gcp_topo_check().
 */
#include "topo_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weft__topo_find_numa(weftx_topo *t)
{
  int n = hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_NUMANODE);

  if (n < 0)
    n = 0;
  t->numa = calloc((size_t)n + 1, sizeof(*t->numa));
  if (!t->numa)
    return WEFT_ENOMEM;
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t->h, HWLOC_OBJ_NUMANODE, (unsigned)i);
    hwloc_obj_t pkg = o ? hwloc_get_ancestor_obj_by_type(t->h, HWLOC_OBJ_PACKAGE, o) : NULL;
    if (!o)
      return WEFT_ETOPO;
    t->numa[i].os_index = (int)o->os_index;
    t->numa[i].package = pkg ? (int)pkg->os_index : -1;
    t->numa[i].memory = o->attr->numanode.local_memory;
    t->numa[i].cpuset = o->cpuset;
  }
  t->nnuma = n;
  return 0;
}

static weftx_near near(int sw_a, int numa_a, int pkg_a, int sw_b, int numa_b, int pkg_b)
{
  if (sw_a >= 0 && sw_a == sw_b)
    return WEFTX_NEAR_SWITCH;
  if (numa_a >= 0 && numa_a == numa_b)
    return WEFTX_NEAR_NUMA;
  if (pkg_a >= 0 && pkg_a == pkg_b)
    return WEFTX_NEAR_PACKAGE;
  return WEFTX_NEAR_SYSTEM;
}

weftx_near weftx_topo_gpu_nic_near(const weftx_topo *t, int gpu, int nic)
{
  const weftx_gpu *g = weftx_topo_gpu(t, gpu);
  const weftx_nic *n = weftx_topo_nic(t, nic);

  if (!g || !n)
    return WEFTX_NEAR_SYSTEM;
  return near(g->pci_switch, g->numa, g->package, n->pci_switch, n->numa, n->package);
}

weftx_near weftx_topo_gpu_gpu_near(const weftx_topo *t, int a, int b)
{
  const weftx_gpu *g = weftx_topo_gpu(t, a);
  const weftx_gpu *h = weftx_topo_gpu(t, b);

  if (!g || !h)
    return WEFTX_NEAR_SYSTEM;
  return near(g->pci_switch, g->numa, g->package, h->pci_switch, h->numa, h->package);
}

weftx_near weftx_topo_nic_nic_near(const weftx_topo *t, int a, int b)
{
  const weftx_nic *m = weftx_topo_nic(t, a);
  const weftx_nic *n = weftx_topo_nic(t, b);

  if (!m || !n)
    return WEFTX_NEAR_SYSTEM;
  return near(m->pci_switch, m->numa, m->package, n->pci_switch, n->numa, n->package);
}

/* locate() in topo-pci.c hands a device without locality the root's own cpuset. */
static int no_locality(const weftx_topo *t, int numa, hwloc_const_cpuset_t set)
{
  return t->nnuma > 1 && numa < 0 && set == hwloc_topology_get_topology_cpuset(t->h);
}

static int check_locality(weftx_topo *t)
{
  int ndev = t->ngpus + t->nnics, nflat = 0;

  for (int i = 0; i < t->ngpus; i++)
    nflat += no_locality(t, t->gpus[i].numa, t->gpus[i].cpuset);
  for (int i = 0; i < t->nnics; i++)
    nflat += no_locality(t, t->nics[i].numa, t->nics[i].cpuset);
  if (ndev == 0 || nflat == 0)
    return 0;
  if (nflat == ndev) {
    t->has_locality = 0;
    return weft__topo_warn(t,
                           "PCI devices carry no NUMA locality (every GPU and NIC hangs off the "
                           "machine, as in a VM whose devices report numa_node -1): they count "
                           "as local to all %d NUMA nodes, not node 0; give --topology FILE with "
                           "the real layout to place ranks by NUMA node",
                           t->nnuma);
  }
  return weft__topo_warn(t,
                         "%d of the %d GPUs and NICs carry no NUMA locality: they count as local "
                         "to the whole machine",
                         nflat, ndev);
}

static int check_gpu_nics(weftx_topo *t)
{
  int rc = 0;

  if (t->ngpus == 0)
    return 0;
  if (t->nnics == 0)
    return weft__topo_warn(t,
                           "the topology lists %d GPUs but no network interface: ranks on other "
                           "hosts cannot be reached from these GPUs through a nearby NIC",
                           t->ngpus);
  if (!t->has_locality)
    return 0; /* the locality warning already says why no NIC is near */
  for (int g = 0; g < t->ngpus && rc == 0; g++) {
    weftx_near best = WEFTX_NEAR_SYSTEM;
    for (int n = 0; n < t->nnics; n++) {
      weftx_near d = weftx_topo_gpu_nic_near(t, g, n);
      if (d < best)
        best = d;
    }
    if (best > WEFTX_NEAR_NUMA)
      rc = weft__topo_warn(t,
                           "GPU %d (%s) has no NIC on its PCI switch or NUMA node: its network "
                           "traffic crosses the CPU interconnect",
                           g, t->gpus[g].pci);
  }
  return rc;
}

int weft__topo_check(weftx_topo *t)
{
  int rc = check_locality(t);

  if (rc == 0)
    rc = check_gpu_nics(t);
  return rc;
}
