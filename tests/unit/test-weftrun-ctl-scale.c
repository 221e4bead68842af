/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's control channel with thousands of agents, in one process: 4,000
 * connections to a real listener (src/weftrun/supervise/control.c), each
 * sending HELLO with the job's secret, PLACED, STARTED, heartbeats and
 * EXITED, while the server is pumped as weftrun's loop pumps it; plus stray
 * connections (a wrong secret, garbage) that must be dropped without a word. Every rank must end up
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

static int
on_any(void *arg, const wt_ctl_msg *m)
{
  int *seen = arg;
  seen[m->type]++;
  return 0;
}

static void
test_many_agents(void **state)
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
  double t0 = weftx_monotonic(), pumped = 0;
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
  wt_ctl_begin(&m, WT_CTL_HELLO);
  wt_ctl_put_str(&m, WT_CTL_T_SECRET, "00000000000000000000000000000000");
  wt_ctl_put_int(&m, WT_CTL_T_RANK, 0);
  assert_int_equal(write(stray[0], m.buf, m.len), (ssize_t)m.len);
  assert_int_equal(write(stray[1], "GET / HTTP/1.0\r\n\r\n", 18), 18);

  for (int r = 0; r < NP; r++) {
    int fd = wt_ctl_connect(wr_ctl_address(c), weftx_monotonic() + 10, why, sizeof(why));
    assert_true(fd >= 0);
    wt_ctl_conn_init(&a[r], fd, 4 * WT_CTL_FRAME_MAX);
    wt_ctl_begin(&m, WT_CTL_HELLO);
    wt_ctl_put_str(&m, WT_CTL_T_SECRET, wr_ctl_secret(c));
    wt_ctl_put_int(&m, WT_CTL_T_RANK, r);
    wt_ctl_put_int(&m, WT_CTL_T_PID, 1000 + r);
    wt_ctl_put_str(&m, WT_CTL_T_HOST, "h");
    assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
    wt_ctl_begin(&m, WT_CTL_STARTED);
    wt_ctl_put_int(&m, WT_CTL_T_PID, 5000 + r);
    assert_int_equal(wt_ctl_conn_queue(&a[r], &m), 0);
    assert_int_equal(wt_ctl_conn_flush(&a[r]), 0);
    if (r % 256 == 255) { /* the listen backlog is bounded: weftrun's loop keeps up */
      double t = weftx_monotonic();
      wr_ctl_pump(c, s, t);
      pumped += weftx_monotonic() - t;
    }
  }
  int seen[WT_CTL_TYPE_MAX] = { 0 };
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
  /* the strays got nothing and were closed */
  char b[16];
  for (int k = 0; k < 2; k++) {
    assert_true(read(stray[k], b, sizeof(b)) <= 0);
    close(stray[k]);
  }
  print_message("# %d agents: hello, started, 3 heartbeats, exited: %.3f s in weftrun's pumps\n",
                NP, pumped);
  wr_ctl_close(c);
  wr_sup_free(s);
}

int
main(void)
{
  const struct CMUnitTest tests[] = { cmocka_unit_test(test_many_agents) };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
