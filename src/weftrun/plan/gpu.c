/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plan when weft places the ranks (WR_MODE_GPU: one per GPU, next to it),
 * a pure function of the hosts and their facts, the policy and the options:
 * the hosts in rank order (as given, or sorted by Google Cloud's physical_host
 * when every host has one, so that neighbouring ranks share racks), each
 * host's slots and ranks, every host's placement from weftx_map_host(), whose
 * weftx_map_rank() weft-rank evaluates on its host (among the GPUs the host's
 * ranks may have: a Slurm job's). No I/O: errors come back as a code and one
 * line in why.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "plan.h"

#define MAX_NP 1000000

static int nomem(char *why, size_t len)
{
  snprintf(why, len, "out of memory");
  return WR_EXIT_ENGINE;
}

/* The hosts in rank order: sorted by physical_host (cluster, rack, host) when every
 * host of two or more has one, else as given. */
static int order_hosts(wr_plan *p, const wr_host *hosts, int n)
{
  const char **phys = calloc((size_t)n, sizeof(*phys));
  int *order = calloc((size_t)n, sizeof(*order));
  int rc = 0;
  if (!phys || !order) {
    rc = -1;
    goto out;
  }
  for (int h = 0; h < n; h++)
    phys[h] = hosts[h].physical_host;
  p->ordered = n > 1 && weftx_gcp_order_hosts(phys, n, order) == 0;
  for (int h = 0; h < n; h++)
    p->hosts[h].host = &hosts[p->ordered ? order[h] : h];
out:
  free(phys);
  free(order);
  return rc;
}

/* Each host's slots (given, else what its GPUs or cores take) and cap (ranks it takes
 * without oversubscribing). --gpus-per-node N stands for a host's GPUs when trusted. */
static int slots(wr_plan *p, char *why, size_t len)
{
  int gpu_map = p->pol.map_by == WEFTX_MAP_GPU || p->pol.map_by == WEFTX_MAP_AUTO;
  for (int h = 0; h < p->nhosts; h++) {
    wr_plan_host *ph = &p->hosts[h];
    const wr_host *w = ph->host;
    int trusted = gpu_map && w->gpus > 0 && w->gpus_trusted;
    weftx_policy pol = p->pol;
    if (p->pol.map_by == WEFTX_MAP_GPU && w->gpus == 0 && w->gpus_from) {
      snprintf(why, len,
               "--map-by gpu but %s has no GPU on host '%s'; ask for GPUs (salloc or "
               "sbatch --gres=gpu:N or --gpus-per-node=N), or use --map-by core",
               w->gpus_from, w->name);
      return WR_EXIT_NOGPU;
    }
    if (p->pol.map_by == WEFTX_MAP_GPU && w->gpus == 0) {
      snprintf(why, len,
               "--map-by gpu but host '%s' has no GPU (topology: %s); use "
               "--map-by core, or --gpus-per-node N if the probe is wrong",
               w->name, w->file ? w->file : "this machine");
      return WR_EXIT_NOGPU;
    }
    pol.gpus = w->gpus_allowed;
    ph->cap = trusted ? w->gpus : weftx_map_slots(w->topo, &pol);
    ph->slots = w->slots > 0 ? w->slots : ph->cap > 0 ? ph->cap : 1;
  }
  return 0;
}

/* Ranks per host: -N K on each, else host by host up to its slots, then (with
 * --oversubscribe) round-robin over the hosts. */
static int counts(wr_plan *p, const wr_opts *o, char *why, size_t len)
{
  long total = 0, np = o->np;
  for (int h = 0; h < p->nhosts; h++)
    total += p->hosts[h].slots;
  if (o->per_node > 0) {
    long want = o->per_node * p->nhosts;
    if (np < 0)
      np = want;
    if (np > want) {
      snprintf(why, len, "-np %ld is more than -N %ld on %d hosts; raise -N or lower -np", np,
               o->per_node, p->nhosts);
      return WR_EXIT_PLACE;
    }
  }
  if (np < 0)
    np = total;
  if (np > MAX_NP) {
    snprintf(why, len, "%ld ranks; weftrun starts at most %d", np, MAX_NP);
    return WR_EXIT_PLACE;
  }
  p->np = (int)np;
  if (o->per_node > 0) {
    for (int h = 0; h < p->nhosts; h++)
      if (o->per_node > p->hosts[h].slots && !p->pol.oversubscribe) {
        snprintf(why, len, "-N %ld but host '%s' has %d slots; lower -N or add --oversubscribe",
                 o->per_node, p->hosts[h].host->name, p->hosts[h].slots);
        return WR_EXIT_PLACE;
      }
    long left = np;
    for (int h = 0; h < p->nhosts; h++) {
      p->hosts[h].count = (int)(left < o->per_node ? left : o->per_node);
      left -= p->hosts[h].count;
    }
    return 0;
  }
  if (np > total && !p->pol.oversubscribe) {
    char list[256] = "";
    size_t off = 0;
    for (int h = 0; h < p->nhosts && off < sizeof(list) - 1; h++)
      off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s:%d", h ? "," : "",
                              p->hosts[h].host->name, p->hosts[h].slots);
    snprintf(why, len,
             "%ld ranks but the hosts have %ld slots (%s%s); lower -np, add hosts or "
             "slots (-H host:N), or add --oversubscribe",
             np, total, list, off >= sizeof(list) - 1 ? "..." : "");
    return WR_EXIT_PLACE;
  }
  long left = np;
  for (int h = 0; h < p->nhosts && left > 0; h++) {
    p->hosts[h].count = (int)(left < p->hosts[h].slots ? left : p->hosts[h].slots);
    left -= p->hosts[h].count;
  }
  for (int h = 0; left > 0; h = (h + 1) % p->nhosts, left--)
    p->hosts[h].count++;
  return 0;
}

/* Every host's ranks at once (weftx_map_host()), then each rank its host's place. */
static int place(wr_plan *p, char *why, size_t len)
{
  size_t n = (size_t)(p->np ? p->np : 1);
  int *cnt = calloc((size_t)p->nhosts, sizeof(*cnt)), *hosts = calloc(n, sizeof(int)),
      *locals = calloc(n, sizeof(int)), rc = 0;
  weftx_host_map *maps = calloc((size_t)p->nhosts, sizeof(*maps));
  if (!cnt || !hosts || !locals || !maps || !(p->ranks = calloc(n, sizeof(*p->ranks)))) {
    rc = nomem(why, len);
    goto out;
  }
  for (int h = 0; h < p->nhosts; h++)
    cnt[h] = p->hosts[h].count;
  /* every rank's host in one linear pass */
  if (wt_layout_assign(cnt, p->nhosts, p->by_node, p->np, hosts, locals)) {
    rc = nomem(why, len);
    goto out;
  }
  for (int h = 0; h < p->nhosts && !rc; h++) {
    const wr_plan_host *ph = &p->hosts[h];
    char reason[512] = "";
    /* Slots the user gave (-H host:N, slots=N) may exceed what the host has, as
     * mpirun allows: the ranks there then share (oversubscribe) */
    weftx_policy pol = p->pol;
    pol.gpus = ph->host->gpus_allowed; /* a Slurm job's GPUs there */
    if (ph->count > ph->cap) {
      pol.oversubscribe = 1;
      p->oversub = 1;
    } else if (ph->host->gpus_trusted && ph->host->from == WR_TOPO_ASSUMED) {
      /* a host known by --gpus-per-node alone: what is shown is this machine's
       * placement; weft-rank places the rank on the host's own hardware */
      pol.oversubscribe = 1;
    }
    if (ph->count > 0 &&
        (rc = weftx_map_host(ph->host->topo, &pol, ph->count, &maps[h], reason, sizeof(reason)))) {
      snprintf(why, len, "host %s (%d ranks): %s", ph->host->name, ph->count,
               reason[0] ? reason : weft_strerror(rc));
      rc = rc == WEFT_ENOGPU ? WR_EXIT_NOGPU : rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_PLACE;
    }
  }
  for (int r = 0; r < p->np && !rc; r++) {
    weftx_plan_rank *pr = &p->ranks[r];
    pr->rank = r;
    pr->host = pr->node_rank = hosts[r];
    pr->local_rank = locals[r];
    pr->place = maps[hosts[r]].place[locals[r]];
    memset(&maps[hosts[r]].place[locals[r]], 0, sizeof(pr->place));
  }
  if (rc)
    p->np = 0; /* what wr_plan_destroy() clears: no rank has a place yet */
out:
  for (int h = 0; maps && h < p->nhosts; h++)
    weftx_host_map_clear(&maps[h]);
  free(maps);
  free(cnt);
  free(hosts);
  free(locals);
  return rc;
}

int wr_plan_gpu(wr_plan *p, const wr_opts *o, const wr_host *hosts, int nhosts,
                const wr_plan_here *here, char *why, size_t whylen)
{
  int rc;
  if (o->rank_by && strcmp(o->rank_by, "slot") && strcmp(o->rank_by, "node")) {
    snprintf(why, whylen,
             "--rank-by %s with --map-by gpu: weft numbers ranks by slot or node; "
             "for Open MPI's ranking give a CPU mapping (--map-by core, socket, ...)",
             o->rank_by);
    return WR_EXIT_USAGE;
  }
  if ((rc = weftx_policy_parse(&p->pol, o->map_by, o->bind_to, why, whylen)))
    return WR_EXIT_USAGE;
  if (p->pol.bind_to == WEFTX_BIND_OTHER) {
    snprintf(why, whylen,
             "--bind-to %s: a rank next to its GPU binds to gpu-local, core, numa, "
             "socket or none; for Open MPI's binding give a CPU mapping (--map-by core, ...)",
             o->bind_to);
    return WR_EXIT_USAGE;
  }
  if (o->oversubscribe)
    p->pol.oversubscribe = 1;
  p->pol.reserved_cpus = here->reserved_cpus;
  p->by_node = o->rank_by && !strcmp(o->rank_by, "node");
  if (order_hosts(p, hosts, nhosts))
    return nomem(why, whylen);
  if ((rc = slots(p, why, whylen)) || (rc = counts(p, o, why, whylen)) ||
      (rc = place(p, why, whylen)))
    return rc;
  for (int h = 0; h < p->nhosts; h++)
    if (!(p->hosts[h].per_app = calloc(1, sizeof(int))))
      return nomem(why, whylen);
    else
      p->hosts[h].per_app[0] = p->hosts[h].count;
  if (!(p->rank_app = calloc((size_t)(p->np ? p->np : 1), sizeof(int))))
    return nomem(why, whylen);
  return 0;
}
