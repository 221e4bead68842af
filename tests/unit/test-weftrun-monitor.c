/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor's pure parts: /proc/PID/stat and counter files parsed
 * (a command name with spaces and parentheses, damaged lines refused), rates
 * and CPU use from two readings, the SAMPLE message written and read back
 * (absent fields stay absent, negative ones are refused), the Prometheus
 * text (measured figures only, label values escaped), the timeline read back
 * and drawn (one line per rank in each chart), the straggler rule
 * (three low samples in a row below half the median; an idle job has none;
 * named once), and --monitor[=SECONDS] on weftrun's command line.
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

#include "sample.h"
#include "monitor/monitor.h"

/* a real line of proc(5)'s format: 52 fields; utime 14 = 250, stime 15 = 50,
 * threads 20 = 7, rss 24 = 1000 pages; the name holds ") (" and spaces */
static const char stat_line[] =
  "4242 (my ) (prog x) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 7 0 12345 "
  "123456789 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

static void test_stat(void **state)
{
  wt_proc_stat st;
  (void)state;
  assert_int_equal(wt_sample_parse_stat(stat_line, &st), 0);
  assert_int_equal(st.state, 'R');
  assert_int_equal(st.ticks, 300);
  assert_int_equal(st.threads, 7);
  assert_int_equal(st.rss_pages, 1000);
  assert_int_equal(st.exiting, 0);
  /* in exit: PF_EXITING (0x4) in the flags (field 9), memory gone, state still R */
  assert_int_equal(
    wt_sample_parse_stat("4242 (prog) R 1 4242 4242 0 -1 4194308 100 0 0 0 250 50 0 0 "
                         "20 0 1 0 12345 0 0 0\n",
                         &st),
    0);
  assert_int_equal(st.exiting, 1);
  assert_int_equal(st.rss_pages, 0);
  assert_int_equal(
    wt_sample_parse_stat("4242 (prog) Z 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 "
                         "20 0 1 0 12345 0 0 0\n",
                         &st),
    0);
  assert_int_equal(st.exiting, 1);
  /* damaged: no ')', cut short, a word where a number goes, empty */
  assert_int_equal(wt_sample_parse_stat("4242 prog R 1 2 3", &st), -1);
  assert_int_equal(wt_sample_parse_stat("4242 (prog) R 1 4242 4242 0 -1 4194304 100 0", &st), -1);
  assert_int_equal(wt_sample_parse_stat("4242 (prog) R 1 4242 x 0 -1 4194304 100 0 0 0 250 50 0 0 "
                                        "20 0 7 0 1 2 3\n",
                                        &st),
                   -1);
  assert_int_equal(wt_sample_parse_stat("", &st), -1);
  assert_int_equal(wt_sample_parse_stat(NULL, &st), -1);
}

static void test_counter_rates(void **state)
{
  int64_t v;
  (void)state;
  assert_int_equal(wt_sample_parse_counter("123456789012\n", &v), 0);
  assert_true(v == 123456789012LL);
  assert_int_equal(wt_sample_parse_counter("12x\n", &v), -1);
  assert_int_equal(wt_sample_parse_counter("-5\n", &v), -1);
  assert_int_equal(wt_sample_parse_counter("", &v), -1);
  assert_int_equal(wt_sample_parse_counter("1 2\n", &v), -1);
  /* 5,000 bytes in 500 ms: 10,000 per second; a reset counter or no reading: unknown */
  assert_int_equal(wt_sample_rate(1000, 6000, 500), 10000);
  assert_int_equal(wt_sample_rate(6000, 1000, 500), -1);
  assert_int_equal(wt_sample_rate(-1, 1000, 500), -1);
  assert_int_equal(wt_sample_rate(1000, 2000, 0), -1);
  /* 150 ticks of 100 Hz (1.5 s of CPU) in 1 s: 1.5 cores; 50 in 2 s: a quarter */
  assert_int_equal(wt_sample_cpu_pm(100, 250, 100, 1000), 1500);
  assert_int_equal(wt_sample_cpu_pm(0, 50, 100, 2000), 250);
  assert_int_equal(wt_sample_cpu_pm(250, 100, 100, 1000), -1);
  assert_int_equal(wt_sample_cpu_pm(0, 1, 0, 1000), -1);
}

static void decode(const wt_ctl_out *o, wt_ctl_msg *m)
{
  char why[200];
  assert_false(o->full);
  assert_int_equal(wt_ctl_frame(o->buf, o->len, why, sizeof(why)), (long)o->len);
  assert_int_equal(wt_ctl_decode(o->buf, o->len, m, why, sizeof(why)), 0);
}

static void test_message(void **state)
{
  wt_sample s, r;
  wt_ctl_out o;
  wt_ctl_msg m;
  (void)state;
  wt_sample_init(&s);
  s.seq = 3;
  s.span_ms = 1000;
  s.cpu_pm = 987;
  s.cpu_ms = 2950;
  s.rss = 123456789;
  s.threads = 4;
  snprintf(s.nic, sizeof(s.nic), "eth0");
  s.nic_tx = 1000;
  s.nic_rx = 0;
  s.gpu_util = 93;
  s.gpu_mem = 1LL << 34;
  s.gpu_power = 312500;
  s.gpu_temp = 71;
  snprintf(s.why, sizeof(s.why), "why not");
  wt_sample_put(&o, &s);
  assert_true(o.len < 300); /* small: thousands of agents each second */
  decode(&o, &m);
  assert_string_equal(wt_ctl_type_name(m.type), "SAMPLE");
  assert_int_equal(wt_sample_get(&m, &r), 0);
  assert_int_equal(r.seq, 3);
  assert_int_equal(r.span_ms, 1000);
  assert_int_equal(r.cpu_pm, 987);
  assert_int_equal(r.cpu_ms, 2950);
  assert_int_equal(r.rss, 123456789);
  assert_int_equal(r.threads, 4);
  assert_string_equal(r.nic, "eth0");
  assert_int_equal(r.nic_tx, 1000);
  assert_int_equal(r.nic_rx, 0);
  assert_int_equal(r.gpu_util, 93);
  assert_true(r.gpu_mem == 1LL << 34);
  assert_int_equal(r.gpu_power, 312500);
  assert_int_equal(r.gpu_temp, 71);
  assert_string_equal(r.why, "why not");

  /* what was not measured is not sent, and reads back as -1 */
  wt_sample_init(&s);
  s.seq = 1;
  wt_sample_put(&o, &s);
  decode(&o, &m);
  assert_int_equal(m.nfields, 1);
  assert_int_equal(wt_sample_get(&m, &r), 0);
  assert_int_equal(r.cpu_pm, -1);
  assert_int_equal(r.rss, -1);
  assert_int_equal(r.nic_tx, -1);
  assert_int_equal(r.gpu_util, -1);
  assert_string_equal(r.nic, "");
  assert_string_equal(r.why, "");

  /* a negative figure from a damaged or hostile agent is no figure */
  wt_ctl_begin(&o, WT_CTL_SAMPLE);
  wt_ctl_put_int(&o, WT_CTL_T_SEQ, 2);
  wt_ctl_put_int(&o, WT_CTL_T_CPU_PM, -50);
  wt_ctl_put_str(&o, WT_CTL_T_RSS, "lots");
  decode(&o, &m);
  assert_int_equal(wt_sample_get(&m, &r), 0);
  assert_int_equal(r.cpu_pm, -1);
  assert_int_equal(r.rss, -1);
  /* no SEQ, or another message: not a sample */
  wt_ctl_begin(&o, WT_CTL_SAMPLE);
  wt_ctl_put_int(&o, WT_CTL_T_CPU_PM, 5);
  decode(&o, &m);
  assert_int_equal(wt_sample_get(&m, &r), -1);
  wt_ctl_begin(&o, WT_CTL_HEARTBEAT);
  wt_ctl_put_int(&o, WT_CTL_T_SEQ, 2);
  decode(&o, &m);
  assert_int_equal(wt_sample_get(&m, &r), -1);
}

static void test_prom(void **state)
{
  wt_sample s[2];
  wt_sample_who who[2] = {{"vm:12", 3, "a\"b\\c\nd", NULL}, {"vm:12", 5, "h", "2"}};
  char *text = NULL;
  size_t len = 0;
  (void)state;
  wt_sample_init(&s[0]);
  wt_sample_init(&s[1]);
  s[0].seq = s[1].seq = 1;
  s[0].cpu_ms = 1500;
  s[0].rss = 4096;
  s[1].cpu_ms = 250;
  s[1].gpu_util = 5;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  wt_sample_prom(f, s, who, 2);
  assert_int_equal(fclose(f), 0);
  /* a family's HELP and TYPE once, then every rank's line of it; label values escaped */
  assert_non_null(strstr(text, "# TYPE weft_rank_cpu_seconds_total counter\n"
                               "weft_rank_cpu_seconds_total{job=\"vm:12\",rank=\"3\","
                               "host=\"a\\\"b\\\\c\\nd\"} 1.5\n"
                               "weft_rank_cpu_seconds_total{job=\"vm:12\",rank=\"5\","
                               "host=\"h\"} 0.25\n# HELP "));
  const char *once = strstr(text, "# TYPE weft_rank_cpu_seconds_total");
  assert_null(strstr(once + 1, "# TYPE weft_rank_cpu_seconds_total"));
  /* measured figures only: rank 5 has no memory line, nobody a threads family */
  assert_non_null(strstr(text, "# TYPE weft_rank_resident_memory_bytes gauge\n"
                               "weft_rank_resident_memory_bytes{job=\"vm:12\",rank=\"3\","));
  assert_null(strstr(text, "weft_rank_resident_memory_bytes{job=\"vm:12\",rank=\"5\""));
  assert_null(strstr(text, "threads"));
  /* the gpu label on the GPU figures only */
  assert_non_null(strstr(text, "weft_rank_gpu_utilization_ratio{job=\"vm:12\",rank=\"5\","
                               "host=\"h\",gpu=\"2\"} 0.05\n"));
  assert_null(strstr(text, "weft_rank_gpu_utilization_ratio{job=\"vm:12\",rank=\"3\""));
  free(text);
  /* no rank: nothing */
  text = NULL;
  f = open_memstream(&text, &len);
  assert_non_null(f);
  wt_sample_prom(f, s, who, 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(len, 0);
  free(text);
}

static void test_picture(void **state)
{
  wr_point pt,
    a[3] = {{0.5, 0.9, 1 << 20, 0, -1}, {1.0, -1, -1, 0, -1}, {1.5, 1.0, 2 << 20, 0, -1}};
  wr_series v[2] = {{a, 3, 3, "vm-a"}, {NULL, 0, 0, ""}};
  char host[64], *text = NULL;
  size_t len = 0;
  (void)state;
  assert_int_equal(wr_timeline_parse("{\"t\":1.250,\"rank\":7,\"host\":\"vm-b\",\"seq\":3,"
                                     "\"cpu\":0.125,\"rss\":4096}\n",
                                     &pt, host, sizeof(host)),
                   0);
  assert_true(pt.t == 1.25 && pt.rank == 7 && pt.cpu == 0.125 && pt.rss == 4096 && pt.gpu == -1);
  assert_string_equal(host, "vm-b");
  assert_int_equal(
    wr_timeline_parse("{\"t\":1,\"rank\":1,\"gpu_mem\":7,\"gpu\":0.35}", &pt, host, sizeof(host)),
    0);
  assert_true(pt.gpu == 0.35);
  /* absent figures are -1; what is not a record is refused */
  assert_int_equal(wr_timeline_parse("{\"t\":2,\"rank\":0}", &pt, host, sizeof(host)), 0);
  assert_true(pt.cpu == -1 && pt.rss == -1);
  assert_string_equal(host, "");
  assert_int_equal(wr_timeline_parse("not json", &pt, host, sizeof(host)), -1);
  assert_int_equal(wr_timeline_parse("{\"t\":1,\"rank\":-3}", &pt, host, sizeof(host)), -1);
  /* a restart's records say their attempt; its line is a gap, not a record */
  assert_int_equal(
    wr_timeline_parse("{\"t\":9,\"rank\":1,\"attempt\":2,\"seq\":1}", &pt, host, sizeof(host)), 0);
  assert_int_equal(pt.attempt, 2);
  wr_gap g;
  const char *gl = "{\"t\":12.500,\"restart\":1,\"down_since\":10.250,\"np\":4,"
                   "\"cause\":\"vnode2 lost (75)\"}";
  assert_int_equal(wr_timeline_parse(gl, &pt, host, sizeof(host)), -1);
  assert_int_equal(wr_timeline_gap(gl, &g), 0);
  assert_true(g.from == 10.25 && g.to == 12.5 && g.attempt == 1);
  assert_string_equal(g.cause, "vnode2 lost (75)");
  assert_int_equal(wr_timeline_gap("{\"t\":2,\"rank\":0}", &g), -1);
  /* one line per rank with points in each chart, its title naming it; a rank without
   * points draws none; the caption escaped */
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  wr_picture_draw(f, v, 2, NULL, 0, "job <x>", NULL, NULL);
  assert_int_equal(fclose(f), 0);
  assert_non_null(strstr(text, "<p>job &lt;x&gt;</p>"));
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "<polyline")); p++)
    lines++;
  assert_int_equal(lines, 2);
  assert_non_null(strstr(text, "<title>rank 0 (vm-a)</title>"));
  assert_null(strstr(text, "rank 1 ("));
  /* one picture, as wide as the page (its viewBox scales); no GPU chart without GPU
   * figures; no straggler named, none marked */
  assert_null(strstr(strstr(text, "<svg") + 1, "<svg"));
  assert_non_null(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" "
                               "viewBox=\"0 0 900 "));
  assert_null(strstr(text, "GPU utilisation"));
  assert_null(strstr(text, "Straggler"));
  assert_null(strstr(text, "stroke-width=\"3\""));
  assert_null(strstr(text, "restart 1"));
  free(text);

  /* across a restart: the gap shaded in each chart with what was lost, rank 0's line
   * broken there (two processes), the axis to the gap's end at least */
  wr_point c[4] = {{0.5, 0.9, 1 << 20, 0, -1, 0},
                   {1.0, 0.8, 1 << 20, 0, -1, 0},
                   {3.0, 0.7, 1 << 20, 0, -1, 1},
                   {3.5, 0.7, 1 << 20, 0, -1, 1}};
  wr_series u[1] = {{c, 4, 4, "vm-a"}};
  wr_gap gap = {1.2, 2.8, 1, "vnode2 lost (75)"};
  f = open_memstream(&text, &len);
  assert_non_null(f);
  wr_picture_draw(f, u, 1, &gap, 1, "job", NULL, NULL);
  assert_int_equal(fclose(f), 0);
  lines = 0;
  for (const char *p = text; (p = strstr(p, "<polyline")); p++)
    lines++;
  assert_int_equal(lines, 4); /* 2 per chart: CPU and memory */
  assert_non_null(
    strstr(text, "<title>restart 1: vnode2 lost (75); the job was down 1.6 s</title>"));
  free(text);

  /* four ranks with GPU figures, rank 2 at a quarter of the others: a GPU chart; the
   * picture marks the ranks the live line named, and only those: nothing when it named
   * none (a rank low on average was never low for WR_STRAGGLE_SAMPLES samples in a row),
   * rank 2 drawn thick and named under the legend (inside the picture) when it named
   * rank 2 for its CPU, rank 1 as well when it named rank 1 for its GPU */
  wr_point b[4][2];
  wr_series w[4];
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 2; i++)
      b[r][i] = (wr_point){i, r == 2 ? 0.2 : 0.8, 1 << 20, r, r == 2 ? 0.1 : 0.9};
    w[r] = (wr_series){b[r], 2, 2, "vm"};
  }
  f = open_memstream(&text, &len);
  assert_non_null(f);
  wr_picture_draw(f, w, 4, NULL, 0, "job", NULL, NULL);
  assert_int_equal(fclose(f), 0);
  assert_non_null(strstr(text, "GPU utilisation, %"));
  assert_null(strstr(text, "Straggler"));
  assert_null(strstr(text, "stroke-width=\"3\""));
  free(text);
  char named_cpu[4] = {0, 0, 1, 0}, named_gpu[4] = {0, 1, 0, 0};
  f = open_memstream(&text, &len);
  assert_non_null(f);
  wr_picture_draw(f, w, 4, NULL, 0, "job", named_cpu, named_gpu);
  assert_int_equal(fclose(f), 0);
  lines = 0;
  for (const char *p = text; (p = strstr(p, "<polyline")); p++)
    lines++;
  assert_int_equal(lines, 12);
  assert_non_null(strstr(text, "stroke-width=\"3\" stroke=\"#2ca02c\""));
  assert_non_null(strstr(text, "rank 2 (vm) CPU 20% GPU 10%"));
  assert_non_null(strstr(text, "Straggler: rank 2 (vm), its CPU below half its peers' median for "
                               "3 samples in a row, 20% on average (the thick line)"));
  assert_non_null(strstr(text, "Straggler: rank 1 (vm), its GPU below half its peers' median for "
                               "3 samples in a row, 90% on average"));
  assert_null(strstr(text, "Straggler: rank 2 (vm), its GPU"));
  assert_true(strstr(text, "Straggler") < strstr(text, "</svg>"));
  /* rank 2 thick in the CPU chart only, rank 1 in the GPU chart only */
  const char *gpu_chart = strstr(text, "GPU utilisation"), *mem_chart = strstr(text, "Resident");
  const char *t2 = strstr(text, "stroke-width=\"3\" stroke=\"#2ca02c\"");
  const char *t1 = strstr(text, "stroke-width=\"3\" stroke=\"#ff7f0e\"");
  assert_true(t2 && t2 < gpu_chart && !strstr(gpu_chart, "stroke-width=\"3\" stroke=\"#2ca02c\""));
  assert_true(t1 && t1 > gpu_chart && t1 < mem_chart);
  assert_null(strstr(mem_chart, "stroke-width=\"3\""));
  free(text);
}

/* The live line's NIC rates: left out on one host; across hosts each host's NIC once. */
static void test_nic_rates(void **state)
{
  wr_host h[2];
  wr_plan_host ph[2];
  weftx_plan_rank pr[4];
  wr_rank r[4];
  wr_plan p;
  wr_sup s;
  int scratch[4];
  double tx, rx;
  (void)state;
  memset(h, 0, sizeof(h));
  memset(ph, 0, sizeof(ph));
  memset(pr, 0, sizeof(pr));
  memset(r, 0, sizeof(r));
  memset(&p, 0, sizeof(p));
  memset(&s, 0, sizeof(s));
  h[0].name = "vm-a";
  h[1].name = "vm-b";
  ph[0].host = &h[0];
  ph[1].host = &h[1];
  p.hosts = ph;
  p.nhosts = 2;
  p.ranks = pr;
  p.np = 4;
  s.p = &p;
  s.np = 4;
  s.r = r;
  for (int k = 0; k < 4; k++) {
    r[k].state = WR_RANK_RUNNING;
    r[k].nsamples = 1;
    snprintf(r[k].last.nic, sizeof(r[k].last.nic), "eth0");
    r[k].last.nic_tx = 1000;
    r[k].last.nic_rx = 500;
  }
  /* four ranks on vm-a: no rate (the NIC's traffic is not the job's) */
  assert_int_equal(wr_mon_nic_rates(&s, scratch, &tx, &rx), 0);
  /* two and two on vm-a and vm-b: each host's eth0 once, not once per rank */
  pr[2].host = pr[3].host = 1;
  assert_int_equal(wr_mon_nic_rates(&s, scratch, &tx, &rx), 1);
  assert_true(tx == 2000 && rx == 1000);
  /* a host with two NICs in use: both */
  snprintf(r[1].last.nic, sizeof(r[1].last.nic), "eth1");
  assert_int_equal(wr_mon_nic_rates(&s, scratch, &tx, &rx), 1);
  assert_true(tx == 3000 && rx == 1500);
  /* the ranks of vm-b ended: one host left, no rate */
  r[2].state = r[3].state = WR_RANK_EXITED;
  assert_int_equal(wr_mon_nic_rates(&s, scratch, &tx, &rx), 0);
}

static void test_median(void **state)
{
  int64_t v[] = {900, -1, 100, 1000, 950}, scratch[5];
  (void)state;
  assert_int_equal(wr_median(v, 5, scratch), 925);
  assert_int_equal(wr_median(v, 3, scratch), 500);
  assert_int_equal(wr_median(v, 2, scratch), -1); /* one value: no peers */
}

static void test_straggler(void **state)
{
  wr_straggle st;
  (void)state;
  assert_int_equal(wr_straggle_init(&st, 3), 0);
  /* rank 2 at 10% while the median is 95%: the third low sample names it, once */
  assert_int_equal(wr_straggle_step(&st, 2, 100, 950), 0);
  assert_int_equal(wr_straggle_step(&st, 2, 100, 950), 0);
  assert_int_equal(wr_straggle_step(&st, 2, 100, 950), 1);
  assert_int_equal(wr_straggle_step(&st, 2, 100, 950), 0);
  /* rank 1: two low samples, then one at 60% of the median, then two low: not yet */
  assert_int_equal(wr_straggle_step(&st, 1, 100, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, 1, 100, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, 1, 600, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, 1, 100, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, 1, 100, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, 1, 100, 1000), 1);
  /* an idle job (median under a fifth of a core), an unknown median or use: no verdict */
  for (int i = 0; i < 5; i++) {
    assert_int_equal(wr_straggle_step(&st, 0, 0, 150), 0);
    assert_int_equal(wr_straggle_step(&st, 0, 0, -1), 0);
    assert_int_equal(wr_straggle_step(&st, 0, -1, 1000), 0);
  }
  /* ranks outside the job are ignored */
  assert_int_equal(wr_straggle_step(&st, 3, 0, 1000), 0);
  assert_int_equal(wr_straggle_step(&st, -1, 0, 1000), 0);
  wr_straggle_free(&st);
}

static int parse(wr_opts *o, const char *a, const char *b)
{
  /* static: the options point into it after the call */
  static char *argv[5];
  argv[0] = (char *)"weftrun";
  argv[1] = (char *)a;
  argv[2] = argv[3] = argv[4] = NULL;
  int argc = 2;
  if (b)
    argv[argc++] = (char *)b;
  argv[argc++] = (char *)"prog";
  wr_opts_init(o);
  return wr_opts_parse(o, argc, argv);
}

static void test_options(void **state)
{
  wr_opts o;
  (void)state;
  assert_int_equal(parse(&o, "--monitor", NULL), 0);
  assert_true(o.monitor == WR_MONITOR_DEFAULT_S);
  assert_string_equal(o.program[0], "prog"); /* the optional value is never the next word */
  assert_int_equal(parse(&o, "--monitor=0.5", NULL), 0);
  assert_true(o.monitor == 0.5);
  assert_int_equal(parse(&o, "--monitor=0", NULL), WR_EXIT_USAGE);
  assert_int_equal(parse(&o, "--monitor=5x", NULL), WR_EXIT_USAGE);
  assert_int_equal(parse(&o, "--monitor=", NULL), WR_EXIT_USAGE);
  assert_int_equal(parse(&o, "--monitor=3601", NULL), WR_EXIT_USAGE);
  /* --monitor-out alone turns sampling on */
  assert_int_equal(parse(&o, "--monitor-out", "/tmp/x"), 0);
  assert_true(o.monitor == WR_MONITOR_DEFAULT_S);
  assert_string_equal(o.monitor_out, "/tmp/x");
  /* -q is weftrun's too, and still goes to mpirun */
  assert_int_equal(parse(&o, "-q", NULL), 0);
  assert_int_equal(o.quiet, 1);
  assert_int_equal(o.npass, 1);
  assert_int_equal(parse(&o, "-v", NULL), 0);
  assert_int_equal(o.quiet, 0);
  assert_true(o.monitor == 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stat),      cmocka_unit_test(test_counter_rates),
    cmocka_unit_test(test_message),   cmocka_unit_test(test_prom),
    cmocka_unit_test(test_picture),   cmocka_unit_test(test_median),
    cmocka_unit_test(test_nic_rates), cmocka_unit_test(test_straggler),
    cmocka_unit_test(test_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
