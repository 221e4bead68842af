/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loads a few hundred randomly damaged copies of shipped topology files (byte
 * changes, truncations, deleted, repeated and moved lines, dropped attributes,
 * changed numbers; fixed seed) and
 * checks that each one either loads into a usable topology or fails with a
 * one-line reason naming the file: never a crash, hang or leak.
 * WEFT_FUZZ_ROUNDS and WEFT_FUZZ_SEED change the defaults for a longer run
 * (e.g. under valgrind).
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

#include "test-util.h"

static char tmpdir[256];
static uint64_t rng_state;

static uint64_t rng(void)
{
  /* xorshift64*: the same sequence on every platform */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static size_t below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

/* Offsets of line starts in buf[0..len). */
static size_t line_start(const char *buf, size_t len, size_t k, size_t *end)
{
  size_t start = 0, line = 0, i;
  for (i = 0; i < len && line < k; i++)
    if (buf[i] == '\n') {
      line++;
      start = i + 1;
    }
  for (i = start; i < len && buf[i] != '\n'; i++)
    ;
  *end = i < len ? i + 1 : len;
  return start;
}

static size_t count_lines(const char *buf, size_t len)
{
  size_t n = 1;
  for (size_t i = 0; i < len; i++)
    n += buf[i] == '\n';
  return n;
}

/* Damage \p in into \p out (room for 2 x len + 64); returns the new length. */
static size_t damage(const char *in, size_t len, char *out)
{
  static const char junk[] = "<>\"=/ -0123456789abcdefx,\n&;";
  size_t n = len, s, e, lines;
  memcpy(out, in, len);
  switch (below(8)) {
  case 0: /* change a few bytes to arbitrary values */
    for (size_t k = 1 + below(8); k > 0; k--)
      out[below(n)] = (char)below(256);
    break;
  case 1: /* change a few bytes to XML-ish characters */
    for (size_t k = 1 + below(8); k > 0; k--)
      out[below(n)] = junk[below(sizeof(junk) - 1)];
    break;
  case 2: /* truncate */ n = below(len); break;
  case 3: /* delete a few lines */
    for (size_t k = 1 + below(5); k > 0; k--) {
      lines = count_lines(out, n);
      s = line_start(out, n, below(lines), &e);
      memmove(out + s, out + e, n - e);
      n -= e - s;
    }
    break;
  case 4: /* repeat a line */
    lines = count_lines(out, n);
    s = line_start(out, n, below(lines), &e);
    memmove(out + e + (e - s), out + e, n - e);
    memmove(out + e, out + s, e - s);
    n += e - s;
    break;
  case 5: { /* move a line elsewhere */
    char tmp[4096];
    size_t at, l;
    lines = count_lines(out, n);
    s = line_start(out, n, below(lines), &e);
    l = e - s;
    if (l > sizeof(tmp))
      break;
    memcpy(tmp, out + s, l);
    memmove(out + s, out + e, n - e);
    n -= l;
    at = line_start(out, n, below(count_lines(out, n)), &e);
    memmove(out + at + l, out + at, n - at);
    memcpy(out + at, tmp, l);
    n += l;
    break;
  }
  case 6: { /* drop one attribute (name="value") */
    size_t at = below(n), q1, q2;
    while (at < n && out[at] != '=')
      at++;
    if (at + 1 >= n || out[at + 1] != '"')
      break;
    for (s = at; s > 0 && out[s - 1] != ' ' && out[s - 1] != '\n'; s--)
      ;
    q1 = at + 1;
    for (q2 = q1 + 1; q2 < n && out[q2] != '"'; q2++)
      ;
    if (q2 >= n)
      break;
    memmove(out + s, out + q2 + 1, n - q2 - 1);
    n -= q2 + 1 - s;
    break;
  }
  default: /* change a number: digits to other digits, or a sign */
    for (size_t k = 1 + below(4); k > 0; k--) {
      size_t at = below(n);
      while (at < n && (out[at] < '0' || out[at] > '9'))
        at++;
      if (at < n)
        out[at] = below(5) ? (char)('0' + below(10)) : '-';
    }
    break;
  }
  return n;
}

static void walk(const weftx_topo *t)
{
  char buf[4096];
  for (int i = 0; i < weftx_topo_ngpus(t); i++) {
    const weftx_gpu *g = weftx_topo_gpu(t, i);
    assert_non_null(g);
    assert_non_null(g->cpuset);
    assert_true(weftx_cpuset_format(g->cpuset, buf, sizeof(buf)) <= 0);
    for (int j = 0; j < weftx_topo_nnics(t); j++)
      assert_true(weftx_topo_gpu_nic_near(t, i, j) <= WEFTX_NEAR_SYSTEM);
    for (int j = 0; j < weftx_topo_ngpus(t); j++)
      assert_true(weftx_topo_gpu_gpu_near(t, i, j) <= WEFTX_NEAR_SYSTEM);
  }
  for (int i = 0; i < weftx_topo_nnics(t); i++) {
    const weftx_nic *n = weftx_topo_nic(t, i);
    assert_non_null(n);
    assert_non_null(n->cpuset);
    assert_true(strlen(n->name) < sizeof(n->name));
  }
  for (int i = 0; i < weftx_topo_nnuma(t); i++)
    assert_non_null(weftx_topo_numa(t, i));
  for (int i = 0; i < weftx_topo_nwarnings(t); i++)
    assert_non_null(weftx_topo_warning(t, i));
  assert_true(weftx_topo_npus(t) > 0);
  assert_true(weftx_topo_ncores(t) > 0);
  assert_true(weftx_cpuset_format(weftx_topo_cpuset(t), buf, sizeof(buf)) <= 0);
  assert_non_null(weftx_topo_hostname(t));
}

static void fuzz_file(const char *name, int rounds, int *nok, int *nerr)
{
  char src[1024], path[512], why[512];
  size_t len, n;
  char *in, *out;

  assert_int_equal(weft__snprintf(src, sizeof(src), "%s/topologies/%s.xml", weftx_datadir(), name),
                   0);
  assert_int_equal(weft__snprintf(path, sizeof(path), "%s/damaged.xml", tmpdir), 0);
  in = slurp(src, &len);
  out = malloc(2 * len + 64);
  assert_non_null(out);
  for (int r = 0; r < rounds; r++) {
    weftx_topo *t = NULL;
    FILE *f;
    int rc;
    n = damage(in, len, out);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(out, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    why[0] = '\0';
    rc = weftx_topo_load(path, 0, &t, why, sizeof(why));
    if (rc == 0) {
      assert_non_null(t);
      walk(t);
      weftx_topo_destroy(t);
      (*nok)++;
    } else {
      assert_true(rc < 0);
      assert_null(t);
      if (!strstr(why, path) || strchr(why, '\n'))
        fail_msg("round %d: reason '%s' does not name %s on one line", r, why, path);
      (*nerr)++;
    }
  }
  unlink(path);
  free(in);
  free(out);
}

static void test_fuzz(void **state)
{
  const char *e = getenv("WEFT_FUZZ_ROUNDS");
  long rounds = 200, seed = 20261130;
  int nok = 0, nerr = 0;
  (void)state;

  if (e && weftx_parse_long(e, 1, 1000000, &rounds) != 0)
    fail_msg("WEFT_FUZZ_ROUNDS=%s is not a number of rounds", e);
  e = getenv("WEFT_FUZZ_SEED");
  if (e && weftx_parse_long(e, 1, 0x7fffffffL, &seed) != 0)
    fail_msg("WEFT_FUZZ_SEED=%s is not a positive number", e);
  rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL | 1;
  fuzz_file("gpu-numa-interleaved", (int)rounds, &nok, &nerr);
  fuzz_file("flat-vm-2numa", (int)rounds, &nok, &nerr);
  fuzz_file("a3-highgpu-8g", (int)(rounds / 5 > 0 ? rounds / 5 : 1), &nok, &nerr);
  print_message("fuzz: seed %ld, %d damaged files loaded, %d refused\n", seed, nok, nerr);
  assert_true(nerr > 0); /* the damage does reach the parser */
}

static int setup(void **state)
{
  const char *base = getenv("TMPDIR");
  (void)state;
  if (weft__snprintf(tmpdir, sizeof(tmpdir), "%s/test-topo-fuzz.XXXXXX",
                     base && *base ? base : "/tmp"))
    return -1;
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  return rmdir(tmpdir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fuzz),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
