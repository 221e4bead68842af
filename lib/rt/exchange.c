/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public calls of model parallelism: all-to-all (equal blocks, or MPI's
 * counts and displacements) and batches of sends and receives issued and
 * completed together. Here only what every rank can check alone, before any
 * communication (types, ranges, overflow, buffers that overlap, one kind of
 * memory per call), then dispatch by where the buffers live, as coll.c does
 * for the other collectives; the backends run them (mpi-exchange.c and
 * shm-a2a.c on host memory, backend-nccl.c on device memory).
 *
 * What is not checked, because one rank cannot see it: that recvcounts[i]
 * equals rank i's sendcounts[this rank] (shm-a2a.c checks it within a host),
 * that receive blocks of an all-to-all do not overlap each other, and that
 * both sides of a send agree on its count.
 */
#include "rt_private.h"

#include <limits.h>
#include <stdint.h>

#include <weftx/page.h>

/* The page has no word for these calls (lib/weftx/page.h): all-to-all shows
 * as an all-gather there, batches as a send; the watchdog says the name. */
#define CALL(g, op, name, bytes, expr)                                                             \
  do {                                                                                             \
    weft__call_enter_named((g), (op), (name), (bytes));                                            \
    int rc_ = (expr);                                                                              \
    weft__call_exit();                                                                             \
    return rc_;                                                                                    \
  } while (0)

/* [a, a + an) and [b, b + bn) share a byte. */
static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

static int refuse_overlap(weft_group *g, const char *fn)
{
  return weft__rt_fail(g->ctx, WEFT_EINVAL,
                       "%s on group %s: the send and receive buffers overlap; in place is not "
                       "supported: give the result a buffer of its own",
                       fn, g->name);
}

int weft_alltoall(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, void *stream)
{
  const struct weft__backend *be;
  struct weft__a2a a = {n, NULL, NULL, NULL, NULL};
  size_t bytes;
  int rc;

  if (!g)
    return WEFT_EINVAL;
  if ((rc = weft__coll_check(g, "alltoall", dt, -1, n, (size_t)g->size)) != 0)
    return rc;
  bytes = n * (size_t)g->size * weft_dtype_size(dt);
  if (n > 0 && (!s || !r))
    return weft__rt_fail(g->ctx, WEFT_EINVAL,
                         "alltoall on group %s: NULL buffer for %zu "
                         "elements per rank",
                         g->name, n);
  if (overlap(s, bytes, r, bytes))
    return refuse_overlap(g, "alltoall");
  if ((rc = weft__coll_pick(g, "alltoall", s, r, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_ALLGATHER, "alltoall", bytes, be->alltoall(g, s, r, &a, dt, stream));
}

/* The bytes from the start of a buffer to the end of its last block (count
 * and displacement in elements); WEFT_EOVERFLOW when it does not fit. */
static int extent(weft_group *g, const char *side, const size_t *count, const size_t *displ,
                  size_t es, size_t *end, size_t *total)
{
  int k;

  *end = *total = 0;
  for (k = 0; k < g->size; k++) {
    size_t c = count[k], d = displ[k];
    if (c > SIZE_MAX / es || d > SIZE_MAX / es - c)
      return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                           "alltoallv on group %s: %s block %d (%zu elements at %zu) ends "
                           "beyond what memory can address",
                           g->name, side, k, c, d);
    if (c > 0 && (d + c) * es > *end)
      *end = (d + c) * es;
    if ((*total += c) < c)
      return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                           "alltoallv on group %s: the %s counts add "
                           "up to more than memory holds",
                           g->name, side);
  }
  return 0;
}

int weft_alltoallv(weft_group *g, const void *s, const size_t *sc, const size_t *sd, void *r,
                   const size_t *rcn, const size_t *rd, weft_dtype dt, void *stream)
{
  const struct weft__backend *be;
  struct weft__a2a a = {0, sc, sd, rcn, rd};
  size_t es, send_end, recv_end, send_n, recv_n;
  int rc;

  if (!g)
    return WEFT_EINVAL;
  if ((rc = weft__coll_check(g, "alltoallv", dt, -1, 0, 0)) != 0)
    return rc;
  if (!sc || !sd || !rcn || !rd)
    return weft__rt_fail(g->ctx, WEFT_EINVAL,
                         "alltoallv on group %s: NULL %s; give %d counts "
                         "and displacements for each side",
                         g->name,
                         !sc    ? "sendcounts"
                         : !sd  ? "sdispls"
                         : !rcn ? "recvcounts"
                                : "rdispls",
                         g->size);
  es = weft_dtype_size(dt);
  if ((rc = extent(g, "send", sc, sd, es, &send_end, &send_n)) != 0 ||
      (rc = extent(g, "receive", rcn, rd, es, &recv_end, &recv_n)) != 0)
    return rc;
  if ((send_n > 0 && !s) || (recv_n > 0 && !r))
    return weft__rt_fail(g->ctx, WEFT_EINVAL,
                         "alltoallv on group %s: NULL %s buffer for %zu "
                         "elements",
                         g->name, send_n > 0 && !s ? "send" : "receive",
                         send_n > 0 && !s ? send_n : recv_n);
  /* Any byte the blocks might share; a send block inside a gap of the
   * receive side is refused too, which only costs a buffer. */
  if (overlap(s, send_end, r, recv_end))
    return refuse_overlap(g, "alltoallv");
  if ((rc = weft__coll_pick(g, "alltoallv", s, r, &be)) != 0)
    return rc;
  CALL(g, WEFTX_OP_ALLGATHER, "alltoallv", (send_n > recv_n ? send_n : recv_n) * es,
       be->alltoall(g, s, r, &a, dt, stream));
}

/* The checks of a batch, and the backend its buffers' memory picks. */
static int batch_check(weft_group *g, const weft_p2p *ops, size_t n, const char *fn,
                       const struct weft__backend **be, size_t *bytes)
{
  const struct weft__backend *b;
  size_t i, j, es;
  int rc, first = -1;

  *be = &weft__backend_mpi;
  *bytes = 0;
  if (n > 0 && !ops)
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "%s on group %s: NULL operations", fn, g->name);
  if (n > INT_MAX / 2)
    return weft__rt_fail(g->ctx, WEFT_EINVAL,
                         "%s on group %s: %zu operations in one batch; "
                         "split it",
                         fn, g->name, n);
  for (i = 0; i < n; i++) {
    const weft_p2p *o = &ops[i];
    if (o->kind != WEFT_P2P_SEND && o->kind != WEFT_P2P_RECV)
      return weft__rt_fail(g->ctx, WEFT_EINVAL,
                           "%s on group %s: operation %zu is of kind %d, "
                           "neither WEFT_P2P_SEND nor WEFT_P2P_RECV",
                           fn, g->name, i, (int)o->kind);
    if ((rc = weft__coll_check(g, fn, o->dt, -1, o->count, 1)) != 0)
      return rc;
    if (o->peer < 0 || o->peer >= g->size)
      return weft__rt_fail(g->ctx, WEFT_ERANGE,
                           "%s on group %s: operation %zu's peer %d is "
                           "not in 0..%d",
                           fn, g->name, i, o->peer, g->size - 1);
    if (o->peer == g->rank)
      return weft__rt_fail(g->ctx, WEFT_EINVAL,
                           "%s on group %s: operation %zu's peer %d is "
                           "this rank; copy the buffer instead",
                           fn, g->name, i, o->peer);
    if (o->count > 0 && !o->buf)
      return weft__rt_fail(g->ctx, WEFT_EINVAL,
                           "%s on group %s: operation %zu has a NULL "
                           "buffer for %zu elements",
                           fn, g->name, i, o->count);
    es = weft_dtype_size(o->dt);
    *bytes += o->count * es;
    if (!o->buf)
      continue;
    if ((rc = weft__coll_pick(g, fn, o->buf, NULL, &b)) != 0)
      return rc;
    if (first < 0) {
      first = (int)i;
      *be = b;
    } else if (b != *be) {
      return weft__rt_fail(g->ctx, WEFT_EINVAL,
                           "%s on group %s: operation %d's buffer is %s "
                           "memory and operation %zu's %s memory; give a batch buffers of one "
                           "kind",
                           fn, g->name, first, *be == &weft__backend_mpi ? "host" : "device", i,
                           b == &weft__backend_mpi ? "host" : "device");
    }
    /* A receive into another operation's bytes: pairs are compared, which
     * costs n^2; batches are a few operations (a pipeline stage has 2). */
    for (j = 0; j < i && n <= 256; j++)
      if ((o->kind == WEFT_P2P_RECV || ops[j].kind == WEFT_P2P_RECV) &&
          overlap(o->buf, o->count * es, ops[j].buf, ops[j].count * weft_dtype_size(ops[j].dt)))
        return weft__rt_fail(g->ctx, WEFT_EINVAL,
                             "%s on group %s: operation %zu's buffer "
                             "overlaps operation %zu's, and one of them receives; give each "
                             "receive a buffer of its own",
                             fn, g->name, i, j);
  }
  return 0;
}

static int batch(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *stream)
{
  const struct weft__backend *be;
  size_t bytes;
  int rc;

  if (!g)
    return WEFT_EINVAL;
  if ((rc = batch_check(g, ops, n, fn, &be, &bytes)) != 0)
    return rc;
  if (n == 0)
    return 0;
  CALL(g, WEFTX_OP_SEND, fn, bytes, be->batch(g, ops, n, fn, stream));
}

int weft_p2p_batch(weft_group *g, const weft_p2p *ops, size_t nops, void *stream)
{
  return batch(g, ops, nops, "p2p batch", stream);
}

int weft_sendrecv(weft_group *g, const void *sendbuf, size_t sendcount, int dest, void *recvbuf,
                  size_t recvcount, int source, weft_dtype dt, void *stream)
{
  weft_p2p ops[2];
  size_t n = 0;

  if (!g)
    return WEFT_EINVAL;
  if (dest != WEFT_NO_PEER) {
    ops[n].kind = WEFT_P2P_SEND;
    ops[n].peer = dest;
    ops[n].buf = (void *)sendbuf;
    ops[n].count = sendcount;
    ops[n++].dt = dt;
  }
  if (source != WEFT_NO_PEER) {
    ops[n].kind = WEFT_P2P_RECV;
    ops[n].peer = source;
    ops[n].buf = recvbuf;
    ops[n].count = recvcount;
    ops[n++].dt = dt;
  }
  return batch(g, ops, n, "sendrecv", stream);
}
