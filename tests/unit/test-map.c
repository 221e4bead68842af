/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/map: the --map-by/--bind-to grammar (valid and garbage
 * spellings), every rule of the GPU rule on the shipped topologies
 * ($WEFT_DATADIR/topologies), that CPU layouts come from Open MPI's model by
 * every entry point, the error cases, the plan JSON and the --report-bindings
 * line.
 */
#include "weft_private.h"
#include <weftx.h> /* weft_private.h brings weftx/util.h alone */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static weftx_topo *load(const char *name)
{
  char path[1024], why[512];
  const char *dir = getenv("WEFT_DATADIR");
  weftx_topo *t = NULL;
  int rc;

  snprintf(path, sizeof(path), "%s/topologies/%s", dir ? dir : "../../share/weft", name);
  rc = weftx_topo_load(path, 0, &t, why, sizeof(why));
  if (rc != 0)
    fail_msg("cannot load %s: %s", path, why);
  return t;
}

static weftx_policy policy(const char *map, const char *bind)
{
  weftx_policy p;
  char why[256];

  memset(&p, 0, sizeof(p));
  if (weftx_policy_parse(&p, map, bind, why, sizeof(why)) != 0)
    fail_msg("policy '%s' '%s': %s", map ? map : "", bind ? bind : "", why);
  return p;
}

static char *list(hwloc_const_bitmap_t set)
{
  static char buf[4][512];
  static int turn;
  char *s = NULL;

  turn = (turn + 1) % 4;
  buf[turn][0] = '\0';
  if (hwloc_bitmap_list_asprintf(&s, set) >= 0) {
    snprintf(buf[turn], sizeof(buf[turn]), "%s", s);
    free(s);
  }
  return buf[turn];
}

/* ---- policy parser: Open MPI's grammar with weft's gpu words ---- */

static void test_parse_valid(void **state)
{
  weftx_policy p;
  char why[256], buf[256];
  (void)state;

  p = policy(NULL, NULL);
  assert_int_equal(p.map_by, WEFTX_MAP_AUTO);
  assert_int_equal(p.bind_to, WEFTX_BIND_DEFAULT);
  p = policy("gpu", "gpu-local");
  assert_int_equal(p.map_by, WEFTX_MAP_GPU);
  assert_int_equal(p.bind_to, WEFTX_BIND_GPU_LOCAL);
  p = policy("GPU:PE=4", "Core");
  assert_int_equal(p.map_by, WEFTX_MAP_GPU);
  assert_int_equal(p.pe, 4);
  assert_int_equal(p.bind_to, WEFTX_BIND_CORE);
  p = policy("ppr:2:gpu", "socket");
  assert_int_equal(p.map_by, WEFTX_MAP_GPU);
  assert_int_equal(p.ppr_n, 2);
  assert_int_equal(p.bind_to, WEFTX_BIND_PACKAGE);
  p = policy("gpu:pe=2,OVERSUBSCRIBE", "none");
  assert_int_equal(p.pe, 2);
  assert_int_equal(p.oversubscribe, 1);
  assert_int_equal(p.bind_to, WEFTX_BIND_NONE);
  p = policy("gpu", "numa:overload-allowed");
  assert_int_equal(p.bind_to, WEFTX_BIND_NUMA);

  /* Every other mapping is Open MPI's, its words kept for the model; prefixes as in
   * Open MPI ("so" is socket); a binding the GPU rule lacks is OTHER. */
  p = policy("so:PE=2", "l3cache");
  assert_int_equal(p.map_by, WEFTX_MAP_CPU);
  assert_string_equal(p.map_words, "so:PE=2");
  assert_int_equal(p.pe, 0);
  assert_int_equal(p.bind_to, WEFTX_BIND_OTHER);
  assert_string_equal(p.bind_words, "l3cache");
  p = policy("ppr:2:numa", NULL);
  assert_int_equal(p.map_by, WEFTX_MAP_CPU);
  p = policy(NULL, "hwthread");
  assert_int_equal(p.map_by, WEFTX_MAP_AUTO);
  assert_int_equal(p.bind_to, WEFTX_BIND_OTHER);

  /* Caller's settings survive; NOOVERSUBSCRIBE clears; a CPU mapping's modifiers stay
   * in its words. */
  memset(&p, 0, sizeof(p));
  p.oversubscribe = 1;
  p.reserved_cpus = "0-3";
  assert_int_equal(weftx_policy_parse(&p, "gpu", NULL, why, sizeof(why)), 0);
  assert_int_equal(p.oversubscribe, 1);
  assert_string_equal(p.reserved_cpus, "0-3");
  assert_int_equal(weftx_policy_parse(&p, "gpu:nooversubscribe", NULL, why, sizeof(why)), 0);
  assert_int_equal(p.oversubscribe, 0);
  assert_int_equal(weftx_policy_parse(&p, "core:oversubscribe", NULL, why, sizeof(why)), 0);
  assert_int_equal(p.oversubscribe, 0);

  p = policy("gpu", NULL);
  assert_int_equal(weftx_policy_format(&p, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "gpu, bind gpu-local");
  p = policy("ppr:2:gpu:pe=4,oversubscribe", "core");
  assert_int_equal(weftx_policy_format(&p, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "ppr:2:gpu:pe=4, bind core, oversubscribe");
  p = policy(NULL, "socket");
  assert_int_equal(weftx_policy_format(&p, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "auto, bind socket");
  assert_int_equal(weftx_policy_format(&p, buf, 4), WEFT_ERANGE);

  /* Who places: weft's GPU rule for its words, Open MPI for every other. */
  assert_int_equal(weftx_policy_gpu(NULL), -1);
  assert_int_equal(weftx_policy_gpu("gpu"), 1);
  assert_int_equal(weftx_policy_gpu("Gpu:PE=2"), 1);
  assert_int_equal(weftx_policy_gpu("ppr:1:gpu"), 1);
  assert_int_equal(weftx_policy_gpu("gpux"), 0);
  assert_int_equal(weftx_policy_gpu("core"), 0);
  assert_int_equal(weftx_policy_gpu("ppr:2:socket"), 0);
}

static void expect_error(const char *map, const char *bind, int code, const char *needle)
{
  weftx_policy p;
  char why[256];

  memset(&p, 0, sizeof(p));
  assert_int_equal(weftx_policy_parse(&p, map, bind, why, sizeof(why)), code);
  if (!strstr(why, needle))
    fail_msg("'%s' '%s': reason '%s' lacks '%s'", map ? map : "", bind ? bind : "", why, needle);
  assert_null(strchr(why, '\n'));
}

static void test_parse_garbage(void **state)
{
  (void)state;
  expect_error("gpus", NULL, WEFT_EINVAL, "did you mean 'gpu'?");
  expect_error("cores", NULL, WEFT_EINVAL, "did you mean 'core'?");
  expect_error("sockte", NULL, WEFT_EINVAL, "did you mean 'socket'?");
  expect_error("package", NULL, WEFT_EINVAL, "Open MPI 4.1 calls the package socket");
  expect_error("l4cache", NULL, WEFT_EINVAL, "Open MPI 4.1 maps by slot, hwthread, core");
  expect_error("ppr", NULL, WEFT_EINVAL, "ppr:N:OBJECT, weft also by gpu");
  expect_error("ppr:2", NULL, WEFT_EINVAL, "ppr:N:OBJECT");
  expect_error("ppr:x:gpu", NULL, WEFT_EINVAL, "N in N:gpu is a whole number from 1");
  expect_error("ppr:0:gpu", NULL, WEFT_EINVAL, "N in N:gpu");
  expect_error("ppr:2:nuam", NULL, WEFT_EINVAL, "does not know the object 'nuam'");
  expect_error("ppr:2:gpu:bogus", NULL, WEFT_EINVAL, "modifier 'bogus'");
  expect_error("ppr:2:socket,numa", NULL, WEFT_ENOTSUP, "several levels");
  expect_error("dist", NULL, WEFT_ENOTSUP, "dist mapper");
  expect_error("core:span", NULL, WEFT_ENOTSUP, "SPAN");
  expect_error("gpu:pe=0", NULL, WEFT_EINVAL, "PE=n wants a whole number from 1");
  expect_error("gpu:pe=", NULL, WEFT_EINVAL, "PE=n");
  expect_error("gpu:pe", NULL, WEFT_EINVAL, "write PE=N");
  expect_error("gpu:sometimes", NULL, WEFT_EINVAL, "modifier 'sometimes'");
  expect_error(NULL, "cores", WEFT_EINVAL, "did you mean 'core'?");
  expect_error(NULL, "gpu_local", WEFT_EINVAL, "did you mean 'gpu-local'?");
  expect_error(NULL, "package", WEFT_EINVAL, "calls the package socket");
  expect_error(NULL, "core:sometimes", WEFT_EINVAL, "unknown qualifier 'sometimes'");
  expect_error("core", "gpu-local", WEFT_EINVAL, "--map-by gpu");
  expect_error("gpu", "l3cache", WEFT_EINVAL, "gpu-local, core, numa, socket or none");
  expect_error(
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    NULL, WEFT_EINVAL, "too long");
  assert_int_equal(weftx_policy_parse(NULL, "gpu", NULL, NULL, 0), WEFT_EINVAL);
}

/* ---- placement: map-by gpu ---- */

static const weftx_numa *numa_of(const weftx_topo *t, int os)
{
  int i;

  for (i = 0; i < weftx_topo_nnuma(t); i++)
    if (weftx_topo_numa(t, i)->os_index == os)
      return weftx_topo_numa(t, i);
  fail_msg("no NUMA node %d", os);
  return NULL;
}

/* Every rank its own GPU, cores only from that GPU's NUMA node, memory
 * there, and the NIC on the GPU's PCI switch when there is one. */
static void check_gpu_full(const char *file, int expect_cores)
{
  weftx_topo *t = load(file);
  weftx_policy p = policy(NULL, NULL);
  int n = weftx_topo_ngpus(t), r, s, seen[64] = {0};
  hwloc_bitmap_t all = hwloc_bitmap_alloc();
  char why[256];

  assert_true(n > 0 && n < 64);
  assert_int_equal(weftx_map_slots(t, &p), n);
  for (r = 0; r < n; r++) {
    weftx_place pl;
    const weftx_gpu *g;
    assert_int_equal(weftx_map_rank(t, &p, r, n, &pl, why, sizeof(why)), 0);
    assert_true(pl.gpu >= 0 && pl.gpu < n);
    assert_int_equal(seen[pl.gpu]++, 0);
    g = weftx_topo_gpu(t, pl.gpu);
    assert_true(pl.bound);
    assert_false(hwloc_bitmap_iszero(pl.cpuset));
    if (g->numa >= 0) {
      if (!hwloc_bitmap_isincluded(pl.cpuset, numa_of(t, g->numa)->cpuset))
        fail_msg("%s rank %d: cpus %s outside NUMA node %d of GPU %d", file, r, list(pl.cpuset),
                 g->numa, pl.gpu);
      assert_int_equal(hwloc_bitmap_weight(pl.nodeset), 1);
      assert_true(hwloc_bitmap_isset(pl.nodeset, (unsigned)g->numa));
    }
    if (expect_cores)
      assert_int_equal(pl.ncores, expect_cores);
    /* No two ranks share a processor. */
    assert_false(hwloc_bitmap_intersects(all, pl.cpuset));
    hwloc_bitmap_or(all, all, pl.cpuset);
    for (s = 0; s < weftx_topo_nnics(t); s++)
      if (weftx_topo_gpu_nic_near(t, pl.gpu, s) == WEFTX_NEAR_SWITCH &&
          weftx_topo_nic(t, s)->name[0]) {
        assert_true(pl.nic >= 0);
        assert_int_equal(weftx_topo_gpu_nic_near(t, pl.gpu, pl.nic), WEFTX_NEAR_SWITCH);
      }
    weftx_place_clear(&pl);
  }
  hwloc_bitmap_free(all);
  weftx_topo_destroy(t);
}

static void test_gpu_full(void **state)
{
  (void)state;
  check_gpu_full("a3-highgpu-8g.xml", 13);
  check_gpu_full("a3-megagpu-8g.xml", 13);
  check_gpu_full("a2-highgpu-8g.xml", 6);
  check_gpu_full("gpu-numa-interleaved.xml", 4);
  check_gpu_full("g2-standard-48.xml", 0);
  check_gpu_full("n1-standard-32-4xv100.xml", 0);
}

static int gpu_of(const weftx_topo *t, const weftx_policy *p, int r, int n, weftx_place *pl)
{
  char why[256];

  if (weftx_map_rank(t, p, r, n, pl, why, sizeof(why)) != 0)
    fail_msg("rank %d of %d: %s", r, n, why);
  return pl->gpu;
}

static void test_gpu_a3(void **state)
{
  weftx_topo *t = load("a3-highgpu-8g.xml");
  weftx_policy p = policy(NULL, NULL);
  weftx_place pl;
  char why[256], line[256];
  int r, nics[8];
  (void)state;

  /* Rank 0 of 8: GPU 0, 13 cores with both hyperthreads, NIC enp6s0 on its switch. */
  assert_int_equal(gpu_of(t, &p, 0, 8, &pl), 0);
  assert_string_equal(list(pl.cpuset), "0-12,104-116");
  assert_string_equal(list(pl.nodeset), "0");
  assert_string_equal(weftx_topo_nic(t, pl.nic)->name, "enp6s0");
  assert_string_equal(pl.note, "");
  assert_int_equal(weftx_place_format(t, "vm-a", 0, &pl, line, sizeof(line)), 0);
  assert_string_equal(
    line, "vm-a rank 0 (local 0): GPU 0 (0000:04:00.0) cores 0-12,104-116 NUMA 0 NIC enp6s0");
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 7, 8, &pl), 7);
  assert_string_equal(list(pl.cpuset), "91-103,195-207");
  assert_string_equal(weftx_topo_nic(t, pl.nic)->name, "enp140s0");
  weftx_place_clear(&pl);

  /* 2 ranks: one GPU per socket, the whole NUMA node each. */
  assert_int_equal(gpu_of(t, &p, 0, 2, &pl), 0);
  assert_int_equal(pl.ncores, 52);
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 1, 2, &pl), 4);
  assert_string_equal(list(pl.cpuset), "52-103,156-207");
  weftx_place_clear(&pl);

  /* 4 ranks: one GPU per PCI switch, so each its own NIC. */
  for (r = 0; r < 4; r++) {
    assert_int_equal(gpu_of(t, &p, r, 4, &pl), 2 * r);
    assert_int_equal(pl.ncores, 26);
    nics[r] = pl.nic;
    weftx_place_clear(&pl);
  }
  assert_true(nics[0] != nics[1] && nics[1] != nics[2] && nics[2] != nics[3] && nics[0] != nics[3]);

  /* 9 ranks: an error that says what to do, unless oversubscribing. */
  assert_int_equal(weftx_map_rank(t, &p, 0, 9, &pl, why, sizeof(why)), WEFT_ENOFIT);
  assert_string_equal(why, "9 ranks but a3-highgpu-8g.xml has 8 GPUs; use -np 8 or fewer, "
                           "--map-by core, or --oversubscribe");
  assert_null(pl.cpuset);
  p.oversubscribe = 1;
  assert_int_equal(gpu_of(t, &p, 8, 9, &pl), 0);
  assert_non_null(strstr(pl.note, "oversubscribed"));
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 15, 16, &pl), 7);
  weftx_place_clear(&pl);

  /* pe: N cores each, and an error when there are not so many. */
  p = policy("gpu:pe=4", NULL);
  assert_int_equal(gpu_of(t, &p, 1, 8, &pl), 1);
  assert_string_equal(list(pl.cpuset), "4-7,108-111");
  assert_int_equal(pl.ncores, 4);
  weftx_place_clear(&pl);
  p = policy("gpu:pe=14", NULL);
  assert_int_equal(weftx_map_rank(t, &p, 0, 8, &pl, why, sizeof(why)), WEFT_ENOFIT);
  assert_non_null(strstr(why, "pe=14"));
  assert_non_null(strstr(why, "52"));
  p = policy("gpu:pe=53", NULL);
  assert_int_equal(weftx_map_rank(t, &p, 0, 1, &pl, why, sizeof(why)), WEFT_ENOFIT);
  assert_non_null(strstr(why, "pe=53"));
  p.oversubscribe = 1;
  assert_int_equal(weftx_map_rank(t, &p, 0, 1, &pl, why, sizeof(why)), WEFT_ENOFIT);

  /* Reserved processors are never given out. */
  p = policy(NULL, NULL);
  p.reserved_cpus = "0-3,104-107";
  assert_int_equal(gpu_of(t, &p, 0, 8, &pl), 0);
  assert_string_equal(list(pl.cpuset), "4-15,108-119");
  weftx_place_clear(&pl);
  p.reserved_cpus = "zero";
  assert_int_equal(weftx_map_rank(t, &p, 0, 8, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_non_null(strstr(why, "zero"));
  p.reserved_cpus = "0-207";
  assert_int_equal(weftx_map_rank(t, &p, 0, 8, &pl, why, sizeof(why)), WEFT_ENOFIT);

  /* Other bindings under map-by gpu. */
  p = policy("gpu", "numa");
  assert_int_equal(gpu_of(t, &p, 5, 8, &pl), 5);
  assert_string_equal(list(pl.cpuset), "52-103,156-207");
  assert_int_equal(pl.ncores, 52);
  weftx_place_clear(&pl);
  p = policy("gpu", "none");
  assert_int_equal(gpu_of(t, &p, 5, 8, &pl), 5);
  assert_int_equal(pl.bound, 0);
  assert_string_equal(list(pl.cpuset), "0-207");
  assert_int_equal(weftx_place_format(t, "h", 5, &pl, line, sizeof(line)), 0);
  assert_non_null(strstr(line, "GPU 5 (0000:85:00.0) cores 0-207 NUMA 0-1 NIC enp134s0"));
  weftx_place_clear(&pl);
  p = policy("gpu", "core");
  assert_int_equal(gpu_of(t, &p, 1, 8, &pl), 1);
  assert_string_equal(list(pl.cpuset), "13-25,117-129");
  weftx_place_clear(&pl);

  /* Bad arguments. */
  assert_int_equal(weftx_map_rank(t, &p, 8, 8, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_int_equal(weftx_map_rank(t, &p, 0, 0, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_int_equal(weftx_map_rank(NULL, &p, 0, 1, &pl, why, sizeof(why)), WEFT_EINVAL);
  weftx_topo_destroy(t);
}

/* GPU PCI order unlike NUMA order: GPUs 0 and 2 on node 1, 1 and 3 on node 0. */
/* The GPUs a Slurm job was given (policy.gpus): only those are counted, chosen
 * and spread, each with the cores and NIC next to it. */
static void test_gpu_allowed(void **state)
{
  weftx_topo *t = load("a3-highgpu-8g.xml");
  weftx_policy p = policy(NULL, NULL);
  weftx_place pl;
  char why[256];
  (void)state;

  p.gpus = "3-4";
  assert_int_equal(weftx_map_slots(t, &p), 2);
  assert_int_equal(gpu_of(t, &p, 0, 2, &pl), 3);
  assert_string_equal(list(pl.cpuset), "0-51,104-155"); /* GPU 3's NUMA node, alone there */
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 1, 2, &pl), 4);
  assert_string_equal(list(pl.cpuset), "52-103,156-207");
  assert_string_equal(weftx_topo_nic(t, pl.nic)->name, "enp134s0");
  weftx_place_clear(&pl);
  /* one rank of 2 GPUs on one socket... and of 4 spread over both */
  assert_int_equal(gpu_of(t, &p, 0, 1, &pl), 3);
  weftx_place_clear(&pl);
  p.gpus = "0-3,6";
  assert_int_equal(gpu_of(t, &p, 1, 2, &pl), 6);
  weftx_place_clear(&pl);
  /* more ranks than the job's GPUs: the error names them */
  p.gpus = "3-4";
  assert_int_equal(weftx_map_rank(t, &p, 0, 3, &pl, why, sizeof(why)), WEFT_ENOFIT);
  assert_string_equal(why, "3 ranks but a3-highgpu-8g.xml has 2 GPUs the ranks may use (GPUs 3-4 "
                           "of 8); use -np 2 or fewer, --map-by core, or --oversubscribe");
  p.oversubscribe = 1;
  assert_int_equal(gpu_of(t, &p, 2, 3, &pl), 3);
  weftx_place_clear(&pl);
  p.oversubscribe = 0;
  /* none given: auto is Open MPI's layout, map-by gpu says why it cannot */
  p.gpus = "";
  assert_int_equal(weftx_map_slots(t, &p), 208 / 2);
  assert_int_equal(gpu_of(t, &p, 0, 2, &pl), -1);
  weftx_place_clear(&pl);
  weftx_policy g = policy("gpu", NULL);
  g.gpus = "";
  assert_int_equal(weftx_map_rank(t, &g, 0, 1, &pl, why, sizeof(why)), WEFT_ENOGPU);
  assert_string_equal(why, "--map-by gpu but a3-highgpu-8g.xml has no GPUs the ranks may use "
                           "(GPUs none of 8); use --map-by core");
  /* a GPU the machine lacks, or no list at all: EINVAL with the reason */
  g.gpus = "7-8";
  assert_int_equal(weftx_map_rank(t, &g, 0, 1, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_string_equal(why, "GPU 8 of the GPUs the ranks may use (7-8) is not a GPU of "
                           "a3-highgpu-8g.xml, which has 8");
  assert_int_equal(weftx_map_slots(t, &g), 0);
  g.gpus = "x";
  assert_int_equal(weftx_map_rank(t, &g, 0, 1, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_string_equal(why, "GPU list 'x' is not a list like 0-1,4");
  g.gpus = "2-";
  assert_int_equal(weftx_map_rank(t, &g, 0, 1, &pl, why, sizeof(why)), WEFT_EINVAL);
  assert_null(pl.cpuset);
  weftx_topo_destroy(t);
}

static void test_gpu_interleaved(void **state)
{
  weftx_topo *t = load("gpu-numa-interleaved.xml");
  weftx_policy p = policy("gpu", NULL);
  weftx_place pl;
  (void)state;

  assert_int_equal(gpu_of(t, &p, 0, 4, &pl), 0);
  assert_int_equal(weftx_topo_gpu(t, 0)->numa, 1);
  assert_string_equal(list(pl.cpuset), "8-11,24-27");
  assert_string_equal(list(pl.nodeset), "1");
  assert_string_equal(weftx_topo_nic(t, pl.nic)->name, "enp5s0");
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 1, 4, &pl), 1);
  assert_string_equal(list(pl.cpuset), "0-3,16-19");
  assert_string_equal(list(pl.nodeset), "0");
  assert_string_equal(weftx_topo_nic(t, pl.nic)->name, "enp21s0");
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 2, 4, &pl), 2);
  assert_string_equal(list(pl.cpuset), "12-15,28-31");
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 3, 4, &pl), 3);
  assert_string_equal(list(pl.cpuset), "4-7,20-23");
  weftx_place_clear(&pl);
  /* 2 ranks: one per NUMA node, not GPUs 0 and 1 by accident of order. */
  assert_int_equal(gpu_of(t, &p, 0, 2, &pl), 0);
  assert_string_equal(list(pl.cpuset), "8-15,24-31");
  weftx_place_clear(&pl);
  assert_int_equal(gpu_of(t, &p, 1, 2, &pl), 1);
  assert_string_equal(list(pl.cpuset), "0-7,16-23");
  weftx_place_clear(&pl);
  weftx_topo_destroy(t);
}

/* PCI devices without locality: the whole machine shared out, and said. */
static void test_gpu_flat(void **state)
{
  weftx_topo *t = load("flat-vm-2numa.xml");
  weftx_policy p = policy(NULL, NULL);
  weftx_place pl;
  (void)state;

  assert_int_equal(weftx_topo_has_locality(t), 0);
  assert_int_equal(gpu_of(t, &p, 1, 2, &pl), 1);
  assert_int_equal(pl.ncores, weftx_topo_ncores(t) / 2);
  assert_non_null(strstr(pl.note, "no NUMA locality"));
  assert_true(pl.nic >= 0);
  weftx_place_clear(&pl);
  weftx_topo_destroy(t);
}

/* Equally near NICs are shared out: a3-megagpu-8g has two NICs per PCI
 * switch of two GPUs, so every GPU gets its own. */
static void test_nic_spread(void **state)
{
  weftx_topo *t = load("a3-megagpu-8g.xml");
  weftx_policy p = policy(NULL, NULL);
  weftx_place pl;
  int r, used[64] = {0};
  (void)state;

  assert_true(weftx_topo_nnics(t) < 64);
  for (r = 0; r < 8; r++) {
    assert_int_equal(gpu_of(t, &p, r, 8, &pl), r);
    assert_true(pl.nic >= 0);
    assert_int_equal(weftx_topo_gpu_nic_near(t, r, pl.nic), WEFTX_NEAR_SWITCH);
    assert_int_equal(used[pl.nic]++, 0);
    weftx_place_clear(&pl);
  }
  weftx_topo_destroy(t);
}

/* A NIC without an interface name is never chosen over a named one, even
 * when it is the nearest: a3-highgpu-8g with enp6s0's name taken away. */
static void test_nic_unnamed(void **state)
{
  char src[1024], dst[] = "/tmp/test-map-XXXXXX", why[512];
  const char *dir = getenv("WEFT_DATADIR");
  char *xml = NULL, *name, *start, *end;
  weftx_topo *t = NULL;
  weftx_policy p = policy(NULL, NULL);
  weftx_place pl;
  long len;
  FILE *f;
  int fd, r, unnamed = -1;
  (void)state;

  snprintf(src, sizeof(src), "%s/topologies/a3-highgpu-8g.xml", dir ? dir : "../../share/weft");
  f = fopen(src, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  len = ftell(f);
  rewind(f);
  xml = calloc((size_t)len + 1, 1);
  assert_non_null(xml);
  assert_int_equal(fread(xml, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  /* Cut out the OSDev element that names the NIC. */
  name = strstr(xml, "name=\"enp6s0\"");
  assert_non_null(name);
  for (start = name; start > xml && strncmp(start, "<object", 7) != 0; start--)
    ;
  end = strstr(name, "</object>");
  assert_non_null(end);
  end += strlen("</object>");
  memmove(start, end, strlen(end) + 1);
  fd = mkstemp(dst);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(xml, f);
  fclose(f);
  free(xml);
  if (weftx_topo_load(dst, 0, &t, why, sizeof(why)) != 0) {
    unlink(dst);
    fail_msg("cannot load the edited topology: %s", why);
  }
  unlink(dst);
  for (r = 0; r < weftx_topo_nnics(t); r++)
    if (!weftx_topo_nic(t, r)->name[0])
      unnamed = r;
  assert_true(unnamed >= 0);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 0, unnamed), WEFTX_NEAR_SWITCH);
  for (r = 0; r < 8; r++) {
    assert_int_equal(gpu_of(t, &p, r, 8, &pl), r);
    assert_true(pl.nic >= 0);
    assert_true(pl.nic != unnamed);
    assert_true(weftx_topo_nic(t, pl.nic)->name[0] != '\0');
    weftx_place_clear(&pl);
  }
  weftx_topo_destroy(t);
}

/* ---- placement: CPU layouts are Open MPI's (tests/cli/test-ompi-oracle.sh checks
 * them against mpirun itself); here, that the entry points agree ---- */

static void test_cpu(void **state)
{
  weftx_topo *t = load("a3-highgpu-8g.xml");
  weftx_policy p = policy("core", NULL);
  weftx_host_map m;
  weftx_place pl;
  char why[512];
  (void)state;

  /* mpirun -np 8 --map-by core on the host: rank i on core i, bound to it, and (8
   * GPUs for 8 ranks) the GPU nearest its binding */
  assert_int_equal(weftx_map_slots(t, &p), 104);
  assert_int_equal(weftx_map_host(t, &p, 8, &m, why, sizeof(why)), 0);
  assert_int_equal(m.n, 8);
  assert_int_equal(m.slots, 104);
  assert_string_equal(m.how, "map-by core, rank-by core, bind-to core, as mpirun does");
  assert_string_equal(list(m.place[3].cpuset), "3,107");
  assert_int_equal(m.place[3].ncores, 1);
  assert_int_equal(m.place[3].bound, 1);
  assert_int_equal(m.place[3].gpu, 3);
  assert_string_equal(list(m.place[3].nodeset), "0");
  /* weft-rank's answer for one rank is weft-topo's for the host */
  for (int r = 0; r < 8; r++) {
    assert_int_equal(weftx_map_rank(t, &p, r, 8, &pl, why, sizeof(why)), 0);
    assert_true(hwloc_bitmap_isequal(pl.cpuset, m.place[r].cpuset));
    assert_int_equal(pl.gpu, m.place[r].gpu);
    assert_int_equal(pl.nic, m.place[r].nic);
    weftx_place_clear(&pl);
  }
  weftx_host_map_clear(&m);
  assert_null(m.place);

  /* more ranks than cores: mpirun's refusal; with --oversubscribe, unbound and said */
  assert_int_equal(weftx_map_host(t, &p, 105, &m, why, sizeof(why)), WEFT_ENOFIT);
  assert_non_null(strstr(why, "a3-highgpu-8g.xml: there are not enough slots"));
  p.oversubscribe = 1;
  assert_int_equal(weftx_map_host(t, &p, 105, &m, why, sizeof(why)), 0);
  assert_int_equal(m.place[0].bound, 0);
  weftx_host_map_clear(&m);
  p = policy(NULL, NULL);
  p.gpus = ""; /* a Slurm job that gave this host no GPU: Open MPI's default layout */
  p.oversubscribe = 1;
  assert_int_equal(weftx_map_host(t, &p, 0, &m, why, sizeof(why)), 0);
  assert_int_equal(m.n, 104);
  weftx_host_map_clear(&m);
  assert_int_equal(weftx_map_host(t, &p, 300, &m, why, sizeof(why)), 0);
  assert_int_equal(m.place[299].bound, 0);
  assert_int_equal(m.place[299].gpu, -1);
  assert_non_null(strstr(m.place[299].note, "oversubscribed: 300 ranks on 104 slots"));
  weftx_host_map_clear(&m);

  /* --cpus-per-rank beside the words (weft-topo --pe), and what mpirun refuses */
  p = policy("socket", NULL);
  p.pe = 4;
  assert_int_equal(weftx_map_host(t, &p, 4, &m, why, sizeof(why)), 0);
  assert_int_equal(hwloc_bitmap_weight(m.place[1].cpuset), 8);
  assert_int_equal(m.place[1].ncores, 4);
  weftx_host_map_clear(&m);
  p = policy("core:PE=2", NULL);
  assert_int_equal(weftx_map_host(t, &p, 2, &m, why, sizeof(why)), WEFT_EINVAL);
  assert_non_null(strstr(why, "cannot map by core"));

  /* weft's own words on a host without GPUs, and what a CPU layout lacks */
  weftx_topo_destroy(t);
  t = load("n2-standard-16.xml");
  p = policy(NULL, NULL);
  assert_int_equal(weftx_map_slots(t, &p), 8);
  assert_int_equal(gpu_of(t, &p, 0, 2, &pl), -1);
  assert_int_equal(pl.ncores, 1);
  weftx_place_clear(&pl);
  p = policy("gpu", NULL);
  assert_int_equal(weftx_map_rank(t, &p, 0, 1, &pl, why, sizeof(why)), WEFT_ENOGPU);
  assert_non_null(strstr(why, "no GPUs"));
  p = policy(NULL, "gpu-local");
  assert_int_equal(weftx_map_rank(t, &p, 0, 1, &pl, why, sizeof(why)), WEFT_ENOGPU);
  assert_non_null(strstr(why, "gpu-local"));
  p = policy(NULL, NULL);
  p.reserved_cpus = "0-1";
  assert_int_equal(weftx_map_host(t, &p, 2, &m, why, sizeof(why)), WEFT_EINVAL);
  assert_non_null(strstr(why, "reserved processors (0-1)"));
  weftx_topo_destroy(t);
}

/* A topology without Core objects (some VM exports): Open MPI counts no slot there. */
static void test_no_cores(void **state)
{
  char path[] = "/tmp/test-map-nocore-XXXXXX", why[512];
  hwloc_topology_t h;
  weftx_topo *t = NULL;
  weftx_policy p = policy(NULL, NULL);
  weftx_host_map m;
  int fd;
  (void)state;

  fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(hwloc_topology_init(&h), 0);
  assert_int_equal(hwloc_topology_set_synthetic(h, "package:2 numa:1 pu:4"), 0);
  assert_int_equal(hwloc_topology_load(h), 0);
  assert_int_equal(hwloc_topology_export_xml(h, path, 0), 0);
  hwloc_topology_destroy(h);
  if (weftx_topo_load(path, 0, &t, why, sizeof(why)) != 0) {
    unlink(path);
    fail_msg("cannot load a synthetic topology: %s", why);
  }
  unlink(path);
  assert_int_equal(weftx_map_slots(t, &p), 0);
  assert_int_equal(weftx_map_host(t, &p, 2, &m, why, sizeof(why)), WEFT_ENOFIT);
  p.oversubscribe = 1;
  assert_int_equal(weftx_map_host(t, &p, 2, &m, why, sizeof(why)), 0);
  assert_int_equal(m.place[1].bound, 0);
  assert_int_equal(m.place[1].nic, -1);
  weftx_host_map_clear(&m);
  weftx_topo_destroy(t);
}

/* ---- plan JSON ---- */

static void test_json(void **state)
{
  weftx_topo *t = load("a3-highgpu-8g.xml");
  weftx_policy p = policy(NULL, NULL);
  weftx_plan_host hosts[2];
  weftx_plan_rank ranks[2];
  weftx_plan plan;
  const char *env[] = {"NCCL_SOCKET_IFNAME=enp0s12", "X=a\"b\\c\nd"};
  char *buf = NULL;
  size_t len = 0;
  FILE *f;
  int r;
  (void)state;

  memset(&plan, 0, sizeof(plan));
  memset(hosts, 0, sizeof(hosts));
  memset(ranks, 0, sizeof(ranks));
  hosts[0].name = "vm-a";
  hosts[0].slots = 8;
  hosts[0].topo = t;
  hosts[0].topology = "a3-highgpu-8g.xml";
  hosts[1].name = "vm-\"b\"";
  hosts[1].slots = 8;
  hosts[1].topo = t;
  hosts[1].topology = NULL;
  for (r = 0; r < 2; r++) {
    ranks[r].rank = r;
    ranks[r].host = r;
    ranks[r].node_rank = r;
    ranks[r].local_rank = 0;
    assert_int_equal(gpu_of(t, &p, 0, 8, &ranks[r].place), 0);
  }
  ranks[1].place.nic = -1;
  plan.np = 2;
  plan.nhosts = 2;
  plan.hosts = hosts;
  plan.ranks = ranks;
  plan.nenv = 2;
  plan.env = env;
  f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(weftx_plan_write_json(f, &plan), 0);
  fclose(f);
  assert_string_equal(
    buf,
    "{ \"version\": 1, \"np\": 2,\n"
    "  \"hosts\": [\n"
    "    { \"name\": \"vm-a\", \"slots\": 8, \"gpus\": 8, \"topology\": \"a3-highgpu-8g.xml\" },\n"
    "    { \"name\": \"vm-\\\"b\\\"\", \"slots\": 8, \"gpus\": 8, \"topology\": \"live\" }\n"
    "  ],\n"
    "  \"ranks\": [\n"
    "    { \"rank\": 0, \"host\": \"vm-a\", \"node_rank\": 0, \"local_rank\": 0, \"gpu\": { "
    "\"index\": 0, "
    "\"pci\": \"0000:04:00.0\" }, \"cpus\": \"0-12,104-116\", \"numa\": [0], \"nic\": \"enp6s0\" "
    "},\n"
    "    { \"rank\": 1, \"host\": \"vm-\\\"b\\\"\", \"node_rank\": 1, \"local_rank\": 0, \"gpu\": "
    "{ \"index\": 0, "
    "\"pci\": \"0000:04:00.0\" }, \"cpus\": \"0-12,104-116\", \"numa\": [0], \"nic\": null }\n"
    "  ],\n"
    "  \"env\": {\n"
    "    \"NCCL_SOCKET_IFNAME\": \"enp0s12\",\n"
    "    \"X\": \"a\\\"b\\\\c\\nd\"\n"
    "  }\n"
    "}\n");
  free(buf);
  buf = NULL;

  /* A rank without a GPU, and no env. */
  weftx_place_clear(&ranks[0].place);
  p = policy("core", NULL);
  p.gpus = "";
  assert_int_equal(gpu_of(t, &p, 0, 1, &ranks[0].place), -1);
  plan.np = 1;
  plan.nhosts = 1;
  plan.nenv = 0;
  f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(weftx_plan_write_json(f, &plan), 0);
  fclose(f);
  assert_non_null(strstr(buf, "\"gpu\": null, \"cpus\": \"0,104\", \"numa\": [0]"));
  assert_non_null(strstr(buf, "\"env\": {}\n}\n"));
  free(buf);
  for (r = 0; r < 2; r++)
    weftx_place_clear(&ranks[r].place);
  assert_int_equal(weftx_plan_write_json(NULL, &plan), WEFT_EINVAL);
  weftx_topo_destroy(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_valid), cmocka_unit_test(test_parse_garbage),
    cmocka_unit_test(test_gpu_full),    cmocka_unit_test(test_gpu_a3),
    cmocka_unit_test(test_gpu_allowed), cmocka_unit_test(test_gpu_interleaved),
    cmocka_unit_test(test_gpu_flat),    cmocka_unit_test(test_nic_spread),
    cmocka_unit_test(test_nic_unnamed), cmocka_unit_test(test_cpu),
    cmocka_unit_test(test_no_cores),    cmocka_unit_test(test_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
