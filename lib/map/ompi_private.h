/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the two halves of the Open MPI model share: the ranks of one host in
 * the order Open MPI's mapper puts them there (node->procs), each with the
 * object it was mapped to (its locale), and the order Open MPI numbers them in.
 * weftx_ompi_job_map() uses it to number the ranks across hosts, and
 * weftx_ompi_node_bind() to bind them, so that the two agree by construction.
 */
#ifndef WEFT_OMPI_PRIVATE_H
#define WEFT_OMPI_PRIVATE_H

#include <weftx/ompi.h>

/* One rank of a host, in mapping order. */
typedef struct weft__oproc {
  int app;
  hwloc_obj_t locale; /* the object it was mapped to; the root for slot, node, ppr:N:node */
  int order;          /* its place among its app's ranks of this host in rank order */
} weft__oproc;

/* The hwloc type and depth of an Open MPI level (WEFTX_OMPI_NUMA .. HWTHREAD); the
 * depth is HWLOC_TYPE_DEPTH_UNKNOWN when the topology has no such object. */
hwloc_obj_type_t weft__ompi_type(int level);
int weft__ompi_depth(hwloc_topology_t h, int level);

/* Open MPI's "available" objects of a level: those with processors, in order. */
unsigned weft__ompi_nobjs(hwloc_topology_t h, int level);
hwloc_obj_t weft__ompi_obj(hwloc_topology_t h, int level, unsigned i);

/* opal_hwloc_base_get_npus(): the cores under \p o (hardware threads with hwthreads). */
unsigned weft__ompi_npus(hwloc_topology_t h, hwloc_obj_t o, int hwthreads);

/* The level the mapper leaves in the policy after mapping (ppr:N:socket maps "by
 * socket"), which binding compares with. */
int weft__ompi_map_level(const weftx_ompi_policy *p);

/* The ranks of one host in mapping order (\p out, sum(counts) entries): \p counts[a]
 * ranks of app a, on a host of \p slots slots (the first pass of the object mappers
 * fills them), with their order of numbering. 0, WEFT_ENOFIT (no object of the
 * level; \p why says so), WEFT_ENOMEM. */
int weft__ompi_node_seq(hwloc_topology_t h, const weftx_ompi_policy *p, int slots,
                        const int *counts, int napps, weft__oproc *out, char *why, size_t whylen);

#endif /* WEFT_OMPI_PRIVATE_H */
