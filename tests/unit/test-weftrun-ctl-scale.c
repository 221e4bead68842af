/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's control channel with thousands of agents, in one process: 4,000
 * connections to a real listener (src/weftrun/supervise/control.c), each
 * answering its challenge with HELLO (the job's secret's proof), STARTED, heartbeats and
 * EXITED, while the server is pumped as weftrun's loop pumps it; plus stray
 * connections (a wrong secret, garbage) that must be dropped without a word
 * but the challenge every connection gets. Every rank must end up
 * welcomed, answered and exited, and the supervisor must reach no verdict.
 * Prints how long the pumps took (a figure, not a bound).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl-io.h"
#include "supervise/supervise.h"

#define NP 4000

static double pumped;

static void pump(wr_ctl *c, wr_sup *s)
{
  double t = weftx_monotonic();
  wr_ctl_pump(c, s, t);
  pumped += weftx_monotonic() - t;
}

static int on_challenge(void *arg, const wt_ctl_msg *m)
{
  char *ch = arg;
  if (m->type == WT_CTL_CHALLENGE)
    wt_ctl_get_str(m, WT_CTL_T_CHALLENGE, ch, WT_CTL_CHALLENGE_LEN + 1);
  return 1;
}

/* The connection's challenge (weftrun pumped until it comes), into ch. */
static void challenge_of(wr_ctl *c, wr_sup *s, wt_ctl_conn *a, char ch[WT_CTL_CHALLENGE_LEN + 1])
{
  char why[300];
  ch[0] = '\0';
  for (int k = 0; k < 2000 && !ch[0]; k++) {
    pump(c, s);
    assert_true(wt_ctl_conn_read(a, on_challenge, ch, why, sizeof(why)) >= 0);
    if (!ch[0] && k > 0)
      usleep(1000);
  }
  assert_int_equal(strlen(ch), WT_CTL_CHALLENGE_LEN);
}

/* HELLO for rank on host h, its proof made with secret over challenge ch. */
static void hello(wt_ctl_out *m, const char *secret, const char *ch, int rank)
{
  char proof[WT_CTL_PROOF_LEN + 1];
  wt_ctl_proof(secret, ch, rank, "h", proof);
  wt_ctl_begin(m, WT_CTL_HELLO);
  wt_ctl_put_str(m, WT_CTL_T_PROOF, proof);
  wt_ctl_put_int(m, WT_CTL_T_RANK, rank);
  wt_ctl_put_int(m, WT_CTL_T_PID, 1000 + rank);
  wt_ctl_put_str(m, WT_CTL_T_HOST, "h");
}

static int on_any(void *arg, const wt_ctl_msg *m)
{
  int *seen = arg;
  seen[m->type]++;
  return 0;
}

static void test_many_agents(void **state)
{
  static wt_ctl_conn a[NP];
  static wr_host host;
  static wr_plan_host ph;
  static weftx_plan_rank ranks[NP];
  static wr_plan plan;
  wr_opts o;
  wr_ctl *c;
  char why[300];
  (void)state;

  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max < 2 * NP + 100) {
    print_message("SKIP: %d descriptors needed, the hard limit is %llu\n", 2 * NP + 100,
                  (unsigned long long)rl.rlim_max);
    skip();
  }
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  host.name = "h";
  ph.host = &host;
  ph.count = NP;
  for (int r = 0; r < NP; r++)
    ranks[r].rank = r;
  plan.np = NP;
  plan.nhosts = 1;
  plan.hosts = &ph;
  plan.ranks = ranks;
  wr_opts_init(&o);
  double t0 = weftx_monotonic();
  char ch[WT_CTL_CHALLENGE_LEN + 1];
  wr_sup *s = wr_sup_new(&plan, &o, t0);
  assert_non_null(s);
  assert_int_equal(wr_ctl_open(NULL, NP, &c, why, sizeof(why)), 0);
  assert_non_null(strstr(wr_ctl_address(c), "127.0.0.1:"));

  /* strays first: never answered, dropped */
  int stray[2];
  for (int k = 0; k < 2; k++) {
    stray[k] = wt_ctl_connect(wr_ctl_address(c), t0 + 5, why, sizeof(why));
    assert_true(stray[k] >= 0);
  }
  wt_ctl_out m;
  hello(&m, "00000000000000000000000000000000", "00000000000000000000000000000000", 0);
  assert_int_equal(write(stray[0], m.buf, m.len), (ssize_t)m.len);
  assert_int_equal(write(stray[1], "GET / HTTP/1.0\r\n\r\n", 18), 18);

  for (int r = 0; r < NP; r++) {
    int fd = wt_ctl_connect(wr_ctl_address(c), weftx_monotonic() + 10, why, sizeof(why));
    assert_true(fd >= 0);
    wt_ctl_conn_init(&a[r], fd, 4 * WT_CTL_FRAME_MAX);
    challenge_of(c, s, &a[r], ch);
    hello(&m, wr_ctl_secret(c), ch, r);
    assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
    wt_ctl_begin(&m, WT_CTL_STARTED);
    wt_ctl_put_int(&m, WT_CTL_T_PID, 5000 + r);
    assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
    assert_int_equal(wt_ctl_conn_flush(&a[r]), 0);
  }
  int seen[WT_CTL_TYPE_MAX] = {0};
  for (int round = 0; round < 3; round++) {
    for (int r = 0; r < NP; r++) {
      wt_ctl_begin(&m, WT_CTL_HEARTBEAT);
      wt_ctl_put_int(&m, WT_CTL_T_SEQ, round);
      wt_ctl_put_int(&m, WT_CTL_T_WSTATE, WEFTX_PAGE_RUNNING);
      assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
      assert_int_equal(wt_ctl_conn_flush(&a[r]), 0);
    }
    for (int k = 0; k < 50 && s->connected < NP; k++) {
      double t = weftx_monotonic();
      wr_ctl_pump(c, s, t);
      pumped += weftx_monotonic() - t;
      usleep(10000);
    }
    double t = weftx_monotonic();
    wr_ctl_pump(c, s, t);
    pumped += weftx_monotonic() - t;
    for (int r = 0; r < NP; r++)
      wt_ctl_conn_read(&a[r], on_any, seen, why, sizeof(why));
  }
  assert_int_equal(s->connected, NP);
  assert_int_equal(seen[WT_CTL_WELCOME], NP);
  assert_int_equal(seen[WT_CTL_PONG], 3 * NP);
  for (int r = 0; r < NP; r++) {
    wt_ctl_begin(&m, WT_CTL_EXITED);
    wt_ctl_put_int(&m, WT_CTL_T_CODE, 0);
    assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
    assert_int_equal(wt_ctl_conn_flush(&a[r]), 0);
    wt_ctl_conn_close(&a[r]);
  }
  for (int k = 0; k < 100 && !wr_sup_done(s); k++) {
    double t = weftx_monotonic();
    wr_ctl_pump(c, s, t);
    pumped += weftx_monotonic() - t;
    usleep(10000);
  }
  assert_true(wr_sup_done(s));
  assert_int_equal(s->exited, NP);
  wr_sup_tick(s, weftx_monotonic());
  assert_int_equal(s->end, WR_END_NONE);
  /* the strays got their challenge, nothing more, and were closed */
  for (int k = 0; k < 2; k++) {
    wt_ctl_conn st;
    int seen_st[WT_CTL_TYPE_MAX] = {0};
    wt_ctl_conn_init(&st, stray[k], 4 * WT_CTL_FRAME_MAX);
    for (int w = 0; w < 5000 && wt_ctl_conn_read(&st, on_any, seen_st, why, sizeof(why)) >= 0; w++)
      usleep(1000);
    assert_int_equal(seen_st[WT_CTL_CHALLENGE], 1);
    for (int t = 0; t < WT_CTL_TYPE_MAX; t++)
      if (t != WT_CTL_CHALLENGE)
        assert_int_equal(seen_st[t], 0);
    wt_ctl_conn_close(&st);
  }
  print_message("# %d agents: hello, started, 3 heartbeats, exited: %.3f s in weftrun's pumps\n",
                NP, pumped);
  wr_ctl_close(c);
  wr_sup_free(s);
}

/* A connection weftrun must close with no WELCOME and no REFUSE: it proved nothing. */
static void dropped(wr_ctl *c, wr_sup *s, wt_ctl_conn *a)
{
  char why[300];
  int seen[WT_CTL_TYPE_MAX] = {0}, rc = 0;
  for (int k = 0; k < 5000 && rc >= 0; k++) {
    pump(c, s);
    rc = wt_ctl_conn_read(a, on_any, seen, why, sizeof(why));
    if (rc >= 0)
      usleep(1000);
  }
  assert_true(rc < 0);
  assert_int_equal(seen[WT_CTL_WELCOME], 0);
  assert_int_equal(seen[WT_CTL_REFUSE], 0);
  wt_ctl_conn_close(a);
}

static void connect_to(wr_ctl *c, wt_ctl_conn *a)
{
  char why[300];
  int fd = wt_ctl_connect(wr_ctl_address(c), weftx_monotonic() + 5, why, sizeof(why));
  assert_true(fd >= 0);
  wt_ctl_conn_init(a, fd, 4 * WT_CTL_FRAME_MAX);
}

/* The secret proves itself without travelling: a HELLO captured on the network,
 * replayed on another connection, is refused (its challenge differs); so is a proof
 * made for another rank, with another job's secret, or over another challenge. */
static void test_replay(void **state)
{
  static wr_host host;
  static wr_plan_host ph;
  static weftx_plan_rank ranks[2];
  static wr_plan plan;
  wr_opts o;
  wr_ctl *c, *other;
  wt_ctl_conn x, y, z;
  wt_ctl_out m, captured;
  char why[300], ch[WT_CTL_CHALLENGE_LEN + 1], ch2[WT_CTL_CHALLENGE_LEN + 1];
  (void)state;

  host.name = "h";
  ph.host = &host;
  ph.count = 2;
  ranks[0].rank = 0;
  ranks[1].rank = 1;
  plan.np = 2;
  plan.nhosts = 1;
  plan.hosts = &ph;
  plan.ranks = ranks;
  wr_opts_init(&o);
  wr_sup *s = wr_sup_new(&plan, &o, weftx_monotonic());
  assert_non_null(s);
  assert_int_equal(wr_ctl_open(NULL, 2, &c, why, sizeof(why)), 0);
  assert_int_equal(wr_ctl_open(NULL, 2, &other, why, sizeof(why)), 0);
  assert_string_not_equal(wr_ctl_secret(c), wr_ctl_secret(other));

  /* rank 0's agent, as weft-rank does it: welcomed; its HELLO captured */
  connect_to(c, &x);
  challenge_of(c, s, &x, ch);
  hello(&captured, wr_ctl_secret(c), ch, 0);
  assert_int_equal(wt_ctl_conn_queue(&x, &captured), 0);
  assert_int_equal(wt_ctl_conn_flush(&x), 0);
  for (int k = 0; k < 2000 && s->connected < 1; k++) {
    pump(c, s);
    usleep(1000);
  }
  assert_int_equal(s->connected, 1);

  /* the captured HELLO replayed on a connection of its own: another challenge */
  connect_to(c, &y);
  challenge_of(c, s, &y, ch2);
  assert_string_not_equal(ch, ch2);
  assert_int_equal(wt_ctl_conn_queue(&y, &captured), 0);
  assert_int_equal(wt_ctl_conn_flush(&y), 0);
  dropped(c, s, &y);

  /* rank 1 with rank 0's proof: the rank is part of what is proven */
  connect_to(c, &y);
  challenge_of(c, s, &y, ch2);
  hello(&m, wr_ctl_secret(c), ch2, 0);
  wt_ctl_begin(&m, WT_CTL_HELLO);
  {
    char proof[WT_CTL_PROOF_LEN + 1];
    wt_ctl_proof(wr_ctl_secret(c), ch2, 0, "h", proof);
    wt_ctl_put_str(&m, WT_CTL_T_PROOF, proof);
  }
  wt_ctl_put_int(&m, WT_CTL_T_RANK, 1);
  wt_ctl_put_str(&m, WT_CTL_T_HOST, "h");
  assert_int_equal(wt_ctl_conn_queue(&y, &m), 0);
  assert_int_equal(wt_ctl_conn_flush(&y), 0);
  dropped(c, s, &y);

  /* another job's secret, over the right challenge */
  connect_to(c, &y);
  challenge_of(c, s, &y, ch2);
  hello(&m, wr_ctl_secret(other), ch2, 1);
  assert_int_equal(wt_ctl_conn_queue(&y, &m), 0);
  assert_int_equal(wt_ctl_conn_flush(&y), 0);
  dropped(c, s, &y);

  /* a version-1 HELLO, the secret itself in it */
  connect_to(c, &y);
  challenge_of(c, s, &y, ch2);
  wt_ctl_begin(&m, WT_CTL_HELLO);
  wt_ctl_put_str(&m, WT_CTL_T_PROOF, wr_ctl_secret(c));
  wt_ctl_put_int(&m, WT_CTL_T_RANK, 1);
  wt_ctl_put_str(&m, WT_CTL_T_HOST, "h");
  m.buf[2] = 1;
  assert_int_equal(wt_ctl_conn_queue(&y, &m), 0);
  assert_int_equal(wt_ctl_conn_flush(&y), 0);
  dropped(c, s, &y);
  assert_int_equal(s->connected, 1);

  /* rank 1 was free all along: its own agent is welcomed */
  connect_to(c, &z);
  challenge_of(c, s, &z, ch2);
  hello(&m, wr_ctl_secret(c), ch2, 1);
  assert_int_equal(wt_ctl_conn_queue(&z, &m), 0);
  assert_int_equal(wt_ctl_conn_flush(&z), 0);
  for (int k = 0; k < 2000 && s->connected < 2; k++) {
    pump(c, s);
    usleep(1000);
  }
  assert_int_equal(s->connected, 2);
  wt_ctl_conn_close(&x);
  wt_ctl_conn_close(&z);
  wr_ctl_close(c);
  wr_ctl_close(other);
  wr_sup_free(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_replay),
                                     cmocka_unit_test(test_many_agents)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
