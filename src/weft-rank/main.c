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
 */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "weft-rank.h"

/* This host's topology: its --topology file, else weftrun's XML of weftrun's own host
 * when this is that host (it saves the probe; binding acts as on a live load), else the
 * live machine (through the per-user cache) or $WEFT_TOPOLOGY as weftx_topo_load()
 * does. A rank needs no GPU model, UUID or memory: the driver is not started for them.
 * \p handed: this process's environment named that XML to hwloc (agent.h), so mpirun's
 * daemon here read it too; on another host that is a daemon that took weftrun's
 * machine for its own, placing and binding from the wrong one: refused. */
static int
load_topology(const weft_agent_args *o, int node, int handed, weftx_topo **t, char *why,
              size_t len)
{
  const char *file = weft_agent_topology_for(o, node), *env = getenv("WEFT_TOPOLOGY");
  int usable = !file && !(env && *env); /* nothing names another file for this host */
  if (o->host_xml && (handed || usable)) {
    char me[256];
    if (gethostname(me, sizeof(me)) == 0 &&
        weftx_topo_load(o->host_xml, WEFTX_TOPO_THIS_SYSTEM | WEFTX_TOPO_NO_DETAILS, t, NULL,
                        0) == 0) {
      me[sizeof(me) - 1] = '\0';
      if (handed && strcmp(weftx_topo_hostname(*t), me)) {
        snprintf(why, len, "mpirun's daemon on %s read weftrun's topology of %s (HWLOC_XMLFILE "
                 "reached it: the launcher that started it passed mpirun's environment on), so "
                 "Open MPI placed this host's ranks on another machine's processors; please "
                 "report it, and set HWLOC_THISSYSTEM=1 for weftrun to have every daemon probe "
                 "its own machine", me, weftx_topo_hostname(*t));
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

#define FAIL(...)                                                                      \
  do {                                                                                 \
    char msg_[1200];                                                                    \
    snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                         \
    rc = wk_setup_failed(ch, &who, msg_, WK_EXIT_SETUP);                               \
    goto out;                                                                          \
  } while (0)

/* The rank's cpus, and its memory unless \p mem is 0 (Open MPI's layouts bind no memory). */
static int
bind_here(const weftx_topo *t, const weftx_place *pl, int mem, char *note, size_t len)
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
static void
placed_msg(wk_channel *ch, const weftx_topo *t, const weftx_place *pl, const char *gpu)
{
  weft_ctl_out m;
  char *cpus = NULL;
  if (!ch)
    return;
  weft_ctl_begin(&m, WEFT_CTL_PLACED);
  weft_ctl_put_str(&m, WEFT_CTL_T_GPU, gpu);
  if (pl->cpuset && hwloc_bitmap_list_asprintf(&cpus, pl->cpuset) >= 0 && cpus)
    weft_ctl_put_str(&m, WEFT_CTL_T_CPUS, cpus);
  free(cpus);
  if (pl->nic >= 0) {
    const weftx_nic *n = weftx_topo_nic(t, pl->nic);
    if (n)
      weft_ctl_put_str(&m, WEFT_CTL_T_NIC, n->name);
  }
  wk_channel_send(ch, &m);
}

/* weftrun's layout: each program's ranks per host (';' between programs). */
typedef struct layout {
  int napps, nhosts;
  int *counts;                  /* napps x nhosts */
} layout;

static int
layout_parse(const char *s, layout *l, char *why, size_t len)
{
  int *one = calloc(WEFT_AGENT_MAX_HOSTS, sizeof(int));
  char *copy = strdup(s), *seg, *save = NULL;
  int rc = -1;
  memset(l, 0, sizeof(*l));
  if (!one || !copy) {
    snprintf(why, len, "out of memory");
    goto out;
  }
  for (seg = strtok_r(copy, ";", &save); seg; seg = strtok_r(NULL, ";", &save)) {
    int n = weft_layout_parse(seg, one, WEFT_AGENT_MAX_HOSTS), *v;
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
static int
layout_find(const layout *l, int by_node, int rank, int *app, int *node, int *local, int *lsize)
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
    if ((*node = weft_layout_host(c, l->nhosts, by_node, rank - first, &in_app)) < 0)
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
static void
layout_here(const layout *l, int node, int *counts)
{
  for (int a = 0; a < l->napps; a++)
    counts[a] = l->counts[(size_t)a * (size_t)l->nhosts + (size_t)node];
}

/* mpirun's --report-bindings line, for a rank weft binds (Open MPI's own format). */
static void
report_ompi(const weftx_topo *t, int rank, hwloc_const_cpuset_t set)
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
 * told weft-rank's instead. */
static int
program_vars(char **program)
{
  char *copy = strdup(program[0]), *args = NULL;
  size_t len = 0;
  FILE *f;
  int rc = !copy || setenv("OMPI_COMMAND", basename(copy), 1);
  free(copy);
  if (rc)
    return -1;
  if (!program[1])
    return unsetenv("OMPI_ARGV");
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
static int
probe(void)
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
static int
welcomed(wk_channel *ch, const weft_agent_who *who)
{
  char why[600];
  if (!ch || wk_channel_welcomed(ch, why, sizeof(why)) == 0)
    return 0;
  fprintf(stderr, "weft-rank: rank %d host %s: %s; the rank was not started\n", who->rank,
          who->host, why);
  return -1;
}

int
main(int argc, char **argv)
{
  weft_agent_args o;
  weft_agent_who who;
  weftx_topo *t = NULL;
  weftx_env *env = NULL;
  wk_gcp *gcp = NULL;
  wk_channel *ch = NULL;
  wk_page *page = NULL;
  weftx_place pl;
  wk_ids ids;
  wk_gpus gp;
  wk_output *output = NULL;
  int placed = 0, rc = 0, first = argc;
  char why[600] = "", idwhy[600] = "";
  layout lay;

  memset(&lay, 0, sizeof(lay));
  weft_agent_args_init(&o);
  memset(&pl, 0, sizeof(pl));
  who.rank = -1;
  snprintf(who.gpu, sizeof(who.gpu), "none");
  if (gethostname(who.host, sizeof(who.host)))
    snprintf(who.host, sizeof(who.host), "unknown");
  who.host[sizeof(who.host) - 1] = '\0';
  if (weft_check_version(stderr, argv[0]))
    return WK_EXIT_SETUP;
  int have_ids = wk_ids_get(&ids, idwhy, sizeof(idwhy)) == 0;
  if (have_ids)
    who.rank = ids.rank;
  if (weft_agent_args_parse(&o, argc, argv, &first, why, sizeof(why)))
    FAIL("%s", why);
  /* weftrun's XML of this host, handed to mpirun (agent.h): gone before hwloc is used
   * here, and from the program's environment */
  const char *xf = getenv(WEFT_HWLOC_XMLFILE);
  int handed = xf && o.host_xml && !strcmp(xf, o.host_xml);
  if (handed && (unsetenv(WEFT_HWLOC_XMLFILE) || unsetenv(WEFT_HWLOC_THISSYSTEM)))
    FAIL("cannot unset " WEFT_HWLOC_XMLFILE);
  if (o.help) {
    fputs("Usage: weft-rank [options] -- PROGRAM [ARGS]\n", stdout);
    weft_opt_help(stdout, weft_agent_options);
    return 0;
  }
  if (o.probe)
    return probe();
  /* weftrun's control channel before anything else: no rank runs unsupervised when
   * supervision was asked for (its WELCOME is waited for just before the rank starts) */
  if (o.control) {
    if (wk_channel_open(&ch, o.control, &who, why, sizeof(why))) {
      fprintf(stderr, "weft-rank: rank %d host %s: %s; the rank was not started\n", who.rank,
              who.host, why);
      return WK_EXIT_SETUP;
    }
    if (wk_page_create(&page, why, sizeof(why)))
      FAIL("%s", why);
  } else {
    wk_channel_scrub();
  }
  char **program = argv + first;
  if (o.check)
    return welcomed(ch, &who) ? WK_EXIT_SETUP : wk_check(&o, program);
  if (!program[0])
    FAIL("no program after '--'");

  if (!have_ids)
    FAIL("%s", idwhy);
  int rank = ids.rank, size = ids.size, lrank = ids.local, lsize = ids.lsize;
  /* mpirun bound the rank to Open MPI's layout; under srun nobody did: weft binds it */
  int ompi_bound = o.ompi && strcmp(ids.from, "srun");

  /* which host of weftrun's list this is (the torchrun NODE_RANK), and Open MPI's
   * placement checked against weftrun's plan */
  int nhosts = 1, node = 0, local = lrank, app = 0, plsize = lsize;
  if (o.layout) {
    if (layout_parse(o.layout, &lay, why, sizeof(why)))
      FAIL("%s", why);
    nhosts = lay.nhosts;
    if (layout_find(&lay, o.by_node, rank, &app, &node, &local, &plsize))
      FAIL("rank %d is outside weftrun's layout %s", rank, o.layout);
    if (local != lrank || plsize != lsize)
      FAIL("%s placed this rank as local rank %d of %d, weftrun planned %d of %d on host "
           "%d: weftrun's %s; report this with the weftrun command line (mpirun alone runs "
           "it meanwhile)", ids.from, lrank, lsize, local, plsize, node,
           ompi_bound ? "model of Open MPI 4.1's placement is wrong for this job"
                      : "hostfile was not followed");
  }

  /* this host's topology and the rank's place on it */
  if ((rc = load_topology(&o, node, handed, &t, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  if (wk_gpus_prepare(&gp, o.gpus, node, why, sizeof(why)))
    FAIL("%s", why);
  if ((rc = wk_gcp_prepare(o.nccl_preset, nhosts, lrank, &who, &gcp, why, sizeof(why))))
    FAIL("--nccl-preset: %s", why[0] ? why : weft_strerror(rc));
  char note[160] = "";
  int live = weftx_topo_is_live(t);
  if (o.ompi) {
    /* Open MPI's layout: predict its bindings on this host; mpirun's binding (what the
     * rank really has) is checked against it, srun's rank takes it; the GPU nearest goes
     * by the prediction every rank shares */
    weftx_ompi_policy op;
    weftx_ompi_bound *b = NULL;
    int *here = calloc((size_t)lay.napps + 1, sizeof(int)), *slots = NULL, mismatch = 0;
    hwloc_bitmap_t real = hwloc_bitmap_alloc();
    if (!here || !real || !(slots = calloc(WEFT_AGENT_MAX_HOSTS, sizeof(int))) ||
        !(b = calloc((size_t)lsize, sizeof(*b)))) {
      free(here);
      free(slots);
      free(b);
      hwloc_bitmap_free(real);
      FAIL("out of memory");
    }
    if (weftx_ompi_policy_parse(o.ompi, &op) || !o.slots ||
        weft_layout_parse(o.slots, slots, WEFT_AGENT_MAX_HOSTS) != nhosts) {
      free(here);
      free(slots);
      free(b);
      hwloc_bitmap_free(real);
      FAIL("bad --ompi '%s' or --slots '%s'", o.ompi, o.slots ? o.slots : "");
    }
    layout_here(&lay, node, here);
    rc = weftx_ompi_node_bind(t, &op, slots[node], here, lay.napps, b, why, sizeof(why));
    if (!rc && ompi_bound && live &&
        hwloc_get_cpubind(weftx_topo_hwloc(t), real, HWLOC_CPUBIND_PROCESS) == 0)
      mismatch = !hwloc_bitmap_isequal(real, b[lrank].cpuset) &&
                 !(!b[lrank].bound && hwloc_bitmap_isincluded(weftx_topo_cpuset(t), real));
    else
      hwloc_bitmap_copy(real, b[lrank].cpuset);
    if (!rc && mismatch) {
      int gpus[1024], anygpu = 0;
      char r1[160], r2[160];
      weftx_cpuset_format(real, r1, sizeof(r1));
      weftx_cpuset_format(b[lrank].cpuset, r2, sizeof(r2));
      if (lsize <= 1024 && weftx_ompi_gpus(t, b, lsize, gpus) == 0)
        for (int i = 0; i < lsize; i++)
          anygpu |= gpus[i] >= 0;
      if (anygpu) {
        weftx_ompi_bound_clear(b, lsize);
        free(b);
        free(here);
        free(slots);
        hwloc_bitmap_free(real);
        FAIL("Open MPI bound this rank to cpus %s, weftrun's model of Open MPI said %s, and the "
             "GPUs of this host go by that model; report this with the weftrun command line "
             "(--map-by gpu gives every rank its own GPU meanwhile)", r1, r2);
      }
      fprintf(stderr, "weft-rank: rank %d host %s: warning: Open MPI bound it to cpus %s, "
              "weftrun's plan (--dry-run) said %s; report this with the weftrun command line\n",
              rank, who.host, r1, r2);
    }
    if (!rc)
      rc = weftx_ompi_place(t, &op, b, lsize, lrank, ompi_bound && live ? real : NULL,
                            wk_gpus_policy(&gp), &pl);
    weftx_ompi_bound_clear(b, lsize);
    free(b);
    free(here);
    free(slots);
    hwloc_bitmap_free(real);
    if (rc)
      FAIL("%s", why[0] ? why : weft_strerror(rc));
    placed = 1;
  } else {
    weftx_policy pol;
    memset(&pol, 0, sizeof(pol));
    if ((rc = weftx_policy_parse(&pol, o.map_by, o.bind_to, why, sizeof(why))))
      FAIL("%s", why[0] ? why : weft_strerror(rc));
    if (o.oversubscribe)
      pol.oversubscribe = 1;
    pol.reserved_cpus = wk_gcp_reserved_cpus(gcp);
    pol.gpus = wk_gpus_policy(&gp);
    if ((rc = weftx_map_rank(t, &pol, lrank, lsize, &pl, why, sizeof(why))))
      FAIL("%s", why[0] ? why : weft_strerror(rc));
    placed = 1;
  }
  /* weft binds (the GPU rule, or Open MPI's layout under srun), or says what it would */
  if (!ompi_bound && pl.bound && live)
    bind_here(t, &pl, !o.ompi, note, sizeof(note));
  if (!ompi_bound && o.report_bindings && pl.bound && live && !note[0])
    report_ompi(t, rank, pl.cpuset);
  if (pl.gpu >= 0) {
    const weftx_gpu *g = weftx_topo_gpu(t, pl.gpu);
    snprintf(who.gpu, sizeof(who.gpu), "%d (%s)", pl.gpu, g ? g->pci : "?");
  }
  placed_msg(ch, t, &pl, who.gpu);
  /* --monitor's NIC: the rank's own, else the job's interface */
  const weftx_nic *nic = pl.nic >= 0 ? weftx_topo_nic(t, pl.nic) : NULL;
  const weftx_gpu *gpu = pl.gpu >= 0 ? weftx_topo_gpu(t, pl.gpu) : NULL;
  wk_supervise_set_monitor(ch ? (double)o.monitor_ms / 1000.0 : 0, nic ? nic->name : o.ifname,
                           gpu ? pl.gpu : -1, gpu ? gpu->pci : NULL, o.monitor_prom, o.job);

  /* weft's line: where the rank's GPU and NIC are (Open MPI's line says the binding) */
  if (o.report_bindings && (!ompi_bound || pl.gpu >= 0)) {
    char line[600];
    if (weftx_place_format(t, who.host, rank, &pl, line, sizeof(line)) == 0)
      fprintf(stderr, "[weft] %s%s%s%s\n", line,
              ompi_bound ? " (bound by Open MPI)" : !pl.bound ? " (not bound)" :
              live ? (note[0] ? " (" : " (bound)") : " (not bound: topology from ",
              ompi_bound || !pl.bound ? "" : live ? note : weftx_topo_source(t),
              !ompi_bound && pl.bound && (!live || note[0]) ? ")" : "");
  } else if (note[0]) {
    fprintf(stderr, "weft-rank: rank %d host %s: warning: %s; running unbound\n", rank, who.host,
            note);
  }
  if (program_vars(program))
    FAIL("out of memory");
  weftx_topo_env_restore();

  /* the per-rank environment: the user's variables first, weft's only where unset */
  weftx_rank_info ri;
  weftx_rank_info_init(&ri);
  ri.rank = rank;
  ri.size = size;
  ri.local_rank = lrank;
  ri.local_size = lsize;
  ri.node_rank = node;
  ri.nnodes = nhosts;
  ri.master_addr = o.master_addr;
  ri.master_port = (int)o.master_port;
  ri.ifname = o.ifname;
  if (o.gpu_visibility && weftx_gpu_visibility_parse(o.gpu_visibility, &ri.gpu_visibility))
    FAIL("bad --gpu-visibility '%s'", o.gpu_visibility);
  if ((rc = weftx_rank_info_set_place(&ri, t, &pl)))
    FAIL("placement does not fit the environment: %s", weft_strerror(rc));
  extern char **environ;
  if ((rc = weftx_env_create(&env)) || (rc = weftx_env_import(env, environ, WEFTX_ENV_USER)))
    FAIL("out of memory");
  if ((rc = wk_gcp_apply(gcp, env, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  if (wk_gpus_apply(&gp, &pl, &ri, env, ri.gpu_visibility, why, sizeof(why)))
    FAIL("%s", why);
  if ((rc = weftx_rank_env(env, &ri, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  if ((rc = weftx_env_apply(env)))
    FAIL("cannot set the environment: %s", weft_strerror(rc));
  weftx_env_destroy(env);
  env = NULL;
  weftx_place_clear(&pl);
  placed = 0;
  weftx_topo_destroy(t);
  t = NULL;

  if (welcomed(ch, &who)) {
    rc = WK_EXIT_SETUP;
    goto out;
  }
  if (o.output_filename && wk_output_start(o.output_filename, rank, &output, why, sizeof(why)))
    FAIL("%s", why);
  wk_supervise_set_grace(o.preempt_grace >= 0 ? o.preempt_grace : WEFTX_PREEMPT_GRACE_S);
  wk_gcp_watch_start(gcp);
  rc = wk_gcp_watch_stop(gcp, wk_supervise(program, &who, ch, page));
  wk_output_finish(output);
out:
  wk_channel_close(ch, weftx_monotonic() + 3.0);
  wk_page_destroy(page);
  if (placed)
    weftx_place_clear(&pl);
  weftx_env_destroy(env);
  weftx_topo_destroy(t);
  free(lay.counts);
  wk_gcp_destroy(gcp);
  return rc;
}
