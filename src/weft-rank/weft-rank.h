/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank's internal interface: its arguments (from weftrun), and the
 * supervisor that runs the program and reports how it ended.
 */
#ifndef WEFT_RANK_H
#define WEFT_RANK_H

#include <weft.h>

#define WK_MAX_HOSTS 16384
#define WK_EXIT_SETUP 70   /* weft-rank could not set the rank up */

typedef struct wk_opts {
  const char *hosts;         /* "a,b": the job's hosts in weftrun's order */
  const char *counts;        /* "8,8": ranks per host */
  const char *rank_by;       /* "slot" | "node" */
  const char *map_by, *bind_to;
  int oversubscribe, report_bindings, probe;
  long gpus_per_node;
  const char *gpu_visibility, *nccl_preset;
  const char *master_addr, *ifname;
  long master_port;
  const char *topology;      /* for every host */
  const char *host_topology[64]; /* "I=FILE" */
  int nhost_topology;
  char **program;
} wk_opts;

/* What the failure line names. */
typedef struct wk_who {
  int rank;
  char host[256];
  char gpu[64];              /* "2 (0000:0a:00.0)" or "none" */
} wk_who;

/* supervise.c: fork+exec argv, forward signals, wait; returns the exit code to use
 * (the program's, 128+N for signal N) after printing the failure line if it failed. */
int wk_supervise(char **argv, const wk_who *who);

#endif /* WEFT_RANK_H */
