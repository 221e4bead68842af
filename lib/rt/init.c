/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft_init and weft_finalize: MPI (when the program has not started it),
 * the settings read from the environment (settings.c) and checked alike on
 * every rank, local and node ranks, the device index, and the per-context
 * "last error" line. Both run under the
 * watchdog (watch.c): weft_init within WEFT_INIT_TIMEOUT. Nothing here touches
 * CUDA unless WEFT_BACKEND=nccl asks for it, but for the driver's answer to
 * which device is the rank's GPU where CUDA's numbering is not PCI order
 * (device_from_env: no context, no CUDA runtime).
 */
#include "rt_private.h"

#include <weftx/page.h>

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA device of this rank. weftrun sets WEFT_GPU to the GPU's index in
 * PCI order (the topology's numbering; -1 for a rank without a GPU; a list
 * would be for several, of which the first is the rank's), and WEFT_GPU_PCI
 * to that GPU's PCI address, while CUDA numbers only the devices it can see,
 * in the order of CUDA_VISIBLE_DEVICES, whose indexes count in the order of
 * CUDA_DEVICE_ORDER. Where that order is PCI_BUS_ID and the list holds
 * indexes only (weftrun's own, or a user's of indexes), the device is
 * WEFT_GPU's place in the list, and nothing asks CUDA. Otherwise (UUIDs or
 * MIG instances in the list, or CUDA's default order, FASTEST_FIRST, which
 * need not follow PCI order) the index says nothing about CUDA's numbering:
 * the driver is asked which device sits at WEFT_GPU_PCI
 * (cuDeviceGetByPCIBusId, no context, not the CUDA runtime); a GPU CUDA
 * cannot see, or an index without its address (WEFT_GPU set by hand), fails
 * weft_init, because any device taken then could be another GPU. Where there
 * is no usable driver the rank has no device CUDA could use at all: -1, and
 * device calls fail on the driver. Without WEFT_GPU, the local rank; but
 * where only one device is visible (Slurm's --gpus-per-task=1, a wrapper that
 * sets CUDA_VISIBLE_DEVICES to the local rank) it is device 0 whatever the
 * local rank (*by_local: 1 for the local rank, not known yet). -1 means "no
 * GPU", which only the NCCL path checks. Runs before the ranks compare their
 * settings, so that a rank that fails here fails them all. */
static int device_from_env(weft_ctx *ctx, int *by_local)
{
  const char *s = getenv("WEFT_GPU"), *pci = getenv("WEFT_GPU_PCI");
  const char *vis = getenv("CUDA_VISIBLE_DEVICES"), *order = getenv("CUDA_DEVICE_ORDER");
  char first[32], bus[32], why[160], seen[512];
  uint64_t key;
  long v;
  int ordinal, found;

  ctx->device = 0;
  *by_local = 0;
  if (!s || !*s) {
    *by_local = weft__vis_count(vis) != 1; /* known after find_hosts */
    return 0;
  }
  if (weft__first_item(s, first, sizeof(first)) != 0)
    return weft__rt_fail(ctx, WEFT_EINVAL, "WEFT_GPU=%.100s is not a device index", s);
  if (weftx_parse_long(first, -1, 1 << 20, &v) != 0)
    return weft__rt_fail(ctx, WEFT_EINVAL, "WEFT_GPU=%s is not a device index (or -1 for none)", s);
  ctx->device = (int)v;
  if (v < 0)
    return 0;
  if (pci && !*pci)
    pci = NULL;
  if (pci &&
      (weft__first_item(pci, bus, sizeof(bus)) != 0 || weft__pci_parse(bus, strlen(bus), &key)))
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "WEFT_GPU_PCI=%.100s is not a PCI address "
                         "(DOMAIN:BUS:DEVICE.FUNCTION, as 0000:04:00.0); unset it, or let "
                         "weftrun set it",
                         pci);
  if (weft__gpu_index_trusted(vis, order, why, sizeof(why))) {
    ordinal = weft__gpu_ordinal(v, vis);
    if (ordinal < 0)
      return weft__rt_fail(ctx, WEFT_EINVAL,
                           "WEFT_GPU=%s is not among CUDA_VISIBLE_DEVICES=%s; leave one of them "
                           "to weftrun",
                           s, vis);
    ctx->device = ordinal;
    return 0;
  }
  if (!pci)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "WEFT_GPU=%s is a GPU's index in PCI order, but CUDA may number the "
                         "GPUs otherwise here (%s), and without WEFT_GPU_PCI, the GPU's PCI "
                         "address, which device it is cannot be known; set WEFT_GPU_PCI (as "
                         "0000:04:00.0), or CUDA_DEVICE_ORDER=PCI_BUS_ID with indexes in "
                         "CUDA_VISIBLE_DEVICES, or launch with weftrun",
                         s, why);
  found = weft__cuda_ordinal_of_pci(bus, &ordinal, seen, sizeof(seen));
  switch (found) {
  case WEFT__BUS_FOUND:
    WEFT__LOG(RT, "rank %d: WEFT_GPU=%s is %s, CUDA device %d (asked of the driver, as %s)",
              ctx->rank, s, bus, ordinal, why);
    ctx->device = ordinal;
    return 0;
  case WEFT__BUS_NODRIVER:
    WEFT__LOG(RT, "rank %d: WEFT_GPU=%s (%s) not looked up (%s): %s; no device", ctx->rank, s, bus,
              why, seen);
    ctx->device = -1;
    return 0;
  case WEFT__BUS_UNSEEN:
    return weft__rt_fail(ctx, WEFT_ENOGPU,
                         "this rank's GPU %s at %s (WEFT_GPU, WEFT_GPU_PCI) is not one CUDA sees "
                         "with CUDA_VISIBLE_DEVICES=%.200s CUDA_DEVICE_ORDER=%.40s (%s); list it "
                         "in CUDA_VISIBLE_DEVICES, or give that list as indexes (weftrun places "
                         "ranks on those only) and leave CUDA_DEVICE_ORDER to weftrun",
                         first, bus, vis ? vis : "(unset)", order ? order : "(unset)", seen);
  default:
    return weft__rt_fail(ctx, WEFT_ECUDA,
                         "cannot tell which CUDA device is this rank's GPU %s "
                         "at %s (WEFT_GPU, WEFT_GPU_PCI): %s",
                         first, bus, seen);
  }
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
  int inited = 0, rc, by_local = 0;

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
  /* Every rank reads its settings and finds its device, then all check that
   * they read the same: a rank that could not (its line says why), or values
   * that differ, fail weft_init everywhere, instead of leaving the others to
   * wait for it in the collectives below. */
  rc = weft__settings_read(ctx);
  if (rc == 0)
    rc = device_from_env(ctx, &by_local);
  if (ctx->init_timeout == 0) /* off: NCCL's start is not bounded either */
    ctx->init_timeout = 1e9;
  if ((rc = weft__settings_agree(ctx, world, rc)) != 0 || (rc = find_hosts(ctx, world)) != 0)
    goto fail;
  if (by_local)
    ctx->device = ctx->local_rank;
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

const char *weft_last_error(const weft_ctx *ctx) { return ctx ? ctx->err : "no context"; }

weft_group *weft_world(weft_ctx *ctx) { return ctx ? ctx->world : NULL; }
