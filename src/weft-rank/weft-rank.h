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

/* ids.c: this rank's numbers, from Open MPI's OMPI_COMM_WORLD_* (mpirun), else from
 * srun's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE
 * (checked against PMIX_RANK). 0, or -1 with a reason. */
typedef struct wk_ids {
  int rank, size, local, lsize;
  const char *from;          /* "Open MPI" or "srun" */
} wk_ids;
int wk_ids_get(wk_ids *ids, char *why, size_t len);

/* gpus.c: the GPUs this rank may have (weftrun's --gpus for its host, Slurm's step) and
 * how this process numbers them. prepare before placing (wk_gpus_policy() is the
 * policy's gpus), apply after: it fills ri's devices and GPU in the step's numbering and
 * leaves a CUDA_VISIBLE_DEVICES of Slurm's to weft. 0, or -1 with a reason. */
typedef struct wk_gpus {
  int limited;               /* set applies */
  char set[1024];            /* "3-4": the GPUs (node indices) ranks here may have */
  int slurm;                 /* CUDA_VISIBLE_DEVICES is Slurm's for this step */
  char step_var[1100];       /* "SLURM_STEP_GPUS=3,4", for messages */
  int node[WEFTX_SLURM_GPUS_MAX], cuda[WEFTX_SLURM_GPUS_MAX], npairs; /* node index -> CUDA's */
  int devices[WEFTX_SLURM_GPUS_MAX], ndevices;
} wk_gpus;
int wk_gpus_prepare(wk_gpus *g, const char *arg, int node, char *why, size_t len);
const char *wk_gpus_policy(const wk_gpus *g);
int wk_gpus_apply(wk_gpus *g, const weftx_place *pl, weftx_rank_info *ri, weftx_env *env,
                  weftx_gpu_visibility vis, char *why, size_t len);

/* output.c: --output-filename DIR: descriptors 1 and 2 copied into DIR/1/rank.R/stdout
 * and stderr and to where they went before, until wk_output_finish(). */
typedef struct wk_output wk_output;
int wk_output_start(const char *dir, int rank, wk_output **out, char *why, size_t len);
void wk_output_finish(wk_output *o);

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
