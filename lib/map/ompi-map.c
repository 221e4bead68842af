/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Step 2 of the Open MPI 4.1 model (weftx/ompi.h): the job. How many ranks
 * each host gets and in which order Open MPI numbers them, read from
 * orte_rmaps_base_map_job() (the number of ranks when -np is not given, the
 * default mapping and binding policies, oversubscription), the target node
 * list of rmaps_base_support_fns.c (full hosts, max_slots, --nolocal), the
 * round-robin mappers by slot, by node and by object and the ppr mapper, and
 * orte_rmaps_base_compute_vpids() and compute_local_ranks(). Messages for what
 * mpirun refuses say what it would say, in one line.
 */
#include "weft_private.h"
#include "ompi_private.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A host while mapping (orte_node_t). */
struct node {
  const weftx_ompi_host *h;
  int slots, slots_max, slots_given;
  int inuse, nprocs;
  int mapped;   /* position in the job's node order + 1; 0: not in the map yet */
  int *per_app; /* ranks of each app here */
  int oversub;
};

struct job {
  const weftx_ompi_policy *base;
  weftx_ompi_policy p; /* the job's policy */
  struct node *nodes;
  int nnodes;
  const weftx_ompi_app *apps;
  int napps;
  int *order; /* mapped nodes, in order */
  int norder;
  int oversubscribed;
  char *why;
  size_t whylen;
};

static int nofit(struct job *j, const char *fmt, ...) WEFT_PRINTF(2, 3);
static int nofit(struct job *j, const char *fmt, ...)
{
  va_list ap;

  if (j->why && j->whylen) {
    va_start(ap, fmt);
    vsnprintf(j->why, j->whylen, fmt, ap);
    va_end(ap);
  }
  return WEFT_ENOFIT;
}

static int not_enough_slots(struct job *j, int np)
{
  return nofit(j,
               "there are not enough slots available in the system to satisfy the %d slots "
               "that were requested by the application (mpirun's words)",
               np);
}

/* orte_plm_base_set_slots(): a host without slots gets its cores (or what
 * orte_set_default_slots says). */
static int default_slots(const weftx_ompi_policy *p, const weftx_topo *t)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  const char *s = p->set_slots;
  size_t n = strlen(s);

  if (n && !strncmp(s, "cores", n))
    return hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE);
  if (n && !strncmp(s, "sockets", n)) {
    int k = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);
    return k ? k : hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  }
  if (n && !strncmp(s, "numas", n))
    return hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  if (n && !strncmp(s, "hwthreads", n))
    return hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
  return (int)strtol(s, NULL, 10);
}

static void add_to_map(struct job *j, int n)
{
  if (!j->nodes[n].mapped) {
    j->order[j->norder++] = n;
    j->nodes[n].mapped = j->norder;
  }
}

static void place(struct job *j, int n, int app)
{
  struct node *nd = &j->nodes[n];
  nd->per_app[app]++;
  nd->nprocs++;
  nd->inuse++;
}

/* orte_rmaps_base_get_target_nodes(): the app's hosts that can take ranks, and
 * their free slots. */
static int target_nodes(struct job *j, int app, unsigned policy, int *list, int *n, long *free)
{
  const weftx_ompi_app *a = &j->apps[app];
  int k = 0;

  *free = 0;
  for (int i = 0; i < (a->hosts ? a->nhosts : j->nnodes); i++) {
    int h = a->hosts ? a->hosts[i] : i;
    struct node *nd = &j->nodes[h];
    if (nd->h->hnp && (policy & WEFTX_OMPI_MAP_NO_USE_LOCAL))
      continue;
    if (nd->slots_max != 0 && nd->inuse > nd->slots_max)
      continue;
    if (nd->slots <= nd->inuse && (policy & WEFTX_OMPI_MAP_NO_OVERSUB))
      continue;
    if (nd->slots > nd->inuse)
      *free += nd->slots - nd->inuse;
    list[k++] = h;
  }
  *n = k;
  if (k == 0)
    return nofit(j,
                 "all nodes which are allocated for this job are already filled (mpirun's "
                 "words)%s",
                 policy & WEFTX_OMPI_MAP_NO_USE_LOCAL ? "; --nolocal leaves none" : "");
  return 0;
}

/* A host over its slots: allowed unless its slots were given and oversubscription was
 * not asked for, or NOOVERSUBSCRIBE was. */
static int check_oversub(struct job *j, struct node *nd, int np)
{
  if (nd->slots < nd->nprocs) {
    nd->oversub = 1;
    j->oversubscribed = 1;
    if (nd->slots_given &&
        (!(j->p.mapping & WEFTX_OMPI_MAP_SUBSCRIBE) || (j->p.mapping & WEFTX_OMPI_MAP_NO_OVERSUB)))
      return not_enough_slots(j, np);
  }
  return 0;
}

/* Up to want ranks of app on host n (np in all), then the oversubscription check. */
static int place_some(struct job *j, int n, int app, int want, int np, int *mapped)
{
  for (int k = 0; k < want && *mapped < np; k++) {
    place(j, n, app);
    (*mapped)++;
  }
  return check_oversub(j, &j->nodes[n], np);
}

/* The rr mappers' balance: the first nxtra hosts take one rank more than the rest. */
static void take_extra(int *extra, int *nxtra, int *add_one)
{
  if (!*add_one)
    return;
  if (*nxtra == 0) {
    (*extra)--;
    *add_one = 0;
  } else {
    (*nxtra)--;
  }
}

static int per_node_count(struct job *j, struct node *nd, int dflt)
{
  const weftx_ompi_policy *p = &j->p;
  if (p->pernode)
    return 1;
  if (p->n_pernode > 0)
    return p->n_pernode;
  if (p->n_persocket > 0)
    return p->n_persocket * (int)weft__ompi_nobjs(weftx_topo_hwloc(nd->h->topo), WEFTX_OMPI_SOCKET);
  return dflt;
}

/* orte_rmaps_rr_byslot() */
static int byslot(struct job *j, int app, const int *list, int n, long free, int np)
{
  int mapped = 0, extra, nxtra = 0, add_one = 0, rc;
  float balance;

  if (free < np && (j->p.mapping & WEFTX_OMPI_MAP_NO_OVERSUB))
    return not_enough_slots(j, np);
  for (int i = 0; i < n && mapped < np; i++) {
    struct node *nd = &j->nodes[list[i]];
    int want;
    if (nd->slots <= nd->inuse)
      continue;
    want = per_node_count(j, nd, nd->slots - nd->inuse);
    for (int k = 0; k < want && mapped < np; k++) {
      add_to_map(j, list[i]);
      place(j, list[i], app);
      mapped++;
    }
  }
  if (mapped == np)
    return 0;
  balance = (float)(np - mapped) / (float)n;
  extra = (int)balance;
  if (balance - (float)extra > 0) {
    nxtra = np - mapped - extra * n;
    extra++;
    add_one = 1;
  }
  for (int i = 0; i < n; i++) {
    struct node *nd = &j->nodes[list[i]];
    int want;
    add_to_map(j, list[i]);
    take_extra(&extra, &nxtra, &add_one);
    want = nd->slots <= nd->inuse ? extra : nd->slots - nd->inuse + extra;
    if ((rc = place_some(j, list[i], app, want, np, &mapped)))
      return rc;
    if (mapped == np)
      break;
  }
  return 0;
}

/* orte_rmaps_rr_bynode() */
static int bynode(struct job *j, int app, const int *list, int n, long free, int np)
{
  int mapped = 0, nnodes = n, oversub = 0, rc;

  if (free < np) {
    if (j->p.mapping & WEFTX_OMPI_MAP_NO_OVERSUB)
      return not_enough_slots(j, np);
    oversub = 1;
  }
  do {
    int navg = (np - mapped) / nnodes, extra, nxtra = 0, add_one = 0;
    float balance;
    if (navg == 0)
      navg = 1;
    balance = (float)((np - mapped) - navg * nnodes) / (float)nnodes;
    extra = (int)balance;
    if (balance - (float)extra > 0) {
      nxtra = (np - mapped) - (navg + extra) * nnodes;
      extra++;
      add_one = 1;
    }
    nnodes = 0;
    for (int i = 0; i < n; i++) {
      struct node *nd = &j->nodes[list[i]];
      int want;
      add_to_map(j, list[i]);
      if (j->p.pernode || j->p.n_pernode > 0 || j->p.n_persocket > 0) {
        want = per_node_count(j, nd, 0);
      } else if (oversub) {
        take_extra(&extra, &nxtra, &add_one);
        want = navg + extra;
      } else if (nd->slots <= nd->inuse) {
        continue;
      } else {
        take_extra(&extra, &nxtra, &add_one);
        if (nd->slots - nd->inuse < navg + extra) {
          want = nd->slots - nd->inuse;
          if (want == 0)
            continue;
        } else {
          want = navg + extra;
        }
      }
      nnodes++; /* hosts that could still take ranks */
      if ((rc = place_some(j, list[i], app, want, np, &mapped)))
        return rc;
      if (mapped == np)
        break;
    }
  } while (mapped < np && nnodes > 0);
  /* what is left goes round-robin */
  while (mapped < np) {
    for (int i = 0; i < n && mapped < np; i++) {
      struct node *nd = &j->nodes[list[i]];
      place(j, list[i], app);
      mapped++;
      if (nd->slots < nd->nprocs) {
        nd->oversub = 1;
        j->oversubscribed = 1;
      }
    }
  }
  return 0;
}

/* orte_rmaps_rr_byobj() without SPAN. 1: the hosts have no such object (Open MPI then
 * maps by slot). */
static int byobj(struct job *j, int app, const int *list, int n, long free, int np, int level)
{
  int mapped = 0, second = 0, add_one, rc;
  int cpr = j->p.cpus_per_rank;

  if (free < np && (j->p.mapping & WEFTX_OMPI_MAP_NO_OVERSUB))
    return not_enough_slots(j, np);
  do {
    add_one = 0;
    for (int i = 0; i < n; i++) {
      struct node *nd = &j->nodes[list[i]];
      hwloc_topology_t h = weftx_topo_hwloc(nd->h->topo);
      unsigned nobjs = weft__ompi_nobjs(h, level);
      int want, got = 0;
      if (nobjs == 0)
        continue;
      want = per_node_count(j, nd, nd->slots - nd->inuse);
      if (want < 1) {
        if (!second)
          continue;
        want = 1;
      }
      add_to_map(j, list[i]);
      if (cpr > 0) {
        for (unsigned o = 0; o < nobjs; o++)
          if ((unsigned)cpr > weft__ompi_npus(h, weft__ompi_obj(h, level, o), j->p.hwthreads))
            return nofit(j,
                         "%d cpus per rank but a %s of this host has %u; map by a larger "
                         "object (Open MPI refuses: mapping too low)",
                         cpr, weftx_ompi_level_name(level),
                         weft__ompi_npus(h, weft__ompi_obj(h, level, o), j->p.hwthreads));
      }
      while (got < want && mapped < np) {
        for (unsigned o = 0; o < nobjs && got < want && mapped < np; o++) {
          place(j, list[i], app);
          got++;
          mapped++;
        }
      }
      add_one = 1;
      if ((rc = check_oversub(j, nd, np)))
        return rc;
      if (mapped == np)
        break;
    }
    second = 1;
  } while (add_one && mapped < np);
  return mapped < np ? 1 : 0;
}

/* The ppr mapper: N per object on every host until -np is met. */
static int ppr(struct job *j, int app, const int *list, int n, int np, int *mapped_out)
{
  long total = np > 0 ? np : -1;
  int mapped = 0;
  const weftx_ompi_policy *p = &j->p;

  for (int i = 0; i < n; i++) {
    struct node *nd = &j->nodes[list[i]];
    hwloc_topology_t h = weftx_topo_hwloc(nd->h->topo);
    long want;
    add_to_map(j, list[i]);
    if (p->ppr_level == WEFTX_OMPI_NODE)
      want = p->ppr_n;
    else
      want = (long)p->ppr_n * weft__ompi_nobjs(h, p->ppr_level);
    for (long k = 0; k < want && (total < 0 || mapped < total); k++) {
      place(j, list[i], app);
      mapped++;
    }
    nd->inuse = nd->nprocs <= nd->slots ? nd->nprocs : nd->slots;
    if (nd->slots < nd->nprocs || (nd->slots_max > 0 && nd->slots_max < nd->nprocs)) {
      if (j->p.mapping & WEFTX_OMPI_MAP_NO_OVERSUB)
        return not_enough_slots(j, nd->nprocs);
      nd->oversub = 1;
      j->oversubscribed = 1;
      if (nd->slots_given && !(j->p.mapping & WEFTX_OMPI_MAP_SUBSCRIBE))
        return not_enough_slots(j, np > 0 ? np : mapped);
    }
    if (total == mapped)
      break;
  }
  if (total > 0 && mapped < total)
    return nofit(j,
                 "ppr:%d:%s puts %d ranks on these hosts, fewer than the %d asked for; lower "
                 "-np or raise the count",
                 p->ppr_n, weftx_ompi_level_name(p->ppr_level), mapped, np);
  *mapped_out = mapped;
  return 0;
}

/* What the job's policies take from the defaults' directives, whatever the version:
 * oversubscription, --nolocal, the ranking when none was given, and a binding given on
 * the command line or as a default. 1 when the binding is settled. */
static int directives(weftx_ompi_policy *p, const weftx_ompi_policy *b)
{
  if (!(p->mapping & WEFTX_OMPI_MAP_SUBSCRIBE)) {
    if (!(b->mapping & WEFTX_OMPI_MAP_SUBSCRIBE)) {
      p->mapping |= WEFTX_OMPI_MAP_NO_OVERSUB;
    } else if (b->mapping & WEFTX_OMPI_MAP_NO_OVERSUB) {
      p->mapping |= WEFTX_OMPI_MAP_NO_OVERSUB;
    } else {
      p->mapping &= ~(unsigned)WEFTX_OMPI_MAP_NO_OVERSUB;
      p->mapping |= WEFTX_OMPI_MAP_SUBSCRIBE;
    }
  }
  if (b->mapping & WEFTX_OMPI_MAP_NO_USE_LOCAL)
    p->mapping |= WEFTX_OMPI_MAP_NO_USE_LOCAL;
  if (!WEFTX_OMPI_POLICY(p->ranking))
    p->ranking = b->ranking;
  if (p->binding & WEFTX_OMPI_BIND_GIVEN)
    return 1;
  if (b->binding & WEFTX_OMPI_BIND_GIVEN) {
    p->binding = b->binding;
    return 1;
  }
  return 0;
}

/* Open MPI 5's defaults (PRRTE 3.0's prte_rmaps_base_map_job()): the mapping when none
 * is given follows the binding when one is (prte_rmaps_base_set_default_mapping()), else
 * the cpus of 2 ranks or fewer, else the package; the binding when none is given
 * follows the mapping's object, ppr's object included (4.1 bound ppr:N:socket to cores),
 * else 2 ranks or fewer to cores, else the NUMA node; PE=n binds to cores, and maps by
 * slot when no mapping is given (4.1: by NUMA node). */
static void job_policies_v5(struct job *j, int nprocs, int has_numa, int has_socket)
{
  const weftx_ompi_policy *b = j->base;
  weftx_ompi_policy *p = &j->p;
  unsigned cpu = b->hwthreads ? WEFTX_OMPI_HWTHREAD : WEFTX_OMPI_CORE, bind = 0;

  if (p->binding & WEFTX_OMPI_BIND_GIVEN)
    bind = WEFTX_OMPI_POLICY(p->binding);
  else if (b->binding & WEFTX_OMPI_BIND_GIVEN)
    bind = WEFTX_OMPI_POLICY(b->binding);
  if (!WEFTX_OMPI_POLICY(p->mapping)) {
    unsigned dflt;
    if (b->mapping & WEFTX_OMPI_MAP_GIVEN)
      p->mapping = b->mapping;
    else {
      if (p->cpus_per_rank > 1)
        dflt = WEFTX_OMPI_SLOT;
      else if (bind == WEFTX_OMPI_BIND_NONE || bind == WEFTX_OMPI_BIND_CPUSET)
        dflt = WEFTX_OMPI_SLOT;
      else if (bind)
        dflt = bind;
      else if (nprocs <= 2)
        dflt = cpu;
      else
        dflt = has_socket ? WEFTX_OMPI_SOCKET : has_numa ? WEFTX_OMPI_NUMA : WEFTX_OMPI_SLOT;
      p->mapping = dflt | (p->mapping & 0xff00u);
    }
  }
  if (directives(p, b))
    return;
#define DEFAULT_BIND(x) (p->binding = (x) | (p->binding & 0xf000u) | WEFTX_OMPI_BIND_IF_SUPPORTED)
  unsigned mpol = WEFTX_OMPI_POLICY(p->mapping);
  if (p->cpus_per_rank > 0)
    DEFAULT_BIND(cpu);
  else if (mpol >= WEFTX_OMPI_NUMA && mpol <= WEFTX_OMPI_HWTHREAD)
    DEFAULT_BIND(mpol);
  else if (mpol == WEFTX_OMPI_PPR && p->ppr_level >= WEFTX_OMPI_NUMA &&
           p->ppr_level <= WEFTX_OMPI_HWTHREAD)
    DEFAULT_BIND((unsigned)p->ppr_level);
  else if (nprocs <= 2)
    DEFAULT_BIND(cpu);
  else if (has_numa)
    DEFAULT_BIND(WEFTX_OMPI_NUMA);
  else
    p->binding = WEFTX_OMPI_BIND_NONE | (p->binding & 0xf000u) | WEFTX_OMPI_BIND_GIVEN;
  if (b->binding & WEFTX_OMPI_BIND_OVERLOAD)
    p->binding |= WEFTX_OMPI_BIND_OVERLOAD;
#undef DEFAULT_BIND
}

/* The job's policies, as orte_rmaps_base_map_job() sets them before mapping: the
 * command line's, else Open MPI's defaults (MCA), else the defaults by the number of
 * ranks and mpirun's own topology. */
static void job_policies(struct job *j, int nprocs, const weftx_topo *hnp)
{
  const weftx_ompi_policy *b = j->base;
  weftx_ompi_policy *p = &j->p;
  hwloc_topology_t h = weftx_topo_hwloc(hnp);
  int has_numa = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, 0) != NULL;
  int has_socket = hwloc_get_obj_by_type(h, HWLOC_OBJ_PACKAGE, 0) != NULL;
  unsigned mpol;

  *p = *b;
  p->mapping = b->job_mapping;
  p->ranking = b->job_ranking;
  p->binding = b->job_binding;
  p->job_mapping = p->job_ranking = p->job_binding = 0;
  if (WEFTX_OMPI_POLICY(b->job_mapping) == WEFTX_OMPI_PPR) {
    p->ppr_n = b->job_ppr_n;
    p->ppr_level = b->job_ppr_level;
    p->ppr_count = b->job_ppr_count;
  }
  p->cpus_per_rank = b->job_cpus_per_rank > 0 ? b->job_cpus_per_rank : b->cpus_per_rank;
  if (WEFTX_OMPI_V5(b)) {
    job_policies_v5(j, nprocs, has_numa, has_socket);
    return;
  }
  if (!WEFTX_OMPI_POLICY(p->mapping)) {
    unsigned dflt;
    if (b->mapping & WEFTX_OMPI_MAP_GIVEN)
      p->mapping = b->mapping;
    else {
      if (nprocs <= 2)
        dflt = b->cpus_per_rank > 1 ? WEFTX_OMPI_SLOT
               : b->hwthreads       ? WEFTX_OMPI_HWTHREAD
                                    : WEFTX_OMPI_CORE;
      else
        dflt = has_numa ? WEFTX_OMPI_NUMA : has_socket ? WEFTX_OMPI_SOCKET : WEFTX_OMPI_SLOT;
      p->mapping = dflt | (p->mapping & 0xff00u);
    }
  }
  if (directives(p, b))
    return;
#define DEFAULT_BIND(x) (p->binding = (x) | (p->binding & 0xf000u) | WEFTX_OMPI_BIND_IF_SUPPORTED)
  if (p->cpus_per_rank > 0) {
    DEFAULT_BIND(b->hwthreads ? WEFTX_OMPI_HWTHREAD : WEFTX_OMPI_CORE);
    return;
  }
  mpol = WEFTX_OMPI_POLICY(p->mapping);
  if ((p->mapping & WEFTX_OMPI_MAP_GIVEN) && mpol >= WEFTX_OMPI_NUMA && mpol <= WEFTX_OMPI_HWTHREAD)
    DEFAULT_BIND(mpol);
  else if (nprocs <= 2)
    DEFAULT_BIND(b->hwthreads ? WEFTX_OMPI_HWTHREAD : WEFTX_OMPI_CORE);
  else if (has_numa)
    DEFAULT_BIND(WEFTX_OMPI_NUMA);
  else if (has_socket)
    DEFAULT_BIND(WEFTX_OMPI_SOCKET);
  else
    p->binding = WEFTX_OMPI_BIND_NONE | (p->binding & 0xf000u) | WEFTX_OMPI_BIND_GIVEN;
  if (b->binding & WEFTX_OMPI_BIND_OVERLOAD)
    p->binding |= WEFTX_OMPI_BIND_OVERLOAD;
#undef DEFAULT_BIND
}

/* The ranks per app when -np is not given. */
static int count_procs(struct job *j, int *np, int *nprocs)
{
  const weftx_ompi_policy *b = j->base;
  int *list = calloc((size_t)j->nnodes + 1, sizeof(*list)), rc = 0;

  if (!list)
    return WEFT_ENOMEM;
  *nprocs = 0;
  for (int a = 0; a < j->napps; a++) {
    int n = 0;
    long free;
    np[a] = j->apps[a].np;
    if (np[a] == 0) {
      long slots = 0;
      int pernode = 0, persocket = 0;
      int ppr_n = b->ppr_n;
      if (WEFTX_OMPI_POLICY(b->job_mapping) == WEFTX_OMPI_PPR) {
        pernode = b->job_ppr_count == WEFTX_OMPI_NODE;
        persocket = b->job_ppr_count == WEFTX_OMPI_SOCKET;
        ppr_n = b->job_ppr_n;
      } else if (WEFTX_OMPI_POLICY(b->mapping) == WEFTX_OMPI_PPR) {
        pernode = b->ppr_count == WEFTX_OMPI_NODE;
        persocket = b->ppr_count == WEFTX_OMPI_SOCKET;
      }
      if ((rc = target_nodes(j, a, WEFTX_OMPI_NODE, list, &n, &free)))
        break;
      /* Open MPI 5 counts the slots of the hosts it may use: not its own with --nolocal */
      int skip_hnp =
        WEFTX_OMPI_V5(b) && ((b->job_mapping | b->mapping) & WEFTX_OMPI_MAP_NO_USE_LOCAL);
      for (int i = 0; i < n; i++) {
        struct node *nd = &j->nodes[list[i]];
        if (skip_hnp && nd->h->hnp)
          continue;
        if (pernode)
          slots += ppr_n;
        else if (persocket)
          slots += (long)ppr_n * weft__ompi_nobjs(weftx_topo_hwloc(nd->h->topo), WEFTX_OMPI_SOCKET);
        else
          slots += nd->slots;
      }
      if (slots > 1000000) {
        rc = nofit(j, "%ld ranks", slots);
        break;
      }
      np[a] = (int)slots;
    }
    *nprocs += np[a];
  }
  free(list);
  return rc;
}

/* orte_rmaps_base_compute_vpids(): number the ranks across the hosts. */
static int number(struct job *j, weftx_ompi_job *out, const int *np)
{
  int r = (int)WEFTX_OMPI_POLICY(j->p.ranking), vpid = 0, rc = 0;
  weft__oproc **seq = calloc((size_t)j->norder, sizeof(*seq));
  int **taken = calloc((size_t)j->norder, sizeof(*taken));
  char why[256];

  if (!seq || !taken) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  /* each host's ranks in mapping order, with their order of numbering */
  for (int k = 0; k < j->norder && !rc; k++) {
    struct node *nd = &j->nodes[j->order[k]];
    if (!(seq[k] = calloc((size_t)nd->nprocs + 1, sizeof(**seq))) ||
        !(taken[k] = calloc((size_t)j->napps, sizeof(**taken)))) {
      rc = WEFT_ENOMEM;
      break;
    }
    rc = weft__ompi_node_seq(weftx_topo_hwloc(nd->h->topo), &j->p, nd->slots, nd->per_app, j->napps,
                             seq[k], why, sizeof(why));
    if (rc == WEFT_ENOFIT && r >= WEFTX_OMPI_NUMA && r <= WEFTX_OMPI_HWTHREAD &&
        !(j->p.ranking & WEFTX_OMPI_RANK_GIVEN)) {
      /* a default ranking by an object some host lacks: by slot instead, for all */
      j->p.ranking = WEFTX_OMPI_SLOT;
      r = WEFTX_OMPI_SLOT;
      k = -1;
      rc = 0;
      continue;
    }
    if (rc == WEFT_ENOFIT)
      nofit(j, "%s", why);
  }
  if (rc)
    goto out;
  for (int a = 0; a < j->napps; a++) {
    if (r == WEFTX_OMPI_NODE || r == WEFTX_OMPI_BOARD) {
      /* round-robin over the hosts, one rank each */
      int left = np[a];
      while (left > 0) {
        int found = 0;
        for (int k = 0; k < j->norder && left > 0; k++) {
          struct node *nd = &j->nodes[j->order[k]];
          if (taken[k][a] < nd->per_app[a]) {
            out->ranks[vpid].host = j->order[k];
            out->ranks[vpid].app = a;
            taken[k][a]++;
            vpid++;
            left--;
            found = 1;
          }
        }
        if (!found)
          break;
      }
    } else {
      /* host by host, each in its own order */
      for (int k = 0; k < j->norder; k++) {
        struct node *nd = &j->nodes[j->order[k]];
        for (int i = 0; i < nd->per_app[a]; i++) {
          out->ranks[vpid].host = j->order[k];
          out->ranks[vpid].app = a;
          vpid++;
        }
      }
    }
  }
  if (vpid != out->np)
    rc = nofit(j, "Open MPI would fail to map the job (%d of %d ranks numbered)", vpid, out->np);
  /* local ranks: by rank on each host */
  if (!rc) {
    int *next = calloc((size_t)j->nnodes, sizeof(*next));
    if (!next) {
      rc = WEFT_ENOMEM;
      goto out;
    }
    for (int v = 0; v < out->np; v++)
      out->ranks[v].local_rank = next[out->ranks[v].host]++;
    free(next);
  }
out:
  for (int k = 0; seq && taken && k < j->norder; k++) {
    free(seq[k]);
    free(taken[k]);
  }
  free(seq);
  free(taken);
  return rc;
}

void weftx_ompi_job_clear(weftx_ompi_job *jo)
{
  if (!jo)
    return;
  free(jo->ranks);
  free(jo->order);
  free(jo->slots);
  memset(jo, 0, sizeof(*jo));
}

int weftx_ompi_job_map(const weftx_ompi_policy *p, const weftx_ompi_host *hosts, int nhosts,
                       const weftx_ompi_app *apps, int napps, const weftx_topo *hnp_topo,
                       weftx_ompi_job *out, char *why, size_t whylen)
{
  struct job j;
  int *np = NULL, *list = NULL, nprocs = 0, rc = 0;

  memset(out, 0, sizeof(*out));
  memset(&j, 0, sizeof(j));
  if (why && whylen)
    why[0] = '\0';
  if (!p || !hosts || nhosts < 1 || !apps || napps < 1 || !hnp_topo)
    return WEFT_EINVAL;
  j.base = p;
  j.apps = apps;
  j.napps = napps;
  j.nnodes = nhosts;
  j.why = why;
  j.whylen = whylen;
  j.nodes = calloc((size_t)nhosts, sizeof(*j.nodes));
  j.order = calloc((size_t)nhosts, sizeof(*j.order));
  np = calloc((size_t)napps, sizeof(*np));
  list = calloc((size_t)nhosts, sizeof(*list));
  out->slots = calloc((size_t)nhosts, sizeof(*out->slots));
  if (!j.nodes || !j.order || !np || !list || !out->slots) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  for (int i = 0; i < nhosts; i++) {
    struct node *nd = &j.nodes[i];
    nd->h = &hosts[i];
    nd->slots_given = 1; /* given, or set from the topology, which marks them given too */
    nd->slots = hosts[i].slots > 0 ? hosts[i].slots : default_slots(p, hosts[i].topo);
    nd->slots_max = hosts[i].slots_max;
    out->slots[i] = nd->slots;
    if (!(nd->per_app = calloc((size_t)napps, sizeof(int)))) {
      rc = WEFT_ENOMEM;
      goto out;
    }
  }
  if ((rc = count_procs(&j, np, &nprocs)))
    goto out;
  job_policies(&j, nprocs, hnp_topo);
  for (int a = 0; a < napps && !rc; a++) {
    int n = 0, level = (int)WEFTX_OMPI_POLICY(j.p.mapping), got = 0;
    long free;
    if ((rc = target_nodes(&j, a, j.p.mapping, list, &n, &free)))
      break;
    if (np[a] == 0 && level != WEFTX_OMPI_PPR)
      np[a] = free > 0 ? (int)free : 1;
    if (level == WEFTX_OMPI_PPR) {
      rc = ppr(&j, a, list, n, np[a], &got);
      if (!rc && np[a] == 0)
        np[a] = got;
    } else if (level == WEFTX_OMPI_NODE) {
      rc = bynode(&j, a, list, n, free, np[a]);
    } else if (level == WEFTX_OMPI_SLOT) {
      rc = byslot(&j, a, list, n, free, np[a]);
    } else if (level >= WEFTX_OMPI_NUMA && level <= WEFTX_OMPI_HWTHREAD) {
      rc = byobj(&j, a, list, n, free, np[a], level);
      if (rc == 1) {
        /* no such object: Open MPI maps by slot instead */
        for (int i = 0; i < nhosts; i++) {
          j.nodes[i].inuse -= j.nodes[i].per_app[a];
          j.nodes[i].nprocs -= j.nodes[i].per_app[a];
          j.nodes[i].per_app[a] = 0;
        }
        j.p.mapping = (j.p.mapping & 0xff00u) | WEFTX_OMPI_SLOT;
        rc = byslot(&j, a, list, n, free, np[a]);
      }
    } else {
      rc = nofit(&j, "Open MPI 4.1 cannot map by %s", weftx_ompi_level_name(level));
    }
  }
  if (rc)
    goto out;
  if (j.oversubscribed && !(j.p.binding & WEFTX_OMPI_BIND_GIVEN))
    j.p.binding = WEFTX_OMPI_BIND_NONE | (j.p.binding & 0xf000u) | WEFTX_OMPI_BIND_IF_SUPPORTED;
  for (int a = 0; a < napps; a++)
    out->np += np[a];
  if (out->np == 0) {
    rc = nofit(&j, "no rank to start");
    goto out;
  }
  if (!(out->ranks = calloc((size_t)out->np, sizeof(*out->ranks)))) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  if ((rc = number(&j, out, np)))
    goto out;
  /* the hosts Open MPI uses, in its order (a host mapped but given no rank is left out) */
  if (!(out->order = calloc((size_t)j.norder + 1, sizeof(*out->order)))) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  for (int k = 0; k < j.norder; k++)
    if (j.nodes[j.order[k]].nprocs > 0)
      out->order[out->norder++] = j.order[k];
  out->oversubscribed = j.oversubscribed;
  out->policy = j.p;
out:
  for (int i = 0; j.nodes && i < nhosts; i++)
    free(j.nodes[i].per_app);
  free(j.nodes);
  free(j.order);
  free(np);
  free(list);
  if (rc)
    weftx_ompi_job_clear(out);
  return rc;
}
