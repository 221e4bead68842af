/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timeline as a picture: at the end of a job run with --monitor-out DIR,
 * DIR/timeline.html is made from DIR/timeline.jsonl, a self-contained page
 * (no script, no outside file) with two inline SVG charts, CPU use and
 * resident memory over time, one line per rank (its title names rank and
 * host when the pointer rests on it), so that a straggler shows at a glance.
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

#include "weftrun.h"

#define MAX_POINTS 600
#define W 900
#define H 260
#define PADL 70
#define PADB 30
#define PADT 30

/* The number after "KEY": in line; -1 when absent. */
static int
num(const char *line, const char *key, double *v)
{
  const char *p = strstr(line, key);
  char *end;
  if (!p)
    return -1;
  p += strlen(key);
  *v = strtod(p, &end);
  return end == p ? -1 : 0;
}

int
wr_timeline_parse(const char *line, wr_point *pt, char *host, size_t hostlen)
{
  double rank;
  if (line[0] != '{' || num(line, "\"t\":", &pt->t) || num(line, "\"rank\":", &rank) ||
      rank < 0 || rank > 1e7)
    return -1;
  pt->rank = (int)rank;
  if (num(line, "\"cpu\":", &pt->cpu))
    pt->cpu = -1;
  if (num(line, "\"rss\":", &pt->rss))
    pt->rss = -1;
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

static const char *const palette[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

static void
xml_text(FILE *out, const char *s)
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

/* One chart: what(i) of every rank's points against t. */
static void
chart(FILE *out, const wr_series *v, int n, double tmax, int mem, const char *title)
{
  double ymax = 0;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < v[r].n; i++) {
      double y = mem ? v[r].p[i].rss / (1 << 20) : v[r].p[i].cpu;
      if (y > ymax)
        ymax = y;
    }
  if (ymax <= 0)
    ymax = 1;
  ymax *= 1.05;
  double xs = (W - PADL - 10) / (tmax > 0 ? tmax : 1), ys = (H - PADB - PADT) / ymax;
  fprintf(out, "<h2>%s</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n", title, W, H);
  fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
          PADL, PADT, W - PADL - 10, H - PADB - PADT);
  for (int k = 0; k <= 4; k++) {
    double y = ymax * k / 4;
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", PADL - 4,
            H - PADB - y * ys + 4, ymax < 10 ? 2 : 0, y);
    double t = tmax * k / 4;
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f s</text>\n", PADL + t * xs,
            H - PADB + 16, t);
  }
  fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", PADL, PADT - 8,
          mem ? "resident memory, MiB" : "CPU use, cores (1 = one core busy)");
  for (int r = 0; r < n; r++) {
    int step = v[r].n > MAX_POINTS ? (v[r].n + MAX_POINTS - 1) / MAX_POINTS : 1, any = 0;
    for (int i = 0; i < v[r].n; i += step) {
      double y = mem ? v[r].p[i].rss / (1 << 20) : v[r].p[i].cpu;
      if (y < 0)
        continue;
      if (!any)
        fprintf(out, "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"%s\" points=\"",
                palette[r % 10]);
      fprintf(out, "%s%.1f,%.1f", any ? " " : "", PADL + v[r].p[i].t * xs, H - PADB - y * ys);
      any = 1;
    }
    if (any) {
      fprintf(out, "\"><title>rank %d (", r);
      xml_text(out, v[r].host);
      fputs(")</title></polyline>\n", out);
    }
  }
  fputs("</svg>\n", out);
}

void
wr_picture_draw(FILE *out, const wr_series *v, int n, const char *what)
{
  double tmax = 0;
  for (int r = 0; r < n; r++)
    if (v[r].n && v[r].p[v[r].n - 1].t > tmax)
      tmax = v[r].p[v[r].n - 1].t;
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weftrun timeline</title>"
        "</head>\n<body style=\"font-family: sans-serif\">\n<p>", out);
  xml_text(out, what);
  fputs("</p>\n", out);
  chart(out, v, n, tmax, 0, "CPU");
  chart(out, v, n, tmax, 1, "Memory");
  fputs("<p>", out);
  for (int r = 0; r < n && r < 64; r++) {
    if (!v[r].n)
      continue;
    fprintf(out, "<span style=\"color:%s\">&#9632; rank %d (", palette[r % 10], r);
    xml_text(out, v[r].host);
    fputs(")</span> ", out);
  }
  if (n > 64)
    fprintf(out, "and %d more ranks (colours repeat every 10)", n - 64);
  fputs("</p>\n</body></html>\n", out);
}

int
wr_picture_write(const char *jsonl, const char *html, int np, const char *what, char *why,
                 size_t len)
{
  FILE *in = fopen(jsonl, "r"), *out = NULL;
  wr_series *v = calloc((size_t)(np > 0 ? np : 1), sizeof(*v));
  char *line = NULL, host[64];
  size_t cap = 0;
  int rc = -1;
  if (!in || !v) {
    snprintf(why, len, "cannot read %s: %s", jsonl, in ? "out of memory" : strerror(errno));
    goto out;
  }
  while (getline(&line, &cap, in) > 0) {
    wr_point pt;
    if (wr_timeline_parse(line, &pt, host, sizeof(host)) || pt.rank >= np)
      continue;
    wr_series *s = &v[pt.rank];
    if (s->n == s->cap) {
      int c = s->cap ? 2 * s->cap : 64;
      wr_point *p = realloc(s->p, (size_t)c * sizeof(*p));
      if (!p) {
        snprintf(why, len, "out of memory");
        goto out;
      }
      s->p = p;
      s->cap = c;
    }
    s->p[s->n++] = pt;
    snprintf(s->host, sizeof(s->host), "%s", host);
  }
  /* never over a file that is there (an earlier job's picture) */
  int fd = open(html, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 || !(out = fdopen(fd, "w"))) {
    snprintf(why, len, "cannot create %s: %s", html, strerror(errno));
    if (fd >= 0)
      close(fd);
    goto out;
  }
  wr_picture_draw(out, v, np, what);
  if (fclose(out)) {
    out = NULL;
    snprintf(why, len, "writing %s failed: %s", html, strerror(errno));
    goto out;
  }
  out = NULL;
  rc = 0;
out:
  if (in)
    fclose(in);
  free(line);
  for (int r = 0; v && r < np; r++)
    free(v[r].p);
  free(v);
  return rc;
}
