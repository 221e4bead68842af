/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CPU-only mappings, after Open MPI:
 *   core, slot, node  ranks take cores in order, pe (default 1) each;
 *   numa, package     ranks go round-robin over the NUMA nodes (packages),
 *                     each taking the next pe cores of its object;
 *   ppr:N:OBJ         N ranks fill each object in turn and share its cores
 *                     evenly (pe each when given).
 * A rank's own cores are its "share"; --bind-to core binds to them, numa and
 * package to the object around them. Objects with no free processor (a
 * memory-only NUMA node, all reserved) take no rank.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>

/* One object ranks go to, with its units. */
struct domain {
  hwloc_obj_t obj;      /* NULL for the whole machine */
  hwloc_obj_t *units;
  int nunits;
};

static void domains_free(struct domain *d, int n)
{
  int i;

  for (i = 0; i < n; i++)
    free(d[i].units);
  free(d);
}

/* The objects of \p type with a free unit (the whole machine for NODE). */
static int domains(const weft__mapctx *c, weftx_obj what, struct domain **out, int *n)
{
  hwloc_obj_type_t type;
  struct domain *d;
  hwloc_obj_t o = NULL;
  int total, k = 0, rc;

  *out = NULL;
  *n = 0;
  switch (what) {
  case WEFTX_OBJ_CORE:
    type = c->p->use_hwthreads || hwloc_get_nbobjs_by_type(c->h, HWLOC_OBJ_CORE) <= 0
           ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE;
    break;
  case WEFTX_OBJ_NUMA: type = HWLOC_OBJ_NUMANODE; break;
  case WEFTX_OBJ_PACKAGE: type = HWLOC_OBJ_PACKAGE; break;
  default: type = HWLOC_OBJ_MACHINE; break;
  }
  total = hwloc_get_nbobjs_by_type(c->h, type);
  if (total <= 0)
    return 0;
  d = calloc((size_t)total, sizeof(*d));
  if (!d)
    return WEFT_ENOMEM;
  while ((o = hwloc_get_next_obj_by_type(c->h, type, o)) != NULL && k < total) {
    if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, c->avail))
      continue;
    rc = weft__units(c, o->cpuset, &d[k].units, &d[k].nunits);
    if (rc != 0) {
      domains_free(d, k);
      return rc;
    }
    if (d[k].nunits == 0) {
      free(d[k].units);
      d[k].units = NULL;
      continue;
    }
    d[k++].obj = o;
  }
  *out = d;
  *n = k;
  return 0;
}

static const char *plural(weftx_obj what, int n)
{
  switch (what) {
  case WEFTX_OBJ_CORE: return n == 1 ? "core" : "cores";
  case WEFTX_OBJ_NUMA: return n == 1 ? "NUMA node" : "NUMA nodes";
  case WEFTX_OBJ_PACKAGE: return n == 1 ? "package" : "packages";
  default: return n == 1 ? "machine" : "machines";
  }
}

/* Round-robin over objects with room (pe units per rank), for the rank at
 * place r of \p slots places in all. A round fills every place, so ranks
 * beyond the slots (oversubscribe only) start the next round: rank r lands
 * where rank r % slots did. Sets rank r's object and its place in it. */
static void round_robin(const struct domain *d, int nd, int pe, int slots, int r, int *dom,
                        int *slot)
{
  int *used, i, o = 0, p = r % slots;

  *dom = 0;
  *slot = p;
  if (nd == 1)
    return;
  used = calloc((size_t)nd, sizeof(*used));
  if (!used) {
    *dom = p % nd;
    *slot = p / nd;
    return;
  }
  for (i = 0; i <= p; i++) {
    int tries;
    /* p < slots: some object has room, so this stops within nd tries. */
    for (tries = 0; tries < nd && (used[o] + 1) * pe > d[o].nunits; tries++)
      o = (o + 1) % nd;
    *dom = o;
    *slot = used[o]++;
    o = (o + 1) % nd;
  }
  free(used);
}

int weft__map_cpu(weft__mapctx *c, int r, int n, weftx_place *out)
{
  const weftx_policy *p = c->p;
  int pe = p->pe > 0 ? p->pe : 1, nd = 0, i, dom = 0, first, count, slots = 0, turn, rc;
  weftx_obj what;
  struct domain *d = NULL;
  hwloc_bitmap_t own = NULL;
  const char *unit = p->use_hwthreads ? "processors" : "cores";
  char text[160];

  switch (c->map) {
  case WEFTX_MAP_NUMA: what = WEFTX_OBJ_NUMA; break;
  case WEFTX_MAP_PACKAGE: what = WEFTX_OBJ_PACKAGE; break;
  case WEFTX_MAP_PPR: what = p->ppr_obj; break;
  default: what = WEFTX_OBJ_NODE; break;
  }
  if (what == WEFTX_OBJ_NONE || (c->map == WEFTX_MAP_PPR && p->ppr_n < 1)) {
    weft__snprintf(c->why, c->whylen, "ppr needs a count and an object, e.g. ppr:2:numa");
    return WEFT_EINVAL;
  }
  rc = domains(c, what, &d, &nd);
  if (rc != 0)
    return rc;
  if (nd == 0) {
    weft__snprintf(c->why, c->whylen, "%s has no %s with a free processor; use --map-by core",
                   c->label, plural(what, 1));
    rc = WEFT_ENOFIT;
    goto out;
  }

  if (c->map == WEFTX_MAP_PPR) {
    int q, j;
    slots = p->ppr_n * nd;
    if (n > slots && !p->oversubscribe) {
      weft__snprintf(c->why, c->whylen, "%d ranks but ppr:%d:%s on %s has %d slots (%d %s x %d); "
                     "use -np %d or fewer, or --oversubscribe", n, p->ppr_n, weft__obj_name(what),
                     c->label, slots, nd, plural(what, nd), p->ppr_n, slots);
      rc = WEFT_ENOFIT;
      goto out;
    }
    dom = (r % slots) / p->ppr_n;
    j = (r % slots) % p->ppr_n;
    if (p->pe > 0 && (long)p->pe * p->ppr_n > d[dom].nunits && !p->oversubscribe) {
      weft__snprintf(c->why, c->whylen, "ppr:%d:%s:pe=%d needs %d %s per %s, but %s has %d there; "
                     "use a smaller pe or count", p->ppr_n, weft__obj_name(what), p->pe,
                     p->ppr_n * p->pe, unit, plural(what, 1), c->label, d[dom].nunits);
      rc = WEFT_ENOFIT;
      goto out;
    }
    q = p->pe > 0 ? p->pe : d[dom].nunits / p->ppr_n;
    if (q < 1)
      q = 1;
    first = j * q;
    count = q;
    turn = j;
  } else {
    int total = 0, slot;
    for (i = 0; i < nd; i++)
      total += d[i].nunits;
    if (pe > total) {
      weft__snprintf(c->why, c->whylen, "pe=%d but %s has %d %s; use pe=%d or less", pe,
                     c->label, total, unit, total);
      rc = WEFT_ENOFIT;
      goto out;
    }
    for (i = 0; i < nd; i++)
      slots += d[i].nunits / pe;
    if (slots == 0) {
      weft__snprintf(c->why, c->whylen, "pe=%d is more %s than any %s of %s has; use a smaller pe",
                     pe, unit, plural(what, 1), c->label);
      rc = WEFT_ENOFIT;
      goto out;
    }
    if (n > slots && !p->oversubscribe) {
      if (p->pe > 0)
        weft__snprintf(c->why, c->whylen, "%d ranks with pe=%d need %d %s, but %s has %d; use -np %d "
                       "or fewer, or --oversubscribe", n, pe, n * pe, unit, c->label, total, slots);
      else
        weft__snprintf(c->why, c->whylen, "%d ranks but %s has %d %s; use -np %d or fewer, or "
                       "--oversubscribe", n, c->label, total, unit, slots);
      rc = WEFT_ENOFIT;
      goto out;
    }
    round_robin(d, nd, pe, slots, r, &dom, &slot);
    first = slot * pe;
    count = pe;
    turn = slot;
  }

  own = hwloc_bitmap_alloc();
  if (!own) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  weft__units_add(c, d[dom].units, d[dom].nunits, first, count, own);
  if (c->bind == WEFTX_BIND_NUMA || c->bind == WEFTX_BIND_PACKAGE) {
    hwloc_obj_type_t type = c->bind == WEFTX_BIND_NUMA ? HWLOC_OBJ_NUMANODE : HWLOC_OBJ_PACKAGE;
    if (d[dom].obj && d[dom].obj->type == type)
      hwloc_bitmap_and(out->cpuset, d[dom].obj->cpuset, c->avail);
    else if ((rc = weft__enclosing(c, type, own, out->cpuset)) != 0)
      goto out;
  } else
    hwloc_bitmap_copy(out->cpuset, own);
  weft__nodes_of(c, out->cpuset, out->nodeset);
  out->nic = weft__nic_for_cpus(c->t, own, turn);
  if (n > slots) {
    weft__snprintf(text, sizeof(text), "oversubscribed: %d ranks on %d slots, %s are shared round-robin",
                   n, slots, unit);
    weft__snprintf(out->note, sizeof(out->note), "%s", text);
  }
out:
  hwloc_bitmap_free(own);
  domains_free(d, nd);
  return rc;
}
