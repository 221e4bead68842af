/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launch line and the closing figures (on by default on a terminal,
 * with --monitor also when stderr is not one, never with -q): "24 ranks on 3
 * hosts started in 1.2 s" once every rank's STARTED has come, and at the end,
 * after the summary line, on success and on failure alike: the wall time,
 * each host's exit, the ranks that used the most and the least CPU time, and
 * each rank's peak memory. The figures are the kernel's for each rank
 * (wait4 in its agent, sent with EXITED), else its last sample's.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervise.h"

#define HOSTS_SHOWN 16
#define RANKS_SHOWN 16

int wr_recap_wanted(const wr_opts *o) { return !o->quiet && (o->monitor > 0 || isatty(2)); }

void wr_recap_launch(const wr_sup *s, double started, FILE *out)
{
  fprintf(out, "weftrun: %d rank%s on %d host%s started in %.1f s\n", s->np, s->np == 1 ? "" : "s",
          s->p->nhosts, s->p->nhosts == 1 ? "" : "s", s->all_started_at - started);
}

static void mib(long long b, char *buf, size_t len)
{
  if (b < 0)
    snprintf(buf, len, "?");
  else if (b >= 1LL << 30)
    snprintf(buf, len, "%.1f GiB", (double)b / (1 << 30));
  else
    snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
}

/* Host h's exit: 0 when every rank of it exited 0, else what its first rank that did not
 * says. */
static void host_exit(const wr_sup *s, int h, char *buf, size_t len)
{
  int stopped = -1, silent = -1;
  for (int r = 0; r < s->np; r++) {
    const wr_rank *x = &s->r[r];
    if (s->p->ranks[r].host != h)
      continue;
    if (x->state != WR_RANK_EXITED) {
      if (silent < 0)
        silent = r;
    } else if (x->stopped) {
      if (stopped < 0)
        stopped = r;
    } else if (x->code) {
      snprintf(buf, len, "%d (rank %d)", x->code, r);
      return;
    }
  }
  if (stopped >= 0)
    snprintf(buf, len, "%d (rank %d, ended)", s->r[stopped].code, stopped);
  else if (silent >= 0)
    snprintf(buf, len, "no exit (rank %d %s)", silent,
             s->r[silent].state == WR_RANK_WAITING ? "never started" : "lost");
  else
    snprintf(buf, len, "0");
}

void wr_recap_end(const wr_sup *s, double started, double now, FILE *out)
{
  char e[96], a[32], b[32];
  fprintf(out, "weftrun: ran %.1f s; exit by host:", now - started);
  for (int h = 0; h < s->p->nhosts && h < HOSTS_SHOWN; h++) {
    host_exit(s, h, e, sizeof(e));
    fprintf(out, "%s %s %s", h ? "," : "", s->p->hosts[h].host->name, e);
  }
  if (s->p->nhosts > HOSTS_SHOWN)
    fprintf(out, " and %d more hosts", s->p->nhosts - HOSTS_SHOWN);
  fputc('\n', out);

  int most = -1, least = -1, known = 0;
  for (int r = 0; r < s->np; r++) {
    if (s->r[r].cpu_ms < 0)
      continue;
    known++;
    if (most < 0 || s->r[r].cpu_ms > s->r[most].cpu_ms)
      most = r;
    if (least < 0 || s->r[r].cpu_ms < s->r[least].cpu_ms)
      least = r;
  }
  if (known)
    fprintf(out, "weftrun: CPU time: most rank %d (%s) %.1f s, least rank %d (%s) %.1f s%s\n", most,
            wr_sup_host(s, most), (double)s->r[most].cpu_ms / 1000, least, wr_sup_host(s, least),
            (double)s->r[least].cpu_ms / 1000,
            known < s->np ? " (of the ranks that reported it)" : "");
  if (!known)
    return;
  fputs("weftrun: peak memory:", out);
  if (s->np <= RANKS_SHOWN) {
    for (int r = 0; r < s->np; r++) {
      mib(s->r[r].peak_rss, a, sizeof(a));
      fprintf(out, "%s rank %d %s", r ? "," : "", r, a);
    }
  } else {
    int lo = -1, hi = -1;
    for (int r = 0; r < s->np; r++) {
      if (s->r[r].peak_rss < 0)
        continue;
      if (lo < 0 || s->r[r].peak_rss < s->r[lo].peak_rss)
        lo = r;
      if (hi < 0 || s->r[r].peak_rss > s->r[hi].peak_rss)
        hi = r;
    }
    mib(lo >= 0 ? s->r[lo].peak_rss : -1, a, sizeof(a));
    mib(hi >= 0 ? s->r[hi].peak_rss : -1, b, sizeof(b));
    fprintf(out, " least rank %d %s, most rank %d %s", lo, a, hi, b);
  }
  fputc('\n', out);
  /* each GPU's average utilisation and peak memory (--monitor with NVML) */
  int shown = 0;
  for (int r = 0; r < s->np && shown < RANKS_SHOWN; r++) {
    if (!s->r[r].gpu_n)
      continue;
    mib(s->r[r].gpu_mem_peak, a, sizeof(a));
    fprintf(out, "%s rank %d gpu %s %.0f%% avg, %s peak", shown ? "," : "weftrun: GPUs:", r,
            s->r[r].gpu, (double)s->r[r].gpu_util_sum / s->r[r].gpu_n, a);
    shown++;
  }
  if (shown)
    fprintf(out, "%s\n", shown == RANKS_SHOWN ? ", ..." : "");
}
