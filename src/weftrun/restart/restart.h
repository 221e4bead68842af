/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whole-job restarts (--restarts, weftrun(1) RESTARTS): the attempts of one
 * job, each the whole pipeline (main.c) on the hosts there are. policy.c is
 * pure (the discovery command's output read, when a restart follows, which
 * hosts are left out and for how long, the wait between attempts); loop.c
 * does the I/O (the discovery command, the waits, the variables, the lines
 * the user sees).
 */
#ifndef WR_RESTART_H
#define WR_RESTART_H

#include "weftrun.h"

/* A host that failed is left out for WR_COOLDOWN_S, doubled at each new failure up to
 * WR_COOLDOWN_MAX_S (Horovod's blacklist with a cooldown). */
#define WR_COOLDOWN_S 300.0
#define WR_COOLDOWN_MAX_S 3600.0
/* An attempt that failed within WR_FAST_S of its ranks' start (or before they all
 * started) is a fast failure: the next waits WR_BACKOFF_S, doubled at each fast failure
 * in a row, up to WR_BACKOFF_MAX_S. A job that ran longer restarts at once. */
#define WR_FAST_S 10.0
#define WR_BACKOFF_S 1.0
#define WR_BACKOFF_MAX_S 30.0
/* While waiting for --min-hosts: how often the hosts are looked at again. */
#define WR_POLL_S 2.0

/* policy.c (pure) */

/* What the failures of one host have earned it. */
typedef struct wr_rs_host {
  char name[256];
  int fails;
  double until; /* left out until then (weftx_monotonic()) */
} wr_rs_host;

typedef struct wr_rs_state {
  wr_rs_host *bad; /* hosts that failed */
  int nbad;
  int fast; /* fast failures in a row */
} wr_rs_state;

/* The cooldown of a host after its \p fails-th failure (1, 2, ...). */
double wr_rs_cooldown(int fails);
/* The wait before the next attempt after \p fast fast failures in a row (0: none). */
double wr_rs_backoff(int fast);
/* Whether an attempt that ended with \p code (the attempt \p a) is restarted under
 * \p restart_on (WR_RESTART_ON_*). */
int wr_rs_restartable(const wr_attempt *a, int code, int restart_on);
/* The attempt \p a is over: its lost hosts get their cooldown from \p now, and the fast
 * failure count moves. 0, or WEFT_ENOMEM. */
int wr_rs_note(wr_rs_state *st, const wr_attempt *a, double now);
/* Whether host \p name is left out at \p now; the time it comes back in \p until. */
int wr_rs_left_out(const wr_rs_state *st, const char *name, double now, double *until);
/* Hosts \p in (n of them) less those left out at \p now, at most \p max (0: all), into
 * \p out (room for n); their number. */
int wr_rs_select(const wr_rs_state *st, const wr_given_host *in, int n, double now, long max,
                 wr_given_host *out);
/* The soonest a host left out comes back after \p now; 0 when none is left out. */
double wr_rs_next_back(const wr_rs_state *st, double now);
void wr_rs_state_free(wr_rs_state *st);

/* The output of --host-discovery: "HOST slots=N" lines (the hostfile grammar, '#'
 * comments, blank lines). Its hosts into *out (allocated), their number into *n (0 for
 * an output with no host). 0; WEFT_EPARSE with \p why naming the line; WEFT_ENOMEM. */
int wr_rs_parse_hosts(const char *text, size_t len, wr_given_host **out, int *n, char *why,
                      size_t whylen);
/* The hosts as a hostfile's lines. */
void wr_rs_write_hosts(FILE *f, const wr_given_host *h, int n);

/* loop.c */

/* One attempt: the pipeline from the hosts to the exit status (main.c). */
typedef int (*wr_attempt_fn)(wr_opts *o, int stop_fd, wr_attempt *att, void *arg);
/* The job: the first attempt and, with --restarts, the others; the exit status. */
int wr_restart_run(wr_opts *o, int stop_fd, wr_attempt_fn fn, void *arg);

#endif /* WR_RESTART_H */
