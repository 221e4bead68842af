/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cores as the placements count them ("units": Core objects, or PUs with
 * hardware threads, minus reserved processors), the NUMA nodes and enclosing
 * objects of a set of them, and clearing a place: the helpers below the GPU
 * rule (map-gpu.c), the model of one host (ompi-place.c) and map.c.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

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
    weft__snprintf(c->why, c->whylen,
                   "%s has no %s object holding processor %d; use --bind-to core", c->label,
                   hwloc_obj_type_string(type), first);
    return WEFT_ENOFIT;
  }
  hwloc_bitmap_and(out, o->cpuset, c->avail);
  return 0;
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
