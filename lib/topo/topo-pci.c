/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPUs and NICs: NVIDIA display/3D PCI devices and network-class PCI devices
 * in PCI bus order, their hwloc OS devices (model, UUID, memory, interface and
 * RDMA names), and where each one sits: the PCI switch (the topmost bridge
 * below its host bridge), and the NUMA node, package and cpuset of its first
 * non-I/O ancestor. A device hanging off the Machine of a multi-NUMA machine
 * carries no locality: it gets numa -1 and the whole machine, never node 0.
 */
#include "topo_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_GVNIC 0x1ae0

struct where {
  int numa, package, pci_switch, local;
  hwloc_const_cpuset_t cpuset;
};

static int pci_cmp(hwloc_obj_t a, hwloc_obj_t b)
{
  const struct hwloc_pcidev_attr_s *x = &a->attr->pcidev, *y = &b->attr->pcidev;

  if (x->domain != y->domain)
    return x->domain < y->domain ? -1 : 1;
  if (x->bus != y->bus)
    return x->bus < y->bus ? -1 : 1;
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  if (x->func != y->func)
    return x->func < y->func ? -1 : 1;
  return 0;
}

static int pci_qsort_cmp(const void *a, const void *b)
{
  return pci_cmp(*(hwloc_obj_t const *)a, *(hwloc_obj_t const *)b);
}

static int is_pci_bridge(hwloc_obj_t o)
{
  return o && o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

/* The topmost PCI-to-PCI bridge above a device: its PCI switch (or root port). */
static hwloc_obj_t top_bridge(hwloc_obj_t dev)
{
  hwloc_obj_t top = NULL;

  for (hwloc_obj_t o = dev->parent; o && o->type == HWLOC_OBJ_BRIDGE; o = o->parent)
    if (is_pci_bridge(o))
      top = o;
  return top;
}

/* Switch ids are ordinals of the topmost bridges in PCI bus order, so that they are
 * small, stable and the same for every device below one switch. */
static int switch_id(weftx_topo *t, hwloc_obj_t dev)
{
  hwloc_obj_t top = top_bridge(dev), b = NULL;
  int id = 0;

  if (!top)
    return -1;
  while ((b = hwloc_get_next_bridge(t->h, b)) != NULL)
    if (b != top && is_pci_bridge(b) && !is_pci_bridge(b->parent) && pci_cmp(b, top) < 0)
      id++;
  return id;
}

/* The package whose processors include all of \p set, or -1. */
static int package_of(weftx_topo *t, hwloc_const_cpuset_t set)
{
  hwloc_obj_t p = NULL;

  if (!set || hwloc_bitmap_iszero(set))
    return -1;
  while ((p = hwloc_get_next_obj_by_type(t->h, HWLOC_OBJ_PACKAGE, p)) != NULL)
    if (p->cpuset && hwloc_bitmap_isincluded(set, p->cpuset))
      return (int)p->os_index;
  return -1;
}

static void locate(weftx_topo *t, hwloc_obj_t dev, struct where *w)
{
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->h, dev);
  hwloc_obj_t root = hwloc_get_root_obj(t->h);

  w->pci_switch = dev->type == HWLOC_OBJ_PCI_DEVICE ? switch_id(t, dev) : -1;
  w->local = !(anc == NULL || (anc == root && t->nnuma > 1));
  if (w->local && anc->cpuset && !hwloc_bitmap_iszero(anc->cpuset)) {
    w->cpuset = anc->cpuset;
    w->numa = anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1
                ? hwloc_bitmap_first(anc->nodeset)
                : -1;
  } else {
    w->cpuset = hwloc_topology_get_topology_cpuset(t->h);
    w->numa = -1;
    w->local = 0;
  }
  w->package = package_of(t, w->cpuset);
}

static unsigned long long info_ull(hwloc_obj_t o, const char *name, unsigned long long mult)
{
  const char *v = hwloc_obj_get_info_by_name(o, name);
  unsigned long long x;
  char *end;

  if (!v || !*v || *v == '-')
    return 0;
  errno = 0;
  x = strtoull(v, &end, 10);
  if (errno || *end != '\0' || x > ~0ULL / mult)
    return 0;
  return x * mult;
}

static void copy_info(char *dst, size_t len, hwloc_obj_t o, const char *name)
{
  const char *v = hwloc_obj_get_info_by_name(o, name);

  if (v && *v && !*dst)
    weft__snprintf(dst, len, "%s", v); /* truncation of an over-long name is harmless */
}

static void fill_gpu(weftx_topo *t, hwloc_obj_t dev, weftx_gpu *g, int index)
{
  const struct hwloc_pcidev_attr_s *a = &dev->attr->pcidev;
  struct where w;

  g->index = index;
  weft__snprintf(g->pci, sizeof(g->pci), "%04x:%02x:%02x.%x", a->domain & 0xffffu, a->bus, a->dev,
                 a->func);
  g->vendor_id = a->vendor_id;
  g->device_id = a->device_id;
  /* hwloc's CUDA, NVML and OpenCL OS devices below the PCI device, or the same
   * infos on the PCI device itself (contrib/gather-topology puts them there). */
  for (hwloc_obj_t c = dev; c; c = c == dev ? dev->io_first_child : c->next_sibling) {
    if (c != dev && c->type != HWLOC_OBJ_OS_DEVICE)
      continue;
    copy_info(g->model, sizeof(g->model), c, "GPUModel");
    copy_info(g->uuid, sizeof(g->uuid), c, "NVIDIAUUID");
    if (!g->memory)
      g->memory = info_ull(c, "CUDAGlobalMemorySize", 1024); /* hwloc gives KiB */
    if (!g->memory)
      g->memory = info_ull(c, "OpenCLGlobalMemorySize", 1024);
  }

  locate(t, dev, &w);
  g->numa = w.numa;
  g->package = w.package;
  g->pci_switch = w.pci_switch;
  g->cpuset = w.cpuset;
}

static unsigned long long sysfs_speed(const char *ifname)
{
  char path[128];
  long long mbps = 0;
  FILE *f;

  if (!*ifname || strchr(ifname, '/') || !strcmp(ifname, "..") || !strcmp(ifname, "."))
    return 0;
  if (weft__snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname) != 0)
    return 0;
  f = fopen(path, "r");
  if (!f)
    return 0;
  if (fscanf(f, "%lld", &mbps) != 1 || mbps < 0) /* -1 or EINVAL for a link that is down */
    mbps = 0;
  fclose(f);
  return (unsigned long long)mbps;
}

static void fill_nic_osdev(weftx_topo *t, hwloc_obj_t c, weftx_nic *n)
{
  if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && c->name && !n->name[0]) {
    weft__snprintf(n->name, sizeof(n->name), "%s", c->name);
    n->speed_mbps = info_ull(c, "LinkSpeed", 1);
    if (!n->speed_mbps && t->live)
      n->speed_mbps = sysfs_speed(n->name);
  } else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && c->name && !n->rdma[0]) {
    weft__snprintf(n->rdma, sizeof(n->rdma), "%s", c->name);
  }
}

static void fill_nic(weftx_topo *t, hwloc_obj_t dev, weftx_nic *n, int index)
{
  struct where w;

  n->index = index;
  if (dev->type == HWLOC_OBJ_PCI_DEVICE) {
    const struct hwloc_pcidev_attr_s *a = &dev->attr->pcidev;
    weft__snprintf(n->pci, sizeof(n->pci), "%04x:%02x:%02x.%x", a->domain & 0xffffu, a->bus, a->dev,
                   a->func);
    n->vendor_id = a->vendor_id;
    n->device_id = a->device_id;
    n->gvnic = a->vendor_id == PCI_VENDOR_GVNIC;
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE)
        fill_nic_osdev(t, c, n);
  } else {
    fill_nic_osdev(t, dev, n);
  }
  locate(t, dev, &w);
  n->numa = w.numa;
  n->package = w.package;
  n->pci_switch = w.pci_switch;
  n->cpuset = w.cpuset;
}

static int is_gpu(hwloc_obj_t o)
{
  unsigned cls = o->attr->pcidev.class_id;
  return o->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA && (cls == 0x0300 || cls == 0x0302);
}

static int is_nic(hwloc_obj_t o) { return (o->attr->pcidev.class_id >> 8) == 0x02; }

/* A network interface hwloc found with no PCI device above it (some virtual NICs). */
static int is_bare_netdev(hwloc_obj_t o)
{
  if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !o->name)
    return 0;
  for (hwloc_obj_t p = o->parent; p; p = p->parent)
    if (p->type == HWLOC_OBJ_PCI_DEVICE)
      return 0;
  return 1;
}

void weft__topo_model_fallback(weftx_topo *t)
{
  for (int i = 0; i < t->ngpus; i++)
    if (!t->gpus[i].model[0])
      copy_info(t->gpus[i].model, sizeof(t->gpus[i].model), t->gpu_obj[i], "PCIDevice");
}

int weft__topo_find_devices(weftx_topo *t)
{
  hwloc_obj_t o = NULL, *gpus = NULL, *nics = NULL;
  int ng = 0, nn = 0, nbare = 0, rc = WEFT_ENOMEM;

  while ((o = hwloc_get_next_pcidev(t->h, o)) != NULL) {
    ng += is_gpu(o);
    nn += is_nic(o);
  }
  while ((o = hwloc_get_next_osdev(t->h, o)) != NULL)
    nbare += is_bare_netdev(o);
  gpus = calloc((size_t)ng + 1, sizeof(*gpus));
  nics = calloc((size_t)(nn + nbare) + 1, sizeof(*nics));
  t->gpu_obj = gpus;
  t->gpus = calloc((size_t)ng + 1, sizeof(*t->gpus));
  t->nics = calloc((size_t)(nn + nbare) + 1, sizeof(*t->nics));
  if (!gpus || !nics || !t->gpus || !t->nics)
    goto out;
  ng = nn = 0;
  while ((o = hwloc_get_next_pcidev(t->h, o)) != NULL) {
    if (is_gpu(o))
      gpus[ng++] = o;
    else if (is_nic(o))
      nics[nn++] = o;
  }
  qsort(gpus, (size_t)ng, sizeof(*gpus), pci_qsort_cmp);
  qsort(nics, (size_t)nn, sizeof(*nics), pci_qsort_cmp);
  while ((o = hwloc_get_next_osdev(t->h, o)) != NULL)
    if (is_bare_netdev(o))
      nics[nn++] = o;
  for (int i = 0; i < ng; i++)
    fill_gpu(t, gpus[i], &t->gpus[i], i);
  for (int i = 0; i < nn; i++)
    fill_nic(t, nics[i], &t->nics[i], i);
  t->ngpus = ng;
  t->nnics = nn;
  rc = 0;
out:
  free(nics);
  return rc;
}
