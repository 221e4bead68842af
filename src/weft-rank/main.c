/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank: the per-rank agent weftrun starts through mpirun. It finds its
 * rank and host from Open MPI's variables and weftrun's layout, computes its
 * own placement with weftx_map_rank() on its host's topology, binds CPU and
 * memory with hwloc when that topology is this machine (and only says what it
 * would bind otherwise), adds the per-rank environment without overwriting
 * anything the user set, and runs the program under supervision.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "opt.h"
#include "weft-rank.h"

enum { K_HOSTS = 1, K_COUNTS, K_RANKBY, K_MAPBY, K_BINDTO, K_OVERSUB, K_REPORT, K_GPN, K_GPUVIS,
       K_NCCL, K_MADDR, K_MPORT, K_IFNAME, K_TOPO, K_HOSTXML, K_PROBE, K_GRACE, K_HELP };

#define S "weft-rank (internal: started by weftrun)"
static const weft_opt wk_options[] = {
  { K_HOSTS, "hosts", WEFT_OPT_ARG, "A,B,...", S, "The job's hosts, in order.", 0 },
  { K_COUNTS, "counts", WEFT_OPT_ARG, "N,M,...", S, "Ranks on each host.", 0 },
  { K_RANKBY, "rank-by", WEFT_OPT_ARG, "slot|node", S, "How ranks are numbered over hosts.", 0 },
  { K_MAPBY, "map-by", WEFT_OPT_ARG, "POLICY", S, "As weftrun --map-by.", 0 },
  { K_BINDTO, "bind-to", WEFT_OPT_ARG, "WHAT", S, "As weftrun --bind-to.", 0 },
  { K_OVERSUB, "oversubscribe", WEFT_OPT_FLAG, NULL, S, "Allow more ranks than slots.", 0 },
  { K_REPORT, "report-bindings", WEFT_OPT_FLAG, NULL, S, "Print this rank's placement.", 0 },
  { K_GPN, "gpus-per-node", WEFT_OPT_ARG, "N", S, "As weftrun --gpus-per-node.", 0 },
  { K_GPUVIS, "gpu-visibility", WEFT_OPT_ARG, "all|own|none", S, "CUDA_VISIBLE_DEVICES mode.", 0 },
  { K_NCCL, "nccl-preset", WEFT_OPT_ARG, "auto|none|FAMILY", S, "NCCL preset.", 0 },
  { K_MADDR, "master-addr", WEFT_OPT_ARG, "ADDR", S, "MASTER_ADDR.", 0 },
  { K_MPORT, "master-port", WEFT_OPT_ARG, "PORT", S, "MASTER_PORT.", 0 },
  { K_IFNAME, "ifname", WEFT_OPT_ARG, "IF", S, "NCCL_SOCKET_IFNAME.", 0 },
  { K_TOPO, "topology", WEFT_OPT_ARG, "FILE|I=FILE", S, "Topology of every host or of host I.", 0 },
  { K_HOSTXML, "host-xml", WEFT_OPT_ARG, "FILE", S,
    "weftrun's own host as hwloc XML, used in place of probing when this is that host.", 0 },
  { K_GRACE, "preempt-grace", WEFT_OPT_ARG, "SECONDS", S,
    "After a preemption notice: SECONDS from SIGTERM to SIGKILL.", 0 },
  { K_PROBE, "probe", WEFT_OPT_FLAG, NULL, S, "Print this host's topology as hwloc XML and exit.", 0 },
  { K_HELP, "help|h", WEFT_OPT_FLAG, NULL, S, "This help.", 0 },
  { 0, NULL, 0, NULL, NULL, NULL, 0 },
};

static int
handle(void *ud, const weft_opt *opt, const char *sp, const char *a1, const char *a2, char *why,
       size_t len)
{
  wk_opts *o = ud;
  (void)a2;
  switch (opt->id) {
  case K_HOSTS: o->hosts = a1; return 0;
  case K_COUNTS: o->counts = a1; return 0;
  case K_RANKBY: o->rank_by = a1; return 0;
  case K_MAPBY: o->map_by = a1; return 0;
  case K_BINDTO: o->bind_to = a1; return 0;
  case K_OVERSUB: o->oversubscribe = 1; return 0;
  case K_REPORT: o->report_bindings = 1; return 0;
  case K_GPN: return weftx_parse_long(a1, 0, 1024, &o->gpus_per_node) ? -1 : 0;
  case K_GPUVIS: o->gpu_visibility = a1; return 0;
  case K_NCCL: o->nccl_preset = a1; return 0;
  case K_MADDR: o->master_addr = a1; return 0;
  case K_MPORT: return weftx_parse_long(a1, 1, 65535, &o->master_port) ? -1 : 0;
  case K_IFNAME: o->ifname = a1; return 0;
  case K_TOPO:
    if (!strchr(a1, '=')) {
      o->topology = a1;
      return 0;
    }
    if (o->nhost_topology >= 64) {
      snprintf(why, len, "%s: too many", sp);
      return -1;
    }
    o->host_topology[o->nhost_topology++] = a1;
    return 0;
  case K_HOSTXML: o->host_xml = a1; return 0;
  case K_GRACE: return weftx_parse_long(a1, 0, 3600, &o->preempt_grace) ? -1 : 0;
  case K_PROBE: o->probe = 1; return 0;
  case K_HELP:
    fputs("Usage: weft-rank [options] -- PROGRAM [ARGS]\n", stdout);
    weft_opt_help(stdout, wk_options);
    exit(0);
  }
  return -1;
}

static int
env_int(const char *name, int *out)
{
  const char *v = getenv(name);
  long l;
  if (!v || weftx_parse_long(v, 0, 100000000, &l))
    return -1;
  *out = (int)l;
  return 0;
}

/* The host name for messages: weftrun's name for this host, else the system's. */
static void
host_name(const wk_opts *o, int node, char *buf, size_t len)
{
  const char *p = o->hosts;
  for (int i = 0; p && i < node; i++) {
    p = strchr(p, ',');
    if (p)
      p++;
  }
  if (p && *p) {
    size_t n = strcspn(p, ",");
    if (n < len) {
      memcpy(buf, p, n);
      buf[n] = '\0';
      return;
    }
  }
  if (gethostname(buf, len))
    snprintf(buf, len, "unknown");
  buf[len - 1] = '\0';
}

static const char *
topology_for(const wk_opts *o, int node)
{
  for (int i = 0; i < o->nhost_topology; i++) {
    const char *kv = o->host_topology[i];
    char *end;
    long idx = strtol(kv, &end, 10);
    if (end != kv && *end == '=' && idx == node)
      return end + 1;
  }
  return o->topology;
}

/* This host's topology: its --topology file, else weftrun's XML of weftrun's own host
 * when this is that host (it saves the probe; binding acts as on a live load), else the
 * live machine or $WEFT_TOPOLOGY as weftx_topo_load() does. */
static int
load_topology(const wk_opts *o, int node, weftx_topo **t, char *why, size_t len)
{
  const char *file = topology_for(o, node), *env = getenv("WEFT_TOPOLOGY");
  if (!file && o->host_xml && !(env && *env)) {
    char me[256];
    if (gethostname(me, sizeof(me)) == 0 &&
        weftx_topo_load(o->host_xml, WEFTX_TOPO_THIS_SYSTEM, t, NULL, 0) == 0) {
      me[sizeof(me) - 1] = '\0';
      if (!strcmp(weftx_topo_hostname(*t), me))
        return 0;
      weftx_topo_destroy(*t); /* another host's (a shared $TMPDIR): probe this one */
      *t = NULL;
    }
  }
  return weftx_topo_load(file, 0, t, why, len);
}

#define FAIL(...)                                                                      \
  do {                                                                                 \
    char msg_[600];                                                                    \
    snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                         \
    fprintf(stderr, "weft-rank: rank %d host %s gpu %s: %s; exited with status %d\n",  \
            who.rank, who.host, who.gpu, msg_, WK_EXIT_SETUP);                         \
    rc = WK_EXIT_SETUP;                                                                \
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

/* weftrun's probe: this host's topology (live, or WEFT_TOPOLOGY) as hwloc XML on stdout. */
static int
probe(void)
{
  weftx_topo *t = NULL;
  char why[600] = "", *xml = NULL;
  int len = 0;
  int rc = weftx_topo_load(NULL, 0, &t, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weft-rank --probe: %s\n", why[0] ? why : weft_strerror(rc));
    return WK_EXIT_SETUP;
  }
  hwloc_topology_t h = weftx_topo_hwloc(t);
  if (hwloc_topology_export_xmlbuffer(h, &xml, &len, 0) || !xml) {
    fprintf(stderr, "weft-rank --probe: cannot export the topology as XML\n");
    weftx_topo_destroy(t);
    return WK_EXIT_SETUP;
  }
  int bad = fwrite(xml, 1, (size_t)len - 1, stdout) != (size_t)len - 1;
  wk_gcp_probe_facts(stdout);
  bad |= fflush(stdout) != 0;
  hwloc_free_xmlbuffer(h, xml);
  weftx_topo_destroy(t);
  return bad ? WK_EXIT_SETUP : 0;
}

int
main(int argc, char **argv)
{
  wk_opts o;
  wk_who who;
  weftx_topo *t = NULL;
  weftx_env *env = NULL;
  wk_gcp *gcp = NULL;
  weftx_place pl;
  int placed = 0, rc = 0, first = argc;
  char why[600] = "";
  int *counts = NULL;

  memset(&o, 0, sizeof(o));
  memset(&pl, 0, sizeof(pl));
  o.gpus_per_node = -1;
  o.preempt_grace = WEFTX_PREEMPT_GRACE_S;
  who.rank = -1;
  snprintf(who.gpu, sizeof(who.gpu), "none");
  if (gethostname(who.host, sizeof(who.host)))
    snprintf(who.host, sizeof(who.host), "unknown");
  who.host[sizeof(who.host) - 1] = '\0';
  if (weft_check_version(stderr, argv[0]))
    return WK_EXIT_SETUP;
  env_int("OMPI_COMM_WORLD_RANK", &who.rank);
  if (weft_opt_parse(wk_options, argc, argv, handle, &o, &first, why, sizeof(why)))
    FAIL("%s", why);
  o.program = argv + first;
  if (o.probe)
    return probe();
  if (!o.program[0])
    FAIL("no program after '--'");

  int rank, size, lrank, lsize;
  if (env_int("OMPI_COMM_WORLD_RANK", &rank) || env_int("OMPI_COMM_WORLD_SIZE", &size) ||
      env_int("OMPI_COMM_WORLD_LOCAL_RANK", &lrank) || env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &lsize))
    FAIL("OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE are not set: weft-rank runs under "
         "weftrun, not by hand");

  /* which host of weftrun's list this is: the torchrun NODE_RANK */
  int nhosts = 1, node = 0, local = lrank;
  if (o.counts) {
    if (!(counts = calloc(WK_MAX_HOSTS, sizeof(int))))
      FAIL("out of memory");
    nhosts = weft_layout_parse(o.counts, counts, WK_MAX_HOSTS);
    if (nhosts < 1)
      FAIL("bad --counts '%s'", o.counts);
    int by_node = o.rank_by && !strcmp(o.rank_by, "node");
    node = weft_layout_host(counts, nhosts, by_node, rank, &local);
    if (node < 0)
      FAIL("rank %d is outside weftrun's layout %s", rank, o.counts);
    if (local != lrank || counts[node] != lsize)
      FAIL("Open MPI placed this rank as local rank %d of %d, weftrun planned %d of %d on host "
           "%d; report this with the weftrun command line", lrank, lsize, local, counts[node], node);
    if (nhosts > 1 || o.hosts)
      host_name(&o, node, who.host, sizeof(who.host));
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
  if ((rc = wk_gcp_prepare(&o, nhosts, lrank, &who, &gcp, why, sizeof(why))))
    FAIL("--nccl-preset: %s", why[0] ? why : weft_strerror(rc));
  pol.reserved_cpus = wk_gcp_reserved_cpus(gcp);
  if ((rc = weftx_map_rank(t, &pol, lrank, lsize, &pl, why, sizeof(why))))
    FAIL("%s", why[0] ? why : weft_strerror(rc));
  placed = 1;
  if (pl.gpu >= 0) {
    const weftx_gpu *g = weftx_topo_gpu(t, pl.gpu);
    snprintf(who.gpu, sizeof(who.gpu), "%d (%s)", pl.gpu, g ? g->pci : "?");
  }

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

  wk_supervise_set_grace(o.preempt_grace);
  wk_gcp_watch_start(gcp);
  rc = wk_gcp_watch_stop(gcp, wk_supervise(o.program, &who));
out:
  if (placed)
    weftx_place_clear(&pl);
  weftx_env_destroy(env);
  weftx_topo_destroy(t);
  free(counts);
  wk_gcp_destroy(gcp);
  return rc;
}
