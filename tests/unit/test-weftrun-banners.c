/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpirun's stderr through weftrun (engine/banners.c): the ranks' output and
 * Open MPI's other messages pass as they come, a partial line at once; its
 * accounts of how the job ended are held, then dropped or written at the end;
 * the result is the same however the input is cut into reads.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"

#define RULE "--------------------------------------------------------------------------\n"
#define ENDED                                                                                      \
  RULE "Primary job  terminated normally, but 1 process returned\n"                                \
       "a non-zero exit code. Per user-direction, the job has been aborted.\n" RULE
#define DETECTED                                                                                   \
  RULE "mpirun detected that one or more processes exited with non-zero "                          \
       "status, thus causing\nthe job to be terminated. The first process to do so was:\n\n"       \
       "  Process name: [[8338,1],1]\n  Exit code:    3\n" RULE
#define OTHER RULE "WARNING: There was an error initializing an OpenFabrics device.\n" RULE

typedef struct sink {
  char buf[8192];
  size_t len;
} sink;

static void put(void *arg, const char *data, size_t len)
{
  sink *s = arg;
  assert_true(s->len + len < sizeof(s->buf));
  memcpy(s->buf + s->len, data, len);
  s->len += len;
  s->buf[s->len] = '\0';
}

/* \p in through a filter in reads of \p step bytes (0: one read); the end with \p drop. */
static void run(const char *in, size_t step, int drop, sink *out)
{
  wr_banners b;
  size_t n = strlen(in);
  memset(out, 0, sizeof(*out));
  wr_banners_init(&b, put, out);
  for (size_t i = 0; i < n; i += step ? step : n)
    wr_banners_put(&b, in + i, step && i + step < n ? step : n - i);
  wr_banners_end(&b, drop);
}

/* The same for every cut of the input into reads. */
static void expect(const char *in, int drop, const char *want)
{
  size_t steps[] = {0, 1, 2, 3, 7, 73, 74, 75, 100};
  for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
    sink out;
    run(in, steps[k], drop, &out);
    if (strcmp(out.buf, want))
      fail_msg("reads of %zu bytes: got\n%s\nwant\n%s", steps[k], out.buf, want);
  }
}

static void test_text_passes(void **state)
{
  (void)state;
  const char *t = "rank 0 here\n- a list item\n--verbose\n----\n"
                  "x-y\nno newline at the end";
  expect(t, 1, t);
  expect("", 1, "");
  /* a rule alone, or 75 dashes, or a block never closed: not Open MPI's */
  expect(RULE "text\n", 1, RULE "text\n");
  expect("-" RULE, 1, "-" RULE);
}

static void test_accounts_held(void **state)
{
  (void)state;
  expect("rank 1 fails\n" ENDED DETECTED, 1, "rank 1 fails\n");
  expect("rank 1 fails\n" ENDED DETECTED, 0, "rank 1 fails\n" ENDED DETECTED);
  /* output after the accounts comes first; the accounts last when written */
  expect(ENDED "Traceback: connection closed\n" DETECTED "late\n", 0,
         "Traceback: connection closed\nlate\n" ENDED DETECTED);
  expect(ENDED "Traceback: connection closed\n" DETECTED "late\n", 1,
         "Traceback: connection closed\nlate\n");
}

/* The node whose daemon mpirun lost, from its held account; none from other accounts. */
static void test_lost_node(void **state)
{
  const char *lost = RULE "ORTE has lost communication with a remote daemon.\n\n"
                          "  HNP daemon   : [[4432,0],0] on node vnode0\n"
                          "  Remote daemon: [[4432,0],1] on node vnode1\n\n"
                          "This is usually due to either a failure of the TCP network\n" RULE;
  const char *in[] = {lost, ENDED DETECTED};
  (void)state;
  for (int k = 0; k < 2; k++) {
    wr_banners b;
    sink out;
    char node[64] = "";
    memset(&out, 0, sizeof(out));
    wr_banners_init(&b, put, &out);
    wr_banners_put(&b, in[k], strlen(in[k]));
    assert_int_equal(wr_banners_lost_node(&b, node, sizeof(node)), !k);
    assert_string_equal(node, k ? "" : "vnode1");
    wr_banners_end(&b, 1);
  }
}

static void test_others_pass_at_once(void **state)
{
  (void)state;
  expect(OTHER "a\n" ENDED, 1, OTHER "a\n");
  /* written when read, before the end */
  wr_banners b;
  sink out;
  memset(&out, 0, sizeof(out));
  wr_banners_init(&b, put, &out);
  wr_banners_put(&b, OTHER, strlen(OTHER));
  assert_string_equal(out.buf, OTHER);
  wr_banners_put(&b, "prompt> ", 8);
  assert_string_equal(out.buf, OTHER "prompt> ");
  /* a block that does not start a line is not one: it passes, but for its last rule,
   * which waits as any line of dashes does until it is known not to open a block */
  wr_banners_put(&b, ENDED, strlen(ENDED));
  assert_int_equal(out.len, strlen(OTHER "prompt> " ENDED) - strlen(RULE));
  /* out of step with the rules from there, nothing is lost */
  wr_banners_put(&b, "\n" DETECTED, strlen(DETECTED) + 1);
  wr_banners_end(&b, 1);
  assert_string_equal(out.buf, OTHER "prompt> " ENDED "\n" DETECTED);
}

static void test_take(void **state)
{
  (void)state;
  wr_banners b;
  sink out;
  size_t n;
  memset(&out, 0, sizeof(out));
  wr_banners_init(&b, put, &out);
  wr_banners_put(&b, "x\n" ENDED "-- partial", strlen(ENDED) + 12);
  char *h = wr_banners_take(&b, &n);
  assert_non_null(h);
  assert_int_equal(n, strlen(ENDED));
  assert_memory_equal(h, ENDED, n);
  assert_string_equal(out.buf, "x\n-- partial");
  free(h);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_text_passes), cmocka_unit_test(test_accounts_held),
    cmocka_unit_test(test_lost_node),   cmocka_unit_test(test_others_pass_at_once),
    cmocka_unit_test(test_take),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
