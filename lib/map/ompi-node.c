/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Step 3 of the Open MPI 4.1 model (weftx/ompi.h): one host. Its ranks in
 * the order the mappers put them there, with the object each was mapped to
 * (rmaps_rr_mappers.c, rmaps_ppr.c), their numbering within the host
 * (rmaps_base_ranking.c), and their bindings (rmaps_base_binding.c: bind in
 * place, bind downward to the least used object, or the cpu list), plus the
 * text --report-bindings prints (opal_hwloc_base_cset2str and cset2mapstr).
 * Each host is computed alone, as each Open MPI daemon computes its own.
 */
#include "weft_private.h"
#include "ompi_private.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

hwloc_obj_type_t weft__ompi_type(int level)
{
  switch (level) {
  case WEFTX_OMPI_NUMA: return HWLOC_OBJ_NUMANODE;
  case WEFTX_OMPI_SOCKET: return HWLOC_OBJ_PACKAGE;
  case WEFTX_OMPI_L3: return HWLOC_OBJ_L3CACHE;
  case WEFTX_OMPI_L2: return HWLOC_OBJ_L2CACHE;
  case WEFTX_OMPI_L1: return HWLOC_OBJ_L1CACHE;
  case WEFTX_OMPI_CORE: return HWLOC_OBJ_CORE;
  case WEFTX_OMPI_HWTHREAD: return HWLOC_OBJ_PU;
  default: return HWLOC_OBJ_MACHINE;
  }
}

int weft__ompi_depth(hwloc_topology_t h, int level)
{
  int d = hwloc_get_type_depth(h, weft__ompi_type(level));
  if (d == HWLOC_TYPE_DEPTH_MULTIPLE)
    return HWLOC_TYPE_DEPTH_UNKNOWN;
  return d;
}

/* df_search(OPAL_HWLOC_AVAILABLE): objects of the depth inside the root's cpuset. */
unsigned weft__ompi_nobjs(hwloc_topology_t h, int level)
{
  int d = weft__ompi_depth(h, level);
  if (d == HWLOC_TYPE_DEPTH_UNKNOWN)
    return 0;
  return (unsigned)hwloc_get_nbobjs_inside_cpuset_by_depth(h, hwloc_get_root_obj(h)->cpuset, d);
}

hwloc_obj_t weft__ompi_obj(hwloc_topology_t h, int level, unsigned i)
{
  int d = weft__ompi_depth(h, level);
  if (d == HWLOC_TYPE_DEPTH_UNKNOWN)
    return NULL;
  return hwloc_get_obj_inside_cpuset_by_depth(h, hwloc_get_root_obj(h)->cpuset, d, i);
}

unsigned weft__ompi_npus(hwloc_topology_t h, hwloc_obj_t o, int hwthreads)
{
  if (!o->cpuset)
    return 0;
  if (!hwthreads)
    return (unsigned)hwloc_get_nbobjs_inside_cpuset_by_type(h, o->cpuset, HWLOC_OBJ_CORE);
  return (unsigned)hwloc_bitmap_weight(o->cpuset);
}

int weft__ompi_map_level(const weftx_ompi_policy *p)
{
  int m = (int)WEFTX_OMPI_POLICY(p->mapping);

  if (m == WEFTX_OMPI_PPR)
    return p->ppr_level; /* the ppr mapper sets the mapping to its level */
  return m;
}

/* Rank order of one app's ranks on the host (rmaps_base_ranking.c, per node). */
static int rank_order(hwloc_topology_t h, const weftx_ompi_policy *p, weft__oproc *v, int n,
                      int app)
{
  int r = (int)WEFTX_OMPI_POLICY(p->ranking), next = 0, i, j, *ranked;
  unsigned k, nobjs;

  for (i = 0; i < n; i++)
    if (v[i].app == app)
      v[i].order = -1;
  if (r < WEFTX_OMPI_NUMA || r > WEFTX_OMPI_HWTHREAD) {
    /* by slot, node or board: as mapped */
    for (i = 0; i < n; i++)
      if (v[i].app == app)
        v[i].order = next++;
    return 0;
  }
  nobjs = weft__ompi_nobjs(h, r);
  if (nobjs == 0)
    return WEFT_ENOFIT;
  ranked = calloc((size_t)n, sizeof(*ranked));
  if (!ranked)
    return WEFT_ENOMEM;
  if (p->ranking & WEFTX_OMPI_RANK_FILL) {
    /* rank_fill: every rank of an object before the next object */
    for (k = 0; k < nobjs; k++) {
      hwloc_obj_t o = weft__ompi_obj(h, r, k);
      for (j = 0; j < n; j++)
        if (v[j].app == app && !ranked[j] &&
            hwloc_bitmap_intersects(o->cpuset, v[j].locale->cpuset)) {
          ranked[j] = 1;
          v[j].order = next++;
        }
    }
  } else {
    /* rank_by: one rank per object per round */
    int assigned = 1;
    while (assigned) {
      assigned = 0;
      for (k = 0; k < nobjs; k++) {
        hwloc_obj_t o = weft__ompi_obj(h, r, k);
        for (j = 0; j < n; j++)
          if (v[j].app == app && !ranked[j] &&
              hwloc_bitmap_intersects(o->cpuset, v[j].locale->cpuset)) {
            ranked[j] = 1;
            v[j].order = next++;
            assigned = 1;
            break;
          }
      }
    }
  }
  free(ranked);
  for (i = 0; i < n; i++)
    if (v[i].app == app && v[i].order < 0)
      return WEFT_ENOFIT; /* Open MPI: failed to map */
  return 0;
}

int weft__ompi_node_seq(hwloc_topology_t h, const weftx_ompi_policy *p, int slots,
                        const int *counts, int napps, weft__oproc *out, char *why, size_t whylen)
{
  int m = (int)WEFTX_OMPI_POLICY(p->mapping), a, k = 0, rc;
  hwloc_obj_t root = hwloc_get_root_obj(h);

  for (a = 0; a < napps; a++) {
    int c = counts[a], i;
    if (m == WEFTX_OMPI_PPR && p->ppr_level != WEFTX_OMPI_NODE) {
      /* ppr: ppr_n ranks on each object in turn, from the first, for every app */
      unsigned nobjs = weft__ompi_nobjs(h, p->ppr_level);
      for (i = 0; i < c; i++) {
        unsigned o = (unsigned)(i / (p->ppr_n > 0 ? p->ppr_n : 1));
        if (o >= nobjs) {
          weft__snprintf(why, whylen, "ppr:%d:%s: the host has %u such objects", p->ppr_n,
                         weftx_ompi_level_name(p->ppr_level), nobjs);
          return WEFT_ENOFIT;
        }
        out[k].app = a;
        out[k++].locale = weft__ompi_obj(h, p->ppr_level, o);
      }
    } else if (m >= WEFTX_OMPI_NUMA && m <= WEFTX_OMPI_HWTHREAD) {
      /* byobj: the first pass takes the host's free slots (or -N/--npersocket's
       * count), cycling over the objects from the first; oversubscription passes add
       * one rank each, at the object after the host's ranks so far */
      unsigned nobjs = weft__ompi_nobjs(h, m);
      int before = k, chunk;
      if (nobjs == 0) {
        weft__snprintf(why, whylen, "the host has no %s", weftx_ompi_level_name(m));
        return WEFT_ENOFIT;
      }
      if (p->pernode)
        chunk = 1;
      else if (p->n_pernode > 0)
        chunk = p->n_pernode;
      else if (p->n_persocket > 0)
        chunk = p->n_persocket *
                (int)(m == WEFTX_OMPI_SOCKET ? nobjs : weft__ompi_nobjs(h, WEFTX_OMPI_SOCKET));
      else
        chunk = slots - before > 0 ? slots - before : 0;
      if (p->pernode || p->n_pernode > 0 || p->n_persocket > 0) {
        /* every pass maps a whole chunk from the first object */
        for (i = 0; i < c; i++) {
          out[k].app = a;
          out[k++].locale =
            weft__ompi_obj(h, m, (unsigned)((i % (chunk > 0 ? chunk : 1)) % (int)nobjs));
        }
      } else {
        for (i = 0; i < c; i++) {
          unsigned o = i < chunk ? (unsigned)i % nobjs : (unsigned)k % nobjs;
          out[k].app = a;
          out[k++].locale = weft__ompi_obj(h, m, o);
        }
      }
    } else {
      /* slot, node, ppr:N:node: the node itself */
      for (i = 0; i < c; i++) {
        out[k].app = a;
        out[k++].locale = root;
      }
    }
  }
  for (a = 0; a < napps; a++)
    if ((rc = rank_order(h, p, out, k, a))) {
      if (rc == WEFT_ENOFIT)
        weft__snprintf(why, whylen, "cannot rank by %s on this host",
                       weftx_ompi_level_name((int)WEFTX_OMPI_POLICY(p->ranking)));
      return rc;
    }
  return 0;
}

/* ---- binding ------------------------------------------------------------------- */

/* How many ranks are bound to each object, by depth and logical index (the
 * userdata counters of Open MPI). */
struct usage {
  hwloc_topology_t h;
  unsigned *count[64];
  int depth[64];
  int n;
};

static unsigned *usage_of(struct usage *u, hwloc_obj_t o)
{
  int i, d = o->depth;
  for (i = 0; i < u->n; i++)
    if (u->depth[i] == d)
      return &u->count[i][o->logical_index];
  if (u->n == 64)
    return NULL;
  u->count[u->n] = calloc((size_t)hwloc_get_nbobjs_by_depth(u->h, d) + 1, sizeof(unsigned));
  if (!u->count[u->n])
    return NULL;
  u->depth[u->n] = d;
  return &u->count[u->n++][o->logical_index];
}

static void usage_free(struct usage *u)
{
  for (int i = 0; i < u->n; i++)
    free(u->count[i]);
}

/* The whole job on this host goes unbound (a default policy met an overload). */
static void unbind(const weftx_topo *t, weftx_ompi_bound *out, int n)
{
  for (int i = 0; i < n; i++) {
    hwloc_bitmap_copy(out[i].cpuset, weftx_topo_cpuset(t));
    out[i].bound = 0;
  }
}

static int overload(const weftx_ompi_policy *p, unsigned bound, unsigned ncpus, char *why,
                    size_t whylen)
{
  weft__snprintf(why, whylen,
                 "binding to %s would put %u ranks on %u cpus; Open MPI refuses "
                 "that without --bind-to %s:overload-allowed (or --oversubscribe)",
                 weftx_ompi_level_name((int)WEFTX_OMPI_POLICY(p->binding)), bound, ncpus,
                 weftx_ompi_level_name((int)WEFTX_OMPI_POLICY(p->binding)));
  return WEFT_ENOFIT;
}

/* The first cousin of \p o after it (\p next) or before it with a cpu to spare; *found
 * 1 when there is one, -1 when out of memory. */
static hwloc_obj_t cousin_with_room(hwloc_topology_t h, const weftx_ompi_policy *p, struct usage *u,
                                    hwloc_obj_t o, int next, int *found)
{
  for (hwloc_obj_t sib = next ? o->next_cousin : o->prev_cousin; sib;
       sib = next ? sib->next_cousin : sib->prev_cousin) {
    unsigned *su = usage_of(u, sib);
    if (!su) {
      *found = -1;
      return NULL;
    }
    if (*su < weft__ompi_npus(h, sib, p->hwthreads)) {
      *found = 1;
      return sib;
    }
  }
  return NULL;
}

/* bind_in_place(): each rank to its own object, or a cousin with room. 1 when the
 * default policy gave up (nothing bound). */
static int bind_in_place(const weftx_topo *t, const weftx_ompi_policy *p, const weft__oproc *v,
                         int n, const int *pos, weftx_ompi_bound *out, struct usage *u, char *why,
                         size_t whylen)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);

  for (int j = 0; j < n; j++) {
    hwloc_obj_t loc = v[j].locale, sib;
    unsigned ncpus = weft__ompi_npus(h, loc, p->hwthreads), *used = usage_of(u, loc);
    if (!used)
      return WEFT_ENOMEM;
    if (ncpus == 0) {
      weft__snprintf(why, whylen, "no available cpus on this host");
      return WEFT_ENOFIT;
    }
    if (ncpus < *used + 1) {
      int found = 0;
      if ((sib = cousin_with_room(h, p, u, loc, 1, &found)) == NULL && !found)
        sib = cousin_with_room(h, p, u, v[j].locale, 0, &found);
      if (found < 0)
        return WEFT_ENOMEM;
      if (found)
        loc = sib;
      if (!found && !(p->binding & WEFTX_OMPI_BIND_OVERLOAD)) {
        if (p->binding & WEFTX_OMPI_BIND_GIVEN)
          return overload(p, *used, ncpus, why, whylen);
        unbind(t, out, n);
        return 1;
      }
      used = usage_of(u, loc);
    }
    (*used)++;
    hwloc_bitmap_copy(out[pos[j]].cpuset, loc->cpuset);
    out[pos[j]].bound = 1;
  }
  return 0;
}

/* bind_generic(): each rank to the least used object of the binding level within
 * its locale, and its next cousins until it has cpus_per_rank cpus. */
static int bind_generic(const weftx_topo *t, const weftx_ompi_policy *p, int depth,
                        const weft__oproc *v, int n, const int *pos, weftx_ompi_bound *out,
                        struct usage *u, char *why, size_t whylen)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);

  for (int j = 0; j < n; j++) {
    hwloc_obj_t trg = NULL, o = NULL, nxt;
    unsigned min = UINT_MAX, total = 0;
    hwloc_bitmap_t set = out[pos[j]].cpuset;

    while ((o = hwloc_get_next_obj_by_depth(h, depth, o)) != NULL) {
      unsigned *c;
      if (!o->cpuset || !hwloc_bitmap_intersects(v[j].locale->cpuset, o->cpuset))
        continue;
      if (!(c = usage_of(u, o)))
        return WEFT_ENOMEM;
      if (*c < min) {
        min = *c;
        trg = o;
      }
    }
    if (!trg) {
      weft__snprintf(why, whylen, "no available cpus on this host");
      return WEFT_ENOFIT;
    }
    hwloc_bitmap_zero(set);
    nxt = trg;
    do {
      unsigned ncpus, *c;
      if (!nxt) {
        weft__snprintf(why, whylen, "not enough cpus on this host for %d cpus per rank",
                       p->cpus_per_rank);
        return WEFT_ENOFIT;
      }
      trg = nxt;
      ncpus = weft__ompi_npus(h, trg, p->hwthreads);
      if (!(c = usage_of(u, trg)))
        return WEFT_ENOMEM;
      (*c)++;
      if (ncpus < *c && !(p->binding & WEFTX_OMPI_BIND_OVERLOAD)) {
        if (p->binding & WEFTX_OMPI_BIND_GIVEN)
          return overload(p, *c, ncpus, why, whylen);
        unbind(t, out, n);
        return 1;
      }
      hwloc_bitmap_or(set, set, trg->cpuset);
      total += ncpus;
      nxt = trg->next_cousin;
    } while ((int)total < p->cpus_per_rank);
    out[pos[j]].bound = 1;
  }
  return 0;
}

/* bind_to_cpuset(): the cpu list given in logical cpus (cores, or hardware threads). */
static int bind_cpuset(const weftx_topo *t, const weftx_ompi_policy *p, int n,
                       weftx_ompi_bound *out, char *why, size_t whylen)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  hwloc_bitmap_t avail = hwloc_bitmap_alloc();
  hwloc_obj_type_t type = p->hwthreads || hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) <= 0
                            ? HWLOC_OBJ_PU
                            : HWLOC_OBJ_CORE;
  char buf[256], *range, *save = NULL;
  int rc = 0;

  if (!avail)
    return WEFT_ENOMEM;
  weft__snprintf(buf, sizeof(buf), "%s", p->cpu_list);
  for (range = strtok_r(buf, ",", &save); range; range = strtok_r(NULL, ",", &save)) {
    char *dash = strchr(range, '-');
    long a = strtol(range, NULL, 10), b = dash ? strtol(dash + 1, NULL, 10) : a;
    for (long c = a; c <= b && c < 1 << 20; c++) {
      hwloc_obj_t o = hwloc_get_obj_by_type(h, type, (unsigned)c);
      if (o)
        hwloc_bitmap_or(avail, avail, o->cpuset);
    }
  }
  for (int j = 0; j < n; j++) {
    if (p->binding & WEFTX_OMPI_BIND_ORDERED) {
      int id = hwloc_bitmap_first(avail);
      for (int l = 0; l < j && id >= 0; l++)
        id = hwloc_bitmap_next(avail, id);
      if (id < 0) {
        weft__snprintf(why, whylen, "local rank %d has no cpu left in the cpu list %s", j,
                       p->cpu_list);
        rc = WEFT_ENOFIT;
        break;
      }
      hwloc_bitmap_only(out[j].cpuset, (unsigned)id);
    } else {
      hwloc_bitmap_copy(out[j].cpuset, avail);
    }
    out[j].bound = 1;
  }
  hwloc_bitmap_free(avail);
  return rc;
}

void weftx_ompi_bound_clear(weftx_ompi_bound *b, int n)
{
  for (int i = 0; b && i < n; i++) {
    hwloc_bitmap_free(b[i].cpuset);
    b[i].cpuset = NULL;
  }
}

int weftx_ompi_node_bind(const weftx_topo *t, const weftx_ompi_policy *p, int slots,
                         const int *counts, int napps, weftx_ompi_bound *out, char *why,
                         size_t whylen)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  int n = 0, a, j, rc = 0, bind = (int)WEFTX_OMPI_POLICY(p->binding), *first = NULL, *pos = NULL;
  weft__oproc *v = NULL;
  struct usage u;

  if (why && whylen)
    why[0] = '\0';
  memset(&u, 0, sizeof(u));
  u.h = h;
  for (a = 0; a < napps; a++)
    n += counts[a];
  for (j = 0; j < n; j++) {
    out[j].cpuset = hwloc_bitmap_dup(weftx_topo_cpuset(t));
    out[j].bound = 0;
    if (!out[j].cpuset) {
      weftx_ompi_bound_clear(out, j);
      return WEFT_ENOMEM;
    }
  }
  if (n == 0)
    return 0;
  v = calloc((size_t)n, sizeof(*v));
  pos = calloc((size_t)n, sizeof(*pos));
  first = calloc((size_t)napps + 1, sizeof(*first));
  if (!v || !pos || !first) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  if ((rc = weft__ompi_node_seq(h, p, slots, counts, napps, v, why, whylen)))
    goto out;
  /* where each rank of the mapping order is in local rank order: app by app */
  for (a = 1; a <= napps; a++)
    first[a] = first[a - 1] + counts[a - 1];
  for (j = 0; j < n; j++) {
    pos[j] = first[v[j].app] + v[j].order;
    out[pos[j]].app = v[j].app;
  }
  if (bind == WEFTX_OMPI_BIND_CPUSET) {
    rc = bind_cpuset(t, p, n, out, why, whylen);
  } else if (bind == WEFTX_OMPI_BIND_NONE || bind == WEFTX_OMPI_BOARD || bind == 0) {
    rc = 0;
  } else if (!(p->binding & WEFTX_OMPI_BIND_GIVEN) &&
             hwloc_get_type_depth(h, HWLOC_OBJ_CORE) == HWLOC_TYPE_DEPTH_UNKNOWN) {
    rc = 0; /* a default binding on a host without cores: not bound */
  } else if (bind == weft__ompi_map_level(p)) {
    rc = bind_in_place(t, p, v, n, pos, out, &u, why, whylen);
  } else {
    int depth = hwloc_get_type_depth(h, weft__ompi_type(bind));
    if (depth < 0 && depth != HWLOC_TYPE_DEPTH_NUMANODE) {
      weft__snprintf(why, whylen, "the host has no %s to bind to", weftx_ompi_level_name(bind));
      rc = WEFT_ENOFIT;
    } else {
      rc = bind_generic(t, p, depth, v, n, pos, out, &u, why, whylen);
    }
  }
  if (rc == 1)
    rc = 0;
out:
  usage_free(&u);
  free(v);
  free(pos);
  free(first);
  if (rc)
    weftx_ompi_bound_clear(out, n);
  return rc;
}

/* ---- --report-bindings ------------------------------------------------------------ */

/* bitmap2rangestr(): "0-1,3" of the bits of \p bits. */
static void ranges(unsigned bits, char *buf, size_t len)
{
  size_t off = 0;
  int start = -1, first = 1;

  buf[0] = '\0';
  for (int i = 0; i <= 32; i++) {
    int set = i < 32 && (bits & (1u << i));
    if (set && start < 0)
      start = i;
    if (!set && start >= 0) {
      if (start == i - 1)
        weft__snprintf(buf + off, len - off, "%s%d", first ? "" : ",", start);
      else
        weft__snprintf(buf + off, len - off, "%s%d-%d", first ? "" : ",", start, i - 1);
      off = strlen(buf);
      first = 0;
      start = -1;
    }
  }
}

static hwloc_obj_t up_to(hwloc_obj_t o, hwloc_obj_type_t type)
{
  while (o && o->type != type)
    o = o->parent;
  return o;
}

int weftx_ompi_binding_text(const weftx_topo *t, hwloc_const_cpuset_t cpuset, char *what,
                            size_t wlen, char *map, size_t mlen)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  hwloc_obj_t pu = NULL, sock, core;
  size_t off = 0;

  what[0] = map[0] = '\0';
  if (hwloc_bitmap_iszero(cpuset) || hwloc_bitmap_isincluded(hwloc_get_root_obj(h)->cpuset, cpuset))
    return 1;
  /* cset2str: socket/core/hwthread triples, socket by socket, core by core */
  {
    int nsock = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE),
        ncore = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE), s, c, first = 1;
    unsigned *bits;
    if (nsock <= 0)
      nsock = 1;
    if (ncore <= 0)
      ncore = 1;
    bits = calloc((size_t)nsock * (size_t)ncore, sizeof(*bits));
    if (!bits)
      return WEFT_ENOMEM;
    while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(h, cpuset, HWLOC_OBJ_PU, pu)) != NULL) {
      core = up_to(pu, HWLOC_OBJ_CORE);
      sock = up_to(pu, HWLOC_OBJ_PACKAGE);
      c = core ? (int)core->logical_index : 0;
      s = sock ? (int)sock->logical_index : 0;
      if (s < nsock && c < ncore && pu->sibling_rank < 32)
        bits[s * ncore + c] |= 1u << pu->sibling_rank;
    }
    for (s = 0; s < nsock; s++)
      for (c = 0; c < ncore; c++)
        if (bits[s * ncore + c]) {
          char r[128];
          ranges(bits[s * ncore + c], r, sizeof(r));
          weft__snprintf(what + off, wlen - off, "%ssocket %d[core %d[hwt %s]]", first ? "" : ", ",
                         s, c, r);
          off = strlen(what);
          first = 0;
        }
    free(bits);
  }
  /* cset2mapstr: [B./..] per socket, '/' between cores */
  off = 0;
  for (sock = hwloc_get_obj_by_type(h, HWLOC_OBJ_PACKAGE, 0); sock; sock = sock->next_cousin) {
    int ci = 0;
    weft__snprintf(map + off, mlen - off, "[");
    off = strlen(map);
    while ((core = hwloc_get_obj_inside_cpuset_by_type(h, sock->cpuset, HWLOC_OBJ_CORE,
                                                       (unsigned)ci)) != NULL) {
      int pi = 0;
      if (ci++ > 0) {
        weft__snprintf(map + off, mlen - off, "/");
        off = strlen(map);
      }
      while ((pu = hwloc_get_obj_inside_cpuset_by_type(h, core->cpuset, HWLOC_OBJ_PU,
                                                       (unsigned)pi++)) != NULL) {
        weft__snprintf(map + off, mlen - off, "%s",
                       hwloc_bitmap_isset(cpuset, pu->os_index) ? "B" : ".");
        off = strlen(map);
      }
    }
    weft__snprintf(map + off, mlen - off, "]");
    off = strlen(map);
  }
  return 0;
}
