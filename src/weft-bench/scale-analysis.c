/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The analysis of weft-bench scale's results, pure functions of the jobs:
 * the alpha-beta model of each run (time = alpha + bytes * beta, weighted
 * least squares over its sizes), the prediction for node counts that were
 * not measured, the scaling efficiency against a reference run, the slowest
 * link or host of the ring of pairs, and the exit status.
 *
 * The prediction is a ring model and the output says so: the latency term
 * grows linearly with the number of ranks (a ring has n - 1 steps), and the
 * bus bandwidth stays at the value fitted on the largest run (a ring's busbw
 * does not depend on n when the bottleneck is each node's NIC).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scale.h"

/* Weighted by 1 / time^2, so that the fit follows relative errors: times
 * span orders of magnitude, and an unweighted fit would let the largest size
 * alone decide alpha. */
void scale_fit(struct scale_job *job)
{
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, det;

  job->alpha_us = job->beta_us_per_byte = NAN;
  for (int i = 0; i < job->npts; i++) {
    double x = (double)job->pts[i].bytes, y = job->pts[i].time_us, w;

    if (!(y > 0))
      continue;
    w = 1 / (y * y);
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    n++;
  }
  det = sw * sxx - sx * sx;
  if (n < 2 || !(fabs(det) > 0))
    return;
  job->beta_us_per_byte = (sw * sxy - sx * sy) / det;
  job->alpha_us = (sy - job->beta_us_per_byte * sx) / sw;
}

const struct scale_point *scale_point_at(const struct scale_job *job, size_t bytes)
{
  for (int i = 0; i < job->npts; i++)
    if (job->pts[i].bytes == bytes)
      return &job->pts[i];
  return NULL;
}

double scale_predict(const struct scale_job *jobs, int njobs, int ranks,
                     double (*factor_of)(int), size_t bytes)
{
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, a0, a1, det, busbw_inf = NAN;
  const struct scale_job *last = NULL;

  for (int i = 0; i < njobs; i++) {
    const struct scale_job *j = &jobs[i];
    double x = j->ranks - 1;

    if (j->status != 0 || isnan(j->alpha_us) || j->ranks < 2)
      continue;
    sx += x;
    sy += j->alpha_us;
    sxx += x * x;
    sxy += x * j->alpha_us;
    n++;
    if (!last || j->ranks > last->ranks)
      last = j;
  }
  if (!last || !(last->beta_us_per_byte > 0))
    return NAN;
  /* algbw at infinite size is 1 / beta (bytes per us); busbw = algbw x factor. */
  busbw_inf = factor_of(last->ranks) / last->beta_us_per_byte;
  det = n * sxx - sx * sx;
  if (n >= 2 && fabs(det) > 0) {
    a1 = (n * sxy - sx * sy) / det;
    a0 = (sy - a1 * sx) / n;
  } else {
    a0 = 0;
    a1 = last->alpha_us / (last->ranks - 1);
  }
  return fmax(a0 + a1 * (ranks - 1), 0) + (double)bytes * factor_of(ranks) / busbw_inf;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

double scale_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void scale_job_finish(struct scale_job *job, double (*factor_of)(int))
{
  for (int i = 0; i < job->npts; i++) {
    struct scale_point *p = &job->pts[i];

    if (p->time_us > 0) {
      p->algbw = (double)p->bytes / p->time_us / 1e3;
      p->busbw = p->algbw * factor_of(job->ranks);
    }
  }
  scale_fit(job);
}

double scale_busbw_at(const struct scale_job *job, size_t bytes)
{
  const struct scale_point *p = job->status == 0 ? scale_point_at(job, bytes) : NULL;

  return p ? p->busbw : -1;
}

static const struct scale_job *reference(const struct scale_job *jobs, int njobs)
{
  for (int i = 0; i < njobs; i++)
    if (jobs[i].nodes >= 2 && jobs[i].status == 0)
      return &jobs[i];
  for (int i = 0; i < njobs; i++)
    if (jobs[i].ranks >= 2 && jobs[i].status == 0)
      return &jobs[i];
  return NULL;
}

double scale_efficiency(const struct scale_job *jobs, int njobs, const struct scale_job *j,
                        size_t bytes)
{
  const struct scale_job *ref = reference(jobs, njobs);
  double b0 = ref ? scale_busbw_at(ref, bytes) : -1, b = scale_busbw_at(j, bytes);

  if (!ref || j->nodes < ref->nodes || j->ranks < 2 || !(b0 > 0) || b < 0)
    return NAN;
  return b / b0;
}

int scale_predictions(const struct scale_job *jobs, int njobs, int maxnodes, int ppn,
                      double (*factor_of)(int), const size_t *sizes, int nsizes,
                      struct scale_prediction *out)
{
  static const int mult[SCALE_PREDICT_N] = { 2, 4, 8 };
  int n = 0;

  for (int m = 0; m < SCALE_PREDICT_N; m++)
    for (int k = 0; k < nsizes; k++) {
      int nodes = maxnodes * mult[m], ranks = nodes * ppn;
      double t = scale_predict(jobs, njobs, ranks, factor_of, sizes[k]);

      if (isnan(t))
        continue;
      out[n].nodes = nodes;
      out[n].ranks = ranks;
      out[n].bytes = sizes[k];
      out[n].time_us = t;
      out[n].algbw = (double)sizes[k] / t / 1e3;
      out[n].busbw = out[n].algbw * factor_of(ranks);
      n++;
    }
  return n;
}

/* Below this fraction of the median a link is slow. */
#define SLOW_FRACTION 0.8

void scale_slowest(const struct scale_job *pairs, int npairs, size_t bytes,
                   struct scale_slowest *out)
{
  double bw[SCALE_MAX_PAIRS];
  int worst = -1, prev, next;

  memset(out, 0, sizeof(*out));
  out->kind = SCALE_SLOW_UNJUDGED;
  out->link = -1;
  if (npairs > SCALE_MAX_PAIRS)
    npairs = SCALE_MAX_PAIRS;
  for (int i = 0; i < npairs; i++) {
    double b = scale_busbw_at(&pairs[i], bytes);

    if (b < 0)
      continue;
    bw[out->measured++] = b;
    if (worst < 0 || b < scale_busbw_at(&pairs[worst], bytes))
      worst = i;
  }
  if (out->measured < 3 || worst < 0)
    return;
  out->busbw = scale_busbw_at(&pairs[worst], bytes);
  out->median = scale_median(bw, out->measured);
  if (!(out->busbw < SLOW_FRACTION * out->median)) {
    out->kind = SCALE_SLOW_NONE;
    return;
  }
  out->link = worst;
  /* A host is slow when both its links are: the worst link and a neighbour. */
  prev = (worst + npairs - 1) % npairs;
  next = (worst + 1) % npairs;
  if (scale_busbw_at(&pairs[prev], bytes) < SLOW_FRACTION * out->median) {
    out->kind = SCALE_SLOW_HOST;
    out->host = pairs[worst].host_a;
  } else if (scale_busbw_at(&pairs[next], bytes) < SLOW_FRACTION * out->median) {
    out->kind = SCALE_SLOW_HOST;
    out->host = pairs[worst].host_b;
  } else {
    out->kind = SCALE_SLOW_LINK;
  }
}

int scale_status(const struct scale_job *jobs, int njobs, const struct scale_job *pairs,
                 int npairs)
{
  int status = BENCH_EXIT_OK;

  for (int i = 0; i < njobs + npairs; i++) {
    const struct scale_job *j = i < njobs ? &jobs[i] : &pairs[i - njobs];

    for (int k = 0; k < j->npts; k++)
      if (j->pts[k].wrong > 0)
        status = BENCH_EXIT_WRONG;
    if (j->status != 0 && status == BENCH_EXIT_OK)
      status = BENCH_EXIT_RUNTIME;
  }
  return status;
}
