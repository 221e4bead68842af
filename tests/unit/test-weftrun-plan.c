/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of weftrun's pure plan (src/weftrun/plan/): plans built from
 * host and fact sets as the facts stage would fill them (topologies from
 * share/weft/topologies), without mpirun or a metadata server. When weft
 * places the ranks (GPU hosts): hosts with different GPU counts, given and
 * ungiven slots, -N, oversubscription, --gpus-per-node, a Slurm job's GPUs,
 * a Google Cloud physical_host order, and the environment the plan shows. When Open MPI
 * places them (hosts without GPUs, a CPU mapping): Open MPI 4.1's rules as
 * the issue found them broken: -H hosts have one slot, --map-by node spreads,
 * ppr:1:node without -np, mpirun's own host first, MCA defaults, and GPUs
 * given by locality under a CPU mapping. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan/plan.h"

static weftx_topo *a3, *g2, *n2;

static weftx_topo *load(const char *name)
{
  char path[1024], why[512];
  const char *dir = getenv("WEFT_DATADIR");
  weftx_topo *t = NULL;
  snprintf(path, sizeof(path), "%s/topologies/%s", dir ? dir : "../../share/weft", name);
  if (weftx_topo_load(path, 0, &t, why, sizeof(why)))
    fail_msg("cannot load %s: %s", path, why);
  return t;
}

static int setup(void **state)
{
  (void)state;
  a3 = load("a3-highgpu-8g.xml");
  g2 = load("g2-standard-48.xml");
  n2 = load("n2-standard-16.xml");
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  weftx_topo_destroy(a3);
  weftx_topo_destroy(g2);
  weftx_topo_destroy(n2);
  return 0;
}

/* A host as the hosts and facts stages leave it. */
static wr_host host(const char *name, int index, int slots, const weftx_topo *t)
{
  wr_host h;
  memset(&h, 0, sizeof(h));
  h.name = name;
  h.index = index;
  h.slots = slots;
  h.ompi_slots = slots;
  h.ompi_given = slots > 0;
  h.file = "given.xml";
  h.topo = t;
  h.from = WR_TOPO_FILE;
  h.gpus = weftx_topo_ngpus(t);
  return h;
}

static char *const no_env[] = {NULL};
static const wr_plan_here here0 = {NULL, NULL, 0, no_env};

/* The inventory the hosts and facts stages leave (the hosts, no MCA parameter). */
static wr_inventory inv0;

static const wr_inventory *inventory(const wr_host *hosts, int n)
{
  memset(&inv0, 0, sizeof(inv0));
  inv0.hosts = (wr_host *)hosts;
  inv0.nhosts = n;
  return &inv0;
}

static int make_here(wr_opts *o, const wr_host *hosts, int n, const wr_plan_here *here, wr_plan **p,
                     char *why, size_t len)
{
  wr_inventory *inv = (wr_inventory *)inventory(hosts, n);
  /* mpirun's placement options set their MCA parameters too */
  inv->mca.m.v[WEFTX_OMPI_MCA_MAPPING] = o->cl.map_by;
  inv->mca.m.v[WEFTX_OMPI_MCA_RANKING] = o->cl.rank_by;
  int rc = wr_plan_make(o, inv, here, p, why, len);
  if (rc) {
    wr_plan_destroy(*p);
    *p = NULL;
  }
  return rc;
}

static int make(wr_opts *o, const wr_host *hosts, int n, wr_plan **p, char *why, size_t len)
{
  return make_here(o, hosts, n, &here0, p, why, len);
}

/* Hosts of 8 and 4 GPUs without slots: one rank per GPU on each, GPU i for local rank i. */
static void test_mixed_gpus(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[2] = {host("a", 0, 0, a3), host("b", 1, 0, g2)};
  (void)state;
  wr_opts_init(&o);
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 12);
  assert_int_equal(p->hosts[0].slots, 8);
  assert_int_equal(p->hosts[1].slots, 4);
  assert_int_equal(p->hosts[0].count, 8);
  assert_int_equal(p->hosts[1].count, 4);
  assert_false(p->oversub);
  assert_false(p->ordered);
  for (int r = 0; r < 12; r++) {
    assert_int_equal(p->ranks[r].host, r < 8 ? 0 : 1);
    assert_int_equal(p->ranks[r].node_rank, r < 8 ? 0 : 1);
    assert_int_equal(p->ranks[r].local_rank, r < 8 ? r : r - 8);
    assert_int_equal(p->ranks[r].place.gpu, r < 8 ? r : r - 8);
  }
  wr_plan_destroy(p);
  /* -np 10: host by host, the second gets what is left */
  o.np = 10;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->hosts[1].count, 2);
  wr_plan_destroy(p);
}

static void test_given_slots(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[2] = {host("a", 0, 2, a3), host("b", 1, 3, a3)};
  (void)state;
  wr_opts_init(&o);
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 5);
  assert_int_equal(p->hosts[0].count, 2);
  assert_int_equal(p->hosts[1].count, 3);
  /* 2 of 8 GPUs: spread over the packages (GPU 0 and 4) */
  assert_int_equal(p->ranks[1].place.gpu, 4);
  wr_plan_destroy(p);
  /* given slots over the GPUs there are: mpirun allows it, the ranks share */
  h[1].slots = 10;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 12);
  assert_true(p->oversub);
  wr_plan_destroy(p);
}

/* A Slurm job's GPUs (the facts stage's gpus_allowed): slots, choice and placement
 * within them, on each host its own; none given: CPU ranks, and --map-by gpu refused. */
static void test_slurm_gpus(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  char job[] = "3-4", other[] = "6", none[] = "";
  wr_host h[2] = {host("a", 0, 0, a3), host("b", 1, 2, a3)};
  (void)state;
  wr_opts_init(&o);
  h[0].gpus_allowed = job;
  h[0].gpus = 2;
  h[0].gpus_from = "Slurm job 12";
  h[1].gpus_allowed = other;
  h[1].gpus = 1;
  h[1].gpus_from = "Slurm job 12";
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->hosts[0].slots, 2);
  assert_int_equal(p->hosts[0].count, 2);
  assert_int_equal(p->ranks[0].place.gpu, 3);
  assert_int_equal(p->ranks[1].place.gpu, 4);
  /* b's 2 given slots over its one GPU: the ranks share it, as mpirun would place them */
  assert_int_equal(p->ranks[2].place.gpu, 6);
  assert_int_equal(p->ranks[3].place.gpu, 6);
  assert_true(p->oversub);
  wr_plan_destroy(p);
  /* a job without GPUs on a GPU host: CPU ranks, or a one-line refusal of --map-by gpu */
  h[1].gpus_allowed = none;
  h[1].gpus = 0;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->ranks[2].place.gpu, -1);
  wr_plan_destroy(p);
  o.map_by = "gpu";
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), WR_EXIT_NOGPU);
  assert_string_equal(why,
                      "--map-by gpu but Slurm job 12 has no GPU on host 'b'; ask for GPUs "
                      "(salloc or sbatch --gres=gpu:N or --gpus-per-node=N), or use --map-by core");
}

static void test_per_node(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[3] = {host("a", 0, 0, a3), host("b", 1, 0, g2), host("c", 2, 0, a3)};
  (void)state;
  wr_opts_init(&o);
  o.per_node = 2;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 6);
  for (int i = 0; i < 3; i++)
    assert_int_equal(p->hosts[i].count, 2);
  wr_plan_destroy(p);
  o.np = 5;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->hosts[2].count, 1);
  wr_plan_destroy(p);
  o.np = 7;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), WR_EXIT_PLACE);
  assert_non_null(strstr(why, "-np 7 is more than -N 2 on 3 hosts"));
  /* -N over a host's slots (g2 has 4 GPUs) */
  o.np = -1;
  o.per_node = 5;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), WR_EXIT_PLACE);
  assert_non_null(strstr(why, "-N 5 but host 'b' has 4 slots"));
  o.oversubscribe = 1;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->hosts[1].count, 5);
  assert_true(p->oversub);
  wr_plan_destroy(p);
}

static void test_map_by_node(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[3] = {host("a", 0, 2, n2), host("b", 1, 1, n2), host("c", 2, 2, n2)};
  (void)state;
  wr_opts_init(&o);
  o.map_by = o.cl.map_by = "node";
  if (make(&o, h, 3, &p, why, sizeof(why)))
    fail_msg("%s", why);
  assert_int_equal(p->mode, WR_MODE_OMPI);
  assert_true(p->by_node);
  assert_int_equal(p->np, 5);
  /* round-robin over the hosts that still have room: a b c a c */
  const int want_host[] = {0, 1, 2, 0, 2}, want_local[] = {0, 0, 0, 1, 1};
  for (int r = 0; r < 5; r++) {
    assert_int_equal(p->ranks[r].host, want_host[r]);
    assert_int_equal(p->ranks[r].local_rank, want_local[r]);
  }
  wr_plan_destroy(p);
  /* --rank-by node alone does the same */
  o.map_by = o.cl.map_by = NULL;
  o.rank_by = o.cl.rank_by = "node";
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->ranks[3].host, 0);
  wr_plan_destroy(p);
}

static void test_oversubscribe(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[2] = {host("a", 0, 0, a3), host("b", 1, 0, a3)};
  (void)state;
  wr_opts_init(&o);
  o.np = 20;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), WR_EXIT_PLACE);
  assert_non_null(strstr(why, "20 ranks but the hosts have 16 slots (a:8,b:8)"));
  o.oversubscribe = 1;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->hosts[0].count, 10);
  assert_int_equal(p->hosts[1].count, 10);
  assert_true(p->oversub);
  /* wrapped: local rank 8 shares GPU 0 */
  assert_int_equal(p->ranks[8].place.gpu, 0);
  wr_plan_destroy(p);
}

static void test_gpus_per_node(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  /* two remote hosts known only by --gpus-per-node 8, this machine a CPU box */
  wr_host h[2] = {host("a", 0, 0, n2), host("b", 1, 0, n2)};
  (void)state;
  for (int i = 0; i < 2; i++) {
    h[i].file = NULL;
    h[i].from = WR_TOPO_ASSUMED;
    h[i].gpus = 8;
    h[i].gpus_trusted = 1;
  }
  wr_opts_init(&o);
  o.gpus_per_node = 8;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 16);
  assert_int_equal(p->hosts[0].slots, 8);
  assert_false(p->oversub); /* nothing for the agents to oversubscribe */
  wr_plan_destroy(p);
  /* given slots over the trusted GPUs: oversubscribed */
  h[0].slots = 9;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_true(p->oversub);
  wr_plan_destroy(p);
  /* --map-by gpu on a host said to have none */
  h[0].gpus = h[1].gpus = 0;
  o.map_by = "gpu";
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), WR_EXIT_NOGPU);
  assert_non_null(strstr(why, "host 'a' has no GPU"));
}

static void test_physical_host_order(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[3] = {host("a", 0, 0, a3), host("b", 1, 0, g2), host("c", 2, 0, a3)};
  (void)state;
  snprintf(h[0].physical_host, sizeof(h[0].physical_host), "/c1/r2/h1");
  snprintf(h[1].physical_host, sizeof(h[1].physical_host), "/c1/r1/h9");
  snprintf(h[2].physical_host, sizeof(h[2].physical_host), "/c1/r1/h3");
  wr_opts_init(&o);
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_true(p->ordered);
  assert_string_equal(p->hosts[0].host->name, "c");
  assert_string_equal(p->hosts[1].host->name, "b");
  assert_string_equal(p->hosts[2].host->name, "a");
  /* ranks follow the order: c's 8, then b's 4, then a's 8 */
  assert_int_equal(p->hosts[1].count, 4);
  assert_int_equal(p->ranks[8].host, 1);
  assert_int_equal(wr_plan_host_of(p, "a"), 2);
  wr_plan_destroy(p);
  /* one host without physical_host: as given */
  h[1].physical_host[0] = '\0';
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_false(p->ordered);
  assert_string_equal(p->hosts[0].host->name, "a");
  wr_plan_destroy(p);
}

static void test_environment(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[1] = {host("a", 0, 1, a3)};
  char *env[] = {(char *)"BAR=from-env", (char *)"BARX=no", NULL};
  char *preset[] = {(char *)"NCCL_NET=GPUDirectTCPX_v7"};
  wr_plan_here here = {"8-35", preset, 1, env};
  (void)state;
  wr_opts_init(&o);
  o.xvars[o.nxvars++] = "FOO=1";
  o.xvars[o.nxvars++] = "BAR";
  o.xvars[o.nxvars++] = "UNSET_ANYWHERE";
  assert_int_equal(make_here(&o, h, 1, &here, &p, why, sizeof(why)), 0);
  assert_int_equal(p->nenv, 3);
  assert_string_equal(p->env[0], "FOO=1");
  assert_string_equal(p->env[1], "BAR=from-env");
  assert_string_equal(p->env[2], "NCCL_NET=GPUDirectTCPX_v7");
  assert_string_equal(p->pol.reserved_cpus, "8-35");
  wr_plan_destroy(p);
  /* a bad policy is the user's error */
  o.map_by = "gpux";
  assert_int_equal(make(&o, h, 1, &p, why, sizeof(why)), WR_EXIT_USAGE);
  assert_true(why[0] != '\0');
}

/* -H a,b,c -np 3 on hosts without GPUs: one slot each, one rank each (a host without
 * a count has one slot in Open MPI, not its cores) */
static void test_ompi_dash_host(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[3] = {host("a", 0, 1, n2), host("b", 1, 1, n2), host("c", 2, 1, n2)};
  (void)state;
  wr_opts_init(&o);
  o.apps[0].np = 3;
  o.napps = 1;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->mode, WR_MODE_OMPI);
  assert_int_equal(p->np, 3);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(p->ranks[r].host, r);
    assert_int_equal(p->ranks[r].local_rank, 0);
    assert_int_equal(p->ranks[r].place.gpu, -1);
  }
  /* np 3 > 2: Open MPI binds to the NUMA node (n2 has one: all its cpus) */
  assert_true(p->ranks[0].place.bound);
  assert_int_equal(WEFTX_OMPI_POLICY(p->ompi.binding), WEFTX_OMPI_NUMA);
  wr_plan_destroy(p);
  /* a fourth rank does not fit: mpirun refuses, so does the plan */
  o.apps[0].np = 4;
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), WR_EXIT_PLACE);
  assert_non_null(strstr(why, "not enough slots"));
}

/* --map-by node -np 3 on 3 hosts of 2 slots: one per host (it was a, b, a); and
 * ppr:1:node without -np: one per host, not every slot */
static void test_ompi_spread(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[3] = {host("vnode0", 0, 2, n2), host("vnode1", 1, 2, n2), host("vnode2", 2, 2, n2)};
  (void)state;
  wr_opts_init(&o);
  o.napps = 1;
  o.apps[0].np = 3;
  o.map_by = o.cl.map_by = "node";
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  for (int r = 0; r < 3; r++)
    assert_string_equal(p->hosts[p->ranks[r].host].host->name, h[r].name);
  wr_plan_destroy(p);
  o.apps[0].np = -1;
  o.map_by = o.cl.map_by = "ppr:1:node";
  assert_int_equal(make(&o, h, 3, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 3);
  for (int i = 0; i < 3; i++)
    assert_int_equal(p->hosts[i].count, 1);
  wr_plan_destroy(p);
}

/* mpirun's own host is Open MPI's first, whatever the order given */
static void test_ompi_local_first(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[2] = {host("far", 0, 2, n2), host("here", 1, 2, n2)};
  (void)state;
  h[1].local = 1;
  wr_opts_init(&o);
  o.napps = 1;
  o.apps[0].np = 4;
  assert_int_equal(make(&o, h, 2, &p, why, sizeof(why)), 0);
  assert_string_equal(p->hosts[p->ranks[0].host].host->name, "here");
  assert_string_equal(p->hosts[p->ranks[2].host].host->name, "far");
  wr_plan_destroy(p);
}

/* Open MPI's defaults from MCA parameters: binding none, oversubscription allowed (as
 * weft-vcluster sets them) */
static void test_ompi_mca_defaults(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[1] = {host("a", 0, 2, n2)};
  wr_inventory *inv;
  (void)state;
  wr_opts_init(&o);
  o.napps = 1;
  o.apps[0].np = 3;
  inv = (wr_inventory *)inventory(h, 1);
  inv->mca.m.v[WEFTX_OMPI_MCA_BINDING] = "none";
  inv->mca.m.v[WEFTX_OMPI_MCA_OVERSUBSCRIBE] = "1";
  assert_int_equal(wr_plan_make(&o, inv, &here0, &p, why, sizeof(why)), 0);
  assert_int_equal(p->np, 3);
  assert_true(p->oversub);
  for (int r = 0; r < 3; r++)
    assert_false(p->ranks[r].place.bound);
  wr_plan_destroy(p);
  /* without them: 3 ranks on 2 slots is refused, as by mpirun */
  inv = (wr_inventory *)inventory(h, 1);
  assert_int_equal(wr_plan_make(&o, inv, &here0, &p, why, sizeof(why)), WR_EXIT_PLACE);
  wr_plan_destroy(p);
}

/* A CPU mapping on a GPU host keeps GPUs by locality when the ranks are no more than the
 * GPUs: --map-by ppr:4:socket on a3-highgpu-8g gives GPU 0-3 to socket 0's ranks */
static void test_ompi_gpus_by_locality(void **state)
{
  wr_opts o;
  wr_plan *p;
  char why[512];
  wr_host h[1] = {host("a", 0, 8, a3)};
  (void)state;
  wr_opts_init(&o);
  o.napps = 1;
  o.map_by = o.cl.map_by = "ppr:4:socket";
  assert_int_equal(make(&o, h, 1, &p, why, sizeof(why)), 0);
  assert_int_equal(p->mode, WR_MODE_OMPI);
  assert_int_equal(p->np, 8);
  for (int r = 0; r < 8; r++) {
    const weftx_gpu *g = weftx_topo_gpu(a3, p->ranks[r].place.gpu);
    assert_non_null(g);
    /* the rank's cpus are its GPU's */
    assert_true(hwloc_bitmap_intersects(g->cpuset, p->ranks[r].place.cpuset));
  }
  wr_plan_destroy(p);
  /* more ranks than GPUs: none gets one, and the plan says why */
  o.map_by = o.cl.map_by = "core";
  o.apps[0].np = 16;
  h[0].slots = h[0].ompi_slots = 16;
  assert_int_equal(make(&o, h, 1, &p, why, sizeof(why)), 0);
  assert_int_equal(p->ranks[0].place.gpu, -1);
  assert_non_null(strstr(p->ranks[0].place.note, "no rank gets a GPU"));
  wr_plan_destroy(p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mixed_gpus),        cmocka_unit_test(test_given_slots),
    cmocka_unit_test(test_slurm_gpus),        cmocka_unit_test(test_per_node),
    cmocka_unit_test(test_map_by_node),       cmocka_unit_test(test_oversubscribe),
    cmocka_unit_test(test_gpus_per_node),     cmocka_unit_test(test_physical_host_order),
    cmocka_unit_test(test_environment),       cmocka_unit_test(test_ompi_dash_host),
    cmocka_unit_test(test_ompi_spread),       cmocka_unit_test(test_ompi_local_first),
    cmocka_unit_test(test_ompi_mca_defaults), cmocka_unit_test(test_ompi_gpus_by_locality),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
