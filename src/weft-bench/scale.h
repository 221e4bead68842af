/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench scale: the benchmark at several node counts, run through a
 * launcher as child jobs (scale.c), the arithmetic on their results
 * (scale-fit.c) and the running of one child job with a deadline
 * (scale-run.c). The parent is a plain process: it never calls MPI.
 */
#ifndef WEFT_BENCH_SCALE_H
#define WEFT_BENCH_SCALE_H

#include <stddef.h>

#define SCALE_MAX_COUNTS 32     /* node counts in one sweep */

/* One size of one run: what a row of the child's table said. */
struct scale_point {
  size_t bytes;
  double time_us, algbw, busbw;
  long long wrong;              /* -1: not checked */
};

/* One child job: a node count (or a pair of hosts) and its rows. */
struct scale_job {
  int nodes, ranks;
  const char *host_a, *host_b;  /* pairs only */
  int status;                   /* the launcher's exit status; -1: not run */
  double seconds;
  struct scale_point pts[BENCH_MAX_SIZES];
  int npts;
  double alpha_us, beta_us_per_byte;  /* fit of time = alpha + bytes * beta; NAN when none */
};

/* Run argv with stdout to \p out_path (and parsed into \p job's points) and
 * stderr to \p err_path, in its own process group, killed after \p timeout_s
 * seconds. \return 0 after setting job->status (128 + signal for a killed
 * job, 124 for a timeout), or -1 with errno when the child cannot start. */
int scale_run_job(char *const *argv, const char *out_path, const char *err_path, int timeout_s,
                  struct scale_job *job);

/* Least squares of time = alpha + bytes * beta over the job's points.
 * Leaves NAN when there are fewer than two distinct sizes. */
void scale_fit(struct scale_job *job);

/* The point of \p job at \p bytes, or NULL. */
const struct scale_point *scale_point_at(const struct scale_job *job, size_t bytes);

/* A prediction for \p ranks ranks from the fitted jobs: latency grows
 * linearly with ranks - 1 (least squares over the jobs with a fit), bus
 * bandwidth stays at the largest job's; \p factor_of is the collective's
 * busbw factor. Returns the time in us for \p bytes, or NAN. */
double scale_predict(const struct scale_job *jobs, int njobs, int ranks,
                     double (*factor_of)(int), size_t bytes);

/* Median of \p n values (n >= 1); the array is sorted in place. */
double scale_median(double *v, int n);

#endif /* WEFT_BENCH_SCALE_H */
