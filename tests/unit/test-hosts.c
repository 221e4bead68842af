/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of lib/hosts: -H strings, hostfiles (valid and garbage), Slurm node
 * lists and what Slurm says about GPUs, host name validation, and the order of
 * host sources. */
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

static char why[512];

static weftx_hostlist *new_list(void)
{
  weftx_hostlist *hl = NULL;
  assert_int_equal(weftx_hostlist_create(&hl), 0);
  return hl;
}

/* Write \p text to a fresh temporary file; returns its path (static storage). */
static const char *temp_file(const char *text)
{
  static char path[64];
  FILE *f;
  int fd;

  snprintf(path, sizeof(path), "/tmp/weft-test-hosts-XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static int load_text(weftx_hostlist *hl, const char *text)
{
  const char *path = temp_file(text);
  int rc;

  why[0] = '\0';
  rc = weftx_hostfile_load(hl, path, why, sizeof(why));
  unlink(path);
  return rc;
}

/* The hostfile error for \p text: its code, and "PATH:LINE:" at the start of the reason. */
static void expect_file_error(const char *text, int code, int line, const char *part)
{
  weftx_hostlist *hl = new_list();
  char prefix[96];
  const char *path = temp_file(text);
  int rc;

  why[0] = '\0';
  rc = weftx_hostfile_load(hl, path, why, sizeof(why));
  snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
  unlink(path);
  if (rc != code || strncmp(why, prefix, strlen(prefix)) != 0 || !strstr(why, part))
    fail_msg("for %s: got %d '%s', wanted %d at '%s' with '%s'", text, rc, why, code, prefix, part);
  weftx_hostlist_destroy(hl);
}

static void assert_host(const weftx_hostlist *hl, int i, const char *name, int slots, int max)
{
  const weftx_host *h = weftx_hostlist_host(hl, i);
  assert_non_null(h);
  assert_string_equal(h->name, name);
  assert_int_equal(h->slots, slots);
  assert_int_equal(h->max_slots, max);
}

static void test_names(void **state)
{
  static const char *good[] = {"a",        "node-01",     "vm-a.c.proj.internal",
                               "10.0.0.7", "root@node1",  "j.doe@10.1.2.3",
                               "A1",       "j_doe@node1", NULL};
  static const char *bad[] = {"", "-oProxyCommand=x", "a;rm -rf", "$(x)", "`x`", "a b", "a|b",
                              "a&b", "a>b", "host-", "a..b", ".a", "a.", "user@", "@h", "-u@h",
                              "u@-h", "a@b@c", "10.0.0.300", "1.2.3", "x:y", "a\tb", "a'b", "a\"b",
                              "a\\b", "h*", "h?", "a/b", "~a",
                              /* Open MPI 4.1 refuses these (its node-name parser, measured) */
                              "gpu_7", "fe80::1", "::1", NULL};
  (void)state;
  for (int i = 0; good[i]; i++)
    if (weftx_hostname_check(good[i], why, sizeof(why)) != 0)
      fail_msg("'%s' refused: %s", good[i], why);
  for (int i = 0; bad[i]; i++)
    assert_int_equal(weftx_hostname_check(bad[i], why, sizeof(why)), WEFT_ENAME);
  weftx_hostname_check("a;rm -rf", why, sizeof(why));
  assert_non_null(strstr(why, "';'"));
  weftx_hostname_check("-oProxyCommand", why, sizeof(why));
  assert_non_null(strstr(why, "'-'"));
  weftx_hostname_check("::1", why, sizeof(why));
  assert_non_null(strstr(why, "IPv6 address, which Open MPI 4.1 cannot launch on"));
  weftx_hostname_check("gpu_7", why, sizeof(why));
  assert_non_null(strstr(why, "'_' is not allowed: Open MPI 4.1"));
  /* A control character in the name does not break the message's line. */
  assert_int_equal(weftx_hostname_check("a\nb", why, sizeof(why)), WEFT_ENAME);
  assert_null(strchr(why, '\n'));
  assert_non_null(strstr(why, "'a?b'"));
  /* 63-character labels pass, 64 do not. */
  char label[80];
  memset(label, 'a', 64);
  label[64] = '\0';
  assert_int_equal(weftx_hostname_check(label, why, sizeof(why)), WEFT_ENAME);
  label[63] = '\0';
  assert_int_equal(weftx_hostname_check(label, why, sizeof(why)), 0);
}

static void test_arg(void **state)
{
  weftx_hostlist *hl = new_list();
  (void)state;
  assert_int_equal(weftx_hosts_parse_arg(hl, "a,b:4,c", why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_count(hl), 3);
  assert_host(hl, 0, "a", 0, 0);
  assert_false(weftx_hostlist_host(hl, 0)->slots_given);
  assert_host(hl, 1, "b", 4, 0);
  assert_true(weftx_hostlist_host(hl, 1)->slots_given);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_CMDLINE);
  /* Open MPI's own count: a host without one has 1 slot (given) */
  assert_int_equal(weftx_hostlist_host(hl, 0)->ompi_slots, 1);
  assert_true(weftx_hostlist_host(hl, 0)->ompi_given);
  /* A second -H adds up, as mpirun does: a listed twice is two slots; b 4+2. */
  assert_int_equal(weftx_hosts_parse_arg(hl, "a,b:2,root@d,e:*", why, sizeof(why)), 0);
  assert_host(hl, 0, "a", 2, 0);
  assert_int_equal(weftx_hostlist_host(hl, 0)->ompi_slots, 2);
  assert_host(hl, 1, "b", 6, 0);
  assert_int_equal(weftx_hostlist_host(hl, 1)->ompi_slots, 6);
  assert_host(hl, 3, "d", 0, 0);
  assert_string_equal(weftx_hostlist_host(hl, 3)->user, "root");
  /* e:* leaves the count to the host's cores, in Open MPI's view and weft's */
  assert_host(hl, 4, "e", 0, 0);
  assert_false(weftx_hostlist_host(hl, 4)->ompi_given);
  /* Open MPI names a host by its first label (an address stays whole) */
  assert_int_equal(weftx_hosts_parse_arg(hl, "vm-a.c.proj.internal:2,10.0.0.7", why, sizeof(why)),
                   0);
  assert_host(hl, 5, "vm-a", 2, 0);
  assert_string_equal(weftx_hostlist_host(hl, 5)->typed, "vm-a.c.proj.internal");
  assert_host(hl, 6, "10.0.0.7", 0, 0);
  assert_int_equal(weftx_hosts_parse_arg_ompi(hl, "vm-b.c.proj.internal", 1, why, sizeof(why)), 0);
  assert_host(hl, 7, "vm-b.c.proj.internal", 0, 0);
  assert_int_equal(weftx_hostlist_find(hl, "D"), 3);
  assert_int_equal(weftx_hostlist_find(hl, "zz"), -1);
  assert_int_equal(weftx_hostlist_total_slots(hl), 10);
  assert_int_equal(weftx_hostlist_default_slots(hl, 3, 8), 0);
  assert_int_equal(weftx_hostlist_default_slots(hl, 1, 8), 0);
  assert_host(hl, 3, "d", 8, 0);
  assert_host(hl, 1, "b", 6, 0);
  assert_int_equal(weftx_hostlist_default_slots(hl, 99, 8), WEFT_EINVAL);
  weftx_hostlist_destroy(hl);
}

static void test_arg_garbage(void **state)
{
  static const struct {
    const char *arg;
    int rc;
    const char *part;
  } cases[] = {
    {"a,,b", WEFT_EPARSE, "empty host"},
    {"", WEFT_EPARSE, "empty host"},
    {"a,", WEFT_EPARSE, "empty host"},
    {"a:0", WEFT_ERANGE, "slot count"},
    {"a:x", WEFT_EPARSE, "slot count"},
    {"a:", WEFT_EPARSE, "slot count"},
    {"a:-1", WEFT_EPARSE, "slot count"},
    {"a:100001", WEFT_ERANGE, "slot count"},
    {"a;b", WEFT_ENAME, "';'"},
    {"$(reboot)", WEFT_ENAME, "'$'"},
    {"-oProxyCommand=sh", WEFT_ENAME, "'-'"},
    {"[fe80::1", WEFT_ENAME, "IPv6"},
    {"[fe80::1]:2", WEFT_ENAME, "IPv6"},
    {"fe80::1", WEFT_ENAME, "IPv6"},
    {"::1", WEFT_ENAME, "IPv6"},
    {"a b", WEFT_ENAME, "space"},
    {"a_b", WEFT_ENAME, "'_'"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    weftx_hostlist *hl = new_list();
    int rc = weftx_hosts_parse_arg(hl, cases[i].arg, why, sizeof(why));
    if (rc != cases[i].rc || strncmp(why, "-H '", 4) != 0 || !strstr(why, cases[i].part))
      fail_msg("-H '%s': got %d '%s'", cases[i].arg, rc, why);
    weftx_hostlist_destroy(hl);
  }
}

static void test_hostfile(void **state)
{
  weftx_hostlist *hl = new_list();
  (void)state;
  assert_int_equal(load_text(hl, "# cluster\n"
                                 "\n"
                                 "node01 slots=10 max_slots=10\n"
                                 "user01@node02 slots=4   # trailing comment\n"
                                 "node03\n"
                                 "  10.0.0.4 count = 2 max-slots= 8\r\n"
                                 "node05 max_slots=6\n"
                                 "node01\n"
                                 "node06 cpu=3 slots_max=3 username=ops\n"
                                 "node07\n"
                                 "node07\n"
                                 "node08#no space before comment\n"),
                   0);
  assert_int_equal(weftx_hostlist_count(hl), 8);
  /* named again without a count: one more slot (Open MPI 4.1, measured) */
  assert_host(hl, 0, "node01", 11, 10);
  assert_int_equal(weftx_hostlist_host(hl, 0)->ompi_slots, 11);
  assert_host(hl, 1, "node02", 4, 0);
  assert_string_equal(weftx_hostlist_host(hl, 1)->user, "user01");
  assert_host(hl, 2, "node03", 0, 0);
  assert_false(weftx_hostlist_host(hl, 2)->slots_given);
  /* no slots=: one slot in Open MPI's view, not given (the host's cores count) */
  assert_int_equal(weftx_hostlist_host(hl, 2)->ompi_slots, 1);
  assert_false(weftx_hostlist_host(hl, 2)->ompi_given);
  assert_host(hl, 3, "10.0.0.4", 2, 8);
  assert_host(hl, 4, "node05", 6, 6);
  assert_true(weftx_hostlist_host(hl, 4)->slots_given);
  assert_host(hl, 5, "node06", 3, 3);
  assert_string_equal(weftx_hostlist_host(hl, 5)->user, "ops");
  assert_host(hl, 6, "node07", 2, 0);
  assert_int_equal(weftx_hostlist_host(hl, 6)->listed, 2);
  assert_int_equal(weftx_hostlist_host(hl, 6)->ompi_slots, 2);
  assert_true(weftx_hostlist_host(hl, 6)->ompi_given);
  assert_host(hl, 7, "node08", 0, 0);
  assert_non_null(strstr(weftx_hostlist_host(hl, 3)->source, ":6"));
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_HOSTFILE);
  weftx_hostlist_destroy(hl);
}

static void test_hostfile_garbage(void **state)
{
  char longline[WEFTX_HOSTFILE_LINE_MAX + 100];
  (void)state;
  expect_file_error("a slots=4\nb slots=x\n", WEFT_EPARSE, 2, "'slots=x' is not a number");
  expect_file_error("a slots=0\n", WEFT_ERANGE, 1, "at least one slot");
  expect_file_error("a slots=99999999999999999999\n", WEFT_ERANGE, 1, "too large");
  expect_file_error("\n\na sockets=2\n", WEFT_EPARSE, 3, "unknown keyword 'sockets'");
  expect_file_error("a slots\n", WEFT_EPARSE, 1, "not KEY=VALUE");
  expect_file_error("a slots=\n", WEFT_EPARSE, 1, "has no value");
  expect_file_error("a =4\n", WEFT_EPARSE, 1, "without a keyword");
  expect_file_error("a slots=2 slots=3\n", WEFT_EPARSE, 1, "given twice");
  expect_file_error("a slots=8 max_slots=4\n", WEFT_ERANGE, 1, "more than max_slots");
  expect_file_error("slots=4\n", WEFT_EPARSE, 1, "host name should come first");
  expect_file_error("ok\na;reboot slots=1\n", WEFT_ENAME, 2, "';'");
  expect_file_error("$(x)\n", WEFT_ENAME, 1, "'$'");
  expect_file_error("-oProxyCommand=x\n", WEFT_EPARSE, 1, "host name should come first");
  expect_file_error("-oProxyCommand\n", WEFT_ENAME, 1, "'-'");
  expect_file_error("+n1\n", WEFT_EPARSE, 1, "relative host");
  expect_file_error("^badnode\n", WEFT_EPARSE, 1, "excluding");
  expect_file_error("node1:4\n", WEFT_EPARSE, 1, "slots=N");
  expect_file_error("a@b username=c\n", WEFT_EPARSE, 1, "keep one");
  expect_file_error("u@a\nv@a\n", WEFT_ENAME, 2, "already listed with user 'u'");
  /* a slot count for a host already listed: mpirun 4.1 refuses it (measured) */
  expect_file_error("a slots=2\na slots=2\n", WEFT_EPARSE, 2,
                    "refuses a slot count on a host "
                    "listed twice");
  expect_file_error("a\nb\na slots=3\n", WEFT_EPARSE, 3, "already listed");
  expect_file_error("::1 slots=2\n", WEFT_ENAME, 1, "IPv6");
  expect_file_error("node_1\n", WEFT_ENAME, 1, "'_'");
  memset(longline, 'a', sizeof(longline) - 2);
  longline[sizeof(longline) - 2] = '\n';
  longline[sizeof(longline) - 1] = '\0';
  expect_file_error(longline, WEFT_EPARSE, 1, "line longer");
  expect_file_error("ok\nnod\xc3\xa9 slots=2\n", WEFT_ENAME, 2, "non-ASCII character (byte 0xc3");

  /* CR, CRLF and LF end lines alike: a CR-only file is not one line whose '#' hides
   * the rest, so the bad value on its third line is found there (issue 31) */
  expect_file_error("a slots=2\r# a comment\rb slots=abc\r", WEFT_EPARSE, 3, "'slots=abc'");
  expect_file_error("a slots=2\r\n# a comment\r\nb slots=abc\r\n", WEFT_EPARSE, 3, "'slots=abc'");
  expect_file_error("a slots=2\r\rb\n\r\nc slots=x", WEFT_EPARSE, 5, "'slots=x'");
  {
    weftx_hostlist *cr = new_list();
    assert_int_equal(load_text(cr, "a slots=2\rb slots=3 # two\r\nc\r"), 0);
    assert_int_equal(weftx_hostlist_count(cr), 3);
    assert_int_equal(weftx_hostlist_host(cr, 1)->slots, 3);
    weftx_hostlist_destroy(cr);
  }

  /* a NUL byte is a NUL byte, not a long line; /dev/zero ends at once */
  static const char nul[] = "a slots=1\nb\0c\n";
  FILE *f = fmemopen((void *)nul, sizeof(nul) - 1, "r");
  weftx_hostlist *z = new_list();
  assert_non_null(f);
  assert_int_equal(weftx_hostfile_read(z, f, "h", why, sizeof(why)), WEFT_EPARSE);
  assert_string_equal(why, "h:2: a NUL byte at column 2: this is not a text file; give a hostfile "
                           "of 'host slots=N' lines");
  fclose(f);
  assert_int_equal(weftx_hostfile_load(z, "/dev/zero", why, sizeof(why)), WEFT_EPARSE);
  assert_non_null(strstr(why, "/dev/zero:1: a NUL byte at column 1"));
  weftx_hostlist_destroy(z);

  /* No host at all, and no file. */
  weftx_hostlist *hl = new_list();
  assert_int_equal(load_text(hl, "# only a comment\n\n"), WEFT_EPARSE);
  assert_non_null(strstr(why, "no host in the file"));
  assert_int_equal(weftx_hostfile_load(hl, "/nonexistent/hosts", why, sizeof(why)), WEFT_ENOENT);
  assert_non_null(strstr(why, "/nonexistent/hosts: cannot open"));
  assert_int_equal(weftx_hostfile_load(hl, "/", why, sizeof(why)), WEFT_EIO);
  assert_non_null(strstr(why, "/: read error"));
  /* A user given on a later line joins a host named without one. */
  assert_int_equal(load_text(hl, "a\nroot@a\n"), 0);
  assert_string_equal(weftx_hostlist_host(hl, 0)->user, "root");
  weftx_hostlist_destroy(hl);
}

/* Expand \p list and compare with the space-separated \p want. */
static void expect_slurm(const char *list, const char *tasks, const char *want)
{
  weftx_hostlist *hl = new_list();
  char got[4096] = "";
  size_t used = 0;

  if (weftx_hosts_parse_slurm(hl, list, tasks, why, sizeof(why)) != 0)
    fail_msg("'%s' refused: %s", list, why);
  for (int i = 0; i < weftx_hostlist_count(hl); i++) {
    const weftx_host *h = weftx_hostlist_host(hl, i);
    if (h->slots)
      used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%s:%d", i ? " " : "", h->name,
                               h->slots);
    else
      used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%s", i ? " " : "", h->name);
  }
  if (strcmp(got, want) != 0)
    fail_msg("'%s' gave '%s', wanted '%s'", list, got, want);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_SLURM);
  weftx_hostlist_destroy(hl);
}

static void test_slurm(void **state)
{
  (void)state;
  expect_slurm("gpu[01-04,07]", NULL, "gpu01 gpu02 gpu03 gpu04 gpu07");
  expect_slurm("a[1-2]-b[3-4]", NULL, "a1-b3 a1-b4 a2-b3 a2-b4");
  expect_slurm("n1,n[3-5],x", NULL, "n1 n3 n4 n5 x");
  expect_slurm("gpu[08-10]", NULL, "gpu08 gpu09 gpu10");
  expect_slurm("gpu[8-10]", NULL, "gpu8 gpu9 gpu10");
  expect_slurm("single", NULL, "single");
  expect_slurm("r[1-2]n[001-002]x", NULL, "r1n001x r1n002x r2n001x r2n002x");
  expect_slurm("a[1-3],b[1]", "2(x3),1", "a1:2 a2:2 a3:2 b1:1");
  expect_slurm("a[1-3]", "4,2(x2)", "a1:4 a2:2 a3:2");
  expect_slurm("n[0-1].cluster.local", NULL, "n0.cluster.local n1.cluster.local");
}

static void test_slurm_garbage(void **state)
{
  static const char *bad[] = {"gpu[01-04", "gpu01-04]",   "a[[1-2]]",      "a[2-1]",  "a[]",
                              "a[x]",      "a[1-]",       "a[-1]",         "a,,b",    ",a",
                              "a[1-2],",   "a[0-999999]", "a[1234567890]", "a[1,,2]", NULL};
  int counts[8], n = 0;
  weftx_hostlist *hl;
  (void)state;
  for (int i = 0; bad[i]; i++) {
    hl = new_list();
    int rc = weftx_hosts_parse_slurm(hl, bad[i], NULL, why, sizeof(why));
    if (rc != WEFT_EPARSE || strncmp(why, "SLURM_JOB_NODELIST", 18) != 0)
      fail_msg("'%s': got %d '%s'", bad[i], rc, why);
    weftx_hostlist_destroy(hl);
  }
  hl = new_list();
  assert_int_equal(weftx_hosts_parse_slurm(hl, "a;b[1-2]", NULL, why, sizeof(why)), WEFT_ENAME);
  weftx_hostlist_destroy(hl);
  hl = new_list();
  assert_int_equal(weftx_hosts_parse_slurm(hl, "a[1-3]", "2(x2)", why, sizeof(why)), WEFT_EPARSE);
  assert_non_null(strstr(why, "2 counts for 3 hosts"));
  weftx_hostlist_destroy(hl);
  assert_int_equal(weftx_slurm_tasks_per_node("2(x3),1", counts, 8, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 4);
  assert_int_equal(counts[0], 2);
  assert_int_equal(counts[3], 1);
  assert_int_equal(weftx_slurm_tasks_per_node("2(x9)", counts, 8, &n, why, sizeof(why)),
                   WEFT_ERANGE);
  static const char *badtasks[] = {"", "x", "2(3)", "2(x)", "2(x3", "0", "2,", "2(x3)x", NULL};
  for (int i = 0; badtasks[i]; i++)
    if (weftx_slurm_tasks_per_node(badtasks[i], counts, 8, &n, why, sizeof(why)) != WEFT_EPARSE)
      fail_msg("'%s' accepted", badtasks[i]);
}

static void test_slurm_per_node(void **state)
{
  int counts[8], n = 0;
  (void)state;
  assert_int_equal(
    weftx_slurm_per_node("SLURM_JOB_CPUS_PER_NODE", "208(x2),104", counts, 8, &n, why, sizeof(why)),
    0);
  assert_int_equal(n, 3);
  assert_int_equal(counts[0], 208);
  assert_int_equal(counts[2], 104);
  assert_int_equal(
    weftx_slurm_per_node("SLURM_JOB_CPUS_PER_NODE", "2(x)", counts, 8, &n, why, sizeof(why)),
    WEFT_EPARSE);
  assert_string_equal(why, "SLURM_JOB_CPUS_PER_NODE '2(x)': expected counts like '2(x3),1'");
}

/* Parse \p s as GPU indices; compare with the space-separated \p want. */
static void expect_indices(const char *s, const char *want)
{
  int idx[WEFTX_SLURM_GPUS_MAX], n = -1;
  char got[1024] = "";
  size_t used = 0;

  if (weftx_slurm_gpu_indices("SLURM_STEP_GPUS", s, idx, WEFTX_SLURM_GPUS_MAX, &n, why,
                              sizeof(why)) != 0)
    fail_msg("'%s' refused: %s", s, why);
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%d", i ? " " : "", idx[i]);
  if (strcmp(got, want) != 0)
    fail_msg("'%s' gave '%s', wanted '%s'", s, got, want);
}

static void test_slurm_gpu_indices(void **state)
{
  static const char *bad[] = {",",   "0,",    ",0",  "0,,1", "x",        "0-",  "-1",      "1-0",
                              "0,0", "0-2,1", "256", "0 1",  "GPU-5e7b", "0;1", "1234567", NULL};
  int idx[4], n = 0;
  (void)state;
  expect_indices("0,1", "0 1");
  expect_indices("3", "3");
  expect_indices("", "");
  expect_indices("0-1,4", "0 1 4");
  expect_indices("4,0", "4 0");
  expect_indices("255", "255");
  for (int i = 0; bad[i]; i++) {
    int rc = weftx_slurm_gpu_indices("SLURM_JOB_GPUS", bad[i], idx, 4, &n, why, sizeof(why));
    if (rc != WEFT_EPARSE || strncmp(why, "SLURM_JOB_GPUS '", 16) != 0)
      fail_msg("'%s': got %d '%s'", bad[i], rc, why);
  }
  assert_int_equal(weftx_slurm_gpu_indices("X", "0,1", idx, 4, &n, why, sizeof(why)), 0);
  assert_int_equal(weftx_slurm_gpu_indices("X", "0,0", idx, 4, &n, why, sizeof(why)), WEFT_EPARSE);
  assert_string_equal(why, "X '0,0': GPU 0 is named twice");
  assert_int_equal(weftx_slurm_gpu_indices("X", "0-4", idx, 4, &n, why, sizeof(why)), WEFT_ERANGE);
  assert_string_equal(why, "X '0-4': more than 4 GPUs");
  assert_int_equal(weftx_slurm_gpu_indices("X", "3-1", idx, 4, &n, why, sizeof(why)), WEFT_EPARSE);
  assert_string_equal(why, "X '3-1': range 3-1 goes backwards");
}

static void test_slurm_gpus_count(void **state)
{
  static const char *bad[] = {"",   "x",  "h100:",   ":2",      "2,",      "h100:2:1",
                              "2x", "-1", "1234567", "a100:1,", "h 100:2", NULL};
  int c = -1;
  (void)state;
  assert_int_equal(weftx_slurm_gpus_count("SLURM_GPUS_PER_NODE", "2", &c, why, sizeof(why)), 0);
  assert_int_equal(c, 2);
  assert_int_equal(weftx_slurm_gpus_count("SLURM_GPUS_PER_NODE", "h100:8", &c, why, sizeof(why)),
                   0);
  assert_int_equal(c, 8);
  assert_int_equal(weftx_slurm_gpus_count("SLURM_GPUS", "a100:1,v100:2", &c, why, sizeof(why)), 0);
  assert_int_equal(c, 3);
  assert_int_equal(weftx_slurm_gpus_count("SLURM_GPUS", "0", &c, why, sizeof(why)), 0);
  assert_int_equal(c, 0);
  for (int i = 0; bad[i]; i++) {
    int rc = weftx_slurm_gpus_count("SLURM_GPUS_PER_NODE", bad[i], &c, why, sizeof(why));
    if (rc != WEFT_EPARSE || strncmp(why, "SLURM_GPUS_PER_NODE '", 21) != 0)
      fail_msg("'%s': got %d '%s'", bad[i], rc, why);
  }
}

/* Parse GRES \p s; compare count, type and "i i i" indices ("-" for none given). */
static void expect_gres(const char *s, int count, const char *type, const char *idx)
{
  weftx_slurm_gres g;
  char got[1024] = "-";
  size_t used = 0;

  if (weftx_slurm_gres_gpus("GRES", s, &g, why, sizeof(why)) != 0)
    fail_msg("'%s' refused: %s", s, why);
  for (int i = 0; i < g.nidx; i++)
    used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%d", i ? " " : "", g.idx[i]);
  if (g.nidx == 0)
    got[0] = '\0';
  if (g.count != count || strcmp(g.type, type) != 0 || strcmp(got, idx) != 0)
    fail_msg("'%s' gave %d '%s' '%s', wanted %d '%s' '%s'", s, g.count, g.type, got, count, type,
             idx);
}

static void test_slurm_gres(void **state)
{
  static const char *bad[] = {
    "gpu:",   ":2",     "gpu:h100:x", "gpu:2(IDX:0-2)", "gpu:2(IDX:0-1", "gpu:2(X:0)",
    "gpu:2,", "gpu:2 ", "gpu:a:b:c",  "gpu:2(IDX:0,0)", "gpu:2(IDX:)x",  "gpu:2(IDX:)",
    "gpu;2",  NULL};
  weftx_slurm_gres g;
  (void)state;
  expect_gres("gpu:2", 2, "", "-");
  expect_gres("gres:gpu:2", 2, "", "-");
  expect_gres("gres/gpu:2", 2, "", "-");
  expect_gres("gpu", 1, "", "-");
  expect_gres("gpu:h100", 1, "h100", "-");
  expect_gres("gpu:h100:8", 8, "h100", "-");
  expect_gres("gpu:2(IDX:0-1)", 2, "", "0 1");
  expect_gres("gpu:2(IDX:3-4)", 2, "", "3 4");
  expect_gres("gpu:h100:3(IDX:0,2-3)", 3, "h100", "0 2 3");
  expect_gres("gpu(IDX:5)", 1, "", "5");
  expect_gres("gpu:8(S:0-1)", 8, "", "-");
  expect_gres("gpu:2,nic:1", 2, "", "-");
  expect_gres("nic:1,gpu:a100-80gb:4", 4, "a100-80gb", "-");
  expect_gres("gpu:a100:1,gpu:v100:2", 3, "", "-");
  expect_gres("gpu:h100:1,gpu:h100:2", 3, "h100", "-");
  expect_gres("mps:100", 0, "", "-");
  expect_gres("(null)", 0, "", "-");
  expect_gres("", 0, "", "-");
  expect_gres("gpu:0", 0, "", "-");
  for (int i = 0; bad[i]; i++) {
    int rc = weftx_slurm_gres_gpus("TresPerNode", bad[i], &g, why, sizeof(why));
    if (rc != WEFT_EPARSE || strncmp(why, "TresPerNode '", 13) != 0)
      fail_msg("'%s': got %d '%s'", bad[i], rc, why);
  }
  assert_int_equal(weftx_slurm_gres_gpus("GRES", "gpu:2(IDX:0-2)", &g, why, sizeof(why)),
                   WEFT_EPARSE);
  assert_string_equal(why, "GRES 'gpu:2(IDX:0-2)': 2 GPUs but 3 indices");
}

/* "scontrol show job -d" as Slurm 22.05 prints it on the virtual cluster: one detail
 * line per group of nodes with the same allocation. */
static void test_slurm_job_gpus(void **state)
{
  static const char text[] = "JobId=12 JobName=interactive\n"
                             "   NodeList=vnode[0-2]\n"
                             "   NumNodes=3 NumCPUs=6 NumTasks=6 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
                             "   JOB_GRES=gpu:5\n"
                             "     Nodes=vnode[0-1] CPU_IDs=2-3 Mem=0 GRES=gpu:2(IDX:3-4)\n"
                             "     Nodes=vnode2 CPU_IDs=0-1 Mem=0 GRES=gpu:1(IDX:6)\n"
                             "     Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=\n"
                             "     Nodes=gpu08 CPU_IDs=0 Mem=0\n"
                             "     Nodes=gpu09 CPU_IDs=0 Mem=0 GRES=gpu:2\n"
                             "   TresPerNode=gres:gpu:2\n";
  weftx_slurm_node_gpus *v = NULL;
  int n = -1;
  (void)state;

  assert_int_equal(weftx_slurm_job_gpus(text, &v, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 6);
  assert_string_equal(v[0].name, "vnode0");
  assert_int_equal(v[0].count, 2);
  assert_string_equal(v[0].idx, "3-4");
  assert_string_equal(v[1].name, "vnode1");
  assert_string_equal(v[1].idx, "3-4");
  assert_string_equal(v[2].name, "vnode2");
  assert_string_equal(v[2].idx, "6");
  assert_int_equal(v[3].count, 0);
  assert_string_equal(v[3].idx, "");
  assert_int_equal(v[4].count, 0);
  assert_string_equal(v[4].idx, "");
  assert_int_equal(v[5].count, 2);
  assert_null(v[5].idx);
  weftx_slurm_job_gpus_free(v, n);
  /* no detail lines: no nodes; several index runs */
  assert_int_equal(weftx_slurm_job_gpus("JobId=3\n", &v, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 0);
  weftx_slurm_job_gpus_free(v, n);
  assert_int_equal(
    weftx_slurm_job_gpus("Nodes=a GRES=gpu:h100:4(IDX:0-1,4,6)", &v, &n, why, sizeof(why)), 0);
  assert_int_equal(n, 1);
  assert_string_equal(v[0].idx, "0-1,4,6");
  weftx_slurm_job_gpus_free(v, n);
  /* what does not parse says which line and why */
  assert_int_equal(weftx_slurm_job_gpus("x\n  Nodes=a[1 GRES=gpu:1\n", &v, &n, why, sizeof(why)),
                   WEFT_EPARSE);
  assert_null(v);
  assert_int_equal(n, 0);
  assert_non_null(strstr(why, "scontrol show job -d, line 2: "));
  assert_int_equal(weftx_slurm_job_gpus("Nodes=a GRES=gpu:2(IDX:0)", &v, &n, why, sizeof(why)),
                   WEFT_EPARSE);
  assert_string_equal(why,
                      "scontrol show job -d, line 1: GRES 'gpu:2(IDX:0)': 2 GPUs but 1 indices");
  assert_int_equal(weftx_slurm_job_gpus(NULL, &v, &n, why, sizeof(why)), WEFT_EINVAL);
}

static void test_gather(void **state)
{
  const char *args[] = {"b:2,c"};
  weftx_hosts_input in = {NULL, 0, NULL, NULL, NULL, "me"};
  weftx_hostlist *hl = NULL;
  const char *path;
  (void)state;

  /* Nothing given: the local host alone. */
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_LOCAL);
  assert_host(hl, 0, "me", 0, 0);
  weftx_hostlist_destroy(hl);
  /* Slurm beats the local host. */
  in.slurm_nodelist = "s[1-2]";
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_SLURM);
  assert_int_equal(weftx_hostlist_count(hl), 2);
  weftx_hostlist_destroy(hl);
  /* The hostfile beats Slurm. */
  path = temp_file("a slots=4\nb slots=8 max_slots=8\nc\n");
  in.hostfile = path;
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_HOSTFILE);
  assert_int_equal(weftx_hostlist_count(hl), 3);
  weftx_hostlist_destroy(hl);
  /* -H beats everything; with a hostfile too, mpirun 4.1 takes the -H hosts and counts
   * and does not read the hostfile (measured: -H a with "a slots=4" is one slot) */
  in.host_args = args;
  in.nhost_args = 1;
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_origin(hl), WEFTX_HOSTS_CMDLINE);
  assert_int_equal(weftx_hostlist_count(hl), 2);
  assert_host(hl, 0, "b", 2, 0);
  assert_host(hl, 1, "c", 0, 0);
  assert_int_equal(weftx_hostlist_host(hl, 1)->ompi_slots, 1);
  weftx_hostlist_destroy(hl);
  args[0] = "a,zz";
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_count(hl), 2);
  assert_int_equal(weftx_hostlist_host(hl, 0)->ompi_slots, 1);
  weftx_hostlist_destroy(hl);
  unlink(path);
  /* Errors come through. */
  in.nhost_args = 0;
  in.hostfile = NULL;
  in.slurm_nodelist = "bad[";
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), WEFT_EPARSE);
  in.slurm_nodelist = NULL;
  in.local_host = NULL;
  assert_int_equal(weftx_hosts_gather(&in, &hl, why, sizeof(why)), 0);
  assert_int_equal(weftx_hostlist_count(hl), 1);
  weftx_hostlist_destroy(hl);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_arg),
    cmocka_unit_test(test_arg_garbage),
    cmocka_unit_test(test_hostfile),
    cmocka_unit_test(test_hostfile_garbage),
    cmocka_unit_test(test_slurm),
    cmocka_unit_test(test_slurm_garbage),
    cmocka_unit_test(test_slurm_per_node),
    cmocka_unit_test(test_slurm_gpu_indices),
    cmocka_unit_test(test_slurm_gpus_count),
    cmocka_unit_test(test_slurm_gres),
    cmocka_unit_test(test_slurm_job_gpus),
    cmocka_unit_test(test_gather),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
