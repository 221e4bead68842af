/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of weftrun's option table (src/weftrun/options.c on the engine in
 * src/common/opt.c), of the rank-to-host layout shared with weft-rank, and of
 * the rest of their contract (src/common/agent.c): the agent's arguments
 * written and parsed by one table, the failure line, the probe's GCE line,
 * the exit-status table. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "layout.h"
#include <weftx.h>
#include "opt.h"
#include "weftrun.h"
#include "engine/engine.h"

/* Parse a NULL-terminated word list as weftrun's argv; returns wr_opts_parse()'s code. */
static int parse(wr_opts *o, const char **words)
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

static void test_mpirun_spellings(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = {"-np",
                     "4",
                     "-H",
                     "a,b:2",
                     "-host",
                     "c",
                     "--host",
                     "d",
                     "-x",
                     "FOO=1",
                     "-mca",
                     "btl",
                     "self,tcp",
                     "--map-by=gpu",
                     "-bind-to",
                     "none",
                     "--oversubscribe",
                     "./prog",
                     "-np",
                     "3",
                     NULL};
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

  const char *b[] = {"-n", "2", "--np", "3", "-c", "5", "-N", "2", "-hostfile", "h1", NULL};
  assert_int_equal(parse(&o, b), WR_EXIT_USAGE); /* no program */
  const char *p1[] = {"-pernode", "--timeout=5", "prog", NULL};
  assert_int_equal(parse(&o, p1), 0);
  assert_int_equal(o.per_node, 1);
  assert_int_equal(o.timeout, 5);
  setenv("MPIEXEC_TIMEOUT", "7", 1);
  const char *p2[] = {"prog", NULL};
  assert_int_equal(parse(&o, p2), 0);
  assert_int_equal(o.timeout, 7);
  setenv("MPIEXEC_TIMEOUT", "soon", 1);
  assert_int_equal(parse(&o, p2), WR_EXIT_USAGE);
  unsetenv("MPIEXEC_TIMEOUT");
  const char *c[] = {"-machinefile", "h", "--dry-run", NULL};
  assert_int_equal(parse(&o, c), 0);
  assert_string_equal(o.hostfile, "h");
  assert_int_equal(o.nprogram, 0);
}

static void test_double_dash_ends_options(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = {"-np", "2", "--", "-weird-program", "--np", NULL};
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.nprogram, 2);
  assert_string_equal(o.program[0], "-weird-program");
}

static void test_unknown_and_bad(void **state)
{
  wr_opts o;
  char buf[64];
  (void)state;
  const char *a[] = {"--bind-too", "core", "prog", NULL};
  assert_int_equal(parse(&o, a), WR_EXIT_USAGE);
  assert_string_equal(wt_opt_suggest(wr_options, "--bind-too", buf, sizeof(buf)), "--bind-to");
  assert_string_equal(wt_opt_suggest(wr_options, "-hostfil", buf, sizeof(buf)), "--hostfile");
  assert_string_equal(wt_opt_suggest(wr_options, "--report-binding", buf, sizeof(buf)),
                      "--report-bindings");
  assert_string_equal(wt_opt_suggest(wr_options, "--gpu-per-node", buf, sizeof(buf)),
                      "--gpus-per-node");
  assert_null(wt_opt_suggest(wr_options, "--completely-different", buf, sizeof(buf)));
  /* one-letter options take one dash only */
  const char *b[] = {"--x", "A", "prog", NULL};
  assert_int_equal(parse(&o, b), WR_EXIT_USAGE);
  const char *c[] = {"-np", NULL};
  assert_int_equal(parse(&o, c), WR_EXIT_USAGE);
  const char *d[] = {"-np", "zero", "prog", NULL};
  assert_int_equal(parse(&o, d), WR_EXIT_USAGE);
  const char *e[] = {"--gpu-visibility", "some", "prog", NULL};
  assert_int_equal(parse(&o, e), WR_EXIT_USAGE);
  const char *f[] = {"--mca", "btl", NULL};
  assert_int_equal(parse(&o, f), WR_EXIT_USAGE);
  const char *g[] = {"--json", "prog", NULL};
  assert_int_equal(parse(&o, g), WR_EXIT_USAGE);
  const char *h[] = {"--oversubscribe=1", "prog", NULL};
  assert_int_equal(parse(&o, h), WR_EXIT_USAGE);
  const char *i[] = {"--timeout", "-1", "prog", NULL};
  assert_int_equal(parse(&o, i), WR_EXIT_USAGE);
}

static void test_pass_through(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = {"--display-map", "-wdir",      "/tmp",  "--topology",
                     "a=x.xml",       "--topology", "y.xml", "--leave-session-attached",
                     "-prefix",       "/opt/ompi",  "prog",  NULL};
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.npass, 3);
  assert_string_equal(o.pass[0], "--leave-session-attached");
  assert_string_equal(o.pass[1], "-prefix");
  assert_string_equal(o.pass[2], "/opt/ompi");
  assert_int_equal(o.nhost_topology, 1);
  assert_string_equal(o.host_topology[0].value, "x.xml");
  assert_string_equal(o.topology, "y.xml");
  /* Open MPI's options kept word for word for mpirun; weft's own left out */
  assert_int_equal(o.apps[0].nwords, 6);
  assert_string_equal(o.apps[0].words[0], "--display-map");
  assert_int_equal(o.apps[0].place[0], WR_WORD_PLACE);
  assert_string_equal(o.apps[0].words[1], "-wdir");
  assert_int_equal(o.apps[0].place[1], WR_WORD_ANY);
  assert_string_equal(o.apps[0].words[5], "/opt/ompi");
  wr_opts_free(&o);
}

/* parse(), with what weftrun says on stderr into \p msg. */
static int parse_said(wr_opts *o, const char **words, char *msg, size_t len)
{
  FILE *t = tmpfile();
  int saved = dup(2), rc;
  assert_non_null(t);
  assert_true(saved >= 0);
  fflush(stderr);
  assert_true(dup2(fileno(t), 2) >= 0);
  rc = parse(o, words);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(t);
  msg[fread(msg, 1, len - 1, t)] = '\0';
  fclose(t);
  return rc;
}

/* Open MPI's options that weftrun refuses: one line naming the option, saying Open MPI
 * has it and weftrun does not, and what to use instead */
static void test_refused(void **state)
{
  static const char *refused[] = {
    "-rf",     "--rankfile",           "--app",           "--preload-binary",
    "-s",      "--index-argv-by-rank", "--do-not-launch", "--tv",
    "--debug", "--enable-recovery",    "--tune",          "--am",
    NULL};
  wr_opts o;
  (void)state;
  for (int i = 0; refused[i]; i++) {
    const char *a[] = {refused[i], "x", "prog", NULL};
    char msg[1200];
    assert_int_equal(parse_said(&o, a, msg, sizeof(msg)), WR_EXIT_USAGE);
    assert_non_null(strstr(msg, refused[i]));
    assert_non_null(strstr(msg, "is an Open MPI option that weftrun does not support; "));
    assert_int_equal(strchr(msg, '\n') - msg, (long)strlen(msg) - 1); /* one line */
    wr_opts_free(&o);
  }
}

/* A suggestion never means the opposite, and Open MPI's options are found as they are */
static void test_suggestions(void **state)
{
  char buf[64];
  (void)state;
  const char *s = wt_opt_suggest(wr_options, "--no-oversubscribe", buf, sizeof(buf));
  assert_true(!s || strcmp(s, "--oversubscribe"));
  s = wt_opt_suggest(wr_options, "--nobind", buf, sizeof(buf));
  assert_true(!s || strcmp(s, "--bind-to"));
  /* Open MPI's deprecated spellings are options, not typos */
  assert_non_null(wt_opt_find(wr_options, "bynode"));
  assert_non_null(wt_opt_find(wr_options, "nooversubscribe"));
  assert_non_null(wt_opt_find(wr_options, "d"));
  assert_non_null(wt_opt_find(wr_options, "app"));
}

/* Colon-separated programs (MPMD): each its own options and arguments */
static void test_mpmd(void **state)
{
  wr_opts o;
  (void)state;
  const char *a[] = {"-np", "1", "--map-by", "node", "a", "x", ":",
                     "-np", "2", "-H",       "h",    "b", NULL};
  assert_int_equal(parse(&o, a), 0);
  assert_int_equal(o.napps, 2);
  assert_int_equal(o.apps[0].np, 1);
  assert_int_equal(o.apps[0].nprogram, 2);
  assert_string_equal(o.apps[1].program[0], "b");
  assert_int_equal(o.apps[1].np, 2);
  assert_int_equal(o.apps[1].nhost_args, 1);
  assert_string_equal(o.map_by, "node");
  wr_opts_free(&o);
  /* placement options belong before the first program */
  const char *b[] = {"-np", "1", "a", ":", "--map-by", "core", "-np", "1", "b", NULL};
  assert_int_equal(parse(&o, b), WR_EXIT_USAGE);
  wr_opts_free(&o);
  const char *c[] = {"-np", "1", "a", ":", NULL};
  assert_int_equal(parse(&o, c), WR_EXIT_USAGE);
  wr_opts_free(&o);
}

/* Every visible option appears in --help and in the man page entries. */
static void test_help_and_man_cover_table(void **state)
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
  wt_opt_man(f, wr_options);
  fclose(f);
  for (const wt_opt *o = wr_options; o->id; o++) {
    if (o->flags & WT_OPT_HIDDEN) {
      assert_int_equal(wt_opt_spellings(o, sp, sizeof(sp)), 0);
      assert_null(strstr(help, sp));
      continue;
    }
    assert_int_equal(wt_opt_spellings(o, sp, sizeof(sp)), 0);
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

static void test_distance(void **state)
{
  (void)state;
  assert_int_equal(weftx_edit_distance("", "", 0), 0);
  assert_int_equal(weftx_edit_distance("abc", "", 0), 3);
  assert_int_equal(weftx_edit_distance("kitten", "sitting", 0), 3);
  assert_int_equal(weftx_edit_distance("bind-to", "bind-too", 0), 1);
}

static void test_layout(void **state)
{
  int counts[3] = {2, 1, 3}, local = -1;
  (void)state;
  /* by slot: 0 1 | 2 | 3 4 5 */
  assert_int_equal(wt_layout_host(counts, 3, 0, 0, &local), 0);
  assert_int_equal(wt_layout_host(counts, 3, 0, 2, &local), 1);
  assert_int_equal(local, 0);
  assert_int_equal(wt_layout_host(counts, 3, 0, 5, &local), 2);
  assert_int_equal(local, 2);
  assert_int_equal(wt_layout_host(counts, 3, 0, 6, &local), -1);
  /* by node: round 0: 0->h0 1->h1 2->h2; round 1: 3->h0 4->h2; round 2: 5->h2 */
  assert_int_equal(wt_layout_host(counts, 3, 1, 1, &local), 1);
  assert_int_equal(wt_layout_host(counts, 3, 1, 3, &local), 0);
  assert_int_equal(local, 1);
  assert_int_equal(wt_layout_host(counts, 3, 1, 4, &local), 2);
  assert_int_equal(local, 1);
  assert_int_equal(wt_layout_host(counts, 3, 1, 5, &local), 2);
  assert_int_equal(local, 2);
  /* all ranks at once (weftrun's plan) agree with weft-rank's rank-by-rank answer,
   * zero counts and uneven hosts included */
  for (int seed = 1; seed <= 200; seed++) {
    int cnt[9], np = 0, n = 1 + seed % 9, by_node = seed & 1;
    unsigned x = (unsigned)seed * 2654435761u;
    for (int h = 0; h < n; h++) {
      x = x * 1103515245u + 12345u;
      cnt[h] = (int)((x >> 16) % 6);
      np += cnt[h];
    }
    int host[64], loc[64];
    assert_int_equal(wt_layout_assign(cnt, n, by_node, np, host, loc), 0);
    for (int r = 0; r < np; r++) {
      assert_int_equal(wt_layout_host(cnt, n, by_node, r, &local), host[r]);
      assert_int_equal(local, loc[r]);
    }
  }
  int c[4];
  assert_int_equal(wt_layout_parse("8,8,0", c, 4), 3);
  assert_int_equal(c[2], 0);
  assert_int_equal(wt_layout_parse("8,,8", c, 4), -1);
  assert_int_equal(wt_layout_parse("1,2,3,4,5", c, 4), -1);
  /* run-length: C ranks on each of N hosts */
  assert_int_equal(wt_layout_parse("8x2,4", c, 4), 3);
  assert_int_equal(c[0], 8);
  assert_int_equal(c[1], 8);
  assert_int_equal(c[2], 4);
  assert_int_equal(wt_layout_parse("1x5", c, 4), -1);
  assert_int_equal(wt_layout_parse("2x3,1x2", c, 4), -1);
  const char *bad[] = {"8x0", "x2", "8x", "8x-1", "-1", "8,", "8x2x2", "8;2", ""};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_true(wt_layout_parse(bad[i], c, 4) <= 0);
  int *big = calloc(WT_AGENT_MAX_HOSTS, sizeof(int));
  assert_non_null(big);
  assert_int_equal(wt_layout_parse("8x16384", big, WT_AGENT_MAX_HOSTS), WT_AGENT_MAX_HOSTS);
  assert_int_equal(wt_layout_parse("8x16384,1", big, WT_AGENT_MAX_HOSTS), -1);
  big[WT_AGENT_MAX_HOSTS - 1] = 4;
  char *enc = wt_layout_encode(big, WT_AGENT_MAX_HOSTS);
  assert_string_equal(enc, "8x16383,4");
  free(enc);
  free(big);
  int mixed[] = {9, 9, 8, 7, 7, 7};
  enc = wt_layout_encode(mixed, 6);
  assert_string_equal(enc, "9x2,8,7x3");
  assert_int_equal(wt_layout_parse(enc, c, 4), -1); /* 6 hosts, room for 4 */
  free(enc);

  /* The GPUs of each host: a set per host, coded the same way. */
  const char *sets[] = {"3-4", "3-4", "3-4", NULL, "", "0,2", "0,2"};
  char set[32];
  enc = wt_gpusets_encode(sets, 7);
  assert_string_equal(enc, "3-4*3;all;none;0,2*2");
  assert_int_equal(wt_gpusets_host(enc, 0, set, sizeof(set)), 0);
  assert_string_equal(set, "3-4");
  assert_int_equal(wt_gpusets_host(enc, 2, set, sizeof(set)), 0);
  assert_string_equal(set, "3-4");
  assert_int_equal(wt_gpusets_host(enc, 3, set, sizeof(set)), 1);
  assert_int_equal(wt_gpusets_host(enc, 4, set, sizeof(set)), 0);
  assert_string_equal(set, "");
  assert_int_equal(wt_gpusets_host(enc, 6, set, sizeof(set)), 0);
  assert_string_equal(set, "0,2");
  assert_int_equal(wt_gpusets_host(enc, 7, set, sizeof(set)), -1);
  assert_int_equal(wt_gpusets_host(enc, -1, set, sizeof(set)), -1);
  assert_int_equal(wt_gpusets_host(enc, 0, set, 3), -1); /* does not fit */
  free(enc);
  const char *same[] = {"0-7", "0-7"};
  enc = wt_gpusets_encode(same, 2);
  assert_string_equal(enc, "0-7*2");
  free(enc);
  const char *badsets[] = {"3-4*0", "3-4*", "*2", "3;;4", "a-b", "3-4*2x", "3-4*-1", "", ";"};
  for (size_t i = 0; i < sizeof(badsets) / sizeof(badsets[0]); i++)
    if (wt_gpusets_host(badsets[i], 0, set, sizeof(set)) != -1 &&
        wt_gpusets_host(badsets[i], 1, set, sizeof(set)) != -1)
      fail_msg("'%s' was taken", badsets[i]);
}

typedef struct words {
  char *v[600];
  int n;
} words;

static int add_word(void *ud, const char *w)
{
  words *ws = ud;
  if (ws->n >= 599)
    return -1;
  ws->v[ws->n++] = strdup(w);
  ws->v[ws->n] = NULL;
  return 0;
}

static void test_agent_args(void **state)
{
  wt_agent_args a, b;
  words ws = {{(char *)"weft-rank"}, 1};
  char why[256];
  int first = 0;
  (void)state;
  wt_agent_args_init(&a);
  a.layout = "8x1999,4";
  a.by_node = 1;
  a.map_by = "gpu:pe=2";
  a.bind_to = "gpu-local";
  a.oversubscribe = a.report_bindings = 1;
  a.gpu_visibility = "own";
  a.nccl_preset = "none";
  a.master_addr = "10.0.0.2";
  a.master_port = 29500;
  a.ifname = "ens4";
  a.topology = "/t/a3.xml";
  a.host_topology[a.nhost_topology++] = "3=/t/g2.xml";
  a.host_xml = "/tmp/weft-1-x/topology.xml";
  a.preempt_grace = 7;
  a.gpus = "3-4*1999;0";
  a.output_filename = "/out";
  assert_int_equal(wt_agent_args_write(&a, add_word, &ws), 0);
  assert_int_equal(add_word(&ws, "--"), 0);
  assert_int_equal(add_word(&ws, "prog"), 0);
  /* the arguments do not depend on the hosts: a few words, whatever the job */
  assert_true(ws.n < 40);
  wt_agent_args_init(&b);
  assert_int_equal(wt_agent_args_parse(&b, ws.n, ws.v, &first, why, sizeof(why)), 0);
  assert_string_equal(ws.v[first], "prog");
  assert_string_equal(b.layout, a.layout);
  assert_int_equal(b.by_node, 1);
  assert_string_equal(b.map_by, a.map_by);
  assert_string_equal(b.bind_to, a.bind_to);
  assert_int_equal(b.oversubscribe, 1);
  assert_int_equal(b.report_bindings, 1);
  assert_string_equal(b.gpu_visibility, "own");
  assert_string_equal(b.nccl_preset, "none");
  assert_string_equal(b.master_addr, a.master_addr);
  assert_int_equal(b.master_port, 29500);
  assert_string_equal(b.ifname, "ens4");
  assert_string_equal(b.host_xml, a.host_xml);
  assert_int_equal(b.preempt_grace, 7);
  assert_string_equal(b.gpus, a.gpus);
  assert_string_equal(b.output_filename, "/out");
  assert_string_equal(wt_agent_topology_for(&b, 3), "/t/g2.xml");
  assert_string_equal(wt_agent_topology_for(&b, 2), "/t/a3.xml");
  for (int i = 1; i < ws.n; i++)
    free(ws.v[i]);
  /* the probe is one word; --gpus-per-node is not part of the contract */
  ws.n = 1;
  wt_agent_args_init(&a);
  a.probe = 1;
  assert_int_equal(wt_agent_args_write(&a, add_word, &ws), 0);
  assert_int_equal(ws.n, 2);
  assert_string_equal(ws.v[1], "--probe");
  free(ws.v[1]);
  char *gpn[] = {(char *)"weft-rank", (char *)"--gpus-per-node", (char *)"8", NULL};
  wt_agent_args_init(&b);
  assert_int_equal(wt_agent_args_parse(&b, 3, gpn, &first, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "unknown option '--gpus-per-node'"));
}

static void test_fail_line(void **state)
{
  wt_agent_who who = {3, "vm-b", "2 (0000:0a:00.0)"};
  char *buf = NULL;
  size_t len = 0;
  (void)state;
  FILE *out = open_memstream(&buf, &len);
  assert_non_null(out);
  /* display only: weftrun takes failures from the control channel */
  wt_agent_fail_print(out, &who, NULL, 3, 0);
  wt_agent_fail_print(out, &who, "cannot run 'x': No such file or directory", 127, 0);
  wt_agent_fail_print(out, &who, NULL, 137, 9);
  fclose(out);
  assert_string_equal(buf,
                      "weft-rank: rank 3 host vm-b gpu 2 (0000:0a:00.0): exited with status 3\n"
                      "weft-rank: rank 3 host vm-b gpu 2 (0000:0a:00.0): cannot run 'x': No "
                      "such file or directory; exited with status 127\n"
                      "weft-rank: rank 3 host vm-b gpu 2 (0000:0a:00.0): killed by signal 9 "
                      "(Killed)\n");
  free(buf);
}

static void test_gce_line(void **state)
{
  char *buf = NULL, mt[64] = "", ph[256] = "";
  size_t len = 0;
  (void)state;
  FILE *out = open_memstream(&buf, &len);
  fputs("<topology/>", out);
  wt_agent_gce_print(out, "a3-highgpu-8g", "/c/r/h");
  fclose(out);
  assert_int_equal(wt_agent_gce_parse(buf, len, mt, sizeof(mt), ph, sizeof(ph)), 12);
  assert_string_equal(mt, "a3-highgpu-8g");
  assert_string_equal(ph, "/c/r/h");
  free(buf);
  out = open_memstream(&buf, &len);
  fputs("<topology/>", out);
  wt_agent_gce_print(out, "n2-standard-8", "");
  fclose(out);
  wt_agent_gce_parse(buf, len, mt, sizeof(mt), ph, sizeof(ph));
  assert_string_equal(mt, "n2-standard-8");
  assert_string_equal(ph, "");
  free(buf);
  /* no line: the whole is XML, the facts are left alone */
  assert_int_equal(wt_agent_gce_parse("<topology/>\n", 12, mt, sizeof(mt), ph, sizeof(ph)), 12);
  assert_string_equal(mt, "n2-standard-8");
}

static char *render(void (*fn)(FILE *))
{
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  assert_non_null(out);
  fn(out);
  fclose(out);
  return buf;
}

static void test_exit_table(void **state)
{
  (void)state;
  char *help = render(wt_exit_help), *topic = render(wt_exit_topic), *man = render(wt_exit_man);
  int last = -1, n = 0;
  for (const wt_exit_row *r = wt_exit_rows; r->name; r++, n++) {
    char want[64];
    /* codes in ascending order, each once (ranges are negative) */
    if (r->code >= 0) {
      assert_true(r->code > last);
      last = r->code;
      snprintf(want, sizeof(want), "%d", r->code);
      assert_string_equal(r->label, want);
    }
    snprintf(want, sizeof(want), "%s %s", r->label, r->brief);
    assert_non_null(strstr(help, want));
    snprintf(want, sizeof(want), "  %-8s", r->label);
    assert_non_null(strstr(topic, want));
    snprintf(want, sizeof(want), ".TP\n.%c %s\n", r->code < 0 ? 'I' : 'B', r->label);
    assert_non_null(strstr(man, want));
  }
  assert_int_equal(n, 15);
  /* weftrun's constants are the table's */
  assert_int_equal(WR_EXIT_USAGE, 2);
  assert_int_equal(WR_EXIT_PREEMPTED, 79);
  assert_int_equal(WR_EXIT_CHECKWARN, 80);
  assert_int_equal(WR_EXIT_CHECKFAIL, 81);
  assert_int_equal(WR_EXIT_TIMEOUT, 124);
  assert_int_equal(WT_EXIT_ENGINE, WR_EXIT_ENGINE);
  assert_non_null(strstr(man, "\\fBweftrun: job failed: rank 3 host vm\\-b"));
  free(help);
  free(topic);
  free(man);
}

static void count_call(void *arg) { (*(int *)arg)++; }

/* The text of a temporary file, from its start. */
static void file_text(FILE *f, char *buf, size_t len)
{
  size_t n;
  rewind(f);
  n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
}

/* mpirun's stderr under --lines: each record's line to weftrun's stdout or stderr, a
 * piece without its end of line as it is, anything else as it came; the callback once
 * per batch, before anything is written. */
static void test_lines(void **state)
{
  char out[512], err[512];
  int calls = 0, o = dup(1), e = dup(2);
  FILE *fo = tmpfile(), *fe = tmpfile();
  wr_lines l;
  (void)state;
  assert_non_null(fo);
  assert_non_null(fe);
  fflush(stdout);
  fflush(stderr);
  dup2(fileno(fo), 1);
  dup2(fileno(fe), 2);
  wr_lines_init(&l, count_call, &calls);
  const char a[] = "\036O[1,0]<stdout>:one\nmpirun says\n\036Etwo\n\036oanswer? \n";
  wr_lines_put(&l, 2, a, sizeof(a) - 1);
  int open_after_prompt = l.open;
  wr_lines_put(&l, 2, "\036O42\n", strlen("\036O42\n"));
  /* a line longer than a piece (not a record: mpirun's own) goes on whole */
  wr_lines_put(&l, 1, "long \036O", strlen("long \036O"));
  wr_lines_put(&l, 1, "line\n", strlen("line\n"));
  /* a record's mark must open a line, and be followed by O, o, E or e */
  wr_lines_put(&l, 2, "x\036Oy\n\036Xz\n", strlen("x\036Oy\n\036Xz\n"));
  fflush(stdout);
  fflush(stderr);
  dup2(o, 1);
  dup2(e, 2);
  close(o);
  close(e);
  file_text(fo, out, sizeof(out));
  file_text(fe, err, sizeof(err));
  fclose(fo);
  fclose(fe);
  assert_string_equal(out, "[1,0]<stdout>:one\nanswer? 42\nlong \036Oline\n");
  assert_string_equal(err, "mpirun says\ntwo\nx\036Oy\n\036Xz\n");
  assert_int_equal(open_after_prompt, 1);
  assert_int_equal(l.open, 0);
  assert_int_equal(calls, 5);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mpirun_spellings),
    cmocka_unit_test(test_double_dash_ends_options),
    cmocka_unit_test(test_unknown_and_bad),
    cmocka_unit_test(test_pass_through),
    cmocka_unit_test(test_refused),
    cmocka_unit_test(test_suggestions),
    cmocka_unit_test(test_mpmd),
    cmocka_unit_test(test_help_and_man_cover_table),
    cmocka_unit_test(test_distance),
    cmocka_unit_test(test_layout),
    cmocka_unit_test(test_agent_args),
    cmocka_unit_test(test_fail_line),
    cmocka_unit_test(test_gce_line),
    cmocka_unit_test(test_exit_table),
    cmocka_unit_test(test_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
