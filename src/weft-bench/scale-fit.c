/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic of weft-bench scale: the alpha-beta model of each run
 * (time = alpha + bytes * beta, weighted least squares over its sizes), and the
 * prediction for node counts that were not measured. The prediction is a
 * ring model and says so in the output: the latency term grows linearly
 * with the number of ranks (a ring has n - 1 steps), and the bus bandwidth
 * stays at the value fitted on the largest run (a ring's busbw does not
 * depend on n when the bottleneck is each node's NIC).
 */
#include <math.h>
#include <stdlib.h>

#include "driver.h"
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
