/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plan when Open MPI places the ranks (WR_MODE_OMPI): mpirun is given the
 * user's own placement options and hosts, and this predicts what it will do
 * with the model of its version, Open MPI 4.1 or 5.0 (weftx/ompi.h): Open MPI's node order (its own
 * host first), the ranks of each host and their numbers, the binding of each,
 * and what weft adds to a rank (the GPU nearest its binding where a host has
 * enough GPUs, the NIC, NUMA memory). weft-rank checks on every host that
 * Open MPI did what this says, and refuses to run a rank where it did not.
 * What the model cannot predict is refused here, with what to use instead.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan.h"

extern char **environ;

static int nomem(char *why, size_t len)
{
  snprintf(why, len, "out of memory");
  return WR_EXIT_ENGINE;
}

/* Open MPI's node pool: its own host first (when it is one of them), then as given. */
static int pool(const wr_inventory *inv, int *order, char *why, size_t whylen)
{
  int n = 0, hnp = -1;
  for (int h = 0; h < inv->nhosts; h++)
    if (inv->hosts[h].local) {
      if (hnp >= 0) {
        snprintf(why, whylen,
                 "hosts '%s' and '%s' are both this machine, which Open MPI counts "
                 "as one host; list it once",
                 inv->hosts[hnp].name, inv->hosts[h].name);
        return WR_EXIT_HOSTS;
      }
      hnp = h;
    }
  if (hnp >= 0)
    order[n++] = hnp;
  for (int h = 0; h < inv->nhosts; h++)
    if (h != hnp)
      order[n++] = h;
  return 0;
}

/* \p in with Open MPI 5's word package (a whole word between ':' or ',') as socket. */
static const char *socket_word(const char *in, char *out, size_t len)
{
  size_t n = 0;
  const char *w = in;
  while (*w && n + 8 < len) {
    size_t k = strcspn(w, ":,");
    if (k == 7 && !strncasecmp(w, "package", 7)) {
      memcpy(out + n, "socket", 6);
      n += 6;
    } else {
      if (n + k + 1 >= len)
        return in;
      memcpy(out + n, w, k);
      n += k;
    }
    w += k;
    if (*w)
      out[n++] = *w++;
  }
  out[n] = '\0';
  return *w ? in : out; /* too long: as it is (weft's grammar then says what is wrong) */
}

static int model_error(int rc, const char *what, char *why, size_t whylen)
{
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s", what);
  if (rc == WEFT_ENOTSUP) {
    snprintf(why, whylen,
             "%s: Open MPI has it, weftrun does not (it cannot say where Open MPI "
             "will put each rank); use --map-by, --rank-by and --bind-to with slot, node, core, "
             "socket, numa or ppr",
             tmp);
    return WR_EXIT_USAGE;
  }
  if (rc == WEFT_EINVAL) {
    snprintf(why, whylen, "%s (mpirun refuses it too)", tmp);
    return WR_EXIT_USAGE;
  }
  if (rc == WEFT_ENOMEM)
    return nomem(why, whylen);
  snprintf(why, whylen, "%s", tmp);
  return WR_EXIT_PLACE;
}

int wr_plan_ompi(wr_plan *p, const wr_opts *o, const wr_inventory *inv, char *why, size_t whylen)
{
  int n = inv->nhosts, rc, *order = calloc((size_t)n, sizeof(*order)),
      *planpos = calloc((size_t)n, sizeof(*planpos)), *first = NULL, *next = NULL;
  weftx_ompi_host *oh = calloc((size_t)n, sizeof(*oh));
  weftx_ompi_app *apps = calloc((size_t)p->napps, sizeof(*apps));
  int **app_pool = calloc((size_t)p->napps, sizeof(*app_pool));
  const weftx_topo *hnp_topo = NULL, *here = NULL;
  weftx_ompi_job job;
  char reason[512] = "";

  memset(&job, 0, sizeof(job));
  if (!order || !planpos || !oh || !apps || !app_pool) {
    rc = nomem(why, whylen);
    goto out;
  }
  if ((rc = pool(inv, order, why, whylen)))
    goto out;
  for (int k = 0; k < n; k++) {
    const wr_host *w = &inv->hosts[order[k]];
    oh[k].topo = w->topo;
    oh[k].slots = w->ompi_given ? w->ompi_slots : 0;
    oh[k].slots_max = w->slots_max;
    oh[k].hnp = w->local;
    if (w->local)
      hnp_topo = w->topo;
    if (w->local || w->from == WR_TOPO_HERE)
      here = w->topo;
  }
  /* the defaults look at mpirun's own topology: this machine's, even when it runs no rank */
  if (!hnp_topo)
    hnp_topo = here ? here : oh[0].topo;
  for (int a = 0; a < p->napps; a++) {
    apps[a].np = o->apps[a].np > 0 ? (int)o->apps[a].np : 0;
    apps[a].hosts_given = o->apps[a].nhost_args > 0 || o->apps[a].hostfile;
    if (inv->app_hosts[a]) {
      /* the program's hosts in pool order */
      if (!(app_pool[a] = calloc((size_t)n, sizeof(int)))) {
        rc = nomem(why, whylen);
        goto out;
      }
      for (int k = 0; k < n; k++)
        for (int i = 0; i < inv->app_nhosts[a]; i++)
          if (inv->app_hosts[a][i] == order[k])
            app_pool[a][apps[a].nhosts++] = k;
      apps[a].hosts = app_pool[a];
    }
  }
  /* the user's words in weft's grammar first (Open MPI's, which names weft's gpu too) */
  weftx_policy words;
  weftx_ompi_cmdline cl = o->cl;
  /* the rules of the engine's Open MPI (4.1's without one: srun, a dry run without mpirun) */
  cl.version = inv->ompi_version > 0 ? inv->ompi_version : WR_OMPI_DEFAULT;
  memset(&words, 0, sizeof(words));
  /* Open MPI 5's mpirun (PRRTE) reads no OMPI_MCA_ placement parameter, from --mca, the
   * environment or the files: only what its placement options set */
  weftx_ompi_mca own;
  memset(&own, 0, sizeof(own));
  for (int id = 0; id < WEFTX_OMPI_MCA_COUNT; id++) {
    const char *from = inv->mca.m.from[id];
    if (inv->mca.m.v[id] && from && !strncmp(from, "-", 1) && !strstr(from, "mca")) {
      own.v[id] = inv->mca.m.v[id];
      own.from[id] = from;
    }
  }
  if (cl.version >= 500) {
    static const char *const prte[] = {"PRTE_MCA_rmaps_", "PRTE_MCA_hwloc_", NULL};
    /* its defaults of the mapping and the binding are the model's MCA ones (weft-vcluster
     * sets the binding's); other placement parameters of its are refused */
    static const struct {
      const char *name;
      int id;
    } known[] = {{"PRTE_MCA_hwloc_default_binding_policy", WEFTX_OMPI_MCA_BINDING},
                 {"PRTE_MCA_rmaps_default_mapping_policy", WEFTX_OMPI_MCA_MAPPING}};
    for (char **e = environ; *e; e++) {
      size_t k = strcspn(*e, "="), i;
      for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strlen(known[i].name) == k && !strncmp(*e, known[i].name, k) && (*e)[k] == '=')
          break;
      if (i < sizeof(known) / sizeof(known[0])) {
        own.v[known[i].id] = *e + k + 1;
        own.from[known[i].id] = known[i].name;
        continue;
      }
      for (int j = 0; prte[j]; j++)
        if (!strncmp(*e, prte[j], strlen(prte[j]))) {
          snprintf(why, whylen,
                   "%.*s: Open MPI 5's placement parameter: Open MPI has it, weftrun does not "
                   "(it cannot say where Open MPI will put each rank); use --map-by, --rank-by "
                   "and --bind-to",
                   (int)strcspn(*e, "="), *e);
          rc = WR_EXIT_USAGE;
          goto out;
        }
    }
  }
  char map5[256], bind5[256];
  const char *map_w = o->map_by, *bind_w = o->bind_to;
  if (cl.version >= 500) {
    /* weft's grammar is 4.1's: Open MPI 5's package is its socket */
    map_w = o->map_by ? socket_word(o->map_by, map5, sizeof(map5)) : NULL;
    bind_w = o->bind_to ? socket_word(o->bind_to, bind5, sizeof(bind5)) : NULL;
  }
  if ((rc = weftx_policy_parse(&words, map_w, bind_w, reason, sizeof(reason))) ||
      (rc = weftx_ompi_policy_make(cl.version >= 500 ? &own : &inv->mca.m, &cl, &p->ompi, reason,
                                   sizeof(reason)))) {
    rc = model_error(rc, reason, why, whylen);
    goto out;
  }
  if ((rc = weftx_ompi_job_map(&p->ompi, oh, n, apps, p->napps, hnp_topo, &job, reason,
                               sizeof(reason)))) {
    rc = model_error(rc, reason, why, whylen);
    goto out;
  }
  if (cl.version >= 500) {
    /* Open MPI 5 overloads cpus in another order than 4.1 (0,0,1,1 where 4.1 binds
     * 0,1,0,1), which the model does not follow */
    unsigned b = WEFTX_OMPI_POLICY(job.policy.binding);
    for (int k = 0; k < n && (b == WEFTX_OMPI_CORE || b == WEFTX_OMPI_HWTHREAD); k++) {
      int count = 0,
          cpus = b == WEFTX_OMPI_CORE ? weftx_topo_ncores(oh[k].topo) : weftx_topo_npus(oh[k].topo);
      for (int r = 0; r < job.np; r++)
        count += job.ranks[r].host == k;
      if (count > cpus) {
        rc = model_error(WEFT_ENOTSUP,
                         "binding more ranks than cpus to cpus (overload-allowed) under Open MPI 5",
                         why, whylen);
        goto out;
      }
    }
  }
  p->ompi = job.policy;
  p->np = job.np;
  p->oversub = job.oversubscribed;
  p->by_node = WEFTX_OMPI_POLICY(job.policy.ranking) == WEFTX_OMPI_NODE ||
               WEFTX_OMPI_POLICY(job.policy.ranking) == WEFTX_OMPI_BOARD;
  /* the plan's hosts: Open MPI's order of the hosts with ranks, then the others */
  {
    int k = 0, *used = calloc((size_t)n, sizeof(int));
    if (!used) {
      rc = nomem(why, whylen);
      goto out;
    }
    for (int i = 0; i < job.norder; i++) {
      used[job.order[i]] = 1;
      planpos[job.order[i]] = k;
      p->hosts[k++].host = &inv->hosts[order[job.order[i]]];
    }
    for (int i = 0; i < n; i++)
      if (!used[i]) {
        planpos[i] = k;
        p->hosts[k++].host = &inv->hosts[order[i]];
      }
    free(used);
    for (int i = 0; i < n; i++) {
      wr_plan_host *ph = &p->hosts[planpos[i]];
      ph->ompi_slots = job.slots[i];
      ph->slots = job.slots[i];
      ph->cap = job.slots[i];
      if (!(ph->per_app = calloc((size_t)p->napps, sizeof(int)))) {
        rc = nomem(why, whylen);
        goto out;
      }
    }
  }
  if (!(p->ranks = calloc((size_t)p->np, sizeof(*p->ranks))) ||
      !(p->rank_app = calloc((size_t)p->np, sizeof(int)))) {
    rc = nomem(why, whylen);
    goto out;
  }
  for (int r = 0; r < p->np; r++) {
    wr_plan_host *ph = &p->hosts[planpos[job.ranks[r].host]];
    ph->count++;
    ph->per_app[job.ranks[r].app]++;
    p->rank_app[r] = job.ranks[r].app;
    p->ranks[r].rank = r;
    p->ranks[r].host = planpos[job.ranks[r].host];
    p->ranks[r].node_rank = p->ranks[r].host;
    p->ranks[r].local_rank = job.ranks[r].local_rank;
  }
  /* each host's ranks in rank order (first[h], then next[r]): one pass, not one per host */
  if (!(first = malloc((size_t)p->nhosts * sizeof(int))) ||
      !(next = malloc((size_t)p->np * sizeof(int)))) {
    rc = nomem(why, whylen);
    goto out;
  }
  for (int h = 0; h < p->nhosts; h++)
    first[h] = -1;
  for (int r = p->np - 1; r >= 0; r--) {
    next[r] = first[p->ranks[r].host];
    first[p->ranks[r].host] = r;
  }
  /* each host's bindings, as its Open MPI daemon will compute them, and weft's view */
  for (int h = 0; h < p->nhosts && !rc; h++) {
    wr_plan_host *ph = &p->hosts[h];
    weftx_ompi_bound *b;
    if (ph->count == 0)
      continue;
    if (!(b = calloc((size_t)ph->count, sizeof(*b)))) {
      rc = nomem(why, whylen);
      break;
    }
    if ((rc = weftx_ompi_node_bind(ph->host->topo, &p->ompi, ph->ompi_slots, ph->per_app, p->napps,
                                   b, reason, sizeof(reason)))) {
      free(b);
      snprintf(why, whylen, "host %s: %s", ph->host->name, reason);
      rc = rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_PLACE;
      break;
    }
    for (int r = first[h]; r >= 0 && !rc; r = next[r])
      if (weftx_ompi_place(ph->host->topo, &p->ompi, b, ph->count, p->ranks[r].local_rank, NULL,
                           ph->host->gpus_allowed, &p->ranks[r].place))
        rc = nomem(why, whylen);
    weftx_ompi_bound_clear(b, ph->count);
    free(b);
  }
out:
  free(first);
  free(next);
  for (int a = 0; app_pool && a < p->napps; a++)
    free(app_pool[a]);
  free(app_pool);
  weftx_ompi_job_clear(&job);
  free(order);
  free(planpos);
  free(oh);
  free(apps);
  return rc;
}
