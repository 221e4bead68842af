/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank's internal interface: the supervisor that runs the program and
 * reports how it ended, and Google Cloud on the rank's host. Its arguments,
 * its failure line and its exit codes are the contract with weftrun
 * (src/common/agent.h).
 */
#ifndef WEFT_RANK_H
#define WEFT_RANK_H

#include <weftx.h>

#include "agent.h"

/* weft-rank could not set its rank up (agent.h's WEFT_EXIT_ENGINE, "launch failed") */
#define WK_EXIT_SETUP WEFT_EXIT_ENGINE

/* supervise.c: fork+exec argv, forward signals, wait; returns the exit code to use
 * (the program's, 128+N for signal N) after printing the failure line if it failed. */
int wk_supervise(char **argv, const weft_agent_who *who);
/* Grace after a preemption notice (default WEFTX_PREEMPT_GRACE_S); wk_supervise_preempt()
 * sends WEFTX_PREEMPT_SIGNAL to this process so that the program gets that grace. */
void wk_supervise_set_grace(long seconds);
void wk_supervise_preempt(void);

/* gcp.c: --nccl-preset on this host (reserved cores, variables) and the preemption
 * watch; wk_gcp_watch_stop() turns rc into WEFT_EXIT_PREEMPTED after a notice. */
typedef struct wk_gcp wk_gcp;
int wk_gcp_prepare(const char *nccl_preset, int nhosts, int local_rank, const weft_agent_who *who,
                   wk_gcp **g, char *why, size_t len);
const char *wk_gcp_reserved_cpus(const wk_gcp *g);
int wk_gcp_apply(wk_gcp *g, weftx_env *env, char *why, size_t len);
void wk_gcp_watch_start(wk_gcp *g);
int wk_gcp_watch_stop(wk_gcp *g, int rc);
void wk_gcp_destroy(wk_gcp *g);
/* For weftrun's probe, after the XML: the GCE line (agent.h) when this host is on
 * GCE (or GCE_METADATA_HOST is set), nothing otherwise (no request). */
void wk_gcp_probe_facts(FILE *out);

#endif /* WEFT_RANK_H */
