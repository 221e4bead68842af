/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank: the per-rank agent weftrun starts through its engine (mpirun, or
 * srun). It finds its rank and host from the engine's variables (ids.c) and
 * weftrun's layout, and checks that the engine put it where weftrun planned.
 * Under weft's GPU rule it computes its own placement with weftx_map_rank()
 * on its host's topology, among the GPUs it may have (gpus.c); under Open
 * MPI's layout (--ompi) it predicts its host's bindings with the model of it
 * (weftx_ompi_node_bind()): started by mpirun, which bound it, it reads the
 * binding it was given and checks it against the prediction; started by srun,
 * which has no Open MPI mapper, it takes the prediction as its own. It binds
 * CPU and memory with hwloc when weft binds and the topology is this machine
 * (and only says what it would bind otherwise), and takes the GPU nearest its
 * binding. Then it
 * adds the per-rank environment without overwriting anything the user set,
 * gives the program the OMPI_COMMAND and OMPI_ARGV mpirun would have, and runs
 * it under supervision. With --control it first connects to weftrun's control
 * channel (channel.c) and refuses to run the rank without it; every setup
 * failure goes there too.
 *
 * main() runs these as stages, as weftrun's does: arguments, where (the
 * rank's host), place, environment, run; a stage that fails gives its reason,
 * main() says it once (the failure line, EXITED on the channel), and
 * agent_free() lets go of what the agent holds, whatever stage it reached.
 */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "layout.h"
#include "weft-rank.h"

/* This host's topology: its --topology file, else weftrun's XML of weftrun's own host
 * when this is that host (it saves the probe; binding acts as on a live load), else the
 * live machine (through the per-user cache) or $WEFT_TOPOLOGY as weftx_topo_load()
 * does. A rank needs no GPU model, UUID or memory: the driver is not started for them.
 * \p handed: this process's environment named that XML to hwloc (agent.h), so mpirun's
 * daemon here read it too; on another host that is a daemon that took weftrun's
 * machine for its own, placing and binding from the wrong one: refused. */
static int load_topology(const wt_agent_args *o, int node, int handed, weftx_topo **t, char *why,
                         size_t len)
{
  const char *file = wt_agent_topology_for(o, node), *env = getenv("WEFT_TOPOLOGY");
  int usable = !file && !(env && *env); /* nothing names another file for this host */
  if (o->host_xml && (handed || usable)) {
    char me[256];
    if (gethostname(me, sizeof(me)) == 0 &&
        weftx_topo_load(o->host_xml, WEFTX_TOPO_THIS_SYSTEM | WEFTX_TOPO_NO_DETAILS, t, NULL, 0) ==
          0) {
      me[sizeof(me) - 1] = '\0';
      if (handed && strcmp(weftx_topo_hostname(*t), me)) {
        snprintf(why, len,
                 "mpirun's daemon on %s read weftrun's topology of %s (HWLOC_XMLFILE "
                 "reached it: the launcher that started it passed mpirun's environment on), so "
                 "Open MPI placed this host's ranks on another machine's processors; please "
                 "report it, and set HWLOC_THISSYSTEM=1 for weftrun to have every daemon probe "
                 "its own machine",
                 me, weftx_topo_hostname(*t));
        weftx_topo_destroy(*t);
        *t = NULL;
        return WEFT_EINVAL;
      }
      if (usable && !strcmp(weftx_topo_hostname(*t), me))
        return 0;
      weftx_topo_destroy(*t); /* another host's (a shared $TMPDIR): probe this one */
      *t = NULL;
    }
  }
  return weftx_topo_load(file, WEFTX_TOPO_CACHE | WEFTX_TOPO_NO_DETAILS, t, why, len);
}

/* The rank's cpus, and its memory unless \p mem is 0 (Open MPI's layouts bind no memory). */
static int bind_here(const weftx_topo *t, const weftx_place *pl, int mem, char *note, size_t len)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  if (hwloc_set_cpubind(h, pl->cpuset, HWLOC_CPUBIND_PROCESS)) {
    snprintf(note, len, "cpu binding failed (%s)", strerror(errno));
    return -1;
  }
  hwloc_const_nodeset_t all = hwloc_topology_get_topology_nodeset(h);
  if (mem && !hwloc_bitmap_iszero(pl->nodeset) && !hwloc_bitmap_isequal(pl->nodeset, all) &&
      hwloc_set_membind(h, pl->nodeset, HWLOC_MEMBIND_BIND,
                        HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET)) {
    snprintf(note, len, "memory binding failed (%s)", strerror(errno));
    return -1;
  }
  return 0;
}

/* PLACED: where the rank runs, for weftrun's summaries. */
static void placed_msg(wk_channel *ch, const weftx_topo *t, const weftx_place *pl, const char *gpu)
{
  wt_ctl_out m;
  char *cpus = NULL;
  if (!ch)
    return;
  wt_ctl_begin(&m, WT_CTL_PLACED);
  wt_ctl_put_str(&m, WT_CTL_T_GPU, gpu);
  if (pl->cpuset && hwloc_bitmap_list_asprintf(&cpus, pl->cpuset) >= 0 && cpus)
    wt_ctl_put_str(&m, WT_CTL_T_CPUS, cpus);
  free(cpus);
  if (pl->nic >= 0) {
    const weftx_nic *n = weftx_topo_nic(t, pl->nic);
    if (n)
      wt_ctl_put_str(&m, WT_CTL_T_NIC, n->name);
  }
  wk_channel_send(ch, &m);
}

/* weftrun's layout: each program's ranks per host (';' between programs). */
typedef struct layout {
  int napps, nhosts;
  int *counts; /* napps x nhosts */
} layout;

static int layout_parse(const char *s, layout *l, char *why, size_t len)
{
  int *one = calloc(WT_AGENT_MAX_HOSTS, sizeof(int));
  char *copy = strdup(s), *seg, *save = NULL;
  int rc = -1;
  memset(l, 0, sizeof(*l));
  if (!one || !copy) {
    snprintf(why, len, "out of memory");
    goto out;
  }
  for (seg = strtok_r(copy, ";", &save); seg; seg = strtok_r(NULL, ";", &save)) {
    int n = wt_layout_parse(seg, one, WT_AGENT_MAX_HOSTS), *v;
    if (n < 1 || (l->napps && n != l->nhosts)) {
      snprintf(why, len, "bad --layout '%.200s'", s);
      goto out;
    }
    if (!(v = realloc(l->counts, (size_t)(l->napps + 1) * (size_t)n * sizeof(int)))) {
      snprintf(why, len, "out of memory");
      goto out;
    }
    l->counts = v;
    memcpy(l->counts + (size_t)l->napps * (size_t)n, one, (size_t)n * sizeof(int));
    l->nhosts = n;
    l->napps++;
  }
  rc = l->napps ? 0 : -1;
  if (rc)
    snprintf(why, len, "bad --layout '%.200s'", s);
out:
  free(one);
  free(copy);
  return rc;
}

/* Where rank \p rank is in \p l: its program, host, local rank and the host's ranks. */
static int layout_find(const layout *l, int by_node, int rank, int *app, int *node, int *local,
                       int *lsize)
{
  int first = 0;
  for (int a = 0; a < l->napps; a++) {
    const int *c = l->counts + (size_t)a * (size_t)l->nhosts;
    int total = 0, in_app;
    for (int h = 0; h < l->nhosts; h++)
      total += c[h];
    if (rank >= first + total) {
      first += total;
      continue;
    }
    if ((*node = wt_layout_host(c, l->nhosts, by_node, rank - first, &in_app)) < 0)
      return -1;
    *app = a;
    *local = in_app;
    *lsize = 0;
    for (int b = 0; b < l->napps; b++) {
      int here = l->counts[(size_t)b * (size_t)l->nhosts + (size_t)*node];
      if (b < a)
        *local += here;
      *lsize += here;
    }
    return 0;
  }
  return -1;
}

/* The ranks of each program on host \p node. */
static void layout_here(const layout *l, int node, int *counts)
{
  for (int a = 0; a < l->napps; a++)
    counts[a] = l->counts[(size_t)a * (size_t)l->nhosts + (size_t)node];
}

/* mpirun's --report-bindings line, for a rank weft binds (Open MPI's own format). */
static void report_ompi(const weftx_topo *t, int rank, hwloc_const_cpuset_t set)
{
  char host[256], what[2048], map[2048];
  if (gethostname(host, sizeof(host)))
    snprintf(host, sizeof(host), "unknown");
  host[sizeof(host) - 1] = '\0';
  host[strcspn(host, ".")] = '\0';
  if (weftx_ompi_binding_text(t, set, what, sizeof(what), map, sizeof(map)) == 1)
    fprintf(stderr, "[%s:%05d] MCW rank %d is not bound (or bound to all available processors)\n",
            host, (int)getpid(), rank);
  else
    fprintf(stderr, "[%s:%05d] MCW rank %d bound to %s: %s\n", host, (int)getpid(), rank, what,
            map);
}

/* The command mpirun would have told the program it is (OMPI_COMMAND, OMPI_ARGV): it
 * told weft-rank's instead. Open MPI 4.1 gives the program's base name and no OMPI_ARGV
 * without arguments; Open MPI 5 (which sets OMPI_VERSION 5.x) the word as typed, and an
 * empty OMPI_ARGV. */
static int program_vars(char **program)
{
  const char *version = getenv("OMPI_VERSION");
  int v5 = version && strtol(version, NULL, 10) >= 5;
  char *copy = strdup(program[0]), *args = NULL;
  size_t len = 0;
  FILE *f;
  int rc = !copy || setenv("OMPI_COMMAND", v5 ? program[0] : basename(copy), 1);
  free(copy);
  if (rc)
    return -1;
  if (!program[1])
    return v5 ? setenv("OMPI_ARGV", "", 1) : unsetenv("OMPI_ARGV");
  if (!(f = open_memstream(&args, &len)))
    return -1;
  for (int i = 1; program[i]; i++)
    fprintf(f, "%s%s", i > 1 ? " " : "", program[i]);
  if (fclose(f)) {
    free(args);
    return -1;
  }
  rc = setenv("OMPI_ARGV", args, 1);
  free(args);
  return rc;
}

/* weftrun's probe: this host's topology (live through the per-user cache, or
 * WEFT_TOPOLOGY) as hwloc XML on stdout. */
static int probe(void)
{
  weftx_topo *t = NULL;
  char why[600] = "";
  int rc = weftx_topo_load(NULL, WEFTX_TOPO_CACHE | WEFTX_TOPO_NO_DETAILS, &t, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weft-rank --probe: %s\n", why[0] ? why : weft_strerror(rc));
    return WK_EXIT_SETUP;
  }
  if (weftx_topo_export_xml(t, stdout)) {
    fprintf(stderr, "weft-rank --probe: cannot export the topology as XML\n");
    weftx_topo_destroy(t);
    return WK_EXIT_SETUP;
  }
  wk_gcp_probe_facts(stdout);
  int bad = fflush(stdout) != 0;
  weftx_topo_destroy(t);
  return bad ? WK_EXIT_SETUP : 0;
}

/* weftrun's WELCOME, if there is a channel: 0, or -1 said on stderr (the rank is not
 * to start) */
static int welcomed(wk_channel *ch, const wt_agent_who *who)
{
  char why[600];
  if (!ch || wk_channel_welcomed(ch, why, sizeof(why)) == 0)
    return 0;
  fprintf(stderr, "weft-rank: rank %d host %s: %s; the rank was not started\n", who->rank,
          who->host, why);
  return -1;
}

/* ---- The stages ---------------------------------------------------------- */

/* Everything the agent holds while it sets its rank up; agent_free() is its one way out. */
typedef struct agent {
  wt_agent_args o;
  wt_agent_who who;
  char **program; /* after "--" */
  int handed;     /* this environment named weftrun's XML of this host (agent.h) */
  wk_channel *ch;
  wk_page *page;
  wk_ids ids;
  int have_ids;
  char idwhy[600];
  layout lay;
  int nhosts, node, app; /* weftrun's hosts, this one's index, the rank's program */
  int ompi_bound;        /* mpirun bound the rank to Open MPI's layout */
  weftx_topo *t;
  int live; /* t is this machine's */
  wk_gpus gp;
  wk_gcp *gcp;
  weftx_place pl;
  int placed;
  char why[1200]; /* a setup failure's reason */
} agent;

static void agent_init(agent *g)
{
  memset(g, 0, sizeof(*g));
  wt_agent_args_init(&g->o);
  g->who.rank = -1;
  snprintf(g->who.gpu, sizeof(g->who.gpu), "none");
  if (gethostname(g->who.host, sizeof(g->who.host)))
    snprintf(g->who.host, sizeof(g->who.host), "unknown");
  g->who.host[sizeof(g->who.host) - 1] = '\0';
}

static void agent_free(agent *g)
{
  wk_channel_close(g->ch, weftx_monotonic() + 3.0);
  wk_page_destroy(g->page);
  if (g->placed)
    weftx_place_clear(&g->pl);
  weftx_topo_destroy(g->t);
  free(g->lay.counts);
  wk_gcp_destroy(g->gcp);
}

/* A setup failure: its reason into g->why. -1. */
static int failed(agent *g, const char *fmt, ...) WEFT_PRINTF(2, 3);
static int failed(agent *g, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->why, sizeof(g->why), fmt, ap);
  va_end(ap);
  return -1;
}

/* This rank's numbers and the agent's arguments; weftrun's XML of this host, handed to
 * mpirun (agent.h), gone before hwloc is used here, and from the program's environment. */
static int arguments(agent *g, int argc, char **argv)
{
  char why[600];
  int first = argc;
  g->have_ids = wk_ids_get(&g->ids, g->idwhy, sizeof(g->idwhy)) == 0;
  if (g->have_ids)
    g->who.rank = g->ids.rank;
  if (wt_agent_args_parse(&g->o, argc, argv, &first, why, sizeof(why)))
    return failed(g, "%s", why);
  g->program = argv + first;
  const char *xf = getenv(WT_HWLOC_XMLFILE);
  g->handed = xf && g->o.host_xml && !strcmp(xf, g->o.host_xml);
  if (g->handed && (unsetenv(WT_HWLOC_XMLFILE) || unsetenv(WT_HWLOC_THISSYSTEM)))
    return failed(g, "cannot unset " WT_HWLOC_XMLFILE);
  return 0;
}

/* Which host of weftrun's list this is (the torchrun NODE_RANK), and the engine's
 * placement of the rank checked against weftrun's plan. */
static int where(agent *g)
{
  char why[600];
  int local, plsize;
  if (!g->program[0])
    return failed(g, "no program after '--'");
  if (!g->have_ids)
    return failed(g, "%s", g->idwhy);
  /* mpirun bound the rank to Open MPI's layout; under srun or Hydra nobody did: weft
   * binds it */
  g->ompi_bound = g->o.ompi && !strcmp(g->ids.from, "Open MPI");
  g->nhosts = 1;
  if (!g->o.layout)
    return 0;
  if (layout_parse(g->o.layout, &g->lay, why, sizeof(why)))
    return failed(g, "%s", why);
  g->nhosts = g->lay.nhosts;
  if (layout_find(&g->lay, g->o.by_node, g->ids.rank, &g->app, &g->node, &local, &plsize))
    return failed(g, "rank %d is outside weftrun's layout %s", g->ids.rank, g->o.layout);
  if (local != g->ids.local || plsize != g->ids.lsize)
    return failed(g,
                  "%s placed this rank as local rank %d of %d, weftrun planned %d of %d on "
                  "host %d: weftrun's %s; report this with the weftrun command line (%s "
                  "alone runs it meanwhile)",
                  g->ids.from, g->ids.local, g->ids.lsize, local, plsize, g->node,
                  g->ompi_bound ? "model of Open MPI 4.1's placement is wrong for this job"
                                : "hostfile was not followed",
                  strcmp(g->ids.from, "Hydra") ? "mpirun" : "mpiexec.hydra");
  return 0;
}

/* Open MPI's binding of this rank against the model's prediction \p want: GPUs go by the
 * prediction every rank shares, so on a host with GPUs a difference is a failure; else a
 * warning. -1 with g->why, or 0. */
static int ompi_mismatch(agent *g, const weftx_ompi_bound *b, hwloc_const_cpuset_t real,
                         hwloc_const_cpuset_t want)
{
  int gpus[1024], anygpu = 0, lsize = g->ids.lsize;
  char r1[160], r2[160];
  weftx_cpuset_format(real, r1, sizeof(r1));
  weftx_cpuset_format(want, r2, sizeof(r2));
  if (lsize <= 1024 && weftx_ompi_gpus(g->t, b, lsize, gpus) == 0)
    for (int i = 0; i < lsize; i++)
      anygpu |= gpus[i] >= 0;
  if (anygpu)
    return failed(g,
                  "Open MPI bound this rank to cpus %s, weftrun's model of Open MPI said %s, "
                  "and the GPUs of this host go by that model; report this with the weftrun "
                  "command line (--map-by gpu gives every rank its own GPU meanwhile)",
                  r1, r2);
  fprintf(stderr,
          "weft-rank: rank %d host %s: warning: Open MPI bound it to cpus %s, "
          "weftrun's plan (--dry-run) said %s; report this with the weftrun command line\n",
          g->ids.rank, g->who.host, r1, r2);
  return 0;
}

/* Open MPI's layout: its bindings on this host predicted with the model; mpirun's
 * binding (what the rank really has) is checked against the prediction, srun's rank
 * takes it; the GPU nearest goes by the prediction every rank shares. */
static int place_ompi(agent *g)
{
  weftx_ompi_policy op;
  weftx_ompi_bound *b = NULL;
  int lrank = g->ids.local, lsize = g->ids.lsize, rc = 0, mismatch = 0, err;
  int *here = calloc((size_t)g->lay.napps + 1, sizeof(int));
  int *slots = calloc(WT_AGENT_MAX_HOSTS, sizeof(int));
  hwloc_bitmap_t real = hwloc_bitmap_alloc();
  char why[600] = "";

  if (!here || !slots || !real || !(b = calloc((size_t)lsize, sizeof(*b)))) {
    rc = failed(g, "out of memory");
    goto out;
  }
  if (weftx_ompi_policy_parse(g->o.ompi, &op) || !g->o.slots ||
      wt_layout_parse(g->o.slots, slots, WT_AGENT_MAX_HOSTS) != g->nhosts) {
    rc = failed(g, "bad --ompi '%s' or --slots '%s'", g->o.ompi, g->o.slots ? g->o.slots : "");
    goto out;
  }
  layout_here(&g->lay, g->node, here);
  err = weftx_ompi_node_bind(g->t, &op, slots[g->node], here, g->lay.napps, b, why, sizeof(why));
  if (!err && g->ompi_bound && g->live &&
      hwloc_get_cpubind(weftx_topo_hwloc(g->t), real, HWLOC_CPUBIND_PROCESS) == 0)
    mismatch = !hwloc_bitmap_isequal(real, b[lrank].cpuset) &&
               !(!b[lrank].bound && hwloc_bitmap_isincluded(weftx_topo_cpuset(g->t), real));
  else
    hwloc_bitmap_copy(real, b[lrank].cpuset);
  if (!err && mismatch && (rc = ompi_mismatch(g, b, real, b[lrank].cpuset)))
    goto out;
  if (!err)
    err = weftx_ompi_place(g->t, &op, b, lsize, lrank, g->ompi_bound && g->live ? real : NULL,
                           wk_gpus_policy(&g->gp), &g->pl);
  if (err)
    rc = failed(g, "%s", why[0] ? why : weft_strerror(err));
  else
    g->placed = 1;
out:
  weftx_ompi_bound_clear(b, lsize);
  free(b);
  free(here);
  free(slots);
  hwloc_bitmap_free(real);
  return rc;
}

/* weft's GPU rule: one rank per GPU, bound next to it. */
static int place_gpu(agent *g)
{
  weftx_policy pol;
  char why[600] = "";
  int err;
  memset(&pol, 0, sizeof(pol));
  if ((err = weftx_policy_parse(&pol, g->o.map_by, g->o.bind_to, why, sizeof(why))))
    return failed(g, "%s", why[0] ? why : weft_strerror(err));
  if (g->o.oversubscribe)
    pol.oversubscribe = 1;
  pol.reserved_cpus = wk_gcp_reserved_cpus(g->gcp);
  pol.gpus = wk_gpus_policy(&g->gp);
  if ((err = weftx_map_rank(g->t, &pol, g->ids.local, g->ids.lsize, &g->pl, why, sizeof(why))))
    return failed(g, "%s", why[0] ? why : weft_strerror(err));
  g->placed = 1;
  return 0;
}

/* This host's topology and the rank's place on it; the rank bound when weft binds it
 * (the GPU rule, or Open MPI's layout under srun), or what it would bind said; where it
 * runs told to weftrun and, with --report-bindings, to the user. */
static int place(agent *g)
{
  char why[600] = "", note[160] = "";
  int err, rank = g->ids.rank;
  if ((err = load_topology(&g->o, g->node, g->handed, &g->t, why, sizeof(why))))
    return failed(g, "%s", why[0] ? why : weft_strerror(err));
  if (wk_gpus_prepare(&g->gp, g->o.gpus, g->node, why, sizeof(why)))
    return failed(g, "%s", why);
  if ((err = wk_gcp_prepare(g->o.nccl_preset, g->nhosts, g->ids.local, &g->who, &g->gcp, why,
                            sizeof(why))))
    return failed(g, "--nccl-preset: %s", why[0] ? why : weft_strerror(err));
  g->live = weftx_topo_is_live(g->t);
  if (g->o.ompi ? place_ompi(g) : place_gpu(g))
    return -1;
  const weftx_place *pl = &g->pl;
  int ompi_bound = g->ompi_bound, live = g->live;
  if (!ompi_bound && pl->bound && live)
    bind_here(g->t, pl, !g->o.ompi, note, sizeof(note));
  if (!ompi_bound && g->o.report_bindings && pl->bound && live && !note[0])
    report_ompi(g->t, rank, pl->cpuset);
  if (pl->gpu >= 0) {
    const weftx_gpu *gpu = weftx_topo_gpu(g->t, pl->gpu);
    snprintf(g->who.gpu, sizeof(g->who.gpu), "%d (%s)", pl->gpu, gpu ? gpu->pci : "?");
  }
  placed_msg(g->ch, g->t, pl, g->who.gpu);
  /* --monitor's NIC: the rank's own, else the job's interface */
  const weftx_nic *nic = pl->nic >= 0 ? weftx_topo_nic(g->t, pl->nic) : NULL;
  const weftx_gpu *gpu = pl->gpu >= 0 ? weftx_topo_gpu(g->t, pl->gpu) : NULL;
  wk_supervise_set_monitor(g->ch ? (double)g->o.monitor_ms / 1000.0 : 0,
                           nic ? nic->name : g->o.ifname, gpu ? pl->gpu : -1, gpu ? gpu->pci : NULL,
                           g->o.monitor_prom, g->o.job);
  /* weft's line: where the rank's GPU and NIC are (Open MPI's line says the binding) */
  if (g->o.report_bindings && (!ompi_bound || pl->gpu >= 0)) {
    char line[600];
    if (weftx_place_format(g->t, g->who.host, rank, pl, line, sizeof(line)) == 0)
      fprintf(stderr, "[weft] %s%s%s%s\n", line,
              ompi_bound   ? " (bound by Open MPI)"
              : !pl->bound ? " (not bound)"
              : live       ? (note[0] ? " (" : " (bound)")
                           : " (not bound: topology from ",
              ompi_bound || !pl->bound ? ""
              : live                   ? note
                                       : weftx_topo_source(g->t),
              !ompi_bound && pl->bound && (!live || note[0]) ? ")" : "");
  } else if (note[0]) {
    fprintf(stderr, "weft-rank: rank %d host %s: warning: %s; running unbound\n", rank, g->who.host,
            note);
  }
  return 0;
}

/* The per-rank environment: the user's variables first, weft's only where unset; then
 * the topology and the place are let go (the program may run for days). */
static int environment(agent *g)
{
  extern char **environ;
  weftx_rank_info ri;
  weftx_env *env = NULL;
  char why[600] = "";
  int err = 0, rc = 0;

  /* what mpirun tells a program; an MPICH program under Hydra gets Hydra's alone */
  if (strcmp(g->ids.from, "Hydra") && program_vars(g->program))
    return failed(g, "out of memory");
  weftx_topo_env_restore();
  weftx_rank_info_init(&ri);
  ri.rank = g->ids.rank;
  ri.size = g->ids.size;
  ri.local_rank = g->ids.local;
  ri.local_size = g->ids.lsize;
  ri.node_rank = g->node;
  ri.nnodes = g->nhosts;
  ri.master_addr = g->o.master_addr;
  ri.master_port = (int)g->o.master_port;
  ri.run_id = getenv("WEFT_JOB_ID");               /* weftrun's job, the same on every host */
  ri.restart_count = getenv("WEFT_RESTART_COUNT"); /* weftrun's restarts (weftrun(1) RESTARTS) */
  ri.max_restarts = getenv("WEFT_MAX_RESTARTS");
  ri.ifname = g->o.ifname;
  if (g->o.gpu_visibility && weftx_gpu_visibility_parse(g->o.gpu_visibility, &ri.gpu_visibility))
    rc = failed(g, "bad --gpu-visibility '%s'", g->o.gpu_visibility);
  else if ((err = weftx_rank_info_set_place(&ri, g->t, &g->pl)))
    rc = failed(g, "placement does not fit the environment: %s", weft_strerror(err));
  else if (weftx_env_create(&env) || weftx_env_import(env, environ, WEFTX_ENV_USER))
    rc = failed(g, "out of memory");
  else if ((err = wk_gcp_apply(g->gcp, env, why, sizeof(why))))
    rc = failed(g, "%s", why[0] ? why : weft_strerror(err));
  else if (wk_gpus_apply(&g->gp, &g->pl, &ri, env, ri.gpu_visibility, why, sizeof(why)))
    rc = failed(g, "%s", why);
  else if ((err = weftx_rank_env(env, &ri, why, sizeof(why))))
    rc = failed(g, "%s", why[0] ? why : weft_strerror(err));
  else if ((err = weftx_env_apply(env)))
    rc = failed(g, "cannot set the environment: %s", weft_strerror(err));
  weftx_env_destroy(env);
  if (rc)
    return rc;
  weftx_place_clear(&g->pl);
  g->placed = 0;
  weftx_topo_destroy(g->t);
  g->t = NULL;
  return 0;
}

/* The program, once weftrun has welcomed the agent, under supervision: its exit code. */
static int run(agent *g)
{
  wk_output *output = NULL;
  char why[600];
  if (welcomed(g->ch, &g->who))
    return WK_EXIT_SETUP;
  const char *ompi_v = getenv("OMPI_VERSION");
  if (g->o.lines && !(ompi_v && strtol(ompi_v, NULL, 10) >= 5)) {
    /* what mpirun 4.1 tells its ranks of the options the agent carries out for it (a
     * variable the user set stays; Open MPI 5 sets none) */
    if ((g->o.tag_output && setenv("OMPI_MCA_orte_tag_output", "1", 0)) ||
        (g->o.timestamp_output && setenv("OMPI_MCA_orte_timestamp_output", "1", 0)) ||
        (g->o.output_filename && setenv("OMPI_MCA_orte_output_filename", g->o.output_filename, 0)))
      return wk_setup_failed(g->ch, &g->who, "out of memory", WK_EXIT_SETUP);
  }
  if ((g->o.output_filename || g->o.lines) &&
      wk_output_start(&g->o, g->ids.rank, &output, why, sizeof(why)))
    return wk_setup_failed(g->ch, &g->who, why, WK_EXIT_SETUP);
  wk_supervise_set_grace(g->o.preempt_grace >= 0 ? g->o.preempt_grace : WEFTX_PREEMPT_GRACE_S);
  wk_gcp_watch_start(g->gcp);
  int rc = wk_gcp_watch_stop(g->gcp, wk_supervise(g->program, &g->who, g->ch, g->page));
  wk_output_finish(output);
  return rc;
}

int main(int argc, char **argv)
{
  agent g;
  int rc;

  agent_init(&g);
  if (weft_check_version(stderr, argv[0]))
    return WK_EXIT_SETUP;
  rc = arguments(&g, argc, argv);
  if (!rc && g.o.help) {
    fputs("Usage: weft-rank [options] -- PROGRAM [ARGS]\n", stdout);
    wt_opt_help(stdout, wt_agent_options);
    return 0;
  }
  if (!rc && g.o.probe)
    return probe();
  /* weftrun's control channel before anything else: no rank runs unsupervised when
   * supervision was asked for (its WELCOME is waited for just before the rank starts) */
  if (!rc && g.o.control && wk_channel_open(&g.ch, g.o.control, &g.who, g.why, sizeof(g.why))) {
    fprintf(stderr, "weft-rank: rank %d host %s: %s; the rank was not started\n", g.who.rank,
            g.who.host, g.why);
    return WK_EXIT_SETUP;
  }
  if (!rc && !g.o.control)
    wk_channel_scrub();
  if (!rc && g.ch && wk_page_create(&g.page, g.why, sizeof(g.why)))
    rc = -1;
  if (!rc && g.o.check)
    return welcomed(g.ch, &g.who) ? WK_EXIT_SETUP : wk_check(&g.o, g.program);

  /* the rank: where it is, its place on this host, its environment, then the program */
  if (!rc)
    rc = where(&g);
  if (!rc)
    rc = place(&g);
  if (!rc)
    rc = environment(&g);
  rc = rc ? wk_setup_failed(g.ch, &g.who, g.why, WK_EXIT_SETUP) : run(&g);
  agent_free(&g);
  return rc;
}
