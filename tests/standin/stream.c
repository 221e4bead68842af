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
 *
 * Stream capture and CUDA graphs (below): work queued on a capturing stream
 * becomes a node of a graph instead of running; each launch queues the nodes
 * again as ordinary operations, so the same race checks hold for replays.
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

struct capture;
struct node;

/* A set of graph nodes: what the next node captured in a stream depends on,
 * or what a captured event stands for. */
struct nodeset {
  struct node **v;
  size_t n, cap;
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
  struct capture *cap; /* the capture sequence it belongs to, or NULL */
  int capturing;       /* cap != NULL, for wsi_stream_capturing without the lock */
  struct nodeset deps; /* while capturing: the next node's dependencies */
  struct nodeset info; /* what cudaStreamGetCaptureInfo last handed out */
};

struct wsi_event {
  unsigned magic;
  int physical, timing;
  wsi_stream *s;
  uint64_t seq, gen;
  struct wsi_vc vc;
  double t;
  int captured;         /* last recorded in a capturing stream */
  struct capture *cap;  /* that capture while it goes on, else NULL */
  struct nodeset nodes; /* what it stands for in that capture */
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

uint64_t wsi__vc_get(const struct wsi_vc *vc, size_t i) { return i < vc->n ? vc->v[i] : 0; }

static void vc_copy(struct wsi_vc *dst, const struct wsi_vc *src)
{
  vc_grow(dst, src->n);
  if (dst->n) /* an empty clock may have no array */
    memset(dst->v, 0, dst->n * sizeof(*dst->v));
  if (src->n)
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
  char name[96];

  if (s->legacy || s->per_thread)
    wsi_violation("not a stream", "%s: the default streams cannot be destroyed", fn);
  wsi_lock();
  if (s->cap)
    wsi_violation("not modelled by the stand-in",
                  "%s of %s while it captures a graph: end the capture first "
                  "(cudaStreamEndCapture)",
                  fn, wsi_stream_name(s, name, sizeof(name)));
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

uint64_t wsi_enqueue(wsi_stream *s, const char *what, const struct wsi_range *r, int nr, wsi_fn run,
                     void *arg)
{
  uint64_t seq;
  char name[96];

  wsi_lock();
  if (s->cap)
    wsi_violation("work the stand-in cannot capture",
                  "%s on %s while it captures a graph: only work queued through "
                  "wsi_enqueue_replayable can be captured",
                  what, wsi_stream_name(s, name, sizeof(name)));
  seq = enqueue_locked(s, what, r, nr, run, arg, NULL);
  wsi_unlock();
  return seq;
}

/* ---- stream capture and CUDA graphs ----
 *
 * CUDA programming guide, "CUDA Graphs", "Stream Capture": work queued on a
 * capturing stream is not run but becomes a node of a graph, depending on
 * what came before it in that stream; an event recorded in a capturing
 * stream stands for the stream's nodes so far ("Cross-stream Dependencies and
 * Events"), and a stream that waits for it joins the capture (a fork) or
 * depends on those nodes (a join). cudaStreamEndCapture on the stream that
 * began it ends every stream of the capture and hands out the graph, or fails
 * ("Invalidation", cudaErrorStreamCaptureUnjoined). A launch queues every
 * node on the launch stream, in capture order (a valid order of the graph),
 * each with its memory ranges checked as any queued work is; two nodes that
 * nothing in the graph orders and that touch the same memory (one writing)
 * are a race, reported when the second is captured. */

enum { NODE_WORK, NODE_WAIT };

struct node {
  int kind;
  size_t index;  /* in its body */
  uint64_t mark; /* scratch of walks */
  const char *what;
  size_t stream; /* index of the stream it was captured in */
  struct wsi_range *r;
  unsigned char *dev; /* r[i] was device memory at capture */
  int nr;
  wsi_fn run;
  void *tmpl;
  const struct wsi_replay *rp;
  wsi_event *ev; /* NODE_WAIT: an external event (cudaEventWaitExternal) */
  struct nodeset deps;
};

/* The nodes of a graph, shared by the graph and its executable graphs. */
struct body {
  size_t refs;
  struct node **v;
  size_t n, cap;
  int physical;
  uint64_t gen; /* of walks */
};

struct capture {
  uint64_t id;
  wsi_stream *origin;
  int mode; /* enum cudaStreamCaptureMode's values */
  pthread_t thread;
  int invalid;
  wsi_graph *g;
  struct capture *next;
};

#define GRAPH_MAGIC 0x57475248u /* "WGRH" */
#define EXEC_MAGIC 0x57455843u  /* "WEXC" */

struct wsi_graph {
  unsigned magic;
  struct body *b;
  struct capture *cap; /* the capture still filling it, or NULL */
};

struct wsi_exec {
  unsigned magic;
  struct body *b;
  size_t n;         /* the nodes it has */
  wsi_stream *last; /* where its last launch's last node is */
  uint64_t last_seq;
  struct wsi_vc vc; /* and what that node came after */
};

static struct capture *captures; /* those under way */
static uint64_t capture_ids;
static __thread int capture_mode; /* cudaStreamCaptureModeGlobal (0) */
static wsi_graph **graphs;
static size_t ngraphs, graphs_cap;
static wsi_exec **execs;
static size_t nexecs, execs_cap;

/* Lock held: s joins capture c, or leaves its capture (NULL). */
static void set_capture(wsi_stream *s, struct capture *c)
{
  s->cap = c;
  __atomic_store_n(&s->capturing, c != NULL, __ATOMIC_RELEASE);
}

static void set_add(struct nodeset *s, struct node *n)
{
  size_t i;

  for (i = 0; i < s->n; i++)
    if (s->v[i] == n)
      return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 4;
    struct node **v = realloc(s->v, cap * sizeof(*v));
    if (!v)
      oom();
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = n;
}

static void set_copy(struct nodeset *dst, const struct nodeset *src)
{
  size_t i;

  dst->n = 0;
  for (i = 0; i < src->n; i++)
    set_add(dst, src->v[i]);
}

static void set_free(struct nodeset *s)
{
  free(s->v);
  memset(s, 0, sizeof(*s));
}

static void *grow_registry(void *v, size_t *cap, size_t n, size_t size)
{
  void *nv;

  if (n < *cap)
    return v;
  nv = realloc(v, (*cap ? 2 * *cap : 16) * size);
  if (!nv)
    oom();
  *cap = *cap ? 2 * *cap : 16;
  return nv;
}

/* Lock held: the capture cannot give a graph any more; said once in the log. */
static void invalidate(struct capture *c, const char *fn, const char *why)
{
  if (c->invalid)
    return;
  c->invalid = 1;
  wsi_log("capture %llu invalidated by %s: %s", (unsigned long long)c->id, fn, why);
}

/* Lock held: an error a call returns, with a line in the log. */
static int refuse(int err, const char *fn, const char *why)
{
  static const char *const names[] = {"",
                                      "cudaErrorStreamCaptureUnsupported",
                                      "cudaErrorStreamCaptureInvalidated",
                                      "cudaErrorStreamCaptureImplicit",
                                      "cudaErrorStreamCaptureIsolation",
                                      "cudaErrorStreamCaptureMerge",
                                      "cudaErrorStreamCaptureUnmatched",
                                      "cudaErrorStreamCaptureUnjoined",
                                      "cudaErrorStreamCaptureWrongThread",
                                      "cudaErrorCapturedEvent",
                                      "cudaErrorIllegalState",
                                      "cudaErrorInvalidValue"};

  wsi_log("capture error %s: %s: %s", names[err], fn, why);
  return err;
}

/* Lock held: walks from set (the nodes, and what they depend on), marking
 * each node reached with the body's new generation, which is returned. */
static uint64_t walk(struct body *b, const struct nodeset *set)
{
  struct node **stack;
  size_t n = 0, i;
  uint64_t gen = ++b->gen;

  stack = malloc((b->n + 1) * sizeof(*stack));
  if (!stack)
    oom();
  for (i = 0; i < set->n; i++)
    if (set->v[i]->mark != gen) {
      set->v[i]->mark = gen;
      stack[n++] = set->v[i];
    }
  while (n > 0) {
    struct node *x = stack[--n];
    for (i = 0; i < x->deps.n; i++)
      if (x->deps.v[i]->mark != gen) {
        x->deps.v[i]->mark = gen;
        stack[n++] = x->deps.v[i];
      }
  }
  free(stack);
  return gen;
}

/* Lock held: node x, just captured, against every node the graph does not
 * order before it: touching the same device memory, one of them writing, is
 * a race on a GPU (the graph may run the two at once). */
static void check_graph_race(struct body *b, struct node *x)
{
  uint64_t gen = 0;
  size_t i;
  int k, j;

  for (i = 0; i + 1 < b->n; i++) {
    struct node *y = b->v[i];
    for (k = 0; k < x->nr; k++)
      for (j = 0; j < y->nr; j++) {
        const struct wsi_range *a = &x->r[k], *c = &y->r[j];
        uintptr_t pa = (uintptr_t)a->p, pc = (uintptr_t)c->p;
        char mine[96], theirs[96];
        if (!x->dev[k] || !y->dev[j] || (!a->write && !c->write) || a->n == 0 || c->n == 0 ||
            pa >= pc + c->n || pc >= pa + a->n)
          continue;
        if (!gen)
          gen = walk(b, &x->deps);
        if (y->mark == gen)
          continue;
        wsi_stream_name(streams[x->stream], mine, sizeof(mine));
        wsi_stream_name(streams[y->stream], theirs, sizeof(theirs));
        wsi_violation("race between streams",
                      "%s captured on %s %s %zu bytes of device memory at %p that %s captured "
                      "on %s %s, and nothing in the capture orders the two (the graph may run "
                      "them at once): record an event after the first and make the second "
                      "stream wait for it (cudaStreamWaitEvent) while capturing",
                      x->what, mine, a->write ? "writes" : "reads", a->n, a->p, y->what, theirs,
                      c->write ? "writes" : "reads");
      }
  }
}

/* Lock held: x becomes the newest node of s's capture. */
static void capture_node(wsi_stream *s, struct node *x)
{
  struct body *b = s->cap->g->b;

  x->index = b->n;
  x->stream = s->index;
  set_copy(&x->deps, &s->deps);
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 16;
    struct node **v = realloc(b->v, cap * sizeof(*v));
    if (!v)
      oom();
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = x;
  s->deps.n = 0;
  set_add(&s->deps, x);
  check_graph_race(b, x);
}

/* Lock held: "WHAT in a graph", kept for good (accesses name their call). */
static const char *graph_what(const char *what)
{
  static struct named {
    struct named *next;
    const char *what;
    char name[];
  } * names;
  struct named *n;
  size_t len = strlen(what) + sizeof(" (a graph node)");

  for (n = names; n; n = n->next)
    if (!strcmp(n->what, what))
      return n->name;
  n = malloc(sizeof(*n) + len);
  if (!n)
    oom();
  snprintf(n->name, len, "%s (a graph node)", what);
  n->next = names;
  names = n;
  /* looked up by the call's own name */
  n->what = strdup(what);
  if (!n->what)
    oom();
  return n->name;
}

static struct node *new_node(int kind, const char *what)
{
  struct node *x = calloc(1, sizeof(*x));

  if (!x)
    oom();
  x->kind = kind;
  x->what = graph_what(what);
  return x;
}

/* Lock held: one reference to b less; b when the caller must free it (after
 * unlocking: the nodes' drop may take the lock). */
static struct body *body_release(struct body *b) { return --b->refs == 0 ? b : NULL; }

static void body_free(struct body *b)
{
  size_t i;

  if (!b)
    return;
  for (i = 0; i < b->n; i++) {
    struct node *x = b->v[i];
    if (x->rp && x->rp->drop)
      x->rp->drop(x->tmpl);
    free(x->r);
    free(x->dev);
    set_free(&x->deps);
    free(x);
  }
  free(b->v);
  free(b);
}

uint64_t wsi_enqueue_replayable(wsi_stream *s, const char *what, const struct wsi_range *r, int nr,
                                wsi_fn run, void *arg, const struct wsi_replay *rp)
{
  struct node *x;
  char name[96];
  uint64_t seq;
  int k;

  wsi_lock();
  if (!s->cap) {
    seq = enqueue_locked(s, what, r, nr, run, arg, NULL);
    wsi_unlock();
    return seq;
  }
  if (!rp || !rp->make)
    wsi_violation("work the stand-in cannot capture",
                  "%s on %s while it captures a graph, without a way to replay it", what,
                  wsi_stream_name(s, name, sizeof(name)));
  if (s->cap->invalid) {
    /* cudaErrorStreamCaptureInvalidated for the caller that can say it; the
     * work is not captured. */
    wsi_log("capture %llu: %s dropped: the capture was invalidated", (unsigned long long)s->cap->id,
            what);
    wsi_unlock();
    if (rp->drop)
      rp->drop(arg);
    return 0;
  }
  x = new_node(NODE_WORK, what);
  x->nr = nr;
  x->r = calloc(nr > 0 ? (size_t)nr : 1, sizeof(*x->r));
  x->dev = calloc(nr > 0 ? (size_t)nr : 1, 1);
  if (!x->r || !x->dev)
    oom();
  for (k = 0; k < nr; k++) {
    struct wsi_alloc *m = wsi__find(r[k].p);
    x->r[k] = r[k];
    x->dev[k] = m && m->kind == WSI_DEVICE;
  }
  x->run = run;
  x->tmpl = arg;
  x->rp = rp;
  capture_node(s, x);
  wsi_unlock();
  return 0;
}

int wsi_stream_capturing(const wsi_stream *s)
{
  /* without the lock: callers may hold it */
  return __atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE);
}

/* Lock held: a blocking stream of physical device p is capturing (the legacy
 * stream "at all times encompasses" it); invalidate them when asked. */
static int blocking_capture(int p, const char *fn, const char *why)
{
  size_t i;
  int any = 0;

  for (i = 0; i < nstreams; i++) {
    wsi_stream *t = streams[i];
    if (t->cap && t->physical == p && !t->nonblocking && !t->legacy) {
      any = 1;
      if (why)
        invalidate(t->cap, fn, why);
    }
  }
  return any;
}

int wsi_capture_use(wsi_stream *s, const char *fn, enum wsi_use use)
{
  int e = WSI_OK;

  wsi_lock();
  if (s->legacy &&
      blocking_capture(s->physical, fn,
                       use == WSI_USE_INFO ? NULL
                                           : "the legacy stream was used while a blocking stream "
                                             "of its device captures"))
    e = refuse(WSI_E_IMPLICIT, fn,
               "the legacy stream while a blocking stream of its device captures (it would "
               "depend on the capture)");
  else if (s->cap && use == WSI_USE_SYNC) {
    invalidate(s->cap, fn, "a capturing stream was synchronised or queried");
    e = refuse(WSI_E_UNSUPPORTED, fn, "a capturing stream cannot be synchronised or queried");
  } else if (s->cap && s->cap->invalid && use == WSI_USE_ENQUEUE)
    e = refuse(WSI_E_INVALIDATED, fn, "the stream's capture was invalidated");
  wsi_unlock();
  return e;
}

int wsi_capture_refuse(wsi_stream *s, const char *fn, const char *why)
{
  int e = WSI_OK;

  wsi_lock();
  if (s->cap) {
    invalidate(s->cap, fn, why);
    e = refuse(WSI_E_UNSUPPORTED, fn, why);
  }
  wsi_unlock();
  return e;
}

int wsi_capture_unsafe(const char *fn)
{
  pthread_t me = pthread_self();
  struct capture *c;
  int e = WSI_OK;

  wsi_lock();
  if (capture_mode != 2)
    for (c = captures; c; c = c->next) {
      int mine = pthread_equal(c->thread, me);
      if ((mine && c->mode != 2) || (!mine && capture_mode == 0 && c->mode == 0)) {
        invalidate(c, fn, "a potentially unsafe call while it captures");
        e = WSI_E_UNSUPPORTED;
      }
    }
  if (e)
    refuse(e, fn,
           capture_mode == 0 ? "potentially unsafe during a capture of this thread, or a "
                               "global-mode capture of another thread"
                             : "potentially unsafe during a capture of this thread");
  wsi_unlock();
  return e;
}

int wsi_capture_device(int physical, const char *fn)
{
  size_t i;
  int e = WSI_OK;

  wsi_lock();
  for (i = 0; i < nstreams; i++)
    if (streams[i]->cap && (physical < 0 || streams[i]->physical == physical)) {
      invalidate(streams[i]->cap, fn, "the device was synchronised while a stream of it captures");
      e = WSI_E_UNSUPPORTED;
    }
  if (e)
    refuse(e, fn, "synchronises a device a stream of which is capturing");
  wsi_unlock();
  return e;
}

int wsi_capture_exchange_mode(int *mode)
{
  int old = capture_mode;

  if (!mode || *mode < 0 || *mode > 2)
    return WSI_E_INVALID_VALUE;
  capture_mode = *mode;
  *mode = old;
  return WSI_OK;
}

int wsi_capture_begin(wsi_stream *s, int mode, const char *fn)
{
  struct capture *c;
  wsi_graph *g;
  int e = WSI_OK;

  if (mode < 0 || mode > 2)
    return WSI_E_INVALID_VALUE;
  c = calloc(1, sizeof(*c));
  g = calloc(1, sizeof(*g));
  if (!c || !g || !(g->b = calloc(1, sizeof(*g->b))))
    oom();
  wsi_lock();
  if (s->legacy)
    e = refuse(WSI_E_UNSUPPORTED, fn, "capture may not be initiated on the legacy stream");
  else if (s->cap)
    e = refuse(WSI_E_ILLEGAL_STATE, fn, "the stream is already capturing");
  if (e) {
    wsi_unlock();
    free(g->b);
    free(g);
    free(c);
    return e;
  }
  c->id = ++capture_ids;
  c->origin = s;
  c->mode = mode;
  c->thread = pthread_self();
  c->g = g;
  c->next = captures;
  captures = c;
  g->magic = GRAPH_MAGIC;
  g->cap = c;
  g->b->refs = 1;
  g->b->physical = s->physical;
  graphs = grow_registry(graphs, &graphs_cap, ngraphs, sizeof(*graphs));
  graphs[ngraphs++] = g;
  set_capture(s, c);
  s->deps.n = 0;
  wsi_unlock();
  return WSI_OK;
}

int wsi_capture_end(wsi_stream *s, wsi_graph **out, const char *fn)
{
  pthread_t me = pthread_self();
  struct capture *c, **pc;
  struct body *drop = NULL;
  int e = WSI_OK;
  size_t i, k;

  *out = NULL;
  wsi_lock();
  c = s->cap;
  if (!c) {
    wsi_unlock();
    return refuse(WSI_E_ILLEGAL_STATE, fn, "the stream is not capturing");
  }
  if (c->origin != s) {
    invalidate(c, fn, "cudaStreamEndCapture on a stream that did not begin the capture");
    wsi_unlock();
    return refuse(WSI_E_UNMATCHED, fn, "the capture was not initiated in this stream");
  }
  if (c->mode != 2 && !pthread_equal(c->thread, me)) {
    invalidate(c, fn, "cudaStreamEndCapture from another thread");
    wsi_unlock();
    return refuse(WSI_E_WRONG_THREAD, fn,
                  "a capture not begun in relaxed mode must end in the thread that began it");
  }
  if (c->invalid)
    e = refuse(WSI_E_INVALIDATED, fn, "the capture was invalidated");
  else {
    /* Every other stream of the capture must have joined back: its newest
     * nodes are among what the origin's next node would depend on. */
    uint64_t gen = walk(c->g->b, &s->deps);
    for (i = 0; i < nstreams && !e; i++) {
      wsi_stream *t = streams[i];
      if (t->cap != c || t == s)
        continue;
      for (k = 0; k < t->deps.n; k++)
        if (t->deps.v[k]->mark != gen) {
          char name[96];
          wsi_stream_name(t, name, sizeof(name));
          wsi_log("capture %llu: %s forked from it and was not joined back",
                  (unsigned long long)c->id, name);
          e = refuse(WSI_E_UNJOINED, fn, "a stream forked into the capture was not joined");
          break;
        }
    }
  }
  for (i = 0; i < nstreams; i++)
    if (streams[i]->cap == c) {
      set_capture(streams[i], NULL);
      set_free(&streams[i]->deps);
    }
  for (i = 0; i < nevents; i++)
    if (events[i]->cap == c) {
      events[i]->cap = NULL;
      set_free(&events[i]->nodes);
    }
  for (pc = &captures; *pc != c; pc = &(*pc)->next)
    ;
  *pc = c->next;
  c->g->cap = NULL;
  if (e) {
    c->g->magic = DEAD_MAGIC;
    drop = body_release(c->g->b);
  } else {
    *out = c->g;
  }
  wsi_unlock();
  body_free(drop);
  free(c);
  return e;
}

int wsi_capture_info(wsi_stream *s, int *status, unsigned long long *id, wsi_graph **graph,
                     void *const **deps, size_t *ndeps)
{
  wsi_lock();
  *status = !s->cap ? 0 : s->cap->invalid ? 2 : 1;
  if (*status == 1) {
    if (id)
      *id = s->cap->id;
    if (graph)
      *graph = s->cap->g;
    set_copy(&s->info, &s->deps);
    if (deps)
      *deps = (void *const *)s->info.v;
    if (ndeps)
      *ndeps = s->info.n;
  }
  wsi_unlock();
  return WSI_OK;
}

wsi_graph *wsi_graph_get(void *handle, const char *fn)
{
  wsi_graph *g = NULL;
  size_t i;

  wsi_lock();
  for (i = 0; i < ngraphs && !g; i++)
    if (graphs[i] == handle)
      g = graphs[i];
  wsi_unlock();
  if (!g)
    wsi_violation("not a graph", "%s: %p is not a graph this process made", fn, handle);
  if (g->magic != GRAPH_MAGIC)
    wsi_violation("use of a destroyed graph",
                  "%s on a graph after cudaGraphDestroy (or one whose capture failed)", fn);
  return g;
}

int wsi_graph_destroy(wsi_graph *g, const char *fn)
{
  struct body *drop;

  wsi_lock();
  if (g->cap) {
    wsi_unlock();
    return refuse(WSI_E_ILLEGAL_STATE, fn, "a graph cannot be destroyed while a capture fills it");
  }
  g->magic = DEAD_MAGIC;
  drop = body_release(g->b);
  wsi_unlock();
  body_free(drop);
  return WSI_OK;
}

size_t wsi_graph_nodes(wsi_graph *g, void **out, size_t max)
{
  size_t i, n;

  wsi_lock();
  n = g->b->n;
  for (i = 0; out && i < n && i < max; i++)
    out[i] = g->b->v[i];
  wsi_unlock();
  return n;
}

wsi_exec *wsi_graph_instantiate(wsi_graph *g)
{
  wsi_exec *x = calloc(1, sizeof(*x));

  if (!x)
    oom();
  wsi_lock();
  x->magic = EXEC_MAGIC;
  x->b = g->b;
  x->b->refs++;
  x->n = g->b->n;
  execs = grow_registry(execs, &execs_cap, nexecs, sizeof(*execs));
  execs[nexecs++] = x;
  wsi_unlock();
  return x;
}

wsi_exec *wsi_exec_get(void *handle, const char *fn)
{
  wsi_exec *x = NULL;
  size_t i;

  wsi_lock();
  for (i = 0; i < nexecs && !x; i++)
    if (execs[i] == handle)
      x = execs[i];
  wsi_unlock();
  if (!x)
    wsi_violation("not an executable graph",
                  "%s: %p is not an executable graph this process "
                  "made",
                  fn, handle);
  if (x->magic != EXEC_MAGIC)
    wsi_violation("use of a destroyed executable graph", "%s after cudaGraphExecDestroy", fn);
  return x;
}

void wsi_exec_destroy(wsi_exec *x)
{
  struct body *drop;

  /* "If the executable graph is in-flight, it will not be terminated": each
   * launch's work has its own copies (make), so the templates may go. */
  wsi_lock();
  x->magic = DEAD_MAGIC;
  drop = body_release(x->b);
  wsi_unlock();
  body_free(drop);
}

int wsi_graph_launch(wsi_exec *x, wsi_stream *s, const char *fn)
{
  struct body *b = x->b;
  struct node **v;
  void **args;
  struct dep d, *extra;
  char name[96];
  size_t i;
  int k;

  /* the nodes it has (a graph still being captured grows: b->v moves) */
  args = calloc(x->n ? x->n : 1, sizeof(*args));
  v = calloc(x->n ? x->n : 1, sizeof(*v));
  if (!args || !v)
    oom();
  wsi_lock();
  if (x->n) /* an empty graph has no nodes at all */
    memcpy(v, b->v, x->n * sizeof(*v));
  if (s->cap)
    wsi_violation("not modelled by the stand-in",
                  "%s into %s while it captures (a child graph node): the stand-in does not "
                  "capture graph launches",
                  fn, wsi_stream_name(s, name, sizeof(name)));
  if (s->physical != b->physical)
    wsi_violation("not modelled by the stand-in",
                  "%s of a graph captured on device %d into %s: the stand-in runs a graph on "
                  "its own device only",
                  fn, wsi_ordinal(b->physical), wsi_stream_name(s, name, sizeof(name)));
  /* Memory a node uses must still be there: a graph keeps addresses. */
  for (i = 0; i < x->n; i++)
    for (k = 0; k < v[i]->nr; k++) {
      const struct wsi_range *r = &v[i]->r[k];
      struct wsi_alloc *m = v[i]->dev[k] ? wsi__find(r->p) : NULL;
      if (v[i]->dev[k] &&
          (!m || m->kind != WSI_DEVICE || (uintptr_t)r->p - m->addr + r->n > m->size))
        wsi_violation("graph uses freed memory",
                      "%s: node %zu (%s) uses %zu bytes of device memory at %p that are no "
                      "longer allocated",
                      fn, i, v[i]->what, r->n, r->p);
    }
  wsi_unlock();
  /* Each replay's own arguments, made on this thread in node order. */
  for (i = 0; i < x->n; i++)
    if (v[i]->kind == NODE_WORK)
      args[i] = v[i]->rp->make(v[i]->tmpl);
  wsi_lock();
  /* "Each launch is ordered behind both any previous work in stream and any
   * previous launches of graphExec." */
  extra = NULL;
  if (x->last) {
    d.s = x->last;
    d.seq = x->last_seq;
    extra = &d;
    wsi__vc_join(&s->vc, &x->vc);
  }
  for (i = 0; i < x->n; i++) {
    struct node *n = v[i];
    struct dep w, *dep = extra;
    if (n->kind == NODE_WAIT) {
      wsi_event *e = n->ev;
      if (e->magic != EVENT_MAGIC)
        wsi_violation("use of a destroyed event",
                      "%s: the graph waits for an event (cudaEventWaitExternal) that was "
                      "destroyed",
                      fn);
      if (e->s && !e->captured) {
        wsi__vc_join(&s->vc, &e->vc);
        if (extra)
          enqueue_locked(s, n->what, NULL, 0, NULL, NULL, extra);
        w.s = e->s;
        w.seq = e->seq;
        dep = &w;
      }
      enqueue_locked(s, n->what, NULL, 0, NULL, NULL, dep);
    } else {
      enqueue_locked(s, n->what, n->r, n->nr, n->run, args[i], dep);
    }
    extra = NULL;
  }
  if (x->n > 0) {
    x->last = s;
    x->last_seq = s->enq;
    vc_copy(&x->vc, &s->vc);
  }
  wsi_unlock();
  free(args);
  free(v);
  return WSI_OK;
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

int wsi_event_record(wsi_event *e, wsi_stream *s)
{
  struct record *r;
  char sname[96];

  if (e->physical != s->physical)
    wsi_violation("event and stream of different devices",
                  "cudaEventRecord: the event belongs to device %d and %s to device %d; CUDA "
                  "says they must be of the same device",
                  wsi_ordinal(e->physical), wsi_stream_name(s, sname, sizeof(sname)),
                  wsi_ordinal(s->physical));
  wsi_lock();
  if (s->cap) {
    /* A captured event: it stands for the stream's nodes so far, and is not
     * recorded when the graph runs. */
    if (s->cap->invalid) {
      wsi_unlock();
      return WSI_E_INVALIDATED;
    }
    e->gen++;
    e->t = -1;
    e->captured = 1;
    e->cap = s->cap;
    set_copy(&e->nodes, &s->deps);
    wsi_unlock();
    return WSI_OK;
  }
  r = malloc(sizeof(*r));
  if (!r)
    oom();
  e->captured = 0;
  e->cap = NULL;
  set_free(&e->nodes);
  e->gen++;
  e->t = -1;
  r->e = e;
  r->gen = e->gen;
  e->s = s;
  e->seq = enqueue_locked(s, "cudaEventRecord", NULL, 0, record_run, r, NULL);
  vc_copy(&e->vc, &s->vc);
  wsi_unlock();
  return WSI_OK;
}

int wsi_event_check(wsi_event *e, const char *fn)
{
  int err = WSI_OK;

  wsi_lock();
  if (e->captured) {
    if (e->cap)
      invalidate(e->cap, fn, "an event recorded in it was queried or waited for");
    err = refuse(WSI_E_CAPTURED_EVENT, fn, "the event was last recorded in a capturing stream");
  }
  wsi_unlock();
  return err;
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

int wsi_stream_wait_event(wsi_stream *s, wsi_event *e, int external, const char *fn)
{
  struct dep d;
  char name[96];
  int err = WSI_OK;

  wsi_lock();
  if (e->captured) {
    struct capture *c = e->cap;
    if (!c)
      err =
        refuse(WSI_E_CAPTURED_EVENT, fn, "the event was last recorded in a capture that has ended");
    else if (s->legacy) {
      invalidate(c, fn, "the legacy stream waited for an event of the capture");
      err = refuse(WSI_E_UNSUPPORTED, fn, "the legacy stream cannot join a capture");
    } else if (s->physical != e->physical)
      wsi_violation("not modelled by the stand-in",
                    "%s: %s waits for an event captured on device %d: the stand-in captures "
                    "on one device only",
                    fn, wsi_stream_name(s, name, sizeof(name)), wsi_ordinal(e->physical));
    else if (s->cap && s->cap != c) {
      invalidate(c, fn, "a stream of another capture waited for its event");
      invalidate(s->cap, fn, "it waited for an event of another capture");
      err = refuse(WSI_E_MERGE, fn, "the wait would merge two capture sequences");
    } else if (s->cap && s->cap->invalid)
      err = refuse(WSI_E_INVALIDATED, fn, "the stream's capture was invalidated");
    else if (!s->cap) {
      /* a fork: the stream joins the capture after the event's nodes */
      set_capture(s, c);
      set_copy(&s->deps, &e->nodes);
    } else {
      size_t i;
      for (i = 0; i < e->nodes.n; i++)
        set_add(&s->deps, e->nodes.v[i]);
    }
    wsi_unlock();
    return err;
  }
  if (s->cap) {
    struct node *x;
    if (s->cap->invalid)
      err = refuse(WSI_E_INVALIDATED, fn, "the stream's capture was invalidated");
    else if (!external) {
      invalidate(s->cap, fn, "it waited for an event recorded outside it");
      err = refuse(WSI_E_ISOLATION, fn,
                   "a capturing stream waited for an event recorded outside the capture "
                   "(without cudaEventWaitExternal)");
    } else {
      /* an external event wait node: at each launch, the wait is for the
       * event's record of that moment */
      x = new_node(NODE_WAIT, "cudaStreamWaitEvent (external)");
      x->ev = e;
      capture_node(s, x);
    }
    wsi_unlock();
    return err;
  }
  if (!e->s) {
    wsi_unlock();
    return WSI_OK;
  }
  d.s = e->s;
  d.seq = e->seq;
  wsi__vc_join(&s->vc, &e->vc);
  enqueue_locked(s, "cudaStreamWaitEvent", NULL, 0, NULL, NULL, &d);
  wsi_unlock();
  return WSI_OK;
}
