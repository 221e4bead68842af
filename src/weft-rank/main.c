/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank: the per-rank agent weftrun starts through its engine (mpirun, or
 * srun). It finds its rank and host from the engine's variables (ids.c) and
 * weftrun's layout, computes its own placement with weftx_map_rank() on its
 * host's topology, among the GPUs it may have (gpus.c), binds CPU and memory
 * with hwloc when that topology is this machine (and only says what it would
 * bind otherwise), adds the per-rank environment without overwriting anything
 * the user set, and runs the program under supervision. With --control it
 * first connects to weftrun's control channel (channel.c) and refuses to run
 * the rank without it; every setup failure goes there too.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "weft-rank.h"

/* This host's topology: its --topology file, else weftrun's XML of weftrun's own host
 * when this is that host (it saves the probe; binding acts as on a live load), else the
 * live machine (through the per-user cache) or $WEFT_TOPOLOGY as weftx_topo_load()
 * does. A rank needs no GPU model, UUID or memory: the driver is not started for them. */
static int
load_topology(const weft_agent_args *o, int node, weftx_topo **t, char *why, size_t len)
{
  const char *file = weft_agent_topology_for(o, node), *env = getenv("WEFT_TOPOLOGY");
  if (!file && o->host_xml && !(env && *env)) {
    char me[256];
    if (gethostname(me, sizeof(me)) == 0 &&
        weftx_topo_load(o->host_xml, WEFTX_TOPO_THIS_SYSTEM | WEFTX_TOPO_NO_DETAILS, t, NULL,
                        0) == 0) {
      me[sizeof(me) - 1] = '\0';
      if (!strcmp(weftx_topo_hostname(*t), me))
        return 0;
      weftx_topo_destroy(*t); /* another host's (a shared $TMPDIR): probe this one */
      *t = NULL;
    }
  }
  return weftx_topo_load(file, WEFTX_TOPO_CACHE | WEFTX_TOPO_NO_DETAILS, t, why, len);
}

#define FAIL(...)                                                                      \
  do {                                                                                 \
    char msg_[600];                                                                    \
    snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                         \
    rc = wk_setup_failed(ch, &who, msg_, WK_EXIT_SETUP);                               \
    goto out;                                                                          \
  } while (0)

static int
bind_here(const weftx_topo *t, const weftx_place *pl, char *note, size_t len)
{
  hwloc_topology_t h = weftx_topo_hwloc(t);
  if (hwloc_set_cpubind(h, pl->cpuset, HWLOC_CPUBIND_PROCESS)) {
    snprintf(note, len, "cpu binding failed (%s)", strerror(errno));
    return -1;
  }
  hwloc_const_nodeset_t all = hwloc_topology_get_topology_nodeset(h);
  if (!hwloc_bitmap_iszero(pl->nodeset) && !hwloc_bitmap_isequal(pl->nodeset, all) &&
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
  int *counts = NULL;

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
  if (o.help) {
    fputs("Usage: weft-rank [options] -- PROGRAM [ARGS]\n", stdout);
    weft_opt_help(stdout, weft_agent_options);
    return 0;
  }
  if (o.probe)
    return probe();
  /* weftrun's control channel before anything else: no rank runs unsupervised when
   * supervision was asked for */
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
    return wk_check(&o, program);
  if (!program[0])
    FAIL("no program after '--'");

  if (!have_ids)
    FAIL("%s", idwhy);
  int rank = ids.rank, size = ids.size, lrank = ids.local, lsize = ids.lsize;

  /* which host of weftrun's list this is: the torchrun NODE_RANK */
  int nhosts = 1, node = 0, local = lrank;
  if (o.layout) {
    if (!(counts = calloc(WEFT_AGENT_MAX_HOSTS, sizeof(int))))
      FAIL("out of memory");
    nhosts = weft_layout_parse(o.layout, counts, WEFT_AGENT_MAX_HOSTS);
    if (nhosts < 1)
      FAIL("bad --layout '%s'", o.layout);
    node = weft_layout_host(counts, nhosts, o.by_node, rank, &local);
    if (node < 0)
      FAIL("rank %d is outside weftrun's layout %s", rank, o.layout);
    if (local != lrank || counts[node] != lsize)
      FAIL("%s placed this rank as local rank %d of %d, weftrun planned %d of %d on host "
           "%d; report this with the weftrun command line", ids.from, lrank, lsize, local,
           counts[node], node);
  }

  /* this host's topology and the rank's place on it */
  if ((rc = load_topology(&o, node, &t, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  weftx_policy pol;
  memset(&pol, 0, sizeof(pol));
  if ((rc = weftx_policy_parse(&pol, o.map_by, o.bind_to, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  if (o.oversubscribe)
    pol.oversubscribe = 1;
  if (wk_gpus_prepare(&gp, o.gpus, node, why, sizeof(why)))
    FAIL("%s", why);
  pol.gpus = wk_gpus_policy(&gp);
  if ((rc = wk_gcp_prepare(o.nccl_preset, nhosts, lrank, &who, &gcp, why, sizeof(why))))
    FAIL("--nccl-preset: %s", why[0] ? why : weft_strerror(rc));
  pol.reserved_cpus = wk_gcp_reserved_cpus(gcp);
  if ((rc = weftx_map_rank(t, &pol, lrank, lsize, &pl, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  placed = 1;
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

  /* bind, or say what would be bound */
  char note[160] = "";
  int live = weftx_topo_is_live(t);
  if (pl.bound && live)
    bind_here(t, &pl, note, sizeof(note));
  if (o.report_bindings) {
    char line[600];
    if (weftx_place_format(t, who.host, rank, &pl, line, sizeof(line)) == 0)
      fprintf(stderr, "[weft] %s%s%s%s\n", line,
              !pl.bound ? " (not bound)" : live ? (note[0] ? " (" : " (bound)") :
              " (not bound: topology from ", !pl.bound ? "" : live ? note : weftx_topo_source(t),
              pl.bound && (!live || note[0]) ? ")" : "");
  } else if (note[0]) {
    fprintf(stderr, "weft-rank: rank %d host %s: warning: %s; running unbound\n", rank, who.host,
            note);
  }

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
  free(counts);
  counts = NULL;

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
  free(counts);
  wk_gcp_destroy(gcp);
  return rc;
}
