/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pure parts of a rank's sample (sample.h): /proc/PID/stat and counter
 * files parsed, rates from two readings, the SAMPLE message. No I/O.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

void wt_sample_init(wt_sample *s)
{
  s->seq = s->span_ms = s->cpu_pm = s->cpu_ms = s->rss = s->threads = s->procs = -1;
  s->nic_tx = s->nic_rx = -1;
  s->gpu_util = s->gpu_mem = s->gpu_power = s->gpu_temp = -1;
  s->nic[0] = '\0';
  s->why[0] = '\0';
}

/* The next space-separated number of *p; -1 when there is none. */
static int next_num(const char **p, int64_t *v)
{
  const char *s = *p;
  char *end;
  while (*s == ' ')
    s++;
  if (!(*s == '-' || (*s >= '0' && *s <= '9')))
    return -1;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || end == s || (*end != ' ' && *end != '\n' && *end != '\0'))
    return -1;
  *v = x;
  *p = end;
  return 0;
}

int wt_sample_parse_stat(const char *text, wt_proc_stat *st)
{
  /* "pid (comm) state ppid ..." : fields numbered from 1 as proc(5) does */
  const char *rp = text ? strrchr(text, ')') : NULL;
  int64_t v, flags = -1, utime = -1, stime = -1, cutime = -1, cstime = -1, threads = -1, rss = -1;
  if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
    return -1;
  st->state = rp[2];
  const char *p = rp + 3;
  for (int field = 4; field <= 24; field++) {
    if (next_num(&p, &v))
      return -1;
    if (field == 9)
      flags = v;
    else if (field == 14)
      utime = v;
    else if (field == 15)
      stime = v;
    else if (field == 16)
      cutime = v;
    else if (field == 17)
      cstime = v;
    else if (field == 20)
      threads = v;
    else if (field == 24)
      rss = v;
  }
  if (flags < 0 || utime < 0 || stime < 0 || cutime < 0 || cstime < 0 || threads < 0)
    return -1;
  /* PF_EXITING (linux/sched.h): in exit, its memory perhaps already gone (rss 0)
   * while the state still says R or D */
  st->exiting = st->state == 'Z' || st->state == 'X' || (flags & 0x4);
  st->ticks = utime + stime + cutime + cstime;
  st->threads = threads;
  st->rss_pages = rss < 0 ? 0 : rss;
  return 0;
}

int wt_sample_parse_pids(const char *text, long *pids, int max)
{
  const char *p = text;
  int64_t v;
  int n = 0;
  if (!text)
    return -1;
  for (;;) {
    while (*p == ' ' || *p == '\n')
      p++;
    if (!*p)
      return n;
    if (next_num(&p, &v) || v <= 0)
      return -1;
    if (n < max)
      pids[n++] = (long)v;
  }
}

int wt_sample_parse_counter(const char *text, int64_t *v)
{
  const char *p = text;
  if (!text || next_num(&p, v) || *v < 0)
    return -1;
  while (*p == '\n' || *p == ' ')
    p++;
  return *p ? -1 : 0;
}

int64_t wt_sample_rate(int64_t before, int64_t after, int64_t span_ms)
{
  if (before < 0 || after < before || span_ms <= 0)
    return -1;
  return (int64_t)((double)(after - before) * 1000.0 / (double)span_ms + 0.5);
}

int64_t wt_sample_cpu_pm(int64_t ticks_before, int64_t ticks_after, long hz, int64_t span_ms)
{
  if (ticks_before < 0 || ticks_after < ticks_before || hz <= 0 || span_ms <= 0)
    return -1;
  /* ticks -> ms of CPU, per ms of clock, in thousandths */
  double cpu_ms = (double)(ticks_after - ticks_before) * 1000.0 / (double)hz;
  return (int64_t)(cpu_ms * 1000.0 / (double)span_ms + 0.5);
}

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *out, const char *name, const char *v)
{
  fprintf(out, "%s=\"", name);
  for (; v && *v; v++) {
    if (*v == '\\' || *v == '"')
      fprintf(out, "\\%c", *v);
    else if (*v == '\n')
      fputs("\\n", out);
    else
      fputc(*v, out);
  }
  fputc('"', out);
}

/* One metric family: HELP and TYPE once, then a line for each rank that measured it
 * (the format wants a family's lines together); nothing when none did. The figure is
 * read at byte offset \p off of a wt_sample and divided by \p scale. */
static void family(FILE *out, const wt_sample *s, const wt_sample_who *who, int n, const char *name,
                   const char *type, const char *help, size_t off, double scale)
{
  int said = 0;
  for (int i = 0; i < n; i++) {
    int64_t v;
    memcpy(&v, (const char *)&s[i] + off, sizeof(v));
    if (v < 0)
      continue;
    if (!said++)
      fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    fprintf(out, "%s{", name);
    label(out, "job", who[i].job);
    fprintf(out, ",rank=\"%d\",", who[i].rank);
    label(out, "host", who[i].host);
    if (!strncmp(name, "weft_rank_gpu_", 14) && who[i].gpu) {
      fputc(',', out);
      label(out, "gpu", who[i].gpu);
    }
    fprintf(out, "} %.15g\n", (double)v / scale);
  }
}

#define FAMILY(field, scale, name, type, help)                                                     \
  family(out, s, who, n, name, type, help, offsetof(wt_sample, field), scale)

void wt_sample_prom(FILE *out, const wt_sample *s, const wt_sample_who *who, int n)
{
  FAMILY(cpu_ms, 1000, "weft_rank_cpu_seconds_total", "counter",
         "CPU time used by the rank's processes.");
  FAMILY(cpu_pm, 1000, "weft_rank_cpu_utilization_ratio", "gauge",
         "CPU use of the rank's processes over the last sample, in cores (1 is one core busy).");
  FAMILY(rss, 1, "weft_rank_resident_memory_bytes", "gauge",
         "Resident memory of the rank's processes (their sum).");
  FAMILY(threads, 1, "weft_rank_threads", "gauge", "Threads of the rank's processes.");
  FAMILY(procs, 1, "weft_rank_processes", "gauge",
         "Processes of the rank (its program and those it started).");
  FAMILY(gpu_util, 100, "weft_rank_gpu_utilization_ratio", "gauge",
         "Utilisation of the rank's GPU (NVML: the time a kernel ran), 0 to 1.");
  FAMILY(gpu_mem, 1, "weft_rank_gpu_memory_used_bytes", "gauge", "Memory used on the rank's GPU.");
  FAMILY(gpu_power, 1000, "weft_rank_gpu_power_watts", "gauge", "Power drawn by the rank's GPU.");
  FAMILY(gpu_temp, 1, "weft_rank_gpu_temperature_celsius", "gauge",
         "Temperature of the rank's GPU.");
}

static void put(wt_ctl_out *m, int tag, int64_t v)
{
  if (v >= 0)
    wt_ctl_put_int(m, tag, v);
}

void wt_sample_put(wt_ctl_out *m, const wt_sample *s)
{
  wt_ctl_begin(m, WT_CTL_SAMPLE);
  put(m, WT_CTL_T_SEQ, s->seq);
  put(m, WT_CTL_T_SPAN_MS, s->span_ms);
  put(m, WT_CTL_T_CPU_PM, s->cpu_pm);
  put(m, WT_CTL_T_CPU_MS, s->cpu_ms);
  put(m, WT_CTL_T_RSS, s->rss);
  put(m, WT_CTL_T_THREADS, s->threads);
  put(m, WT_CTL_T_PROCS, s->procs);
  put(m, WT_CTL_T_GPU_UTIL, s->gpu_util);
  put(m, WT_CTL_T_GPU_MEM, s->gpu_mem);
  put(m, WT_CTL_T_GPU_POWER, s->gpu_power);
  put(m, WT_CTL_T_GPU_TEMP, s->gpu_temp);
  if (s->why[0])
    wt_ctl_put_str(m, WT_CTL_T_WHY, s->why);
  if (s->nic[0]) {
    wt_ctl_put_str(m, WT_CTL_T_NIC, s->nic);
    put(m, WT_CTL_T_NIC_TX, s->nic_tx);
    put(m, WT_CTL_T_NIC_RX, s->nic_rx);
  }
}

/* A number field that must not be negative: -1 when absent or negative. */
static int64_t get(const wt_ctl_msg *m, int tag)
{
  int64_t v;
  return wt_ctl_get_int(m, tag, &v) || v < 0 ? -1 : v;
}

int wt_sample_get(const wt_ctl_msg *m, wt_sample *s)
{
  wt_sample_init(s);
  if (m->type != WT_CTL_SAMPLE || (s->seq = get(m, WT_CTL_T_SEQ)) < 0)
    return -1;
  s->span_ms = get(m, WT_CTL_T_SPAN_MS);
  s->cpu_pm = get(m, WT_CTL_T_CPU_PM);
  s->cpu_ms = get(m, WT_CTL_T_CPU_MS);
  s->rss = get(m, WT_CTL_T_RSS);
  s->threads = get(m, WT_CTL_T_THREADS);
  s->procs = get(m, WT_CTL_T_PROCS);
  s->gpu_util = get(m, WT_CTL_T_GPU_UTIL);
  s->gpu_mem = get(m, WT_CTL_T_GPU_MEM);
  s->gpu_power = get(m, WT_CTL_T_GPU_POWER);
  s->gpu_temp = get(m, WT_CTL_T_GPU_TEMP);
  if (wt_ctl_get_str(m, WT_CTL_T_WHY, s->why, sizeof(s->why)))
    s->why[0] = '\0';
  if (wt_ctl_get_str(m, WT_CTL_T_NIC, s->nic, sizeof(s->nic)) == 0) {
    s->nic_tx = get(m, WT_CTL_T_NIC_TX);
    s->nic_rx = get(m, WT_CTL_T_NIC_RX);
  } else {
    s->nic[0] = '\0';
  }
  return 0;
}
