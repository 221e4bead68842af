/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What weft adds to a rank Open MPI placed and bound (weftx/ompi.h): the GPU
 * nearest its binding when the host has at least as many GPUs as ranks, the
 * NIC nearest it, its NUMA memory and its core count, as a weftx_place that
 * the plan shows and the rank's agent turns into its environment. GPUs go out
 * in local rank order, each rank taking the free GPU whose local cpus overlap
 * its binding most (the lowest index among equals), so that every agent of a
 * host, computing the same from the same predicted bindings, agrees without
 * talking to the others. weft__ompi_one_host() runs the three steps for one
 * host alone: the CPU layouts of weftx_map_host().
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

int weftx_ompi_gpus(const weftx_topo *t, const weftx_ompi_bound *b, int n, int *gpu)
{
  int ng = weftx_topo_ngpus(t), *used;
  hwloc_bitmap_t both;

  for (int i = 0; i < n; i++)
    gpu[i] = -1;
  if (ng <= 0 || n > ng)
    return 0;
  used = calloc((size_t)ng, sizeof(*used));
  both = hwloc_bitmap_alloc();
  if (!used || !both) {
    free(used);
    hwloc_bitmap_free(both);
    return WEFT_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    int best = -1, bestw = -1;
    for (int g = 0; g < ng; g++) {
      const weftx_gpu *x = weftx_topo_gpu(t, g);
      int w;
      if (used[g])
        continue;
      hwloc_bitmap_and(both, x->cpuset, b[i].cpuset);
      w = hwloc_bitmap_weight(both);
      if (w > bestw) {
        bestw = w;
        best = g;
      }
    }
    gpu[i] = best;
    used[best] = 1;
  }
  free(used);
  hwloc_bitmap_free(both);
  return 0;
}

/* 1 when GPU \p g is one of the list \p gpus (NULL: all), 0 when not, -1 for a bad list. */
static int gpu_allowed(const char *gpus, int g)
{
  hwloc_bitmap_t set;
  int yes;
  if (!gpus)
    return 1;
  if (!(set = hwloc_bitmap_alloc()))
    return -1;
  if (!*gpus)
    yes = 0;
  else
    yes = hwloc_bitmap_list_sscanf(set, gpus) < 0 ? -1 : hwloc_bitmap_isset(set, (unsigned)g);
  hwloc_bitmap_free(set);
  return yes;
}

int weftx_ompi_place(const weftx_topo *t, const weftx_ompi_policy *p, const weftx_ompi_bound *b,
                     int n, int local, hwloc_const_cpuset_t real, const char *gpus,
                     weftx_place *out)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  hwloc_obj_t o = NULL;
  int *gpu = calloc((size_t)(n > 0 ? n : 1), sizeof(*gpu)), rc;
  hwloc_obj_type_t unit = p->hwthreads || hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) <= 0
                            ? HWLOC_OBJ_PU
                            : HWLOC_OBJ_CORE;

  memset(out, 0, sizeof(*out));
  out->gpu = out->nic = -1;
  out->local_rank = local;
  out->cpuset = hwloc_bitmap_dup(real ? real : b[local].cpuset);
  out->nodeset = hwloc_bitmap_alloc();
  if (!gpu || !out->cpuset || !out->nodeset) {
    free(gpu);
    weftx_place_clear(out);
    return WEFT_ENOMEM;
  }
  out->bound = real ? !hwloc_bitmap_isincluded(weftx_topo_cpuset(t), real) : b[local].bound;
  if ((rc = weftx_ompi_gpus(t, b, n, gpu))) {
    free(gpu);
    weftx_place_clear(out);
    return rc;
  }
  out->gpu = gpu[local];
  if (weftx_topo_ngpus(t) > 0 && out->gpu < 0)
    weft__snprintf(out->note, sizeof(out->note),
                   "%d ranks on a host with %d GPUs: no rank gets "
                   "a GPU (give at most %d ranks per host, or --map-by gpu)",
                   n, weftx_topo_ngpus(t), weftx_topo_ngpus(t));
  if (out->gpu >= 0 && (rc = gpu_allowed(gpus, out->gpu)) <= 0) {
    if (rc < 0) {
      free(gpu);
      weftx_place_clear(out);
      return WEFT_EINVAL;
    }
    /* a Slurm job's (or CUDA_VISIBLE_DEVICES') limit: the nearest GPU is not this job's */
    weft__snprintf(out->note, sizeof(out->note),
                   "the GPU nearest a rank is not one the ranks may "
                   "have here (%s): no rank gets one that way (--map-by gpu gives each one of "
                   "those)",
                   *gpus ? gpus : "none");
    out->gpu = -1;
    gpu[local] = -1;
  }
  while ((o = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, out->cpuset))
      hwloc_bitmap_set(out->nodeset, o->os_index);
  o = NULL;
  while ((o = hwloc_get_next_obj_by_type(h, unit, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, out->cpuset))
      out->ncores++;
  /* an unbound rank may run anywhere: OMP_NUM_THREADS gets its share */
  if (!out->bound && n > 1)
    out->ncores = out->ncores / n > 0 ? out->ncores / n : 1;
  /* the NIC: nearest the GPU (NICs shared out over the host's GPUs), else the cpus */
  out->nic = out->gpu >= 0 ? weft__nic_for_gpus(t, gpu, n, local)
                           : weft__nic_for_cpus(t, out->cpuset, local);
  free(gpu);
  return 0;
}

int weft__ompi_one_host(const weftx_topo *t, const weftx_ompi_mca *m, const weftx_ompi_cmdline *cl,
                        int np, const char *gpus, weftx_host_map *out, char *why, size_t whylen)
{
  weftx_ompi_host host = {t, 0, 0, 1};
  weftx_ompi_app app = {np, NULL, 0, 0};
  weftx_ompi_policy p;
  weftx_ompi_job j;
  weftx_ompi_bound *b = NULL;
  char desc[160];
  int rc;

  memset(out, 0, sizeof(*out));
  if ((rc = weftx_ompi_policy_make(m, cl, &p, why, whylen)) ||
      (rc = weftx_ompi_job_map(&p, &host, 1, &app, 1, t, &j, why, whylen)))
    return rc;
  out->slots = j.slots[0];
  if (!(b = calloc((size_t)j.np, sizeof(*b))) ||
      !(out->place = calloc((size_t)j.np, sizeof(*out->place)))) {
    free(b);
    weftx_ompi_job_clear(&j);
    return WEFT_ENOMEM;
  }
  out->n = j.np;
  if ((rc = weftx_ompi_node_bind(t, &j.policy, j.slots[0], &j.np, 1, b, why, whylen)) == 0) {
    for (int r = 0; rc == 0 && r < j.np; r++) {
      rc = weftx_ompi_place(t, &j.policy, b, j.np, r, NULL, gpus, &out->place[r]);
      if (rc == 0 && j.oversubscribed) {
        char *note = out->place[r].note;
        size_t used = strlen(note);
        weft__snprintf(note + used, sizeof(out->place[r].note) - used,
                       "%soversubscribed: %d "
                       "ranks on %d slots, %s",
                       used ? "; " : "", j.np, j.slots[0],
                       b[r].bound ? "bound as --bind-to says" : "which Open MPI leaves unbound");
      }
    }
    weftx_ompi_bound_clear(b, j.np);
  }
  weftx_ompi_describe(&j.policy, desc, sizeof(desc));
  weft__snprintf(out->how, sizeof(out->how), "%s, as mpirun does", desc);
  free(b);
  weftx_ompi_job_clear(&j);
  return rc;
}
