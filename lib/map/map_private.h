/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the files of lib/map: the resolved request of the GPU
 * rule (map-gpu.c) and the helpers that turn cores into cpusets, the NIC
 * choice, and the Open MPI model of one host that places every CPU layout.
 *
 * A "unit" is what a rank counts as one core: a Core object, or a PU with
 * use_hwthreads. Units are listed in hwloc's logical order (package, NUMA
 * node, core), without the processors of policy->reserved_cpus.
 */
#ifndef WEFT_MAP_PRIVATE_H
#define WEFT_MAP_PRIVATE_H

#include <weftx.h>

typedef struct weft__mapctx {
  const weftx_topo *t;
  const weftx_policy *p;
  hwloc_topology_t h;
  weftx_bind_to bind;      /* resolved: never DEFAULT */
  hwloc_bitmap_t reserved; /* never NULL; empty when nothing is reserved */
  hwloc_bitmap_t avail;    /* the machine's processors minus reserved */
  int *gpus;               /* the GPUs ranks may have (policy->gpus, else all), by index */
  int ngpus;
  const char *label; /* "a3-highgpu-8g.xml" or "this machine", for messages */
  char *why;
  size_t whylen;
} weft__mapctx;

/* Units inside \p within, minus reserved processors. \p *out is allocated by
 * the callee (free()); 0 or WEFT_ENOMEM. */
int weft__units(const weft__mapctx *c, hwloc_const_cpuset_t within, hwloc_obj_t **out, int *n);
/* Add to \p set the available processors of units [first, first+count) of
 * \p units, wrapping around \p n. */
void weft__units_add(const weft__mapctx *c, hwloc_obj_t *units, int n, int first, int count,
                     hwloc_bitmap_t set);
/* Number of units (cores, or PUs with hwthreads) that meet \p set. */
int weft__count_units(const weft__mapctx *c, hwloc_const_cpuset_t set);
/* The NUMA nodes whose processors meet \p set, into \p nodeset. */
void weft__nodes_of(const weft__mapctx *c, hwloc_const_cpuset_t set, hwloc_bitmap_t nodeset);
/* The cpuset of the object of \p type (NUMA node, package) holding processor set
 * \p set's first processor, minus reserved, into \p out; 0 or WEFT_ENOFIT. */
int weft__enclosing(const weft__mapctx *c, hwloc_obj_type_t type, hwloc_const_cpuset_t set,
                    hwloc_bitmap_t out);

/* The GPU rule for one rank: its GPU, NIC and cores (map-gpu.c). */
int weft__map_gpu(weft__mapctx *c, int local_rank, int local_size, weftx_place *out);

/* Open MPI's layout of \p np ranks (0: its count) on \p t alone, mpirun's own host, as
 * `mpirun -np NP` with \p m and \p cl there makes it, into \p out (ompi-place.c). */
int weft__ompi_one_host(const weftx_topo *t, const weftx_ompi_mca *m, const weftx_ompi_cmdline *cl,
                        int np, const char *gpus, weftx_host_map *out, char *why, size_t whylen);

/* The NIC for the GPU that the \p k-th of the \p m GPUs \p sel gets when
 * each GPU takes the nearest NIC and equally near NICs are shared out evenly
 * in GPU order; -1 when the topology has no NIC. */
int weft__nic_for_gpus(const weftx_topo *t, const int *sel, int m, int k);
/* The NIC nearest processors \p set (same NUMA node, then package, then any),
 * the \p turn-th of the equally near ones; -1 when none. */
int weft__nic_for_cpus(const weftx_topo *t, hwloc_const_cpuset_t set, int turn);

#endif /* WEFT_MAP_PRIVATE_H */
