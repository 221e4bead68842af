/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The GPUs this rank may have, and how this process numbers them. weftrun
 * sends each host's set (--gpus: the GPUs a Slurm job was given there, or
 * those of the user's CUDA_VISIBLE_DEVICES); placement chooses among them
 * only. When Slurm itself set CUDA_VISIBLE_DEVICES for the step the rank runs
 * in (beside SLURM_STEP_GPUS, or SLURM_JOB_GPUS in a batch script), the
 * rank may use no other GPU: weftrun's set must lie within it, and weft
 * writes CUDA_VISIBLE_DEVICES and WEFT_GPU in the step's numbering (the
 * node's indices, or 0..n-1 where device cgroups renumber them), never a GPU
 * outside it. A CUDA_VISIBLE_DEVICES of the user's own is kept as it is.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "weft-rank.h"

/* Slurm's GPUs of this step: SLURM_STEP_GPUS (a step), else SLURM_JOB_GPUS (a batch
 * script), with the CUDA_VISIBLE_DEVICES Slurm set beside them. 1 when both are there and
 * agree in number (Slurm's, then), 0 otherwise. */
static int slurm_pairs(wk_gpus *g)
{
  const char *name = "SLURM_STEP_GPUS", *s = getenv(name), *c = getenv("CUDA_VISIBLE_DEVICES");
  int nc = 0, cuda[WEFTX_SLURM_GPUS_MAX];
  if (!s) {
    name = "SLURM_JOB_GPUS";
    s = getenv(name);
  }
  if (!s || !c ||
      weftx_slurm_gpu_indices(name, s, g->node, WEFTX_SLURM_GPUS_MAX, &g->npairs, NULL, 0) ||
      weftx_slurm_gpu_indices("CUDA_VISIBLE_DEVICES", c, cuda, WEFTX_SLURM_GPUS_MAX, &nc, NULL,
                              0) ||
      nc != g->npairs)
    return 0;
  memcpy(g->cuda, cuda, sizeof(cuda));
  snprintf(g->step_var, sizeof(g->step_var), "%s=%s", name, s);
  return 1;
}

static int member(const int *v, int n, int x)
{
  for (int i = 0; i < n; i++)
    if (v[i] == x)
      return i;
  return -1;
}

int wk_gpus_prepare(wk_gpus *g, const char *arg, int node, char *why, size_t len)
{
  int set[WEFTX_SLURM_GPUS_MAX], nset = 0;
  const char *c = getenv("CUDA_VISIBLE_DEVICES");
  memset(g, 0, sizeof(*g));
  if (arg) {
    int r = wt_gpusets_host(arg, node, g->set, sizeof(g->set));
    if (r < 0 || (r == 0 && weftx_slurm_gpu_indices("--gpus", g->set, set, WEFTX_SLURM_GPUS_MAX,
                                                    &nset, NULL, 0))) {
      snprintf(why, len, "--gpus '%.200s' gives no GPUs for host %d of the layout", arg, node);
      return -1;
    }
    g->limited = r == 0;
  }
  if ((g->slurm = slurm_pairs(g))) {
    for (int i = 0; g->limited && i < nset; i++)
      if (member(g->node, g->npairs, set[i]) < 0) {
        snprintf(why, len,
                 "weftrun planned GPUs %s on this host for the job, but Slurm gave the "
                 "step this rank runs in only %s; report this with the weftrun command line",
                 g->set[0] ? g->set : "none", g->step_var);
        return -1;
      }
    if (!g->limited) {
      /* no set from weftrun (not in the allocation it knows): the step's */
      snprintf(g->set, sizeof(g->set), "%s", strchr(g->step_var, '=') + 1);
      g->limited = 1;
    }
  } else if (c && !g->limited &&
             !weftx_slurm_gpu_indices("CUDA_VISIBLE_DEVICES", c, set, WEFTX_SLURM_GPUS_MAX, &nset,
                                      NULL, 0)) {
    /* the user's own list (weftrun sends it as --gpus when it saw it) */
    snprintf(g->set, sizeof(g->set), "%s", c);
    g->limited = 1;
  }
  return 0;
}

const char *wk_gpus_policy(const wk_gpus *g) { return g->limited ? g->set : NULL; }

int wk_gpus_apply(wk_gpus *g, const weftx_place *pl, weftx_rank_info *ri, weftx_env *env,
                  weftx_gpu_visibility vis, char *why, size_t len)
{
  int set[WEFTX_SLURM_GPUS_MAX], nset = 0;
  const char *c = weftx_env_get(env, "CUDA_VISIBLE_DEVICES");
  if (!g->limited)
    return 0;
  if (weftx_slurm_gpu_indices("--gpus", g->set, set, WEFTX_SLURM_GPUS_MAX, &nset, NULL, 0)) {
    snprintf(why, len, "GPUs '%s' of this host do not parse", g->set);
    return -1;
  }
  /* under a CPU mapping Open MPI placed the rank and its GPU is the nearest one of
   * the host: it must be one this job may have */
  if (pl->gpu >= 0 && member(set, nset, pl->gpu) < 0) {
    snprintf(why, len,
             "this rank's GPU %d (the nearest its binding) is not one of the GPUs "
             "it may have on this host (%s%s%s); use --map-by gpu",
             pl->gpu, g->set, g->slurm ? ", " : "", g->slurm ? g->step_var : "");
    return -1;
  }
  if (g->slurm) {
    /* the step's numbering: node index g->node[i] is CUDA device g->cuda[i] here */
    for (int i = 0; i < nset; i++)
      g->devices[i] = g->cuda[member(g->node, g->npairs, set[i])];
    g->ndevices = nset;
    ri->devices = g->devices;
    ri->ndevices = g->ndevices;
    ri->gpu = pl->gpu < 0 ? -1 : g->cuda[member(g->node, g->npairs, pl->gpu)];
    if (vis != WEFTX_GPUVIS_NONE)
      weftx_env_unset(env, "CUDA_VISIBLE_DEVICES"); /* Slurm's: weft writes it within the step's */
    return 0;
  }
  if (c) {
    /* the user's: kept, so the rank's GPU must be one of it */
    int cv[WEFTX_SLURM_GPUS_MAX], nc = 0;
    if (pl->gpu >= 0 &&
        !weftx_slurm_gpu_indices("CUDA_VISIBLE_DEVICES", c, cv, WEFTX_SLURM_GPUS_MAX, &nc, NULL,
                                 0) &&
        member(cv, nc, pl->gpu) < 0) {
      snprintf(why, len,
               "this rank's GPU %d is not in CUDA_VISIBLE_DEVICES=%s, which you set; "
               "unset it, or let weftrun see it",
               pl->gpu, c);
      return -1;
    }
    return 0;
  }
  memcpy(g->devices, set, (size_t)nset * sizeof(*set));
  g->ndevices = nset;
  ri->devices = g->devices;
  ri->ndevices = g->ndevices;
  return 0;
}
