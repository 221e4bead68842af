/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor: what happens to the agents' samples once the supervisor
 * has stored them (monitor.c: the timeline, the straggler lines, the live
 * line), the straggler rule (straggle.c, pure) and the timeline's picture
 * (picture.c).
 */
#ifndef WR_MONITOR_H
#define WR_MONITOR_H

#include <stdint.h>

#include "supervise/supervise.h"

/* straggle.c: the straggler rule (pure). Use is CPU in thousandths of a core. */
#define WR_STRAGGLE_RATIO 0.5    /* below half the median of every rank's latest use */
#define WR_STRAGGLE_FLOOR_PM 200 /* and that median at least a fifth of a core */
#define WR_STRAGGLE_SAMPLES 3    /* for this many samples in a row */
typedef struct wr_straggle {
  int n;
  int *low;      /* low samples in a row, per rank */
  char *flagged; /* named already */
} wr_straggle;
int wr_straggle_init(wr_straggle *st, int n); /* 0, -1 out of memory */
void wr_straggle_free(wr_straggle *st);
/* The median of the values of v that are not negative (scratch: n of them); -1 when
 * fewer than two are. */
int64_t wr_median(const int64_t *v, int n, int64_t *scratch);
/* Rank's new sample \p use against \p median (wr_median of every rank's latest): 1 when
 * it makes the rank a straggler (once per rank), 0 otherwise. */
int wr_straggle_step(wr_straggle *st, int rank, int64_t use, int64_t median);

/* monitor.c: --monitor's timeline, stragglers and live line, fed by the supervisor's
 * on_sample (wr_mon_sample, with the wr_mon as arg). open: WR_EXIT_* with why. With
 * \p att (--restarts' attempt; NULL: none), one timeline for the job: the first attempt
 * makes it (att->mon_made, att->mon_t0 set), a restart appends to it on the same clock,
 * after a line that says what was lost and since when, its records marked "attempt". */
typedef struct wr_mon wr_mon;
int wr_mon_open(const wr_opts *o, int np, double t0, wr_attempt *att, wr_mon **out, char *why,
                size_t len);
void wr_mon_sample(void *arg, const wr_sup *s, int rank, double now);
void wr_mon_wipe(wr_mon *m); /* the live line off the screen, before another line */
/* 1: a line of the ranks' output is open on the screen (a prompt): no live line drawn over
 * it until 0; NULL is fine */
void wr_mon_hold(wr_mon *m, int hold);
void wr_mon_close(wr_mon *m); /* NULL is fine */
/* The live line's NIC rates, the latest samples' of the running ranks: each host's NIC
 * counted once (its ranks all report the same counters). 0 when the ranks run on one
 * host (they talk through memory there, and the NIC's rate is the machine's other
 * traffic, nothing of the job's) or report no NIC; 1 with the sums. scratch: np ints. */
int wr_mon_nic_rates(const wr_sup *s, int *scratch, double *tx, double *rx);

/* picture.c: DIR/timeline.html (inline SVG: CPU, GPU and memory over time, one line per
 * rank) from DIR/timeline.jsonl at the end of a --monitor-out job, the stragglers the
 * live monitor named (named_cpu, named_gpu: a flag per rank, NULL for none) marked. */
typedef struct wr_point {
  double t, cpu, rss; /* cpu in cores, rss in bytes; -1 absent */
  int rank;
  double gpu;  /* 0 to 1; -1 absent */
  int attempt; /* --restarts' attempt (0: the first) */
} wr_point;
/* A restart's gap: the job was down from \p from to \p to (seconds on the timeline). */
typedef struct wr_gap {
  double from, to;
  int attempt; /* the restart's number (1, 2, ...) */
  char cause[160];
} wr_gap;
typedef struct wr_series {
  wr_point *p;
  int n, cap;
  char host[64];
} wr_series;
/* One timeline line: 0, or -1 when it is not a record (host: "" when absent). */
int wr_timeline_parse(const char *line, wr_point *pt, char *host, size_t hostlen);
/* A restart's line ({"t":..,"restart":K,"down_since":..,"cause":..}): 0, or -1. */
int wr_timeline_gap(const char *line, wr_gap *g);
/* The page for \p n ranks' series and \p ngaps restarts' gaps (shaded; a rank's line
 * breaks at each); \p what is its first paragraph. */
void wr_picture_draw(FILE *out, const wr_series *v, int n, const wr_gap *gaps, int ngaps,
                     const char *what, const char *named_cpu, const char *named_gpu);
/* The page from the timeline, every rank of every attempt in it (\p np: the last
 * attempt's, for \p named_*); \p replace: over the job's own earlier picture (a
 * restart's), else never over a file that is there. 0, or -1 with why. */
int wr_picture_write(const char *jsonl, const char *html, int np, int replace, const char *what,
                     const char *named_cpu, const char *named_gpu, char *why, size_t len);

#endif /* WR_MONITOR_H */
