/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine stage: the mpirun command line that runs a plan, and the
 * hostfile it reads. Ranks go to hosts as planned (a hostfile of
 * "host slots=COUNT" lines with --map-by slot or node, or one line per rank
 * for Open MPI's sequential mapper), Open MPI's own binding is off
 * (--bind-to none), and every rank starts as weft-rank, which places, binds
 * and sets up its rank from the same policy, then runs the program. Neither
 * command line grows with the number of hosts: the hosts are in the hostfile
 * and the agent's arguments are the contract's (agent.h). Arguments go to
 * mpirun as an argv (execve): no shell sees them. Open MPI 5.x spells a few
 * of these differently (--display bind, plm_ssh_*); only 4.1's spelling is
 * produced here.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "weftrun.h"

extern char **environ;

/* Variables forwarded to every rank by default, beside -x (weftx_env_forward_default()).
 * WEFT_TOPOLOGY describes one host, so it stays with the host it was set on. */
static int
forwarded(const char *name, size_t n)
{
  static const char *const kept[] = { "WEFT_TOPOLOGY", "WEFT_RANK_PATH", "WEFT_MPIRUN", NULL };
  char *copy = strndup(name, n);
  int yes = copy != NULL;
  for (int i = 0; yes && kept[i]; i++)
    if (!strcmp(copy, kept[i]))
      yes = 0;
  yes = yes && weftx_env_forward_default(copy);
  free(copy);
  return yes;
}

static int
add_env(const wr_opts *o, wr_argv *a)
{
  int rc = 0;
  for (int i = 0; i < o->nxvars && !rc; i++)
    rc = wr_argv_add(a, "-x") || wr_argv_add(a, o->xvars[i]);
  for (char **e = environ; *e && !rc; e++) {
    size_t n = strcspn(*e, "=");
    if (n == 0 || (*e)[n] != '=' || !forwarded(*e, n))
      continue;
    int explicit = 0;
    for (int i = 0; i < o->nxvars; i++)
      if (!strncmp(o->xvars[i], *e, n) && (o->xvars[i][n] == '\0' || o->xvars[i][n] == '='))
        explicit = 1;
    if (!explicit) {
      char *name = strndup(*e, n);
      rc = !name || wr_argv_add(a, "-x") || wr_argv_add(a, name);
      free(name);
    }
  }
  return rc;
}

/* An MCA parameter the user set, on the command line or as OMPI_MCA_KEY. */
static int
has_mca(const wr_opts *o, const char *key)
{
  static const char pre[] = "OMPI_MCA_";
  size_t n = strlen(key);
  for (int i = 0; i < o->nmca; i++)
    if (!strcmp(o->mca[i].key, key))
      return 1;
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, pre, sizeof(pre) - 1) && !strncmp(*e + sizeof(pre) - 1, key, n) &&
        (*e)[sizeof(pre) - 1 + n] == '=')
      return 1;
  return 0;
}

/* 1 when mpirun must be told the host of every rank (its sequential mapper):
 * Open MPI 4.1 maps the ranks of its own host first whatever the hostfile's
 * order, so a plan whose first host is not this one, while this one has ranks
 * too, would be launched in another order than planned (and each rank would
 * place itself as another host's rank). The same holds for hosts ordered by
 * physical_host. */
static int
need_seq(const wr_plan *p)
{
  const wr_host *first = NULL;
  if (p->ordered)
    return 1;
  for (int h = 0; h < p->nhosts; h++) {
    if (p->hosts[h].count <= 0)
      continue;
    if (!first)
      first = p->hosts[h].host;
    else if (p->hosts[h].host->local && !first->local)
      return 1;
  }
  return 0;
}

int
wr_engine_hostfile(const wr_plan *p, FILE *out)
{
  if (need_seq(p)) {
    for (int r = 0; r < p->np; r++)
      fprintf(out, "%s\n", p->hosts[p->ranks[r].host].host->name);
  } else {
    for (int h = 0; h < p->nhosts; h++)
      if (p->hosts[h].count > 0)
        fprintf(out, "%s slots=%d\n", p->hosts[h].host->name, p->hosts[h].count);
  }
  return ferror(out) ? -1 : 0;
}

/* mpirun's own options: where the ranks go, the environment, the network, output. */
static int
mpirun_args(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e, wr_argv *a)
{
  char np[16];
  snprintf(np, sizeof(np), "%d", p->np);
  int rc = wr_argv_add(a, e->mpirun);
  if (!rc && o->allow_run_as_root)
    rc = wr_argv_add(a, "--allow-run-as-root");
  if (!rc)
    rc = wr_argv_add(a, "-np") || wr_argv_add(a, np) || wr_argv_add(a, "--hostfile") ||
         wr_argv_add(a, e->hostfile);
  if (!rc && need_seq(p))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "rmaps") || wr_argv_add(a, "seq");
  else if (!rc)
    rc = wr_argv_add(a, "--map-by") || wr_argv_add(a, p->by_node ? "node" : "slot");
  if (!rc)
    rc = wr_argv_add(a, "--bind-to") || wr_argv_add(a, "none") || add_env(o, a);
  const char *ifname = net && net->ifname[0] ? net->ifname : NULL;
  if (!rc && ifname && !has_mca(o, "btl_tcp_if_include") && !has_mca(o, "btl_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "btl_tcp_if_include") || wr_argv_add(a, ifname);
  if (!rc && ifname && !has_mca(o, "oob_tcp_if_include") && !has_mca(o, "oob_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "oob_tcp_if_include") || wr_argv_add(a, ifname);
  /* mpirun is given exact counts, so it cannot see an oversubscribed host: tell the
   * ranks to yield the cores while they wait, as it would */
  if (!rc && p->oversub && !has_mca(o, "mpi_yield_when_idle"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "mpi_yield_when_idle") || wr_argv_add(a, "1");
  for (int i = 0; i < o->nmca && !rc; i++)
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, o->mca[i].key) || wr_argv_add(a, o->mca[i].value);
  if (!rc && o->tag_output)
    rc = wr_argv_add(a, "--tag-output");
  if (!rc && o->timestamp_output)
    rc = wr_argv_add(a, "--timestamp-output");
  if (!rc && o->output_filename)
    rc = wr_argv_add(a, "--output-filename") || wr_argv_add(a, o->output_filename);
  for (int i = 0; i < o->npass && !rc; i++)
    rc = wr_argv_add(a, o->pass[i]);
  return rc;
}

/* A topology file as the agents get it: absolute, so that it reads the same from any
 * working directory. */
static char *
absolute(const char *f, int index)
{
  char *real = realpath(f, NULL), *out = NULL;
  const char *path = real ? real : f;
  size_t n = strlen(path) + 16;
  if ((out = malloc(n))) {
    if (index >= 0)
      snprintf(out, n, "%d=%s", index, path);
    else
      snprintf(out, n, "%s", path);
  }
  free(real);
  return out;
}

int
wr_engine_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
               wr_argv *a, char *why, size_t whylen)
{
  weft_agent_args ag;
  int *counts = calloc((size_t)p->nhosts, sizeof(*counts));
  char *layout = NULL, *topo = NULL, *host_topo[WEFT_AGENT_MAX_TOPOLOGY];
  int nhost_topo = 0, rc = WR_EXIT_ENGINE;

  snprintf(why, whylen, "out of memory");
  weft_agent_args_init(&ag);
  if (!counts)
    goto out;
  for (int h = 0; h < p->nhosts; h++)
    counts[h] = p->hosts[h].count;
  if (!(layout = weft_layout_encode(counts, p->nhosts)))
    goto out;
  if (strlen(layout) >= WEFT_AGENT_ARG_MAX) {
    snprintf(why, whylen, "the ranks per host of %d hosts take %zu bytes as weft-rank's --layout, "
             "more than the %d one argument may have; give the hosts equal slots", p->nhosts,
             strlen(layout), WEFT_AGENT_ARG_MAX - 1);
    goto out;
  }
  ag.layout = layout;
  ag.by_node = p->by_node;
  ag.map_by = o->map_by;
  ag.bind_to = o->bind_to;
  ag.oversubscribe = o->oversubscribe || p->oversub;
  ag.gpu_visibility = o->gpu_visibility;
  ag.nccl_preset = o->nccl_preset;
  ag.preempt_grace = o->preempt_grace;
  ag.report_bindings = o->report_bindings;
  if (net && net->addr[0]) {
    ag.master_addr = net->addr;
    ag.master_port = net->port;
  }
  if (net && net->ifname[0])
    ag.ifname = net->ifname;
  /* --topology FILE once; I=FILE for each host named in a --topology HOST=FILE */
  if (o->topology && !(ag.topology = topo = absolute(o->topology, -1)))
    goto out;
  for (int h = 0; h < p->nhosts; h++) {
    const char *f = p->hosts[h].host->file;
    if (!f || f == o->topology)
      continue;
    if (nhost_topo >= WEFT_AGENT_MAX_TOPOLOGY) {
      snprintf(why, whylen, "more than %d hosts with a --topology HOST=FILE of their own",
               WEFT_AGENT_MAX_TOPOLOGY);
      goto out;
    }
    if (!(host_topo[nhost_topo] = absolute(f, h)))
      goto out;
    ag.host_topology[nhost_topo] = host_topo[nhost_topo];
    ag.nhost_topology = ++nhost_topo;
  }
  ag.host_xml = e->host_xml;
  ag.control = e->control;
  if (mpirun_args(p, o, net, e, a) || wr_argv_add(a, e->agent) ||
      weft_agent_args_write(&ag, wr_argv_add_cb, a) || wr_argv_add(a, "--"))
    goto out;
  for (int i = 0; i < o->nprogram; i++)
    if (wr_argv_add(a, o->program[i]))
      goto out;
  why[0] = '\0';
  rc = 0;
out:
  for (int i = 0; i < nhost_topo; i++)
    free(host_topo[i]);
  free(topo);
  free(layout);
  free(counts);
  return rc;
}
