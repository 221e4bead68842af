/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of weftrun --check's pure part: the records of the contract
 * (src/common/agent.c: printed, parsed, with a prefix, broken), the agent's
 * check options written and parsed, the pair rule (src/common/check-pairs.c)
 * and the evaluation (src/weftrun/check/eval.c) of host sets built as the
 * agents would report them: all well, a version that differs (and two halves
 * that differ), weft-rank against weftrun, a host not reached, GPUs against
 * the plan and NVML against the PCI bus, an MTU, a cut pair and a cut host,
 * a clock, a taken port, memory limits, a check that ran out of time, a
 * program missing or built for another machine, and the order of problems. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <weftx.h>

#include "agent.h"
#include "check/check.h"

/* ---- Records ------------------------------------------------------------- */

static void test_records(void **state)
{
  char buf[512], key[64];
  const char *v;
  size_t vlen;
  int host;
  (void)state;
  FILE *f = fmemopen(buf, sizeof(buf), "w");
  assert_non_null(f);
  wt_agent_check_print(f, 3, "ver.nccl", "%s", "2.28.9");
  wt_agent_check_print(f, 12, "gce.warn", "two\nlines");
  fclose(f);
  assert_string_equal(buf, "#weft-check 3 ver.nccl 2.28.9\n#weft-check 12 gce.warn two lines\n");
  assert_int_equal(wt_agent_check_parse(buf, &host, key, sizeof(key), &v, &vlen), 1);
  assert_int_equal(host, 3);
  assert_string_equal(key, "ver.nccl");
  assert_int_equal(vlen, 6);
  assert_memory_equal(v, "2.28.9", 6);
  /* an engine's prefix is allowed; an empty value is a value */
  assert_int_equal(
    wt_agent_check_parse("[1,7]<stdout>:#weft-check 7 end \n", &host, key, sizeof(key), &v, &vlen),
    1);
  assert_int_equal(host, 7);
  assert_string_equal(key, "end");
  assert_int_equal(vlen, 0);
  assert_int_equal(wt_agent_check_parse("#weft-check 0 end", &host, key, sizeof(key), &v, &vlen),
                   1);
  /* not records */
  assert_int_equal(wt_agent_check_parse("weft-check 1 a b", &host, key, sizeof(key), &v, &vlen), 0);
  assert_int_equal(wt_agent_check_parse("#weft-check x a b", &host, key, sizeof(key), &v, &vlen),
                   0);
  assert_int_equal(wt_agent_check_parse("#weft-check -1 a b", &host, key, sizeof(key), &v, &vlen),
                   0);
  assert_int_equal(wt_agent_check_parse("#weft-check 1", &host, key, sizeof(key), &v, &vlen), 0);
  assert_int_equal(wt_agent_check_parse("#weft-check 1 ", &host, key, sizeof(key), &v, &vlen), 0);
  assert_int_equal(
    wt_agent_check_parse("#weft-check 99999999 a b", &host, key, sizeof(key), &v, &vlen), 0);
  char small[4];
  assert_int_equal(
    wt_agent_check_parse("#weft-check 1 longkey v", &host, small, sizeof(small), &v, &vlen), 0);
}

static int add_word(void *ud, const char *w)
{
  char **argv = ud;
  int n = 0;
  while (argv[n])
    n++;
  argv[n] = strdup(w);
  return argv[n] ? 0 : -1;
}

static void test_agent_check_args(void **state)
{
  wt_agent_args a, b;
  char *argv[32] = {NULL}, why[200];
  int first = 0;
  (void)state;
  argv[0] = strdup("weft-rank");
  wt_agent_args_init(&a);
  a.check = "full";
  a.check_id = "0123abcd";
  a.check_deadline = 9;
  a.layout = "1x4";
  a.master_addr = "10.0.0.1";
  a.master_port = 29500;
  a.ifname = "eth0";
  assert_int_equal(wt_agent_args_write(&a, add_word, argv), 0);
  int argc = 0;
  while (argv[argc])
    argc++;
  argv[argc++] = strdup("--");
  argv[argc++] = strdup("prog");
  wt_agent_args_init(&b);
  assert_int_equal(wt_agent_args_parse(&b, argc, argv, &first, why, sizeof(why)), 0);
  assert_string_equal(b.check, "full");
  assert_string_equal(b.check_id, "0123abcd");
  assert_int_equal(b.check_deadline, 9);
  assert_string_equal(b.layout, "1x4");
  assert_string_equal(b.master_addr, "10.0.0.1");
  assert_int_equal(b.master_port, 29500);
  assert_string_equal(argv[first], "prog");
  for (int i = 0; argv[i]; i++)
    free(argv[i]);
  char *bad[] = {(char *)"weft-rank", (char *)"--check", (char *)"most", NULL};
  wt_agent_args_init(&b);
  assert_int_equal(wt_agent_args_parse(&b, 3, bad, &first, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "full or reach"));
}

/* ---- The pair rule ------------------------------------------------------------ */

static void test_pairs_small(void **state)
{
  int t[WT_CHECK_MAX_TARGETS];
  (void)state;
  assert_int_equal(wt_check_targets(0, 1, t, WT_CHECK_MAX_TARGETS), 0);
  assert_int_equal(wt_check_targets(1, 2, t, WT_CHECK_MAX_TARGETS), 1);
  assert_int_equal(t[0], 0);
  /* every other host, in order, up to WT_CHECK_ALL_PAIRS hosts */
  assert_int_equal(wt_check_targets(5, WT_CHECK_ALL_PAIRS, t, WT_CHECK_MAX_TARGETS),
                   WT_CHECK_ALL_PAIRS - 1);
  for (int i = 0; i < WT_CHECK_ALL_PAIRS - 1; i++)
    assert_int_equal(t[i], i < 5 ? i : i + 1);
  assert_int_equal(wt_check_targets(7, 4, t, WT_CHECK_MAX_TARGETS), 0);
  assert_int_equal(wt_check_targets(0, 4, t, 2), 2);
}

static void test_pairs_large(void **state)
{
  (void)state;
  static const int sizes[] = {WT_CHECK_ALL_PAIRS + 1, 64, 100, 1000, 16384};
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
    int n = sizes[s];
    int *in = calloc((size_t)n, sizeof(int)), t[WT_CHECK_MAX_TARGETS];
    assert_non_null(in);
    for (int me = 0; me < n; me++) {
      int k = wt_check_targets(me, n, t, WT_CHECK_MAX_TARGETS);
      int ring = 0, master = me == 0;
      assert_true(k >= 4 && k <= 7);
      for (int i = 0; i < k; i++) {
        assert_true(t[i] >= 0 && t[i] < n && t[i] != me);
        if (i)
          assert_true(t[i] > t[i - 1]);
        ring += t[i] == (me + 1) % n || t[i] == (me + n - 1) % n;
        master |= t[i] == 0;
        in[t[i]]++;
      }
      assert_int_equal(ring, 2);
      assert_true(master);
    }
    /* every host is tested by at least 4 others */
    for (int h = 0; h < n; h++)
      assert_true(in[h] >= 4);
    free(in);
  }
}

/* ---- Evaluation ----------------------------------------------------------------- */

#define MAXF 64

typedef struct fhost {
  wr_check_host h;
  wr_check_fact f[MAXF];
  char store[MAXF][2][160];
} fhost;

static void fact(fhost *h, const char *key, const char *value)
{
  int i = h->h.nfacts++;
  assert_true(i < MAXF);
  snprintf(h->store[i][0], sizeof(h->store[i][0]), "%s", key);
  snprintf(h->store[i][1], sizeof(h->store[i][1]), "%s", value);
  h->f[i].key = h->store[i][0];
  h->f[i].value = h->store[i][1];
  h->h.facts = h->f;
}

/* Replace (or add) the value of \p key. */
static void set(fhost *h, const char *key, const char *value)
{
  for (int i = 0; i < h->h.nfacts; i++)
    if (!strcmp(h->f[i].key, key)) {
      snprintf(h->store[i][1], sizeof(h->store[i][1]), "%s", value);
      return;
    }
  fact(h, key, value);
}

static const char *const names[] = {"vm-a", "vm-b", "vm-c", "vm-d", "vm-e"};

/* \p n healthy hosts of 8 GPUs each, every pair tested, vm-a the master. */
static fhost *healthy(int n)
{
  fhost *v = calloc((size_t)n, sizeof(*v));
  char buf[64];
  assert_non_null(v);
  for (int i = 0; i < n; i++) {
    fhost *h = &v[i];
    h->h.name = names[i];
    h->h.answered = h->h.complete = 1;
    h->h.start_s = 0.4;
    h->h.planned = h->h.planned_gpus = 8;
    fact(h, WT_CK_VER_WEFT, "0.1.0");
    fact(h, WT_CK_VER_OMPI, "4.1.4");
    fact(h, WT_CK_VER_HWLOC, "2.9.0");
    fact(h, WT_CK_VER_NCCL, "2.28.9");
    fact(h, WT_CK_VER_CUDART, "13.0");
    fact(h, WT_CK_VER_CUDA, "absent");
    fact(h, WT_CK_VER_DRIVER, "absent");
    fact(h, WT_CK_PROGRAM, "elf ELF64 x86-64 /opt/job/train");
    fact(h, WT_CK_GPU_PCI, "8");
    fact(h, WT_CK_GPU_NVML, "absent no libnvidia-ml.so.1");
    fact(h, WT_CK_NET_RDMA, "0");
    snprintf(buf, sizeof(buf), "eth0 10.0.0.%d/24", i + 1);
    fact(h, WT_CK_NET_IF, buf);
    fact(h, WT_CK_NET_MTU, "1500");
    fact(h, WT_CK_NET_GVNIC, "no");
    fact(h, WT_CK_NET_ROUTE, "eth0");
    fact(h, WT_CK_MEM_TOTAL, "68719476736");
    fact(h, WT_CK_MEM_AVAIL, "60000000000");
    fact(h, WT_CK_SHM, "34359738368 34359738368");
    fact(h, WT_CK_MEMLOCK, "8388608");
    if (i == 0) {
      fact(h, WT_CK_PORT, "29500 free");
      fact(h, WT_CK_CLOCK, "0 0");
    } else {
      fact(h, WT_CK_MASTER, "ok 0.3");
      fact(h, WT_CK_CLOCK, "0.0004 0.0001");
    }
    for (int j = 0; j < n; j++)
      if (j != i) {
        snprintf(buf, sizeof(buf), "%d ok 0.25", j);
        fact(h, WT_CK_PAIR, buf);
      }
  }
  return v;
}

/* Evaluate \p n hosts (their facts as they are now). */
static void evaluate(fhost *v, int n, const char *plan_why, wr_check_result *r)
{
  wr_check_host hosts[8];
  for (int i = 0; i < n; i++)
    hosts[i] = v[i].h;
  wr_check_input in = {hosts, n, "mpirun", "0.1.0", "eth0", 0, 29500, plan_why};
  assert_int_equal(wr_check_evaluate(&in, r), 0);
}

/* The one problem whose text contains \p needle, with \p status; fails otherwise. */
static const wr_check_problem *problem_with(const wr_check_result *r, wr_check_status status,
                                            const char *needle)
{
  const wr_check_problem *found = NULL;
  for (int i = 0; i < r->nproblems; i++)
    if (strstr(r->problems[i].text, needle)) {
      if (found)
        fail_msg("two problems say '%s'", needle);
      found = &r->problems[i];
    }
  if (!found) {
    for (int i = 0; i < r->nproblems; i++)
      print_message("problem: %s\n", r->problems[i].text);
    fail_msg("no problem says '%s'", needle);
  }
  assert_int_equal(found->status, status);
  return found;
}

static const wr_check_cell *cell(const wr_check_result *r, int host, int col)
{
  return wr_check_cell_at(r, host, col);
}

static void test_all_well(void **state)
{
  wr_check_result r;
  fhost *v = healthy(4);
  (void)state;
  evaluate(v, 4, NULL, &r);
  for (int i = 0; i < r.nproblems; i++)
    print_message("unexpected: %s\n", r.problems[i].text);
  assert_int_equal(r.nproblems, 0);
  assert_int_equal(r.worst, WR_CHECK_OK);
  for (int h = 0; h < 4; h++)
    for (int c = 0; c < WR_CHECK_NCOLS; c++)
      assert_int_equal(cell(&r, h, c)->status, WR_CHECK_OK);
  assert_string_equal(cell(&r, 0, WR_CHECK_CLOCK)->value, "master");
  assert_string_equal(cell(&r, 1, WR_CHECK_CLOCK)->value, "+0.40 ms");
  assert_string_equal(cell(&r, 2, WR_CHECK_PAIRS)->value, "3/3");
  assert_string_equal(cell(&r, 3, WR_CHECK_GPUS)->value, "8 (no NVML)");
  assert_string_equal(cell(&r, 3, WR_CHECK_NET)->value, "eth0 mtu 1500");
  assert_string_equal(cell(&r, 3, WR_CHECK_PROGRAM)->value, "ELF64 x86-64");
  assert_string_equal(cell(&r, 1, WR_CHECK_VERSIONS)->value, "weft 0.1.0");
  assert_string_equal(cell(&r, 1, WR_CHECK_REACH)->value, "0.40 s");
  wr_check_result_free(&r);
  free(v);
}

static void test_versions(void **state)
{
  wr_check_result r;
  fhost *v = healthy(4);
  (void)state;
  set(&v[2], WT_CK_VER_NCCL, "2.27.3");
  evaluate(v, 4, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_FAIL, "NCCL 2.27.3");
  assert_int_equal(p->host, 2);
  assert_int_equal(p->col, WR_CHECK_VERSIONS);
  assert_non_null(strstr(p->text, "vm-c"));
  assert_non_null(strstr(p->text, "the other 3 hosts have 2.28.9"));
  assert_int_equal(cell(&r, 2, WR_CHECK_VERSIONS)->status, WR_CHECK_FAIL);
  assert_string_equal(cell(&r, 2, WR_CHECK_VERSIONS)->value, "NCCL 2.27.3");
  assert_int_equal(cell(&r, 1, WR_CHECK_VERSIONS)->status, WR_CHECK_OK);
  assert_int_equal(r.worst, WR_CHECK_FAIL);
  wr_check_result_free(&r);

  /* two against two: no majority, both sides named */
  set(&v[3], WT_CK_VER_NCCL, "2.27.3");
  evaluate(v, 4, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL, "NCCL 2.27.3");
  assert_non_null(strstr(p->text, "vm-c and vm-d"));
  assert_non_null(strstr(p->text, "2.28.9 on vm-a and vm-b"));
  wr_check_result_free(&r);

  /* absent is a value */
  set(&v[3], WT_CK_VER_NCCL, "2.28.9");
  set(&v[2], WT_CK_VER_NCCL, "absent");
  evaluate(v, 4, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "NCCL absent");
  wr_check_result_free(&r);

  /* every host's weft differs from weftrun's own */
  set(&v[2], WT_CK_VER_NCCL, "2.28.9");
  for (int i = 0; i < 4; i++)
    set(&v[i], WT_CK_VER_WEFT, "0.0.9");
  evaluate(v, 4, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL, "weftrun here is weft 0.1.0");
  assert_non_null(strstr(p->text, "vm-a, vm-b, vm-c and 1 more"));
  assert_string_equal(cell(&r, 3, WR_CHECK_VERSIONS)->value, "weft 0.0.9");
  wr_check_result_free(&r);
  free(v);
}

static void test_reach(void **state)
{
  wr_check_result r;
  fhost *v = healthy(3);
  (void)state;
  v[1].h.answered = v[1].h.complete = 0;
  v[1].h.nfacts = 0;
  v[1].h.engine_why = "ssh: connect to host vm-b port 22: No route to host";
  /* the others could not test it */
  for (int i = 0; i < 3; i += 2)
    for (int f = 0; f < v[i].h.nfacts; f++)
      if (!strcmp(v[i].f[f].key, WT_CK_PAIR) && v[i].f[f].value[0] == '1')
        snprintf(v[i].store[f][1], sizeof(v[i].store[f][1]), "1 skip not registered");
  v[2].h.start_s = 12;
  evaluate(v, 3, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_FAIL, "No route to host");
  assert_int_equal(p->host, 1);
  assert_int_equal(p->col, WR_CHECK_REACH);
  assert_non_null(strstr(p->text, "vm-b: not reached through mpirun"));
  assert_string_equal(cell(&r, 1, WR_CHECK_REACH)->value, "no answer");
  for (int c = 1; c < WR_CHECK_NCOLS; c++)
    assert_int_equal(cell(&r, 1, c)->status, WR_CHECK_NONE);
  assert_string_equal(cell(&r, 0, WR_CHECK_PAIRS)->value, "1/1");
  problem_with(&r, WR_CHECK_WARN, "took 12.0 s");
  /* FAILs come first */
  assert_int_equal(r.problems[0].status, WR_CHECK_FAIL);
  assert_int_equal(r.problems[r.nproblems - 1].status, WR_CHECK_WARN);
  wr_check_result_free(&r);

  v[1].h.answered = 1;
  v[1].h.engine_why = NULL;
  evaluate(v, 3, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "ended there before it had reported everything");
  wr_check_result_free(&r);
  free(v);
}

static void test_gpus(void **state)
{
  wr_check_result r;
  fhost *v = healthy(3);
  (void)state;
  set(&v[1], WT_CK_GPU_PCI, "7");
  evaluate(v, 3, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_FAIL, "it has 7 GPUs");
  assert_int_equal(p->host, 1);
  problem_with(&r, WR_CHECK_WARN, "vm-b: 7 GPUs, the other 2 hosts have 8");
  assert_int_equal(cell(&r, 1, WR_CHECK_GPUS)->status, WR_CHECK_FAIL);
  wr_check_result_free(&r);

  /* NVML sees fewer than the PCI bus has; models; ECC, retired pages, processes */
  set(&v[1], WT_CK_GPU_PCI, "8");
  for (int i = 0; i < 3; i++) {
    set(&v[i], WT_CK_GPU_NVML, i == 2 ? "7" : "8");
    set(&v[i], WT_CK_GPU_MODEL, i == 1 ? "NVIDIA A100-SXM4-40GB" : "NVIDIA H100 80GB HBM3");
    set(&v[i], WT_CK_GPU_PERSIST, i == 0 ? "8" : "0");
  }
  v[2].h.planned_gpus = 7;
  fact(&v[1], WT_CK_GPU_ECC, "3 12");
  fact(&v[1], WT_CK_GPU_RETIRED, "5");
  fact(&v[0], WT_CK_GPU_BUSY, "2 4242 python3");
  evaluate(v, 3, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "NVML sees 7 GPUs, the PCI bus 8");
  problem_with(&r, WR_CHECK_WARN, "GPUs NVIDIA A100-SXM4-40GB");
  problem_with(&r, WR_CHECK_WARN, "GPU 3 has had 12 uncorrected ECC errors");
  problem_with(&r, WR_CHECK_WARN, "GPU 5 has retired memory pages");
  problem_with(&r, WR_CHECK_WARN, "GPU 2 is in use by pid 4242 (python3)");
  problem_with(&r, WR_CHECK_WARN, "persistence mode is off on 8 GPUs");
  assert_string_equal(cell(&r, 0, WR_CHECK_GPUS)->value, "8 H100 80GB HBM3");
  wr_check_result_free(&r);

  /* a plan that cannot be made is a failure of the job */
  evaluate(v, 3, "-N 9 but host 'vm-a' has 8 slots", &r);
  p = problem_with(&r, WR_CHECK_FAIL, "-N 9 but host");
  assert_int_equal(p->host, -1);
  /* the job's own FAIL comes after the hosts' FAILs, before any WARN */
  int at = (int)(p - r.problems);
  for (int i = 0; i < r.nproblems; i++)
    assert_true(i < at ? r.problems[i].status == WR_CHECK_FAIL && r.problems[i].host >= 0
                       : i == at || r.problems[i].status == WR_CHECK_WARN);
  wr_check_result_free(&r);
  free(v);
}

static void test_net(void **state)
{
  wr_check_result r;
  fhost *v = healthy(4);
  (void)state;
  set(&v[3], WT_CK_NET_MTU, "1400");
  set(&v[2], WT_CK_NET_ROUTE, "eth1");
  set(&v[0], WT_CK_PORT, "29500 taken 777 python3");
  evaluate(v, 4, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_WARN, "MTU 1400");
  assert_int_equal(p->host, 3);
  assert_non_null(strstr(p->text, "ip link set eth0 mtu 1500"));
  problem_with(&r, WR_CHECK_WARN, "vm-c: reaches the master through eth1, not eth0");
  p = problem_with(&r, WR_CHECK_FAIL, "MASTER_PORT 29500 is taken there, by pid 777 (python3)");
  assert_int_equal(p->host, 0);
  assert_string_equal(cell(&r, 0, WR_CHECK_NET)->value, "port 29500 taken");
  wr_check_result_free(&r);

  set(&v[0], WT_CK_PORT, "29500 free");
  set(&v[1], WT_CK_NET_IF, "missing eth0");
  fact(&v[2], WT_CK_GCE_WARN, "enp0s12 is not a gVNIC (driver gve)");
  evaluate(v, 4, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "vm-b: has no interface eth0");
  problem_with(&r, WR_CHECK_WARN, "vm-c: enp0s12 is not a gVNIC");
  assert_string_equal(cell(&r, 1, WR_CHECK_NET)->value, "no eth0");
  wr_check_result_free(&r);
  free(v);
}

/* host \p a's test of \p b fails with \p why */
static void cut(fhost *v, int a, int b, const char *why)
{
  char want[16], buf[160];
  snprintf(want, sizeof(want), "%d ok", b);
  for (int f = 0; f < v[a].h.nfacts; f++)
    if (!strcmp(v[a].f[f].key, WT_CK_PAIR) && !strncmp(v[a].f[f].value, want, strlen(want))) {
      snprintf(buf, sizeof(buf), "%d fail %s", b, why);
      snprintf(v[a].store[f][1], sizeof(v[a].store[f][1]), "%s", buf);
      return;
    }
  fail_msg("no test of %d by %d", b, a);
}

static void test_pairs_eval(void **state)
{
  wr_check_result r;
  fhost *v = healthy(4);
  (void)state;
  cut(v, 1, 2, "timed out");
  cut(v, 2, 1, "no answer within 2 s");
  evaluate(v, 4, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_FAIL, "vm-b <-> vm-c");
  assert_non_null(strstr(p->text, "either way (timed out; no answer within 2 s)"));
  assert_string_equal(cell(&r, 1, WR_CHECK_PAIRS)->value, "2/3");
  assert_int_equal(cell(&r, 1, WR_CHECK_PAIRS)->status, WR_CHECK_FAIL);
  assert_int_equal(cell(&r, 2, WR_CHECK_PAIRS)->status, WR_CHECK_FAIL);
  assert_int_equal(cell(&r, 3, WR_CHECK_PAIRS)->status, WR_CHECK_OK);
  wr_check_result_free(&r);

  /* one way only */
  free(v);
  v = healthy(4);
  cut(v, 0, 3, "connection refused");
  evaluate(v, 4, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL, "vm-a -> vm-d");
  assert_non_null(strstr(p->text, "the other way works"));
  wr_check_result_free(&r);
  free(v);

  /* a host cut from all: one line for it, none per pair */
  v = healthy(4);
  for (int i = 0; i < 4; i++)
    if (i != 3) {
      cut(v, i, 3, "timed out");
      cut(v, 3, i, "timed out");
    }
  evaluate(v, 4, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "vm-d: no TCP connection to or from any host");
  for (int i = 0; i < r.nproblems; i++)
    assert_null(strstr(r.problems[i].text, "<->"));
  wr_check_result_free(&r);
  free(v);

  /* no way to the master */
  v = healthy(3);
  set(&v[2], WT_CK_MASTER, "fail port 29500: timed out");
  evaluate(v, 3, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL, "vm-c: cannot reach the master vm-a on port 29500");
  assert_string_equal(cell(&r, 2, WR_CHECK_PAIRS)->value, "no master");
  wr_check_result_free(&r);
  free(v);
}

static void test_clock_memory(void **state)
{
  wr_check_result r;
  fhost *v = healthy(3);
  (void)state;
  set(&v[2], WT_CK_CLOCK, "-120.5 0.001");
  set(&v[1], WT_CK_SHM, "67108864 67108864");
  set(&v[1], WT_CK_NET_RDMA, "4");
  set(&v[0], WT_CK_MEM_AVAIL, "1000000000");
  evaluate(v, 3, NULL, &r);
  const wr_check_problem *p = problem_with(&r, WR_CHECK_WARN, "120.5 s behind the master's (vm-a)");
  assert_int_equal(p->host, 2);
  assert_string_equal(cell(&r, 2, WR_CHECK_CLOCK)->value, "-120.5 s");
  problem_with(&r, WR_CHECK_WARN, "/dev/shm is only 64M");
  problem_with(&r, WR_CHECK_WARN, "ulimit -l is 8.0M and it has 4 RDMA devices");
  problem_with(&r, WR_CHECK_WARN, "only 954M of 64G memory is available");
  assert_int_equal(r.worst, WR_CHECK_WARN);
  /* without RDMA, ulimit -l is left alone */
  assert_int_equal(cell(&r, 2, WR_CHECK_MEMORY)->status, WR_CHECK_OK);
  wr_check_result_free(&r);
  free(v);
}

static void test_timeout_program(void **state)
{
  wr_check_result r;
  fhost *v = healthy(3);
  (void)state;
  fact(&v[1], WT_CK_TIMEOUT, "gpus 5");
  set(&v[2], WT_CK_PROGRAM, "missing train");
  evaluate(v, 3, NULL, &r);
  const wr_check_problem *p =
    problem_with(&r, WR_CHECK_FAIL, "the gpus check did not finish within 5 s");
  assert_int_equal(p->col, WR_CHECK_GPUS);
  assert_string_equal(cell(&r, 1, WR_CHECK_GPUS)->value, "no answer");
  problem_with(&r, WR_CHECK_FAIL, "vm-c: train is not there (not found on PATH)");
  wr_check_result_free(&r);

  set(&v[2], WT_CK_PROGRAM, "elf ELF64 aarch64 /opt/job/train");
  evaluate(v, 3, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL, "the program is ELF64 aarch64 there");
  assert_int_equal(p->host, 2);
  wr_check_result_free(&r);

  set(&v[2], WT_CK_PROGRAM, "nointerp /usr/bin/python9 /opt/job/train");
  evaluate(v, 3, NULL, &r);
  problem_with(&r, WR_CHECK_FAIL, "starts with #!/usr/bin/python9");
  wr_check_result_free(&r);

  /* the program's MPI against the engine's, host by host */
  set(&v[2], WT_CK_PROGRAM, "elf ELF64 x86-64 /opt/job/train");
  for (int i = 0; i < 3; i++)
    fact(&v[i], WT_CK_MPI, "openmpi libmpi.so.40");
  evaluate(v, 3, NULL, &r);
  for (int i = 0; i < r.nproblems; i++)
    assert_null(strstr(r.problems[i].text, "singletons"));
  wr_check_result_free(&r);
  set(&v[1], WT_CK_MPI, "mpich libmpich.so.12");
  evaluate(v, 3, NULL, &r);
  p = problem_with(&r, WR_CHECK_FAIL,
                   "vm-b: the program there was built with MPICH (libmpich.so.12), "
                   "which mpirun would start as singletons");
  assert_int_equal(p->host, 1);
  assert_non_null(strstr(p->text, "--engine hydra"));
  assert_string_equal(cell(&r, 1, WR_CHECK_PROGRAM)->value, "MPICH build");
  assert_int_equal(cell(&r, 0, WR_CHECK_PROGRAM)->status, WR_CHECK_OK);
  wr_check_result_free(&r);
  free(v);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_records),      cmocka_unit_test(test_agent_check_args),
    cmocka_unit_test(test_pairs_small),  cmocka_unit_test(test_pairs_large),
    cmocka_unit_test(test_all_well),     cmocka_unit_test(test_versions),
    cmocka_unit_test(test_reach),        cmocka_unit_test(test_gpus),
    cmocka_unit_test(test_net),          cmocka_unit_test(test_pairs_eval),
    cmocka_unit_test(test_clock_memory), cmocka_unit_test(test_timeout_program),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
