/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL backend: device buffers, ordered on the caller's stream.
 *
 * CUDA and NCCL are opened (nccl-dl.c) and the rank's device made current
 * only when the first device buffer comes; which buffers are device memory is
 * asked of the driver without a context (device.c). A group's communicator
 * comes up at its first device collective: group rank 0's ncclGetUniqueId
 * goes out over MPI (into a buffer the group owns, which outlives the request
 * even when a late rank 0 answers after the deadline), then a non-blocking
 * ncclCommInitRankConfig is polled against WEFT_INIT_TIMEOUT; the ranks then
 * agree through group rank 0, so that a failure names those that failed or
 * never came. Point-to-point calls use a communicator of the two ranks alone
 * (made at their first transfer), so that a send needs no third rank.
 *
 * A communicator that fails (an asynchronous error, a call NCCL did not take
 * in time, a collective past WEFT_COLL_TIMEOUT) is aborted, as NCCL requires,
 * and every other member is told over MPI so that each aborts its own (NCCL
 * 2.28 wants every active rank to call ncclCommAbort); the notice says how
 * many collectives the sender had finished, so that a member still in one of
 * those lets it complete before aborting. From then on device
 * calls on that group fail at once with the reason. The deadline of a
 * collective is counted from when the stream reaches it (an event recorded
 * before the call), so that the caller's own kernels queued before it do not
 * count. ncclCommSplit waits until the world's queued calls are done (NCCL:
 * splitting with outstanding operations may deadlock).
 */
#include "rt_private.h"
#include "nccl-dl.h"

#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI tags on the group's communicator (host send/recv use 1). */
enum { TAG_FLAG_UP = 7, TAG_FLAG_DOWN = 8, TAG_PAIR_ID = 11, TAG_ABORTED = 12 };

struct boot {
  int ok;
  ncclUniqueId id;
};

/* The NCCL side of a group (g->nccl). */
struct ncgroup {
  ncclComm_t comm;           /* the group's communicator, once up */
  int failed;                /* its code (WEFT_E*) once it failed: device calls refuse */
  char why[400];
  struct boot *boot;         /* unique-id broadcast; may outlive its request */
  MPI_Request boot_req;
  cudaEvent_t start, done;   /* around the latest call (deadline, drain before split) */
  int events;
  ncclComm_t *pair;          /* two-rank communicators by peer, for send/recv */
  struct boot *pair_boot;
  MPI_Request *pair_req;
  int64_t queued;            /* collectives queued on comm */
  int64_t completed;         /* how many of them finish() saw the stream finish */
  struct tell *tell;         /* our abort notice to the others, while it is in flight */
  int noticed;               /* a member's abort notice came (taken, not yet acted on) */
  int notice_from;           /* its world rank */
  int64_t notice_done;       /* the collectives it had finished; -1 unknown */
};

/* An abort notice: the collectives the sender had finished, which tells a
 * member still in one of them whether that call can still complete. The
 * buffer outlives the requests (MPI may read it until they complete). */
struct tell {
  int64_t completed;
  MPI_Request req[];
};

static int cuda_fail(weft_ctx *ctx, const char *what, cudaError_t e)
{
  (void)cudaGetLastError();
  return weft__rt_fail(ctx, WEFT_ECUDA, "%s: %s", what, cudaGetErrorString(e));
}

int weft__nccl_check(weft_ctx *ctx)
{
  const char *why;
  cudaError_t e;
  int n = 0, rc;

  if (ctx->cuda_state == 1)
    return 0;
  if (!weft__cuda_driver(&why))
    return weft__rt_fail(ctx, WEFT_ENOGPU, "device buffers or WEFT_BACKEND=nccl need a GPU, "
                         "and here there is %s; run on a GPU host, or use host buffers "
                         "(WEFT_BACKEND=mpi)", why);
  if ((rc = weft__nccl_load(&why)) != 0)
    return weft__rt_fail(ctx, rc, "device buffers need NCCL: %s", why);
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
                         "this rank's device is %d (%s), but only %d GPU(s) are visible: run one "
                         "rank per GPU, or give each rank its own GPU (WEFT_GPU, "
                         "CUDA_VISIBLE_DEVICES); NCCL does not let two ranks share one",
                         ctx->device, getenv("WEFT_GPU") ? "WEFT_GPU" : "its local rank", n);
  ctx->cuda_state = 1;
  return 0;
}

static struct ncgroup *state(weft_group *g)
{
  struct ncgroup *ns = g->nccl;

  if (!ns) {
    ns = calloc(1, sizeof(*ns));
    if (!ns)
      return NULL;
    ns->boot_req = MPI_REQUEST_NULL;
    g->nccl = ns;
  }
  return ns;
}

/* The one wait for a non-blocking communicator: poll until the call in
 * progress (r) settles, or until time end. Returns ncclSuccess, NCCL's error,
 * or ncclInProgress when the time ran out. */
static ncclResult_t wait_comm(ncclComm_t comm, ncclResult_t r, double end)
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

/* Abort every communicator of g, refuse device calls on it from now on with
 * code and why, and (tell) tell the other members to do the same. */
static void abort_group(weft_group *g, int code, int tell, const char *why)
{
  struct ncgroup *ns = g->nccl;
  int i;

  if (!ns)
    return;
  if (ns->comm) {
    ncclCommAbort(ns->comm);
    ns->comm = NULL;
  }
  for (i = 0; ns->pair && i < g->size; i++)
    if (ns->pair[i]) {
      ncclCommAbort(ns->pair[i]);
      ns->pair[i] = NULL;
    }
  if (g == g->ctx->world)
    g->ctx->nccl_world = NULL;
  if (!ns->failed) {
    ns->failed = code;
    weft__snprintf(ns->why, sizeof(ns->why), "%s", why);
  }
  if (tell && !ns->tell &&
      (ns->tell = malloc(sizeof(*ns->tell) + (size_t)g->size * sizeof(MPI_Request)))) {
    ns->tell->completed = ns->completed;
    for (i = 0; i < g->size; i++)
      if (i == g->rank || MPI_Isend(&ns->tell->completed, 1, MPI_INT64_T, i, TAG_ABORTED, g->comm,
                                    &ns->tell->req[i]) != MPI_SUCCESS)
        ns->tell->req[i] = MPI_REQUEST_NULL;
  } else if (tell && !ns->tell) { /* no memory for the count: an empty notice still tells */
    for (i = 0; i < g->size; i++) {
      MPI_Request req;
      if (i != g->rank &&
          MPI_Isend(NULL, 0, MPI_BYTE, i, TAG_ABORTED, g->comm, &req) == MPI_SUCCESS)
        MPI_Request_free(&req);
    }
  }
  WEFT__LOG(RT, "group %s: NCCL communicators aborted: %s", g->name, why);
}

/* 1 when a member that aborted its communicator told us so; the notice is
 * taken into ns (noticed, notice_from, notice_done) for told() to act on. */
static int notice(weft_group *g)
{
  struct ncgroup *ns = g->nccl;
  MPI_Status st;
  int flag = 0, fin = 0;

  if (ns->noticed)
    return 1;
  MPI_Finalized(&fin);
  if (fin || MPI_Iprobe(MPI_ANY_SOURCE, TAG_ABORTED, g->comm, &flag, &st) != MPI_SUCCESS || !flag)
    return 0;
  ns->notice_done = -1; /* stays so if the notice carries no count */
  MPI_Recv(&ns->notice_done, 1, MPI_INT64_T, st.MPI_SOURCE, TAG_ABORTED, g->comm,
           MPI_STATUS_IGNORE);
  ns->notice_from = g->world_ranks[st.MPI_SOURCE];
  ns->noticed = 1;
  return 1;
}

/* A member that aborted its communicator told us: abort ours. 1 if so. */
static int told(weft_group *g)
{
  struct ncgroup *ns = g->nccl;
  char why[200];

  if (!notice(g))
    return 0;
  weft__snprintf(why, sizeof(why), "world rank %d aborted the group's NCCL communicator after "
                 "a failure there", ns->notice_from);
  abort_group(g, WEFT_ENCCL, 0, why);
  return 1;
}

/* The asynchronous error comm reports, or ncclSuccess (also for none to ask, a
 * call still in progress, or a query that failed). */
static ncclResult_t async_error(ncclComm_t comm)
{
  ncclResult_t st = ncclSuccess;

  if (!comm || ncclCommGetAsyncError(comm, &st) != ncclSuccess || st == ncclInProgress)
    return ncclSuccess;
  return st;
}

/* Before a device call on g (comm: the communicator it will use, or NULL). */
static int usable(weft_group *g, ncclComm_t comm, const char *fn)
{
  struct ncgroup *ns = g->nccl;
  ncclResult_t st;

  if (ns && !ns->failed && told(g))
    ns = g->nccl;
  if (ns && !ns->failed && (st = async_error(comm)) != ncclSuccess) {
    char why[400];
    weft__snprintf(why, sizeof(why), "NCCL reported an asynchronous error: %s (%s)",
                   ncclGetErrorString(st), ncclGetLastError(comm));
    abort_group(g, WEFT_ENCCL, 1, why);
  }
  if (ns && ns->failed)
    return weft__rt_fail(g->ctx, ns->failed, "%s on group %s: its NCCL communicator failed "
                         "(%s); it was aborted, abort the job", fn, g->name, ns->why);
  return 0;
}

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
      if (MPI_Irecv(&flags[i], 1, MPI_INT, i, TAG_FLAG_UP, g->comm, &reqs[i]) != MPI_SUCCESS)
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
          MPI_Isend(flags, g->size, MPI_INT, i, TAG_FLAG_DOWN, g->comm, &req) == MPI_SUCCESS)
        poll_or_cancel(&req, end);
    }
    return 0;
  } else {
    MPI_Request req;
    if (MPI_Isend(&mine, 1, MPI_INT, 0, TAG_FLAG_UP, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    if (MPI_Irecv(flags, g->size, MPI_INT, 0, TAG_FLAG_DOWN, g->comm, &req) != MPI_SUCCESS ||
        poll_or_cancel(&req, end))
      return WEFT_ETIMEDOUT;
    return 0;
  }
}

/* NCCL usable, and the rank's device current. */
static int device_current(weft_ctx *ctx)
{
  cudaError_t e;
  int rc;

  if ((rc = weft__nccl_check(ctx)) != 0)
    return rc;
  if ((e = cudaSetDevice(ctx->device)) != cudaSuccess)
    return cuda_fail(ctx, "cudaSetDevice", e);
  return 0;
}

/* The rank's device current, and the group's events, before its first call. */
static int device_ready(weft_group *g, struct ncgroup *ns)
{
  weft_ctx *ctx = g->ctx;
  cudaError_t e;
  int rc;

  if ((rc = device_current(ctx)) != 0)
    return rc;
  if (!ns->events) {
    if ((e = cudaEventCreateWithFlags(&ns->start, cudaEventDisableTiming)) != cudaSuccess)
      return cuda_fail(ctx, "cudaEventCreateWithFlags", e);
    if ((e = cudaEventCreateWithFlags(&ns->done, cudaEventDisableTiming)) != cudaSuccess) {
      cudaEventDestroy(ns->start);
      return cuda_fail(ctx, "cudaEventCreateWithFlags", e);
    }
    ns->events = 1;
  }
  return 0;
}

/* A failure of the group's bootstrap: remembered, so that later device calls
 * on the group say it at once instead of waiting again. */
static int boot_fail(weft_group *g, int code, const char *fmt, ...) WEFT_PRINTF(3, 4);

static int boot_fail(weft_group *g, int code, const char *fmt, ...)
{
  struct ncgroup *ns = g->nccl;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(ns->why, sizeof(ns->why), fmt, ap);
  va_end(ap);
  ns->failed = code;
  return weft__rt_fail(g->ctx, code, "%s", ns->why);
}

static int comm_up(weft_group *g, ncclComm_t *out, const char *fn)
{
  weft_ctx *ctx = g->ctx;
  struct ncgroup *ns = state(g);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t r, st;
  double end = weftx_monotonic() + ctx->init_timeout;
  int rc, *flags, i, ok;
  char why[256] = "";

  if (!ns)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  if (ns->comm) {
    *out = ns->comm;
    return usable(g, ns->comm, fn);
  }
  if ((rc = usable(g, NULL, fn)) != 0 || (rc = device_ready(g, ns)) != 0)
    return rc;
  /* The id's buffer belongs to the group: a late rank 0 may still write it
   * after we gave up, and MPI cannot cancel a broadcast. */
  if (!ns->boot && !(ns->boot = calloc(1, sizeof(*ns->boot))))
    return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  if (g->rank == 0) {
    r = ncclGetUniqueId(&ns->boot->id);
    ns->boot->ok = r == ncclSuccess;
    if (!ns->boot->ok)
      weft__snprintf(why, sizeof(why), "ncclGetUniqueId: %s", ncclGetErrorString(r));
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
      weft__snprintf(why, sizeof(why), "world rank %d could not make an NCCL unique id",
                     g->world_ranks[0]);
    return boot_fail(g, WEFT_ENCCL, "NCCL bootstrap of group %s: %s", g->name, why);
  }
  cfg.blocking = 0;
  cfg.commName = g->name;
  r = ncclCommInitRankConfig(&comm, g->size, ns->boot->id, g->rank, &cfg);
  st = r == ncclSuccess || r == ncclInProgress ? wait_comm(comm, r, end) : r;
  if (st == ncclInProgress)
    weft__snprintf(why, sizeof(why), "not up after %gs (WEFT_INIT_TIMEOUT)", ctx->init_timeout);
  else if (st != ncclSuccess)
    weft__snprintf(why, sizeof(why), "%s", ncclGetErrorString(st));
  if (st != ncclSuccess && comm) {
    ncclCommAbort(comm);
    comm = NULL;
  }

  /* Agree on the outcome, and name whoever failed or never came. */
  flags = calloc((size_t)g->size, sizeof(int));
  if (!flags) {
    if (comm)
      ncclCommAbort(comm);
    return boot_fail(g, WEFT_ENOMEM, "NCCL bootstrap of group %s: out of memory", g->name);
  }
  rc = exchange_flags(g, st == ncclSuccess,
                      flags, weftx_monotonic() + (ctx->init_timeout < 10 ? ctx->init_timeout : 10));
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
    if (comm)
      ncclCommAbort(comm);
    if (rc != 0)
      return boot_fail(g, WEFT_ETIMEDOUT,
                       "NCCL bootstrap of group %s failed%s%s; world rank %d (group rank 0) did "
                       "not answer; abort the job",
                       g->name, *why ? ": " : "", why, g->world_ranks[0]);
    return boot_fail(g, st == ncclInProgress ? WEFT_ETIMEDOUT : WEFT_ENCCL,
                     "NCCL bootstrap of group %s failed%s%s; world rank(s) %s; abort the job",
                     g->name, *why ? ": here: " : "", why, list);
  }
  free(flags);
  ns->comm = comm;
  if (g == ctx->world)
    ctx->nccl_world = comm;
  *out = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator of %d ranks up on device %d", g->name, g->size,
            ctx->device);
  return 0;
}

/* Wait (bounded) until the world's calls queued so far have run. */
static int world_drained(weft_ctx *ctx)
{
  struct ncgroup *ns = ctx->world->nccl;
  double end = weftx_monotonic() + ctx->init_timeout;
  cudaError_t e;

  if (!ns || !ns->events)
    return 1;
  while ((e = cudaEventQuery(ns->done)) == cudaErrorNotReady) {
    if (weftx_monotonic() > end)
      return 0;
    sched_yield();
  }
  if (e != cudaSuccess)
    (void)cudaGetLastError();
  return e == cudaSuccess;
}

int weft__nccl_split(weft_group *g, int color, int key)
{
  weft_ctx *ctx = g->ctx;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t st;
  struct ncgroup *ns;
  int ok, all = 0;

  if (!ctx->nccl_world || !weft__nccl.CommSplit)
    return 0;
  /* Every rank splits or none: first the world's queued calls must be done
   * (NCCL: a split with outstanding operations may deadlock). */
  ok = world_drained(ctx) && usable(ctx->world, ctx->nccl_world, "ncclCommSplit") == 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->world->comm) != MPI_SUCCESS || !all) {
    WEFT__LOG(RT, "group %s: the world's NCCL calls did not drain in time; NCCL comes up at "
              "first use", g->name);
    return 0;
  }
  cfg.blocking = 0;
  cfg.commName = g->name;
  st = ncclCommSplit((ncclComm_t)ctx->nccl_world, color, key, &comm, &cfg);
  if (comm)
    st = wait_comm(comm, st, weftx_monotonic() + ctx->init_timeout);
  ok = st == ncclSuccess && comm != NULL;
  /* All or none: a group whose members disagree would hang at its first
   * collective; without a split, the communicator comes up lazily. */
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->comm) != MPI_SUCCESS)
    all = 0;
  ns = all ? state(g) : NULL;
  if (!ns || device_ready(g, ns) != 0) {
    if (comm)
      ncclCommAbort(comm);
    WEFT__LOG(RT, "group %s: ncclCommSplit did not work (%s); NCCL comes up at first use",
              g->name, ncclGetErrorString(st));
    return 0;
  }
  ns->comm = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator split from the world's", g->name);
  return 0;
}

/* Before a collective: the communicator, and the event its deadline counts
 * from (recorded on the stream before the call). */
static int enter(weft_group *g, ncclComm_t *comm, void *stream, const char *fn)
{
  struct ncgroup *ns;
  cudaError_t e;
  int rc;

  if ((rc = comm_up(g, comm, fn)) != 0)
    return rc;
  ns = g->nccl;
  if (g->ctx->coll_timeout > 0 &&
      (e = cudaEventRecord(ns->start, (cudaStream_t)stream)) != cudaSuccess)
    return cuda_fail(g->ctx, "cudaEventRecord", e);
  return 0;
}

/* After a call on a non-blocking communicator: wait until NCCL took it. */
static int settle(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn)
{
  double limit = g->ctx->coll_timeout > 0 ? g->ctx->coll_timeout : g->ctx->init_timeout;
  ncclResult_t st = wait_comm(comm, r, weftx_monotonic() + limit);
  char why[400];

  if (st == ncclSuccess)
    return 0;
  if (st == ncclInProgress) {
    weft__snprintf(why, sizeof(why), "%s: NCCL did not take the call within %gs", fn, limit);
    abort_group(g, WEFT_ETIMEDOUT, 1, why);
    return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT, "%s on group %s: NCCL did not take the call "
                         "within %gs; communicator aborted", fn, g->name, limit);
  }
  weft__snprintf(why, sizeof(why), "%s: %s (%s)", fn, ncclGetErrorString(st),
                 ncclGetLastError(comm));
  abort_group(g, WEFT_ENCCL, 1, why);
  return weft__rt_fail(g->ctx, WEFT_ENCCL, "%s on group %s: %s; communicator aborted", fn,
                       g->name, why);
}

/* The stream finished the latest collective: counted as finished unless
 * our communicator reported an error (comm; NULL: none to ask). A member's
 * notice that it aborted since does not spoil it: the stream could not have
 * finished without all it needed from that member (as finish() decides while
 * it waits). The group goes at its next call. */
static int done(weft_group *g, ncclComm_t comm, const char *fn)
{
  struct ncgroup *ns = g->nccl;

  if (ns->failed || async_error(comm) != ncclSuccess)
    return usable(g, comm, fn);
  ns->completed = ns->queued;
  return 0;
}

/* After a collective: with WEFT_COLL_TIMEOUT, wait for it (bounded). The
 * clock starts when the stream reaches the call; until then it is the
 * caller's work that runs, bounded by the same time but never a reason to
 * abort. On timeout the communicator is aborted and the error names the ranks
 * that had not entered the call (arrival tokens, deadline.c). */
static int finish(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn, void *stream)
{
  struct ncgroup *ns = g->nccl;
  double limit = g->ctx->coll_timeout, end;
  cudaError_t e;
  int rc = settle(g, comm, r, fn);

  if (rc != 0)
    return rc;
  ns->queued++;
  if ((e = cudaEventRecord(ns->done, (cudaStream_t)stream)) != cudaSuccess)
    return cuda_fail(g->ctx, "cudaEventRecord", e);
  if (limit <= 0)
    return 0;
  end = weftx_monotonic() + limit;
  while ((e = cudaEventQuery(ns->start)) == cudaErrorNotReady) {
    if (weftx_monotonic() > end)
      return weft__rt_fail(g->ctx, WEFT_ETIMEDOUT,
                           "%s on group %s: the work queued before it on the stream has run for "
                           "more than %gs (WEFT_COLL_TIMEOUT), so it has not started; it stays "
                           "queued and nothing was aborted; abort the job or raise the timeout",
                           fn, g->name, limit);
    sched_yield();
  }
  if (e != cudaSuccess)
    return cuda_fail(g->ctx, fn, e);
  end = weftx_monotonic() + limit;
  for (;;) {
    e = cudaEventQuery(ns->done);
    if (e == cudaSuccess) /* done, but an asynchronous error still spoils it */
      return done(g, comm, fn);
    if (e != cudaErrorNotReady)
      return cuda_fail(g->ctx, fn, e);
    /* A member aborted. If it had finished this call, this call has all it
     * needs from it and is waited for (to the deadline); if not, it gets a
     * moment, in case the abort came after all. Then the group goes, at this
     * call or the next. */
    if (notice(g)) {
      double grace = ns->notice_done >= ns->queued ? end : weftx_monotonic() + 0.2;
      while ((e = cudaEventQuery(ns->done)) == cudaErrorNotReady && weftx_monotonic() < grace)
        sched_yield();
      if (e == cudaSuccess) {
        ns->completed = ns->queued;
        return 0;
      }
      told(g);
      return usable(g, NULL, fn);
    }
    if (async_error(comm) != ncclSuccess)
      return usable(g, comm, fn);
    if (weftx_monotonic() > end)
      break;
    sched_yield();
  }
  rc = weft__timed_out(g, fn);
  abort_group(g, WEFT_ETIMEDOUT, 1, g->ctx->err);
  return rc;
}

static const ncclDataType_t nccl_types[WEFT_DTYPE_COUNT] = {
  ncclInt8, ncclUint8, ncclInt32, ncclInt64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
static const ncclRedOp_t nccl_ops[WEFT_OP_COUNT] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};

static int nc_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                        weft_op op, void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = enter(g, &c, stream, "allreduce")) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
    return rc;
  return finish(g, c, ncclAllReduce(s, r, n, nccl_types[dt], nccl_ops[op], c,
                                    (cudaStream_t)stream), "allreduce", stream);
}

static int nc_broadcast(weft_group *g, void *buf, size_t n, weft_dtype dt, int root,
                        void *stream)
{
  ncclComm_t c;
  int rc;

  if ((rc = enter(g, &c, stream, "broadcast")) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
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

  if ((rc = enter(g, &c, stream, "allgather")) != 0 || (rc = weft__arrive(g)) != 0 || n == 0)
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

  if ((rc = enter(g, &c, stream, "reduce_scatter")) != 0 || (rc = weft__arrive(g)) != 0 ||
      n == 0)
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

/* The communicator of this rank and peer alone (made at their first
 * transfer; the lower rank's unique id goes to the other over MPI), and the
 * peer's rank in it. */
static int pair_up(weft_group *g, int peer, ncclComm_t *out, int *prank, const char *fn)
{
  weft_ctx *ctx = g->ctx;
  struct ncgroup *ns = state(g);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  ncclResult_t r, st;
  double end = weftx_monotonic() + ctx->init_timeout;
  int low = g->rank < peer, rc, i;
  struct boot *b;
  char name[96];

  if (!ns)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  *prank = low ? 1 : 0;
  if (ns->pair && ns->pair[peer]) {
    *out = ns->pair[peer];
    return usable(g, *out, fn);
  }
  if ((rc = usable(g, NULL, fn)) != 0 || (rc = device_ready(g, ns)) != 0)
    return rc;
  if (!ns->pair) {
    ns->pair = calloc((size_t)g->size, sizeof(*ns->pair));
    ns->pair_boot = calloc((size_t)g->size, sizeof(*ns->pair_boot));
    ns->pair_req = malloc((size_t)g->size * sizeof(*ns->pair_req));
    if (!ns->pair || !ns->pair_boot || !ns->pair_req)
      return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
    for (i = 0; i < g->size; i++)
      ns->pair_req[i] = MPI_REQUEST_NULL;
  }
  b = &ns->pair_boot[peer];
  if (low) {
    b->ok = ncclGetUniqueId(&b->id) == ncclSuccess;
    rc = MPI_Isend(b, (int)sizeof(*b), MPI_BYTE, peer, TAG_PAIR_ID, g->comm, &ns->pair_req[peer]);
  } else {
    rc = MPI_Irecv(b, (int)sizeof(*b), MPI_BYTE, peer, TAG_PAIR_ID, g->comm, &ns->pair_req[peer]);
  }
  if (rc != MPI_SUCCESS)
    return weft__rt_fail(ctx, WEFT_EMPI, "%s on group %s: MPI failed to pass the NCCL id", fn,
                         g->name);
  if (poll_until(&ns->pair_req[peer], end))
    return boot_fail(g, WEFT_ETIMEDOUT,
                     "%s with world rank %d on group %s: the peer did not come to set up the "
                     "NCCL connection within %gs (WEFT_INIT_TIMEOUT); abort the job",
                     fn, g->world_ranks[peer], g->name, ctx->init_timeout);
  if (!b->ok)
    return boot_fail(g, WEFT_ENCCL, "%s with world rank %d on group %s: ncclGetUniqueId failed "
                     "on world rank %d", fn, g->world_ranks[peer], g->name,
                     g->world_ranks[low ? g->rank : peer]);
  cfg.blocking = 0;
  weft__snprintf(name, sizeof(name), "%.60s:%d-%d", g->name, low ? g->rank : peer,
                 low ? peer : g->rank);
  cfg.commName = name;
  r = ncclCommInitRankConfig(&comm, 2, b->id, low ? 0 : 1, &cfg);
  st = r == ncclSuccess || r == ncclInProgress ? wait_comm(comm, r, end) : r;
  if (st != ncclSuccess) {
    if (comm)
      ncclCommAbort(comm);
    return boot_fail(g, st == ncclInProgress ? WEFT_ETIMEDOUT : WEFT_ENCCL,
                     "%s with world rank %d on group %s: the two-rank NCCL communicator did not "
                     "come up: %s; abort the job",
                     fn, g->world_ranks[peer], g->name,
                     st == ncclInProgress ? "not within WEFT_INIT_TIMEOUT" : ncclGetErrorString(st));
  }
  ns->pair[peer] = comm;
  *out = comm;
  WEFT__LOG(RT, "group %s: NCCL communicator of ranks %d and %d up", g->name, g->rank, peer);
  return 0;
}

static int nc_send(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer,
                   void *stream)
{
  ncclComm_t c;
  int rc, p;

  if ((rc = pair_up(g, peer, &c, &p, "send")) != 0 || n == 0)
    return rc;
  return settle(g, c, ncclSend(buf, n, nccl_types[dt], p, c, (cudaStream_t)stream), "send");
}

static int nc_recv(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  ncclComm_t c;
  int rc, p;

  if ((rc = pair_up(g, peer, &c, &p, "recv")) != 0 || n == 0)
    return rc;
  return settle(g, c, ncclRecv(buf, n, nccl_types[dt], p, c, (cudaStream_t)stream), "recv");
}

static int nc_alloc(weft_ctx *ctx, void **p, size_t bytes)
{
  cudaError_t e;
  int rc;

  *p = NULL;
  if ((rc = device_current(ctx)) != 0)
    return rc;
  e = cudaMalloc(p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    *p = NULL;
    (void)cudaGetLastError();
    return weft__rt_fail(ctx, WEFT_ECUDA, "cudaMalloc of %zu bytes failed: %s", bytes,
                         cudaGetErrorString(e));
  }
  return 0;
}

static void nc_free(weft_ctx *ctx, void *p)
{
  (void)ctx;
  if (p)
    cudaFree(p);
}

/* How buckets copy tensors to and from the fusion buffer: batched
 * (cudaMemcpyBatchAsync, one call) where the runtime has it, else one copy
 * per tensor. WEFT_BUCKET_COPY=each forces the second, for measurements. */
int weft__nccl_pack(weft_ctx *ctx, size_t n, void *const *dst, const void *const *src,
                    const size_t *bytes, void *stream)
{
  static int each = -1;
  size_t i;
  int rc;

  if ((rc = weft__nccl_check(ctx)) != 0)
    return rc;
  if (each < 0) {
    const char *s = getenv("WEFT_BUCKET_COPY");
    each = s && !strcmp(s, "each");
  }
  /* The batch refuses the legacy default stream (NULL). */
  if (n > 1 && !each && weft__nccl.MemcpyBatchAsync && (uintptr_t)stream > 1) {
    struct cudaMemcpyAttributes attr;
    size_t first = 0;
    cudaError_t e;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    e = cudaMemcpyBatchAsync(dst, src, bytes, n, &attr, &first, 1, (cudaStream_t)stream);
    if (e != cudaSuccess)
      return cuda_fail(ctx, "cudaMemcpyBatchAsync", e);
    return 0;
  }
  for (i = 0; i < n; i++)
    if ((rc = nc_copy(ctx, dst[i], src[i], bytes[i], stream)) != 0)
      return rc;
  return 0;
}

void weft__nccl_group_free(weft_group *g)
{
  struct ncgroup *ns = g->nccl;
  double end;
  int i, fin = 0;

  if (!ns)
    return;
  MPI_Finalized(&fin);
  if (!fin && !ns->failed)
    told(g);
  g->nccl = NULL;
  /* A communicator is finalised (polled, bounded) before it is destroyed;
   * anything wrong and it is aborted instead. */
  end = weftx_monotonic() + (g->ctx->init_timeout < 30 ? g->ctx->init_timeout : 30);
  for (i = -1; i < (ns->pair ? g->size : 0); i++) {
    ncclComm_t c = i < 0 ? ns->comm : ns->pair[i];
    ncclResult_t st = ncclSuccess;
    if (!c)
      continue;
    if (ncclCommGetAsyncError(c, &st) == ncclSuccess && st == ncclSuccess)
      st = wait_comm(c, ncclCommFinalize(c), end);
    if (st == ncclSuccess)
      ncclCommDestroy(c);
    else
      ncclCommAbort(c);
  }
  if (g == g->ctx->world)
    g->ctx->nccl_world = NULL;
  if (ns->events) {
    cudaEventDestroy(ns->start);
    cudaEventDestroy(ns->done);
  }
  /* A request still pending owns its buffer: MPI may write it any time. */
  if (ns->boot_req == MPI_REQUEST_NULL || (!fin && poll_until(&ns->boot_req, 0) == 0))
    free(ns->boot);
  for (i = 0; ns->pair_req && i < g->size; i++)
    if (ns->pair_req[i] != MPI_REQUEST_NULL && (fin || poll_until(&ns->pair_req[i], 0)))
      break;
  if (!ns->pair_req || i == g->size)
    free(ns->pair_boot);
  for (i = 0; ns->tell && i < g->size; i++)
    if (ns->tell->req[i] != MPI_REQUEST_NULL && (fin || poll_until(&ns->tell->req[i], 0)))
      break;
  if (!ns->tell || i == g->size)
    free(ns->tell);
  free(ns->pair_req);
  free(ns->pair);
  free(ns);
}

void weft__nccl_ctx_free(weft_ctx *ctx) { ctx->nccl_world = NULL; }

const struct weft__backend weft__backend_nccl = {
  "nccl", nc_allreduce, nc_broadcast, nc_allgather, nc_reduce_scatter,
  nc_send, nc_recv, nc_copy, nc_alloc, nc_free,
};
