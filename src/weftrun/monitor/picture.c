/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timeline as a picture: at the end of a job run with --monitor-out DIR,
 * DIR/timeline.html is made from DIR/timeline.jsonl, a self-contained page
 * (no script, no outside file) with one inline SVG: charts of CPU use, GPU
 * utilisation (when a rank has a GPU figure) and resident memory over time,
 * one line per rank (its title names rank and host when the pointer rests on
 * it), and a legend with each rank's averages. The stragglers are those
 * the live monitor named while the job ran (straggle.c's rule, monitor.c
 * applies it; one rule for the line and the picture): each is drawn thick
 * and named under the legend, so that a straggler shows at a glance. The
 * picture takes the page's width (its viewBox scales).
 * A line is thinned to at most MAX_POINTS points. Reading a timeline line
 * (wr_timeline_parse) and drawing (wr_picture_draw) are pure; only
 * wr_picture_write touches files.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"

#define MAX_POINTS 600
#define W 900         /* the picture's width */
#define CH 170        /* a chart's plot height */
#define PADL 64       /* room for the y labels */
#define PADR 30       /* and for the last x label */
#define PADT 34       /* a chart's title */
#define PADB 24       /* its x labels */
#define LEGEND_MAX 16 /* ranks named in the legend */

/* The three charts: what a point's figure is, scaled to the unit shown. */
enum { C_CPU, C_GPU, C_MEM, C_N };

static double figure(const wr_point *p, int c, double unit)
{
  double v = c == C_CPU ? p->cpu : c == C_GPU ? p->gpu : p->rss;
  return v < 0 ? -1 : v * unit;
}

/* The number after "KEY": in line; -1 when absent. */
static int num(const char *line, const char *key, double *v)
{
  const char *p = strstr(line, key);
  char *end;
  if (!p)
    return -1;
  p += strlen(key);
  *v = strtod(p, &end);
  return end == p ? -1 : 0;
}

int wr_timeline_parse(const char *line, wr_point *pt, char *host, size_t hostlen)
{
  double rank;
  if (line[0] != '{' || num(line, "\"t\":", &pt->t) || num(line, "\"rank\":", &rank) || rank < 0 ||
      rank > 1e7)
    return -1;
  pt->rank = (int)rank;
  if (num(line, "\"cpu\":", &pt->cpu))
    pt->cpu = -1;
  if (num(line, "\"rss\":", &pt->rss))
    pt->rss = -1;
  if (num(line, "\"gpu\":", &pt->gpu))
    pt->gpu = -1;
  double attempt;
  pt->attempt =
    num(line, "\"attempt\":", &attempt) || attempt < 0 || attempt > 1e6 ? 0 : (int)attempt;
  const char *h = strstr(line, "\"host\":\"");
  size_t n = 0;
  if (h) {
    h += 8;
    while (h[n] && h[n] != '"' && h[n] != '\\')
      n++;
  }
  snprintf(host, hostlen, "%.*s", (int)n, h ? h : "");
  return 0;
}

int wr_timeline_gap(const char *line, wr_gap *g)
{
  double k;
  memset(g, 0, sizeof(*g));
  if (line[0] != '{' || strstr(line, "\"rank\":") || num(line, "\"restart\":", &k) || k < 1 ||
      k > 1e6 || num(line, "\"t\":", &g->to) || num(line, "\"down_since\":", &g->from))
    return -1;
  g->attempt = (int)k;
  if (g->from > g->to)
    g->from = g->to;
  const char *c = strstr(line, "\"cause\":\"");
  size_t n = 0;
  if (c) {
    c += 9;
    while (c[n] && c[n] != '"' && c[n] != '\\')
      n++;
  }
  snprintf(g->cause, sizeof(g->cause), "%.*s", (int)n, c ? c : "");
  return 0;
}

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

static void xml_text(FILE *out, const char *s)
{
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", out);
    else if (*s == '>')
      fputs("&gt;", out);
    else if (*s == '&')
      fputs("&amp;", out);
    else if (*s == '"')
      fputs("&quot;", out);
    else
      fputc(*s, out);
  }
}

/* A step of 1, 2, 2.5 or 5 times a power of ten that cuts 0..max in about \p want. */
static double nice_step(double max, int want)
{
  double raw = max / want, p = 1;
  if (raw <= 0)
    return 1;
  while (p * 10 <= raw)
    p *= 10;
  while (p > raw)
    p /= 10;
  double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

/* The digits a tick label needs to show \p step. */
static int digits(double step)
{
  int d = 0;
  for (double s = step; d < 3 && s - (double)(long)s > 1e-9; s *= 10)
    d++;
  return d;
}

/* Each rank's average of chart c's figure (-1: none). */
static void averages(const wr_series *v, int n, int c, double *avg)
{
  for (int r = 0; r < n; r++) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < v[r].n; i++)
      if (figure(&v[r].p[i], c, 1) >= 0)
        sum += figure(&v[r].p[i], c, 1), k++;
    avg[r] = k ? sum / k : -1;
  }
}

/* One chart at \p top: chart c of every rank's points against t, y from 0 to a
 * round figure (at least \p floor), light lines at its ticks, x ticks in seconds; the
 * ranks flagged in \p thick (NULL: none) drawn thicker. The height it took. */
static int chart(FILE *out, const wr_series *v, int n, const wr_gap *gaps, int ngaps, double tmax,
                 int c, double unit, const char *title, double floor, const char *thick, int top)
{
  double ymax = floor;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < v[r].n; i++)
      if (figure(&v[r].p[i], c, unit) > ymax)
        ymax = figure(&v[r].p[i], c, unit);
  double ystep = nice_step(ymax, 4), tstep = nice_step(tmax > 0 ? tmax : 1, 8);
  ymax = ystep * (double)(long)(ymax / ystep + 0.999999);
  if (ymax <= 0)
    ymax = ystep;
  double xs = (W - PADL - PADR) / (tmax > 0 ? tmax : 1), ys = CH / ymax;
  int base = top + PADT + CH;
  fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">", PADL, top + 16);
  xml_text(out, title);
  fputs("</text>\n", out);
  for (double y = 0; y <= ymax * 1.0001; y += ystep) {
    fprintf(out, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", PADL,
            W - PADR, base - y * ys, base - y * ys, y > 0 ? "#e4e4e4" : "#888");
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", PADL - 6,
            base - y * ys + 4, digits(ystep), y);
  }
  for (double x = 0; x <= tmax * 1.0001 || x == 0; x += tstep) {
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
            PADL + x * xs, PADL + x * xs, base, base + 4);
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n", PADL + x * xs,
            base + 17, digits(tstep), x);
    if (tmax <= 0)
      break;
  }
  /* the restarts' gaps, shaded, under the lines */
  for (int g = 0; g < ngaps; g++) {
    double w = (gaps[g].to - gaps[g].from) * xs;
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#e8e8e8\">"
            "<title>restart %d: ",
            PADL + gaps[g].from * xs, base - CH, w > 2 ? w : 2, CH, gaps[g].attempt);
    xml_text(out, gaps[g].cause);
    fprintf(out, "; the job was down %.1f s</title></rect>\n", gaps[g].to - gaps[g].from);
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">restart %d</text>\n",
            PADL + gaps[g].to * xs + 3, base - CH + 10, gaps[g].attempt);
  }
  /* a rank's line, broken where its attempt changes (another process of that rank) */
  for (int r = 0; r < n; r++) {
    int step = v[r].n > MAX_POINTS ? (v[r].n + MAX_POINTS - 1) / MAX_POINTS : 1, any = 0;
    int attempt = -1;
    for (int i = 0; i < v[r].n; i += step) {
      double y = figure(&v[r].p[i], c, unit);
      if (y < 0)
        continue;
      if (any && v[r].p[i].attempt != attempt) {
        fprintf(out, "\"><title>rank %d (", r);
        xml_text(out, v[r].host);
        fputs(")</title></polyline>\n", out);
        any = 0;
      }
      if (!any)
        fprintf(out, "<polyline fill=\"none\" stroke-width=\"%s\" stroke=\"%s\" points=\"",
                thick && thick[r] ? "3" : "1.5", palette[r % 10]);
      fprintf(out, "%s%.1f,%.1f", any ? " " : "", PADL + v[r].p[i].t * xs, base - y * ys);
      any = 1;
      attempt = v[r].p[i].attempt;
    }
    if (any) {
      fprintf(out, "\"><title>rank %d (", r);
      xml_text(out, v[r].host);
      fputs(")</title></polyline>\n", out);
    }
  }
  return PADT + CH + PADB;
}

/* Whether any rank has a figure for chart c. */
static int has(const wr_series *v, int n, int c)
{
  for (int r = 0; r < n; r++)
    for (int i = 0; i < v[r].n; i++)
      if (figure(&v[r].p[i], c, 1) >= 0)
        return 1;
  return 0;
}

/* The legend at \p top: a swatch, the rank, its host and its averages, four a row;
 * then a line for each straggler the live monitor named. */
static void legend(FILE *out, const wr_series *v, int n, const double *cpu, const double *gpu,
                   int top, const char *named_cpu, const char *named_gpu)
{
  int k = 0, y = top;
  for (int r = 0; r < n && k < LEGEND_MAX; r++) {
    if (!v[r].n)
      continue;
    int x = PADL + (k % 4) * ((W - PADL) / 4);
    y = top + (k / 4) * 18;
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" fill=\"%s\"/>\n", x, y - 9,
            (named_cpu && named_cpu[r]) || (named_gpu && named_gpu[r]) ? 6 : 3, palette[r % 10]);
    fprintf(out, "<text x=\"%d\" y=\"%d\">rank %d (", x + 19, y, r);
    xml_text(out, v[r].host);
    fputs(")", out);
    if (cpu[r] >= 0)
      fprintf(out, " CPU %.0f%%", cpu[r]);
    if (gpu[r] >= 0)
      fprintf(out, " GPU %.0f%%", gpu[r]);
    fputs("</text>\n", out);
    k++;
  }
  if (k == LEGEND_MAX && n > k)
    fprintf(out,
            "<text x=\"%d\" y=\"%d\">and more ranks: colours repeat every 10; the pointer "
            "on a line names its rank</text>\n",
            PADL, y += 18);
  for (int g = 0; g < 2; g++) {
    const char *named = g ? named_gpu : named_cpu;
    for (int r = 0; named && r < n; r++) {
      if (!named[r])
        continue;
      fprintf(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">Straggler: rank %d (", PADL,
              y += 22, r);
      xml_text(out, v[r].host);
      fprintf(out, "), its %s below half its peers' median for %d samples in a row",
              g ? "GPU" : "CPU", WR_STRAGGLE_SAMPLES);
      if ((g ? gpu[r] : cpu[r]) >= 0)
        fprintf(out, ", %.0f%% on average", g ? gpu[r] : cpu[r]);
      fputs(" (the thick line)</text>\n", out);
    }
  }
}

/* The ranks flagged in \p named (NULL: none). */
static int count(const char *named, int n)
{
  int k = 0;
  for (int r = 0; named && r < n; r++)
    k += named[r] != 0;
  return k;
}

void wr_picture_draw(FILE *out, const wr_series *v, int n, const wr_gap *gaps, int ngaps,
                     const char *what, const char *named_cpu, const char *named_gpu)
{
  double tmax = 0, mem = 0;
  for (int g = 0; g < ngaps; g++)
    if (gaps[g].to > tmax)
      tmax = gaps[g].to;
  double *cpu = calloc((size_t)(n > 0 ? n : 1), sizeof(*cpu));
  double *gpu = calloc((size_t)(n > 0 ? n : 1), sizeof(*gpu));
  for (int r = 0; r < n; r++)
    for (int i = 0; i < v[r].n; i++) {
      if (v[r].p[i].t > tmax)
        tmax = v[r].p[i].t;
      if (v[r].p[i].rss > mem)
        mem = v[r].p[i].rss;
    }
  int gpus = has(v, n, C_GPU), ranks = 0;
  if (cpu && gpu) {
    averages(v, n, C_CPU, cpu);
    averages(v, n, C_GPU, gpu);
    for (int r = 0; r < n; r++) {
      cpu[r] = cpu[r] >= 0 ? cpu[r] * 100 : -1;
      gpu[r] = gpu[r] >= 0 ? gpu[r] * 100 : -1;
    }
  }
  for (int r = 0; r < n; r++)
    ranks += v[r].n > 0;
  /* the charts, the x axis' name, the legend's rows and its last lines */
  int rows = ((ranks < LEGEND_MAX ? ranks : LEGEND_MAX) + 3) / 4;
  int h = (gpus ? 3 : 2) * (PADT + CH + PADB) + 40 + (rows > 0 ? rows - 1 : 0) * 18 +
          18 * (ranks > LEGEND_MAX) + 22 * (count(named_cpu, n) + count(named_gpu, n)) + 14;
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weftrun timeline</title>"
        "</head>\n<body style=\"font-family: sans-serif\">\n<p>",
        out);
  xml_text(out, what);
  fputs("</p>\n", out);
  /* the page's width: the viewBox scales to it, its height follows */
  fprintf(out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" "
          "viewBox=\"0 0 %d %d\" style=\"display: block\" font-family=\"sans-serif\" "
          "font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
          W, h, W, h);
  int y = 0;
  y += chart(out, v, n, gaps, ngaps, tmax, C_CPU, 100,
             "CPU use, % of one core (100 = one core busy)", 10, named_cpu, y);
  if (gpus)
    y += chart(out, v, n, gaps, ngaps, tmax, C_GPU, 100,
               "GPU utilisation, % (NVML: the time a kernel ran)", 100, named_gpu, y);
  int gib = mem >= 2.0 * (1 << 30);
  y += chart(out, v, n, gaps, ngaps, tmax, C_MEM, 1.0 / (gib ? 1 << 30 : 1 << 20),
             gib ? "Resident memory, GiB" : "Resident memory, MiB", 1, NULL, y);
  fprintf(out,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">seconds since the job started"
          "</text>\n",
          PADL + (W - PADL - PADR) / 2, y + 6);
  if (cpu && gpu) /* else out of memory: no legend */
    legend(out, v, n, cpu, gpu, y + 40, named_cpu, named_gpu);
  fputs("</svg>\n</body></html>\n", out);
  free(cpu);
  free(gpu);
}

/* Room for rank \p rank in *v (*nv of them, zeroed when new). 0, or -1. */
static int room(wr_series **v, int *nv, int rank)
{
  if (rank < *nv)
    return 0;
  int n = *nv ? *nv : 16;
  while (n <= rank)
    n *= 2;
  wr_series *w = realloc(*v, (size_t)n * sizeof(*w));
  if (!w)
    return -1;
  memset(w + *nv, 0, (size_t)(n - *nv) * sizeof(*w));
  *v = w;
  *nv = n;
  return 0;
}

int wr_picture_write(const char *jsonl, const char *html, int np, int replace, const char *what,
                     const char *named_cpu, const char *named_gpu, char *why, size_t len)
{
  FILE *in = fopen(jsonl, "r"), *out = NULL;
  wr_series *v = NULL;
  wr_gap *gaps = NULL;
  char *line = NULL, host[64], *ncpu = NULL, *ngpu = NULL;
  size_t cap = 0;
  int rc = -1, nv = 0, ngaps = 0, ranks = np > 0 ? np : 0;
  if (!in) {
    snprintf(why, len, "cannot read %s: %s", jsonl, strerror(errno));
    goto out;
  }
  while (getline(&line, &cap, in) > 0) {
    wr_point pt;
    wr_gap g;
    if (!wr_timeline_gap(line, &g)) {
      wr_gap *w = realloc(gaps, (size_t)(ngaps + 1) * sizeof(*w));
      if (!w)
        goto nomem;
      gaps = w;
      gaps[ngaps++] = g;
      continue;
    }
    if (wr_timeline_parse(line, &pt, host, sizeof(host)))
      continue;
    if (room(&v, &nv, pt.rank))
      goto nomem;
    if (pt.rank >= ranks)
      ranks = pt.rank + 1;
    wr_series *s = &v[pt.rank];
    if (s->n == s->cap) {
      int c = s->cap ? 2 * s->cap : 64;
      wr_point *p = realloc(s->p, (size_t)c * sizeof(*p));
      if (!p)
        goto nomem;
      s->p = p;
      s->cap = c;
    }
    s->p[s->n++] = pt;
    snprintf(s->host, sizeof(s->host), "%s", host);
  }
  /* every rank of every attempt has its series; the stragglers named are the last
   * attempt's ranks */
  if (room(&v, &nv, ranks) || !(ncpu = calloc((size_t)ranks + 1, 1)) ||
      !(ngpu = calloc((size_t)ranks + 1, 1)))
    goto nomem;
  for (int r = 0; r < np && r < ranks; r++) {
    ncpu[r] = named_cpu ? named_cpu[r] : 0;
    ngpu[r] = named_gpu ? named_gpu[r] : 0;
  }
  /* never over a file that is there (an earlier job's picture), but over this job's
   * own when a restart draws it again */
  int fd = open(html, O_WRONLY | O_CREAT | O_CLOEXEC | (replace ? O_TRUNC : O_EXCL), 0666);
  if (fd < 0 || !(out = fdopen(fd, "w"))) {
    snprintf(why, len, "cannot create %s: %s", html, strerror(errno));
    if (fd >= 0)
      close(fd);
    goto out;
  }
  wr_picture_draw(out, v, ranks, gaps, ngaps, what, ncpu, ngpu);
  if (fclose(out)) {
    out = NULL;
    snprintf(why, len, "writing %s failed: %s", html, strerror(errno));
    goto out;
  }
  out = NULL;
  rc = 0;
  goto out;
nomem:
  snprintf(why, len, "out of memory");
out:
  if (in)
    fclose(in);
  free(line);
  for (int r = 0; v && r < nv; r++)
    free(v[r].p);
  free(v);
  free(gaps);
  free(ncpu);
  free(ngpu);
  return rc;
}
