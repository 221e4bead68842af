/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of weftrun's restart policy (src/weftrun/restart/policy.c): the
 * discovery command's output read (hosts, comments, blank lines, nothing,
 * garbage named by its line), the cooldown of a host that failed again and
 * again, the backoff of fast failures and its reset, which ends are
 * restarted, and the hosts of the next attempt (those left out, --max-hosts,
 * a cooldown that ends); and the restart options refused in one line. */
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

#include "hosts/hosts.h"
#include "restart/restart.h"
#include "supervise/supervise.h"

static void test_parse(void **state)
{
  (void)state;
  wr_given_host *h = NULL;
  int n = -1;
  char why[600] = "";
  const char ok[] = "# the group now\n\nvm-a slots=8\n  vm-b slots=4 max_slots=6 # a note\n"
                    "10.0.0.7\n";
  assert_int_equal(wr_rs_parse_hosts(ok, strlen(ok), &h, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 3);
  assert_string_equal(h[0].name, "vm-a");
  assert_int_equal(h[0].slots, 8);
  assert_string_equal(h[1].name, "vm-b");
  assert_int_equal(h[1].slots, 4);
  assert_int_equal(h[1].max_slots, 6);
  assert_string_equal(h[2].name, "10.0.0.7");
  assert_int_equal(h[2].slots, 0);
  /* written back as a hostfile and read again: the same */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  wr_rs_write_hosts(f, h, n);
  fclose(f);
  assert_string_equal(text, "vm-a slots=8\nvm-b slots=4 max_slots=6\n10.0.0.7\n");
  free(text);
  free(h);

  /* nothing but comments and blank lines: no host, no error */
  const char none[] = "# nothing yet\n\n   \n";
  assert_int_equal(wr_rs_parse_hosts(none, strlen(none), &h, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 0);
  assert_null(h);
  assert_int_equal(wr_rs_parse_hosts("", 0, &h, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 0);

  /* garbage: refused, its line named */
  const char bad[] = "vm-a slots=8\nvm-b slots=four\n";
  assert_int_not_equal(wr_rs_parse_hosts(bad, strlen(bad), &h, &n, why, sizeof(why)), 0);
  assert_non_null(strstr(why, "output:2:"));
  assert_int_equal(n, 0);
  const char words[] = "NAME STATUS\nvm-a RUNNING\n";
  assert_int_not_equal(wr_rs_parse_hosts(words, strlen(words), &h, &n, why, sizeof(why)), 0);
  assert_non_null(strstr(why, "output:1:"));
}

static void test_cooldown_backoff(void **state)
{
  (void)state;
  assert_true(wr_rs_cooldown(1) == WR_COOLDOWN_S);
  assert_true(wr_rs_cooldown(2) == 2 * WR_COOLDOWN_S);
  assert_true(wr_rs_cooldown(3) == 4 * WR_COOLDOWN_S);
  assert_true(wr_rs_cooldown(50) == WR_COOLDOWN_MAX_S);
  assert_true(wr_rs_backoff(0) == 0);
  assert_true(wr_rs_backoff(1) == WR_BACKOFF_S);
  assert_true(wr_rs_backoff(2) == 2 * WR_BACKOFF_S);
  assert_true(wr_rs_backoff(1000) == WR_BACKOFF_MAX_S);
}

static void test_restartable(void **state)
{
  (void)state;
  wr_attempt a;
  memset(&a, 0, sizeof(a));
  a.ran = 1;
  a.end = WR_END_LOST;
  assert_true(wr_rs_restartable(&a, WR_EXIT_HOSTLOST, WR_RESTART_ON_HOST));
  a.end = WR_END_PREEMPTED;
  assert_true(wr_rs_restartable(&a, WR_EXIT_PREEMPTED, WR_RESTART_ON_HOST));
  a.end = WR_END_RANK;
  assert_false(wr_rs_restartable(&a, 3, WR_RESTART_ON_HOST)); /* the program's own bug */
  assert_true(wr_rs_restartable(&a, 3, WR_RESTART_ON_ANY));
  assert_false(wr_rs_restartable(&a, 0, WR_RESTART_ON_ANY));
  a.end = WR_END_SIGNAL; /* the user stopped it */
  assert_false(wr_rs_restartable(&a, 130, WR_RESTART_ON_ANY));
  a.end = WR_END_TIMEOUT;
  assert_false(wr_rs_restartable(&a, 124, WR_RESTART_ON_ANY));
  a.ran = 0; /* a bad option or hostfile: never restarted */
  a.end = 0;
  assert_false(wr_rs_restartable(&a, 65, WR_RESTART_ON_ANY));
}

static void test_select(void **state)
{
  (void)state;
  wr_rs_state st;
  memset(&st, 0, sizeof(st));
  wr_given_host in[4], out[4];
  memset(in, 0, sizeof(in));
  for (int i = 0; i < 4; i++) {
    snprintf(in[i].name, sizeof(in[i].name), "vnode%d", i);
    in[i].slots = 2;
  }
  wr_attempt a;
  memset(&a, 0, sizeof(a));
  a.running = 100;
  a.ended = 200; /* ran 100 s: not a fast failure */
  a.nlost = 1;
  snprintf(a.lost[0], sizeof(a.lost[0]), "vnode2");
  assert_int_equal(wr_rs_note(&st, &a, 200), 0);
  assert_int_equal(st.fast, 0);
  assert_int_equal(wr_rs_select(&st, in, 4, 201, 0, out), 3);
  assert_string_equal(out[2].name, "vnode3");
  assert_int_equal(out[2].slots, 2);
  assert_true(wr_rs_left_out(&st, "VNODE2", 201, NULL)); /* names as Open MPI: no case */
  /* Open MPI's short name lost; the hostfile's full name left out too, not another */
  assert_true(wr_rs_left_out(&st, "vnode2.c.proj.internal", 201, NULL));
  assert_false(wr_rs_left_out(&st, "vnode22", 201, NULL));
  assert_false(wr_rs_left_out(&st, "vnode", 201, NULL));
  assert_int_equal(wr_rs_select(&st, in, 4, 201, 2, out), 2); /* --max-hosts */
  assert_true(wr_rs_next_back(&st, 201) == 200 + WR_COOLDOWN_S);
  /* the cooldown over: back in */
  assert_int_equal(wr_rs_select(&st, in, 4, 200 + WR_COOLDOWN_S, 0, out), 4);
  assert_true(wr_rs_next_back(&st, 200 + WR_COOLDOWN_S) == 0);
  /* it fails again, fast: twice the cooldown, and a backoff */
  a.running = 600;
  a.ended = 603;
  assert_int_equal(wr_rs_note(&st, &a, 603), 0);
  assert_int_equal(st.fast, 1);
  double until = 0;
  assert_true(wr_rs_left_out(&st, "vnode2", 604, &until));
  assert_true(until == 603 + 2 * WR_COOLDOWN_S);
  /* an attempt whose ranks never all started is fast too; a long one resets the count */
  a.running = 0;
  a.nlost = 0;
  assert_int_equal(wr_rs_note(&st, &a, 700), 0);
  assert_int_equal(st.fast, 2);
  a.running = 700;
  a.ended = 800;
  assert_int_equal(wr_rs_note(&st, &a, 800), 0);
  assert_int_equal(st.fast, 0);
  wr_rs_state_free(&st);
}

/* The options: bad values and lonely ones refused, in one line each. */
static int parse(const char *const *words)
{
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)"weftrun";
  for (; *words; words++)
    argv[argc++] = (char *)*words;
  argv[argc] = NULL;
  wr_opts o;
  wr_opts_init(&o);
  int rc = wr_opts_parse(&o, argc, argv);
  wr_opts_free(&o);
  return rc;
}

static void test_options(void **state)
{
  (void)state;
  const char *const good[] = {
    "--restarts",       "3",          "--restart-on", "any", "--min-hosts",    "2",
    "--host-discovery", "cat hosts",  "--max-hosts",  "4",   "--restart-wait", "30",
    "--checkpoint-dir", "/shared/ck", "true",         NULL};
  assert_int_equal(parse(good), 0);
  const char *const bad[][8] = {
    {"--restarts", "-1", "true", NULL},
    {"--restarts", "many", "true", NULL},
    {"--restart-on", "rank", "--restarts", "1", "true", NULL},
    {"--min-hosts", "2", "true", NULL},                    /* without --restarts */
    {"--max-hosts", "2", "--restarts", "1", "true", NULL}, /* without --host-discovery */
    {"--restarts", "1", "--min-hosts", "0", "true", NULL},
    {"--host-discovery", "", "true", NULL},
    {"--checkpoint-dir", "", "true", NULL},
    {"--restarts", "1", "true", ":", "false", NULL}, /* MPMD */
    {"--max-restarts", "2", "true", NULL},           /* Open MPI's, still refused */
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(parse(bad[i]), WR_EXIT_USAGE);
}

/* One host or two, as weftrun matches the names Open MPI says (a lost daemon's node,
 * a restart's lost host) with the plan's. */
static void test_same_host(void **state)
{
  (void)state;
  assert_true(wr_same_host("vnode1", "vnode1"));
  assert_true(wr_same_host("VM-A", "vm-a"));
  assert_true(wr_same_host("vm-a", "vm-a.c.proj.internal"));
  assert_true(wr_same_host("vm-a.c.proj.internal", "vm-a"));
  assert_false(wr_same_host("vm-a.c.proj.internal", "vm-a.other.internal"));
  assert_false(wr_same_host("vnode1", "vnode12"));
  /* addresses are never shortened: 10.0.0.1 is not 10.0.0.2 */
  assert_false(wr_same_host("10.0.0.1", "10.0.0.2"));
  assert_false(wr_same_host("10.0.0.1", "10"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse),       cmocka_unit_test(test_cooldown_backoff),
    cmocka_unit_test(test_restartable), cmocka_unit_test(test_select),
    cmocka_unit_test(test_options),     cmocka_unit_test(test_same_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
