/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftx_map_rank(): the entry of placement, and the helpers both mappers
 * (map-gpu.c, map-cpu.c) use to turn cores into cpusets and nodesets. It
 * resolves the policy's defaults against the topology, parses the reserved
 * processors, and hands the rank to the mapper of its policy.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

weftx_map_by weft__map_effective(int ngpus, const weftx_policy *p)
{
  if (p->map_by == WEFTX_MAP_AUTO)
    return ngpus > 0 ? WEFTX_MAP_GPU : WEFTX_MAP_CORE;
  return p->map_by;
}

weftx_bind_to weft__bind_effective(const weftx_policy *p, weftx_map_by map)
{
  if (p->bind_to != WEFTX_BIND_DEFAULT)
    return p->bind_to;
  switch (map) {
  case WEFTX_MAP_GPU:
    return WEFTX_BIND_GPU_LOCAL;
  case WEFTX_MAP_NUMA:
    return p->pe > 0 ? WEFTX_BIND_CORE : WEFTX_BIND_NUMA;
  case WEFTX_MAP_PACKAGE:
    return p->pe > 0 ? WEFTX_BIND_CORE : WEFTX_BIND_PACKAGE;
  case WEFTX_MAP_PPR:
    return p->ppr_obj == WEFTX_OBJ_GPU ? WEFTX_BIND_GPU_LOCAL : WEFTX_BIND_CORE;
  case WEFTX_MAP_AUTO:
    return WEFTX_BIND_DEFAULT;
  case WEFTX_MAP_CORE:
  case WEFTX_MAP_SLOT:
  case WEFTX_MAP_NODE:
    break;
  }
  return WEFTX_BIND_CORE;
}

static hwloc_obj_type_t unit_type(const weft__mapctx *c)
{
  /* A topology without Core objects (some VM exports) counts processors. */
  if (c->p->use_hwthreads || hwloc_get_nbobjs_by_type(c->h, HWLOC_OBJ_CORE) <= 0)
    return HWLOC_OBJ_PU;
  return HWLOC_OBJ_CORE;
}

int weft__units(const weft__mapctx *c, hwloc_const_cpuset_t within, hwloc_obj_t **out, int *n)
{
  hwloc_obj_type_t type = unit_type(c);
  int total = hwloc_get_nbobjs_by_type(c->h, type), k = 0;
  hwloc_obj_t *v, o = NULL;

  *out = NULL;
  *n = 0;
  if (total <= 0)
    return 0;
  v = calloc((size_t)total, sizeof(*v));
  if (!v)
    return WEFT_ENOMEM;
  while ((o = hwloc_get_next_obj_by_type(c->h, type, o)) != NULL) {
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, within) &&
        hwloc_bitmap_intersects(o->cpuset, c->avail) && k < total)
      v[k++] = o;
  }
  *out = v;
  *n = k;
  return 0;
}

void weft__units_add(const weft__mapctx *c, hwloc_obj_t *units, int n, int first, int count,
                     hwloc_bitmap_t set)
{
  int i;

  if (n <= 0)
    return;
  for (i = 0; i < count; i++) {
    hwloc_obj_t u = units[(first + i) % n];
    hwloc_bitmap_or(set, set, u->cpuset);
  }
  hwloc_bitmap_and(set, set, c->avail);
}

int weft__count_units(const weft__mapctx *c, hwloc_const_cpuset_t set)
{
  hwloc_obj_type_t type = unit_type(c);
  hwloc_obj_t o = NULL;
  int k = 0;

  while ((o = hwloc_get_next_obj_by_type(c->h, type, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, set))
      k++;
  return k;
}

void weft__nodes_of(const weft__mapctx *c, hwloc_const_cpuset_t set, hwloc_bitmap_t nodeset)
{
  hwloc_obj_t o = NULL;

  hwloc_bitmap_zero(nodeset);
  while ((o = hwloc_get_next_obj_by_type(c->h, HWLOC_OBJ_NUMANODE, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, set))
      hwloc_bitmap_set(nodeset, o->os_index);
}

int weft__enclosing(const weft__mapctx *c, hwloc_obj_type_t type, hwloc_const_cpuset_t set,
                    hwloc_bitmap_t out)
{
  int first = hwloc_bitmap_first(set);
  hwloc_obj_t o = NULL;

  if (first >= 0)
    while ((o = hwloc_get_next_obj_by_type(c->h, type, o)) != NULL)
      if (o->cpuset && hwloc_bitmap_isset(o->cpuset, (unsigned)first))
        break;
  if (!o) {
    weft__snprintf(c->why, c->whylen, "%s has no %s object holding processor %d; use --bind-to core",
                   c->label, hwloc_obj_type_string(type), first);
    return WEFT_ENOFIT;
  }
  hwloc_bitmap_and(out, o->cpuset, c->avail);
  return 0;
}

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
    weft__snprintf(why, whylen, "GPU %d of the GPUs the ranks may use (%s) is not a GPU of %s, "
                   "which has %d", hwloc_bitmap_last(set), list, c->label, all);
    hwloc_bitmap_free(set);
    return WEFT_EINVAL;
  }
  hwloc_bitmap_foreach_begin(i, set)
    c->gpus[c->ngpus++] = i;
  hwloc_bitmap_foreach_end();
  hwloc_bitmap_free(set);
  return 0;
}

static int ctx_init(weft__mapctx *c, const weftx_topo *t, const weftx_policy *p, char *why,
                    size_t whylen)
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
  c->map = weft__map_effective(c->ngpus, p);
  c->bind = weft__bind_effective(p, c->map);
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

static int count_objs(const weft__mapctx *c, hwloc_obj_type_t type)
{
  hwloc_obj_t o = NULL;
  int k = 0;

  while ((o = hwloc_get_next_obj_by_type(c->h, type, o)) != NULL)
    if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, c->avail))
      k++;
  return k;
}

int weftx_map_slots(const weftx_topo *t, const weftx_policy *p)
{
  weft__mapctx c;
  int slots = 0, pe = p && p->pe > 0 ? p->pe : 1;

  if (!t || !p)
    return 0;
  if (ctx_init(&c, t, p, NULL, 0) != 0) {
    ctx_free(&c);
    return 0;
  }
  switch (c.map) {
  case WEFTX_MAP_GPU:
    slots = c.ngpus;
    break;
  case WEFTX_MAP_PPR:
    switch (p->ppr_obj) {
    case WEFTX_OBJ_GPU: slots = c.ngpus; break;
    case WEFTX_OBJ_CORE: slots = weft__count_units(&c, c.avail); break;
    case WEFTX_OBJ_NUMA: slots = count_objs(&c, HWLOC_OBJ_NUMANODE); break;
    case WEFTX_OBJ_PACKAGE: slots = count_objs(&c, HWLOC_OBJ_PACKAGE); break;
    case WEFTX_OBJ_NODE: slots = 1; break;
    case WEFTX_OBJ_NONE: break;
    }
    slots *= p->ppr_n;
    break;
  default:
    slots = weft__count_units(&c, c.avail) / pe;
    break;
  }
  ctx_free(&c);
  return slots;
}

int weftx_map_rank(const weftx_topo *t, const weftx_policy *p, int local_rank, int local_size,
                  weftx_place *out, char *why, size_t whylen)
{
  weft__mapctx c;
  int rc;

  if (why && whylen)
    why[0] = '\0';
  if (!out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof(*out));
  out->gpu = -1;
  out->nic = -1;
  if (!t || !p || local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    weft__snprintf(why, whylen, "local rank %d of %d is not a rank of a host", local_rank,
                   local_size);
    return WEFT_EINVAL;
  }
  out->local_rank = local_rank;
  out->cpuset = hwloc_bitmap_alloc();
  out->nodeset = hwloc_bitmap_alloc();
  rc = ctx_init(&c, t, p, why, whylen);
  if (rc == 0 && (!out->cpuset || !out->nodeset))
    rc = WEFT_ENOMEM;
  if (rc == 0) {
    if (c.map == WEFTX_MAP_GPU || (c.map == WEFTX_MAP_PPR && p->ppr_obj == WEFTX_OBJ_GPU))
      rc = weft__map_gpu(&c, local_rank, local_size, out);
    else if (c.bind == WEFTX_BIND_GPU_LOCAL) {
      weft__snprintf(why, whylen, "--bind-to gpu-local needs --map-by gpu, and %s has no GPUs; "
                     "use --bind-to core", c.label);
      rc = c.ngpus > 0 ? WEFT_EINVAL : WEFT_ENOGPU;
    } else
      rc = weft__map_cpu(&c, local_rank, local_size, out);
  }
  if (rc == 0 && c.bind == WEFTX_BIND_NONE) {
    hwloc_bitmap_copy(out->cpuset, weftx_topo_cpuset(t));
    weft__nodes_of(&c, out->cpuset, out->nodeset);
    out->bound = 0;
  } else if (rc == 0)
    out->bound = 1;
  if (rc == 0) {
    out->ncores = weft__count_units(&c, out->cpuset);
    /* An unbound rank may run anywhere, but OMP_NUM_THREADS = every core of
     * the machine would oversubscribe it local_size times: its share. */
    if (!out->bound && local_size > 1)
      out->ncores = out->ncores / local_size > 0 ? out->ncores / local_size : 1;
    if (weft_log_enabled(WEFT_LOG_MAP)) {
      char cpus[512] = "?";
      weftx_cpuset_format(out->cpuset, cpus, sizeof(cpus));
      weft_log(WEFT_LOG_MAP, "%s rank %d of %d: map %s bind %s: GPU %d, %d cores %s, NIC %d%s%s",
               c.label, local_rank, local_size, weft__map_name(c.map), weft__bind_name(c.bind),
               out->gpu, out->ncores, cpus, out->nic, out->note[0] ? "; " : "", out->note);
    }
  }
  ctx_free(&c);
  if (rc != 0) {
    weftx_place_clear(out);
    WEFT__LOG(MAP, "rank %d of %d: %s", local_rank, local_size, why ? why : weft_strerror(rc));
  }
  return rc;
}

void weftx_place_clear(weftx_place *pl)
{
  if (!pl)
    return;
  hwloc_bitmap_free(pl->cpuset);
  hwloc_bitmap_free(pl->nodeset);
  pl->cpuset = NULL;
  pl->nodeset = NULL;
}
