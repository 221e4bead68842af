/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Streams of the stand-in: each one a queue run in order by a worker thread of
 * its own, so that work really happens later than the call that queued it.
 * CUDA's implicit ordering is kept: the legacy default stream of a device
 * waits for all earlier work of the device's blocking streams and they for
 * it; non-blocking streams order only by events. Events work, with times.
 *
 * Races are found by happens-before, not by luck: every stream carries a
 * vector clock (the last operation of each stream known to come before its
 * newest one), joined through events, the legacy stream's implicit
 * synchronisation, and what the host has seen finish (a synchronisation, a
 * successful query). Each access to device memory is remembered with its
 * stream and sequence number; an access from another stream that is not
 * ordered after a conflicting one (either writes) is a violation, whether or
 * not the first has run yet.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_MAGIC 0x57535452u /* "WSTR" */
#define EVENT_MAGIC 0x57455654u  /* "WEVT" */
#define DEAD_MAGIC 0xdeadu
#define MAX_ACCESS 4096

struct dep {
  wsi_stream *s;
  uint64_t seq;
};

struct op {
  struct op *next;
  uint64_t seq;
  wsi_fn run;
  void *arg;
  struct dep *deps;
  size_t ndeps;
};

struct wsi_stream {
  unsigned magic;
  size_t index;
  int physical;
  int nonblocking, legacy, per_thread;
  uint64_t enq, done;
  struct op *head, *tail;
  struct wsi_vc vc;
  int running, destroyed;
};

struct wsi_event {
  unsigned magic;
  int physical, timing;
  wsi_stream *s;
  uint64_t seq, gen;
  struct wsi_vc vc;
  double t;
};

static wsi_stream **streams;
static size_t nstreams, streams_cap;
static wsi_event **events;
static size_t nevents, events_cap;
static wsi_stream *legacy[WSI_MAX_DEVICES];
static __thread wsi_stream *per_thread[WSI_MAX_DEVICES];
static struct wsi_vc host;

static void oom(void)
{
  wsi_violation("out of memory", "the stand-in could not allocate its own bookkeeping");
}

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- vector clocks ---- */

static void vc_grow(struct wsi_vc *vc, size_t n)
{
  uint64_t *v;

  if (vc->n >= n)
    return;
  v = realloc(vc->v, n * sizeof(*v));
  if (!v)
    oom();
  memset(v + vc->n, 0, (n - vc->n) * sizeof(*v));
  vc->v = v;
  vc->n = n;
}

void wsi__vc_join(struct wsi_vc *dst, const struct wsi_vc *src)
{
  size_t i;

  vc_grow(dst, src->n);
  for (i = 0; i < src->n; i++)
    if (src->v[i] > dst->v[i])
      dst->v[i] = src->v[i];
}

void wsi__vc_set(struct wsi_vc *vc, size_t i, uint64_t seq)
{
  vc_grow(vc, i + 1);
  if (seq > vc->v[i])
    vc->v[i] = seq;
}

uint64_t wsi__vc_get(const struct wsi_vc *vc, size_t i)
{
  return i < vc->n ? vc->v[i] : 0;
}

static void vc_copy(struct wsi_vc *dst, const struct wsi_vc *src)
{
  vc_grow(dst, src->n);
  memset(dst->v, 0, dst->n * sizeof(*dst->v));
  memcpy(dst->v, src->v, src->n * sizeof(*src->v));
}

/* ---- streams ---- */

const char *wsi_stream_name(const wsi_stream *s, char *buf, size_t len)
{
  int d = wsi_ordinal(s->physical);

  if (s->legacy)
    snprintf(buf, len, "the legacy default stream of device %d", d);
  else if (s->per_thread)
    snprintf(buf, len, "a per-thread default stream of device %d", d);
  else
    snprintf(buf, len, "%s stream %zu of device %d", s->nonblocking ? "non-blocking" : "blocking",
             s->index, d);
  return buf;
}

static wsi_stream *new_stream(int physical, int nonblocking, int is_legacy, int is_per_thread)
{
  wsi_stream *s = calloc(1, sizeof(*s));

  if (!s)
    oom();
  s->magic = STREAM_MAGIC;
  s->physical = physical;
  s->nonblocking = nonblocking;
  s->legacy = is_legacy;
  s->per_thread = is_per_thread;
  if (nstreams == streams_cap) {
    size_t cap = streams_cap ? 2 * streams_cap : 64;
    wsi_stream **n = realloc(streams, cap * sizeof(*n));
    if (!n)
      oom();
    streams = n;
    streams_cap = cap;
  }
  s->index = nstreams;
  streams[nstreams++] = s;
  return s;
}

static int current_physical(const char *fn)
{
  int d = wsi_current(), p = wsi_physical(d);

  if (p < 0)
    wsi_violation("no device", "%s: the current device %d does not exist (%d visible)", fn, d,
                  wsi_ndevices());
  return p;
}

wsi_stream *wsi_stream_get(void *handle, const char *fn)
{
  uintptr_t h = (uintptr_t)handle;
  wsi_stream *s = NULL;
  size_t i;
  int p;

  if (h <= 2) {
    p = current_physical(fn);
    wsi_lock();
    if (h == 2) {
      if (!per_thread[p])
        per_thread[p] = new_stream(p, 0, 0, 1);
      s = per_thread[p];
    } else {
      if (!legacy[p])
        legacy[p] = new_stream(p, 0, 1, 0);
      s = legacy[p];
    }
    wsi_unlock();
    return s;
  }
  wsi_lock();
  for (i = 0; i < nstreams && !s; i++)
    if (streams[i] == handle)
      s = streams[i];
  wsi_unlock();
  if (!s)
    wsi_violation("not a stream", "%s: %p is not a stream this process created", fn, handle);
  if (s->magic != STREAM_MAGIC)
    wsi_violation("use of a destroyed stream",
                  "%s on stream %zu after cudaStreamDestroy; CUDA says a destroyed stream must "
                  "not be used again",
                  fn, s->index);
  return s;
}

wsi_stream *wsi_stream_create(int ordinal, int nonblocking)
{
  wsi_stream *s;
  int p = wsi_physical(ordinal);

  if (p < 0)
    return NULL;
  wsi_lock();
  s = new_stream(p, nonblocking, 0, 0);
  wsi_unlock();
  return s;
}

void wsi_stream_destroy(wsi_stream *s, const char *fn)
{
  if (s->legacy || s->per_thread)
    wsi_violation("not a stream", "%s: the default streams cannot be destroyed", fn);
  wsi_lock();
  /* Work still queued runs to its end, as CUDA does; then the worker goes. */
  s->magic = DEAD_MAGIC;
  s->destroyed = 1;
  wsi_broadcast();
  wsi_unlock();
}

int wsi_stream_physical(const wsi_stream *s) { return s->physical; }
int wsi_stream_is_legacy(const wsi_stream *s) { return s->legacy; }

static int deps_done(const struct op *o)
{
  size_t i;

  for (i = 0; i < o->ndeps; i++)
    if (o->deps[i].s->done < o->deps[i].seq)
      return 0;
  return 1;
}

static void *worker(void *arg)
{
  wsi_stream *s = arg;

  wsi_lock();
  for (;;) {
    struct op *o = s->head;
    if (!o) {
      if (s->destroyed)
        break;
      wsi_wait();
      continue;
    }
    if (!deps_done(o)) {
      wsi_wait();
      continue;
    }
    wsi_unlock();
    if (o->run)
      o->run(o->arg);
    wsi_lock();
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->done = o->seq;
    free(o->deps);
    free(o);
    wsi_broadcast();
  }
  s->running = 0;
  wsi_broadcast();
  wsi_unlock();
  return NULL;
}

static void add_dep(struct op *o, size_t *cap, wsi_stream *t, uint64_t seq)
{
  if (t->done >= seq)
    return;
  if (o->ndeps == *cap) {
    size_t c = *cap ? 2 * *cap : 4;
    struct dep *d = realloc(o->deps, c * sizeof(*d));
    if (!d)
      oom();
    o->deps = d;
    *cap = c;
  }
  o->deps[o->ndeps].s = t;
  o->deps[o->ndeps].seq = seq;
  o->ndeps++;
}

/* Drop what every future operation is ordered after (the host has seen it
 * finish), and what a write ordered after it covers. */
static void prune(struct wsi_alloc *m, const wsi_stream *s, size_t off, size_t n, int write)
{
  size_t i, k = 0;

  for (i = 0; i < m->nacc; i++) {
    struct wsi_access *a = &m->acc[i];
    int seen = wsi__vc_get(&host, a->stream) >= a->seq;
    int covered = write && a->off >= off && a->off + a->n <= off + n &&
                  (a->stream == s->index || wsi__vc_get(&s->vc, a->stream) >= a->seq);
    if (!seen && !covered)
      m->acc[k++] = *a;
  }
  m->nacc = k;
}

static void check_range(const wsi_stream *s, const char *what, const struct wsi_range *r)
{
  struct wsi_alloc *m = wsi__find(r->p);
  size_t off, i;

  if (!m || m->kind != WSI_DEVICE || r->n == 0)
    return;
  off = (size_t)((uintptr_t)r->p - m->addr);
  for (i = 0; i < m->nacc; i++) {
    const struct wsi_access *a = &m->acc[i];
    char mine[96], theirs[96];
    if (a->stream == s->index || (!a->write && !r->write))
      continue;
    if (a->off >= off + r->n || off >= a->off + a->n)
      continue;
    if (wsi__vc_get(&s->vc, a->stream) >= a->seq)
      continue;
    wsi_stream_name(s, mine, sizeof(mine));
    wsi_stream_name(streams[a->stream], theirs, sizeof(theirs));
    wsi_violation("race between streams",
                  "%s on %s %s %zu bytes of device memory at %p that %s on %s %s, and nothing "
                  "orders the two (%s): record an event after the first and make the second "
                  "stream wait for it (cudaStreamWaitEvent), or synchronise in between",
                  what, mine, r->write ? "writes" : "reads", r->n, r->p, a->what, theirs,
                  a->write ? "writes" : "reads",
                  streams[a->stream]->done >= a->seq ? "it has run, but nothing made this "
                                                       "stream wait for it"
                                                     : "it has not even run yet");
  }
  prune(m, s, off, r->n, r->write);
  if (m->nacc == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    struct wsi_access *a;
    if (cap > MAX_ACCESS) {
      /* Too much history: forget the older half (a race may go unseen,
       * never a false one). */
      memmove(m->acc, m->acc + m->nacc / 2, (m->nacc - m->nacc / 2) * sizeof(*m->acc));
      m->nacc -= m->nacc / 2;
    } else {
      a = realloc(m->acc, cap * sizeof(*a));
      if (!a)
        oom();
      m->acc = a;
      m->cap = cap;
    }
  }
  m->acc[m->nacc].off = off;
  m->acc[m->nacc].n = r->n;
  m->acc[m->nacc].stream = s->index;
  m->acc[m->nacc].seq = s->enq;
  m->acc[m->nacc].write = r->write;
  m->acc[m->nacc].what = what;
  m->nacc++;
}

/* Enqueue with the lock held; extra (may be NULL) is one more dependency. */
static uint64_t enqueue_locked(wsi_stream *s, const char *what, const struct wsi_range *r, int nr,
                               wsi_fn run, void *arg, const struct dep *extra)
{
  struct op *o = calloc(1, sizeof(*o));
  size_t cap = 0, i;
  int k;

  if (!o)
    oom();
  wsi__vc_join(&s->vc, &host);
  if (s->legacy) {
    for (i = 0; i < nstreams; i++) {
      wsi_stream *t = streams[i];
      if (t == s || t->physical != s->physical || t->legacy || t->nonblocking)
        continue;
      wsi__vc_join(&s->vc, &t->vc);
      add_dep(o, &cap, t, t->enq);
    }
  } else if (!s->nonblocking && legacy[s->physical]) {
    wsi_stream *l = legacy[s->physical];
    wsi__vc_join(&s->vc, &l->vc);
    add_dep(o, &cap, l, l->enq);
  }
  if (extra)
    add_dep(o, &cap, extra->s, extra->seq);
  o->seq = ++s->enq;
  o->run = run;
  o->arg = arg;
  wsi__vc_set(&s->vc, s->index, o->seq);
  for (k = 0; k < nr; k++)
    check_range(s, what, &r[k]);
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  if (!s->running) {
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, s) != 0)
      wsi_violation("out of threads", "the stand-in could not start a stream's worker thread");
    pthread_attr_destroy(&attr);
    s->running = 1;
  }
  wsi_broadcast();
  return o->seq;
}

uint64_t wsi_enqueue(wsi_stream *s, const char *what, const struct wsi_range *r, int nr,
                     wsi_fn run, void *arg)
{
  uint64_t seq;

  wsi_lock();
  seq = enqueue_locked(s, what, r, nr, run, arg, NULL);
  wsi_unlock();
  return seq;
}

/* Stand-ins until stream capture exists: nothing ever captures. */
uint64_t wsi_enqueue_replayable(wsi_stream *s, const char *what, const struct wsi_range *r,
                                int nr, wsi_fn run, void *arg, const struct wsi_replay *rp)
{
  (void)rp;
  return wsi_enqueue(s, what, r, nr, run, arg);
}

int wsi_stream_capturing(const wsi_stream *s)
{
  (void)s;
  return 0;
}

/* The host has seen operation seq of s finish (lock held). */
static void host_learns(wsi_stream *s, uint64_t seq)
{
  if (s->enq == seq)
    wsi__vc_join(&host, &s->vc);
  else
    wsi__vc_set(&host, s->index, seq);
}

void wsi_wait_op(wsi_stream *s, uint64_t seq)
{
  wsi_lock();
  while (s->done < seq)
    wsi_wait();
  host_learns(s, seq);
  wsi_unlock();
}

int wsi_stream_done(wsi_stream *s)
{
  int done;

  wsi_lock();
  done = s->done == s->enq;
  if (done)
    host_learns(s, s->enq);
  wsi_unlock();
  return done;
}

void wsi_stream_sync(wsi_stream *s)
{
  uint64_t target;

  wsi_lock();
  target = s->enq;
  while (s->done < target)
    wsi_wait();
  host_learns(s, target);
  wsi_unlock();
}

void wsi_device_sync(int ordinal)
{
  int p = wsi_physical(ordinal);
  size_t i;

  wsi_lock();
  for (i = 0; i < nstreams; i++) {
    wsi_stream *s = streams[i];
    uint64_t target = s->enq;
    if (s->physical != p)
      continue;
    while (s->done < target)
      wsi_wait();
    host_learns(s, target);
  }
  wsi_unlock();
}

/* ---- events ---- */

struct record {
  wsi_event *e;
  uint64_t gen;
};

static void record_run(void *arg)
{
  struct record *r = arg;

  wsi_lock();
  if (r->e->gen == r->gen)
    r->e->t = now();
  wsi_unlock();
  free(r);
}

wsi_event *wsi_event_create(int ordinal, int timing)
{
  wsi_event *e = calloc(1, sizeof(*e));
  int p = wsi_physical(ordinal);

  if (!e)
    oom();
  if (p < 0) {
    free(e);
    return NULL;
  }
  e->magic = EVENT_MAGIC;
  e->physical = p;
  e->timing = timing;
  e->t = -1;
  wsi_lock();
  if (nevents == events_cap) {
    size_t cap = events_cap ? 2 * events_cap : 64;
    wsi_event **n = realloc(events, cap * sizeof(*n));
    if (!n)
      oom();
    events = n;
    events_cap = cap;
  }
  events[nevents++] = e;
  wsi_unlock();
  return e;
}

wsi_event *wsi_event_get(void *handle, const char *fn)
{
  wsi_event *e = NULL;
  size_t i;

  wsi_lock();
  for (i = nevents; i > 0 && !e; i--)
    if (events[i - 1] == handle)
      e = events[i - 1];
  wsi_unlock();
  if (!e)
    wsi_violation("not an event", "%s: %p is not an event this process created", fn, handle);
  if (e->magic != EVENT_MAGIC)
    wsi_violation("use of a destroyed event", "%s on an event after cudaEventDestroy", fn);
  return e;
}

void wsi_event_destroy(wsi_event *e)
{
  wsi_lock();
  e->magic = DEAD_MAGIC;
  wsi_unlock();
}

void wsi_event_record(wsi_event *e, wsi_stream *s)
{
  struct record *r = malloc(sizeof(*r));
  char sname[96];

  if (!r)
    oom();
  if (e->physical != s->physical)
    wsi_violation("event and stream of different devices",
                  "cudaEventRecord: the event belongs to device %d and %s to device %d; CUDA "
                  "says they must be of the same device",
                  wsi_ordinal(e->physical), wsi_stream_name(s, sname, sizeof(sname)),
                  wsi_ordinal(s->physical));
  wsi_lock();
  e->gen++;
  e->t = -1;
  r->e = e;
  r->gen = e->gen;
  e->s = s;
  e->seq = enqueue_locked(s, "cudaEventRecord", NULL, 0, record_run, r, NULL);
  vc_copy(&e->vc, &s->vc);
  wsi_unlock();
}

static int event_done_locked(wsi_event *e)
{
  if (!e->s)
    return 1;
  if (e->s->done < e->seq)
    return 0;
  wsi__vc_join(&host, &e->vc);
  return 1;
}

int wsi_event_done(wsi_event *e)
{
  int done;

  wsi_lock();
  done = event_done_locked(e);
  wsi_unlock();
  return done;
}

void wsi_event_sync(wsi_event *e)
{
  wsi_lock();
  while (!event_done_locked(e))
    wsi_wait();
  wsi_unlock();
}

double wsi_event_elapsed(wsi_event *a, wsi_event *b)
{
  double ms;

  wsi_lock();
  if (!a->timing || !b->timing) {
    wsi_unlock();
    return -2;
  }
  if (!a->s || !b->s || !event_done_locked(a) || !event_done_locked(b) || a->t < 0 || b->t < 0) {
    wsi_unlock();
    return -1;
  }
  ms = (b->t - a->t) * 1e3;
  wsi_unlock();
  return ms;
}

void wsi_stream_wait_event(wsi_stream *s, wsi_event *e)
{
  struct dep d;

  wsi_lock();
  if (!e->s) {
    wsi_unlock();
    return;
  }
  d.s = e->s;
  d.seq = e->seq;
  wsi__vc_join(&s->vc, &e->vc);
  enqueue_locked(s, "cudaStreamWaitEvent", NULL, 0, NULL, NULL, &d);
  wsi_unlock();
}
