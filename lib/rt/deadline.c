/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deadlines for collectives (WEFT_COLL_TIMEOUT). With a deadline set, a
 * collective is started non-blocking and polled with MPI_Test against the
 * clock. To name the ranks that never came, every rank also sends a
 * zero-byte "arrived" token to every other member on a duplicate
 * communicator as it enters a collective; messages between two ranks are
 * not overtaken, so the number of tokens from a rank is the number of
 * collectives it has entered. On timeout the missing ranks are those whose
 * count is behind ours. Tokens cost 2(p-1) tiny messages per rank and
 * collective (one for groups above 64 ranks, where only group rank 0 can
 * name the absent) and are only sent when a deadline is set. A timed-out call
 * is also left on the call page (watch.c), so that weftrun blames the ranks
 * that never joined rather than this one when the program then aborts.
 *
 * Point to point: a host send, receive or batch past its deadline names the
 * peers of the requests not finished (weft__wait, weft__wait_batch). On
 * device memory weft cannot see which operation of a batch (one NCCL group)
 * waits, so with a deadline each device send or receive also sends its peer
 * a zero-byte token on the same side communicator, one tag for "I posted a
 * send to you", another for "a receive from you"; a batch past its deadline
 * names the peers whose count of the matching kind is behind ours
 * (weft__p2p_behind). Matching is in issue order per pair and kind, in NCCL as
 * in MPI, so counts are enough.
 */
#include "rt_private.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Above this size tokens go to group rank 0 only, which alone can name the
 * absent ranks: one message per rank and collective instead of p-1. */
#define WIDE 64

/* Tags on g->arrive: a collective's arrival, and a member's send to us or
 * receive from us on device memory (point-to-point tokens). */
enum { TAG_ARRIVE = 0, TAG_SENT = 2, TAG_RECVD = 3 };

/* Receive the tokens that have come in so far. */
static void drain(weft_group *g)
{
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g->arrive, &flag, &st) != MPI_SUCCESS || !flag)
      return;
    if (MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, g->arrive, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return;
    if (st.MPI_TAG == TAG_ARRIVE)
      g->arrived[st.MPI_SOURCE]++;
    else if (g->p2p)
      g->p2p[(size_t)(st.MPI_TAG == TAG_SENT ? WEFT__P2P_THEIR_SENDS : WEFT__P2P_THEIR_RECVS) *
               (size_t)g->size +
             (size_t)st.MPI_SOURCE]++;
  }
}

unsigned long weft__p2p_post(weft_group *g, int peer, int send, int *rc)
{
  MPI_Request req;
  unsigned long *mine;

  *rc = 0;
  if (g->ctx->coll_timeout <= 0 || g->arrive == MPI_COMM_NULL)
    return 0;
  if (!g->p2p && !(g->p2p = calloc(4 * (size_t)g->size, sizeof(*g->p2p)))) {
    *rc =
      weft__rt_fail(g->ctx, WEFT_ENOMEM, "group %s: out of memory for deadline tokens", g->name);
    return 0;
  }
  if (MPI_Isend(NULL, 0, MPI_BYTE, peer, send ? TAG_SENT : TAG_RECVD, g->arrive, &req) !=
      MPI_SUCCESS) {
    *rc = weft__rt_fail(g->ctx, WEFT_EMPI, "group %s: sending a deadline token failed", g->name);
    return 0;
  }
  MPI_Request_free(&req);
  drain(g);
  mine =
    &g->p2p[(size_t)(send ? WEFT__P2P_SENT : WEFT__P2P_RECVD) * (size_t)g->size + (size_t)peer];
  return ++*mine;
}

int weft__p2p_behind(weft_group *g, int peer, int send, unsigned long n)
{
  if (!g->p2p || n == 0)
    return 0;
  drain(g);
  /* our n-th send needs its n-th receive from us, and the other way round */
  return g->p2p[(size_t)(send ? WEFT__P2P_THEIR_RECVS : WEFT__P2P_THEIR_SENDS) * (size_t)g->size +
                (size_t)peer] < n;
}

int weft__arrive(weft_group *g)
{
  int i;

  if (g->ctx->coll_timeout <= 0 || g->arrive == MPI_COMM_NULL)
    return 0;
  g->seq++;
  g->arrived[g->rank] = g->seq;
  for (i = 0; i < g->size; i++) {
    MPI_Request req;
    if (i == g->rank || (g->size > WIDE && i != 0))
      continue;
    if (MPI_Isend(NULL, 0, MPI_BYTE, i, TAG_ARRIVE, g->arrive, &req) != MPI_SUCCESS)
      return weft__rt_fail(g->ctx, WEFT_EMPI, "group %s: sending an arrival token failed", g->name);
    MPI_Request_free(&req);
  }
  drain(g);
  return 0;
}

int weft__wait(weft_group *g, MPI_Request *req, const char *opname, int peer)
{
  weft_ctx *ctx = g->ctx;
  double end;
  int rc;

  if (ctx->coll_timeout <= 0) {
    rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    goto done;
  }
  end = weftx_monotonic() + ctx->coll_timeout;
  for (;;) {
    int flag = 0;
    rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag)
      goto done;
    if (weftx_monotonic() > end)
      break;
    sched_yield();
  }
  if (peer >= 0) {
    rc = weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                       "%s with world rank %d on group %s timed out after %gs; the peer never "
                       "matched it; abort the job (MPI_Abort)",
                       opname, g->world_ranks[peer], g->name, ctx->coll_timeout);
    weft__page_deadline(g, g->world_ranks[peer], ctx->coll_timeout, ctx->err);
    return rc;
  }
  /* The request stays posted: MPI cannot cancel a collective. The caller is
   * expected to abort the job. */
  return weft__timed_out(g, opname);
done:
  if (rc != MPI_SUCCESS) {
    char buf[MPI_MAX_ERROR_STRING];
    return weft__rt_fail(ctx, WEFT_EMPI, "%s on group %s: %s", opname, g->name,
                         weft__mpi_strerror(rc, buf, sizeof(buf)));
  }
  return 0;
}

int weft__wait_batch(weft_group *g, int n, MPI_Request *reqs, const int *req_op,
                     const weft_p2p *ops, const char *fn)
{
  weft_ctx *ctx = g->ctx;
  char list[512];
  size_t len = 0;
  double end;
  int i, rc, done = 0, first = -1, last = -1;

  if (ctx->coll_timeout <= 0) {
    rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    goto out;
  }
  end = weftx_monotonic() + ctx->coll_timeout;
  for (;;) {
    rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS || done)
      goto out;
    if (weftx_monotonic() > end)
      break;
    sched_yield();
  }
  /* The operations not finished, one mention per operation. MPI cannot take
   * them back: the caller is expected to abort the job. */
  list[0] = '\0';
  for (i = 0; i < n; i++) {
    int flag = 0, k = req_op[i], m;
    if (reqs[i] == MPI_REQUEST_NULL || k == last ||
        (MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag))
      continue;
    last = k;
    if (first < 0)
      first = g->world_ranks[ops[k].peer];
    m = snprintf(list + len, sizeof(list) - len, "%s%s world rank %d", len ? ", " : "",
                 ops[k].kind == WEFT_P2P_SEND ? "send to" : "receive from",
                 g->world_ranks[ops[k].peer]);
    if (m > 0 && (size_t)m < sizeof(list) - len)
      len += (size_t)m;
  }
  rc = weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                     "%s on group %s timed out after %gs; not matched: %s; abort the job "
                     "(MPI_Abort)",
                     fn, g->name, ctx->coll_timeout, len ? list : "(none left: finished late)");
  weft__page_deadline(g, first, ctx->coll_timeout, ctx->err);
  return rc;
out:
  if (rc != MPI_SUCCESS) {
    char buf[MPI_MAX_ERROR_STRING];
    return weft__rt_fail(ctx, WEFT_EMPI, "%s on group %s: %s", fn, g->name,
                         weft__mpi_strerror(rc, buf, sizeof(buf)));
  }
  return 0;
}

static int timed_out(weft_group *g, const char *opname, unsigned long seq);

int weft__timed_out(weft_group *g, const char *opname)
{
  return weft__timed_out_at(g, opname, g->seq);
}

int weft__timed_out_at(weft_group *g, const char *opname, unsigned long seq)
{
  int rc = timed_out(g, opname, seq);
  /* for weftrun: this rank is not the cause, the ranks that never joined are */
  weft__page_deadline(g, -1, g->ctx->coll_timeout, g->ctx->err);
  return rc;
}

static int timed_out(weft_group *g, const char *opname, unsigned long seq)
{
  weft_ctx *ctx = g->ctx;
  char list[512];
  size_t len = 0;
  int i, missing = 0;

  if (g->arrive == MPI_COMM_NULL)
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT, "%s on group %s timed out after %gs", opname, g->name,
                         ctx->coll_timeout);
  drain(g);
  if (g->size > WIDE && g->rank != 0)
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                         "%s on group %s (size %d, call %lu) timed out after %gs; world rank %d "
                         "(group rank 0) names the ranks that had not joined; abort the job "
                         "(MPI_Abort)",
                         opname, g->name, g->size, seq, ctx->coll_timeout, g->world_ranks[0]);
  list[0] = '\0';
  for (i = 0; i < g->size; i++)
    if (g->arrived[i] < seq) {
      int n =
        snprintf(list + len, sizeof(list) - len, "%s%d", missing ? "," : "", g->world_ranks[i]);
      if (n > 0 && (size_t)n < sizeof(list) - len)
        len += (size_t)n;
      missing++;
    }
  if (missing)
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                         "%s on group %s (size %d, call %lu) timed out after %gs; world rank(s) "
                         "%s had not joined; abort the job (MPI_Abort)",
                         opname, g->name, g->size, seq, ctx->coll_timeout, list);
  return weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                       "%s on group %s (size %d, call %lu) timed out after %gs; every rank had "
                       "joined, so a rank or link is stuck inside it; abort the job (MPI_Abort)",
                       opname, g->name, g->size, seq, ctx->coll_timeout);
}
