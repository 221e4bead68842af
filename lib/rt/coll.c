/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public collectives: argument checks (the same on every rank, so that
 * all ranks fail alike without talking), then dispatch by where the buffers
 * live: device memory to NCCL, host memory to MPI. WEFT_BACKEND=mpi sends
 * everything to MPI and never asks CUDA. Each call is marked on the call
 * page (watch.c) while it runs.
 */
#include "rt_private.h"

#include <stdint.h>

#include <weftx/page.h>

/* rc of the call \p expr, with the call page saying what runs meanwhile. */
#define CALL(g, op, bytes, expr)                                                                   \
  do {                                                                                             \
    weft__call_enter((g), (op), (bytes));                                                          \
    int rc_ = (expr);                                                                              \
    weft__call_exit();                                                                             \
    return rc_;                                                                                    \
  } while (0)

/* Which backend takes buffers a and b (b may be NULL; exchange.c calls it too): MPI for host memory,
 * NCCL for device memory, asked of the driver without a context (device.c).
 * A host buffer beside a device one, or memory of another device than this
 * rank's, is refused: NCCL would read it as device memory of its own. */
int weft__coll_pick(weft_group *g, const char *fn, const void *a, const void *b,
                    const struct weft__backend **be)
{
  weft_ctx *ctx = g->ctx;
  int da, db, dev;

  *be = &weft__backend_mpi;
  if (ctx->backend == WEFT__BACKEND_MPI)
    return 0;
  da = a ? weft__device_of(a) : -1;
  db = b && b != a ? weft__device_of(b) : da;
  if (da < 0 && db < 0)
    return 0;
  if (a && b && (da < 0 || db < 0))
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "%s on group %s: the send buffer is %s memory and the receive buffer %s "
                         "memory; give both in the GPU's memory, or both in host memory",
                         fn, g->name, da < 0 ? "host" : "device", db < 0 ? "host" : "device");
  dev = da >= 0 ? da : db;
  if ((da >= 0 && db >= 0 && da != db) || (ctx->device >= 0 && dev != ctx->device))
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "%s on group %s: the buffers are memory of device %d%s, but this rank's "
                         "device is %d; allocate them after cudaSetDevice(weft_device(ctx))",
                         fn, g->name, da >= 0 ? da : db,
                         da >= 0 && db >= 0 && da != db ? " and another" : "", ctx->device);
  *be = &weft__backend_nccl;
  return 0;
}

/* Checks common to all (exchange.c's too): group, type, op (op < 0: none),
 * and that count elements (times mult) fit in a size_t of bytes. */
int weft__coll_check(weft_group *g, const char *fn, weft_dtype dt, int op, size_t count,
                     size_t mult)
{
  size_t es;

  if (!g)
    return WEFT_EINVAL;
  if (!weft__dtype_ok(dt))
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "%s on group %s: unknown data type %d", fn, g->name,
                         (int)dt);
  if (op >= 0 && !weft__op_ok((weft_op)op))
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "%s on group %s: unknown operation %d", fn, g->name,
                         op);
  if (op == WEFT_AVG && dt != WEFT_FLOAT16 && dt != WEFT_BFLOAT16 && dt != WEFT_FLOAT32 &&
      dt != WEFT_FLOAT64)
    return weft__rt_fail(g->ctx, WEFT_EDTYPE,
                         "%s on group %s: avg of %s would truncate; use sum and divide", fn,
                         g->name, weft_dtype_name(dt));
  es = weft_dtype_size(dt);
  if (mult && count > SIZE_MAX / mult / es)
    return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                         "%s on group %s: %zu elements of %s (x%zu) do not fit in memory", fn,
                         g->name, count, weft_dtype_name(dt), mult);
  return 0;
}

static int check_bufs(weft_group *g, const char *fn, size_t count, const void *a, const void *b)
{
  if (count > 0 && (!a || !b))
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "%s on group %s: NULL buffer for %zu elements", fn,
                         g->name, count);
  return 0;
}

static int check_peer(weft_group *g, const char *fn, const char *what, int peer)
{
  if (peer < 0 || peer >= g->size)
    return weft__rt_fail(g->ctx, WEFT_ERANGE, "%s on group %s: %s %d is not in 0..%d", fn, g->name,
                         what, peer, g->size - 1);
  return 0;
}

int weft_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                   void *stream)
{
  const struct weft__backend *be;
  int rc;

  if ((rc = weft__coll_check(g, "allreduce", dt, (int)op, n, 1)) != 0 ||
      (rc = check_bufs(g, "allreduce", n, s, r)) != 0 ||
      (rc = weft__coll_pick(g, "allreduce", s, r, &be)))
    return rc;
  CALL(g, WEFTX_OP_ALLREDUCE, n * weft_dtype_size(dt), be->allreduce(g, s, r, n, dt, op, stream));
}

int weft_broadcast(weft_group *g, void *buf, size_t n, weft_dtype dt, int root, void *stream)
{
  const struct weft__backend *be;
  int rc;

  if ((rc = weft__coll_check(g, "broadcast", dt, -1, n, 1)) != 0 ||
      (rc = check_bufs(g, "broadcast", n, buf, buf)) != 0 ||
      (rc = check_peer(g, "broadcast", "root", root)) != 0 ||
      (rc = weft__coll_pick(g, "broadcast", buf, NULL, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_BROADCAST, n * weft_dtype_size(dt), be->broadcast(g, buf, n, dt, root, stream));
}

int weft_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, void *stream)
{
  const struct weft__backend *be;
  int rc;

  if (g && (rc = weft__coll_check(g, "allgather", dt, -1, n, (size_t)g->size)) != 0)
    return rc;
  if (!g)
    return WEFT_EINVAL;
  if ((rc = check_bufs(g, "allgather", n, s, r)) != 0 ||
      (rc = weft__coll_pick(g, "allgather", s, r, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_ALLGATHER, n * weft_dtype_size(dt), be->allgather(g, s, r, n, dt, stream));
}

int weft_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                        void *stream)
{
  const struct weft__backend *be;
  int rc;

  if (g && (rc = weft__coll_check(g, "reduce_scatter", dt, (int)op, n, (size_t)g->size)) != 0)
    return rc;
  if (!g)
    return WEFT_EINVAL;
  if ((rc = check_bufs(g, "reduce_scatter", n, s, r)) != 0 ||
      (rc = weft__coll_pick(g, "reduce_scatter", s, r, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_REDUCE_SCATTER, n * weft_dtype_size(dt),
       be->reduce_scatter(g, s, r, n, dt, op, stream));
}

int weft_send(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  const struct weft__backend *be;
  int rc;

  if ((rc = weft__coll_check(g, "send", dt, -1, n, 1)) != 0 ||
      (rc = check_bufs(g, "send", n, buf, buf)) || (rc = check_peer(g, "send", "peer", peer)) != 0)
    return rc;
  if (peer == g->rank)
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "send on group %s: peer %d is this rank", g->name,
                         peer);
  if ((rc = weft__coll_pick(g, "send", buf, NULL, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_SEND, n * weft_dtype_size(dt), be->send(g, buf, n, dt, peer, stream));
}

int weft_recv(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  const struct weft__backend *be;
  int rc;

  if ((rc = weft__coll_check(g, "recv", dt, -1, n, 1)) != 0 ||
      (rc = check_bufs(g, "recv", n, buf, buf)) || (rc = check_peer(g, "recv", "peer", peer)) != 0)
    return rc;
  if (peer == g->rank)
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "recv on group %s: peer %d is this rank", g->name,
                         peer);
  if ((rc = weft__coll_pick(g, "recv", buf, NULL, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_RECV, n * weft_dtype_size(dt), be->recv(g, buf, n, dt, peer, stream));
}

static int barrier(weft_group *g)
{
  MPI_Request req;
  int rc;

  if ((rc = weft__arrive(g)) != 0)
    return rc;
  if (g->ctx->coll_timeout <= 0) {
    rc = MPI_Barrier(g->comm);
    return rc == MPI_SUCCESS
             ? 0
             : weft__rt_fail(g->ctx, WEFT_EMPI, "barrier on group %s failed", g->name);
  }
  if (MPI_Ibarrier(g->comm, &req) != MPI_SUCCESS)
    return weft__rt_fail(g->ctx, WEFT_EMPI, "barrier on group %s failed", g->name);
  return weft__wait(g, &req, "barrier", -1);
}

int weft_barrier(weft_group *g)
{
  if (!g)
    return WEFT_EINVAL;
  CALL(g, WEFTX_OP_BARRIER, 0, barrier(g));
}

int weft_group_wait(weft_group *g)
{
  if (!g)
    return WEFT_EINVAL;
  if (!g->nccl)
    return 0;
  CALL(g, WEFTX_OP_WAIT, 0, weft__nccl_wait(g));
}
