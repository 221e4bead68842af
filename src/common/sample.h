/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sample of what one rank uses (weftrun --monitor): the agent reads the
 * /proc/PID/stat of its rank's processes (the program and every process it
 * started, found through /proc/PID/task/TID/children) and its NIC's counters
 * in /sys/class/net/IF/statistics every interval and sends the result to weftrun as a SAMPLE message on the
 * control channel (ctl.h), never through the program's output. Here are the
 * pure parts: parsing what those files say, turning two readings into rates,
 * and the message written and read back. The reading itself is the agent's
 * (src/weft-rank/monitor.c).
 *
 * A field that was not measured is -1 (and is left out of the message).
 */
#ifndef WT_SAMPLE_H
#define WT_SAMPLE_H

#include <stdint.h>
#include <stdio.h>

#include "ctl.h"

typedef struct wt_sample {
  int64_t seq;            /* 1, 2, ... per rank */
  int64_t span_ms;        /* the time the rates cover */
  int64_t cpu_pm;         /* CPU use over span: thousandths of one core (2500: 2.5 cores) */
  int64_t cpu_ms;         /* CPU time the rank's processes have used since it started */
  int64_t rss;            /* resident memory, bytes: the sum over its processes */
  int64_t threads;        /* the sum over its processes */
  int64_t procs;          /* its processes (the program and its descendants) */
  char nic[32];           /* the interface the NIC rates are of, "" none */
  int64_t nic_tx, nic_rx; /* bytes per second through it (all its traffic, not the rank's alone) */
  /* the rank's GPU through NVML (the whole GPU's figures, whoever uses it) */
  int64_t gpu_util;  /* percent of the time a kernel ran, over NVML's last period */
  int64_t gpu_mem;   /* memory used, bytes */
  int64_t gpu_power; /* milliwatts */
  int64_t gpu_temp;  /* degrees C */
  char why[160];     /* why the GPU figures are absent, "" when they are not (or no GPU);
                                sent once, in the first sample */
} wt_sample;

/* The fields of /proc/PID/stat a sample needs. */
typedef struct wt_proc_stat {
  char state;    /* 'R', 'S', 'Z', ... */
  int exiting;   /* ended or ending (a zombie, or PF_EXITING): no
                                memory, threads or children worth counting */
  int64_t ticks; /* utime + stime, and cutime + cstime (its children it
                                waited for, theirs included): clock ticks */
  int64_t threads;
  int64_t rss_pages;
} wt_proc_stat;

void wt_sample_init(wt_sample *s); /* every field -1, nic "" */

/** \brief Parse the text of /proc/PID/stat (the command name may hold spaces and
 * parentheses: the fields are counted after its last ')'). 0, or -1 when it is not
 * such a line. */
int wt_sample_parse_stat(const char *text, wt_proc_stat *st);

/** \brief Parse /proc/PID/task/TID/children ("12 345 "): up to \p max pids into
 * \p pids (the rest are left out). How many were stored, or -1 when damaged. */
int wt_sample_parse_pids(const char *text, long *pids, int max);

/** \brief Parse a counter file's text ("123\n"). 0, or -1. */
int wt_sample_parse_counter(const char *text, int64_t *v);

/** \brief Per second from two readings of a counter \p span_ms apart; -1 when a
 * reading is missing (-1), the span is not positive or the counter went back (reset). */
int64_t wt_sample_rate(int64_t before, int64_t after, int64_t span_ms);

/** \brief CPU use in thousandths of a core from two tick counts (\p hz ticks a second). */
int64_t wt_sample_cpu_pm(int64_t ticks_before, int64_t ticks_after, long hz, int64_t span_ms);

/* Whose figures a sample is: its labels in the Prometheus file. */
typedef struct wt_sample_who {
  const char *job; /* weftrun's job: "HOST:PID" of weftrun */
  int rank;
  const char *host;
  const char *gpu; /* the rank's GPU's index on its host, for the GPU figures; NULL none */
} wt_sample_who;

/** \brief Write the samples \p s of \p n ranks (one host's) in Prometheus's text
 * format (node_exporter's textfile collector reads it): for each figure some rank
 * measured, # HELP and # TYPE once, then one line per rank that measured it, labels
 * job, rank and host (and gpu on the GPU figures) escaped as the format wants. */
void wt_sample_prom(FILE *out, const wt_sample *s, const wt_sample_who *who, int n);

/** \brief \p m becomes a SAMPLE message with \p s's measured fields. */
void wt_sample_put(wt_ctl_out *m, const wt_sample *s);

/** \brief Read a SAMPLE message. 0, or -1 when it is not one (or has no SEQ). */
int wt_sample_get(const wt_ctl_msg *m, wt_sample *s);

#endif /* WT_SAMPLE_H */
