/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor: what happens to the agents' samples (sample.h) once the
 * supervisor has stored them (supervise/supervise.c calls wr_mon_sample for each):
 *
 *  - the timeline (--monitor-out DIR): DIR/timeline.jsonl, one JSON object per
 *    rank per sample, fields as weftrun(1) MONITORING documents them, flushed
 *    once per round so that it can be followed while the job runs;
 *  - the straggler rule (straggle.c), against the median of every rank's
 *    latest CPU use, recomputed once per half interval: one line naming the
 *    rank and its host;
 *  - a live status line on stderr when it is a terminal (and not -q): the
 *    ranks sampled, average and lowest CPU use, memory, NIC rates; redrawn
 *    in place at most once per interval and wiped before any other line
 *    weftrun prints.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "monitor.h"

struct wr_mon {
  double every, t0;
  int np;
  FILE *timeline;
  char path[4200], html[4200];
  char what[5200]; /* the picture's caption */
  int quiet;
  int tty;   /* the live line is on */
  int drawn; /* the live line is on the screen */
  int hold;  /* a line of the ranks' output is open: draw nothing */
  double drawn_at, median_at;
  int64_t median;         /* of every rank's latest CPU use, -1 unknown */
  int64_t *use, *scratch; /* latest CPU use per rank (-1: none or ended) */
  int64_t *gpu, gmedian;  /* the same of their GPUs' utilisation, in thousandths */
  int *first;             /* wr_mon_nic_rates()'s scratch */
  wr_straggle st, gst;
  int stragglers;
  int said_why; /* why the GPU figures are absent, said once */
  int attempt;  /* --restarts' attempt: its records say so (0: the first) */
  int append;   /* a restart's: the job's timeline and picture are there */
};

/* A restart's line in the timeline: what was lost, since when the job was down. */
static void restart_line(wr_mon *m, const wr_attempt *att, int np, double now)
{
  FILE *f = m->timeline;
  fprintf(f, "{\"t\":%.3f,\"restart\":%d,\"down_since\":%.3f,\"np\":%d,\"cause\":", now - m->t0,
          att->number, att->down_at > 0 ? att->down_at - m->t0 : now - m->t0, np);
  weftx_json_string(f, att->cause);
  fputs("}\n", f);
  fflush(f);
}

int wr_mon_open(const wr_opts *o, int np, double t0, wr_attempt *att, wr_mon **out, char *why,
                size_t len)
{
  wr_mon *m = calloc(1, sizeof(*m));
  *out = NULL;
  if (!m || wr_straggle_init(&m->st, np) || wr_straggle_init(&m->gst, np) ||
      !(m->gpu = malloc((size_t)(np > 0 ? np : 1) * sizeof(*m->gpu))) ||
      !(m->use = malloc((size_t)(np > 0 ? np : 1) * sizeof(*m->use))) ||
      !(m->scratch = malloc((size_t)(np > 0 ? np : 1) * sizeof(*m->scratch))) ||
      !(m->first = malloc((size_t)(np > 0 ? np : 1) * sizeof(*m->first)))) {
    snprintf(why, len, "out of memory");
    wr_mon_close(m);
    return WR_EXIT_ENGINE;
  }
  m->every = o->monitor;
  m->append = att && att->mon_made;
  m->attempt = att ? att->number : 0;
  m->t0 = m->append ? att->mon_t0 : t0;
  m->np = np;
  m->median = m->gmedian = -1;
  for (int r = 0; r < np; r++)
    m->use[r] = m->gpu[r] = -1;
  m->tty = !o->quiet && isatty(2);
  if (o->monitor_out) {
    if (mkdir(o->monitor_out, 0777) && errno != EEXIST) {
      snprintf(why, len, "--monitor-out %s: cannot make the directory: %s", o->monitor_out,
               strerror(errno));
      wr_mon_close(m);
      return WR_EXIT_NOINPUT;
    }
    snprintf(m->path, sizeof(m->path), "%s/timeline.jsonl", o->monitor_out);
    snprintf(m->html, sizeof(m->html), "%s/timeline.html", o->monitor_out);
    snprintf(m->what, sizeof(m->what), "weftrun job %s: %d ranks%s, a sample every %g s (%s)",
             o->job, np, m->attempt ? " after its restarts (shaded: the job was down)" : "",
             o->monitor, m->path);
    m->quiet = o->quiet;
    int fd = open(m->path, O_WRONLY | O_CLOEXEC | (m->append ? O_APPEND : O_CREAT | O_EXCL), 0666);
    if (fd < 0 || !(m->timeline = fdopen(fd, "w"))) {
      snprintf(why, len, "--monitor-out %s: cannot create %s: %s%s", o->monitor_out, m->path,
               strerror(errno),
               errno == EEXIST ? " (a timeline is never overwritten: give "
                                 "another directory or remove it)"
                               : "");
      if (fd >= 0)
        close(fd);
      wr_mon_close(m);
      return WR_EXIT_NOINPUT;
    }
    if (m->append)
      restart_line(m, att, np, weftx_monotonic());
    else if (att) {
      att->mon_made = 1;
      att->mon_t0 = t0;
    }
  }
  *out = m;
  return 0;
}

void wr_mon_wipe(wr_mon *m)
{
  if (m && m->drawn) {
    fputs("\r\033[K", stderr);
    m->drawn = 0;
  }
}

void wr_mon_hold(wr_mon *m, int hold)
{
  if (m)
    m->hold = hold;
}

static void bytes_text(double b, char *buf, size_t len)
{
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

/* Whether ranks r and k report the same NIC of the same host. */
static int same_nic(const wr_sup *s, int r, int k)
{
  return !strcmp(s->r[r].last.nic, s->r[k].last.nic) &&
         !strcmp(wr_sup_host(s, r), wr_sup_host(s, k));
}

int wr_mon_nic_rates(const wr_sup *s, int *first, double *tx, double *rx)
{
  int npairs = 0, hosts = 0, host0 = -1;
  *tx = *rx = 0;
  for (int r = 0; r < s->np; r++) {
    const wt_sample *x = &s->r[r].last;
    if (s->r[r].state != WR_RANK_RUNNING || !s->r[r].nsamples)
      continue;
    if (host0 < 0)
      host0 = r;
    else if (!hosts && strcmp(wr_sup_host(s, r), wr_sup_host(s, host0)))
      hosts = 1; /* a second host */
    if (!x->nic[0] || (x->nic_tx < 0 && x->nic_rx < 0))
      continue;
    int seen = npairs > 0 && same_nic(s, r, first[npairs - 1]);
    for (int i = 0; !seen && i < npairs - 1; i++)
      seen = same_nic(s, r, first[i]);
    if (seen)
      continue;
    first[npairs++] = r;
    if (x->nic_tx >= 0)
      *tx += (double)x->nic_tx;
    if (x->nic_rx >= 0)
      *rx += (double)x->nic_rx;
  }
  return hosts && npairs > 0;
}

/* The live line: every rank's latest sample, the lowest CPU use named, and the NICs'
 * rates when the job spans hosts. */
static void draw(wr_mon *m, const wr_sup *s, double now)
{
  int n = 0, low = -1, big = -1, ng = 0;
  double cpu = 0, rss = 0, tx = 0, rx = 0, gpu = 0;
  for (int r = 0; r < s->np; r++) {
    const wt_sample *x = &s->r[r].last;
    if (s->r[r].state != WR_RANK_RUNNING || !s->r[r].nsamples)
      continue;
    n++;
    if (x->cpu_pm >= 0) {
      cpu += (double)x->cpu_pm;
      if (low < 0 || x->cpu_pm < s->r[low].last.cpu_pm)
        low = r;
    }
    if (x->rss >= 0) {
      rss += (double)x->rss;
      if (big < 0 || x->rss > s->r[big].last.rss)
        big = r;
    }
    if (x->gpu_util >= 0) {
      gpu += (double)x->gpu_util;
      ng++;
    }
  }
  if (!n)
    return;
  int nics = wr_mon_nic_rates(s, m->first, &tx, &rx);
  char a[32], b[32], c[32], d[32];
  bytes_text(rss, a, sizeof(a));
  bytes_text(big >= 0 ? (double)s->r[big].last.rss : 0, b, sizeof(b));
  bytes_text(tx, c, sizeof(c));
  bytes_text(rx, d, sizeof(d));
  fprintf(stderr, "\r\033[Kweftrun: %.0f s, %d of %d ranks: CPU %.0f%% avg", now - m->t0, n, s->np,
          cpu / n / 10);
  if (low >= 0)
    fprintf(stderr, ", lowest %.0f%% rank %d (%s)", (double)s->r[low].last.cpu_pm / 10, low,
            wr_sup_host(s, low));
  if (ng)
    fprintf(stderr, "; GPU %.0f%% avg", gpu / ng);
  fprintf(stderr, "; memory %s, most %s rank %d", a, b, big);
  if (nics)
    fprintf(stderr, "; NIC out %s/s in %s/s", c, d);
  fflush(stderr);
  m->drawn = 1;
  m->drawn_at = now;
}

static void record(wr_mon *m, const wr_sup *s, int rank, double now)
{
  const wt_sample *x = &s->r[rank].last;
  FILE *f = m->timeline;
  fprintf(f, "{\"t\":%.3f,\"rank\":%d,\"host\":", now - m->t0, rank);
  weftx_json_string(f, wr_sup_host(s, rank));
  if (m->attempt)
    fprintf(f, ",\"attempt\":%d", m->attempt);
  fprintf(f, ",\"seq\":%lld", (long long)x->seq);
  if (x->span_ms >= 0)
    fprintf(f, ",\"span\":%.3f", (double)x->span_ms / 1000);
  if (x->cpu_pm >= 0)
    fprintf(f, ",\"cpu\":%.3f", (double)x->cpu_pm / 1000);
  if (x->cpu_ms >= 0)
    fprintf(f, ",\"cpu_time\":%.3f", (double)x->cpu_ms / 1000);
  if (x->rss >= 0)
    fprintf(f, ",\"rss\":%lld", (long long)x->rss);
  if (x->threads >= 0)
    fprintf(f, ",\"threads\":%lld", (long long)x->threads);
  if (x->procs >= 0)
    fprintf(f, ",\"procs\":%lld", (long long)x->procs);
  if (x->gpu_util >= 0)
    fprintf(f, ",\"gpu\":%.2f", (double)x->gpu_util / 100);
  if (x->gpu_mem >= 0)
    fprintf(f, ",\"gpu_mem\":%lld", (long long)x->gpu_mem);
  if (x->gpu_power >= 0)
    fprintf(f, ",\"gpu_power\":%.3f", (double)x->gpu_power / 1000);
  if (x->gpu_temp >= 0)
    fprintf(f, ",\"gpu_temp\":%lld", (long long)x->gpu_temp);
  if (x->nic[0]) {
    fputs(",\"nic\":", f);
    weftx_json_string(f, x->nic);
    if (x->nic_tx >= 0)
      fprintf(f, ",\"nic_tx\":%lld", (long long)x->nic_tx);
    if (x->nic_rx >= 0)
      fprintf(f, ",\"nic_rx\":%lld", (long long)x->nic_rx);
  }
  fputs("}\n", f);
}

void wr_mon_sample(void *arg, const wr_sup *s, int rank, double now)
{
  wr_mon *m = arg;
  const wt_sample *x = &s->r[rank].last;
  if (m->timeline)
    record(m, s, rank, now);
  if (x->why[0] && !m->said_why) {
    wr_mon_wipe(m);
    fprintf(stderr, "weftrun: --monitor: no GPU figures (rank %d on %s: %s)\n", rank,
            wr_sup_host(s, rank), x->why);
    m->said_why = 1;
  }
  m->use[rank] = x->cpu_pm;
  m->gpu[rank] = x->gpu_util >= 0 ? x->gpu_util * 10 : -1;
  /* a round: the medians again, the file to disk, the line redrawn */
  if (now - m->median_at >= m->every / 2) {
    for (int r = 0; r < s->np; r++)
      if (s->r[r].state != WR_RANK_RUNNING)
        m->use[r] = m->gpu[r] = -1;
    m->median = wr_median(m->use, m->np, m->scratch);
    m->gmedian = wr_median(m->gpu, m->np, m->scratch);
    m->median_at = now;
    if (m->timeline)
      fflush(m->timeline);
  }
  if (wr_straggle_step(&m->st, rank, x->cpu_pm, m->median)) {
    wr_mon_wipe(m);
    fprintf(stderr,
            "weftrun: straggler: rank %d on %s: CPU %.0f%% for the last %d samples, its "
            "peers' median %.0f%%\n",
            rank, wr_sup_host(s, rank), (double)x->cpu_pm / 10, WR_STRAGGLE_SAMPLES,
            (double)m->median / 10);
    m->stragglers++;
  }
  if (x->gpu_util >= 0 && wr_straggle_step(&m->gst, rank, x->gpu_util * 10, m->gmedian)) {
    wr_mon_wipe(m);
    fprintf(stderr,
            "weftrun: straggler: rank %d on %s: GPU %s at %lld%% for the last %d samples, "
            "its peers' median %.0f%%\n",
            rank, wr_sup_host(s, rank), s->r[rank].gpu, (long long)x->gpu_util, WR_STRAGGLE_SAMPLES,
            (double)m->gmedian / 10);
    m->stragglers++;
  }
  if (m->tty && !m->hold && now - m->drawn_at >= m->every * 0.9)
    draw(m, s, now);
}

void wr_mon_close(wr_mon *m)
{
  if (!m)
    return;
  wr_mon_wipe(m);
  if (m->timeline) {
    char why[600];
    if (fclose(m->timeline))
      fprintf(stderr, "weftrun: warning: --monitor-out: writing %s failed: %s\n", m->path,
              strerror(errno));
    else if (wr_picture_write(m->path, m->html, m->np, m->append, m->what, m->st.flagged,
                              m->gst.flagged, why, sizeof(why)))
      fprintf(stderr, "weftrun: warning: --monitor-out: no picture: %s\n", why);
    else if (!m->quiet)
      fprintf(stderr, "weftrun: timeline %s, its picture %s\n", m->path, m->html);
  }
  wr_straggle_free(&m->st);
  wr_straggle_free(&m->gst);
  free(m->gpu);
  free(m->use);
  free(m->scratch);
  free(m->first);
  free(m);
}
