/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which of weftrun's variables every host gets: weftx_env_forward_default()'s
 * (as mpirun's -x would name them) less those that describe one host
 * (WEFT_TOPOLOGY, weft-vcluster's node name, the paths of weft's own
 * programs) and a CUDA_VISIBLE_DEVICES that Slurm set for this host's step.
 * When Open MPI places the ranks, mpirun passes everything else as it would
 * alone. mpirun gets them as -x (mpirun.c; srun hands every rank weftrun's
 * whole environment), and --dry-run shows them (plan/preview.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Both lists parse as GPU indices and have as many: Slurm's pair. */
static int same_count(const char *a, const char *b)
{
  int x[WEFTX_SLURM_GPUS_MAX], y[WEFTX_SLURM_GPUS_MAX], nx = 0, ny = 0;
  return !weftx_slurm_gpu_indices("a", a, x, WEFTX_SLURM_GPUS_MAX, &nx, NULL, 0) &&
         !weftx_slurm_gpu_indices("b", b, y, WEFTX_SLURM_GPUS_MAX, &ny, NULL, 0) && nx == ny;
}

int wr_slurm_cvd_is_slurms(void)
{
  const char *c = getenv("CUDA_VISIBLE_DEVICES"), *s = getenv("SLURM_STEP_GPUS");
  if (!s)
    s = getenv("SLURM_JOB_GPUS");
  return c && s && getenv("SLURM_JOB_ID") && same_count(c, s);
}

/* Forwarded by default, whoever places the ranks. */
static int forwarded(const char *name, size_t n)
{
  /* WEFT_TOPOLOGY and weft-vcluster's node name describe one host, so they stay with
   * the host they were set on (each host has its own). */
  static const char *const kept[] = {"WEFT_TOPOLOGY", "WEFT_VCLUSTER_NODE", "WEFT_RANK_PATH",
                                     "WEFT_MPIRUN",   "WEFT_SRUN",          NULL};
  char *copy = strndup(name, n);
  int yes = copy != NULL;
  for (int i = 0; yes && kept[i]; i++)
    if (!strcmp(copy, kept[i]))
      yes = 0;
  /* a CUDA_VISIBLE_DEVICES that Slurm set is for this host's step, not the job's */
  if (yes && !strcmp(copy, "CUDA_VISIBLE_DEVICES") && wr_slurm_cvd_is_slurms())
    yes = 0;
  yes = yes && weftx_env_forward_default(copy);
  free(copy);
  return yes;
}

int wr_engine_forwards(const wr_plan *p, const char *name, size_t n)
{
  /* When Open MPI places the ranks, everything else is as mpirun passes it */
  if (p->mpirun_binds && (n <= 5 || strncmp(name, "WEFT_", 5) != 0))
    return 0;
  return forwarded(name, n);
}

/* Names that look meant for the job: libraries' and frameworks' settings a torchrun
 * user expects on every node (torchrun's workers inherit the whole environment). */
static int looks_meant(const char *name, size_t n)
{
  static const char *const prefixes[] = {
    "NCCL_", "GLOO_", "CUDA_", "OMP_", "PYTHON",  "TORCH", "HF_",  "TRANSFORMERS_", "WANDB_",
    "MKL_",  "KMP_",  "UCX_",  "FI_",  "NVIDIA_", "XLA_",  "JAX_", "TF_",           NULL};
  static const char *const names[] = {"LD_LIBRARY_PATH", "LD_PRELOAD", "VIRTUAL_ENV",
                                      "CONDA_PREFIX", NULL};
  for (int i = 0; prefixes[i]; i++)
    if (n >= strlen(prefixes[i]) && !strncmp(name, prefixes[i], strlen(prefixes[i])))
      return 1;
  for (int i = 0; names[i]; i++)
    if (n == strlen(names[i]) && !strncmp(name, names[i], n))
      return 1;
  return 0;
}

/* Given with -x (NAME or NAME=VALUE). */
static int given(const wr_opts *o, const char *name, size_t n)
{
  for (int i = 0; i < o->nxvars; i++)
    if (!strncmp(o->xvars[i], name, n) && (o->xvars[i][n] == '\0' || o->xvars[i][n] == '='))
      return 1;
  return 0;
}

int wr_engine_left_here(const wr_plan *p, const wr_opts *o, char *const *envp, char *buf,
                        size_t len)
{
  int found = 0, remote = 0, full = 0;
  size_t used = 0;
  buf[0] = '\0';
  for (int h = 0; h < p->nhosts; h++)
    remote |= !p->hosts[h].host->local;
  for (; remote && envp && *envp; envp++) {
    const char *eq = strchr(*envp, '=');
    size_t n = eq ? (size_t)(eq - *envp) : 0;
    if (!n || !looks_meant(*envp, n) || given(o, *envp, n) || wr_engine_forwards(p, *envp, n))
      continue;
    found++;
    if (full)
      continue;
    int w = snprintf(buf + used, len - used, "%s%.*s", used ? " " : "", (int)n, *envp);
    if (w < 0 || (size_t)w >= len - used) {
      buf[used] = '\0'; /* whole names only; the count says how many */
      full = 1;
    } else {
      used += (size_t)w;
    }
  }
  return found;
}
