/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel and the supervisor's rules, without a job: frames
 * written and read back, every kind of damaged frame refused (and 100,000
 * random ones read without a crash), and weftrun's verdicts from scripted
 * agent messages: a failed rank, a forged-looking EXITED that was stopped, a
 * weft deadline blaming the absent rank, a host gone silent, a host whose
 * connections closed, an agent killed alone, --timeout, mpirun's end after a
 * rank exited 0 unfinalized, mpirun exiting 0 with ranks that never ran.
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

#include "ctl.h"
#include "hmac.h"
#include "supervise/supervise.h"

static void test_roundtrip(void **state)
{
  wt_ctl_out o;
  wt_ctl_msg m;
  char why[200], s[64];
  int64_t v;
  (void)state;
  wt_ctl_begin(&o, WT_CTL_HELLO);
  wt_ctl_put_str(&o, WT_CTL_T_PROOF, "00112233445566778899aabbccddeeff");
  wt_ctl_put_int(&o, WT_CTL_T_RANK, 12345);
  wt_ctl_put_int(&o, WT_CTL_T_PID, -7);
  wt_ctl_put_int(&o, 200, 1); /* a field of a newer weft: skipped by the reader */
  assert_false(o.full);
  assert_int_equal(wt_ctl_frame(o.buf, o.len - 1, why, sizeof(why)), 0);
  assert_int_equal(wt_ctl_frame(o.buf, o.len, why, sizeof(why)), (long)o.len);
  assert_int_equal(wt_ctl_decode(o.buf, o.len, &m, why, sizeof(why)), 0);
  assert_int_equal(m.type, WT_CTL_HELLO);
  assert_int_equal(wt_ctl_get_int(&m, WT_CTL_T_RANK, &v), 0);
  assert_int_equal(v, 12345);
  assert_int_equal(wt_ctl_int_or(&m, WT_CTL_T_PID, 0), -7);
  assert_int_equal(wt_ctl_int_or(&m, WT_CTL_T_CODE, 99), 99);
  assert_int_equal(wt_ctl_get_str(&m, WT_CTL_T_PROOF, s, sizeof(s)), 0);
  assert_string_equal(s, "00112233445566778899aabbccddeeff");
  /* a text read into a small buffer is cut, a number is not a text */
  assert_int_equal(wt_ctl_get_str(&m, WT_CTL_T_PROOF, s, 5), 0);
  assert_string_equal(s, "0011");
  assert_int_equal(wt_ctl_get_int(&m, WT_CTL_T_PROOF, &v), -1);
  assert_string_equal(wt_ctl_type_name(WT_CTL_EXITED), "EXITED");
  assert_string_equal(wt_ctl_type_name(99), "?");
}

static void unhex(const char *h, unsigned char *out, size_t *n)
{
  *n = 0;
  for (; h[0] && h[1]; h += 2) {
    unsigned v = 0;
    assert_int_equal(sscanf(h, "%2x", &v), 1);
    out[(*n)++] = (unsigned char)v;
  }
}

/* HMAC-SHA256 against RFC 4231's test cases 1-7 (case 5's truncated output
 * compared as far as it goes), and SHA-256 of FIPS 180-4's examples. */
static void test_hmac(void **state)
{
  static const struct {
    const char *key, *data, *mac;
  } v[] = {
    {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
    {"4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
     "dddddddddddd",
     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
    {"0102030405060708090a0b0c0d0e0f10111213141516171819",
     "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
     "cdcdcdcdcdcd",
     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
    {"0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c", "546573742057697468205472756e636174696f6e",
     "a3b6167473100ee06e0c796c2955552b"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368"
     "204b6579204669727374",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a"
     "65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865"
     "206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062"
     "792074686520484d414320616c676f726974686d2e",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  unsigned char key[200], data[200], mac[WT_SHA256_LEN];
  char hex[2 * WT_SHA256_LEN + 1];
  size_t kn, dn;
  (void)state;
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    unhex(v[i].key, key, &kn);
    unhex(v[i].data, data, &dn);
    wt_hmac_sha256(key, kn, data, dn, mac);
    wt_hex(mac, sizeof(mac), hex);
    assert_memory_equal(hex, v[i].mac, strlen(v[i].mac));
  }
  /* SHA-256: "abc", the two-block message, and a million 'a's fed in odd pieces */
  wt_sha256 h;
  wt_sha256_init(&h);
  wt_sha256_update(&h, "abc", 3);
  wt_sha256_final(&h, mac);
  wt_hex(mac, sizeof(mac), hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  wt_sha256_init(&h);
  wt_sha256_update(&h, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56);
  wt_sha256_final(&h, mac);
  wt_hex(mac, sizeof(mac), hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  memset(data, 'a', sizeof(data));
  wt_sha256_init(&h);
  for (size_t left = 1000000; left > 0;) {
    size_t n = left < 137 ? left : 137;
    wt_sha256_update(&h, data, n);
    left -= n;
  }
  wt_sha256_final(&h, mac);
  wt_hex(mac, sizeof(mac), hex);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* the proof: each of secret, challenge, rank and host changes it */
  char p[WT_CTL_PROOF_LEN + 1], q[WT_CTL_PROOF_LEN + 1];
  const char *sec = "00112233445566778899aabbccddeeff", *ch = "ffeeddccbbaa99887766554433221100";
  wt_ctl_proof(sec, ch, 3, "vm-a", p);
  assert_int_equal(strlen(p), WT_CTL_PROOF_LEN);
  wt_ctl_proof(sec, ch, 3, "vm-a", q);
  assert_string_equal(p, q);
  wt_ctl_proof("10112233445566778899aabbccddeeff", ch, 3, "vm-a", q);
  assert_string_not_equal(p, q);
  wt_ctl_proof(sec, "efeeddccbbaa99887766554433221100", 3, "vm-a", q);
  assert_string_not_equal(p, q);
  wt_ctl_proof(sec, ch, 4, "vm-a", q);
  assert_string_not_equal(p, q);
  wt_ctl_proof(sec, ch, 3, "vm-b", q);
  assert_string_not_equal(p, q);
  assert_true(wt_same_bytes("abc", "abc", 3));
  assert_false(wt_same_bytes("abc", "abd", 3));
}

static void test_bounds(void **state)
{
  static wt_ctl_out o;
  static char big[WT_CTL_MAX_TEXT * 8];
  wt_ctl_msg m;
  char why[200];
  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  wt_ctl_begin(&o, WT_CTL_STACK);
  for (int i = 0; i < 6; i++)
    wt_ctl_put_str(&o, WT_CTL_T_TEXT, big);
  assert_true(o.full); /* what did not fit was left out */
  assert_true(o.len <= WT_CTL_HEADER + WT_CTL_MAX_PAYLOAD);
  assert_int_equal(wt_ctl_decode(o.buf, o.len, &m, why, sizeof(why)), 0);
  /* damaged frames */
  unsigned char b[64];
  wt_ctl_begin(&o, WT_CTL_PONG);
  wt_ctl_put_int(&o, WT_CTL_T_SEQ, 1);
  memcpy(b, o.buf, o.len);
  b[0] = 'G';
  assert_int_equal(wt_ctl_frame(b, 3, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "not a weft control message"));
  memcpy(b, o.buf, o.len);
  b[2] = 9;
  assert_int_equal(wt_ctl_frame(b, o.len, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "version 9"));
  memcpy(b, o.buf, o.len);
  b[4] = 0x7f; /* a length over the bound */
  assert_int_equal(wt_ctl_frame(b, o.len, why, sizeof(why)), -1);
  memcpy(b, o.buf, o.len);
  b[WT_CTL_HEADER + 2] = 200; /* a field longer than the frame */
  assert_int_equal(wt_ctl_decode(b, o.len, &m, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "are left"));
  /* random bytes: refused or read, never past their end */
  unsigned seed = 12345;
  for (int i = 0; i < 100000; i++) {
    unsigned char r[40];
    size_t n = 1 + (size_t)(rand_r(&seed) % sizeof(r));
    for (size_t k = 0; k < n; k++)
      r[k] = (unsigned char)rand_r(&seed);
    if (i % 2) { /* mostly plausible headers */
      r[0] = 'w';
      if (n > 1)
        r[1] = 'f';
      if (n > 2)
        r[2] = WT_CTL_VERSION;
      if (n > 7) {
        r[4] = r[5] = 0;
        r[6] = 0;
        r[7] = (unsigned char)(n - WT_CTL_HEADER);
      }
    }
    long f = wt_ctl_frame(r, n, why, sizeof(why));
    if (f > 0)
      wt_ctl_decode(r, (size_t)f, &m, why, sizeof(why));
  }
}

/* ---- the supervisor ---- */

static wr_host hosts[3];
static wr_plan_host phosts[3];
static weftx_plan_rank pranks[6];
static wr_plan plan;
static wr_opts opts;

static wr_sup *sup(double timeout)
{
  static const char *const names[] = {"vnode0", "vnode1", "vnode2"};
  memset(&plan, 0, sizeof(plan));
  for (int h = 0; h < 3; h++) {
    memset(&hosts[h], 0, sizeof(hosts[h]));
    hosts[h].name = names[h];
    phosts[h].host = &hosts[h];
    phosts[h].count = 2;
  }
  for (int r = 0; r < 6; r++) {
    memset(&pranks[r], 0, sizeof(pranks[r]));
    pranks[r].rank = r;
    pranks[r].host = r / 2;
  }
  plan.np = 6;
  plan.nhosts = 3;
  plan.hosts = phosts;
  plan.ranks = pranks;
  wr_opts_init(&opts);
  opts.timeout = (long)timeout;
  opts.host_timeout = 3;
  wr_sup *s = wr_sup_new(&plan, &opts, 0);
  assert_non_null(s);
  char why[200];
  for (int r = 0; r < 6; r++)
    assert_int_equal(
      wr_sup_hello(s, r, 100 + r, plan.hosts[r / 2].host->name, 0.1, why, sizeof(why)), 0);
  assert_int_equal(wr_sup_hello(s, 3, 1, "x", 0.1, why, sizeof(why)), -1);
  assert_non_null(strstr(why, "has an agent already"));
  assert_int_equal(wr_sup_hello(s, 6, 1, "x", 0.1, why, sizeof(why)), -1);
  return s;
}

/* Feed one message built by the caller. */
static void feed(wr_sup *s, int rank, wt_ctl_out *o, double t)
{
  wt_ctl_msg m;
  char why[100];
  assert_int_equal(wt_ctl_decode(o->buf, o->len, &m, why, sizeof(why)), 0);
  wr_sup_msg(s, rank, &m, t);
}

static void started_all(wr_sup *s, double t)
{
  for (int r = 0; r < 6; r++) {
    wt_ctl_out o;
    wt_ctl_begin(&o, WT_CTL_STARTED);
    wt_ctl_put_int(&o, WT_CTL_T_PID, 1000 + r);
    feed(s, r, &o, t);
  }
}

static void heartbeat(wr_sup *s, int rank, int op, const char *group, double t)
{
  wt_ctl_out o;
  wt_ctl_begin(&o, WT_CTL_HEARTBEAT);
  wt_ctl_put_int(&o, WT_CTL_T_WSTATE, op == WEFTX_OP_INIT ? WEFTX_PAGE_INIT : WEFTX_PAGE_RUNNING);
  wt_ctl_put_int(&o, WT_CTL_T_OP, op);
  if (group) {
    wt_ctl_put_str(&o, WT_CTL_T_GROUP, group);
    wt_ctl_put_int(&o, WT_CTL_T_GROUP_FIRST, 0);
    wt_ctl_put_int(&o, WT_CTL_T_GROUP_SIZE, 6);
  }
  wt_ctl_put_int(&o, WT_CTL_T_IN_MS, 1500);
  feed(s, rank, &o, t);
}

static void exited(wr_sup *s, int rank, int code, int sig, int stopped, int deadline, double t)
{
  wt_ctl_out o;
  wt_ctl_begin(&o, WT_CTL_EXITED);
  wt_ctl_put_int(&o, WT_CTL_T_CODE, code);
  wt_ctl_put_int(&o, WT_CTL_T_SIGNAL, sig);
  wt_ctl_put_int(&o, WT_CTL_T_STOPPED, stopped);
  if (deadline) {
    wt_ctl_put_int(&o, WT_CTL_T_WSTATE, WEFTX_PAGE_DEADLINE);
    wt_ctl_put_int(&o, WT_CTL_T_OP, WEFTX_OP_ALLREDUCE);
    wt_ctl_put_str(&o, WT_CTL_T_GROUP, "world");
    wt_ctl_put_int(&o, WT_CTL_T_GROUP_FIRST, 0);
    wt_ctl_put_str(&o, WT_CTL_T_WHY, "allreduce on group world timed out after 30 s");
    wt_ctl_put_str(&o, WT_CTL_T_MEMBERS, "0-5");
  }
  feed(s, rank, &o, t);
}

static char *summary(wr_sup *s, int *code)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  *code = wr_summary(s, &opts, f);
  fclose(f);
  return buf;
}

static void test_rank_failure(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  exited(s, 4, 0, 15, WT_CTL_STOP_ENGINE, 0, 1.0); /* stopped by mpirun: not a failure */
  assert_int_equal(wr_sup_tick(s, 1.0), 0);
  assert_int_equal(s->end, WR_END_NONE);
  exited(s, 2, 3, 0, WT_CTL_STOP_NONE, 0, 1.1);
  exited(s, 5, 9, 0, WT_CTL_STOP_NONE, 0, 1.2); /* second: not the one named */
  assert_int_equal(s->end, WR_END_RANK);
  assert_int_equal(wr_sup_tick(s, 1.2), 0); /* mpirun's teardown first */
  assert_int_equal(wr_sup_tick(s, 2.2), WR_ACT_END);
  char *out = summary(s, &code);
  assert_int_equal(code, 3);
  assert_string_equal(out, "weftrun: job failed: rank 2 host vnode1 gpu none: exited with status 3 "
                           "(exit 3)\n"
                           "weftrun:   then rank 5 host vnode2 gpu none: exited with status 9 "
                           "(after rank 2: a consequence, most likely)\n");
  free(out);
  /* one that ends as the first did met the same fault: not its consequence */
  exited(s, 1, 3, 0, WT_CTL_STOP_NONE, 0, 1.3);
  out = summary(s, &code);
  assert_non_null(strstr(out, "weftrun:   then rank 1 host vnode0 gpu none: exited with status 3 "
                              "as well\n"));
  free(out);
  wr_sup_free(s);
}

static void test_deadline_blames_absent(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  for (int r = 0; r < 6; r++)
    if (r != 4)
      heartbeat(s, r, WEFTX_OP_ALLREDUCE, "world", 30.0);
  heartbeat(s, 4, WEFTX_OP_NONE, NULL, 30.0);
  exited(s, 0, 124, 0, WT_CTL_STOP_NONE, 1, 30.5);
  assert_int_equal(s->end, WR_END_DEADLINE);
  char *out = summary(s, &code);
  assert_int_equal(code, 124);
  assert_non_null(strstr(out, "weftrun: job failed: rank 0 host vnode0 gpu none: allreduce on "
                              "group world timed out after 30 s (exit 124)\n"));
  assert_non_null(
    strstr(out, "weftrun:   absent: rank 4 host vnode2 gpu none: pid 1004, in no weft call"));
  assert_null(strstr(out, "rank 1 host"));
  free(out);
  wr_sup_free(s);
}

static void test_host_silent(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  for (double t = 0.5; t < 6; t += 0.5) {
    for (int r = 0; r < 6; r++)
      if (r / 2 != 1 || t < 2)
        heartbeat(s, r, WEFTX_OP_NONE, NULL, t);
    wr_sup_tick(s, t);
  }
  assert_int_equal(s->end, WR_END_LOST);
  assert_int_equal(s->end_host, 1);
  assert_true(s->end_at > 4.4 && s->end_at < 5.1); /* 3 s after the last word */
  char *out = summary(s, &code);
  assert_int_equal(code, WR_EXIT_HOSTLOST);
  assert_non_null(strstr(out, "weftrun: job failed: host vnode1 lost (ranks 2-3): no word from its "
                              "agents for longer than --host-timeout"));
  free(out);
  wr_sup_free(s);
}

static void test_host_closed_and_agent(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  wr_sup_gone(s, 4, 0, 1.0);
  wr_sup_gone(s, 5, 0, 1.05);
  wr_sup_tick(s, 1.1);
  assert_int_equal(s->end, WR_END_NONE); /* settling */
  wr_sup_tick(s, 1.4);
  assert_int_equal(s->end, WR_END_LOST);
  char *out = summary(s, &code);
  assert_non_null(strstr(out, "host vnode2 lost (ranks 4-5): its agents' connections closed"));
  free(out);
  wr_sup_free(s);
  /* one agent of a host that lives on; connections that failed because the machine
   * stopped acknowledging (keepalive) */
  static const struct {
    int first, last, unanswered;
    const char *says;
  } cases[] = {
    {1, 1, 0, "rank 1 host vnode0 gpu none: its agent (weft-rank, pid 101) ended without a word"},
    {2, 3, 1,
     "host vnode1 lost (ranks 2-3): the machine acknowledged nothing for 5 s (machine "
     "down or network cut)"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    s = sup(0);
    started_all(s, 0.2);
    for (int r = cases[i].first; r <= cases[i].last; r++)
      wr_sup_gone(s, r, cases[i].unanswered, 1.0);
    wr_sup_tick(s, 1.4);
    out = summary(s, &code);
    assert_int_equal(code, WR_EXIT_HOSTLOST);
    assert_non_null(strstr(out, cases[i].says));
    free(out);
    wr_sup_free(s);
  }
}

/* An agent whose host's daemon died under it (the parent death signal) says so; the
 * host is lost, whatever mpirun's end says after; after another verdict it is not. */
static void test_daemon_died(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  exited(s, 2, 143, 0, WT_CTL_STOP_DAEMON, 0, 1.0);
  assert_int_equal(s->end, WR_END_LOST);
  assert_int_equal(s->end_host, 1);
  exited(s, 0, 143, 0, WT_CTL_STOP_ENGINE, 0, 1.5);
  wr_sup_engine_exit(s, 205, 2.0);
  wr_sup_tick(s, 4.0);
  char *out = summary(s, &code);
  assert_int_equal(code, WR_EXIT_HOSTLOST);
  assert_non_null(strstr(out, "weftrun: job failed: host vnode1 lost (ranks 2-3): mpirun's daemon "
                              "(orted) there died (killed? out of memory? machine going down?), "
                              "and its agents stopped its ranks (exit 75)\n"));
  free(out);
  wr_sup_free(s);

  s = sup(0);
  started_all(s, 0.2);
  exited(s, 4, 3, 0, WT_CTL_STOP_NONE, 0, 1.0);
  exited(s, 2, 143, 0, WT_CTL_STOP_DAEMON, 0, 1.1);
  assert_int_equal(s->end, WR_END_RANK);
  out = summary(s, &code);
  assert_int_equal(code, 3);
  assert_null(strstr(out, "daemon"));
  free(out);
  wr_sup_free(s);
}

/* A rank whose program was stopped (SIGSTOP) past the lost bound: its agent says so, the
 * rank is lost (75) and named as stopped, not slow; the ranks that needed SIGKILL after
 * the grace are named on a line of their own, in ranges (issue 31). */
static void test_rank_stopped(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  wt_ctl_out o;
  wt_ctl_begin(&o, WT_CTL_EXITED);
  wt_ctl_put_int(&o, WT_CTL_T_CODE, 143);
  wt_ctl_put_int(&o, WT_CTL_T_SIGNAL, 15);
  wt_ctl_put_int(&o, WT_CTL_T_STOPPED, WT_CTL_STOP_STOPPED);
  wt_ctl_put_int(&o, WT_CTL_T_STOPPED_MS, 3100);
  feed(s, 3, &o, 3.4);
  assert_int_equal(s->end, WR_END_LOST);
  assert_int_equal(s->lost_how, WR_LOST_STOPPED);
  assert_int_equal(s->end_rank, 3);
  assert_int_equal(wr_sup_tick(s, 3.4) & WR_ACT_END, WR_ACT_END); /* at once */
  for (int r = 0; r < 6; r++) {
    if (r == 3)
      continue;
    wt_ctl_begin(&o, WT_CTL_EXITED);
    wt_ctl_put_int(&o, WT_CTL_T_CODE, 137);
    wt_ctl_put_int(&o, WT_CTL_T_SIGNAL, 9);
    wt_ctl_put_int(&o, WT_CTL_T_STOPPED, WT_CTL_STOP_END);
    if (r != 2)
      wt_ctl_put_int(&o, WT_CTL_T_KILLED, 1);
    feed(s, r, &o, 3.6);
  }
  char *out = summary(s, &code);
  assert_int_equal(code, WR_EXIT_HOSTLOST);
  assert_non_null(strstr(out, "weftrun: job failed: rank 3 host vnode1 gpu none: stopped (SIGSTOP "
                              "or Ctrl-Z), not slow: its program did not run for 3.1 s, longer "
                              "than --host-timeout 3 s, so the rank is lost (exit 75)\n"));
  assert_non_null(strstr(out, "weftrun:   ranks 0-1,4-5 ignored SIGTERM: killed (SIGKILL) after "
                              "the grace period\n"));
  free(out);
  wr_sup_free(s);
}

/* Without --host-timeout an agent may be starved for 6 s (an overloaded machine: 5.7 s
 * was seen) without its host being lost; 30 s of silence is. */
static void test_host_timeout_default(void **state)
{
  char why[200];
  (void)state;
  wr_sup_free(sup(0)); /* the plan */
  wr_opts_init(&opts);
  wr_sup *s = wr_sup_new(&plan, &opts, 0);
  assert_non_null(s);
  for (int r = 0; r < 6; r++)
    assert_int_equal(
      wr_sup_hello(s, r, 100 + r, plan.hosts[r / 2].host->name, 0.1, why, sizeof(why)), 0);
  started_all(s, 0.2);
  for (double t = 0.5; t < 40 && !s->end; t += 0.5) {
    for (int r = 0; r < 6; r++)
      if (r / 2 != 1 || t < 2 || (t > 8 && t < 9)) /* host 1: 6 s starved, then gone */
        heartbeat(s, r, WEFTX_OP_NONE, NULL, t);
    wr_sup_tick(s, t);
    if (t < 38)
      assert_int_equal(s->end, WR_END_NONE);
  }
  assert_int_equal(s->end, WR_END_LOST);
  assert_int_equal(s->end_host, 1);
  assert_true(s->end_at > 38.4 && s->end_at < 39.1); /* 30 s after its last word */
  wr_sup_free(s);
}

/* --launch-timeout: ranks whose agents have not come that long after the last one
 * that did are given up on (their daemon never started, or cannot reach mpirun);
 * a launch that keeps making progress is never cut; 0 waits, as mpirun does */
static void test_launch_timeout(void **state)
{
  char why[200];
  int code;
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    wr_sup_free(sup(0)); /* the plan */
    wr_opts_init(&opts);
    if (mode == 2)
      opts.launch_timeout = -1; /* --launch-timeout 0 */
    wr_sup *s = wr_sup_new(&plan, &opts, 0);
    assert_non_null(s);
    /* hosts 0 and 2 come, host 1 never; in mode 1 they come slowly, 50 s apart */
    const int order[4] = {0, 1, 4, 5};
    double last = 0;
    for (int i = 0; i < 4; i++) {
      last = mode == 1 ? 0.1 + 50.0 * i : 0.1 + 0.5 * i;
      assert_int_equal(wr_sup_hello(s, order[i], 100 + i, "x", last, why, sizeof(why)), 0);
    }
    for (double t = 0.5; t < 300 && !s->end; t += 0.5) {
      for (int i = 0; i < 4; i++)
        heartbeat(s, order[i], WEFTX_OP_NONE, NULL, t);
      wr_sup_tick(s, t);
      if (t < last + 59.9)
        assert_int_equal(s->end, WR_END_NONE);
      assert_true(wr_sup_next(s, t) <= t + 1.0);
    }
    if (mode == 2) {
      assert_int_equal(s->end, WR_END_NONE);
      wr_sup_free(s);
      continue;
    }
    assert_int_equal(s->end, WR_END_LOST);
    assert_int_equal(s->end_host, 1);
    assert_int_equal(s->end_rank, 2);
    assert_true(s->end_at > last + 59.9 && s->end_at < last + 60.6);
    char *out = summary(s, &code);
    assert_int_equal(code, WR_EXIT_HOSTLOST);
    assert_non_null(strstr(out, "weftrun: job failed: host vnode1 lost (ranks 2-3): its ranks had "
                                "not started 60 s after the last rank that did (--launch-timeout): "
                                "mpirun could not start its daemon there, or the daemon cannot "
                                "reach mpirun (exit 75)\n"));
    assert_non_null(strstr(out, "its agent never connected"));
    free(out);
    wr_sup_free(s);
  }
  /* two hosts missing: the first named, the other counted */
  wr_sup_free(sup(0));
  wr_opts_init(&opts);
  wr_sup *s = wr_sup_new(&plan, &opts, 0);
  assert_non_null(s);
  assert_int_equal(wr_sup_hello(s, 0, 100, "x", 0.1, why, sizeof(why)), 0);
  assert_int_equal(wr_sup_hello(s, 1, 101, "x", 0.2, why, sizeof(why)), 0);
  for (double t = 0.5; t < 60.2; t += 0.5) {
    heartbeat(s, 0, WEFTX_OP_NONE, NULL, t);
    heartbeat(s, 1, WEFTX_OP_NONE, NULL, t);
    wr_sup_tick(s, t);
    assert_int_equal(s->end, WR_END_NONE);
  }
  wr_sup_tick(s, 60.2);
  assert_int_equal(s->end, WR_END_LOST);
  for (int r = 2; r < 6; r++)
    assert_true(s->r[r].lost);
  char *out = summary(s, &code);
  assert_non_null(strstr(out, "weftrun: job failed: host vnode1 lost (ranks 2-3) and 1 more host: "
                              "its ranks had not started 60 s after the last rank that did"));
  free(out);
  wr_sup_free(s);
}

static void test_timeout_names_running(void **state)
{
  int code;
  (void)state;
  wr_sup *s = sup(10);
  started_all(s, 0.2);
  exited(s, 0, 0, 0, WT_CTL_STOP_NONE, 0, 2.0);
  heartbeat(s, 3, WEFTX_OP_BARRIER, "dp", 9.5);
  wr_sup_tick(s, 9.9);
  assert_int_equal(s->end, WR_END_NONE);
  assert_int_equal(wr_sup_tick(s, 10.0), WR_ACT_END);
  char *out = summary(s, &code);
  assert_int_equal(code, 124);
  assert_non_null(strstr(out, "weftrun: job ended: --timeout 10 s expired; 5 of 6 ranks were still "
                              "running (exit 124)\n"));
  assert_non_null(strstr(out, "rank 3 host vnode1 gpu none: pid 1003, in barrier on group dp (0 B) "
                              "for 2.0 s"));
  assert_null(strstr(out, "rank 0 host"));
  free(out);
  wr_sup_free(s);
}

static void test_engine_end(void **state)
{
  int code;
  (void)state;
  /* a rank exits 0 unfinalized, mpirun stops the others and fails */
  wr_sup *s = sup(0);
  started_all(s, 0.2);
  exited(s, 2, 0, 0, WT_CTL_STOP_NONE, 0, 1.0);
  for (int r = 0; r < 6; r++)
    if (r != 2)
      exited(s, r, 143, 15, WT_CTL_STOP_ENGINE, 0, 1.5);
  wr_sup_engine_exit(s, 1, 1.6);
  wr_sup_tick(s, 1.6);
  char *out = summary(s, &code);
  assert_int_equal(code, 1);
  assert_non_null(strstr(out, "rank 2 host vnode1 gpu none: exited with status 0 while the other "
                              "ranks ran, without finalizing"));
  free(out);
  wr_sup_free(s);
  /* mpirun exits 0 having run nothing (WEFT_MPIRUN=/bin/true) */
  s = wr_sup_new(&plan, &opts, 0);
  wr_sup_engine_exit(s, 0, 0.1);
  wr_sup_tick(s, 0.1);
  out = summary(s, &code);
  assert_int_equal(code, WR_EXIT_ENGINE);
  assert_non_null(strstr(out, "mpirun exited 0, but 6 of 6 ranks never ran"));
  free(out);
  wr_sup_free(s);
  /* mpirun killed (exit 255 is not a signal) */
  for (int k = 0; k < 2; k++) {
    s = sup(0);
    started_all(s, 0.2);
    wr_sup_engine_exit(s, k ? 255 : -9, 1.0);
    wr_sup_tick(s, 2.6);
    out = summary(s, &code);
    assert_int_equal(code, WR_EXIT_ENGINE);
    assert_non_null(
      strstr(out, k ? "weftrun: mpirun failed with status 255 before any rank reported"
                    : "weftrun: mpirun was killed by signal 9 (exit 70)"));
    assert_non_null(strstr(out, "weftrun:   rank 5 host vnode2 gpu none: pid 1005"));
    free(out);
    wr_sup_free(s);
  }
  /* a host dies and mpirun, seeing its daemon go, ends first: the host's agents'
   * connections close just after, before the judgement, and name it; the others were
   * stopped by mpirun */
  for (int k = 0; k < 2; k++) {
    s = sup(0);
    started_all(s, 0.2);
    for (int r = 0; r < 6; r++)
      if (r / 2 != 1)
        exited(s, r, 143, 15, WT_CTL_STOP_ENGINE, 0, 1.0);
    wr_sup_engine_exit(s, 205, 1.1);
    wr_sup_tick(s, 1.1);
    wr_sup_gone(s, 2, 0, k ? 1.2 : 1.05); /* after mpirun's end, or before it */
    wr_sup_gone(s, 3, 0, 1.25);
    wr_sup_tick(s, 1.3); /* every rank done, but settling */
    assert_int_equal(s->end, WR_END_NONE);
    assert_false(wr_sup_settled(s));
    assert_true(wr_sup_next(s, 1.3) <= (k ? 1.5 : 1.35) + 1e-9);
    wr_sup_tick(s, k ? 1.5 : 1.35);
    assert_true(wr_sup_settled(s));
    out = summary(s, &code);
    assert_int_equal(code, WR_EXIT_HOSTLOST);
    assert_non_null(strstr(out, "host vnode1 lost (ranks 2-3): its agents' connections closed"));
    free(out);
    wr_sup_free(s);
  }
  /* the same, but the dead host's connections stay open (its link went down before its
   * agents' closes left it): the judgement waits for the kernel to find them unanswered,
   * and names the host; a host whose agents still speak is not waited for */
  for (int k = 0; k < 2; k++) {
    s = sup(0);
    started_all(s, 0.2);
    for (int r = 0; r < 6; r++)
      if (r / 2 != 1 && (!k || r / 2 != 2))
        exited(s, r, 143, 15, WT_CTL_STOP_ENGINE, 0, 1.0);
    wr_sup_engine_exit(s, 205, 1.1);
    /* the dead host's last heartbeat read just after mpirun's end: not a word after it */
    heartbeat(s, 2, WEFTX_OP_BARRIER, "dp", 1.15);
    if (k) {
      heartbeat(s, 2, WEFTX_OP_BARRIER, "dp", 2.3);
      heartbeat(s, 4, WEFTX_OP_BARRIER, "dp", 2.3);
    }
    for (double t = 1.1; t < 2.8; t += 0.8) /* ticks at 1.1, 1.9, 2.7 */
      wr_sup_tick(s, t);
    if (k) { /* every host spoke: mpirun's failure, as before */
      assert_true(wr_sup_settled(s) || s->end == WR_END_ENGINE);
      assert_int_equal(s->end, WR_END_ENGINE);
      wr_sup_free(s);
      continue;
    }
    assert_int_equal(s->end, WR_END_NONE);
    assert_true(wr_sup_next(s, 2.7) <= 1.1 + WT_CTL_UNANSWERED_S + 3.0 + 1e-9);
    for (double t = 3.5; t < 6.4; t += 1.0)
      wr_sup_tick(s, t);
    assert_int_equal(s->end, WR_END_NONE);
    wr_sup_gone(s, 2, 1, 6.5);
    wr_sup_gone(s, 3, 1, 6.5);
    wr_sup_tick(s, 6.9);
    assert_true(wr_sup_settled(s));
    out = summary(s, &code);
    assert_int_equal(code, WR_EXIT_HOSTLOST);
    assert_non_null(strstr(out, "host vnode1 lost (ranks 2-3): the machine acknowledged nothing"));
    free(out);
    wr_sup_free(s);
  }
  /* mpirun failed with nothing else said, but said it lost its daemon on vnode1: the
   * host is lost */
  s = sup(0);
  started_all(s, 0.2);
  for (int r = 0; r < 6; r++)
    exited(s, r, 143, 15, WT_CTL_STOP_ENGINE, 0, 1.0);
  wr_sup_engine_exit(s, 205, 1.1);
  wr_sup_tick(s, 2.7);
  assert_int_equal(s->end, WR_END_ENGINE);
  wr_sup_engine_lost(s, 1, 2.8);
  out = summary(s, &code);
  assert_int_equal(code, WR_EXIT_HOSTLOST);
  assert_non_null(strstr(out, "weftrun: job failed: host vnode1 lost (ranks 2-3): mpirun lost "
                              "its daemon there (machine down or network cut)"));
  free(out);
  wr_sup_free(s);
  /* all well */
  s = sup(0);
  started_all(s, 0.2);
  for (int r = 0; r < 6; r++)
    exited(s, r, 0, 0, WT_CTL_STOP_NONE, 0, 1.0);
  wr_sup_engine_exit(s, 0, 1.1);
  wr_sup_tick(s, 1.1);
  assert_true(wr_sup_settled(s));
  out = summary(s, &code);
  assert_int_equal(code, 0);
  assert_string_equal(out, "");
  free(out);
  wr_sup_free(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_roundtrip),
    cmocka_unit_test(test_hmac),
    cmocka_unit_test(test_bounds),
    cmocka_unit_test(test_rank_failure),
    cmocka_unit_test(test_deadline_blames_absent),
    cmocka_unit_test(test_host_silent),
    cmocka_unit_test(test_host_closed_and_agent),
    cmocka_unit_test(test_daemon_died),
    cmocka_unit_test(test_rank_stopped),
    cmocka_unit_test(test_host_timeout_default),
    cmocka_unit_test(test_launch_timeout),
    cmocka_unit_test(test_timeout_names_running),
    cmocka_unit_test(test_engine_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
