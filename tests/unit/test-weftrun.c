/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of weftrun's option table (src/weftrun/options.c on the engine in
 * src/common/opt.c) and of the rank-to-host layout shared with weft-rank. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout.h"
#include <weftx.h>
#include "opt.h"
#include "weftrun.h"

/* Parse a NULL-terminated word list as weftrun's argv; returns wr_opts_parse()'s code. */
static int
parse(wr_opts *o, const char **words)
{
  static char *argv[64];
  int argc = 0;
  argv[argc++] = (char *)"weftrun";
  for (; *words; words++)
    argv[argc++] = (char *)*words;
  argv[argc] = NULL;
  wr_opts_init(o);
  return wr_opts_parse(o, argc, argv);
}

static void
test_mpirun_spellings(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = { "-np", "4", "-H", "a,b:2", "-host", "c", "--host", "d", "-x", "FOO=1",
                      "-mca", "btl", "self,tcp", "--map-by=gpu", "-bind-to", "none",
                      "--oversubscribe", "./prog", "-np", "3", NULL };
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.np, 4);
  assert_int_equal(o.nhost_args, 3);
  assert_string_equal(o.host_args[1], "c");
  assert_string_equal(o.xvars[0], "FOO=1");
  assert_string_equal(o.mca[0].key, "btl");
  assert_string_equal(o.mca[0].value, "self,tcp");
  assert_string_equal(o.map_by, "gpu");
  assert_string_equal(o.bind_to, "none");
  assert_int_equal(o.oversubscribe, 1);
  /* the program's own options are its own */
  assert_int_equal(o.nprogram, 3);
  assert_string_equal(o.program[0], "./prog");
  assert_string_equal(o.program[1], "-np");

  const char *b[] = { "-n", "2", "--np", "3", "-c", "5", "-N", "2", "-hostfile", "h1", NULL };
  assert_int_equal(parse(&o, b), WR_EXIT_USAGE); /* no program */
  const char *p1[] = { "-pernode", "--timeout=5", "prog", NULL };
  assert_int_equal(parse(&o, p1), 0);
  assert_int_equal(o.per_node, 1);
  assert_int_equal(o.timeout, 5);
  setenv("MPIEXEC_TIMEOUT", "7", 1);
  const char *p2[] = { "prog", NULL };
  assert_int_equal(parse(&o, p2), 0);
  assert_int_equal(o.timeout, 7);
  setenv("MPIEXEC_TIMEOUT", "soon", 1);
  assert_int_equal(parse(&o, p2), WR_EXIT_USAGE);
  unsetenv("MPIEXEC_TIMEOUT");
  const char *c[] = { "-machinefile", "h", "--dry-run", NULL };
  assert_int_equal(parse(&o, c), 0);
  assert_string_equal(o.hostfile, "h");
  assert_int_equal(o.nprogram, 0);
}

static void
test_double_dash_ends_options(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = { "-np", "2", "--", "-weird-program", "--np", NULL };
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.nprogram, 2);
  assert_string_equal(o.program[0], "-weird-program");
}

static void
test_unknown_and_bad(void **state)
{
  wr_opts o;
  char buf[64];
  (void)state;
  const char *a[] = { "--bind-too", "core", "prog", NULL };
  assert_int_equal(parse(&o, a), WR_EXIT_USAGE);
  assert_string_equal(weft_opt_suggest(wr_options, "--bind-too", buf, sizeof(buf)), "--bind-to");
  assert_string_equal(weft_opt_suggest(wr_options, "-hostfil", buf, sizeof(buf)), "--hostfile");
  assert_string_equal(weft_opt_suggest(wr_options, "--report-binding", buf, sizeof(buf)),
                      "--report-bindings");
  assert_string_equal(weft_opt_suggest(wr_options, "--gpu-per-node", buf, sizeof(buf)),
                      "--gpus-per-node");
  assert_null(weft_opt_suggest(wr_options, "--completely-different", buf, sizeof(buf)));
  /* one-letter options take one dash only */
  const char *b[] = { "--x", "A", "prog", NULL };
  assert_int_equal(parse(&o, b), WR_EXIT_USAGE);
  const char *c[] = { "-np", NULL };
  assert_int_equal(parse(&o, c), WR_EXIT_USAGE);
  const char *d[] = { "-np", "zero", "prog", NULL };
  assert_int_equal(parse(&o, d), WR_EXIT_USAGE);
  const char *e[] = { "--gpu-visibility", "some", "prog", NULL };
  assert_int_equal(parse(&o, e), WR_EXIT_USAGE);
  const char *f[] = { "--mca", "btl", NULL };
  assert_int_equal(parse(&o, f), WR_EXIT_USAGE);
  const char *g[] = { "--json", "prog", NULL };
  assert_int_equal(parse(&o, g), WR_EXIT_USAGE);
  const char *h[] = { "--oversubscribe=1", "prog", NULL };
  assert_int_equal(parse(&o, h), WR_EXIT_USAGE);
  const char *i[] = { "--timeout", "-1", "prog", NULL };
  assert_int_equal(parse(&o, i), WR_EXIT_USAGE);
}

static void
test_pass_through(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = { "--display-map", "-wdir", "/tmp", "--topology", "a=x.xml", "--topology",
                      "y.xml", "prog", NULL };
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.npass, 3);
  assert_string_equal(o.pass[0], "--display-map");
  assert_string_equal(o.pass[1], "-wdir");
  assert_string_equal(o.pass[2], "/tmp");
  assert_int_equal(o.nhost_topology, 1);
  assert_string_equal(o.host_topology[0].value, "x.xml");
  assert_string_equal(o.topology, "y.xml");
}

/* Every visible option appears in --help and in the man page entries. */
static void
test_help_and_man_cover_table(void **state)
{
  char *help = NULL, *man = NULL, sp[1024];
  size_t hl = 0, ml = 0;
  (void)state;
  FILE *f = open_memstream(&help, &hl);
  assert_non_null(f);
  wr_usage(f);
  fclose(f);
  f = open_memstream(&man, &ml);
  assert_non_null(f);
  weft_opt_man(f, wr_options);
  fclose(f);
  for (const weft_opt *o = wr_options; o->id; o++) {
    if (o->flags & WEFT_OPT_HIDDEN) {
      assert_int_equal(weft_opt_spellings(o, sp, sizeof(sp)), 0);
      assert_null(strstr(help, sp));
      continue;
    }
    assert_int_equal(weft_opt_spellings(o, sp, sizeof(sp)), 0);
    if (strlen(sp) <= 76)
      assert_non_null(strstr(help, sp));
    assert_non_null(strstr(help, o->help));
    /* the first spelling, roff-escaped: \fB\-\-map\-by\fR */
    char want[160];
    size_t n = strcspn(o->names, "|"), w = 0;
    w += (size_t)snprintf(want, sizeof(want), "\\fB%s", n > 1 ? "\\-\\-" : "\\-");
    for (size_t k = 0; k < n && w + 4 < sizeof(want); k++) {
      if (o->names[k] == '-')
        want[w++] = '\\';
      want[w++] = o->names[k];
    }
    snprintf(want + w, sizeof(want) - w, "\\fR");
    assert_non_null(strstr(man, want));
  }
  assert_non_null(strstr(man, ".TP\n\\fB\\-\\-np\\fR, \\fB\\-n\\fR, \\fB\\-c\\fR \\fIN\\fR\n"));
  free(help);
  free(man);
}

static void
test_distance(void **state)
{
  (void)state;
  assert_int_equal(weftx_edit_distance("", "", 0), 0);
  assert_int_equal(weftx_edit_distance("abc", "", 0), 3);
  assert_int_equal(weftx_edit_distance("kitten", "sitting", 0), 3);
  assert_int_equal(weftx_edit_distance("bind-to", "bind-too", 0), 1);
}

static void
test_layout(void **state)
{
  int counts[3] = { 2, 1, 3 }, local = -1;
  (void)state;
  /* by slot: 0 1 | 2 | 3 4 5 */
  assert_int_equal(weft_layout_host(counts, 3, 0, 0, &local), 0);
  assert_int_equal(weft_layout_host(counts, 3, 0, 2, &local), 1);
  assert_int_equal(local, 0);
  assert_int_equal(weft_layout_host(counts, 3, 0, 5, &local), 2);
  assert_int_equal(local, 2);
  assert_int_equal(weft_layout_host(counts, 3, 0, 6, &local), -1);
  /* by node: round 0: 0->h0 1->h1 2->h2; round 1: 3->h0 4->h2; round 2: 5->h2 */
  assert_int_equal(weft_layout_host(counts, 3, 1, 1, &local), 1);
  assert_int_equal(weft_layout_host(counts, 3, 1, 3, &local), 0);
  assert_int_equal(local, 1);
  assert_int_equal(weft_layout_host(counts, 3, 1, 4, &local), 2);
  assert_int_equal(local, 1);
  assert_int_equal(weft_layout_host(counts, 3, 1, 5, &local), 2);
  assert_int_equal(local, 2);
  int c[4];
  assert_int_equal(weft_layout_parse("8,8,0", c, 4), 3);
  assert_int_equal(c[2], 0);
  assert_int_equal(weft_layout_parse("8,,8", c, 4), -1);
  assert_int_equal(weft_layout_parse("1,2,3,4,5", c, 4), -1);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mpirun_spellings),
    cmocka_unit_test(test_double_dash_ends_options),
    cmocka_unit_test(test_unknown_and_bad),
    cmocka_unit_test(test_pass_through),
    cmocka_unit_test(test_help_and_man_cover_table),
    cmocka_unit_test(test_distance),
    cmocka_unit_test(test_layout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
