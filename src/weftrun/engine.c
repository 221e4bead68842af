/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine stage: the mpirun command line that runs a plan, and the
 * hostfile it reads.
 *
 * When Open MPI places the ranks (WR_MODE_OMPI), mpirun gets the user's own
 * options word for word, program by program, and every program becomes
 * "weft-rank AGENT-ARGS -- PROGRAM ARGS": mpirun maps, ranks and binds as it
 * would have, and weft-rank checks that against the plan and adds weft's
 * environment. When weft places them (WR_MODE_GPU), the ranks go to hosts as
 * planned (a hostfile of "host slots=COUNT" lines with --map-by slot or node,
 * or one line per rank for Open MPI's sequential mapper), Open MPI's own
 * binding is off (--bind-to none), the user's options that do not place ranks
 * follow as typed, and weft-rank places and binds each rank. Neither command
 * line grows with the number of hosts weft adds: the hosts are in a hostfile,
 * the agent's arguments are the contract's (agent.h). Arguments go to mpirun
 * as an argv (execve): no shell sees them. Open MPI 5.x spells a few of these
 * differently (--display bind, plm_ssh_*); only 4.1's spelling is produced.
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

/* -x for the variables weft forwards by default that the user did not name. */
static int
add_env(const wr_opts *o, wr_argv *a)
{
  int rc = 0;
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

/* The user's option words of program \p app that mpirun gets in this mode. */
static int
user_words(const wr_plan *p, const wr_opts *o, int app, wr_argv *a)
{
  const wr_app *ap = &o->apps[app];
  int rc = 0;
  for (int i = 0; i < ap->nwords && !rc; i++) {
    int w = ap->place[i];
    if (w == WR_WORD_ANY || (w == WR_WORD_PLACE && p->mode == WR_MODE_OMPI) ||
        (w == WR_WORD_TIMEOUT && o->timeout_report))
      rc = wr_argv_add(a, ap->words[i]);
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

/* weft's own options to mpirun (for one program): the variables it forwards (when it
 * places the ranks; when Open MPI does, the ranks get the environment mpirun gives
 * them, -x as the user wrote it), the network it chose. */
static int
weft_args(const wr_plan *p, const wr_opts *o, const wr_net *net, wr_argv *a)
{
  int rc = p->mode == WR_MODE_GPU ? add_env(o, a) : 0;
  const char *ifname = net && net->ifname[0] ? net->ifname : NULL;
  if (!rc && ifname && !has_mca(o, "btl_tcp_if_include") && !has_mca(o, "btl_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "btl_tcp_if_include") || wr_argv_add(a, ifname);
  if (!rc && ifname && !has_mca(o, "oob_tcp_if_include") && !has_mca(o, "oob_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "oob_tcp_if_include") || wr_argv_add(a, ifname);
  /* weft gives mpirun exact counts, so it cannot see an oversubscribed host: tell the
   * ranks to yield the cores while they wait, as it would */
  if (!rc && p->mode == WR_MODE_GPU && p->oversub && !has_mca(o, "mpi_yield_when_idle"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "mpi_yield_when_idle") || wr_argv_add(a, "1");
  return rc;
}

/* Where the ranks go when weft places them. */
static int
gpu_args(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a)
{
  char np[16];
  snprintf(np, sizeof(np), "%d", p->np);
  int rc = wr_argv_add(a, "-np") || wr_argv_add(a, np) || wr_argv_add(a, "--hostfile") ||
         wr_argv_add(a, e->hostfile);
  if (!rc && need_seq(p))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "rmaps") || wr_argv_add(a, "seq");
  else if (!rc)
    rc = wr_argv_add(a, "--map-by") || wr_argv_add(a, p->by_node ? "node" : "slot");
  if (!rc)
    rc = wr_argv_add(a, "--bind-to") || wr_argv_add(a, "none");
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
  int *slots = calloc((size_t)p->nhosts, sizeof(*slots));
  char *layout = NULL, *topo = NULL, *host_topo[WEFT_AGENT_MAX_TOPOLOGY], *slotlist = NULL;
  char policy[512];
  int nhost_topo = 0, rc = WR_EXIT_ENGINE;

  snprintf(why, whylen, "out of memory");
  weft_agent_args_init(&ag);
  if (!slots || !(layout = wr_plan_layout(p)))
    goto out;
  if (strlen(layout) >= WEFT_AGENT_ARG_MAX) {
    snprintf(why, whylen, "the ranks per host of %d hosts take %zu bytes as weft-rank's --layout, "
             "more than the %d one argument may have; give the hosts equal slots", p->nhosts,
             strlen(layout), WEFT_AGENT_ARG_MAX - 1);
    goto out;
  }
  ag.layout = layout;
  ag.by_node = p->by_node;
  if (p->mode == WR_MODE_OMPI) {
    /* Open MPI places and binds: the agents check it, and the policy and every host's
     * slots let each predict its host's bindings (the GPUs go by them) */
    for (int h = 0; h < p->nhosts; h++)
      slots[h] = p->hosts[h].ompi_slots;
    if (!(slotlist = weft_layout_encode(slots, p->nhosts)) ||
        weftx_ompi_policy_format(&p->ompi, policy, sizeof(policy)))
      goto out;
    ag.ompi = policy;
    ag.slots = slotlist;
  } else {
    ag.map_by = o->map_by;
    ag.bind_to = o->bind_to;
    ag.oversubscribe = o->oversubscribe || p->oversub;
  }
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
  if (wr_argv_add(a, e->mpirun) || (p->mode == WR_MODE_GPU && gpu_args(p, o, e, a)))
    goto out;
  for (int app = 0; app < p->napps; app++) {
    const wr_app *ap = &o->apps[app];
    if ((app > 0 && wr_argv_add(a, ":")) || user_words(p, o, app, a) ||
        weft_args(p, o, net, a) || wr_argv_add(a, e->agent) ||
        weft_agent_args_write(&ag, wr_argv_add_cb, a) || wr_argv_add(a, "--"))
      goto out;
    for (int i = 0; i < ap->nprogram; i++)
      if (wr_argv_add(a, ap->program[i]))
        goto out;
  }
  why[0] = '\0';
  rc = 0;
out:
  for (int i = 0; i < nhost_topo; i++)
    free(host_topo[i]);
  free(topo);
  free(layout);
  free(slotlist);
  free(slots);
  return rc;
}
