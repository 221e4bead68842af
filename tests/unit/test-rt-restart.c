/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of weft_restart_info (lib/rt/restart.c): the first attempt with
 * no variable set, weftrun's variables, torchrun's alone, and every way the
 * variables can be wrong, each refused with a line that names the variable.
 */
#include "rt_private.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const vars[] = {"WEFT_RESTART_COUNT",         "WEFT_MAX_RESTARTS",
                                   "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                                   "WEFT_PREV_WORLD_SIZE",       "WEFT_CHECKPOINT_DIR"};

static int clear_env(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
    unsetenv(vars[i]);
  return 0;
}

/* weft_restart_info on a context of its own: the code, and the line in err. */
static int info(weft_restart *r, char *err, size_t size)
{
  weft_ctx ctx;
  int rc;

  memset(&ctx, 0, sizeof(ctx));
  memset(r, 0x5a, sizeof(*r));
  rc = weft_restart_info(&ctx, r);
  snprintf(err, size, "%s", ctx.err);
  return rc;
}

static void test_first_attempt_unset(void **state)
{
  weft_restart r;
  char err[1024];
  (void)state;
  assert_int_equal(info(&r, err, sizeof(err)), 0);
  assert_int_equal(r.restarted, 0);
  assert_int_equal(r.count, 0);
  assert_int_equal(r.max_restarts, -1);
  assert_int_equal(r.prev_world_size, 0);
  assert_null(r.checkpoint_dir);
  assert_string_equal(err, "");
  /* Without a context the call works the same (before weft_init). */
  assert_int_equal(weft_restart_info(NULL, &r), 0);
  assert_int_equal(r.count, 0);
  assert_int_equal(weft_restart_info(NULL, NULL), WEFT_EINVAL);
}

static void test_weftrun_first_and_later(void **state)
{
  weft_restart r;
  char err[1024];
  (void)state;
  /* What weftrun --restarts 2 --checkpoint-dir /ckpt gives attempt 0. */
  setenv("WEFT_RESTART_COUNT", "0", 1);
  setenv("WEFT_MAX_RESTARTS", "2", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
  setenv("TORCHELASTIC_MAX_RESTARTS", "2", 1);
  setenv("WEFT_CHECKPOINT_DIR", "/ckpt/job", 1);
  assert_int_equal(info(&r, err, sizeof(err)), 0);
  assert_int_equal(r.restarted, 0);
  assert_int_equal(r.max_restarts, 2);
  assert_int_equal(r.prev_world_size, 0);
  assert_string_equal(r.checkpoint_dir, "/ckpt/job");
  /* And attempt 2, after 4 ranks. */
  setenv("WEFT_RESTART_COUNT", "2", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "2", 1);
  setenv("WEFT_PREV_WORLD_SIZE", "4", 1);
  assert_int_equal(info(&r, err, sizeof(err)), 0);
  assert_int_equal(r.restarted, 1);
  assert_int_equal(r.count, 2);
  assert_int_equal(r.prev_world_size, 4);
}

static void test_torchrun_alone(void **state)
{
  weft_restart r;
  char err[1024];
  (void)state;
  setenv("TORCHELASTIC_RESTART_COUNT", "1", 1);
  setenv("TORCHELASTIC_MAX_RESTARTS", "3", 1);
  assert_int_equal(info(&r, err, sizeof(err)), 0);
  assert_int_equal(r.restarted, 1);
  assert_int_equal(r.count, 1);
  assert_int_equal(r.max_restarts, 3);
  assert_int_equal(r.prev_world_size, 0); /* torchrun does not say */
}

/* Each bad setting: WEFT_EINVAL and a line that contains what. */
static void refused(const char *what)
{
  weft_restart r;
  char err[1024];
  assert_int_equal(info(&r, err, sizeof(err)), WEFT_EINVAL);
  if (!strstr(err, what))
    fail_msg("the error '%s' does not name '%s'", err, what);
  clear_env(NULL);
}

static void test_malformed(void **state)
{
  (void)state;
  const char *bad[] = {"", "x", "1x", "-1", " 1", "1.5", "99999999999999999999"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("WEFT_RESTART_COUNT", bad[i], 1);
    refused("WEFT_RESTART_COUNT=");
    setenv("TORCHELASTIC_MAX_RESTARTS", bad[i], 1);
    refused("TORCHELASTIC_MAX_RESTARTS=");
  }
  setenv("WEFT_RESTART_COUNT", "1", 1);
  setenv("WEFT_PREV_WORLD_SIZE", "0", 1); /* a world has a rank */
  refused("WEFT_PREV_WORLD_SIZE='0'");
  setenv("WEFT_CHECKPOINT_DIR", "", 1);
  refused("WEFT_CHECKPOINT_DIR is set but empty");
}

static void test_contradictions(void **state)
{
  (void)state;
  setenv("WEFT_RESTART_COUNT", "1", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "2", 1);
  setenv("WEFT_PREV_WORLD_SIZE", "4", 1);
  refused("WEFT_RESTART_COUNT=1 but TORCHELASTIC_RESTART_COUNT=2");
  setenv("WEFT_RESTART_COUNT", "3", 1);
  setenv("WEFT_MAX_RESTARTS", "2", 1);
  setenv("WEFT_PREV_WORLD_SIZE", "4", 1);
  refused("restart 3 of at most 2");
  setenv("WEFT_RESTART_COUNT", "0", 1);
  setenv("WEFT_PREV_WORLD_SIZE", "4", 1);
  refused("WEFT_PREV_WORLD_SIZE=4 on the first attempt");
  setenv("WEFT_PREV_WORLD_SIZE", "4", 1); /* count unset: the first attempt too */
  refused("WEFT_PREV_WORLD_SIZE=4 on the first attempt");
  setenv("WEFT_RESTART_COUNT", "1", 1);
  refused("WEFT_RESTART_COUNT=1 without WEFT_PREV_WORLD_SIZE");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_first_attempt_unset, clear_env),
    cmocka_unit_test_setup(test_weftrun_first_and_later, clear_env),
    cmocka_unit_test_setup(test_torchrun_alone, clear_env),
    cmocka_unit_test_setup(test_malformed, clear_env),
    cmocka_unit_test_setup(test_contradictions, clear_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
