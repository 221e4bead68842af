/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The entry of placement: weftx_map_host() and weftx_map_rank() send a host's
 * ranks to the GPU rule (map-gpu.c) or to Open MPI's model (ompi-*.c), the one
 * engine of CPU layouts, to which the policy's words go as mpirun's options.
 * Also the helpers the GPU rule uses to turn cores into cpusets, and the GPU
 * rule's policy as text.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

static const char *label_of(const weftx_topo *t)
{
  const char *src = weftx_topo_source(t), *slash;

  if (!src || weftx_topo_is_live(t))
    return "this machine";
  slash = strrchr(src, '/');
  return slash ? slash + 1 : src;
}

/* The GPUs ranks may have: policy->gpus, checked against the topology, else all. */
static int ctx_gpus(weft__mapctx *c, char *why, size_t whylen)
{
  const char *list = c->p->gpus;
  int all = weftx_topo_ngpus(c->t), i;
  hwloc_bitmap_t set;

  c->gpus = calloc((size_t)(all > 0 ? all : 1), sizeof(*c->gpus));
  if (!c->gpus)
    return WEFT_ENOMEM;
  if (!list) {
    for (i = 0; i < all; i++)
      c->gpus[c->ngpus++] = i;
    return 0;
  }
  if (!*list)
    return 0;
  set = hwloc_bitmap_alloc();
  if (!set)
    return WEFT_ENOMEM;
  if (hwloc_bitmap_list_sscanf(set, list) < 0 || hwloc_bitmap_weight(set) < 0) {
    weft__snprintf(why, whylen, "GPU list '%s' is not a list like 0-1,4", list);
    hwloc_bitmap_free(set);
    return WEFT_EINVAL;
  }
  if (hwloc_bitmap_last(set) >= all) {
    weft__snprintf(why, whylen,
                   "GPU %d of the GPUs the ranks may use (%s) is not a GPU of %s, "
                   "which has %d",
                   hwloc_bitmap_last(set), list, c->label, all);
    hwloc_bitmap_free(set);
    return WEFT_EINVAL;
  }
  hwloc_bitmap_foreach_begin(i, set) c->gpus[c->ngpus++] = i;
  hwloc_bitmap_foreach_end();
  hwloc_bitmap_free(set);
  return 0;
}

/* The GPU rule's request on \p t, or (*gpu 0) a CPU layout: --map-by gpu, or auto on a
 * host with GPUs to give, is the GPU rule. */
static int ctx_init(weft__mapctx *c, const weftx_topo *t, const weftx_policy *p, int *gpu,
                    char *why, size_t whylen)
{
  int rc;

  memset(c, 0, sizeof(*c));
  c->t = t;
  c->p = p;
  c->h = weftx_topo_hwloc(t);
  c->why = why;
  c->whylen = whylen;
  c->label = label_of(t);
  c->reserved = hwloc_bitmap_alloc();
  c->avail = hwloc_bitmap_alloc();
  if (!c->reserved || !c->avail)
    return WEFT_ENOMEM;
  if ((rc = ctx_gpus(c, why, whylen)) != 0)
    return rc;
  *gpu = p->map_by == WEFTX_MAP_GPU || (p->map_by == WEFTX_MAP_AUTO && c->ngpus > 0);
  c->bind = p->bind_to == WEFTX_BIND_DEFAULT ? WEFTX_BIND_GPU_LOCAL : p->bind_to;
  if (!*gpu)
    return 0;
  if (c->bind == WEFTX_BIND_OTHER) {
    weft__snprintf(why, whylen,
                   "--bind-to %s: a rank next to its GPU binds to gpu-local, core, "
                   "numa, socket or none; for Open MPI's bindings give a CPU mapping "
                   "(--map-by core, socket, ...)",
                   p->bind_words ? p->bind_words : "?");
    return WEFT_EINVAL;
  }
  if (p->reserved_cpus && *p->reserved_cpus &&
      hwloc_bitmap_list_sscanf(c->reserved, p->reserved_cpus) < 0) {
    weft__snprintf(why, whylen, "reserved processors '%s' are not a list like 8-21,112-125",
                   p->reserved_cpus);
    return WEFT_EINVAL;
  }
  hwloc_bitmap_andnot(c->avail, weftx_topo_cpuset(t), c->reserved);
  if (hwloc_bitmap_iszero(c->avail)) {
    weft__snprintf(why, whylen, "reserved processors '%s' leave no processor of %s for ranks",
                   p->reserved_cpus, c->label);
    return WEFT_ENOFIT;
  }
  return 0;
}

static void ctx_free(weft__mapctx *c)
{
  free(c->gpus);
  hwloc_bitmap_free(c->reserved);
  hwloc_bitmap_free(c->avail);
}

static const char *bind_name(weftx_bind_to b)
{
  switch (b) {
  case WEFTX_BIND_DEFAULT: return "default";
  case WEFTX_BIND_GPU_LOCAL: return "gpu-local";
  case WEFTX_BIND_CORE: return "core";
  case WEFTX_BIND_NUMA: return "numa";
  case WEFTX_BIND_PACKAGE: return "socket";
  case WEFTX_BIND_NONE: return "none";
  case WEFTX_BIND_OTHER: break;
  }
  return "other";
}

int weftx_policy_format(const weftx_policy *p, char *buf, size_t len)
{
  char map[64], pe[24] = "";
  weftx_bind_to b;

  if (!p || !buf || !len)
    return WEFT_EINVAL;
  if (p->pe > 0)
    weft__snprintf(pe, sizeof(pe), ":pe=%d", p->pe);
  if (p->map_by == WEFTX_MAP_CPU)
    weft__snprintf(map, sizeof(map), "%s", p->map_words ? p->map_words : "?");
  else if (p->ppr_n > 0)
    weft__snprintf(map, sizeof(map), "ppr:%d:gpu%s", p->ppr_n, pe);
  else
    weft__snprintf(map, sizeof(map), "%s%s", p->map_by == WEFTX_MAP_GPU ? "gpu" : "auto", pe);
  b = p->bind_to == WEFTX_BIND_DEFAULT && p->map_by == WEFTX_MAP_GPU ? WEFTX_BIND_GPU_LOCAL
                                                                     : p->bind_to;
  return weft__snprintf(buf, len, "%s, bind %s%s%s%s%s", map,
                        b == WEFTX_BIND_OTHER && p->bind_words ? p->bind_words : bind_name(b),
                        p->oversubscribe ? ", oversubscribe" : "",
                        p->use_hwthreads ? ", hwthreads" : "",
                        p->reserved_cpus && *p->reserved_cpus ? ", reserved " : "",
                        p->reserved_cpus && *p->reserved_cpus ? p->reserved_cpus : "");
}

int weftx_map_slots(const weftx_topo *t, const weftx_policy *p)
{
  weft__mapctx c;
  int slots = 0, gpu = 0;

  if (!t || !p)
    return 0;
  if (ctx_init(&c, t, p, &gpu, NULL, 0) == 0)
    slots = gpu ? c.ngpus * (p->ppr_n > 0 ? p->ppr_n : 1)
                /* Open MPI's default slots (orte_set_default_slots): cores, or hardware threads */
                : hwloc_get_nbobjs_by_type(c.h, p->use_hwthreads ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE);
  ctx_free(&c);
  return slots;
}

/* The GPU rule for rank \p r of \p n: its place, then what every binding shares. */
static int gpu_rank(weft__mapctx *c, int r, int n, weftx_place *out)
{
  int rc;

  memset(out, 0, sizeof(*out));
  out->gpu = out->nic = -1;
  out->local_rank = r;
  out->cpuset = hwloc_bitmap_alloc();
  out->nodeset = hwloc_bitmap_alloc();
  rc = out->cpuset && out->nodeset ? weft__map_gpu(c, r, n, out) : WEFT_ENOMEM;
  if (rc == 0 && c->bind == WEFTX_BIND_NONE) {
    hwloc_bitmap_copy(out->cpuset, weftx_topo_cpuset(c->t));
    weft__nodes_of(c, out->cpuset, out->nodeset);
  }
  if (rc != 0) {
    weftx_place_clear(out);
    return rc;
  }
  out->bound = c->bind != WEFTX_BIND_NONE;
  out->ncores = weft__count_units(c, out->cpuset);
  /* An unbound rank may run anywhere, but OMP_NUM_THREADS = every core of the
   * machine would oversubscribe it n times: its share. */
  if (!out->bound && n > 1)
    out->ncores = out->ncores / n > 0 ? out->ncores / n : 1;
  if (weft_log_enabled(WEFT_LOG_MAP)) {
    char cpus[512] = "?";
    weftx_cpuset_format(out->cpuset, cpus, sizeof(cpus));
    weft_log(WEFT_LOG_MAP, "%s rank %d of %d: gpu bind %s: GPU %d, %d cores %s, NIC %d%s%s",
             c->label, r, n, bind_name(c->bind), out->gpu, out->ncores, cpus, out->nic,
             out->note[0] ? "; " : "", out->note);
  }
  return 0;
}

/* A CPU layout: the policy's words as mpirun's options, to Open MPI's model of this host. */
static int cpu_layout(const weft__mapctx *c, int n, weftx_host_map *out)
{
  const weftx_policy *p = c->p;
  weftx_ompi_mca m;
  weftx_ompi_cmdline cl;
  char pe[24], inner[512] = "";
  int rc;

  if (p->bind_to == WEFTX_BIND_GPU_LOCAL) {
    weft__snprintf(c->why, c->whylen,
                   "--bind-to gpu-local needs --map-by gpu, and %s has no "
                   "GPUs%s; use --bind-to core",
                   c->label, p->gpus ? " the ranks may use" : "");
    return WEFT_ENOGPU;
  }
  if (p->reserved_cpus && *p->reserved_cpus) {
    weft__snprintf(c->why, c->whylen,
                   "reserved processors (%s) are for ranks next to a GPU: "
                   "Open MPI's CPU layouts, which place these ranks, have none; leave them out",
                   p->reserved_cpus);
    return WEFT_EINVAL;
  }
  memset(&m, 0, sizeof(m));
  memset(&cl, 0, sizeof(cl));
  /* each option sets its MCA parameter and the job's policy, as on mpirun's command line */
  m.v[WEFTX_OMPI_MCA_MAPPING] = cl.map_by = p->map_by == WEFTX_MAP_CPU ? p->map_words : NULL;
  m.v[WEFTX_OMPI_MCA_BINDING] = cl.bind_to = p->bind_words;
  m.from[WEFTX_OMPI_MCA_MAPPING] = "--map-by";
  m.from[WEFTX_OMPI_MCA_BINDING] = "--bind-to";
  if (p->pe > 0) {
    weft__snprintf(pe, sizeof(pe), "%d", p->pe);
    m.v[WEFTX_OMPI_MCA_CPUS_PER_PROC] = pe;
    m.from[WEFTX_OMPI_MCA_CPUS_PER_PROC] = "--cpus-per-rank";
    cl.cpus_per_proc = p->pe;
  }
  if (p->oversubscribe) {
    m.v[WEFTX_OMPI_MCA_OVERSUBSCRIBE] = "1";
    cl.oversubscribe = 1;
  }
  if (p->use_hwthreads)
    m.v[WEFTX_OMPI_MCA_HWTHREADS] = "1";
  rc = weft__ompi_one_host(c->t, &m, &cl, n, p->gpus, out, inner, sizeof(inner));
  if (rc == 0 && n > 0 && out->n != n) {
    /* the model maps -np N ranks or refuses: anything else is its own mistake */
    weft__snprintf(inner, sizeof(inner), "Open MPI's model placed %d ranks of %d", out->n, n);
    rc = WEFT_ENOFIT;
  }
  if (rc)
    weft__snprintf(c->why, c->whylen, "%s: %s", c->label, inner[0] ? inner : weft_strerror(rc));
  return rc;
}

int weftx_map_host(const weftx_topo *t, const weftx_policy *p, int n, weftx_host_map *out,
                   char *why, size_t whylen)
{
  weft__mapctx c;
  int rc, gpu = 0;

  if (why && whylen)
    why[0] = '\0';
  if (!out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof(*out));
  if (!t || !p || n < 0)
    return WEFT_EINVAL;
  rc = ctx_init(&c, t, p, &gpu, why, whylen);
  if (rc == 0 && !gpu)
    rc = cpu_layout(&c, n, out);
  else if (rc == 0) {
    out->slots = c.ngpus * (p->ppr_n > 0 ? p->ppr_n : 1);
    /* no GPU to give: one rank, for map-gpu.c's message */
    out->n = n > 0 ? n : out->slots > 0 ? out->slots : 1;
    weftx_policy shown = *p;
    char pol[sizeof(out->how) - 8];
    shown.map_by = WEFTX_MAP_GPU;
    weftx_policy_format(&shown, pol, sizeof(pol));
    weft__snprintf(out->how, sizeof(out->how), "map-by %s", pol);
    if (!(out->place = calloc((size_t)out->n, sizeof(*out->place))))
      rc = WEFT_ENOMEM;
    for (int r = 0; rc == 0 && r < out->n; r++)
      rc = gpu_rank(&c, r, out->n, &out->place[r]);
  }
  ctx_free(&c);
  if (rc != 0) {
    weftx_host_map_clear(out);
    WEFT__LOG(MAP, "%d ranks: %s", n, why && why[0] ? why : weft_strerror(rc));
  }
  return rc;
}

void weftx_host_map_clear(weftx_host_map *m)
{
  if (!m)
    return;
  for (int r = 0; m->place && r < m->n; r++)
    weftx_place_clear(&m->place[r]);
  free(m->place);
  memset(m, 0, sizeof(*m));
}

int weftx_map_rank(const weftx_topo *t, const weftx_policy *p, int local_rank, int local_size,
                   weftx_place *out, char *why, size_t whylen)
{
  weft__mapctx c;
  weftx_host_map all;
  int rc, gpu = 0;

  if (why && whylen)
    why[0] = '\0';
  if (!out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof(*out));
  if (!t || !p || local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    weft__snprintf(why, whylen, "local rank %d of %d is not a rank of a host", local_rank,
                   local_size);
    return WEFT_EINVAL;
  }
  rc = ctx_init(&c, t, p, &gpu, why, whylen);
  if (rc == 0 && gpu)
    rc = gpu_rank(&c, local_rank, local_size, out);
  ctx_free(&c);
  if (rc != 0 || gpu)
    return rc;
  /* a CPU layout binds the host's ranks together: place them all, keep this one */
  if ((rc = weftx_map_host(t, p, local_size, &all, why, whylen)) != 0)
    return rc;
  *out = all.place[local_rank];
  memset(&all.place[local_rank], 0, sizeof(*out));
  weftx_host_map_clear(&all);
  return 0;
}
