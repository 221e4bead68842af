/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who this rank is, from the engine that started it: Open MPI's mpirun sets
 * OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE; Slurm's srun (weftrun
 * --engine srun, srun --mpi=pmix) sets SLURM_PROCID, SLURM_NTASKS,
 * SLURM_LOCALID, SLURM_NODEID and SLURM_STEP_TASKS_PER_NODE, and PMIx's
 * PMIX_RANK, which must agree with SLURM_PROCID; MPICH's Hydra (weftrun
 * --engine hydra, mpiexec.hydra) sets PMI_RANK, PMI_SIZE, MPI_LOCALRANKID and
 * MPI_LOCALNRANKS (the last two are Hydra's own). Open MPI's variables win:
 * under mpirun inside an allocation a rank inherits the SLURM_PROCID of the
 * step its daemon runs in, which is never its rank; Hydra's come before
 * Slurm's for the same reason (Hydra may start its proxies with srun).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "weft-rank.h"

static int env_int(const char *name, int *out)
{
  const char *v = getenv(name);
  long l;
  if (!v || weftx_parse_long(v, 0, 100000000, &l))
    return -1;
  *out = (int)l;
  return 0;
}

/* The tasks on this node of the step: SLURM_STEP_TASKS_PER_NODE's SLURM_NODEID-th count. */
static int srun_local_size(int node, int *out, char *why, size_t len)
{
  const char *tpn = getenv("SLURM_STEP_TASKS_PER_NODE");
  int *counts = calloc(WT_AGENT_MAX_HOSTS, sizeof(*counts)), n = 0, rc = -1;
  char inner[300] = "";
  if (!counts) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  if (!tpn || weftx_slurm_per_node("SLURM_STEP_TASKS_PER_NODE", tpn, counts, WT_AGENT_MAX_HOSTS, &n,
                                   inner, sizeof(inner)))
    snprintf(why, len, "SLURM_STEP_TASKS_PER_NODE %s%s", tpn ? "does not parse: " : "is not set",
             inner);
  else if (node >= n)
    snprintf(why, len, "SLURM_NODEID %d but SLURM_STEP_TASKS_PER_NODE '%s' counts %d nodes", node,
             tpn, n);
  else {
    *out = counts[node];
    rc = 0;
  }
  free(counts);
  return rc;
}

int wk_ids_get(wk_ids *ids, char *why, size_t len)
{
  int node, pmix;
  memset(ids, 0, sizeof(*ids));
  if (getenv("OMPI_COMM_WORLD_RANK")) {
    ids->from = "Open MPI";
    if (env_int("OMPI_COMM_WORLD_RANK", &ids->rank) ||
        env_int("OMPI_COMM_WORLD_SIZE", &ids->size) ||
        env_int("OMPI_COMM_WORLD_LOCAL_RANK", &ids->local) ||
        env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &ids->lsize)) {
      snprintf(why, len,
               "OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE are not all set to "
               "numbers; weft-rank runs under weftrun, not by hand");
      return -1;
    }
    return 0;
  }
  if (getenv("MPI_LOCALRANKID")) {
    ids->from = "Hydra";
    if (env_int("PMI_RANK", &ids->rank) || env_int("PMI_SIZE", &ids->size) ||
        env_int("MPI_LOCALRANKID", &ids->local) || env_int("MPI_LOCALNRANKS", &ids->lsize)) {
      snprintf(why, len,
               "PMI_RANK, PMI_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS are not all set to "
               "numbers; weft-rank runs under weftrun, not by hand");
      return -1;
    }
    if (ids->rank >= ids->size || ids->local >= ids->lsize) {
      snprintf(why, len, "Hydra's rank %d of %d is local rank %d of %d: not a rank of this job",
               ids->rank, ids->size, ids->local, ids->lsize);
      return -1;
    }
    return 0;
  }
  if (!getenv("SLURM_PROCID") || !getenv("SLURM_STEP_ID")) {
    snprintf(why, len,
             "none of OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (mpirun), PMI_RANK and "
             "MPI_LOCALRANKID (mpiexec.hydra), SLURM_PROCID and SLURM_STEP_ID (srun) are set: "
             "weft-rank runs under weftrun, not by hand");
    return -1;
  }
  ids->from = "srun";
  if (env_int("SLURM_PROCID", &ids->rank) || env_int("SLURM_NTASKS", &ids->size) ||
      env_int("SLURM_LOCALID", &ids->local) || env_int("SLURM_NODEID", &node)) {
    snprintf(why, len,
             "SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_NODEID are not all "
             "set to numbers in this srun task");
    return -1;
  }
  if (srun_local_size(node, &ids->lsize, why, len))
    return -1;
  if (getenv("PMIX_RANK") && (env_int("PMIX_RANK", &pmix) || pmix != ids->rank)) {
    snprintf(why, len,
             "PMIX_RANK=%s but SLURM_PROCID=%d: the MPI rank would not be this task's; "
             "start the job with srun --mpi=pmix (weftrun --engine srun)",
             getenv("PMIX_RANK"), ids->rank);
    return -1;
  }
  if (ids->rank >= ids->size || ids->local >= ids->lsize) {
    snprintf(why, len, "srun task %d of %d is local task %d of %d: not a task of this step",
             ids->rank, ids->size, ids->local, ids->lsize);
    return -1;
  }
  return 0;
}
