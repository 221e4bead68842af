/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank's internal interface: its arguments (from weftrun), and the
 * supervisor that runs the program and reports how it ended.
 */
#ifndef WEFT_RANK_H
#define WEFT_RANK_H

#include <weftx.h>

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
  const char *host_xml;      /* weftrun's own host as XML, for the ranks on that host */
  long preempt_grace;        /* seconds from a preemption notice's signal to SIGKILL */
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
/* Grace after a preemption notice (default WEFTX_PREEMPT_GRACE_S); wk_supervise_preempt()
 * sends WEFTX_PREEMPT_SIGNAL to this process so that the program gets that grace. */
void wk_supervise_set_grace(long seconds);
void wk_supervise_preempt(void);

/* gcp.c: --nccl-preset on this host (reserved cores, variables) and the preemption
 * watch; wk_gcp_watch_stop() turns rc into WEFTX_EXIT_PREEMPTED after a notice. */
typedef struct wk_gcp wk_gcp;
int wk_gcp_prepare(const wk_opts *o, int nhosts, int local_rank, const wk_who *who, wk_gcp **g,
                   char *why, size_t len);
const char *wk_gcp_reserved_cpus(const wk_gcp *g);
int wk_gcp_apply(wk_gcp *g, weftx_env *env, char *why, size_t len);
void wk_gcp_watch_start(wk_gcp *g);
int wk_gcp_watch_stop(wk_gcp *g, int rc);
void wk_gcp_destroy(wk_gcp *g);
/* For weftrun's probe, after the XML: "\n#weft-gce MACHINE_TYPE PHYSICAL_HOST|-\n" when
 * this host is on GCE (or GCE_METADATA_HOST is set), nothing otherwise (no request). */
void wk_gcp_probe_facts(FILE *out);

#endif /* WEFT_RANK_H */
