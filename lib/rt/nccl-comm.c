/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A group's NCCL communicator. CUDA and NCCL are opened (nccl-dl.c) only when
 * the first device buffer comes. A group's communicator comes up at its
 * first device call, collective or point-to-point (every member must come to
 * it: NCCL's init is collective): group rank 0's ncclGetUniqueId goes out
 * over MPI (into a buffer the group owns, which outlives the request even
 * when a late rank 0 answers after the deadline), then a non-blocking
 * ncclCommInitRankConfig is polled against WEFT_INIT_TIMEOUT; the ranks then
 * agree through group rank 0, so that a failure names those that failed or
 * never came. A mesh group is split from the world's communicator when the
 * world has one (weft__nccl_split). Sends and receives use the group's
 * communicator, as NCCL, PyTorch and Megatron do: a pair of ranks gets no
 * communicator of its own.
 *
 * A communicator that fails (an asynchronous error, a call NCCL did not take
 * in time, a call past WEFT_COLL_TIMEOUT: nccl-flight.c) is aborted, as NCCL
 * requires, and every other member is told over MPI so that each aborts its
 * own (NCCL 2.28 wants every active rank to call ncclCommAbort); the notice
 * says how many calls the sender had seen finish, so that a member still in
 * one of those lets it finish before aborting. From then on device calls on
 * that group fail at once with the reason.
 *
 * NCCL_COMM_BLOCKING=1 (the environment or NCCL's configuration file)
 * overrides the non-blocking config weft asks for: NCCL's calls then block
 * in the host until done, and weft can no longer return a timeout from them.
 * weft honours it, says so once, and has the watchdog end a rank whose
 * blocking call has not returned in time (nccl-flight.c).
 */
#include "nccl-private.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An abort notice: the calls the sender had seen finish, which tells a
 * member still in one of them whether it can still finish. The buffer
 * outlives the requests (MPI may read it until they complete). */
struct weft__tell {
  int64_t completed;
  MPI_Request req[];
};

int weft__nccl_check(weft_ctx *ctx)
{
  const char *why;
  cudaError_t e;
  int n = 0, rc;

  if (ctx->cuda_state == 1)
    return 0;
  if (!weft__cuda_driver(&why))
    return weft__rt_fail(ctx, WEFT_ENOGPU,
                         "device buffers or WEFT_BACKEND=nccl need a GPU, "
                         "and here there is %s; run on a GPU host, or use host buffers "
                         "(WEFT_BACKEND=mpi)",
                         why);
  if ((rc = weft__nccl_load(&why)) != 0)
    return weft__rt_fail(ctx, rc, "device buffers need NCCL: %s", why);
  e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return weft__rt_fail(ctx, WEFT_ENOCUDA, "NCCL was asked for, but CUDA does not start: %s",
                         cudaGetErrorString(e));
  }
  if (n == 0)
    return weft__rt_fail(ctx, WEFT_ENOGPU,
                         "NCCL was asked for, but no GPU is visible "
                         "(check CUDA_VISIBLE_DEVICES)");
  if (ctx->device < 0)
    return weft__rt_fail(ctx, WEFT_ENOGPU,
                         "NCCL was asked for, but weftrun gave this rank no "
                         "GPU (WEFT_GPU=-1): use --map-by gpu, or host buffers");
  if (ctx->device >= n)
    return weft__rt_fail(ctx, WEFT_ERANGE,
                         "this rank's device is %d (%s), but only %d GPU(s) are visible: run one "
                         "rank per GPU, or give each rank its own GPU (WEFT_GPU, "
                         "CUDA_VISIBLE_DEVICES); NCCL does not let two ranks share one",
                         ctx->device, getenv("WEFT_GPU") ? "WEFT_GPU" : "its local rank", n);
  ctx->cuda_state = 1;
  return 0;
}

/* ---- the rank's device, made current and put back ---- */

int weft__nc_device(weft_ctx *ctx, void **saved)
{
  cudaError_t e;
  int rc;

  *saved = NULL;
  if ((rc = weft__nccl_check(ctx)) != 0)
    return rc;
  /* What the thread had: its context, or none (a thread that never used
   * CUDA; putting back device 0 then would make a context there). */
  if (weft__nccl_ctx_get(saved) != 0)
    *saved = WEFT__CTX_UNKNOWN;
  if ((e = cudaSetDevice(ctx->device)) != cudaSuccess)
    return weft__nc_cuda_fail(ctx, "cudaSetDevice", e);
  return 0;
}

void weft__nc_device_put_back(void *saved)
{
  if (saved != WEFT__CTX_UNKNOWN)
    weft__nccl_ctx_set(saved);
}

/* ---- the group's NCCL side ---- */

struct weft__ncgroup *weft__nc_state(weft_group *g)
{
  struct weft__ncgroup *ns = g->nccl;

  if (!ns) {
    ns = calloc(1, sizeof(*ns));
    if (!ns)
      return NULL;
    ns->g = g;
    ns->boot_req = MPI_REQUEST_NULL;
    ns->notice_done = -1;
    g->nccl = ns;
    weft__flights_register(ns);
  }
  return ns;
}

ncclResult_t weft__nc_wait_comm(ncclComm_t comm, ncclResult_t r, double end)
{
  while (r == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess)
      return ncclInternalError;
    if (r != ncclInProgress)
      break;
    if (weftx_monotonic() > end)
      return ncclInProgress;
    sched_yield();
  }
  return r;
}

/* NCCL_COMM_BLOCKING as NCCL reads it (an integer; 0 and 1 count): 1, 0, or
 * -1 when unset or another value. */
static int env_blocking(void)
{
  const char *s = getenv("NCCL_COMM_BLOCKING");
  long v;

  if (!s || weftx_parse_long(s, -1000000, 1000000, &v) != 0 || (v != 0 && v != 1))
    return -1;
  return (int)v;
}

/* A communicator came up blocking though weft asked for a non-blocking one:
 * NCCL_COMM_BLOCKING=1 (the environment, or NCCL's configuration file that
 * NCCL copies into it). Said once per process, by each host's first rank. */
static void say_blocking(weft_group *g)
{
  static int said;

  if (said++)
    return;
  WEFT__LOG(RT, "group %s: NCCL made its communicator blocking (NCCL_COMM_BLOCKING=%s)", g->name,
            getenv("NCCL_COMM_BLOCKING") ? getenv("NCCL_COMM_BLOCKING") : "?");
  if (g->ctx->local_rank == 0)
    fprintf(stderr,
            "weft: rank %d: NCCL_COMM_BLOCKING=1 %s makes NCCL's calls block until they "
            "are done, so weft cannot return WEFT_ETIMEDOUT from them: a call that waits longer "
            "than WEFT_INIT_TIMEOUT (setup) or WEFT_COLL_TIMEOUT ends the rank instead (exit "
            "124); unset it to have the calls fail with the ranks named\n",
            g->ctx->rank, env_blocking() == 1 ? "(environment)" : "(NCCL's configuration file)");
}

/* How long an abort notice's sends are progressed before the abort returns. */
#define TELL_PROGRESS_S 0.2

/* A send counts as done once MPI has copied it, which may be before the
 * transport moved it: each round also makes MPI progress (a probe, of a tag
 * nothing carries). */
static void tell_progress(weft_group *g, struct weft__tell *t, double limit)
{
  double end = weftx_monotonic() + limit;
  int done = 0, flag;

  for (;;) {
    MPI_Iprobe(MPI_ANY_SOURCE, WEFT__TAG_NONE, g->comm, &flag, MPI_STATUS_IGNORE);
    if (MPI_Testall(g->size, t->req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        weftx_monotonic() > end)
      return;
    sched_yield();
  }
}

void weft__nc_abort(weft_group *g, int code, int tell, const char *why)
{
  struct weft__ncgroup *ns = g->nccl;
  int i;

  if (!ns)
    return;
  weft__fl_clear(ns);
  if (ns->comm) {
    ncclCommAbort(ns->comm);
    ns->comm = NULL;
  }
  if (g == g->ctx->world)
    g->ctx->nccl_world = NULL;
  if (!ns->failed) {
    ns->failed = code;
    weft__snprintf(ns->why, sizeof(ns->why), "%s", why);
  }
  if (tell && !ns->tell &&
      (ns->tell = malloc(sizeof(*ns->tell) + (size_t)g->size * sizeof(MPI_Request)))) {
    weft__flights_lock();
    ns->tell->completed = ns->completed;
    weft__flights_unlock();
    for (i = 0; i < g->size; i++)
      if (i == g->rank || MPI_Isend(&ns->tell->completed, 1, MPI_INT64_T, i, WEFT__TAG_ABORTED,
                                    g->comm, &ns->tell->req[i]) != MPI_SUCCESS)
        ns->tell->req[i] = MPI_REQUEST_NULL;
    /* Open MPI's shared-memory transport (vader) may leave a send queued until
     * the sender's MPI makes progress again: a program that now only waits
     * outside MPI (or a member asleep until it comes back) would never be
     * told. Progress them a moment; the receivers need not be there. */
    tell_progress(g, ns->tell, TELL_PROGRESS_S);
  } else if (tell && !ns->tell) { /* no memory for the count: an empty notice still tells */
    for (i = 0; i < g->size; i++) {
      MPI_Request req;
      if (i != g->rank &&
          MPI_Isend(NULL, 0, MPI_BYTE, i, WEFT__TAG_ABORTED, g->comm, &req) == MPI_SUCCESS)
        MPI_Request_free(&req);
    }
  }
  WEFT__LOG(RT, "group %s: NCCL communicator aborted: %s", g->name, why);
}

/* 1 when a member's abort notice has come (taken into ns->noticed...). */
static int notice(weft_group *g)
{
  struct weft__ncgroup *ns = g->nccl;
  MPI_Status st;
  int flag = 0, fin = 0, i;

  if (ns->noticed)
    return 1;
  MPI_Finalized(&fin);
  if (fin)
    return 0;
  /* A probe that finds nothing makes MPI progress, but Open MPI 4.1 reads
   * its shared-memory transport only every few progress calls: a notice that
   * came while this rank was outside MPI was seen by the 2nd to 9th probe
   * (one alone said no, and weft_group_wait returned 0). */
  for (i = 0; i < 16 && !flag; i++)
    if (MPI_Iprobe(MPI_ANY_SOURCE, WEFT__TAG_ABORTED, g->comm, &flag, &st) != MPI_SUCCESS)
      return 0;
  if (!flag)
    return 0;
  ns->notice_done = -1; /* stays so if the notice carries no count */
  MPI_Recv(&ns->notice_done, 1, MPI_INT64_T, st.MPI_SOURCE, WEFT__TAG_ABORTED, g->comm,
           MPI_STATUS_IGNORE);
  ns->notice_from = g->world_ranks[st.MPI_SOURCE];
  ns->noticed = 1;
  return 1;
}

/* Act on a member's notice: abort ours. 1 if there was one. */
static int told(weft_group *g)
{
  struct weft__ncgroup *ns = g->nccl;
  char why[200];

  if (!notice(g))
    return 0;
  weft__snprintf(why, sizeof(why),
                 "world rank %d aborted the group's NCCL communicator after "
                 "a failure there",
                 ns->notice_from);
  weft__nc_abort(g, WEFT_ENCCL, 0, why);
  return 1;
}

ncclResult_t weft__nc_async_error(ncclComm_t comm)
{
  ncclResult_t st = ncclSuccess;

  if (!comm || ncclCommGetAsyncError(comm, &st) != ncclSuccess || st == ncclInProgress)
    return ncclSuccess;
  return st;
}

int weft__nc_usable(weft_group *g, ncclComm_t comm, const char *fn)
{
  struct weft__ncgroup *ns = g->nccl;
  ncclResult_t st;

  if (ns && !ns->failed)
    told(g);
  if (ns && !ns->failed && (st = weft__nc_async_error(comm)) != ncclSuccess) {
    char why[400];
    /* ncclGetLastError is the process's last NCCL warning, not this
     * communicator's: it may speak of another. */
    weft__snprintf(why, sizeof(why),
                   "NCCL reported an asynchronous error: %s (NCCL's last "
                   "message in this process: %s)",
                   ncclGetErrorString(st), ncclGetLastError(NULL));
    weft__nc_abort(g, WEFT_ENCCL, 1, why);
  }
  if (ns && ns->failed)
    return weft__rt_fail(g->ctx, ns->failed,
                         "%s on group %s: its NCCL communicator failed "
                         "(%s); it was aborted, abort the job",
                         fn, g->name, ns->why);
  return 0;
}

int weft__nc_settle(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn)
{
  double limit = g->ctx->coll_timeout > 0 ? g->ctx->coll_timeout : g->ctx->init_timeout;
  ncclResult_t st = weft__nc_wait_comm(comm, r, weftx_monotonic() + limit);
  char why[400];

  if (st == ncclSuccess)
    return 0;
  if (st == ncclInProgress) {
    weft__snprintf(why, sizeof(why), "%s: NCCL did not take the call within %gs", fn, limit);
    weft__nc_abort(g, WEFT_ETIMEDOUT, 1, why);
    return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT,
                         "%s on group %s: NCCL did not take the call "
                         "within %gs; communicator aborted",
                         fn, g->name, limit);
  }
  /* ncclGetLastError is the process's last NCCL warning, whichever
   * communicator it came from. */
  weft__snprintf(why, sizeof(why), "%s: %s (NCCL's last message in this process: %s)", fn,
                 ncclGetErrorString(st), ncclGetLastError(NULL));
  weft__nc_abort(g, WEFT_ENCCL, 1, why);
  return weft__rt_fail(g->ctx, WEFT_ENCCL, "%s on group %s: NCCL: %s; communicator aborted", fn,
                       g->name, why + strlen(fn) + 2);
}

/* ---- the calls in flight: what is done about them ---- */

/* How long a call the member had not finished is given (in case its count
 * was behind: it counts what it saw finished, not what its GPU did). */
#define NOTICE_LATE_S 0.2
/* Without a deadline, how long the calls a member had finished before it
 * aborted get to finish here. */
#define NOTICE_GRACE_S 10.0
/* Calls in flight per group before a new one waits for the oldest. */
#define FLIGHTS_MAX 4096
/* A batch past its deadline: the peers whose tokens say they never posted
 * their side (deadline.c), or, when all did, that one is stuck inside it. */
static int batch_overdue(weft_group *g, const struct weft__flight *f)
{
  weft_ctx *ctx = g->ctx;
  const struct weft__fl_batch *b = &f->batch;
  char list[400], all[400];
  size_t len = 0, alen = 0;
  int i, m, first = -1;

  list[0] = all[0] = '\0';
  for (i = 0; i < b->n; i++) {
    int w = g->world_ranks[b->p[i].peer];
    m = snprintf(all + alen, sizeof(all) - alen, "%s%d", alen ? "," : "", w);
    if (m > 0 && (size_t)m < sizeof(all) - alen)
      alen += (size_t)m;
    if (!weft__p2p_behind(g, b->p[i].peer, 1, b->p[i].send) &&
        !weft__p2p_behind(g, b->p[i].peer, 0, b->p[i].recv))
      continue;
    if (first < 0)
      first = w;
    m = snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", w);
    if (m > 0 && (size_t)m < sizeof(list) - len)
      len += (size_t)m;
  }
  if (len)
    weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                  "device %s on group %s (device call %lld) has not finished %gs after its "
                  "stream reached it (WEFT_COLL_TIMEOUT): world rank(s) %s never posted the "
                  "matching sends or receives%s; abort the job (MPI_Abort)",
                  f->fn, g->name, (long long)f->seq, ctx->coll_timeout, list,
                  b->more ? " (the batch's first peers checked only)" : "");
  else
    weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                  "device %s with world rank(s) %s%s on group %s (device call %lld) has not "
                  "finished %gs after its stream reached it (WEFT_COLL_TIMEOUT); %s; abort the "
                  "job (MPI_Abort)",
                  f->fn, all, b->more ? ",..." : "", g->name, (long long)f->seq, ctx->coll_timeout,
                  b->more ? "its first peers had posted their side"
                          : "every peer had posted its side, so a rank or link is stuck inside it");
  weft__page_deadline(g,
                      first >= 0 ? first
                      : b->n     ? g->world_ranks[b->p[0].peer]
                                 : -1,
                      ctx->coll_timeout, ctx->err);
  weft__nc_abort(g, WEFT_ETIMEDOUT, 1, ctx->err);
  return WEFT_ETIMEDOUT;
}

/* A call past its deadline: the error names who had not joined it. */
static int overdue(weft_group *g, const struct weft__flight *f)
{
  weft_ctx *ctx = g->ctx;
  int rc;

  if (f->peer == WEFT__FL_BATCH)
    return batch_overdue(g, f);
  if (f->peer >= 0) {
    rc =
      weft__rt_fail(ctx, WEFT_ETIMEDOUT,
                    "device %s with world rank %d on group %s (device call %lld) has not "
                    "finished %gs after its stream reached it (WEFT_COLL_TIMEOUT): the peer "
                    "never matched it; abort the job (MPI_Abort)",
                    f->fn, g->world_ranks[f->peer], g->name, (long long)f->seq, ctx->coll_timeout);
    weft__page_deadline(g, g->world_ranks[f->peer], ctx->coll_timeout, ctx->err);
  } else {
    rc = weft__timed_out_at(g, f->fn, f->arrival);
  }
  weft__nc_abort(g, WEFT_ETIMEDOUT, 1, ctx->err);
  return rc;
}

/* A member aborted: the calls it had finished can still finish here, until
 * their deadline (or NOTICE_GRACE_S without one); a call it had not finished
 * is given NOTICE_LATE_S. Then our communicator goes, and fn fails. */
static int after_notice(weft_group *g, const char *fn)
{
  struct weft__ncgroup *ns = g->nccl;
  double limit = g->ctx->coll_timeout, now = weftx_monotonic();
  double grace = now + (limit > 0 ? limit : NOTICE_GRACE_S), late = now + NOTICE_LATE_S;
  struct weft__fl_seen seen;

  for (;;) {
    weft__fl_see(ns, limit, &seen);
    now = weftx_monotonic();
    if (seen.oldest < 0 || now > grace || (seen.oldest > ns->notice_done && now > late))
      break;
    sched_yield();
  }
  told(g);
  return weft__nc_usable(g, NULL, fn);
}

int weft__nc_poll(weft_group *g, const char *fn, double end)
{
  struct weft__ncgroup *ns = g->nccl;
  double limit = g->ctx->coll_timeout;
  struct weft__fl_seen seen;

  for (;;) {
    if (!ns || ns->failed)
      return weft__nc_usable(g, NULL, fn);
    weft__fl_see(ns, limit, &seen);
    if (weft__nc_async_error(ns->comm) != ncclSuccess)
      return weft__nc_usable(g, ns->comm, fn);
    if (notice(g))
      return after_notice(g, fn);
    if (seen.over)
      return overdue(g, &seen.late);
    if (seen.left == 0 || (end <= 0 && seen.left < FLIGHTS_MAX))
      return 0;
    if (end > 0 && weftx_monotonic() > end && limit > 0 && seen.waiting > 0)
      return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT,
                           "%s on group %s: %zu device call(s) have not started after %gs "
                           "(WEFT_COLL_TIMEOUT): the work queued before them on their streams "
                           "still runs; nothing was aborted; abort the job or raise the timeout",
                           fn, g->name, seen.waiting, limit);
    if (end > 0 && weftx_monotonic() > end && limit <= 0)
      return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT,
                           "%s on group %s: %zu device call(s) still in flight after %gs "
                           "(WEFT_COLL_WATCHDOG)",
                           fn, g->name, seen.left, WEFT__COLL_WATCHDOG_S);
    sched_yield();
  }
}

/* ---- bringing a communicator up ---- */

/* Wait for an MPI request until time end; 0, or 1 on timeout. */
static int poll_until(MPI_Request *req, double end)
{
  for (;;) {
    int flag = 0;
    if (MPI_Test(req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag)
      return 0;
    if (weftx_monotonic() > end)
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
      if (MPI_Irecv(&flags[i], 1, MPI_INT, i, WEFT__TAG_FLAG_UP, g->comm, &reqs[i]) != MPI_SUCCESS)
        reqs[i] = MPI_REQUEST_NULL;
    for (;;) {
      int done = 0;
      if (MPI_Testall(g->size, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done ||
          weftx_monotonic() > end)
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
      if (flags[i] >= 0 &&
          MPI_Isend(flags, g->size, MPI_INT, i, WEFT__TAG_FLAG_DOWN, g->comm, &req) == MPI_SUCCESS)
        poll_or_cancel(&req, end);
    }
    return 0;
  } else {
    MPI_Request req;
    if (MPI_Isend(&mine, 1, MPI_INT, 0, WEFT__TAG_FLAG_UP, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    if (MPI_Irecv(flags, g->size, MPI_INT, 0, WEFT__TAG_FLAG_DOWN, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    return 0;
  }
}

/* A failure of the group's bootstrap: remembered, so that later device calls
 * on the group say it at once instead of waiting again. */
static int boot_fail(weft_group *g, int code, const char *fmt, ...) WEFT_PRINTF(3, 4);

static int boot_fail(weft_group *g, int code, const char *fmt, ...)
{
  struct weft__ncgroup *ns = g->nccl;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(ns->why, sizeof(ns->why), fmt, ap);
  va_end(ap);
  ns->failed = code;
  return weft__rt_fail(g->ctx, code, "%s", ns->why);
}

/* Group rank 0's unique id, to every member (bounded). */
static int share_id(weft_group *g, double end, char *why, size_t whylen)
{
  struct weft__ncgroup *ns = g->nccl;
  weft_ctx *ctx = g->ctx;
  ncclResult_t r;

  /* The id's buffer belongs to the group: a late rank 0 may still write it
   * after we gave up, and MPI cannot cancel a broadcast. */
  if (!ns->boot && !(ns->boot = calloc(1, sizeof(*ns->boot))))
    return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  if (g->rank == 0) {
    r = ncclGetUniqueId(&ns->boot->id);
    ns->boot->ok = r == ncclSuccess;
    if (!ns->boot->ok)
      weft__snprintf(why, whylen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
  }
  if (MPI_Ibcast(ns->boot, (int)sizeof(*ns->boot), MPI_BYTE, 0, g->comm, &ns->boot_req) !=
      MPI_SUCCESS)
    return boot_fail(g, WEFT_EMPI, "NCCL bootstrap of group %s: MPI_Ibcast failed", g->name);
  if (poll_until(&ns->boot_req, end))
    return boot_fail(g, WEFT_ETIMEDOUT,
                     "NCCL bootstrap of group %s: no unique id from world rank %d within %gs "
                     "(WEFT_INIT_TIMEOUT); abort the job",
                     g->name, g->world_ranks[0], ctx->init_timeout);
  if (!ns->boot->ok) {
    if (!*why)
      weft__snprintf(why, whylen, "world rank %d could not make an NCCL unique id",
                     g->world_ranks[0]);
    return boot_fail(g, WEFT_ENCCL, "NCCL bootstrap of group %s: %s", g->name, why);
  }
  return 0;
}

/* Every member says whether its communicator came up (st: 1 up, 0 failed,
 * 2 still waiting for the others when the time ran out); 0 when all did,
 * else the failure naming those that failed or never came (a rank that only
 * waited for them is not named). */
static int agree(weft_group *g, ncclComm_t comm, ncclResult_t st, const char *why)
{
  weft_ctx *ctx = g->ctx;
  int rc, *flags, i, ok;

  flags = calloc((size_t)g->size, sizeof(int));
  if (!flags) {
    if (comm)
      ncclCommAbort(comm);
    return boot_fail(g, WEFT_ENOMEM, "NCCL bootstrap of group %s: out of memory", g->name);
  }
  rc = exchange_flags(g,
                      st == ncclSuccess      ? 1
                      : st == ncclInProgress ? 2
                                             : 0,
                      flags, weftx_monotonic() + (ctx->init_timeout < 10 ? ctx->init_timeout : 10));
  ok = rc == 0;
  for (i = 0; i < g->size; i++)
    if (flags[i] != 1)
      ok = 0;
  if (!ok) {
    char list[512] = "";
    size_t len = 0;
    for (i = 0; rc == 0 && i < g->size; i++)
      if (flags[i] != 1 && flags[i] != 2) {
        int n = snprintf(list + len, sizeof(list) - len, "%s%d(%s)", len ? "," : "",
                         g->world_ranks[i], flags[i] < 0 ? "absent" : "failed");
        if (n > 0 && (size_t)n < sizeof(list) - len)
          len += (size_t)n;
      }
    free(flags);
    if (comm)
      ncclCommAbort(comm);
    if (rc != 0)
      return boot_fail(g, WEFT_ETIMEDOUT,
                       "NCCL bootstrap of group %s failed%s%s; world rank %d (group rank 0) did "
                       "not answer; abort the job",
                       g->name, *why ? ": " : "", why, g->world_ranks[0]);
    return boot_fail(g, st == ncclInProgress ? WEFT_ETIMEDOUT : WEFT_ENCCL,
                     "NCCL bootstrap of group %s failed%s%s; %s%s; abort the job", g->name,
                     *why ? ": here: " : "", why, len ? "world rank(s) " : "",
                     len ? list
                         : "all called it, none failed, and it finished on none: NCCL "
                           "could not connect them (the network between the hosts, "
                           "NCCL_SOCKET_IFNAME) or a rank is stuck inside NCCL");
  }
  free(flags);
  return 0;
}

/* The group's communicator, made from group rank 0's unique id. */
static int comm_init(weft_group *g)
{
  weft_ctx *ctx = g->ctx;
  struct weft__ncgroup *ns = g->nccl;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t r, st;
  double end = weftx_monotonic() + ctx->init_timeout;
  char why[256] = "";
  int rc;

  if ((rc = share_id(g, end, why, sizeof(why))) != 0)
    return rc;
  cfg.blocking = 0;
  cfg.commName = g->name;
  weft__fl_blocking_enter(g, "ncclCommInitRankConfig", ctx->init_timeout);
  r = ncclCommInitRankConfig(&comm, g->size, ns->boot->id, g->rank, &cfg);
  weft__fl_blocking_exit();
  if (r == ncclSuccess) { /* a blocking init: NCCL_COMM_BLOCKING=1 */
    ns->blocking = 1;
    say_blocking(g);
  }
  st = r == ncclSuccess || r == ncclInProgress ? weft__nc_wait_comm(comm, r, end) : r;
  if (st == ncclInProgress)
    weft__snprintf(why, sizeof(why), "not up after %gs (WEFT_INIT_TIMEOUT)", ctx->init_timeout);
  else if (st != ncclSuccess)
    weft__snprintf(why, sizeof(why), "%s", ncclGetErrorString(st));
  if (st != ncclSuccess && comm) {
    ncclCommAbort(comm);
    comm = NULL;
  }
  if ((rc = agree(g, comm, st, why)) != 0)
    return rc;
  ns->comm = comm;
  if (g == ctx->world)
    ctx->nccl_world = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator of %d ranks up on device %d", g->name, g->size,
            ctx->device);
  return 0;
}

int weft__nc_comm(weft_group *g, ncclComm_t *out, const char *fn)
{
  struct weft__ncgroup *ns = weft__nc_state(g);
  int rc;

  if (!ns)
    return weft__rt_fail(g->ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  if (!ns->comm && !ns->failed && (rc = comm_init(g)) != 0)
    return rc;
  *out = ns->comm;
  return weft__nc_usable(g, ns->comm, fn);
}

/* ---- the end ---- */

void weft__nccl_group_free(weft_group *g)
{
  struct weft__ncgroup *ns = g->nccl;
  void *saved = WEFT__CTX_UNKNOWN;
  double end;
  int i, fin = 0;

  if (!ns)
    return;
  MPI_Finalized(&fin);
  if (!fin && !ns->failed)
    told(g);
  weft__flights_unregister(ns);
  g->nccl = NULL;
  if (g->ctx->cuda_state == 1)
    weft__nc_device(g->ctx, &saved);
  /* A communicator is finalised (polled, bounded) before it is destroyed;
   * anything wrong and it is aborted instead. */
  end = weftx_monotonic() + (g->ctx->init_timeout < 30 ? g->ctx->init_timeout : 30);
  if (ns->comm) {
    ncclResult_t st = ncclSuccess;
    if (ncclCommGetAsyncError(ns->comm, &st) == ncclSuccess && st == ncclSuccess) {
      weft__fl_blocking_enter(g, "ncclCommFinalize", end - weftx_monotonic());
      st = ncclCommFinalize(ns->comm);
      weft__fl_blocking_exit();
      st = weft__nc_wait_comm(ns->comm, st, end);
    }
    if (st == ncclSuccess)
      ncclCommDestroy(ns->comm);
    else
      ncclCommAbort(ns->comm);
  }
  if (g == g->ctx->world)
    g->ctx->nccl_world = NULL;
  for (i = 0; i < (int)ns->cap; i++) {
    if (ns->fl[i].start)
      cudaEventDestroy(ns->fl[i].start);
    if (ns->fl[i].done)
      cudaEventDestroy(ns->fl[i].done);
  }
  weft__nc_device_put_back(saved);
  free(ns->fl);
  /* A request still pending owns its buffer: MPI may write it any time. */
  if (ns->boot_req == MPI_REQUEST_NULL || (!fin && poll_until(&ns->boot_req, 0) == 0))
    free(ns->boot);
  for (i = 0; ns->tell && i < g->size; i++)
    if (ns->tell->req[i] != MPI_REQUEST_NULL && (fin || poll_until(&ns->tell->req[i], 0)))
      break;
  if (!ns->tell || i == g->size)
    free(ns->tell);
  free(ns);
}

void weft__nccl_ctx_free(weft_ctx *ctx) { ctx->nccl_world = NULL; }
