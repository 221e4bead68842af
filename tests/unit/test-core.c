/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of lib/core: error table, version check, parsing, WEFT_VERBOSE. */
#include "weft_private.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The one table of <weft/errors.h>, as written. */
static const struct {
  const char *name; /* "INVAL" */
  int value;
  const char *msg;
} error_table[] = {
#define XX(name, value, msg) {#name, value, msg},
  WEFT_ERRNO_MAP(XX)
#undef XX
};
#define NERRORS (sizeof(error_table) / sizeof(error_table[0]))

static void test_errors_table(void **state)
{
  char sym[64];
  (void)state;
  assert_string_equal(weft_strerror(0), "success");
  assert_string_equal(weft_strerror(WEFT_EINVAL), "invalid argument");
  assert_string_equal(weft_err_name(WEFT_ETIMEDOUT), "WEFT_ETIMEDOUT");
  assert_string_equal(weft_strerror(12345), "unknown error");
  assert_string_equal(weft_err_name(-999), "WEFT_EUNKNOWN");
  /* Every code of the table is negative and distinct, has a name and a message of
   * its own, and weft_strerror() and weft_err_name() give them. */
  assert_true(NERRORS > 0);
  for (size_t i = 0; i < NERRORS; i++) {
    const char *name = error_table[i].name, *msg = error_table[i].msg;
    int e = error_table[i].value;
    assert_true(e < 0);
    assert_true(e > WEFT_ERRNO_LAST);
    assert_non_null(name);
    assert_true(name[0] != '\0');
    assert_non_null(msg);
    assert_true(msg[0] != '\0');
    assert_string_not_equal(msg, "unknown error");
    assert_string_not_equal(msg, "success");
    assert_string_equal(weft_strerror(e), msg);
    assert_true(snprintf(sym, sizeof(sym), "WEFT_E%s", name) < (int)sizeof(sym));
    assert_string_equal(weft_err_name(e), sym);
    for (size_t j = 0; j < i; j++) {
      assert_int_not_equal(error_table[j].value, e);
      assert_string_not_equal(error_table[j].name, name);
      assert_string_not_equal(error_table[j].msg, msg);
    }
  }
  /* WEFT_ERRNO_LAST is one past the last: the codes are -1 down to it, none missing
   * (a new code is appended, never given a gap). */
  assert_int_equal(NERRORS, -(WEFT_ERRNO_LAST + 1));
  for (int e = -1; e > WEFT_ERRNO_LAST; e--) {
    assert_string_not_equal(weft_strerror(e), "unknown error");
    assert_string_not_equal(weft_err_name(e), "WEFT_EUNKNOWN");
  }
  assert_string_equal(weft_strerror(WEFT_ERRNO_LAST), "unknown error");
  assert_string_equal(weft_err_name(WEFT_ERRNO_LAST), "WEFT_EUNKNOWN");
}

static void test_version(void **state)
{
  char buf[512];
  FILE *f = fmemopen(buf, sizeof(buf), "w");
  (void)state;
  assert_int_equal(weft_version(), WEFT_VERSION_HEX);
  assert_string_equal(weft_version_string(), WEFT_VERSION_STRING);
  assert_int_equal(weft_check_version(stderr, "t"), 0);
  assert_non_null(f);
  assert_int_equal(weft__check_api(WEFT_API_VERSION + 1, f, "tool"), WEFT_EVERSION);
  fclose(f);
  assert_non_null(strstr(buf, "LD_LIBRARY_PATH"));
}

static void test_parse_long(void **state)
{
  long v = 0;
  (void)state;
  assert_int_equal(weftx_parse_long("42", 0, 100, &v), 0);
  assert_int_equal(v, 42);
  assert_int_equal(weftx_parse_long("-3", -10, 10, &v), 0);
  assert_int_equal(v, -3);
  assert_int_equal(weftx_parse_long("", 0, 10, &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_long(NULL, 0, 10, &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_long("4x", 0, 10, &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_long(" 4", 0, 10, &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_long("-1", 0, 10, &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_long("11", 0, 10, &v), WEFT_ERANGE);
  assert_int_equal(weftx_parse_long("99999999999999999999999", 0, 10, &v), WEFT_ERANGE);
}

static void test_parse_size(void **state)
{
  size_t v = 0;
  (void)state;
  assert_int_equal(weftx_parse_size("8", &v), 0);
  assert_int_equal(v, 8);
  assert_int_equal(weftx_parse_size("4K", &v), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(weftx_parse_size("1MB", &v), 0);
  assert_int_equal(v, 1 << 20);
  assert_int_equal(weftx_parse_size("2g", &v), 0);
  assert_int_equal(v, (size_t)2 << 30);
  assert_int_equal(weftx_parse_size("1Q", &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_size("-1", &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_size("", &v), WEFT_EPARSE);
  assert_int_equal(weftx_parse_size("99999999999999999999T", &v), WEFT_ERANGE);
}

static void test_edit_distance(void **state)
{
  (void)state;
  assert_int_equal(weftx_edit_distance("numa", "nuam", 0), 2);
  assert_int_equal(weftx_edit_distance("NUMA", "numa", 0), 4);
  assert_int_equal(weftx_edit_distance("NUMA", "numa", 1), 0);
  assert_int_equal(weftx_edit_distance("", "core", 1), 4);
  /* Long words are compared on their first 63 bytes only, without overflow. */
  char a[200], b[200];
  memset(a, 'x', sizeof(a) - 1);
  a[sizeof(a) - 1] = '\0';
  memcpy(b, a, sizeof(b));
  b[150] = 'y';
  assert_int_equal(weftx_edit_distance(a, b, 0), 0);
}

static void test_json_string(void **state)
{
  char buf[128] = "";
  FILE *f = fmemopen(buf, sizeof(buf), "w");
  (void)state;
  assert_non_null(f);
  weftx_json_string(f, "a\"b\\c\n\x01\x7f");
  fputc(' ', f);
  weftx_json_string(f, NULL);
  fclose(f);
  assert_string_equal(buf, "\"a\\\"b\\\\c\\n\\u0001\\u007f\" \"\"");
}

static void test_verbose(void **state)
{
  (void)state;
  unsetenv("WEFT_VERBOSE");
  weftx_log_reset();
  assert_int_equal(weft_log_enabled(WEFT_LOG_TOPO), 0);
  setenv("WEFT_VERBOSE", "topo,map", 1);
  weftx_log_reset();
  assert_int_equal(weft_log_enabled(WEFT_LOG_TOPO), 1);
  assert_int_equal(weft_log_enabled(WEFT_LOG_MAP), 1);
  assert_int_equal(weft_log_enabled(WEFT_LOG_RT), 0);
  setenv("WEFT_VERBOSE", "all,-rt", 1);
  weftx_log_reset();
  assert_int_equal(weft_log_enabled(WEFT_LOG_GCP), 1);
  assert_int_equal(weft_log_enabled(WEFT_LOG_RT), 0);
  setenv("WEFT_VERBOSE", "nonsense", 1);
  weftx_log_reset();
  assert_int_equal(weft_log_enabled(WEFT_LOG_CORE), 0);
  assert_int_equal(weft_log_enabled((weft_subsys)99), 0);
  unsetenv("WEFT_VERBOSE");
  weftx_log_reset();
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_errors_table), cmocka_unit_test(test_version),
    cmocka_unit_test(test_parse_long),   cmocka_unit_test(test_parse_size),
    cmocka_unit_test(test_verbose),      cmocka_unit_test(test_edit_distance),
    cmocka_unit_test(test_json_string),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
