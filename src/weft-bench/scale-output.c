/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The output of weft-bench scale: the table of busbw and scaling efficiency,
 * the alpha-beta fit and prediction, the pairs and the slowest link (on
 * stdout, '#'-commented except the rows), and the files: DIR/scale.csv
 * (measured and predicted points, size by size), DIR/scale.json,
 * DIR/pairs.csv and DIR/scale.gp with the plot gnuplot draws from it. What
 * the numbers mean is scale-analysis.c's business; this file only writes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scale.h"

#define PLOT_TIMEOUT_S 60 /* gnuplot draws the plot in well under a second */

static size_t largest(const struct scale_opts *o)
{
  return o->sizes[o->nsizes - 1];
}

/* The predictions for the largest node count x 2, 4, 8 at every size. */
static int predictions(const struct scale *s, struct scale_prediction *out)
{
  const struct scale_opts *o = &s->o;

  return scale_predictions(s->jobs, s->njobs, o->counts[o->ncounts - 1], (int)o->ppn,
                           o->coll->busbw_factor, o->sizes, o->nsizes, out);
}

/* "host vm-2", "link vm-1 <-> vm-2" or "none". */
static void slow_name(const struct scale *s, const struct scale_slowest *v, char *buf, size_t len)
{
  if (v->kind == SCALE_SLOW_HOST)
    snprintf(buf, len, "host %s", v->host);
  else if (v->kind == SCALE_SLOW_LINK)
    snprintf(buf, len, "link %s <-> %s", s->pairs[v->link].host_a, s->pairs[v->link].host_b);
  else
    snprintf(buf, len, "none");
}

static void print_measured(const struct scale *s, FILE *f)
{
  const struct scale_opts *o = &s->o;

  fprintf(f, "#\n# %5s %6s %12s %12s %10s %10s %10s\n", "nodes", "ranks", "size(B)", "time(us)",
          "algbw", "busbw", "efficiency");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    for (int k = 0; k < o->nsizes; k++) {
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = scale_efficiency(s->jobs, s->njobs, j, o->sizes[k]);
      char eff[16];

      if (isnan(e))
        snprintf(eff, sizeof(eff), "-");
      else
        snprintf(eff, sizeof(eff), "%.2f", e);
      if (p)
        fprintf(f, "  %5d %6d %12zu %12.2f %10.3f %10.3f %10s\n", j->nodes, j->ranks, p->bytes,
                p->time_us, p->algbw, p->busbw, eff);
      else
        fprintf(f, "  %5d %6d %12zu %12s %10s %10s %10s\n", j->nodes, j->ranks, o->sizes[k],
                "FAILED", "-", "-", "-");
    }
  }
}

static void print_fit(const struct scale *s, FILE *f)
{
  const struct scale_opts *o = &s->o;
  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  int fitted = 0, npred;

  fprintf(f, "#\n# alpha-beta fit per node count (time = alpha + size x beta, least squares on "
          "relative error):\n");
  fprintf(f, "# %5s %6s %12s %16s %16s\n", "nodes", "ranks", "alpha(us)", "1/beta(GB/s)",
          "busbw(GB/s)");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    if (isnan(j->alpha_us) || !(j->beta_us_per_byte > 0)) {
      fprintf(f, "# %5d %6d   no fit (%s)\n", j->nodes, j->ranks,
              j->status ? "the run failed" : j->npts < 2 ? "it needs 2 sizes or more"
              : "time does not grow with size: too noisy, use larger sizes or more --iters");
      continue;
    }
    fprintf(f, "# %5d %6d %12.2f %16.3f %16.3f\n", j->nodes, j->ranks, j->alpha_us,
            1e-3 / j->beta_us_per_byte,
            1e-3 / j->beta_us_per_byte * o->coll->busbw_factor(j->ranks));
    fitted |= j->ranks >= 2;
  }
  if (!fitted)
    return;
  fprintf(f, "#\n# prediction (ring model: latency grows with ranks - 1, busbw stays at the fit of "
          "the largest run):\n# %5s %6s %12s %12s %10s\n", "nodes", "ranks", "size(B)",
          "time(us)", "busbw");
  npred = predictions(s, pred);
  for (int i = 0; i < npred; i++)
    if (pred[i].bytes == largest(o))
      fprintf(f, "# %5d %6d %12zu %12.2f %10.3f\n", pred[i].nodes, pred[i].ranks, pred[i].bytes,
              pred[i].time_us, pred[i].busbw);
}

static void print_pairs(const struct scale *s, FILE *f)
{
  struct scale_slowest v;
  char bw[16], what[600];

  if (!s->npairs)
    return;
  fprintf(f, "#\n# pairs: %s between neighbouring hosts, 1 rank each, %zu bytes:\n",
          bench_coll_pairwise()->name, largest(&s->o));
  for (int i = 0; i < s->npairs; i++) {
    bench_fmt(bw, 9, scale_busbw_at(&s->pairs[i], largest(&s->o)));
    fprintf(f, "#   %-20s <-> %-20s busbw %9s GB/s%s\n", s->pairs[i].host_a, s->pairs[i].host_b,
            bw, s->pairs[i].status ? " (FAILED)" : "");
  }
  scale_slowest(s->pairs, s->npairs, largest(&s->o), &v);
  slow_name(s, &v, what, sizeof(what));
  switch (v.kind) {
  case SCALE_SLOW_UNJUDGED:
    fprintf(f, "# slowest: not judged (%d link%s measured; 3 or more are needed to compare)\n",
            v.measured, v.measured == 1 ? "" : "s");
    break;
  case SCALE_SLOW_NONE:
    fprintf(f, "# slowest: none stands out (every link within 20%% of the median %.3f GB/s)\n",
            v.median);
    break;
  default:
    fprintf(f, "# slowest: %s: %.3f GB/s, %.2f x the median %.3f GB/s of %d links\n", what,
            v.busbw, v.busbw / v.median, v.median, v.measured);
  }
}

void scale_print(const struct scale *s, FILE *f)
{
  print_measured(s, f);
  print_fit(s, f);
  print_pairs(s, f);
}

/* scale.csv, size by size so that a plot's lines join the points of one size. */
static void write_csv(const struct scale *s, FILE *csv)
{
  const struct scale_opts *o = &s->o;
  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  int npred = predictions(s, pred);

  fprintf(csv, "kind,nodes,ranks,size,time_us,algbw,busbw,efficiency,wrong\n");
  for (int k = 0; k < o->nsizes; k++)
    for (int i = 0; i < s->njobs; i++) {
      const struct scale_job *j = &s->jobs[i];
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = scale_efficiency(s->jobs, s->njobs, j, o->sizes[k]);

      if (!p)
        continue;
      fprintf(csv, "measured,%d,%d,%zu,%.3f,%.6f,%.6f,", j->nodes, j->ranks, p->bytes, p->time_us,
              p->algbw, p->busbw);
      if (!isnan(e))
        fprintf(csv, "%.4f", e);
      fprintf(csv, ",%lld\n", p->wrong);
    }
  for (int k = 0; k < o->nsizes; k++)
    for (int i = 0; i < npred; i++)
      if (pred[i].bytes == o->sizes[k])
        fprintf(csv, "predicted,%d,%d,%zu,%.3f,%.6f,%.6f,,\n", pred[i].nodes, pred[i].ranks,
                pred[i].bytes, pred[i].time_us, pred[i].algbw, pred[i].busbw);
}

static void write_json_run(const struct scale *s, const struct scale_job *j, FILE *js)
{
  fprintf(js, "    { \"nodes\": %d, \"ranks\": %d, \"exit_status\": %d, \"seconds\": %.2f, "
          "\"alpha_us\": ", j->nodes, j->ranks, j->status, j->seconds);
  bench_json_num(js, j->alpha_us);
  fprintf(js, ", \"bandwidth_gbs\": ");
  bench_json_num(js, j->beta_us_per_byte > 0 ? 1e-3 / j->beta_us_per_byte : NAN);
  fprintf(js, ",\n      \"results\": [");
  for (int k = 0; k < j->npts; k++) {
    const struct scale_point *p = &j->pts[k];

    fprintf(js, "%s\n        { \"size\": %zu, \"time_us\": ", k ? "," : "", p->bytes);
    bench_json_num(js, p->time_us);
    fprintf(js, ", \"algbw\": ");
    bench_json_num(js, p->algbw);
    fprintf(js, ", \"busbw\": ");
    bench_json_num(js, p->busbw);
    fprintf(js, ", \"efficiency\": ");
    bench_json_num(js, scale_efficiency(s->jobs, s->njobs, j, p->bytes));
    fprintf(js, ", \"wrong\": %lld }", p->wrong);
  }
  fprintf(js, " ] }");
}

/* scale.json, and pairs.csv beside its pairs. */
static void write_json(const struct scale *s, int status, FILE *js, FILE *pairs)
{
  const struct scale_opts *o = &s->o;
  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  struct scale_slowest v;
  char what[600];
  int npred = predictions(s, pred);

  fprintf(js, "{\n  \"version\": 1,\n  \"tool\": \"weft-bench scale\",\n  \"collective\": ");
  weftx_json_string(js, o->coll->name);
  fprintf(js, ",\n  \"hostfile\": ");
  weftx_json_string(js, o->hostfile);
  fprintf(js, ",\n  \"launcher\": ");
  weftx_json_string(js, s->launcher);
  fprintf(js, ",\n  \"ppn\": %ld,\n  \"iters\": %ld,\n  \"sizes\": [", o->ppn, o->iters);
  for (int k = 0; k < o->nsizes; k++)
    fprintf(js, "%s%zu", k ? ", " : "", o->sizes[k]);
  fprintf(js, "],\n  \"runs\": [\n");
  for (int i = 0; i < s->njobs; i++) {
    write_json_run(s, &s->jobs[i], js);
    fprintf(js, "%s\n", i + 1 < s->njobs ? "," : "");
  }
  fprintf(js, "  ],\n  \"predictions\": [");
  for (int i = 0; i < npred; i++)
    fprintf(js, "%s\n    { \"nodes\": %d, \"ranks\": %d, \"size\": %zu, \"time_us\": %.3f, "
            "\"busbw\": %.6f }", i ? "," : "", pred[i].nodes, pred[i].ranks, pred[i].bytes,
            pred[i].time_us, pred[i].busbw);
  fprintf(js, " ],\n  \"pairs\": [");
  fprintf(pairs, "host_a,host_b,size,time_us,busbw,exit_status\n");
  for (int i = 0; i < s->npairs; i++) {
    const struct scale_job *j = &s->pairs[i];
    const struct scale_point *p = scale_point_at(j, largest(o));

    fprintf(pairs, "%s,%s,%zu,%.3f,%.6f,%d\n", j->host_a, j->host_b, largest(o),
            p ? p->time_us : -1, p ? p->busbw : -1, j->status);
    fprintf(js, "%s\n    { \"a\": ", i ? "," : "");
    weftx_json_string(js, j->host_a);
    fprintf(js, ", \"b\": ");
    weftx_json_string(js, j->host_b);
    fprintf(js, ", \"busbw\": ");
    bench_json_num(js, p && j->status == 0 ? p->busbw : NAN);
    fprintf(js, ", \"exit_status\": %d }", j->status);
  }
  scale_slowest(s->pairs, s->npairs, largest(o), &v);
  slow_name(s, &v, what, sizeof(what));
  fprintf(js, " ],\n  \"slowest\": ");
  if (v.kind == SCALE_SLOW_HOST || v.kind == SCALE_SLOW_LINK)
    weftx_json_string(js, what);
  else
    fputs("null", js);
  fprintf(js, ",\n  \"status\": ");
  weftx_json_string(js, status == BENCH_EXIT_OK ? "OK" : "FAILED");
  fprintf(js, ",\n  \"exit_status\": %d\n}\n", status);
}

int scale_write_files(const struct scale *s, int status)
{
  const struct scale_opts *o = &s->o;
  char path[PATH_MAX];
  FILE *csv, *js, *pairs;

  snprintf(path, sizeof(path), "%s/scale.csv", o->out);
  csv = fopen(path, "w");
  snprintf(path, sizeof(path), "%s/scale.json", o->out);
  js = fopen(path, "w");
  snprintf(path, sizeof(path), "%s/pairs.csv", o->out);
  pairs = fopen(path, "w");
  if (!csv || !js || !pairs) {
    fprintf(stderr, "weft-bench scale: cannot write in %s: %s\n", o->out, strerror(errno));
    if (csv) fclose(csv);
    if (js) fclose(js);
    if (pairs) fclose(pairs);
    return BENCH_EXIT_RUNTIME;
  }
  write_csv(s, csv);
  write_json(s, status, js, pairs);
  if ((fclose(csv) | fclose(js) | fclose(pairs)) != 0) {
    fprintf(stderr, "weft-bench scale: cannot write in %s\n", o->out);
    return BENCH_EXIT_RUNTIME;
  }
  return 0;
}

/* The gnuplot script: busbw against the node count, one line per size. */
static int write_gp(const struct scale *s, const char *path)
{
  const struct scale_opts *o = &s->o;
  FILE *f = fopen(path, "w");

  if (!f) {
    fprintf(stderr, "weft-bench scale: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f, "# weft-bench scale: busbw against the node count, one line per size (measured),\n"
          "# points for the prediction. Run in this directory: gnuplot scale.gp\n"
          "set datafile separator ','\n"
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 900,600; set output 'scale.png'\n"
          "} else { if (strstrt(GPVAL_TERMINALS, ' png ') > 0) {\n"
          "  set terminal png size 900,600; set output 'scale.png'\n"
          "} else {\n  set terminal svg size 900,600; set output 'scale.svg'\n} }\n"
          "set title 'weft-bench scale: %s, %ld rank%s per node'\n"
          "set xlabel 'nodes'; set ylabel 'busbw (GB/s)'\n"
          "set logscale x 2; set grid; set key top right\n"
          "sizes = '", o->coll->name, o->ppn, o->ppn == 1 ? "" : "s");
  for (int k = 0; k < o->nsizes; k++)
    fprintf(f, "%s%zu", k ? " " : "", o->sizes[k]);
  fprintf(f, "'\n"
          "plot for [i=1:words(sizes)] 'scale.csv' using 2:((strcol(1) eq 'measured' && "
          "strcol(4) eq word(sizes, i)) ? $7 : 1/0) with linespoints linecolor i "
          "title word(sizes, i).' B', \\\n"
          "     for [i=1:words(sizes)] 'scale.csv' using 2:((strcol(1) eq 'predicted' && "
          "strcol(4) eq word(sizes, i)) ? $7 : 1/0) with points pointtype 6 linecolor i "
          "title word(sizes, i).' B (predicted)'\n");
  return fclose(f) != 0 ? -1 : 0;
}

void scale_write_plot(const struct scale *s)
{
  const struct scale_opts *o = &s->o;
  char path[PATH_MAX], png[PATH_MAX], svg[PATH_MAX], log[PATH_MAX];
  char *argv[] = { "/bin/sh", "-c", "cd \"$1\" && exec gnuplot scale.gp", "sh",
                   (char *)o->out, NULL };
  struct scale_job job;
  int measured = 0, started;

  snprintf(path, sizeof(path), "%s/scale.gp", o->out);
  if (write_gp(s, path) != 0)
    return;
  for (int i = 0; i < s->njobs; i++)
    measured += s->jobs[i].status == 0 && s->jobs[i].npts > 0;
  if (!measured) {
    printf("# plot: nothing measured, no plot (%s is written)\n", path);
    return;
  }
  snprintf(png, sizeof(png), "%s/scale.png", o->out);
  snprintf(svg, sizeof(svg), "%s/scale.svg", o->out);
  snprintf(log, sizeof(log), "%s/gnuplot.log", o->out);
  remove(png);
  remove(svg);
  /* Like a job: in its own process group, ended at the deadline (124). */
  memset(&job, 0, sizeof(job));
  job.status = -1;
  started = scale_run_job(argv, "/dev/null", log, PLOT_TIMEOUT_S, &job) == 0;
  if (access(png, R_OK) == 0 || access(svg, R_OK) == 0)
    printf("# plot: %s\n", access(png, R_OK) == 0 ? png : svg);
  else if (started && job.status == 127)
    printf("# plot: gnuplot is not installed; %s is ready for it (gnuplot scale.gp)\n", path);
  else if (job.status == 124)
    printf("# plot: gnuplot made no plot of %s within %d s (see %s)\n", path, PLOT_TIMEOUT_S,
           log);
  else
    printf("# plot: gnuplot failed on %s (exit %d; see %s)\n", path, job.status, log);
}
