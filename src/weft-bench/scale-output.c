/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The output of weft-bench scale: the table of busbw (the median of the
 * repeats, with their spread) and scaling efficiency, the alpha-beta fit and
 * prediction, the pairs and the links that stand out, the verdict against the
 * machine family's healthy range (on stdout, '#'-commented except the rows),
 * and the files: DIR/scale.csv (measured and predicted points, size by size),
 * DIR/scale.json, DIR/pairs.csv and DIR/scale.gp with the plot gnuplot draws
 * from it. What the numbers mean is scale-analysis.c's business; this file
 * only writes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scale.h"

#define PLOT_TIMEOUT_S 60 /* gnuplot draws the plot in well under a second */

static size_t largest(const struct scale_opts *o) { return o->sizes[o->nsizes - 1]; }

/* "64 KiB", "1 MiB", "1.5 GiB", "1000 B". */
static void human(size_t bytes, char *buf, size_t len)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;

  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (v == floor(v))
    snprintf(buf, len, "%.0f %s", v, units[u]);
  else
    snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* The predictions for the largest node count x 2, 4, 8 at every size. */
static int predictions(const struct scale *s, struct scale_prediction *out)
{
  const struct scale_opts *o = &s->o;

  return scale_predictions(s->jobs, s->njobs, o->counts[o->ncounts - 1], (int)o->ppn,
                           o->coll->busbw_factor, o->sizes, o->nsizes, out);
}

/* "host vm-2 (both its links)" or "link vm-1 <-> vm-2". */
static void outlier_name(const struct scale *s, const struct scale_outlier *x, char *buf,
                         size_t len)
{
  if (x->host)
    snprintf(buf, len, "host %s (both its links)", x->host);
  else
    snprintf(buf, len, "link %s <-> %s", s->pairs[x->link].host_a, s->pairs[x->link].host_b);
}

static void print_measured(const struct scale *s, FILE *f)
{
  const struct scale_opts *o = &s->o;

  fprintf(f,
          "#\n# each figure is the median of %ld run%s (--repeat); spread = (fastest - "
          "slowest busbw) / median busbw\n",
          o->repeat, o->repeat == 1 ? "" : "s");
  fprintf(f, "# %5s %6s %12s %12s %10s %10s %7s %10s\n", "nodes", "ranks", "size(B)", "time(us)",
          "algbw", "busbw", "spread", "efficiency");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    for (int k = 0; k < o->nsizes; k++) {
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = scale_efficiency(s->jobs, s->njobs, j, o->sizes[k]);
      double sp = p ? scale_spread(p) : NAN;
      char eff[16], spread[16];

      snprintf(eff, sizeof(eff), isnan(e) ? "-" : "%.2f", e);
      snprintf(spread, sizeof(spread), isnan(sp) ? "-" : "%.0f%%", 100 * sp);
      if (p && p->time_us > 0)
        fprintf(f, "  %5d %6d %12zu %12.2f %10.3f %10.3f %7s %10s\n", j->nodes, j->ranks, p->bytes,
                p->time_us, p->algbw, p->busbw, spread, eff);
      else
        fprintf(f, "  %5d %6d %12zu %12s %10s %10s %7s %10s\n", j->nodes, j->ranks, o->sizes[k],
                "FAILED", "-", "-", "-", "-");
    }
  }
}

/* Why a run's fit is no model. */
static const char *no_model(const struct scale_job *j)
{
  if (j->status)
    return "the run failed";
  if (isnan(j->alpha_us))
    return "it needs 2 sizes or more";
  if (!(j->beta_us_per_byte > 0))
    return "time does not grow with size: too noisy, use larger sizes or more --iters";
  return "the fitted latency is negative: the times are too noisy for a latency to show; "
         "add smaller sizes or more --iters";
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

    if (!scale_fit_valid(j)) {
      fprintf(f, "# %5d %6d   no model (%s)\n", j->nodes, j->ranks, no_model(j));
      continue;
    }
    fprintf(f, "# %5d %6d %12.2f %16.3f %16.3f\n", j->nodes, j->ranks, j->alpha_us,
            1e-3 / j->beta_us_per_byte,
            1e-3 / j->beta_us_per_byte * o->coll->busbw_factor(j->ranks));
    fitted |= j->ranks >= 2;
  }
  if (!fitted)
    return;
  fprintf(f,
          "#\n# prediction (ring model: latency grows with ranks - 1, busbw stays at the fit of "
          "the largest run):\n# %5s %6s %12s %12s %10s\n",
          "nodes", "ranks", "size(B)", "time(us)", "busbw");
  npred = predictions(s, pred);
  for (int i = 0; i < npred; i++)
    if (pred[i].bytes == largest(o))
      fprintf(f, "# %5d %6d %12zu %12.2f %10.3f\n", pred[i].nodes, pred[i].ranks, pred[i].bytes,
              pred[i].time_us, pred[i].busbw);
}

static void print_pairs(const struct scale *s, FILE *f)
{
  struct scale_links v;
  char bw[16], what[600];

  if (!s->npairs)
    return;
  fprintf(f,
          "#\n# pairs: %s between neighbouring hosts, 1 rank each, %zu bytes (median of %ld "
          "run%s):\n",
          bench_coll_pairwise()->name, largest(&s->o), s->o.repeat, s->o.repeat == 1 ? "" : "s");
  for (int i = 0; i < s->npairs; i++) {
    const struct scale_point *p = scale_point_at(&s->pairs[i], largest(&s->o));
    double sp = p ? scale_spread(p) : NAN, b = scale_busbw_at(&s->pairs[i], largest(&s->o));

    if (b < 0)
      snprintf(bw, sizeof(bw), "%9s", "N/A");
    else
      snprintf(bw, sizeof(bw), "%9.3f", b);
    fprintf(f, "#   %-20s <-> %-20s busbw %9s GB/s", s->pairs[i].host_a, s->pairs[i].host_b, bw);
    if (!isnan(sp))
      fprintf(f, ", spread %.0f%%", 100 * sp);
    fprintf(f, "%s\n", s->pairs[i].status ? " (FAILED)" : "");
  }
  scale_judge_links(s->pairs, s->npairs, largest(&s->o), &v);
  if (v.measured < 3) {
    fprintf(f, "# links: not judged (%d link%s measured; 3 or more are needed to compare)\n",
            v.measured, v.measured == 1 ? "" : "s");
    return;
  }
  if (!v.nout) {
    fprintf(f,
            "# links: none stands out (every link within %.2f-%.2f x the median %.3f GB/s "
            "of %d links)\n",
            SCALE_SLOW, SCALE_FAST, v.median, v.measured);
    return;
  }
  fprintf(f, "# links: %d of %d stand%s out from the median %.3f GB/s (outside %.2f-%.2f x):\n",
          v.nout, v.measured, v.nout == 1 ? "s" : "", v.median, SCALE_SLOW, SCALE_FAST);
  for (int i = 0; i < v.nout; i++) {
    const struct scale_outlier *x = &v.out[i];

    outlier_name(s, x, what, sizeof(what));
    fprintf(f, "#   %s: %.3f GB/s, %.2f x the median: %s\n", what, x->busbw, x->ratio,
            x->faster ? "FASTER than the others (a shorter path, or the others share a "
                        "bottleneck: check them too)"
                      : "SLOWER than the others");
  }
}

/* One comparable run against the family's range, in words. */
static const char *against(const struct bench_expect *e, double busbw)
{
  switch (scale_health(e, busbw)) {
  case SCALE_HEALTH_BELOW: return "BELOW the healthy range";
  case SCALE_HEALTH_INSIDE: return "inside the healthy range";
  case SCALE_HEALTH_ABOVE:
    return "above the best published figure: check the measurement (on 2 nodes a tree "
           "all-reduce can reach twice the network)";
  default: return "no published range";
  }
}

/* With a known machine family: each run at the largest size against its
 * healthy range, or why it is not compared (one node, host memory). */
static void print_machine(const struct scale *s, FILE *f)
{
  struct bench_expect e;
  char why[256], size[32];

  if (bench_expect_lookup(&e) != 0)
    return;
  human(largest(&s->o), size, sizeof(size));
  fprintf(f, "#\n# machine %s (from %s): ", e.machine, e.source);
  if (e.healthy_lo > 0 && e.healthy_hi > 0)
    fprintf(f, "healthy busbw %.0f-%.0f GB/s", e.healthy_lo, e.healthy_hi);
  else if (e.healthy_lo > 0)
    fprintf(f, "healthy busbw %.0f GB/s or more", e.healthy_lo);
  else
    fprintf(f, "no published healthy busbw");
  fprintf(f,
          ", ring ceiling %.1f GB/s (GPU memory across VMs of 8 GPUs, all_gather, large "
          "messages)\n",
          e.ceiling);
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];
    double b = scale_busbw_at(j, largest(&s->o));

    fprintf(f, "#   %d node%s, %s: ", j->nodes, j->nodes == 1 ? "" : "s", size);
    if (!scale_comparable(j, why, sizeof(why)))
      fprintf(f, "not compared (%s)\n", why);
    else if (b < 0)
      fprintf(f, "no figure (the run failed)\n");
    else
      fprintf(f, "busbw %.3f GB/s, %.0f%% of the ceiling: %s\n", b, 100 * b / e.ceiling,
              against(&e, b));
  }
}

int scale_shared(const struct scale *s)
{
  for (int i = 0; i < s->njobs; i++)
    if (s->jobs[i].shared)
      return 1;
  for (int i = 0; i < s->npairs; i++)
    if (s->pairs[i].shared)
      return 1;
  return 0;
}

/* Said plainly: runs whose ranks shared cores measure the sharing. */
static void print_shared(const struct scale *s, FILE *f)
{
  char nodes[128] = "";
  size_t used = 0;
  int pairs = 0;

  if (!scale_shared(s))
    return;
  for (int i = 0; i < s->njobs; i++)
    if (s->jobs[i].shared && used < sizeof(nodes)) {
      int r =
        snprintf(nodes + used, sizeof(nodes) - used, "%s%d", used ? ", " : "", s->jobs[i].nodes);
      used = r > 0 ? used + (size_t)r : used;
    }
  for (int i = 0; i < s->npairs; i++)
    pairs |= s->pairs[i].shared;
  fprintf(f,
          "#\n# ranks share cores: in the runs on %s%s%s the nodes are one machine (one boot "
          "id, as a virtual cluster's are) or it has fewer processors than ranks, so their times "
          "and efficiencies measure how the ranks share its cores, not how the collective scales; "
          "run on separate machines to measure scaling\n",
          nodes[0] ? nodes : "", nodes[0] ? (!strcmp(nodes, "1") ? " node" : " nodes") : "",
          pairs ? (nodes[0] ? " and the pairs" : "the pairs") : "");
}

void scale_print(const struct scale *s, FILE *f)
{
  print_measured(s, f);
  print_shared(s, f);
  print_fit(s, f);
  print_pairs(s, f);
  print_machine(s, f);
}

/* scale.csv, size by size so that a plot's lines join the points of one size. */
static void write_csv(const struct scale *s, FILE *csv)
{
  const struct scale_opts *o = &s->o;
  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  int npred = predictions(s, pred);

  fprintf(csv, "kind,nodes,ranks,size,time_us,algbw,busbw,efficiency,wrong,busbw_min,busbw_max,"
               "repeats\n");
  for (int k = 0; k < o->nsizes; k++)
    for (int i = 0; i < s->njobs; i++) {
      const struct scale_job *j = &s->jobs[i];
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = scale_efficiency(s->jobs, s->njobs, j, o->sizes[k]);

      if (!p || p->time_us <= 0)
        continue;
      fprintf(csv, "measured,%d,%d,%zu,%.3f,%.6f,%.6f,", j->nodes, j->ranks, p->bytes, p->time_us,
              p->algbw, p->busbw);
      if (!isnan(e))
        fprintf(csv, "%.4f", e);
      fprintf(csv, ",%lld,%.6f,%.6f,%d\n", p->wrong, p->busbw_lo, p->busbw_hi, p->nrep);
    }
  for (int k = 0; k < o->nsizes; k++)
    for (int i = 0; i < npred; i++)
      if (pred[i].bytes == o->sizes[k])
        fprintf(csv, "predicted,%d,%d,%zu,%.3f,%.6f,%.6f,,,,,\n", pred[i].nodes, pred[i].ranks,
                pred[i].bytes, pred[i].time_us, pred[i].algbw, pred[i].busbw);
}

static void write_json_point(const struct scale *s, const struct scale_job *j,
                             const struct scale_point *p, FILE *js)
{
  fprintf(js, "{ \"size\": %zu, \"time_us\": ", p->bytes);
  bench_json_num(js, p->time_us);
  fprintf(js, ", \"algbw\": ");
  bench_json_num(js, p->algbw);
  fprintf(js, ", \"busbw\": ");
  bench_json_num(js, p->busbw);
  fprintf(js, ", \"busbw_min\": ");
  bench_json_num(js, p->busbw_lo);
  fprintf(js, ", \"busbw_max\": ");
  bench_json_num(js, p->busbw_hi);
  fprintf(js, ", \"spread\": ");
  bench_json_num(js, scale_spread(p));
  fprintf(js, ", \"repeats\": %d", p->nrep);
  if (s) {
    fprintf(js, ", \"efficiency\": ");
    bench_json_num(js, scale_efficiency(s->jobs, s->njobs, j, p->bytes));
  }
  fprintf(js, ", \"wrong\": %lld }", p->wrong);
}

static void write_json_run(const struct scale *s, const struct scale_job *j, FILE *js)
{
  fprintf(js,
          "    { \"nodes\": %d, \"ranks\": %d, \"exit_status\": %d, \"runs\": %d, "
          "\"seconds\": %.2f, \"memory\": \"%s\", \"model\": %s, \"alpha_us\": ",
          j->nodes, j->ranks, j->status, j->runs, j->seconds, j->device ? "device" : "host",
          scale_fit_valid(j) ? "true" : "false");
  bench_json_num(js, scale_fit_valid(j) ? j->alpha_us : NAN);
  fprintf(js, ", \"bandwidth_gbs\": ");
  bench_json_num(js, j->beta_us_per_byte > 0 ? 1e-3 / j->beta_us_per_byte : NAN);
  fprintf(js, ",\n      \"results\": [");
  for (int k = 0; k < j->npts; k++) {
    fprintf(js, "%s\n        ", k ? "," : "");
    write_json_point(s, j, &j->pts[k], js);
  }
  fprintf(js, " ] }");
}

/* "links": the median and the outliers, and "slowest" (the slowest one
 * standing out, or null) as version 1 had it. */
static void write_json_links(const struct scale *s, FILE *js)
{
  struct scale_links v;
  char what[600];
  int slowest = -1;

  scale_judge_links(s->pairs, s->npairs, largest(&s->o), &v);
  fprintf(js, ",\n  \"links\": { \"measured\": %d, \"median_busbw\": ", v.measured);
  bench_json_num(js, v.measured >= 3 ? v.median : NAN);
  fprintf(js, ", \"judged\": %s, \"outliers\": [", v.measured >= 3 ? "true" : "false");
  for (int i = 0; i < v.nout; i++) {
    const struct scale_outlier *x = &v.out[i];

    outlier_name(s, x, what, sizeof(what));
    fprintf(js, "%s\n    { \"what\": ", i ? "," : "");
    weftx_json_string(js, what);
    fprintf(js, ", \"way\": \"%s\", \"busbw\": ", x->faster ? "faster" : "slower");
    bench_json_num(js, x->busbw);
    fprintf(js, ", \"ratio\": ");
    bench_json_num(js, x->ratio);
    fprintf(js, " }");
    if (!x->faster && (slowest < 0 || x->ratio < v.out[slowest].ratio))
      slowest = i;
  }
  fprintf(js, " ] },\n  \"slowest\": ");
  if (slowest >= 0) {
    outlier_name(s, &v.out[slowest], what, sizeof(what));
    weftx_json_string(js, what);
  } else {
    fputs("null", js);
  }
}

static void write_json_machine(const struct scale *s, FILE *js)
{
  struct bench_expect e;
  char why[256];

  fprintf(js, ",\n  \"machine\": ");
  if (bench_expect_lookup(&e) != 0) {
    fputs("null", js);
    return;
  }
  fputs("{ \"type\": ", js);
  weftx_json_string(js, e.machine);
  fprintf(js, ", \"busbw_ceiling\": %.1f, \"healthy_busbw_min\": ", e.ceiling);
  bench_json_num(js, e.healthy_lo > 0 ? e.healthy_lo : NAN);
  fprintf(js, ", \"healthy_busbw_max\": ");
  bench_json_num(js, e.healthy_hi > 0 ? e.healthy_hi : NAN);
  fprintf(js, ", \"verdicts\": [");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];
    double b = scale_busbw_at(j, largest(&s->o));
    int ok = scale_comparable(j, why, sizeof(why));

    fprintf(js, "%s\n    { \"nodes\": %d, \"size\": %zu, \"busbw\": ", i ? "," : "", j->nodes,
            largest(&s->o));
    bench_json_num(js, b);
    fprintf(js, ", \"verdict\": ");
    weftx_json_string(js, !ok ? "not compared" : b < 0 ? "no figure" : against(&e, b));
    if (!ok) {
      fprintf(js, ", \"why\": ");
      weftx_json_string(js, why);
    }
    fprintf(js, " }");
  }
  fprintf(js, " ] }");
}

/* scale.json, and pairs.csv beside its pairs. */
static void write_json(const struct scale *s, int status, FILE *js, FILE *pairs)
{
  const struct scale_opts *o = &s->o;
  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  int npred = predictions(s, pred);

  fprintf(js, "{\n  \"version\": 2,\n  \"tool\": \"weft-bench scale\",\n  \"collective\": ");
  weftx_json_string(js, o->coll->name);
  fprintf(js, ",\n  \"hostfile\": ");
  weftx_json_string(js, o->hostfile);
  fprintf(js, ",\n  \"launcher\": ");
  weftx_json_string(js, s->launcher);
  fprintf(js, ",\n  \"ppn\": %ld,\n  \"iters\": %ld,\n  \"repeat\": %ld,\n  \"sizes\": [", o->ppn,
          o->iters, o->repeat);
  for (int k = 0; k < o->nsizes; k++)
    fprintf(js, "%s%zu", k ? ", " : "", o->sizes[k]);
  fprintf(js, "],\n  \"runs\": [\n");
  for (int i = 0; i < s->njobs; i++) {
    write_json_run(s, &s->jobs[i], js);
    fprintf(js, "%s\n", i + 1 < s->njobs ? "," : "");
  }
  fprintf(js, "  ],\n  \"predictions\": [");
  for (int i = 0; i < npred; i++)
    fprintf(js,
            "%s\n    { \"nodes\": %d, \"ranks\": %d, \"size\": %zu, \"time_us\": %.3f, "
            "\"busbw\": %.6f }",
            i ? "," : "", pred[i].nodes, pred[i].ranks, pred[i].bytes, pred[i].time_us,
            pred[i].busbw);
  fprintf(js, " ],\n  \"pairs\": [");
  fprintf(pairs, "host_a,host_b,size,time_us,busbw,exit_status,busbw_min,busbw_max,repeats\n");
  for (int i = 0; i < s->npairs; i++) {
    const struct scale_job *j = &s->pairs[i];
    const struct scale_point *p = scale_point_at(j, largest(o));

    fprintf(pairs, "%s,%s,%zu,%.3f,%.6f,%d,%.6f,%.6f,%d\n", j->host_a, j->host_b, largest(o),
            p ? p->time_us : -1, p ? p->busbw : -1, j->status, p ? p->busbw_lo : -1,
            p ? p->busbw_hi : -1, p ? p->nrep : 0);
    fprintf(js, "%s\n    { \"a\": ", i ? "," : "");
    weftx_json_string(js, j->host_a);
    fprintf(js, ", \"b\": ");
    weftx_json_string(js, j->host_b);
    fprintf(js, ", \"busbw\": ");
    bench_json_num(js, p && j->status == 0 ? p->busbw : NAN);
    fprintf(js, ", \"busbw_min\": ");
    bench_json_num(js, p && j->status == 0 ? p->busbw_lo : NAN);
    fprintf(js, ", \"busbw_max\": ");
    bench_json_num(js, p && j->status == 0 ? p->busbw_hi : NAN);
    fprintf(js, ", \"exit_status\": %d }", j->status);
  }
  fprintf(js, " ]");
  write_json_links(s, js);
  write_json_machine(s, js);
  fprintf(js, ",\n  \"shared_cores\": %s", scale_shared(s) ? "true" : "false");
  fprintf(js, ",\n  \"status\": ");
  weftx_json_string(js, status != BENCH_EXIT_OK ? "FAILED"
                        : scale_shared(s)       ? "SHARED CORES"
                                                : "OK");
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
    if (csv)
      fclose(csv);
    if (js)
      fclose(js);
    if (pairs)
      fclose(pairs);
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

/* What the plot has to show: points of 2 ranks or more (a 1-rank run's busbw
 * is 0 by definition), efficiencies, and the family's band when every
 * multi-node run used GPU memory (a host-memory run is not held against it). */
struct plot_facts {
  int points, efficiencies, band;
  int xmin, xmax; /* the node counts the x axis spans */
  double ymax;    /* the largest busbw to show, the band's included */
  double ymin;    /* the smallest busbw above 0 to show (a log axis) */
  struct bench_expect e;
};

static void plot_facts(const struct scale *s, struct plot_facts *pf)
{
  char why[256];
  int multi = 0, comparable = 0;

  struct scale_prediction pred[SCALE_PREDICT_N * BENCH_MAX_SIZES];
  int npred = predictions(s, pred);

  memset(pf, 0, sizeof(*pf));
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    for (int k = 0; k < s->o.nsizes; k++) {
      int point = j->ranks >= 2 && scale_busbw_at(j, s->o.sizes[k]) > 0;

      pf->points += point;
      pf->efficiencies += !isnan(scale_efficiency(s->jobs, s->njobs, j, s->o.sizes[k]));
      if (point && (!pf->xmin || j->nodes < pf->xmin))
        pf->xmin = j->nodes;
      if (point && j->nodes > pf->xmax)
        pf->xmax = j->nodes;
      if (point) {
        const struct scale_point *p = scale_point_at(j, s->o.sizes[k]);
        double lo = p->busbw_lo > 0 ? p->busbw_lo : scale_busbw_at(j, s->o.sizes[k]);
        pf->ymax = fmax(pf->ymax, p->busbw_hi);
        pf->ymin = pf->ymin > 0 ? fmin(pf->ymin, lo) : lo;
      }
    }
    multi += j->nodes >= 2;
    comparable += scale_comparable(j, why, sizeof(why));
  }
  pf->band =
    bench_expect_lookup(&pf->e) == 0 && pf->e.healthy_lo > 0 && multi && comparable == multi;
  for (int i = 0; i < npred; i++) {
    pf->xmax = pred[i].nodes > pf->xmax ? pred[i].nodes : pf->xmax;
    pf->ymax = fmax(pf->ymax, pred[i].busbw);
    if (pred[i].busbw > 0)
      pf->ymin = pf->ymin > 0 ? fmin(pf->ymin, pred[i].busbw) : pred[i].busbw;
  }
  if (pf->band) {
    pf->ymax = fmax(pf->ymax, pf->e.healthy_hi > 0 ? pf->e.healthy_hi : pf->e.ceiling);
    pf->ymin = pf->ymin > 0 ? fmin(pf->ymin, pf->e.healthy_lo) : pf->e.healthy_lo;
  }
}

/* The gnuplot script: busbw against the node count, one line per size, with
 * the spread of the repeats as error bars, the predicted points labelled
 * with their node count (once, at the largest size) and the family's healthy
 * band; below it, on the same axis of nodes, the scaling efficiency. */
static int write_gp(const struct scale *s, const struct plot_facts *pf, const char *path)
{
  const struct scale_opts *o = &s->o;
  FILE *f = fopen(path, "w");
  char label[32];
  double hi;

  if (!f) {
    fprintf(stderr, "weft-bench scale: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f,
          "# weft-bench scale: busbw against the node count, one line per size (measured,\n"
          "# the median of the repeats, bars from the slowest to the fastest), predicted points\n"
          "# labelled with their node count, and the scaling efficiency below.\n"
          "# Runs of 1 rank are left out: their busbw is 0 by definition.\n"
          "# Run in this directory: gnuplot scale.gp\n"
          "set datafile separator ','\n"
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 900,%d; set output 'scale.png'\n"
          "} else { if (strstrt(GPVAL_TERMINALS, ' png ') > 0) {\n"
          "  set terminal png size 900,%d; set output 'scale.png'\n"
          "} else {\n  set terminal svg size 900,%d; set output 'scale.svg'\n} }\n",
          pf->efficiencies ? 900 : 600, pf->efficiencies ? 900 : 600, pf->efficiencies ? 900 : 600);
  fprintf(f, "sizes = '");
  for (int k = 0; k < o->nsizes; k++)
    fprintf(f, "%s%zu", k ? " " : "", o->sizes[k]);
  fprintf(f, "'\narray label[%d] = [", o->nsizes);
  for (int k = 0; k < o->nsizes; k++) {
    human(o->sizes[k], label, sizeof(label));
    fprintf(f, "%s'%s'", k ? ", " : "", label);
  }
  fprintf(f, "]\nmeasured(i) = strcol(1) eq 'measured' && $3 >= 2 && strcol(4) eq word(sizes, i)\n"
             "predicted(i) = strcol(1) eq 'predicted' && strcol(4) eq word(sizes, i)\n");
  if (pf->efficiencies)
    fprintf(f, "set multiplot layout 2,1 title 'weft-bench scale: %s, %ld rank%s per node'\n",
            o->coll->name, o->ppn, o->ppn == 1 ? "" : "s");
  else
    fprintf(f, "set title 'weft-bench scale: %s, %ld rank%s per node'\n", o->coll->name, o->ppn,
            o->ppn == 1 ? "" : "s");
  /* busbw on a log axis: the sizes' lines and the predictions span decades */
  fprintf(f,
          "set xlabel 'nodes'; set ylabel 'busbw (GB/s, log scale)'\n"
          "set logscale x 2; set logscale y 10; set grid; set key outside right top\n"
          "set lmargin at screen 0.1; set rmargin at screen 0.72\n"
          "set xrange [%g:%g]; set yrange [%g:%g]\n",
          pf->xmin / 1.3, pf->xmax * 1.3, pf->ymin > 0 ? pf->ymin / 2 : 0.001,
          pf->ymax > 0 ? pf->ymax * 2 : 1);
  if (pf->band) {
    hi = pf->e.healthy_hi > 0 ? pf->e.healthy_hi : pf->e.ceiling;
    fprintf(f,
            "set object 1 rect from graph 0, first %g to graph 1, first %g behind "
            "fillcolor rgb '#d8f0d8' fillstyle solid noborder\n"
            "set label 1 '%s healthy busbw %g-%g GB/s' at graph 0.02, first %g offset 0,0.7 "
            "textcolor rgb '#207020'\n",
            pf->e.healthy_lo, hi, pf->e.machine, pf->e.healthy_lo, hi, hi);
  }
  fprintf(f,
          "plot for [i=1:words(sizes)] 'scale.csv' using 2:(measured(i) ? $7 : 1/0):"
          "(measured(i) ? $10 : 1/0):(measured(i) ? $11 : 1/0) with yerrorlines linecolor i "
          "title label[i], \\\n"
          "     for [i=1:words(sizes)] 'scale.csv' using 2:(predicted(i) ? $7 : 1/0) with points "
          "pointtype 6 linecolor i title label[i].' predicted', \\\n"
          "     'scale.csv' using 2:(predicted(words(sizes)) ? $7 : 1/0):(strcol(2).' nodes') "
          "with labels offset 0,1 font ',9' notitle\n");
  if (pf->efficiencies) {
    fprintf(f,
            "unset object 1; unset label 1; unset title; unset logscale y\n"
            "set ylabel 'scaling efficiency'; set yrange [0:*]; set offsets 0, 0, graph 0.1, 0\n"
            "set title 'efficiency: busbw over the busbw of the first multi-node run' font ',10'\n"
            "plot for [i=1:words(sizes)] 'scale.csv' using 2:((measured(i) && strcol(8) ne '') "
            "? $8 : 1/0) with linespoints linecolor i title label[i], 1 with lines dashtype 2 "
            "linecolor rgb 'gray' title 'ideal'\n"
            "unset multiplot\n");
  }
  return fclose(f) != 0 ? -1 : 0;
}

void scale_write_plot(const struct scale *s)
{
  const struct scale_opts *o = &s->o;
  char path[PATH_MAX], png[PATH_MAX], svg[PATH_MAX], log[PATH_MAX];
  char *argv[] = {"/bin/sh", "-c",           "cd \"$1\" && exec gnuplot scale.gp",
                  "sh",      (char *)o->out, NULL};
  struct scale_job job;
  struct plot_facts pf;
  int started;

  snprintf(path, sizeof(path), "%s/scale.gp", o->out);
  plot_facts(s, &pf);
  if (write_gp(s, &pf, path) != 0)
    return;
  if (!pf.points) {
    printf("# plot: nothing to plot (no run of 2 ranks or more succeeded; %s is written)\n", path);
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
    printf("# plot: gnuplot made no plot of %s within %d s (see %s)\n", path, PLOT_TIMEOUT_S, log);
  else
    printf("# plot: gnuplot failed on %s (exit %d; see %s)\n", path, job.status, log);
}
