/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL backend: device buffers, ordered on the caller's stream.
 *
 * CUDA is asked nothing until a buffer's location matters: without an NVIDIA
 * driver on the machine (no /dev/nvidiactl) every pointer is host memory and
 * CUDA is never called. A group's NCCL communicator comes up at its first
 * device collective: group rank 0's ncclGetUniqueId goes out over MPI, then
 * a non-blocking ncclCommInitRankConfig is polled against WEFT_INIT_TIMEOUT;
 * on failure the communicator is aborted and the ranks exchange a "ready"
 * flag through group rank 0, so that the error names those that never came.
 */
#include "rt_private.h"

#include <cuda_runtime.h>
/* nccl.h declares a few functions as f() (no prototype). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int driver_present(void)
{
  return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/dxg", F_OK) == 0 ||
         access("/proc/driver/nvidia/version", F_OK) == 0;
}

/* 1 when CUDA can run here (probed once per ctx), -1 otherwise. */
static int cuda_usable(weft_ctx *ctx)
{
  int n = 0;

  if (ctx->cuda_state == 0) {
    ctx->cuda_state = -1;
    if (driver_present() && cudaGetDeviceCount(&n) == cudaSuccess && n > 0)
      ctx->cuda_state = 1;
    else
      (void)cudaGetLastError();
  }
  return ctx->cuda_state;
}

int weft__is_device_ptr(weft_ctx *ctx, const void *p)
{
  struct cudaPointerAttributes a;

  if (cuda_usable(ctx) != 1)
    return 0;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int weft__nccl_check(weft_ctx *ctx)
{
  cudaError_t e;
  int n = 0;

  if (!driver_present())
    return weft__rt_fail(ctx, WEFT_ENOGPU,
                         "NCCL was asked for, but this machine has no NVIDIA driver (no "
                         "/dev/nvidiactl); run on a GPU host or set WEFT_BACKEND=mpi");
  e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return weft__rt_fail(ctx, WEFT_ENOCUDA, "NCCL was asked for, but CUDA does not start: %s",
                         cudaGetErrorString(e));
  }
  if (n == 0)
    return weft__rt_fail(ctx, WEFT_ENOGPU, "NCCL was asked for, but no GPU is visible "
                                           "(check CUDA_VISIBLE_DEVICES)");
  if (ctx->device < 0)
    return weft__rt_fail(ctx, WEFT_ENOGPU, "NCCL was asked for, but weftrun gave this rank no "
                                           "GPU (WEFT_GPU=-1): use --map-by gpu, or host buffers");
  if (ctx->device >= n)
    return weft__rt_fail(ctx, WEFT_ERANGE,
                         "this rank's device is %d (WEFT_GPU or the local rank), but only %d "
                         "GPU(s) are visible",
                         ctx->device, n);
  ctx->cuda_state = 1;
  return 0;
}

void weft__nccl_group_free(weft_group *g)
{
  ncclComm_t comm = (ncclComm_t)g->nccl;
  ncclResult_t st = ncclSuccess;
  double end;

  if (!comm)
    return;
  g->nccl = NULL;
  /* A non-blocking communicator is finalised (polled, bounded) before it
   * is destroyed; anything wrong and it is aborted instead. */
  end = weft__now() + (g->ctx->init_timeout < 30 ? g->ctx->init_timeout : 30);
  if (ncclCommGetAsyncError(comm, &st) == ncclSuccess && st == ncclSuccess) {
    st = ncclCommFinalize(comm);
    while (st == ncclInProgress && weft__now() < end) {
      if (ncclCommGetAsyncError(comm, &st) != ncclSuccess)
        st = ncclInternalError;
      if (st == ncclInProgress)
        sched_yield();
    }
  }
  if (st == ncclSuccess)
    ncclCommDestroy(comm);
  else
    ncclCommAbort(comm);
}

void weft__nccl_ctx_free(weft_ctx *ctx) { ctx->nccl_world = NULL; }

/* Wait for an MPI request until time end; 0, or 1 on timeout. */
static int poll_until(MPI_Request *req, double end)
{
  for (;;) {
    int flag = 0;
    if (MPI_Test(req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag)
      return 0;
    if (weft__now() > end)
      return 1;
    sched_yield();
  }
}

/* poll_until, and a request that did not complete in time is cancelled and
 * freed: its buffer may be the caller's stack or memory it frees next. */
static int poll_or_cancel(MPI_Request *req, double end)
{
  if (!poll_until(req, end))
    return 0;
  MPI_Cancel(req);
  MPI_Request_free(req);
  return 1;
}

/* Every rank's flag (1 ready, 0 failed, -1 never heard of) through group
 * rank 0, each wait bounded. Returns 0, or WEFT_ETIMEDOUT when rank 0 did not
 * answer. */
static int exchange_flags(weft_group *g, int mine, int *flags, double end)
{
  int i;

  for (i = 0; i < g->size; i++)
    flags[i] = -1;
  flags[g->rank] = mine;
  if (g->rank == 0) {
    MPI_Request *reqs = calloc((size_t)g->size, sizeof(*reqs));
    if (!reqs)
      return WEFT_ENOMEM;
    reqs[0] = MPI_REQUEST_NULL;
    for (i = 1; i < g->size; i++)
      if (MPI_Irecv(&flags[i], 1, MPI_INT, i, 7, g->comm, &reqs[i]) != MPI_SUCCESS)
        reqs[i] = MPI_REQUEST_NULL;
    for (;;) {
      int done = 0;
      if (MPI_Testall(g->size, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done ||
          weft__now() > end)
        break;
      sched_yield();
    }
    for (i = 1; i < g->size; i++)
      if (reqs[i] != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
        if (!flag) { /* never came */
          MPI_Cancel(&reqs[i]);
          MPI_Request_free(&reqs[i]);
          flags[i] = -1;
        }
      }
    free(reqs);
    for (i = 1; i < g->size; i++) {
      MPI_Request req;
      if (flags[i] >= 0 && MPI_Isend(flags, g->size, MPI_INT, i, 8, g->comm, &req) == MPI_SUCCESS)
        poll_or_cancel(&req, end);
    }
    return 0;
  } else {
    MPI_Request req;
    if (MPI_Isend(&mine, 1, MPI_INT, 0, 7, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    if (MPI_Irecv(flags, g->size, MPI_INT, 0, 8, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    return 0;
  }
}

static int comm_up(weft_group *g, ncclComm_t *out)
{
  weft_ctx *ctx = g->ctx;
  struct {
    int ok;
    ncclUniqueId id;
  } boot;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t r, st = ncclInProgress;
  MPI_Request req;
  double end = weft__now() + ctx->init_timeout;
  int rc = 0, *flags, i, ok;
  char why[256] = "";

  if (g->nccl) {
    *out = (ncclComm_t)g->nccl;
    return 0;
  }
  if ((rc = weft__nccl_check(ctx)) != 0)
    return rc;
  if (cudaSetDevice(ctx->device) != cudaSuccess)
    return weft__rt_fail(ctx, WEFT_ECUDA, "cudaSetDevice(%d) failed", ctx->device);
  memset(&boot, 0, sizeof(boot));
  if (g->rank == 0) {
    r = ncclGetUniqueId(&boot.id);
    boot.ok = r == ncclSuccess;
    if (!boot.ok)
      weft__snprintf(why, sizeof(why), "ncclGetUniqueId: %s", ncclGetErrorString(r));
  }
  if (MPI_Ibcast(&boot, (int)sizeof(boot), MPI_BYTE, 0, g->comm, &req) != MPI_SUCCESS)
    return weft__rt_fail(ctx, WEFT_EMPI, "NCCL bootstrap of group %s: MPI_Ibcast failed",
                         g->name);
  if (poll_until(&req, end))
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                         "NCCL bootstrap of group %s: no unique id from world rank %d within "
                         "%gs (WEFT_INIT_TIMEOUT); abort the job",
                         g->name, g->world_ranks[0], ctx->init_timeout);
  if (!boot.ok) {
    if (!*why)
      weft__snprintf(why, sizeof(why), "world rank %d could not make an NCCL unique id",
                     g->world_ranks[0]);
    return weft__rt_fail(ctx, WEFT_ENCCL, "NCCL bootstrap of group %s: %s", g->name, why);
  }
  cfg.blocking = 0;
  cfg.commName = g->name;
  r = ncclCommInitRankConfig(&comm, g->size, boot.id, g->rank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress) {
    weft__snprintf(why, sizeof(why), "ncclCommInitRankConfig: %s", ncclGetErrorString(r));
    st = r;
  } else {
    do {
      if (ncclCommGetAsyncError(comm, &st) != ncclSuccess)
        st = ncclInternalError;
      if (st == ncclInProgress)
        sched_yield();
    } while (st == ncclInProgress && weft__now() < end);
    if (st == ncclInProgress)
      weft__snprintf(why, sizeof(why), "not up after %gs (WEFT_INIT_TIMEOUT)",
                     ctx->init_timeout);
    else if (st != ncclSuccess)
      weft__snprintf(why, sizeof(why), "%s", ncclGetErrorString(st));
  }
  if (st != ncclSuccess && comm)
    ncclCommAbort(comm);

  /* Agree on the outcome, and name whoever failed or never came. */
  flags = calloc((size_t)g->size, sizeof(int));
  if (!flags)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "NCCL bootstrap: out of memory");
  rc = exchange_flags(g, st == ncclSuccess, flags, weft__now() + (ctx->init_timeout < 10
                                                                   ? ctx->init_timeout : 10));
  ok = rc == 0;
  for (i = 0; i < g->size; i++)
    if (flags[i] != 1)
      ok = 0;
  if (!ok) {
    char list[512] = "";
    size_t len = 0;
    for (i = 0; rc == 0 && i < g->size; i++)
      if (flags[i] != 1) {
        int n = snprintf(list + len, sizeof(list) - len, "%s%d(%s)", len ? "," : "",
                         g->world_ranks[i], flags[i] < 0 ? "absent" : "failed");
        if (n > 0 && (size_t)n < sizeof(list) - len)
          len += (size_t)n;
      }
    free(flags);
    if (st == ncclSuccess)
      ncclCommAbort(comm);
    if (rc != 0)
      return weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                           "NCCL bootstrap of group %s failed%s%s; world rank %d (group rank 0) "
                           "did not answer; abort the job",
                           g->name, *why ? ": " : "", why, g->world_ranks[0]);
    return weft__rt_fail(ctx, st == ncclInProgress ? WEFT_ETIMEDOUT : WEFT_ENCCL,
                         "NCCL bootstrap of group %s failed%s%s; world rank(s) %s; abort the job",
                         g->name, *why ? ": here: " : "", why, list);
  }
  free(flags);
  g->nccl = comm;
  if (g == ctx->world)
    ctx->nccl_world = comm;
  *out = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator of %d ranks up on device %d", g->name, g->size,
            ctx->device);
  return 0;
}

int weft__nccl_split(weft_group *g, int color, int key)
{
  weft_ctx *ctx = g->ctx;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t st;
  double end = weft__now() + ctx->init_timeout;
  int ok, all = 0;

  if (!ctx->nccl_world)
    return 0;
  cfg.blocking = 0;
  cfg.commName = g->name;
  st = ncclCommSplit((ncclComm_t)ctx->nccl_world, color, key, &comm, &cfg);
  while (st == ncclInProgress && comm) {
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess)
      st = ncclInternalError;
    if (st == ncclInProgress && weft__now() > end)
      break;
    if (st == ncclInProgress)
      sched_yield();
  }
  ok = st == ncclSuccess && comm != NULL;
  /* All or none: a group whose members disagree would hang at its first
   * collective; without a split, the communicator comes up lazily. */
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->comm) != MPI_SUCCESS)
    all = 0;
  if (!all) {
    if (comm)
      ncclCommAbort(comm);
    WEFT__LOG(RT, "group %s: ncclCommSplit did not work (%s); NCCL comes up at first use",
              g->name, ncclGetErrorString(st));
    return 0;
  }
  g->nccl = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator split from the world's", g->name);
  return 0;
}

/* Abort the group's communicator after a timeout; the world's is also the
 * one later groups split from, so that pointer goes too. */
static void drop_comm(weft_group *g, ncclComm_t comm)
{
  ncclCommAbort(comm);
  g->nccl = NULL;
  if (g == g->ctx->world)
    g->ctx->nccl_world = NULL;
}

/* After a call on a non-blocking communicator: wait until it is enqueued. */
static int settle(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn)
{
  double limit = g->ctx->coll_timeout > 0 ? g->ctx->coll_timeout : g->ctx->init_timeout;
  double end = weft__now() + limit;
  ncclResult_t st = r;

  while (st == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess)
      break;
    if (st == ncclInProgress && weft__now() > end) {
      drop_comm(g, comm);
      return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT,
                           "%s on group %s: NCCL did not take the call within %gs; "
                           "communicator aborted",
                           fn, g->name, limit);
    }
  }
  if (st != ncclSuccess)
    return weft__rt_fail(g->ctx, WEFT_ENCCL, "%s on group %s: %s (%s)", fn, g->name,
                         ncclGetErrorString(st), ncclGetLastError(comm));
  return 0;
}

/* With WEFT_COLL_TIMEOUT, a device call waits (bounded) for its stream:
 * on timeout the communicator is aborted and the error names the ranks
 * that had not entered the call (arrival tokens, deadline.c). */
static int finish(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn, void *stream)
{
  double end;
  int rc = settle(g, comm, r, fn);

  if (rc != 0 || g->ctx->coll_timeout <= 0)
    return rc;
  end = weft__now() + g->ctx->coll_timeout;
  for (;;) {
    cudaError_t e = cudaStreamQuery((cudaStream_t)stream);
    if (e == cudaSuccess)
      return 0;
    if (e != cudaErrorNotReady) {
      (void)cudaGetLastError();
      return weft__rt_fail(g->ctx, WEFT_ECUDA, "%s on group %s: %s", fn, g->name,
                           cudaGetErrorString(e));
    }
    if (weft__now() > end)
      break;
    sched_yield();
  }
  drop_comm(g, comm);
  return weft__timed_out(g, fn);
}

static const ncclDataType_t nccl_types[WEFT_DTYPE_COUNT] = {
  ncclInt8, ncclUint8, ncclInt32, ncclInt64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
static const ncclRedOp_t nccl_ops[WEFT_OP_COUNT] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};

static int nc_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                        weft_op op, void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
    return rc;
  return finish(g, c, ncclAllReduce(s, r, n, nccl_types[dt], nccl_ops[op], c,
                                    (cudaStream_t)stream), "allreduce", stream);
}

static int nc_broadcast(weft_group *g, void *buf, size_t n, weft_dtype dt, int root,
                        void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
    return rc;
  return finish(g, c, ncclBroadcast(buf, buf, n, nccl_types[dt], root, c, (cudaStream_t)stream),
                "broadcast", stream);
}

/* Device to device on the caller's stream (in-place forms, bucket packing). */
static int nc_copy(weft_ctx *ctx, void *d, const void *s, size_t bytes, void *stream)
{
  cudaError_t e = cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);

  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return weft__rt_fail(ctx, WEFT_ECUDA, "cudaMemcpyAsync of %zu bytes failed: %s", bytes,
                         cudaGetErrorString(e));
  }
  return 0;
}

static int nc_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                        void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  char *mine = (char *)r + (size_t)g->rank * bytes;
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
    return rc;
  if (s == r && g->rank != 0) {
    if ((rc = nc_copy(g->ctx, mine, r, bytes, stream)) != 0)
      return rc;
    s = mine;
  }
  return finish(g, c, ncclAllGather(s, r, n, nccl_types[dt], c, (cudaStream_t)stream),
                "allgather", stream);
}

static int nc_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op, void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
    return rc;
  if (s == r && g->rank != 0) {
    /* Ours: the result at the start of the buffer; NCCL's in-place form
     * leaves it at our block, so move it afterwards. */
    char *mine = (char *)r + (size_t)g->rank * bytes;
    rc = finish(g, c, ncclReduceScatter(s, mine, n, nccl_types[dt], nccl_ops[op], c,
                                        (cudaStream_t)stream), "reduce_scatter", stream);
    return rc ? rc : nc_copy(g->ctx, r, mine, bytes, stream);
  }
  return finish(g, c, ncclReduceScatter(s, r, n, nccl_types[dt], nccl_ops[op], c,
                                        (cudaStream_t)stream), "reduce_scatter", stream);
}

static int nc_send(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer,
                   void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || n == 0)
    return rc;
  return settle(g, c, ncclSend(buf, n, nccl_types[dt], peer, c, (cudaStream_t)stream), "send");
}

static int nc_recv(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = comm_up(g, &c)) != 0 || n == 0)
    return rc;
  return settle(g, c, ncclRecv(buf, n, nccl_types[dt], peer, c, (cudaStream_t)stream), "recv");
}

static int nc_alloc(weft_ctx *ctx, void **p, size_t bytes)
{
  cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);

  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *p = NULL;
    return weft__rt_fail(ctx, WEFT_ECUDA, "cudaMalloc of %zu bytes failed: %s", bytes,
                         cudaGetErrorString(e));
  }
  return 0;
}

static void nc_free(weft_ctx *ctx, void *p)
{
  (void)ctx;
  cudaFree(p);
}

const struct weft__backend weft__backend_nccl = {
  "nccl", nc_allreduce, nc_broadcast, nc_allgather, nc_reduce_scatter,
  nc_send, nc_recv, nc_copy, nc_alloc, nc_free,
};
