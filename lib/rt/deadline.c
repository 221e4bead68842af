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
 */
#include "rt_private.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Above this size tokens go to group rank 0 only, which alone can name the
 * absent ranks: one message per rank and collective instead of p-1. */
#define WIDE 64

/* Receive the tokens that have come in so far. */
static void drain(weft_group *g)
{
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, 0, g->arrive, &flag, &st) != MPI_SUCCESS || !flag)
      return;
    if (MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, 0, g->arrive, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    g->arrived[st.MPI_SOURCE]++;
  }
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
    if (MPI_Isend(NULL, 0, MPI_BYTE, i, 0, g->arrive, &req) != MPI_SUCCESS)
      return weft__rt_fail(g->ctx, WEFT_EMPI, "group %s: sending an arrival token failed",
                           g->name);
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
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT, "%s on group %s timed out after %gs", opname,
                         g->name, ctx->coll_timeout);
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
      int n = snprintf(list + len, sizeof(list) - len, "%s%d", missing ? "," : "",
                       g->world_ranks[i]);
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
