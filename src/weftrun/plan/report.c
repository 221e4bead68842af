/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plan as weftrun shows it: --dry-run's text (the hosts, their topologies
 * and Google Cloud facts, this VM's preset, one line per rank) or the plan
 * JSON of DESIGN.md (--json), with the network's variables when it has been
 * chosen.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hosts/hosts.h"
#include "plan.h"

static const char *base_name(const char *p)
{
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static const char *topology_of(const wr_host *w, char *buf, size_t len)
{
  /* this machine's may be the file WEFT_TOPOLOGY names */
  const char *env = !weftx_topo_is_live(w->topo) ? weftx_topo_source(w->topo) : NULL;
  switch (w->from) {
  case WR_TOPO_FILE: return w->file;
  case WR_TOPO_PROBED: return "probed";
  case WR_TOPO_HERE:
    snprintf(buf, len, "this machine%s%s%s", env ? " (WEFT_TOPOLOGY=" : "", env ? env : "",
             env ? ")" : "");
    return buf;
  case WR_TOPO_ASSUMED: break;
  }
  snprintf(buf, len, "assumed like this machine%s%s%s", env ? " (WEFT_TOPOLOGY=" : "",
           env ? env : "", env ? ")" : "");
  return buf;
}

/* The file a host's topology was read from, for JSON: NULL for a live machine. */
static const char *topology_file(const wr_host *w)
{
  if (w->file)
    return base_name(w->file);
  if (w->from != WR_TOPO_PROBED && !weftx_topo_is_live(w->topo))
    return base_name(weftx_topo_source(w->topo));
  return NULL;
}

/* "# hosts from ..." when they were not named on the command line. */
static void hosts_source(const wr_inventory *inv, FILE *out)
{
  if (inv->origin == WEFTX_HOSTS_SLURM)
    fprintf(out,
            "# hosts from the Slurm allocation SLURM_JOB_ID=%s: SLURM_JOB_NODELIST=%s, "
            "SLURM_TASKS_PER_NODE=%s\n",
            inv->slurm_job ? inv->slurm_job : "(unset)", getenv("SLURM_JOB_NODELIST"),
            getenv("SLURM_TASKS_PER_NODE") ? getenv("SLURM_TASKS_PER_NODE") : "(unset)");
  else if (inv->origin == WEFTX_HOSTS_HOSTFILE && inv->default_hostfile)
    fprintf(out, "# hosts from Open MPI's default hostfile %s\n", inv->default_hostfile);
}

/* ", GPUs 3-4 of 8 (Slurm job 12)" for a host whose ranks may have only some. */
static void gpus_of(const wr_host *w, char *buf, size_t len)
{
  buf[0] = '\0';
  if (w->gpus_allowed)
    snprintf(buf, len, " (%s of %d: %s)", w->gpus_allowed[0] ? w->gpus_allowed : "none",
             weftx_topo_ngpus(w->topo), w->gpus_from ? w->gpus_from : "");
}

static int json(const wr_plan *p, const wr_preview *pv, FILE *out)
{
  weftx_plan_host *hosts = calloc((size_t)p->nhosts, sizeof(*hosts));
  weftx_plan_rank *ranks = calloc((size_t)p->np + 1, sizeof(*ranks));
  int rc = WR_EXIT_ENGINE;
  if (!hosts || !ranks)
    goto out;
  for (int h = 0; h < p->nhosts; h++) {
    const wr_host *w = p->hosts[h].host;
    hosts[h].name = w->name;
    hosts[h].slots = p->hosts[h].slots;
    hosts[h].topo = w->topo;
    hosts[h].topology = topology_file(w);
    hosts[h].gpus_allowed = w->gpus_allowed;
    hosts[h].gpus_from = w->gpus_from;
  }
  for (int r = 0; r < p->np; r++) {
    ranks[r] = p->ranks[r];
    ranks[r].nenv = pv->rank ? pv->nrank[r] : 0;
    ranks[r].env = pv->rank ? (const char *const *)pv->rank[r] : NULL;
  }
  weftx_plan plan = {p->np,
                     p->nhosts,
                     hosts,
                     ranks,
                     pv->nall,
                     (const char *const *)pv->all,
                     (const char *const *)pv->source,
                     (const char *const *)pv->unresolved,
                     pv->nforwarded,
                     (const char *const *)pv->forwarded};
  rc = weftx_plan_write_json(out, &plan) ? WR_EXIT_ENGINE : 0;
out:
  if (rc)
    fprintf(stderr, "weftrun: cannot write the plan: out of memory\n");
  free(hosts);
  free(ranks);
  return rc;
}

static int text(const wr_plan *p, const wr_inventory *inv, const wr_preview *pv, const wr_opts *o,
                FILE *out)
{
  char pol[256] = "", line[512];
  if (p->mode == WR_MODE_OMPI) {
    weftx_ompi_describe(&p->ompi, pol, sizeof(pol));
    int v = p->ompi.version > 0 ? p->ompi.version : 401;
    fprintf(
      out, "# weftrun plan: %d ranks on %d host%s; %s (%s), as Open MPI %d.%d's mpirun would: %s\n",
      p->np, p->nhosts, p->nhosts == 1 ? "" : "s",
      p->mpirun_binds ? "Open MPI places and binds them" : "weft-rank binds them as Open MPI does",
      p->mode_why, v / 100, v % 100, pol);
  } else {
    weftx_policy_format(&p->pol, pol, sizeof(pol));
    fprintf(out, "# weftrun plan: %d ranks on %d host%s, map-by %s, rank-by %s\n", p->np, p->nhosts,
            p->nhosts == 1 ? "" : "s", pol, p->by_node ? "node" : "slot");
    if (p->departure[0])
      fprintf(out, "# %s\n", p->departure);
  }
  hosts_source(inv, out);
  if (p->ordered)
    fprintf(out, "# hosts ordered by physical_host (cluster/rack/host)\n");
  for (int h = 0; h < p->nhosts; h++) {
    const wr_plan_host *ph = &p->hosts[h];
    char topo[4200], gpus[256];
    gpus_of(ph->host, gpus, sizeof(gpus));
    fprintf(out, "# host %s: %d of %d slots, %d GPUs%s%s, topology %s\n", ph->host->name, ph->count,
            ph->slots, ph->host->gpus, gpus, ph->host->gpus_trusted ? " (--gpus-per-node)" : "",
            topology_of(ph->host, topo, sizeof(topo)));
    if (ph->host->unresolved[0])
      fprintf(out, "# host %s: the name does not resolve (%s); a launch stops there (exit %d)\n",
              ph->host->name, ph->host->unresolved, WR_EXIT_NOHOST);
  }
  /* one note for ranks left without a GPU on a GPU host */
  for (int r = 0; r < p->np; r++)
    if (p->ranks[r].place.note[0] && p->mode == WR_MODE_OMPI) {
      fprintf(out, "# host %s: %s\n", p->hosts[p->ranks[r].host].host->name,
              p->ranks[r].place.note);
      break;
    }
  for (int h = 0; h < p->nhosts; h++) {
    const wr_host *w = p->hosts[h].host;
    if (w->machine_type[0])
      fprintf(out, "# host %s: machine type %s, physical_host %s\n", w->name, w->machine_type,
              w->physical_host[0] ? w->physical_host : "none");
  }
  wr_gcp_print(inv->gcp, out);
  for (int r = 0; r < p->np; r++) {
    const weftx_plan_rank *pr = &p->ranks[r];
    const wr_host *w = p->hosts[pr->host].host;
    if (weftx_place_format(w->topo, w->name, r, &pr->place, line, sizeof(line)) == 0)
      fprintf(out, "%s\n", line);
  }
  (void)o;
  wr_preview_print(pv, p, out);
  return 0;
}

int wr_report(const wr_plan *p, const wr_inventory *inv, const wr_net *net, const wr_opts *o,
              FILE *out)
{
  wr_net here;
  wr_preview pv;
  char why[512];
  int rc;
  /* a dry run chooses the network too, to show what the ranks would get; it may fail
   * where a launch would (a host that does not resolve): say so and show the rest */
  if (!net) {
    if ((rc = wr_net_try(p, &here, why, sizeof(why)))) {
      fprintf(stderr,
              "weftrun: note: MASTER_ADDR, MASTER_PORT and the interface are left out "
              "of the plan: %s\n",
              why);
      memset(&here, 0, sizeof(here));
    }
    net = &here;
  }
  if ((rc = wr_preview_make(p, inv, net, o, &pv, why, sizeof(why)))) {
    fprintf(stderr, "weftrun: cannot show the ranks' environment: %s\n", why);
    wr_preview_free(&pv, p->np);
    return rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_PLACE;
  }
  rc = o->json ? json(p, &pv, out) : text(p, inv, &pv, o, out);
  wr_preview_free(&pv, p->np);
  return rc;
}
