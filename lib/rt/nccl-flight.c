/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device calls in flight. A device call returns as soon as NCCL has
 * taken it: weft never waits for the GPU in the call, so the caller's stream
 * is never stalled and the call can be captured into a CUDA graph. Each call
 * leaves an event behind it on its stream (and, with WEFT_COLL_TIMEOUT, one
 * before it); weft looks at them at the group's next device call, in
 * weft_group_wait() (nccl-comm.c says what is done then: a call past its
 * deadline fails the group), and the watchdog thread (watch.c) every half
 * second: while the program waits for the GPU outside weft
 * (cudaStreamSynchronize), the watchdog ends the rank a second after a
 * call's deadline (exit 124, one line naming the call), as it does for a host
 * call that never returns. The clock starts when the stream reaches the call
 * (its start event done), so the caller's own work queued before it does not
 * count. Calls queued while the stream is being captured are not watched: a
 * graph's replays run outside weft. The events are made once per slot and
 * kept. This file also watches a blocking NCCL call (NCCL_COMM_BLOCKING=1)
 * for the watchdog.
 */
#include "nccl-private.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The watchdog acts this long after a deadline, leaving the call that is
 * looking at the same deadline in the program's thread time to report it. */
#define DOG_GRACE_S 1.0

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft__ncgroup *all;

/* A blocking NCCL call in progress (weft__fl_blocking_enter). */
static struct {
  int on;
  double since, limit;
  const weft_group *g;
  char what[64];
} blocked;

void weft__flights_lock(void) { pthread_mutex_lock(&lock); }
void weft__flights_unlock(void) { pthread_mutex_unlock(&lock); }

void weft__flights_register(struct weft__ncgroup *ns)
{
  pthread_mutex_lock(&lock);
  ns->next = all;
  all = ns;
  pthread_mutex_unlock(&lock);
}

void weft__flights_unregister(struct weft__ncgroup *ns)
{
  struct weft__ncgroup **pp;

  pthread_mutex_lock(&lock);
  for (pp = &all; *pp; pp = &(*pp)->next)
    if (*pp == ns) {
      *pp = ns->next;
      break;
    }
  pthread_mutex_unlock(&lock);
}

static struct weft__flight *at(struct weft__ncgroup *ns, size_t i)
{
  return &ns->fl[(ns->head + i) % ns->cap];
}

/* Room for one more call in flight (lock held): the ring grows, oldest
 * first at 0. 0, or WEFT_ENOMEM. */
static int room(struct weft__ncgroup *ns)
{
  struct weft__flight *fl;
  size_t cap, i;

  if (ns->n < ns->cap)
    return 0;
  cap = ns->cap ? 2 * ns->cap : 16;
  fl = calloc(cap, sizeof(*fl));
  if (!fl)
    return WEFT_ENOMEM;
  for (i = 0; i < ns->cap; i++)
    fl[i] = *at(ns, i);
  free(ns->fl);
  ns->fl = fl;
  ns->head = 0;
  ns->cap = cap;
  return 0;
}

/* The events of slot f, made at its first use on the rank's device. */
static cudaError_t slot_events(struct weft__flight *f)
{
  cudaError_t e = cudaSuccess;

  if (!f->done && (e = cudaEventCreateWithFlags(&f->done, cudaEventDisableTiming)) != cudaSuccess)
    f->done = NULL;
  if (e == cudaSuccess && !f->start &&
      (e = cudaEventCreateWithFlags(&f->start, cudaEventDisableTiming)) != cudaSuccess)
    f->start = NULL;
  return e;
}

void weft__fl_clear(struct weft__ncgroup *ns)
{
  pthread_mutex_lock(&lock);
  ns->n = 0;
  pthread_mutex_unlock(&lock);
}

/* Look at ns's calls in flight (lock held): retire those finished, in order
 * (retire: the program's thread only, which alone counts what finished), and
 * stamp when each was reached. 1 when one is past its deadline (copied into
 * *late), else 0. */
static int look(struct weft__ncgroup *ns, double now, double limit, int retire,
                struct weft__flight *late)
{
  size_t i;
  int over = 0;

  while (retire && ns->n > 0 && cudaEventQuery(at(ns, 0)->done) == cudaSuccess) {
    ns->completed = at(ns, 0)->seq;
    ns->head = (ns->head + 1) % ns->cap;
    ns->n--;
  }
  for (i = 0; limit > 0 && i < ns->n; i++) {
    struct weft__flight *f = at(ns, i);
    if (f->started == 0 && cudaEventQuery(f->start) == cudaSuccess)
      f->started = now;
    if (!over && f->started > 0 && now - f->started > limit &&
        cudaEventQuery(f->done) != cudaSuccess) {
      *late = *f;
      over = 1;
    }
  }
  (void)cudaGetLastError(); /* a query's cudaErrorNotReady is no error of the caller's */
  return over;
}

void weft__fl_see(struct weft__ncgroup *ns, double limit, struct weft__fl_seen *seen)
{
  size_t i;

  memset(seen, 0, sizeof(*seen));
  pthread_mutex_lock(&lock);
  seen->over = look(ns, weftx_monotonic(), limit, 1, &seen->late);
  seen->left = ns->n;
  seen->oldest = ns->n ? at(ns, 0)->seq : -1;
  for (i = 0; limit > 0 && i < ns->n; i++)
    seen->waiting += at(ns, i)->started == 0;
  pthread_mutex_unlock(&lock);
}

int weft__fl_begin(weft_group *g, void *stream, const char *fn, int *watched)
{
  struct weft__ncgroup *ns = g->nccl;
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  struct weft__flight *f;
  cudaError_t e;
  int rc;

  *watched = 0;
  if ((e = cudaStreamIsCapturing((cudaStream_t)stream, &cs)) != cudaSuccess)
    return weft__nc_cuda_fail(g->ctx, "cudaStreamIsCapturing", e);
  if (cs != cudaStreamCaptureStatusNone)
    return 0; /* into a graph: its replays run outside weft */
  pthread_mutex_lock(&lock);
  rc = room(ns);
  f = rc == 0 ? at(ns, ns->n) : NULL;
  e = f ? slot_events(f) : cudaSuccess;
  pthread_mutex_unlock(&lock);
  if (rc != 0)
    return weft__rt_fail(g->ctx, rc, "%s on group %s: out of memory", fn, g->name);
  if (e != cudaSuccess)
    return weft__nc_cuda_fail(g->ctx, "cudaEventCreateWithFlags", e);
  /* The slot at n is ours alone until weft__fl_end counts it. */
  if (g->ctx->coll_timeout > 0 &&
      (e = cudaEventRecord(f->start, (cudaStream_t)stream)) != cudaSuccess)
    return weft__nc_cuda_fail(g->ctx, "cudaEventRecord", e);
  *watched = 1;
  return 0;
}

int weft__fl_end(weft_group *g, void *stream, const char *fn, int peer,
                 const struct weft__fl_batch *b, int watched)
{
  struct weft__ncgroup *ns = g->nccl;
  struct weft__flight *f;
  cudaError_t e;

  ns->queued++;
  if (!watched)
    return 0;
  f = at(ns, ns->n);
  if ((e = cudaEventRecord(f->done, (cudaStream_t)stream)) != cudaSuccess)
    return weft__nc_cuda_fail(g->ctx, "cudaEventRecord", e);
  pthread_mutex_lock(&lock);
  f->seq = ns->queued;
  f->arrival = peer == -1 ? g->seq : 0;
  f->peer = peer;
  if (b)
    f->batch = *b;
  else
    f->batch.n = f->batch.more = 0;
  f->fn = fn;
  f->started = 0;
  ns->n++;
  pthread_mutex_unlock(&lock);
  return 0;
}

void weft__fl_blocking_enter(const weft_group *g, const char *what, double limit)
{
  pthread_mutex_lock(&lock);
  blocked.on = limit > 0;
  blocked.since = weftx_monotonic();
  blocked.limit = limit;
  blocked.g = g;
  weft__snprintf(blocked.what, sizeof(blocked.what), "%s", what);
  pthread_mutex_unlock(&lock);
}

void weft__fl_blocking_exit(void)
{
  pthread_mutex_lock(&lock);
  blocked.on = 0;
  pthread_mutex_unlock(&lock);
}

/* For the watchdog thread (watch.c), every half second: 1 when a device call
 * is past its deadline by DOG_GRACE_S, or a blocking NCCL call past its limit,
 * with why, the group and the limit filled in. The queries go to the rank's
 * device, made current in this thread first (a thread without a current
 * device would make a context on device 0). */
int weft__nccl_overdue(char *why, size_t len, const weft_group **gp, double *limitp)
{
  struct weft__ncgroup *ns;
  double now = weftx_monotonic();
  int found = 0;

  pthread_mutex_lock(&lock);
  if (blocked.on && now - blocked.since > blocked.limit) {
    weft__snprintf(why, len,
                   "NCCL's %s on group %s has not returned after %.0f s "
                   "(NCCL_COMM_BLOCKING=1 makes NCCL's calls block; limit %gs); ending the rank",
                   blocked.what, blocked.g ? blocked.g->name : "?", now - blocked.since,
                   blocked.limit);
    *gp = blocked.g;
    *limitp = blocked.limit;
    found = 1;
  }
  for (ns = all; !found && ns; ns = ns->next) {
    double limit = ns->g->ctx->coll_timeout;
    struct weft__flight late;
    if (ns->n == 0 || limit <= 0 || ns->failed)
      continue;
    if (cudaSetDevice(ns->g->ctx->device) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    if (look(ns, now, limit + DOG_GRACE_S, 0, &late)) {
      weft__snprintf(why, len,
                     "device %s on group %s (device call %lld) has not finished "
                     "%.0f s after its stream reached it (WEFT_COLL_TIMEOUT=%g), and the "
                     "program is not in weft to be told; ending the rank",
                     late.fn, ns->g->name, (long long)late.seq, now - late.started, limit);
      *gp = ns->g;
      *limitp = limit;
      found = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return found;
}
