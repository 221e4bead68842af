/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI backend: host buffers. Without a deadline each call is the
 * blocking MPI collective on the group's communicator, so that it costs what
 * MPI costs; with WEFT_COLL_TIMEOUT the non-blocking form is polled against
 * the clock (deadline.c). Counts above INT_MAX are cut into chunks where the
 * operation allows it (all-reduce, broadcast, send, recv) and rejected with
 * WEFT_EOVERFLOW where it does not (all-gather, reduce-scatter). Tests make
 * the chunks small with WEFT_MPI_CHUNK (elements).
 */
#include "rt_private.h"
#include "shm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)INT_MAX)

static int mpi_fail(weft_group *g, const char *op, int rc)
{
  char buf[MPI_MAX_ERROR_STRING];

  return weft__rt_fail(g->ctx, WEFT_EMPI, "%s on group %s: %s", op, g->name,
                       weft__mpi_strerror(rc, buf, sizeof(buf)));
}

static int types(weft_group *g, const char *fn, weft_dtype dt, weft_op op, MPI_Datatype *t,
                 MPI_Op *o)
{
  int rc = weft__mpi_type_op(dt, op, t, o);

  if (rc != 0)
    return weft__rt_fail(g->ctx, rc, "%s on group %s: no MPI form for %s/%s", fn, g->name,
                         weft_dtype_name(dt), weft_op_name(op));
  return 0;
}

int weft__mpi_allreduce_flat(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op)
{
  size_t es = weft_dtype_size(dt), off;
  MPI_Datatype t;
  MPI_Op o;
  int rc;

  if ((rc = types(g, "allreduce", dt, op, &t, &o)) != 0)
    return rc;
  for (off = 0; off < n; off += g->ctx->chunk) {
    int k = (int)(n - off < g->ctx->chunk ? n - off : g->ctx->chunk);
    const void *sp = s == r ? MPI_IN_PLACE : (const char *)s + off * es;
    void *rp = (char *)r + off * es;
    if (g->ctx->coll_timeout <= 0) {
      rc = MPI_Allreduce(sp, rp, k, t, o, g->comm);
      if (rc != MPI_SUCCESS)
        return mpi_fail(g, "allreduce", rc);
    } else {
      MPI_Request req;
      rc = MPI_Iallreduce(sp, rp, k, t, o, g->comm, &req);
      if (rc != MPI_SUCCESS)
        return mpi_fail(g, "allreduce", rc);
      if ((rc = weft__wait(g, &req, "allreduce", -1)) != 0)
        return rc;
    }
  }
  return 0;
}

static int mpi_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                         void *stream)
{
  int rc;

  (void)stream;
  if ((rc = weft__shm_allreduce(g, s, r, n, dt, op)) != WEFT__SHM_DECLINED)
    return rc;
  if ((rc = weft__arrive(g)) != 0)
    return rc;
  if (n == 0)
    return 0;
  if (weft__hier_wanted(g, n, dt))
    rc = weft__hier_allreduce(g, s, r, n, dt, op);
  else
    rc = weft__mpi_allreduce_flat(g, s, r, n, dt, op);
  if (rc == 0 && op == WEFT_AVG)
    weft__divide(r, n, dt, g->size);
  return rc;
}

static int mpi_broadcast(weft_group *g, void *buf, size_t n, weft_dtype dt, int root, void *stream)
{
  size_t es = weft_dtype_size(dt), off;
  MPI_Datatype t;
  int rc;

  (void)stream;
  if ((rc = weft__arrive(g)) != 0 || (rc = types(g, "broadcast", dt, WEFT_SUM, &t, NULL)) != 0)
    return rc;
  for (off = 0; off < n; off += g->ctx->chunk) {
    int k = (int)(n - off < g->ctx->chunk ? n - off : g->ctx->chunk);
    void *p = (char *)buf + off * es;
    if (g->ctx->coll_timeout <= 0) {
      if ((rc = MPI_Bcast(p, k, t, root, g->comm)) != MPI_SUCCESS)
        return mpi_fail(g, "broadcast", rc);
    } else {
      MPI_Request req;
      if ((rc = MPI_Ibcast(p, k, t, root, g->comm, &req)) != MPI_SUCCESS)
        return mpi_fail(g, "broadcast", rc);
      if ((rc = weft__wait(g, &req, "broadcast", -1)) != 0)
        return rc;
    }
  }
  return 0;
}

static int too_big(weft_group *g, const char *fn, size_t n)
{
  if (n > CHUNK)
    return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                         "%s on group %s: %zu elements per rank is more than MPI's INT_MAX; "
                         "split the call",
                         fn, g->name, n);
  return 0;
}

static int mpi_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                         void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  char *mine;
  const void *sp = s;
  MPI_Datatype t;
  int rc;

  (void)stream;
  if ((rc = weft__shm_allgather(g, s, r, n, dt)) != WEFT__SHM_DECLINED)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || (rc = too_big(g, "allgather", n)) != 0 ||
      (rc = types(g, "allgather", dt, WEFT_SUM, &t, NULL)) != 0)
    return rc;
  /* Only now that n is known to be small: the offset of a huge n would overflow. */
  mine = (char *)r + (size_t)g->rank * bytes;
  if (n == 0)
    return 0;
  /* In place: our block is already in r, either at our slot (as NCCL has
   * it) or at the start of r. */
  if (s == mine) {
    sp = MPI_IN_PLACE;
  } else if (s == r) {
    memmove(mine, r, bytes);
    sp = MPI_IN_PLACE;
  }
  if (g->ctx->coll_timeout <= 0) {
    if ((rc = MPI_Allgather(sp, (int)n, t, r, (int)n, t, g->comm)) != MPI_SUCCESS)
      return mpi_fail(g, "allgather", rc);
    return 0;
  } else {
    MPI_Request req;
    if ((rc = MPI_Iallgather(sp, (int)n, t, r, (int)n, t, g->comm, &req)) != MPI_SUCCESS)
      return mpi_fail(g, "allgather", rc);
    return weft__wait(g, &req, "allgather", -1);
  }
}

static int mpi_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                              weft_op op, void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  const void *sp = s;
  void *rp = r;
  MPI_Datatype t;
  MPI_Op o;
  int rc;

  (void)stream;
  if ((rc = weft__shm_reduce_scatter(g, s, r, n, dt, op)) != WEFT__SHM_DECLINED)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || (rc = too_big(g, "reduce_scatter", n)) != 0 ||
      (rc = types(g, "reduce_scatter", dt, op, &t, &o)) != 0)
    return rc;
  if (n == 0)
    return 0;
  /* In place: s == r (result at the start), or r at our block of s (NCCL). */
  if (s == r || (const char *)r == (const char *)s + (size_t)g->rank * bytes) {
    sp = MPI_IN_PLACE;
    rp = (void *)s;
  }
  if (g->ctx->coll_timeout <= 0) {
    rc = MPI_Reduce_scatter_block(sp, rp, (int)n, t, o, g->comm);
    if (rc != MPI_SUCCESS)
      return mpi_fail(g, "reduce_scatter", rc);
  } else {
    MPI_Request req;
    if ((rc = MPI_Ireduce_scatter_block(sp, rp, (int)n, t, o, g->comm, &req)) != MPI_SUCCESS)
      return mpi_fail(g, "reduce_scatter", rc);
    if ((rc = weft__wait(g, &req, "reduce_scatter", -1)) != 0)
      return rc;
  }
  if (rp != r)
    memmove(r, rp, bytes);
  if (op == WEFT_AVG)
    weft__divide(r, n, dt, g->size);
  return 0;
}

static int mpi_p2p(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, int send)
{
  const char *fn = send ? "send" : "recv";
  size_t es = weft_dtype_size(dt), off;
  MPI_Datatype t;
  int rc;

  if ((rc = types(g, fn, dt, WEFT_SUM, &t, NULL)) != 0)
    return rc;
  off = 0;
  do {
    int k = (int)(n - off < g->ctx->chunk ? n - off : g->ctx->chunk);
    void *p = (char *)buf + off * es;
    MPI_Request req;
    if (g->ctx->coll_timeout <= 0) {
      rc = send ? MPI_Send(p, k, t, peer, 1, g->comm)
                : MPI_Recv(p, k, t, peer, 1, g->comm, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return mpi_fail(g, fn, rc);
    } else {
      rc = send ? MPI_Isend(p, k, t, peer, 1, g->comm, &req)
                : MPI_Irecv(p, k, t, peer, 1, g->comm, &req);
      if (rc != MPI_SUCCESS)
        return mpi_fail(g, fn, rc);
      if ((rc = weft__wait(g, &req, fn, peer)) != 0)
        return rc;
    }
    off += (size_t)k;
  } while (off < n);
  return 0;
}

static int mpi_send(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  (void)stream;
  return mpi_p2p(g, (void *)buf, n, dt, peer, 1);
}

static int mpi_recv(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  (void)stream;
  return mpi_p2p(g, buf, n, dt, peer, 0);
}

static int mpi_copy(weft_ctx *ctx, void *dst, const void *src, size_t bytes, void *stream)
{
  (void)ctx;
  (void)stream;
  memcpy(dst, src, bytes);
  return 0;
}

static int mpi_alloc(weft_ctx *ctx, void **p, size_t bytes)
{
  *p = malloc(bytes ? bytes : 1);
  if (!*p)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "out of memory for a %zu-byte buffer", bytes);
  return 0;
}

static void mpi_free(weft_ctx *ctx, void *p)
{
  (void)ctx;
  free(p);
}

const struct weft__backend weft__backend_mpi = {
  "mpi",    mpi_allreduce,      mpi_broadcast,   mpi_allgather, mpi_reduce_scatter, mpi_send,
  mpi_recv, weft__mpi_alltoall, weft__mpi_batch, mpi_copy,      mpi_alloc,          mpi_free,
};
