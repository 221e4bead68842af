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

#define SCALE_MAX_COUNTS 32 /* node counts in one sweep */
#define SCALE_MAX_PAIRS 256 /* hosts in the pairwise test: one job each */
#define SCALE_MAX_LARGS 48  /* --launcher-arg */
#define SCALE_MAX_BARGS 30  /* weft-bench options after "--" */
#define SCALE_PREDICT_N 3   /* predictions for 2, 4 and 8 times the largest count */
#define SCALE_MAX_REPEAT 20 /* --repeat */

/* One size of one measurement: what the rows of the child's tables said,
 * one per repeat (the out-of-place columns, or the in-place ones for a
 * collective that only runs in place). */
struct scale_point {
  size_t bytes;
  double times[SCALE_MAX_REPEAT]; /* us, one per repeat that gave this row */
  int nrep;
  double time_us, algbw, busbw; /* at the median time of the repeats */
  double busbw_lo, busbw_hi;    /* at the slowest and the fastest repeat */
  long long wrong;              /* over the repeats and placements; -1: not checked */
};

/* One measurement, run --repeat times: a node count (or a pair of hosts) and
 * its rows. */
struct scale_job {
  int nodes, ranks;
  const char *host_a, *host_b; /* pairs only */
  int status;                  /* the first failed run's exit status, else 0; -1: not run */
  int runs;                    /* repeats run so far */
  int device;                  /* its table said "memory: device" */
  int shared;                  /* its header said "sharing:": ranks shared cores */
  double seconds;              /* all repeats together */
  struct scale_point pts[BENCH_MAX_SIZES];
  int npts, row;                     /* points; the row of the current run being read */
  double alpha_us, beta_us_per_byte; /* fit of time = alpha + bytes * beta; NAN when none */
};

/* The command line of weft-bench scale. */
struct scale_opts {
  const char *hostfile, *out, *launcher;
  const struct bench_coll *coll;
  int counts[SCALE_MAX_COUNTS], ncounts;
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes, pairs, sizes_given;
  long ppn, iters, warmup, timeout, repeat;
  char *largs[SCALE_MAX_LARGS]; /* --launcher-arg, in order */
  int nlargs;
  char **bargs; /* after "--": more weft-bench options */
  int nbargs;
};

/* One scaling test: what it was asked, where it runs, what it measured. */
struct scale {
  struct scale_opts o;
  weftx_hostlist *hosts;
  char self[PATH_MAX], launcher[PATH_MAX];
  int launcher_is_weftrun, tty, vcluster_sizes;
  char source[4200]; /* "the Slurm allocation ..." when the hosts come from one */
  struct scale_job jobs[SCALE_MAX_COUNTS], pairs[SCALE_MAX_PAIRS];
  int njobs, npairs, step, nsteps;
};

/* ---- options.c ---- */

/* Parse argv (argv[0] is "scale") into \p o.
 * \return BENCH_EXIT_OK, BENCH_EXIT_USAGE after one line on stderr, or -1
 * when --help or --help-man printed what was asked. */
int scale_parse(int argc, char **argv, struct scale_opts *o);

/* ---- scale-run.c ---- */

/* Run argv with stdout to \p out_path (and parsed into \p job's points: the
 * first run makes them, a repeat adds its times to them) and stderr to
 * \p err_path, in its own process group, killed after \p timeout_s seconds.
 * \return 0 after setting job->status when this run failed (128 + signal for
 * a killed job, 124 for a timeout), or -1 with errno when the child cannot
 * start. */
int scale_run_job(char *const *argv, const char *out_path, const char *err_path, int timeout_s,
                  struct scale_job *job);

/* ---- scale-analysis.c: pure functions of the results ---- */

/* Each point's time is the median of its repeats; its algbw and busbw are
 * computed from it (the table rounds them to 0.01 GB/s) with the
 * collective's busbw factor for the job's ranks, and so are the busbw of the
 * slowest and the fastest repeat. Then fit the job. */
void scale_job_finish(struct scale_job *job, double (*factor_of)(int));

/* Least squares of time = alpha + bytes * beta over the job's points.
 * Leaves NAN when there are fewer than two distinct sizes. */
void scale_fit(struct scale_job *job);

/* 1 when the job's fit is a model: alpha >= 0 and beta > 0 (a negative
 * latency or a time that falls with size is noise, not a network). */
int scale_fit_valid(const struct scale_job *job);

/* The spread of the repeats of \p p: (fastest - slowest busbw) / busbw, or
 * NAN with fewer than 2 repeats. */
double scale_spread(const struct scale_point *p);

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

/* A prediction for \p ranks ranks from the jobs whose fit is a model: latency
 * grows linearly with ranks - 1 (least squares over those jobs), bus
 * bandwidth stays at the largest job's; \p factor_of is the collective's
 * busbw factor. Returns the time in us for \p bytes, or NAN. */
double scale_predict(const struct scale_job *jobs, int njobs, int ranks, double (*factor_of)(int),
                     size_t bytes);

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

/* The links between neighbouring hosts that stand out from the others, in
 * either direction: below SCALE_SLOW x the median (slower) or above
 * SCALE_FAST x the median (faster; 1 / SCALE_SLOW, so that both ways are
 * judged alike in ratio). A host whose two links both stand out the same way
 * is named instead of them. */
#define SCALE_SLOW 0.8
#define SCALE_FAST 1.25

struct scale_outlier {
  int link;            /* the pair's index; for a host, its link to the next host */
  const char *host;    /* a host whose two links stand out, else NULL */
  int faster;          /* 1: above SCALE_FAST x the median; 0: below SCALE_SLOW x */
  double busbw, ratio; /* of the link (a host: its faster link when slower, its
                           slower link when faster), and over the median */
};

struct scale_links {
  int measured;  /* links with a busbw; fewer than 3 are not judged */
  double median; /* of the measured links */
  struct scale_outlier out[SCALE_MAX_PAIRS];
  int nout; /* the outliers, the farthest from the median first */
};

/* Judge the ring of \p npairs links (pair i joins host i and host i + 1, the
 * last joins back to the first) at \p bytes, 3 links or more. At most
 * SCALE_MAX_PAIRS links count. */
void scale_judge_links(const struct scale_job *pairs, int npairs, size_t bytes,
                       struct scale_links *out);

/* Whether a run may be held against the machine family's healthy busbw
 * range, which is for GPU memory across VMs: 0 with the reason in \p why for
 * a run on one node or on host memory. */
int scale_comparable(const struct scale_job *job, char *why, size_t whylen);

/* A comparable run's busbw against the family's healthy range. */
enum scale_health {
  SCALE_HEALTH_UNKNOWN, /* no published range */
  SCALE_HEALTH_BELOW,   /* below its lower bound */
  SCALE_HEALTH_INSIDE,  /* at or above the lower bound, at most the upper one */
  SCALE_HEALTH_ABOVE    /* above the best published figure */
};
enum scale_health scale_health(const struct bench_expect *e, double busbw);

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
/* 1 when a run of 2 nodes or more had ranks sharing cores (hosts on one machine). */
int scale_shared(const struct scale *s);

/* DIR/scale.csv, scale.json and pairs.csv. \return 0, or BENCH_EXIT_RUNTIME
 * after one line on stderr. */
int scale_write_files(const struct scale *s, int status);

/* DIR/scale.gp, and the plot when gnuplot is installed (run like a job, with
 * a deadline); one line on stdout says which. */
void scale_write_plot(const struct scale *s);

#endif /* WEFT_BENCH_SCALE_H */
