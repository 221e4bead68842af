/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-all and batches of sends and receives on host memory through MPI
 * (the MPI backend's; within one host the all-to-all goes through shared
 * memory first, shm-a2a.c, and comes here only when that declines).
 *
 * Equal blocks of at most INT_MAX elements are MPI_Alltoall, so that it costs
 * what MPI costs (its own algorithms: Bruck, pairwise, ...). Anything else
 * (MPI's counts, displacements and the sum of them are int: MPI_Alltoallv
 * cannot take a large model's tensors; and ranks cannot tell each other
 * without a round that they all fit) is a send and a receive per peer,
 * chunked at WEFT_MPI_CHUNK, on the group's communicator with a tag of its
 * own, posted together and completed together: what Open MPI's own
 * MPI_Alltoallv does in its linear algorithm. Every rank takes the same path
 * from facts they share (the block count, or none for per-peer counts).
 *
 * A batch is the same: every operation is posted (receives first, so that
 * sends find them), then all are completed together (MPI_Waitall), on the
 * tag of weft_send/weft_recv so that they match each other; one send and one
 * receive without a deadline are one MPI_Sendrecv. Nothing is copied: the
 * buffers go to MPI as they are.
 */
#include "rt_private.h"
#include "shm.h"

#include <limits.h>
#include <sched.h>
#include <string.h>

/* Tags on the group's communicator: weft_send/weft_recv and batches, and
 * all-to-all by messages (nccl-private.h has 7, 8 and 12). */
enum { TAG_P2P = 1, TAG_A2A = 2 };

static int mpi_fail(weft_group *g, const char *fn, int rc)
{
  char buf[MPI_MAX_ERROR_STRING];

  return weft__rt_fail(g->ctx, WEFT_EMPI, "%s on group %s: %s", fn, g->name,
                       weft__mpi_strerror(rc, buf, sizeof(buf)));
}

static int mpi_type(weft_group *g, const char *fn, weft_dtype dt, MPI_Datatype *t)
{
  int rc = weft__mpi_type_op(dt, WEFT_SUM, t, NULL);

  if (rc != 0)
    return weft__rt_fail(g->ctx, rc, "%s on group %s: no MPI form for %s", fn, g->name,
                         weft_dtype_name(dt));
  return 0;
}

/* Messages of n elements take: chunks, and one for n == 0 when empty ones
 * count (a batch's; an all-to-all sends nothing for an empty block). */
static size_t chunks(const weft_ctx *ctx, size_t n, int empty_counts)
{
  return n == 0 ? (size_t)(empty_counts != 0) : (n - 1) / ctx->chunk + 1;
}

/* Post n elements at p as chunked messages to or from peer. */
static int post(weft_group *g, char *p, size_t n, size_t es, MPI_Datatype t, int peer, int send,
                int tag, MPI_Request *reqs, int *req_op, int op, int *nreq, const char *fn)
{
  size_t off = 0;

  do {
    int k = (int)(n - off < g->ctx->chunk ? n - off : g->ctx->chunk), rc;
    rc = send ? MPI_Isend(p + off * es, k, t, peer, tag, g->comm, &reqs[*nreq])
              : MPI_Irecv(p + off * es, k, t, peer, tag, g->comm, &reqs[*nreq]);
    if (rc != MPI_SUCCESS)
      return mpi_fail(g, fn, rc);
    if (req_op)
      req_op[*nreq] = op;
    ++*nreq;
    off += (size_t)k;
  } while (off < n);
  return 0;
}

/* Every request of a collective done, or WEFT_ETIMEDOUT naming the ranks
 * that had not joined (arrival tokens, deadline.c). */
static int wait_all(weft_group *g, int n, MPI_Request *reqs, const char *fn)
{
  double end;
  int rc, done = 0;

  if (g->ctx->coll_timeout <= 0) {
    rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(g, fn, rc);
  }
  end = weftx_monotonic() + g->ctx->coll_timeout;
  for (;;) {
    rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpi_fail(g, fn, rc);
    if (done)
      return 0;
    if (weftx_monotonic() > end)
      return weft__timed_out(g, fn);
    sched_yield();
  }
}

/* Per-peer messages: every receive, then every send; our own block copied. */
static int by_messages(weft_group *g, const char *s, char *r, const struct weft__a2a *a,
                       weft_dtype dt, const char *fn)
{
  size_t es = weft_dtype_size(dt), nreq = 0;
  MPI_Request *reqs;
  MPI_Datatype t;
  int k, j, n = 0, rc;

  if ((rc = mpi_type(g, fn, dt, &t)) != 0)
    return rc;
  for (k = 0; k < g->size; k++)
    if (k != g->rank)
      nreq += chunks(g->ctx, weft__a2a_sc(a, k), 0) + chunks(g->ctx, weft__a2a_rc(a, k), 0);
  if (nreq > INT_MAX)
    return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                         "%s on group %s: %zu messages are more than "
                         "MPI can wait for at once",
                         fn, g->name, nreq);
  if (!(reqs = weft__scratch(g, (nreq ? nreq : 1) * sizeof(*reqs), fn)))
    return WEFT_ENOMEM;
  /* From the next rank on, so that not every rank sends to rank 0 first. */
  for (j = 1; j < g->size; j++) {
    k = (g->rank + g->size - j) % g->size;
    if (weft__a2a_rc(a, k) > 0 && (rc = post(g, r + weft__a2a_rd(a, k) * es, weft__a2a_rc(a, k), es,
                                             t, k, 0, TAG_A2A, reqs, NULL, 0, &n, fn)) != 0)
      return rc;
  }
  for (j = 1; j < g->size; j++) {
    k = (g->rank + j) % g->size;
    if (weft__a2a_sc(a, k) > 0 &&
        (rc = post(g, (char *)s + weft__a2a_sd(a, k) * es, weft__a2a_sc(a, k), es, t, k, 1, TAG_A2A,
                   reqs, NULL, 0, &n, fn)) != 0)
      return rc;
  }
  if (weft__a2a_sc(a, g->rank) > 0)
    memcpy(r + weft__a2a_rd(a, g->rank) * es, s + weft__a2a_sd(a, g->rank) * es,
           weft__a2a_sc(a, g->rank) * es);
  return wait_all(g, n, reqs, fn);
}

int weft__mpi_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                       weft_dtype dt, void *stream)
{
  const char *fn = a->sc ? "alltoallv" : "alltoall";
  MPI_Datatype t;
  int rc;

  (void)stream;
  if ((rc = weft__shm_alltoall(g, s, r, a, dt)) != WEFT__SHM_DECLINED)
    return rc;
  if ((rc = weft__arrive(g)) != 0)
    return rc;
  if (a->sc || a->n > g->ctx->chunk)
    return by_messages(g, s, r, a, dt, fn);
  if (a->n == 0)
    return 0;
  if ((rc = mpi_type(g, fn, dt, &t)) != 0)
    return rc;
  if (g->ctx->coll_timeout <= 0) {
    rc = MPI_Alltoall(s, (int)a->n, t, r, (int)a->n, t, g->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(g, fn, rc);
  } else {
    MPI_Request req;
    if ((rc = MPI_Ialltoall(s, (int)a->n, t, r, (int)a->n, t, g->comm, &req)) != MPI_SUCCESS)
      return mpi_fail(g, fn, rc);
    return weft__wait(g, &req, fn, -1);
  }
}

int weft__mpi_batch(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *stream)
{
  size_t i, nreq = 0;
  MPI_Request *reqs;
  int *req_op, pass, m = 0, rc;

  (void)stream;
  /* A pipeline stage's exchange (one send, one receive, one message each,
   * no deadline to watch): one MPI_Sendrecv, so that it costs exactly what
   * MPI's own costs (MPI matches it in order with the rest, as the requests
   * below). */
  if (n == 2 && ops[0].kind != ops[1].kind && g->ctx->coll_timeout <= 0 &&
      ops[0].count <= g->ctx->chunk && ops[1].count <= g->ctx->chunk) {
    const weft_p2p *sd = ops[0].kind == WEFT_P2P_SEND ? &ops[0] : &ops[1];
    const weft_p2p *rv = sd == &ops[0] ? &ops[1] : &ops[0];
    MPI_Datatype st, rt;
    if ((rc = mpi_type(g, fn, sd->dt, &st)) != 0 || (rc = mpi_type(g, fn, rv->dt, &rt)) != 0)
      return rc;
    rc = MPI_Sendrecv(sd->buf, (int)sd->count, st, sd->peer, TAG_P2P, rv->buf, (int)rv->count, rt,
                      rv->peer, TAG_P2P, g->comm, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(g, fn, rc);
  }
  for (i = 0; i < n; i++)
    nreq += chunks(g->ctx, ops[i].count, 1);
  if (nreq > INT_MAX / 2)
    return weft__rt_fail(g->ctx, WEFT_EOVERFLOW,
                         "%s on group %s: %zu messages are more than "
                         "MPI can wait for at once",
                         fn, g->name, nreq);
  reqs = weft__scratch(g, nreq * (sizeof(*reqs) + sizeof(*req_op)), fn);
  if (!reqs)
    return WEFT_ENOMEM;
  req_op = (int *)(reqs + nreq);
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < n; i++) {
      const weft_p2p *o = &ops[i];
      MPI_Datatype t;
      if ((o->kind == WEFT_P2P_SEND) != pass)
        continue;
      if ((rc = mpi_type(g, fn, o->dt, &t)) != 0 ||
          (rc = post(g, o->buf, o->count, weft_dtype_size(o->dt), t, o->peer, pass, TAG_P2P, reqs,
                     req_op, (int)i, &m, fn)) != 0)
        return rc;
    }
  return weft__wait_batch(g, m, reqs, req_op, ops, fn);
}
