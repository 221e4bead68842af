/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft_init and weft_finalize: MPI (when the program has not started it),
 * the settings read from the environment (settings.c) and checked alike on
 * every rank, local and node ranks, the device index, and the per-context
 * "last error" line. Both run under the
 * watchdog (watch.c): weft_init within WEFT_INIT_TIMEOUT. Nothing here touches
 * CUDA unless WEFT_BACKEND=nccl asks for it.
 */
#include "rt_private.h"

#include <weftx/page.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weft__rt_fail(weft_ctx *ctx, int code, const char *fmt, ...)
{
  char line[sizeof(ctx->err)];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (ctx) {
    memcpy(ctx->err, line, sizeof(line));
    /* Bad arguments are the caller's to report; failures of the job (MPI,
     * NCCL, CUDA, timeouts, peers) also go to stderr, as they may come
     * right before an abort. */
    if (code == WEFT_EINVAL || code == WEFT_EDTYPE || code == WEFT_ERANGE ||
        code == WEFT_EOVERFLOW || code == WEFT_EPARSE || code == WEFT_ENAME)
      WEFT__LOG(RT, "rank %d: %s (%s)", ctx->rank, line, weft_err_name(code));
    else
      fprintf(stderr, "weft: rank %d: %s (%s)\n", ctx->rank, line, weft_err_name(code));
  } else {
    fprintf(stderr, "weft: %s (%s)\n", line, weft_err_name(code));
  }
  return code;
}

/* Entries of CUDA_VISIBLE_DEVICES (0 when unset or empty). */
static int visible_count(const char *vis)
{
  int n = 0;

  if (!vis || !*vis)
    return 0;
  for (n = 1; *vis; vis++)
    n += *vis == ',';
  return n;
}

/* The CUDA device of this rank. weftrun sets WEFT_GPU to the GPU's index in
 * PCI order (the topology's numbering; -1 for a rank without a GPU, a list for
 * several), while CUDA numbers only the devices it can see, in the order of
 * CUDA_VISIBLE_DEVICES: the device to use is WEFT_GPU's position in that list.
 * Without WEFT_GPU, the local rank; but where only one device is visible
 * (Slurm's --gpus-per-task=1, a wrapper that sets CUDA_VISIBLE_DEVICES to the
 * local rank) it is device 0 whatever the local rank. -1 means "no GPU",
 * which only the NCCL path checks. Nothing here asks CUDA. */
static int device_from_env(weft_ctx *ctx)
{
  const char *s = getenv("WEFT_GPU");
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  int nvis = visible_count(vis);
  char first[32];
  size_t n;
  long v;

  ctx->device = nvis == 1 ? 0 : ctx->local_rank;
  if (!s || !*s)
    return 0;
  n = strcspn(s, ",");
  if (n >= sizeof(first))
    return weft__rt_fail(ctx, WEFT_EINVAL, "WEFT_GPU=%s is not a device index", s);
  memcpy(first, s, n);
  first[n] = '\0';
  if (weftx_parse_long(first, -1, 1 << 20, &v) != 0)
    return weft__rt_fail(ctx, WEFT_EINVAL, "WEFT_GPU=%s is not a device index (or -1 for none)",
                         s);
  ctx->device = (int)v;
  if (v < 0 || !nvis)
    return 0;
  /* Position of the GPU in CUDA_VISIBLE_DEVICES; entries that are not plain
   * indexes (UUIDs, MIG names) cannot be matched: one such entry is the
   * device (0), several leave WEFT_GPU as it is. */
  for (int pos = 0; *vis; pos++) {
    size_t len = strcspn(vis, ",");
    char item[32];
    long idx = -1;
    if (len < sizeof(item)) {
      memcpy(item, vis, len);
      item[len] = '\0';
      if (weftx_parse_long(item, 0, 1 << 20, &idx) != 0)
        idx = -1;
    }
    if (idx < 0) {
      if (nvis == 1)
        ctx->device = 0;
      return 0;
    }
    if (idx == v) {
      ctx->device = pos;
      return 0;
    }
    vis += len;
    if (*vis == ',')
      vis++;
  }
  return weft__rt_fail(ctx, WEFT_EINVAL,
                       "WEFT_GPU=%s is not among CUDA_VISIBLE_DEVICES=%s; leave one of them to "
                       "weftrun", s, getenv("CUDA_VISIBLE_DEVICES"));
}

/* Local rank/size and host index of every rank. WEFT_RANKS_PER_NODE=K (for
 * tests) pretends that each K consecutive ranks share a host. */
static int find_hosts(weft_ctx *ctx, MPI_Comm world)
{
  MPI_Comm local = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  int rc, i, node = 0;

  if (ctx->ranks_per_node) {
    rc = MPI_Comm_split(world, ctx->rank / (int)ctx->ranks_per_node, ctx->rank, &local);
  } else {
    rc = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &local);
  }
  if (rc != MPI_SUCCESS)
    return weft__rt_fail(ctx, WEFT_EMPI, "weft_init: splitting the world by host failed");
  MPI_Comm_rank(local, &ctx->local_rank);
  MPI_Comm_size(local, &ctx->local_size);

  rc = MPI_Comm_split(world, ctx->local_rank == 0 ? 0 : MPI_UNDEFINED, ctx->rank, &leaders);
  if (rc == MPI_SUCCESS && leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(leaders, &node);
    MPI_Comm_size(leaders, &ctx->node_count);
    MPI_Comm_free(&leaders);
  }
  if (rc == MPI_SUCCESS)
    rc = MPI_Bcast(&node, 1, MPI_INT, 0, local);
  if (rc == MPI_SUCCESS)
    rc = MPI_Bcast(&ctx->node_count, 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  ctx->node_rank = node;
  ctx->node_of = calloc((size_t)ctx->size, sizeof(int));
  if (!ctx->node_of)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "weft_init: out of memory");
  if (rc == MPI_SUCCESS)
    rc = MPI_Allgather(&node, 1, MPI_INT, ctx->node_of, 1, MPI_INT, world);
  if (rc != MPI_SUCCESS)
    return weft__rt_fail(ctx, WEFT_EMPI, "weft_init: exchanging host indices failed");
  for (i = 0; i < ctx->size; i++)
    WEFT__LOG(RT, "rank %d on host %d", i, ctx->node_of[i]);
  return 0;
}

int weft_init(int *argc, char ***argv, weft_ctx **out)
{
  weft_ctx *ctx;
  MPI_Comm world = MPI_COMM_NULL;
  int inited = 0, rc;

  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  ctx = calloc(1, sizeof(*ctx));
  if (!ctx)
    return WEFT_ENOMEM;

  /* from here the call page says "in weft_init", and WEFT_INIT_TIMEOUT runs */
  weft__watch_start();
  MPI_Initialized(&inited);
  if (!inited) {
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      free(ctx);
      weft__watch_stop(0);
      return weft__rt_fail(NULL, WEFT_EMPI, "weft_init: MPI_Init_thread failed");
    }
    ctx->own_mpi = 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx->size);

  if (MPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS) {
    rc = weft__rt_fail(ctx, WEFT_EMPI, "weft_init: MPI_Comm_dup(MPI_COMM_WORLD) failed");
    goto fail;
  }
  /* Errors come back as codes, so that we can name them and clean up. */
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  /* Every rank reads its settings, then all check that they read the same:
   * a rank that could not, or values that differ, fail weft_init everywhere. */
  rc = weft__settings_read(ctx);
  if (ctx->init_timeout == 0) /* off: NCCL's start is not bounded either */
    ctx->init_timeout = 1e9;
  if ((rc = weft__settings_agree(ctx, world, rc)) != 0 || (rc = find_hosts(ctx, world)) != 0 ||
      (rc = device_from_env(ctx)) != 0)
    goto fail;
  if ((rc = weft__group_new(ctx, world, "world", &ctx->world)) != 0)
    goto fail;
  world = MPI_COMM_NULL;
  if (ctx->backend == WEFT__BACKEND_NCCL && (rc = weft__nccl_check(ctx)) != 0)
    goto fail;
  WEFT__LOG(RT, "rank %d/%d local %d/%d host %d/%d device %d", ctx->rank, ctx->size,
            ctx->local_rank, ctx->local_size, ctx->node_rank, ctx->node_count, ctx->device);
  weft__watch_ready(ctx->rank);
  *out = ctx;
  return 0;

fail:
  /* There is no ctx left to ask weft_last_error(): say it here. */
  if (rc == WEFT_EINVAL && ctx->err[0])
    fprintf(stderr, "weft: rank %d: %s (%s)\n", ctx->rank, ctx->err, weft_err_name(rc));
  if (world != MPI_COMM_NULL)
    MPI_Comm_free(&world);
  weft__group_free(ctx->world);
  free(ctx->node_of);
  if (ctx->own_mpi)
    MPI_Finalize();
  free(ctx);
  weft__watch_stop(0);
  return rc;
}

int weft_finalize(weft_ctx *ctx)
{
  int rc = 0;

  if (!ctx)
    return 0;
  weft__call_enter(NULL, WEFTX_OP_FINALIZE, 0);
  while (ctx->meshes)
    weft_mesh_destroy(ctx->meshes);
  weft__group_free(ctx->world);
  weft__nccl_ctx_free(ctx);
  free(ctx->node_of);
  weft__dtype_fini();
  if (ctx->own_mpi) {
    if (MPI_Finalize() != MPI_SUCCESS)
      rc = WEFT_EMPI;
  }
  free(ctx);
  weft__call_exit();
  weft__watch_stop(1);
  return rc;
}

int weft_rank(const weft_ctx *ctx) { return ctx ? ctx->rank : WEFT_EINVAL; }
int weft_size(const weft_ctx *ctx) { return ctx ? ctx->size : WEFT_EINVAL; }
int weft_local_rank(const weft_ctx *ctx) { return ctx ? ctx->local_rank : WEFT_EINVAL; }
int weft_local_size(const weft_ctx *ctx) { return ctx ? ctx->local_size : WEFT_EINVAL; }
int weft_node_rank(const weft_ctx *ctx) { return ctx ? ctx->node_rank : WEFT_EINVAL; }
int weft_node_count(const weft_ctx *ctx) { return ctx ? ctx->node_count : WEFT_EINVAL; }
int weft_device(const weft_ctx *ctx) { return ctx ? ctx->device : WEFT_EINVAL; }

const char *weft_last_error(const weft_ctx *ctx)
{
  return ctx ? ctx->err : "no context";
}

weft_group *weft_world(weft_ctx *ctx)
{
  return ctx ? ctx->world : NULL;
}
