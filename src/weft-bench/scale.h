/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench scale: the benchmark at several node counts, run through a
 * launcher as child jobs. Its parts: the command line (options.c), the runs
 * (scale.c), one child job with a deadline (scale-run.c), the analysis of
 * the results (scale-analysis.c, pure) and the output: table, CSV, JSON and
 * gnuplot script (scale-output.c). The parent is a plain process: it never
 * calls MPI.
 */
#ifndef WEFT_BENCH_SCALE_H
#define WEFT_BENCH_SCALE_H

#include <limits.h>
#include <stdio.h>
#include <stddef.h>

#include "driver.h"

#define SCALE_MAX_COUNTS 32     /* node counts in one sweep */
#define SCALE_MAX_PAIRS 256     /* hosts in the pairwise test: one job each */
#define SCALE_MAX_LARGS 48      /* --launcher-arg */
#define SCALE_MAX_BARGS 30      /* weft-bench options after "--" */
#define SCALE_PREDICT_N 3       /* predictions for 2, 4 and 8 times the largest count */

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

/* The command line of weft-bench scale. */
struct scale_opts {
  const char *hostfile, *out, *launcher;
  const struct bench_coll *coll;
  int counts[SCALE_MAX_COUNTS], ncounts;
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes, pairs, sizes_given;
  long ppn, iters, warmup, timeout;
  char *largs[SCALE_MAX_LARGS]; /* --launcher-arg, in order */
  int nlargs;
  char **bargs;                 /* after "--": more weft-bench options */
  int nbargs;
};

/* One scaling test: what it was asked, where it runs, what it measured. */
struct scale {
  struct scale_opts o;
  weftx_hostlist *hosts;
  char self[PATH_MAX], launcher[PATH_MAX];
  int launcher_is_weftrun, tty, vcluster_sizes;
  char source[4200];              /* "the Slurm allocation ..." when the hosts come from one */
  struct scale_job jobs[SCALE_MAX_COUNTS], pairs[SCALE_MAX_PAIRS];
  int njobs, npairs, step, nsteps;
};

/* ---- options.c ---- */

/* Parse argv (argv[0] is "scale") into \p o.
 * \return BENCH_EXIT_OK, BENCH_EXIT_USAGE after one line on stderr, or -1
 * when --help or --help-man printed what was asked. */
int scale_parse(int argc, char **argv, struct scale_opts *o);

/* ---- scale-run.c ---- */

/* Run argv with stdout to \p out_path (and parsed into \p job's points) and
 * stderr to \p err_path, in its own process group, killed after \p timeout_s
 * seconds. \return 0 after setting job->status (128 + signal for a killed
 * job, 124 for a timeout), or -1 with errno when the child cannot start. */
int scale_run_job(char *const *argv, const char *out_path, const char *err_path, int timeout_s,
                  struct scale_job *job);

/* ---- scale-analysis.c: pure functions of the results ---- */

/* Recompute each point's algbw and busbw from its time (the table rounds them
 * to 0.01 GB/s) with the collective's busbw factor for the job's ranks, then
 * fit the job. */
void scale_job_finish(struct scale_job *job, double (*factor_of)(int));

/* Least squares of time = alpha + bytes * beta over the job's points.
 * Leaves NAN when there are fewer than two distinct sizes. */
void scale_fit(struct scale_job *job);

/* The point of \p job at \p bytes, or NULL. */
const struct scale_point *scale_point_at(const struct scale_job *job, size_t bytes);

/* busbw of \p job at \p bytes when the job succeeded and has that size, else -1. */
double scale_busbw_at(const struct scale_job *job, size_t bytes);

/* Scaling efficiency of \p j at \p bytes: its busbw over the reference run's
 * at the same size. The reference is the first multi-node run that
 * succeeded (single-node busbw is intra-node and says nothing about
 * scaling), else the first with more than one rank. NAN when there is no
 * reference, \p j has fewer nodes or one rank, or either busbw is missing. */
double scale_efficiency(const struct scale_job *jobs, int njobs, const struct scale_job *j,
                        size_t bytes);

/* A prediction for \p ranks ranks from the fitted jobs: latency grows
 * linearly with ranks - 1 (least squares over the jobs with a fit), bus
 * bandwidth stays at the largest job's; \p factor_of is the collective's
 * busbw factor. Returns the time in us for \p bytes, or NAN. */
double scale_predict(const struct scale_job *jobs, int njobs, int ranks,
                     double (*factor_of)(int), size_t bytes);

/* One predicted point. */
struct scale_prediction {
  int nodes, ranks;
  size_t bytes;
  double time_us, algbw, busbw;
};

/* The predictions for 2, 4 and 8 times \p maxnodes nodes of \p ppn ranks at
 * each size, ordered by node count then size; sizes that cannot be predicted
 * are left out. \p out has room for SCALE_PREDICT_N * nsizes.
 * \return how many were written. */
int scale_predictions(const struct scale_job *jobs, int njobs, int maxnodes, int ppn,
                      double (*factor_of)(int), const size_t *sizes, int nsizes,
                      struct scale_prediction *out);

/* The verdict on the links between neighbouring hosts. */
enum scale_slow_kind {
  SCALE_SLOW_UNJUDGED,  /* fewer than 3 links measured */
  SCALE_SLOW_NONE,      /* every link within 20% of the median */
  SCALE_SLOW_LINK,      /* one link below 0.8 x the median */
  SCALE_SLOW_HOST       /* both links of one host below it */
};

struct scale_slowest {
  enum scale_slow_kind kind;
  int measured;         /* links with a busbw */
  int link;             /* index of the slowest link in the pairs; -1 when none */
  const char *host;     /* SCALE_SLOW_HOST: the host */
  double busbw, median; /* of the slowest link; of all measured links */
};

/* Judge the ring of \p npairs links (pair i joins host i and host i + 1, the
 * last joins back to the first) at \p bytes: the slowest link is named when
 * it is below 0.8 x the median of 3 or more links, and a host instead when
 * its other link is below that too. At most SCALE_MAX_PAIRS links count. */
void scale_slowest(const struct scale_job *pairs, int npairs, size_t bytes,
                   struct scale_slowest *out);

/* The exit status the results call for: BENCH_EXIT_WRONG when any point has
 * wrong elements, else BENCH_EXIT_RUNTIME when any job failed, else
 * BENCH_EXIT_OK. */
int scale_status(const struct scale_job *jobs, int njobs, const struct scale_job *pairs,
                 int npairs);

/* Median of \p n values (n >= 1); the array is sorted in place. */
double scale_median(double *v, int n);

/* ---- scale-output.c ---- */

/* The results on \p f: busbw and efficiency per node count and size, the fit
 * and prediction, the pairs and the slowest link. */
void scale_print(const struct scale *s, FILE *f);

/* DIR/scale.csv, scale.json and pairs.csv. \return 0, or BENCH_EXIT_RUNTIME
 * after one line on stderr. */
int scale_write_files(const struct scale *s, int status);

/* DIR/scale.gp, and the plot when gnuplot is installed (run like a job, with
 * a deadline); one line on stdout says which. */
void scale_write_plot(const struct scale *s);

#endif /* WEFT_BENCH_SCALE_H */
