/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The analysis of weft-bench scale's results, pure functions of the jobs:
 * the median and spread of the repeats, the alpha-beta model of each run
 * (time = alpha + bytes * beta, weighted least squares over its sizes), the
 * prediction for node counts that were not measured, the scaling efficiency
 * against a reference run, the links or hosts of the ring of pairs that
 * stand out (slower or faster), whether a run may be held against a machine
 * family's healthy range, and the exit status.
 *
 * The prediction is a ring model and the output says so: the latency term
 * grows linearly with the number of ranks (a ring has n - 1 steps), and the
 * bus bandwidth stays at the value fitted on the largest run (a ring's busbw
 * does not depend on n when the bottleneck is each node's NIC).
 */
#include <math.h>
#include <stdio.h>
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

int scale_fit_valid(const struct scale_job *job)
{
  return job->status == 0 && job->alpha_us >= 0 && job->beta_us_per_byte > 0;
}

double scale_spread(const struct scale_point *p)
{
  return p->nrep >= 2 && p->busbw > 0 ? (p->busbw_hi - p->busbw_lo) / p->busbw : NAN;
}

const struct scale_point *scale_point_at(const struct scale_job *job, size_t bytes)
{
  for (int i = 0; i < job->npts; i++)
    if (job->pts[i].bytes == bytes)
      return &job->pts[i];
  return NULL;
}

double scale_predict(const struct scale_job *jobs, int njobs, int ranks, double (*factor_of)(int),
                     size_t bytes)
{
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, a0, a1, det, busbw_inf = NAN;
  const struct scale_job *last = NULL;

  for (int i = 0; i < njobs; i++) {
    const struct scale_job *j = &jobs[i];
    double x = j->ranks - 1;

    if (!scale_fit_valid(j) || j->ranks < 2)
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

/* busbw at \p time_us us for \p bytes bytes on \p ranks ranks. */
static double busbw_of(size_t bytes, double time_us, int ranks, double (*factor_of)(int))
{
  return time_us > 0 ? (double)bytes / time_us / 1e3 * factor_of(ranks) : -1;
}

void scale_job_finish(struct scale_job *job, double (*factor_of)(int))
{
  for (int i = 0; i < job->npts; i++) {
    struct scale_point *p = &job->pts[i];
    double sorted[SCALE_MAX_REPEAT];

    p->time_us = p->algbw = p->busbw = p->busbw_lo = p->busbw_hi = -1;
    if (p->nrep == 0)
      continue;
    memcpy(sorted, p->times, (size_t)p->nrep * sizeof(double));
    p->time_us = scale_median(sorted, p->nrep);
    if (p->time_us > 0)
      p->algbw = (double)p->bytes / p->time_us / 1e3;
    p->busbw = busbw_of(p->bytes, p->time_us, job->ranks, factor_of);
    p->busbw_lo = busbw_of(p->bytes, sorted[p->nrep - 1], job->ranks, factor_of);
    p->busbw_hi = busbw_of(p->bytes, sorted[0], job->ranks, factor_of);
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
  static const int mult[SCALE_PREDICT_N] = {2, 4, 8};
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

/* A link outside [SCALE_SLOW, SCALE_FAST] x the median: 1 faster, -1 slower, 0 neither. */
static int way(double busbw, double median)
{
  if (busbw < 0)
    return 0;
  return busbw > SCALE_FAST * median ? 1 : busbw < SCALE_SLOW * median ? -1 : 0;
}

static int cmp_outlier(const void *a, const void *b)
{
  const struct scale_outlier *x = a, *y = b;
  double dx = fabs(log(x->ratio)), dy = fabs(log(y->ratio));

  return dx > dy ? -1 : dx < dy;
}

void scale_judge_links(const struct scale_job *pairs, int npairs, size_t bytes,
                       struct scale_links *out)
{
  double bw[SCALE_MAX_PAIRS], all[SCALE_MAX_PAIRS];
  int dir[SCALE_MAX_PAIRS], told[SCALE_MAX_PAIRS];

  memset(out, 0, sizeof(*out));
  if (npairs > SCALE_MAX_PAIRS)
    npairs = SCALE_MAX_PAIRS;
  for (int i = 0; i < npairs; i++) {
    bw[i] = scale_busbw_at(&pairs[i], bytes);
    if (bw[i] >= 0)
      all[out->measured++] = bw[i];
  }
  if (out->measured < 3)
    return;
  out->median = scale_median(all, out->measured);
  for (int i = 0; i < npairs; i++) {
    dir[i] = way(bw[i], out->median);
    told[i] = 0;
  }
  /* Host h's links are pair h - 1 (from the previous host) and pair h. */
  for (int h = 0; h < npairs; h++) {
    int prev = (h + npairs - 1) % npairs;
    struct scale_outlier *o = &out->out[out->nout];

    if (!dir[h] || dir[h] != dir[prev] || told[h] || told[prev])
      continue;
    o->link = h;
    o->host = pairs[h].host_a;
    o->faster = dir[h] > 0;
    /* The host's link nearest the median says how far the host is off. */
    o->busbw = o->faster ? fmin(bw[h], bw[prev]) : fmax(bw[h], bw[prev]);
    o->ratio = o->busbw / out->median;
    told[h] = told[prev] = 1;
    out->nout++;
  }
  for (int i = 0; i < npairs; i++) {
    struct scale_outlier *o = &out->out[out->nout];

    if (!dir[i] || told[i])
      continue;
    o->link = i;
    o->host = NULL;
    o->faster = dir[i] > 0;
    o->busbw = bw[i];
    o->ratio = bw[i] / out->median;
    out->nout++;
  }
  qsort(out->out, (size_t)out->nout, sizeof(out->out[0]), cmp_outlier);
}

int scale_comparable(const struct scale_job *job, char *why, size_t whylen)
{
  if (job->nodes < 2) {
    snprintf(why, whylen,
             "1 node: busbw within a host, over NVLink, PCIe or memory, not "
             "between VMs");
    return 0;
  }
  if (!job->device) {
    snprintf(why, whylen,
             "host memory: MPI over the host's NIC, not GPU memory over the GPU "
             "NICs; add -- --memory device");
    return 0;
  }
  return 1;
}

enum scale_health scale_health(const struct bench_expect *e, double busbw)
{
  if (!(e->healthy_lo > 0))
    return SCALE_HEALTH_UNKNOWN;
  if (busbw < e->healthy_lo)
    return SCALE_HEALTH_BELOW;
  if (e->healthy_hi > 0 && busbw > e->healthy_hi)
    return SCALE_HEALTH_ABOVE;
  return SCALE_HEALTH_INSIDE;
}

int scale_status(const struct scale_job *jobs, int njobs, const struct scale_job *pairs, int npairs)
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
