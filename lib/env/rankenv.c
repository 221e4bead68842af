/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-rank environment as a pure function of the rank's numbers and
 * placement: the torchrun variables (RANK, LOCAL_RANK, MASTER_ADDR, ...), the
 * CUDA device order and visibility, OMP_NUM_THREADS, the NCCL and gloo
 * interfaces, and weft's own WEFT_*. Every variable is set only when the user
 * has not set it.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <string.h>
#include <strings.h>

int weftx_gpu_visibility_parse(const char *s, weftx_gpu_visibility *out)
{
  if (!s || !out)
    return WEFT_EPARSE;
  if (strcasecmp(s, "all") == 0)
    *out = WEFTX_GPUVIS_ALL;
  else if (strcasecmp(s, "own") == 0)
    *out = WEFTX_GPUVIS_OWN;
  else if (strcasecmp(s, "none") == 0)
    *out = WEFTX_GPUVIS_NONE;
  else
    return WEFT_EPARSE;
  return 0;
}

void weftx_rank_info_init(weftx_rank_info *ri)
{
  memset(ri, 0, sizeof(*ri));
  ri->size = ri->local_size = ri->nnodes = 1;
  ri->gpu = -1;
  ri->gpu_visibility = WEFTX_GPUVIS_ALL;
}

/* Append ",n" (or "n" first) to buf at *used. */
static int put_index(char *buf, size_t len, size_t *used, int n)
{
  char piece[16];

  weft__snprintf(piece, sizeof(piece), "%s%d", *used ? "," : "", n);
  if (*used + strlen(piece) >= len)
    return WEFT_ERANGE;
  memcpy(buf + *used, piece, strlen(piece) + 1);
  *used += strlen(piece);
  return 0;
}

/* Device i of \p ids; NULL stands for 0, 1, 2, ... */
static int id_at(const int *ids, int i) { return ids ? ids[i] : i; }

/* The devices \p ids with \p gpu at position \p pos and the others in order around it. */
static int rotated(const int *ids, int n, int gpu, int pos, char *buf, size_t len)
{
  size_t used = 0;
  int next = 0;

  for (int slot = 0; slot < n; slot++) {
    int g;
    if (slot == pos) {
      g = gpu;
    } else {
      if (id_at(ids, next) == gpu)
        next++;
      g = id_at(ids, next++);
    }
    if (put_index(buf, len, &used, g))
      return WEFT_ERANGE;
  }
  return 0;
}

static int is_one_of(const int *ids, int n, int v)
{
  for (int i = 0; i < n; i++)
    if (id_at(ids, i) == v)
      return 1;
  return 0;
}

/* weftx_cuda_visible_list(), with NULL ids for 0..n-1. */
static int visible(weftx_gpu_visibility mode, const int *ids, int n, int gpu, int local_rank,
                   char *buf, size_t len)
{
  if (!buf || len == 0)
    return WEFT_ERANGE;
  buf[0] = '\0';
  if (local_rank < 0 || (gpu >= 0 && !is_one_of(ids, n, gpu)))
    return WEFT_EINVAL;
  if (mode == WEFTX_GPUVIS_NONE || n <= 0)
    return 1;
  if (mode == WEFTX_GPUVIS_OWN)
    return gpu < 0 ? 0 : weft__snprintf(buf, len, "%d", gpu);
  if (gpu < 0)
    return 1;
  return rotated(ids, n, gpu, local_rank < n ? local_rank : 0, buf, len);
}

int weftx_cuda_visible_list(weftx_gpu_visibility mode, const int *ids, int n, int gpu,
                            int local_rank, char *buf, size_t len)
{
  if (n < 0 || (n > 0 && !ids)) {
    if (buf && len)
      buf[0] = '\0';
    return WEFT_EINVAL;
  }
  return visible(mode, ids, n, gpu, local_rank, buf, len);
}

int weftx_cuda_visible_devices(weftx_gpu_visibility mode, int ngpus, int gpu, int local_rank,
                               char *buf, size_t len)
{
  return visible(mode, NULL, ngpus > 0 ? ngpus : 0, gpu, local_rank, buf, len);
}

static int bad_info(char *why, size_t whylen, const char *what, int a, int b)
{
  if (why)
    weft__snprintf(why, whylen, "per-rank environment: %s %d is not in 0..%d", what, a, b - 1);
  return WEFT_EINVAL;
}

static int check_info(const weftx_rank_info *ri, char *why, size_t whylen)
{
  if (ri->size < 1 || ri->rank < 0 || ri->rank >= ri->size)
    return bad_info(why, whylen, "rank", ri->rank, ri->size);
  if (ri->local_size < 1 || ri->local_size > ri->size || ri->local_rank < 0 ||
      ri->local_rank >= ri->local_size)
    return bad_info(why, whylen, "local rank", ri->local_rank, ri->local_size);
  if (ri->nnodes < 1 || ri->node_rank < 0 || ri->node_rank >= ri->nnodes)
    return bad_info(why, whylen, "node rank", ri->node_rank, ri->nnodes);
  if (ri->master_port < 0 || ri->master_port > 65535)
    return bad_info(why, whylen, "MASTER_PORT", ri->master_port, 65536);
  if (ri->devices && ri->gpu >= 0 && !is_one_of(ri->devices, ri->ndevices, ri->gpu)) {
    if (why)
      weft__snprintf(why, whylen,
                     "per-rank environment: GPU %d is not one of the %d the rank "
                     "may see",
                     ri->gpu, ri->ndevices);
    return WEFT_EINVAL;
  }
  if (!ri->devices && ri->gpu >= 0 && ri->gpu >= ri->ngpus)
    return bad_info(why, whylen, "GPU", ri->gpu, ri->ngpus);
  return 0;
}

static int set_int(weftx_env *env, const char *key, long v)
{
  char buf[32];

  weft__snprintf(buf, sizeof(buf), "%ld", v);
  return weftx_env_set_default(env, key, buf, WEFTX_ENV_WEFT, NULL);
}

static int set_str(weftx_env *env, const char *key, const char *v)
{
  if (!v)
    return 0;
  return weftx_env_set_default(env, key, v, WEFTX_ENV_WEFT, NULL);
}

/* The torchrun set: who am I among how many. */
static int set_ranks(weftx_env *env, const weftx_rank_info *ri)
{
  int rc = 0;

  rc |= set_int(env, "RANK", ri->rank) < 0;
  rc |= set_int(env, "WORLD_SIZE", ri->size) < 0;
  rc |= set_int(env, "LOCAL_RANK", ri->local_rank) < 0;
  rc |= set_int(env, "LOCAL_WORLD_SIZE", ri->local_size) < 0;
  rc |= set_int(env, "NODE_RANK", ri->node_rank) < 0;
  rc |= set_int(env, "GROUP_RANK", ri->node_rank) < 0;
  rc |= set_int(env, "GROUP_WORLD_SIZE", ri->nnodes) < 0;
  /* torchrun's one role: ROLE_* as RANK and WORLD_SIZE */
  rc |= set_int(env, "ROLE_RANK", ri->rank) < 0;
  rc |= set_int(env, "ROLE_WORLD_SIZE", ri->size) < 0;
  rc |= set_str(env, "TORCHELASTIC_RUN_ID", ri->run_id ? ri->run_id : "none") < 0;
  /* weftrun's whole-job restarts, as torchrun numbers them */
  rc |= set_str(env, "TORCHELASTIC_RESTART_COUNT", ri->restart_count) < 0;
  rc |= set_str(env, "TORCHELASTIC_MAX_RESTARTS", ri->max_restarts) < 0;
  if (ri->master_addr && *ri->master_addr)
    rc |= set_str(env, "MASTER_ADDR", ri->master_addr) < 0;
  if (ri->master_port > 0)
    rc |= set_int(env, "MASTER_PORT", ri->master_port) < 0;
  return rc ? WEFT_ENOMEM : 0;
}

/* PyTorch's gloo backend takes its interface from GLOO_SOCKET_IFNAME, not from NCCL's
 * variable, and on a VM with several NICs picks one by the host name otherwise: give it
 * the NCCL socket interface(s) the rank ends up with, whoever chose them. Gloo wants
 * exact names, so NCCL's '=' (exact match) is dropped and an exclusion list ("^docker")
 * is not passed on. */
static int set_gloo(weftx_env *env)
{
  const char *v = weftx_env_get(env, "NCCL_SOCKET_IFNAME");

  if (!v || *v == '^')
    return 0;
  if (*v == '=')
    v++;
  return *v ? set_str(env, "GLOO_SOCKET_IFNAME", v) : 0;
}

/* Devices, threads, network, and weft's own variables. */
static int set_place(weftx_env *env, const weftx_rank_info *ri, char *why, size_t whylen)
{
  char cvd[WEFTX_RANK_CPUS_MAX];
  int rc = 0, vis, gpu;

  if (ri->devices)
    vis = weftx_cuda_visible_list(ri->gpu_visibility, ri->devices, ri->ndevices, ri->gpu,
                                  ri->local_rank, cvd, sizeof(cvd));
  else
    vis = weftx_cuda_visible_devices(ri->gpu_visibility, ri->ngpus, ri->gpu, ri->local_rank, cvd,
                                     sizeof(cvd));
  if (vis < 0) {
    if (why)
      weft__snprintf(why, whylen, "per-rank environment: GPU %d of a host with %d GPUs", ri->gpu,
                     ri->ngpus);
    return vis;
  }
  /* Every rank, GPU host or not (DESIGN.md): a CUDA program started on a
   * host whose GPUs weft did not see still numbers them in PCI order. */
  rc |= set_str(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID") < 0;
  if (vis == 0)
    rc |= set_str(env, "CUDA_VISIBLE_DEVICES", cvd) < 0;
  if (ri->ncores > 0)
    rc |= set_int(env, "OMP_NUM_THREADS", ri->ncores) < 0;
  if (ri->ifname && *ri->ifname)
    rc |= set_str(env, "NCCL_SOCKET_IFNAME", ri->ifname) < 0;
  rc |= set_gloo(env) < 0;
  gpu = set_int(env, "WEFT_GPU", ri->gpu < 0 ? -1 : ri->gpu);
  rc |= gpu < 0;
  /* WEFT_GPU_PCI says which GPU weft's WEFT_GPU is (libweft asks CUDA for it where
   * CUDA numbers GPUs otherwise): beside a WEFT_GPU the user set it could name another
   * GPU, so it comes only with weft's own */
  if (gpu == 0 && ri->gpu >= 0 && ri->gpu_pci[0])
    rc |= set_str(env, "WEFT_GPU_PCI", ri->gpu_pci) < 0;
  if (ri->cpus[0])
    rc |= set_str(env, "WEFT_CPUS", ri->cpus) < 0;
  if (ri->nic[0])
    rc |= set_str(env, "WEFT_NIC", ri->nic) < 0;
  rc |= set_int(env, "WEFT_LOCAL_RANK", ri->local_rank) < 0;
  rc |= set_int(env, "WEFT_LOCAL_SIZE", ri->local_size) < 0;
  rc |= set_int(env, "WEFT_NODE_RANK", ri->node_rank) < 0;
  rc |= set_int(env, "WEFT_NNODES", ri->nnodes) < 0;
  return rc ? WEFT_ENOMEM : 0;
}

int weftx_rank_env(weftx_env *env, const weftx_rank_info *ri, char *why, size_t whylen)
{
  int rc;

  if (!env || !ri)
    return WEFT_EINVAL;
  rc = check_info(ri, why, whylen);
  if (rc == 0)
    rc = set_ranks(env, ri);
  if (rc == 0)
    rc = set_place(env, ri, why, whylen);
  WEFT__LOG(ENV, "rank %d: environment of %d variables (rc %d)", ri->rank, weftx_env_count(env),
            rc);
  return rc;
}
