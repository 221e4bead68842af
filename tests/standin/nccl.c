/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL API of the stand-in (libnccl.so.2): communicators (blocking and
 * non-blocking init, split, finalize, destroy, abort, asynchronous errors),
 * collectives, send/recv and groups, with real reductions, across processes.
 *
 * It follows NCCL 2.28.9's source (src/init.cc, group.cc, enqueue.cc, ...),
 * not its documentation alone: where NCCL is stricter or slower than a
 * convenient fake, so is this. Each behaviour below names what it follows.
 *  - ncclCommSplit: whether it blocks is the parent's config.blocking
 *    (group.cc ncclAsyncLaunch sets ncclGroupBlocking from the parent); on a
 *    non-blocking parent *newcomm is NULL when the call returns and is
 *    written by a thread of the stand-in when the split completes (init.cc
 *    ncclCommInitRankFunc's exit), before the parent's state turns
 *    ncclSuccess (group.cc groupLaunch); the parent says ncclInProgress
 *    meanwhile (ncclGroupEndInternal) and a failed split leaves its error
 *    on the parent (groupCleanup) and the half-made child in *newcomm.
 *  - ncclSend is a rendezvous: it completes once the matching ncclRecv has
 *    started on the peer; a collective once every rank has entered it. The
 *    operations of a group run together, as NCCL's one launch per group.
 *  - A peer that dies is an asynchronous error over a network transport
 *    only (nccl-net.c).
 *  - ncclGetLastError is one buffer for the process (debug.cc).
 *  - NCCL_COMM_BLOCKING overrides config.blocking (init.cc envConfigOverride).
 *  - WEFT_STANDIN_NCCL_VERSION plays an older NCCL: its functions, config
 *    fields and checks.
 *  - A one-rank communicator's collectives are a copy or nothing
 *    (device/onerank.cu); empty collectives are discarded (enqueue.cc
 *    taskAppend), empty sends and receives are not.
 *  - Reductions in NCCL's ring order (nccl-reduce.c).
 *  - Operations queued on a capturing stream become nodes of the CUDA graph
 *    and run again, with fresh sequence numbers, at each launch.
 *
 * Strict: what NCCL requires and weft relies on is checked, and a broken rule
 * ends the process with the rule's words (README lists them all).
 *
 * Faults for tests (WEFT_STANDIN_NCCL_FAULT, a comma-separated list; R is the
 * process's MPI world rank, N counts the NCCL operations that process
 * queues, from 1; a one-rank collective is not one, NCCL queues no NCCL work
 * for it):
 *   init-absent:R   R never joins any communicator's init or split
 *   hang:R:N        R's operation N never completes (until an abort)
 *   async-error:R:N R's operation N fails with an asynchronous error
 *   late:R:N        R's operation N completes a second after its exchange
 *                   with the other ranks (which are done with it by then)
 *   held:R:N        R's call N returns to its caller only a second after
 *                   the operation completed (a thread descheduled after it
 *                   queued the call); outside ncclGroupStart/End only: in a
 *                   group it is ignored, ncclGroupEnd never waits
 */
#define _GNU_SOURCE 1 /* pthread_getattr_np */
#include "nccl-standin.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define PALIAS(name)                                                                               \
  extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))
/* Every entry point: its name, the NCCL version it came in, and its own
 * frame (for the check of a late split handle on a returned frame). QUERY:
 * one that makes no CUDA call (it may run in a host function). */
#define ENTER(fn, since) enter(fn, since, 1, __builtin_frame_address(0))
#define QUERY(fn, since) enter(fn, since, 0, __builtin_frame_address(0))
#define V(x, y) NCCL_VERSION(x, y, 0)

enum coll { C_ALLREDUCE, C_BROADCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, C_SEND, C_RECV };
static const char *const coll_names[] = {"ncclAllReduce", "ncclBroadcast",     "ncclReduce",
                                         "ncclAllGather", "ncclReduceScatter", "ncclSend",
                                         "ncclRecv"};

enum { FAULT_NONE, FAULT_HANG, FAULT_ERROR, FAULT_LATE };
/* How far an operation of a unit is. */
enum { OP_WAIT, OP_READY, OP_HUNG, OP_DONE };

struct wsn_op {
  struct ncclComm *c;
  int coll;
  const void *send_dev;
  void *recv_dev;
  char *send, *recv; /* where the bytes are */
  size_t send_bytes, recv_bytes, count;
  ncclDataType_t dt;
  ncclRedOp_t op;
  int root, peer, fault;
  uint64_t exec, seq;
  wsi_stream *stream;
  int state;
  struct wsn_msg **in; /* collectives: each peer's message */
  struct wsn_msg *m;   /* send: the receiver's ready; receive: the data */
};

/* What runs as one piece of work on a stream: one operation, or the
 * operations of a group that share a stream or a communicator (NCCL makes
 * one plan per communicator and group, launched after every user stream of
 * it: enqueue.cc ncclLaunchPrepare), all progressed together. */
struct unit {
  size_t n, ncomms, nstreams;
  struct wsn_op *ops;
  struct ncclComm **comms;
  uint64_t *first, *count; /* per communicator: its first operation, how many */
  wsi_stream **streams;    /* streams[0] runs it */
};

struct pending {
  struct wsn_op o;
};

/* A late split handle to watch: where a non-blocking ncclCommSplit will
 * write the child, when that is on the calling thread's stack. */
struct watch {
  struct watch *next;
  ncclComm_t *where;
  pthread_t thread;
  const char *lo, *hi;
  char parent[64];
};

/* Also in libcuda.so.1; each library says what it is. */
EXPORT const char weft_standin_marker[] = "weft stand-in, not a GPU";

static struct ncclComm *all_comms;
static struct watch *watches;
static __thread int group_depth;
static __thread struct pending *group_ops;
static __thread size_t group_n, group_cap;

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static int fault_init_absent;
static uint64_t fault_hang_at, fault_error_at, fault_late_at, fault_held_at, ops_count;

static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...) WSI_PRINTF(3, 4);
static void check_watches(const char *fn, const void *frame);

/* ---- environment ---- */

static void parse_faults(void)
{
  const char *s = getenv("WEFT_STANDIN_NCCL_FAULT");
  int me = wsi_world_rank();

  while (s && *s) {
    size_t len = strcspn(s, ",");
    char item[64], kind[32];
    int rank = -1;
    unsigned long long n = 0;
    if (len >= sizeof(item))
      goto bad;
    memcpy(item, s, len);
    item[len] = '\0';
    if (sscanf(item, "%31[a-z-]:%d:%llu", kind, &rank, &n) < 2)
      goto bad;
    if (!strcmp(kind, "init-absent")) {
      if (rank == me)
        fault_init_absent = 1;
    } else if (!strcmp(kind, "hang") && n > 0) {
      if (rank == me)
        fault_hang_at = n;
    } else if (!strcmp(kind, "async-error") && n > 0) {
      if (rank == me)
        fault_error_at = n;
    } else if (!strcmp(kind, "late") && n > 0) {
      if (rank == me)
        fault_late_at = n;
    } else if (!strcmp(kind, "held") && n > 0) {
      if (rank == me)
        fault_held_at = n;
    } else {
      goto bad;
    }
    s += len;
    if (*s == ',')
      s++;
  }
  return;
bad:
  fprintf(stderr,
          "weft-standin: WEFT_STANDIN_NCCL_FAULT=%s: use init-absent:RANK, "
          "hang:RANK:N, async-error:RANK:N, late:RANK:N or held:RANK:N, separated by commas\n",
          getenv("WEFT_STANDIN_NCCL_FAULT"));
  exit(2);
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static int version_code = NCCL_VERSION_CODE;
static char version_text[24];

/* A number of at most two digits at *p, then *p past it; -1 if none. */
static int small_number(const char **p)
{
  int v = 0, k = 0;

  while (**p >= '0' && **p <= '9' && k < 3) {
    v = v * 10 + (**p - '0');
    (*p)++;
    k++;
  }
  return k == 0 || k > 2 ? -1 : v;
}

/* WEFT_STANDIN_NCCL_VERSION=X.Y[.Z]: the version ncclGetVersion reports and
 * whose functions and behaviour the stand-in plays, from 2.0 to 2.28.9. */
static void parse_version(void)
{
  const char *s = getenv("WEFT_STANDIN_NCCL_VERSION"), *p = s;
  int x, y, z = 0;

  snprintf(version_text, sizeof(version_text), "%d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  if (!s || !*s)
    return;
  x = small_number(&p);
  if (x != 2 || *p++ != '.' || (y = small_number(&p)) < 0)
    goto bad;
  if (*p == '.' && (p++, (z = small_number(&p)) < 0))
    goto bad;
  if (*p || NCCL_VERSION(x, y, z) > NCCL_VERSION_CODE)
    goto bad;
  version_code = NCCL_VERSION(x, y, z);
  snprintf(version_text, sizeof(version_text), "%d.%d.%d", x, y, z);
  return;
bad:
  fprintf(stderr,
          "weft-standin: WEFT_STANDIN_NCCL_VERSION=%s: use X.Y or X.Y.Z, from 2.0 to "
          "%d.%d.%d\n",
          s, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  exit(2);
}

int wsn_version(void)
{
  pthread_once(&version_once, parse_version);
  return version_code;
}

static const char *version_name(void)
{
  wsn_version();
  return version_text;
}

/* NCCL_COMM_BLOCKING as NCCL_PARAM reads it once (misc/param.cc
 * ncclLoadParam: strtoll base 0, the default when errno says so);
 * NCCL_CONFIG_UNDEF_INT when unset. */
static pthread_once_t blocking_once = PTHREAD_ONCE_INIT;
static long long blocking_env = NCCL_CONFIG_UNDEF_INT;

static void parse_blocking(void)
{
  const char *s = getenv("NCCL_COMM_BLOCKING");
  long long v;

  if (!s || !*s)
    return;
  errno = 0;
  v = strtoll(s, NULL, 0);
  if (!errno)
    blocking_env = v;
}

/* init.cc envConfigOverride: NCCL_COMM_BLOCKING 0 or 1 replaces the config's
 * blocking, anything else is ignored. Before 2.17 only 1 did (2.14's
 * ncclCommInitRankConfig: "if (blockingEnv == 1)"). */
static int env_blocking(int blocking)
{
  pthread_once(&blocking_once, parse_blocking);
  if (wsn_version() < V(2, 17))
    return blocking_env == 1 ? 1 : blocking;
  return blocking_env == 0 || blocking_env == 1 ? (int)blocking_env : blocking;
}

/* ---- errors ---- */

static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_error[1024];

void wsn_last_error(const char *fmt, ...)
{
  va_list ap;

  pthread_mutex_lock(&last_mu);
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&last_mu);
}

/* A failed call: its text is the process's last error (and c's why). */
static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
{
  char buf[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  wsn_last_error("%s", buf);
  if (c && c->magic == WSN_MAGIC) {
    wsi_lock();
    memcpy(c->why, buf, sizeof(c->why));
    wsi_unlock();
  }
  return r;
}

/* ---- rules ---- */

/* A function the played NCCL version does not have (each one looked up in
 * the tags' src/nccl.h.in). */
static void need(const char *fn, int since)
{
  if (wsn_version() >= since)
    return;
  wsi_violation("not in this NCCL version",
                "%s is not in NCCL %s: it came in %d.%d (WEFT_STANDIN_NCCL_VERSION); check "
                "ncclGetVersion before calling it",
                fn, version_name(), since >= 10000 ? since / 10000 : since / 1000,
                since >= 10000 ? since / 100 % 100 : since / 100 % 10);
}

static void enter(const char *fn, int since, int cuda, const void *frame)
{
  if (cuda)
    wsi_api(fn);
  else
    wsi_init();
  pthread_once(&fault_once, parse_faults);
  need(fn, since);
  check_watches(fn, frame);
}

static void alive(struct ncclComm *c, const char *fn)
{
  if (c->magic == WSN_DEAD)
    wsi_violation("use of a destroyed communicator",
                  "%s on communicator %s after ncclCommDestroy or ncclCommAbort", fn, c->name);
  if (c->magic != WSN_MAGIC)
    wsi_violation("not a communicator", "%s: %p is not a communicator", fn, (void *)c);
}

/* init.cc ncclCommEnsureReady: a call while init, split or finalize runs
 * gets ncclInvalidArgument; the stand-in ends the program. ncclCommSplit
 * checks its parent so only from 2.19 on. */
static void not_ready(struct ncclComm *c, const char *fn, int split_busy)
{
  const char *what = split_busy ? "ncclCommSplit" : "init or finalize";

  if (!strcmp(fn, "ncclCommSplit") && wsn_version() < V(2, 19))
    wsi_violation("communicator not ready",
                  "ncclCommSplit of communicator %s while its %s is in progress "
                  "(ncclCommGetAsyncError still says ncclInProgress): NCCL %s does not check "
                  "this (ncclCommSplit calls ncclCommEnsureReady from 2.19) and splits with "
                  "the parent's unfinished bootstrap",
                  c->name, what, version_name());
  wsi_violation("communicator not ready",
                "%s on communicator %s while its %s is in progress (ncclCommGetAsyncError "
                "still says ncclInProgress): NCCL's ncclCommEnsureReady returns "
                "ncclInvalidArgument, \"Attempt to use communicator before the previous "
                "operation returned ncclSuccess\"",
                fn, c->name, what);
}

/* Everything but abort and the queries goes through this; ends: the call is
 * ncclCommFinalize or ncclCommDestroy, which end a communicator cleanly.
 * A rank cannot know when another aborts, nor when an error strikes while
 * it queues a call: queuing one then is no fault (it hangs, as on a GPU,
 * until this rank aborts too). Queuing after ncclCommGetAsyncError said
 * there was an error is, and so is ending cleanly instead of aborting. */
static void usable(struct ncclComm *c, const char *fn, int ends)
{
  int peer, settle, fin, seen, split_busy, failed;
  ncclResult_t err, state;
  char why[256];

  alive(c, fn);
  wsn_flush(c);
  wsi_lock();
  peer = c->peer_aborted;
  err = c->error;
  seen = c->error_seen;
  state = c->state;
  settle = c->settle;
  fin = c->finalized;
  split_busy = c->split_busy;
  failed = c->split_failed;
  memcpy(why, c->why, sizeof(why));
  wsi_unlock();
  if (failed && !ends)
    wsi_violation("use of a communicator whose split failed",
                  "%s on communicator %s, the child of a failed ncclCommSplit (%s): NCCL hands "
                  "it over half made (init.cc ncclCommInitRankFunc writes *newcomm on failure "
                  "too) and ncclCommGetAsyncError on it says ncclSuccess; only ncclCommAbort "
                  "or ncclCommDestroy may be called on it",
                  fn, c->name, why);
  if (peer >= 0 && ends)
    wsi_violation("abort not called by every rank",
                  "%s on communicator %s after its rank %d called ncclCommAbort; NCCL 2.28 "
                  "requires every active rank to call ncclCommAbort on it then",
                  fn, c->name, peer);
  if (err != ncclSuccess && (seen || ends))
    wsi_violation("use after an asynchronous error",
                  "%s on communicator %s after its asynchronous error (%s: %s); NCCL says such a "
                  "communicator must be aborted (ncclCommAbort) and nothing enqueued on it can "
                  "be trusted",
                  fn, c->name, ncclGetErrorString(err), why);
  if (state == ncclInProgress)
    not_ready(c, fn, split_busy);
  if (settle)
    wsi_violation("non-blocking call not settled",
                  "%s on communicator %s while its previous call is in progress: with a "
                  "non-blocking communicator, poll ncclCommGetAsyncError until ncclSuccess "
                  "before the next call",
                  fn, c->name);
  if (fin && strcmp(fn, "ncclCommDestroy") != 0)
    wsi_violation("use after ncclCommFinalize", "%s on communicator %s after ncclCommFinalize", fn,
                  c->name);
}

/* The queries (ncclCommCount, ncclCommCuDevice, ncclCommUserRank) call
 * ncclCommEnsureReady too (init.cc): not during init, split or finalize,
 * and an asynchronous error is their answer. */
static ncclResult_t ready(struct ncclComm *c, const char *fn)
{
  ncclResult_t state, err;
  int split_busy;

  alive(c, fn);
  wsi_lock();
  state = c->state;
  err = c->error;
  split_busy = c->split_busy;
  wsi_unlock();
  if (state == ncclInProgress)
    not_ready(c, fn, split_busy);
  return err;
}

static char *device_bytes(struct ncclComm *c, const void *p, size_t n, const char *fn,
                          const char *what)
{
  int physical;

  if (n == 0)
    return NULL;
  if (wsi_kind(p, &physical, NULL) != WSI_DEVICE)
    wsi_violation("host pointer passed as device memory",
                  "%s on communicator %s: %s %p (%zu bytes) is not device memory", fn, c->name,
                  what, p, n);
  if (physical != c->physical)
    wsi_violation("device pointer from another device",
                  "%s on communicator %s: %s %p is memory of device %d, and the communicator's "
                  "device is %d",
                  fn, c->name, what, p, wsi_ordinal(physical), c->ordinal);
  return wsi_bytes(p, n, fn, what);
}

/* A late split handle on a frame that has returned: the caller of a
 * non-blocking ncclCommSplit gave the address of a variable of a function
 * that has since returned (its frame lies below the frame of this call, on
 * this thread's stack), and NCCL will write the child there. */
static void check_watches(const char *fn, const void *frame)
{
  struct watch *w;
  char parent[64];
  void *where = NULL;

  wsi_lock();
  for (w = watches; w; w = w->next)
    if (pthread_equal(w->thread, pthread_self()) && (const char *)w->where >= w->lo &&
        (const char *)w->where < w->hi && (const char *)w->where < (const char *)frame) {
      where = (void *)w->where;
      memcpy(parent, w->parent, sizeof(parent));
      break;
    }
  wsi_unlock();
  if (where)
    wsi_violation("split handle on a returned stack frame",
                  "%s: the non-blocking ncclCommSplit of communicator %s was given newcomm=%p on "
                  "this thread's stack, and the function that owned it has returned; NCCL "
                  "writes the new communicator there when the split completes (init.cc "
                  "ncclCommInitRankFunc, after ncclCommSplit returned ncclInProgress), so "
                  "newcomm must stay valid until the parent's ncclCommGetAsyncError says "
                  "ncclSuccess",
                  fn, parent, where);
}

/* ---- operations: messages ---- */

static void disagree(const struct wsn_op *o, const struct wsn_hdr *h)
{
  wsi_violation("ranks disagree on a collective",
                "operation %llu of communicator %s: this rank calls %s of %zu %s (%s, root %d), "
                "rank %d calls %s of %llu %s (%s, root %d); NCCL requires every rank to call the "
                "same collectives in the same order with the same count and type",
                (unsigned long long)o->seq, o->c->name, coll_names[o->coll], o->count,
                wsn_type_name(o->dt), wsn_op_name(o->op), o->root, h->from,
                h->coll >= 0 && h->coll <= C_RECV ? coll_names[h->coll] : "?",
                (unsigned long long)h->count, wsn_type_name((ncclDataType_t)h->dtype),
                wsn_op_name((ncclRedOp_t)h->op), h->root);
}

static void post(const struct wsn_op *o, int peer, int kind, const void *data, size_t bytes)
{
  struct wsn_hdr h;

  memset(&h, 0, sizeof(h));
  h.kind = (uint32_t)kind;
  h.seq = o->seq;
  h.count = o->count;
  h.coll = o->coll;
  h.dtype = (int)o->dt;
  h.op = (int)o->op;
  h.root = o->root;
  wsn_send(o->c, peer, &h, data, bytes);
}

/* What a collective sends each peer as it starts: its data where the peer
 * needs it, else only its arrival (every rank waits for every other one). */
static void post_coll(const struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  size_t n = o->count * wsn_type_size(o->dt);
  int p;

  for (p = 0; p < c->nranks; p++) {
    const void *data = NULL;
    size_t bytes = 0;
    if (p == c->rank)
      continue;
    switch (o->coll) {
    case C_ALLREDUCE:
    case C_ALLGATHER:
      data = o->send;
      bytes = n;
      break;
    case C_BROADCAST:
      if (c->rank == o->root)
        data = o->send, bytes = n;
      break;
    case C_REDUCE:
      if (p == o->root)
        data = o->send, bytes = n;
      break;
    case C_REDUCESCATTER:
      data = o->send + (size_t)p * n;
      bytes = n;
      break;
    default: break;
    }
    post(o, p, WSN_COLL, data, bytes);
  }
}

/* A receive that starts says so to its sender, which waits for that. */
static void post_op(struct wsn_op *o)
{
  if (o->coll == C_RECV)
    post(o, o->peer, WSN_READY, NULL, 0);
  else if (o->coll != C_SEND)
    post_coll(o);
}

/* The size a peer's message of this collective must have. */
static size_t expected(const struct wsn_op *o, int from)
{
  struct ncclComm *c = o->c;
  size_t n = o->count * wsn_type_size(o->dt);

  switch (o->coll) {
  case C_ALLREDUCE:
  case C_ALLGATHER:
  case C_REDUCESCATTER: return n;
  case C_BROADCAST: return from == o->root ? n : 0;
  case C_REDUCE: return c->rank == o->root ? n : 0;
  default: return 0;
  }
}

/* ---- operations: computing ---- */

static char *scratch(size_t n)
{
  char *p = malloc(n ? n : 1);

  if (!p)
    wsi_violation("out of memory", "%zu bytes for a collective", n);
  return p;
}

static void compute_coll(struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  size_t es = wsn_type_size(o->dt), n = o->count * es, N = (size_t)c->nranks, p;
  const char **ins = calloc(N, sizeof(*ins));
  char *tmp = NULL;

  if (!ins)
    wsi_violation("out of memory", "%s", coll_names[o->coll]);
  for (p = 0; p < N; p++) {
    if ((int)p != c->rank && o->in[p]->h.bytes != expected(o, (int)p))
      disagree(o, &o->in[p]->h);
    ins[p] = (int)p == c->rank ? o->send : o->in[p]->data;
  }
  switch (o->coll) {
  case C_ALLREDUCE:
    tmp = scratch(n);
    wsn_ring_allreduce(tmp, ins, c->nranks, o->count, o->dt, o->op);
    memcpy(o->recv, tmp, n);
    break;
  case C_REDUCE:
    if (c->rank != o->root)
      break;
    tmp = scratch(n);
    wsn_ring_reduce(tmp, ins, c->nranks, o->root, o->count, o->dt, o->op);
    memcpy(o->recv, tmp, n);
    break;
  case C_BROADCAST: memmove(o->recv, ins[o->root], n); break;
  case C_ALLGATHER:
    tmp = scratch(n * N);
    for (p = 0; p < N; p++)
      memcpy(tmp + p * n, ins[p], n);
    memcpy(o->recv, tmp, n * N);
    break;
  case C_REDUCESCATTER:
    ins[c->rank] = o->send + (size_t)c->rank * n;
    tmp = scratch(n);
    wsn_ring_reduce_scatter(tmp, ins, c->nranks, c->rank, o->count, o->dt, o->op);
    memcpy(o->recv, tmp, n);
    break;
  default: break;
  }
  free(tmp);
  free(ins);
}

static void finish_recv(struct wsn_op *o)
{
  struct wsn_msg *m = o->m;

  if (m->h.count != o->count || m->h.dtype != (int)o->dt)
    wsi_violation("send and receive disagree",
                  "ncclRecv %llu of %zu %s from rank %d of communicator %s matched an ncclSend "
                  "of %llu %s",
                  (unsigned long long)o->seq, o->count, wsn_type_name(o->dt), o->peer, o->c->name,
                  (unsigned long long)m->h.count, wsn_type_name((ncclDataType_t)m->h.dtype));
  if (o->recv_bytes)
    memcpy(o->recv, m->data, o->recv_bytes);
}

/* What an operation does once what it waited for is there (unlocked). */
static void act(struct wsn_op *o)
{
  switch (o->coll) {
  case C_SEND: post(o, o->peer, WSN_P2P, o->send, o->send_bytes); break;
  case C_RECV: finish_recv(o); break;
  default: compute_coll(o); break;
  }
}

static void release(struct wsn_op *o)
{
  size_t p;

  for (p = 0; o->in && p < (size_t)o->c->nranks; p++)
    wsn_msg_free(o->in[p]);
  free(o->in);
  o->in = NULL;
  wsn_msg_free(o->m);
  o->m = NULL;
}

/* ---- operations: units ---- */

static void unit_free(struct unit *u)
{
  size_t i;

  if (!u)
    return;
  for (i = 0; i < u->n; i++)
    release(&u->ops[i]);
  free(u->ops);
  free(u->comms);
  free(u->first);
  free(u->count);
  free(u->streams);
  free(u);
}

/* A peer o needs that died over a network transport, or -1 (lock held). */
static int dead_net_peer(const struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  int p;

  for (p = 0; p < c->nranks; p++)
    if (c->peers[p].dead && c->peers[p].net &&
        (o->coll != C_SEND && o->coll != C_RECV ? p != c->rank : p == o->peer))
      return p;
  return -1;
}

/* How o starts (lock held): 1 when it has messages to post. After an
 * asynchronous error an operation does nothing, but after a network peer's
 * death it waits until this rank aborts (NCCL's proxy has stopped:
 * proxy.cc leaves its loop on the error, and the kernel spins). */
static int start_op(struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  int dead;

  if (c->local_abort)
    o->state = OP_DONE;
  else if (c->error == ncclRemoteError)
    o->state = OP_HUNG;
  else if (c->error != ncclSuccess)
    o->state = OP_DONE;
  else if (o->fault == FAULT_ERROR) {
    c->error = ncclSystemError;
    snprintf(c->why, sizeof(c->why), "injected asynchronous error in %s (WEFT_STANDIN_NCCL_FAULT)",
             coll_names[o->coll]);
    wsn_last_error("%s", c->why);
    wsi_log("nccl fault async-error in %s on %s", coll_names[o->coll], c->name);
    o->state = OP_DONE;
  } else if (o->fault == FAULT_HANG) {
    wsi_log("nccl fault hang in %s on %s", coll_names[o->coll], c->name);
    o->state = OP_HUNG;
  } else if ((dead = dead_net_peer(o)) >= 0) {
    wsn_remote_error(c, dead);
    o->state = OP_HUNG;
  } else {
    o->state = OP_WAIT;
    if (o->coll != C_SEND && o->coll != C_RECV) {
      o->in = calloc((size_t)c->nranks, sizeof(*o->in));
      if (!o->in)
        wsi_violation("out of memory", "%s", coll_names[o->coll]);
    }
    return 1;
  }
  return 0;
}

/* Take what o waits for (lock held); 1 when it has all of it. */
static int poll_op(struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  int p, all = 1;

  switch (o->coll) {
  case C_SEND: return o->m || (o->m = wsn_try_take(c, o->peer, WSN_READY, o->seq)) != NULL;
  case C_RECV: return o->m || (o->m = wsn_try_take(c, o->peer, WSN_P2P, o->seq)) != NULL;
  default:
    for (p = 0; p < c->nranks; p++) {
      struct wsn_msg *m;
      if (p == c->rank || o->in[p])
        continue;
      m = wsn_try_take(c, p, WSN_COLL, o->seq);
      if (m && (m->h.coll != o->coll || m->h.count != o->count || m->h.dtype != (int)o->dt ||
                m->h.op != (int)o->op || m->h.root != o->root))
        disagree(o, &m->h);
      o->in[p] = m;
      all &= m != NULL;
    }
    return all;
  }
}

/* Wait until every communicator of u has run all its earlier operations:
 * operations on one communicator run in issue order (its kernels are
 * serialised: enqueue.cc ncclLaunchPrepare makes each launch wait for the
 * communicator's device stream). */
static void wait_turn(struct unit *u)
{
  size_t k;
  int ok;

  wsi_lock();
  for (;;) {
    ok = 1;
    for (k = 0; k < u->ncomms; k++)
      ok &= u->comms[k]->exec_next + 1 == u->first[k] || u->comms[k]->local_abort;
    if (ok)
      break;
    wsi_wait();
  }
  wsi_unlock();
}

/* Progress every operation of u until each is done or its communicator
 * aborted (lock held on entry and exit). */
static void progress(struct unit *u)
{
  size_t i;

  for (;;) {
    int pending = 0, ready = 0;
    for (i = 0; i < u->n; i++) {
      struct wsn_op *o = &u->ops[i];
      if (o->state == OP_DONE)
        continue;
      if (o->c->local_abort) {
        o->state = OP_DONE;
        continue;
      }
      pending++;
      if (o->state == OP_WAIT && poll_op(o))
        o->state = OP_READY;
      ready += o->state == OP_READY;
    }
    if (!pending)
      return;
    if (!ready) {
      wsi_wait();
      continue;
    }
    wsi_unlock();
    for (i = 0; i < u->n; i++)
      if (u->ops[i].state == OP_READY) {
        act(&u->ops[i]);
        u->ops[i].state = OP_DONE;
      }
    wsi_lock();
  }
}

/* Run u on its stream: the work of one NCCL launch. */
static void unit_run(void *arg)
{
  struct unit *u = arg;
  size_t i, k;
  int late = 0;

  wait_turn(u);
  wsi_lock();
  for (i = 0; i < u->n; i++)
    u->ops[i].state = start_op(&u->ops[i]) ? OP_WAIT : u->ops[i].state;
  wsi_unlock();
  for (i = 0; i < u->n; i++)
    if (u->ops[i].state == OP_WAIT)
      post_op(&u->ops[i]);
  wsi_lock();
  progress(u);
  wsi_unlock();
  for (i = 0; i < u->n; i++)
    if (u->ops[i].fault == FAULT_LATE && !u->ops[i].c->local_abort) {
      wsi_log("nccl fault late in %s on %s", coll_names[u->ops[i].coll], u->ops[i].c->name);
      late = 1;
    }
  if (late)
    sleep(1);
  wsi_lock();
  for (k = 0; k < u->ncomms; k++) {
    u->comms[k]->exec_next += u->count[k];
    u->comms[k]->done += u->count[k];
  }
  wsi_broadcast();
  wsi_unlock();
  unit_free(u);
}

/* Give u's operations their places (lock held): each communicator's in
 * issue order, sequence numbers per communicator (collectives) and per pair
 * of ranks (sends, receives), and the faults. Returns the place of an
 * operation with the held fault, 0 if none. */
static uint64_t number(struct unit *u, struct ncclComm **held_comm)
{
  uint64_t held = 0;
  size_t i, k;

  for (k = 0; k < u->ncomms; k++)
    u->first[k] = u->comms[k]->issued + 1;
  for (i = 0; i < u->n; i++) {
    struct wsn_op *o = &u->ops[i];
    struct ncclComm *c = o->c;
    o->exec = ++c->issued;
    if (o->coll == C_SEND)
      o->seq = ++c->p2p_send[o->peer];
    else if (o->coll == C_RECV)
      o->seq = ++c->p2p_recv[o->peer];
    else
      o->seq = ++c->coll_seq;
    ops_count++;
    o->fault = ops_count == fault_hang_at    ? FAULT_HANG
               : ops_count == fault_error_at ? FAULT_ERROR
               : ops_count == fault_late_at  ? FAULT_LATE
                                             : FAULT_NONE;
    if (ops_count == fault_held_at) {
      held = o->exec;
      *held_comm = c;
    }
  }
  return held;
}

static struct unit *unit_alloc(size_t n)
{
  struct unit *u = calloc(1, sizeof(*u));

  if (!u || !(u->ops = calloc(n, sizeof(*u->ops))) || !(u->comms = calloc(n, sizeof(*u->comms))) ||
      !(u->first = calloc(n, sizeof(*u->first))) || !(u->count = calloc(n, sizeof(*u->count))) ||
      !(u->streams = calloc(n, sizeof(*u->streams))))
    wsi_violation("out of memory", "a group of %zu NCCL operations", n);
  return u;
}

static void unit_add(struct unit *u, const struct wsn_op *o)
{
  struct wsn_op *n = &u->ops[u->n++];
  size_t k;

  *n = *o;
  for (k = 0; k < u->ncomms && u->comms[k] != o->c; k++)
    ;
  if (k == u->ncomms)
    u->comms[u->ncomms++] = o->c;
  u->count[k]++;
  for (k = 0; k < u->nstreams && u->streams[k] != o->stream; k++)
    ;
  if (k == u->nstreams)
    u->streams[u->nstreams++] = o->stream;
}

/* A graph's replay of u: a fresh copy with fresh places, at each
 * cudaGraphLaunch (in launch order, on the launching thread). */
static void *unit_make(void *tmpl)
{
  const struct unit *t = tmpl;
  struct unit *u = unit_alloc(t->n);
  struct ncclComm *held_comm = NULL;
  size_t i;

  for (i = 0; i < t->n; i++)
    unit_add(u, &t->ops[i]);
  wsi_lock();
  number(u, &held_comm);
  wsi_unlock();
  return u;
}

static void unit_drop(void *tmpl) { unit_free(tmpl); }

static const struct wsi_replay unit_replay = {unit_make, unit_drop};

/* The event that joins a unit's streams, one per device (NCCL's
 * sharedRes->scratchEvent), and the lock that keeps each record and its
 * waits together when threads launch groups at once. */
static pthread_mutex_t join_mu = PTHREAD_MUTEX_INITIALIZER;

static wsi_event *scratch_event(int ordinal, int physical)
{
  static wsi_event *ev[WSI_MAX_DEVICES];

  if (!ev[physical] && !(ev[physical] = wsi_event_create(ordinal, 0)))
    wsi_violation("out of memory", "an event for an NCCL group");
  return ev[physical];
}

/* Make to wait for each of from[0, n) (to is from[0] when after is 0), or
 * each of them wait for to (after). */
static void join(wsi_stream *const *from, size_t n, int after, const char *what)
{
  wsi_event *e;
  size_t i;

  if (n < 2)
    return;
  pthread_mutex_lock(&join_mu);
  e = scratch_event(wsi_ordinal(wsi_stream_physical(from[0])), wsi_stream_physical(from[0]));
  if (after) {
    (void)wsi_event_record(e, from[0]);
    for (i = 1; i < n; i++)
      (void)wsi_stream_wait_event(from[i], e, 0, what);
  } else {
    for (i = 1; i < n; i++) {
      (void)wsi_event_record(e, from[i]);
      (void)wsi_stream_wait_event(from[0], e, 0, what);
    }
  }
  pthread_mutex_unlock(&join_mu);
}

/* Queue u on its first stream after every other stream of it, and make
 * those wait for it (enqueue.cc ncclLaunchPrepare, ncclLaunchFinish).
 * Returns the place of an operation with the held fault, or 0. */
static uint64_t launch(struct unit *u, struct ncclComm **held_comm)
{
  wsi_stream *s = u->streams[0], **streams = malloc(u->nstreams * sizeof(*streams));
  struct wsi_range *r = calloc(2 * u->n, sizeof(*r));
  const char *what = u->n == 1 ? coll_names[u->ops[0].coll] : "ncclGroupEnd";
  size_t i, nstreams = u->nstreams;
  uint64_t held = 0;
  int nr = 0;

  if (!r || !streams)
    wsi_violation("out of memory", "%s", what);
  memcpy(streams, u->streams, nstreams * sizeof(*streams));
  for (i = 0; i < u->n; i++) {
    const struct wsn_op *o = &u->ops[i];
    if (o->send_bytes)
      r[nr++] = (struct wsi_range){o->send_dev, o->send_bytes, 0};
    if (o->recv_bytes)
      r[nr++] = (struct wsi_range){o->recv_dev, o->recv_bytes, 1};
  }
  join(streams, nstreams, 0, what);
  /* Captured, u is the template of each replay's unit (unit_make numbers
   * those); else it is numbered now. u is the stream's from here. */
  if (!wsi_stream_capturing(s)) {
    wsi_lock();
    held = number(u, held_comm);
    wsi_unlock();
  }
  wsi_enqueue_replayable(s, what, r, nr, unit_run, u, &unit_replay);
  join(streams, nstreams, 1, what);
  free(streams);
  free(r);
  return held;
}

/* The held fault: the call returns a second after its operation completed
 * (or this rank aborted). */
static void hold(struct ncclComm *c, const char *fn, uint64_t exec)
{
  wsi_lock();
  while (c->done < exec && !c->local_abort)
    wsi_wait();
  wsi_unlock();
  wsi_log("nccl fault held in %s on %s", fn, c->name);
  sleep(1);
}

static ncclResult_t queued(struct ncclComm *c)
{
  if (c->blocking)
    return ncclSuccess;
  wsi_lock();
  c->settle = 2;
  wsi_unlock();
  return ncclInProgress;
}

/* ---- one-rank collectives ---- */

struct one {
  char *send, *recv;
  size_t count;
  ncclDataType_t dt;
  int premul;
};

static void one_run(void *arg)
{
  struct one *w = arg;

  if (w->premul)
    wsn_premul_one(w->recv, w->send, w->count, w->dt);
  else
    memmove(w->recv, w->send, w->count * wsn_type_size(w->dt));
  free(w);
}

static void *one_make(void *tmpl)
{
  struct one *w = malloc(sizeof(*w));

  if (!w)
    wsi_violation("out of memory", "a one-rank collective");
  *w = *(const struct one *)tmpl;
  return w;
}

static const struct wsi_replay one_replay = {one_make, free};

/* A collective on a one-rank communicator (enqueue.cc taskAppend calls
 * device/onerank.cu ncclLaunchOneRank at once, even in a group, and queues
 * no task): a copy when not in place, nothing in place, and for ncclAvg on
 * floating point (FuncPreMulSum) a kernel that multiplies by 1/1. */
static void one_rank(const struct wsn_op *o)
{
  int premul = o->op == ncclAvg && (o->dt == ncclFloat16 || o->dt == ncclFloat32 ||
                                    o->dt == ncclFloat64 || o->dt == ncclBfloat16);
  size_t n = o->count * wsn_type_size(o->dt);
  struct wsi_range r[2] = {{o->send_dev, n, 0}, {o->recv_dev, n, 1}};
  struct one *w;

  if (!premul && o->send_dev == o->recv_dev)
    return;
  w = malloc(sizeof(*w));
  if (!w)
    wsi_violation("out of memory", "a one-rank collective");
  w->send = o->send;
  w->recv = o->recv;
  w->count = o->count;
  w->dt = o->dt;
  w->premul = premul;
  wsi_enqueue_replayable(o->stream,
                         premul ? "ncclAllReduce (a one-rank ncclAvg kernel)"
                                : "a one-rank NCCL collective (a device copy)",
                         r, 2, one_run, w, &one_replay);
}

/* ---- the operations' API ---- */

static void group_append(const struct wsn_op *o)
{
  if (group_n == group_cap) {
    size_t cap = group_cap ? 2 * group_cap : 16;
    struct pending *g = realloc(group_ops, cap * sizeof(*g));
    if (!g)
      wsi_violation("out of memory", "ncclGroupStart");
    group_ops = g;
    group_cap = cap;
  }
  group_ops[group_n++].o = *o;
}

static void sizes(struct wsn_op *o, size_t n)
{
  struct ncclComm *c = o->c;

  switch (o->coll) {
  case C_ALLREDUCE:
    o->send_bytes = n;
    o->recv_bytes = n;
    break;
  case C_BROADCAST:
    o->send_bytes = c->rank == o->root ? n : 0;
    o->recv_bytes = n;
    break;
  case C_REDUCE:
    o->send_bytes = n;
    o->recv_bytes = c->rank == o->root ? n : 0;
    break;
  case C_ALLGATHER:
    o->send_bytes = n;
    o->recv_bytes = n * (size_t)c->nranks;
    break;
  case C_REDUCESCATTER:
    o->send_bytes = n * (size_t)c->nranks;
    o->recv_bytes = n;
    break;
  case C_SEND: o->send_bytes = n; break;
  default: o->recv_bytes = n; break;
  }
}

/* The stream of an operation; NULL when CUDA refuses to queue on it now
 * (stream capture: NCCL's launch then fails with ncclUnhandledCudaError). */
static wsi_stream *op_stream(struct ncclComm *c, cudaStream_t stream, const char *fn)
{
  wsi_stream *s = wsi_stream_get(stream, fn);
  char sname[96];

  if (wsi_stream_physical(s) != c->physical)
    wsi_violation("stream of another device", "%s on communicator %s (device %d) on %s", fn,
                  c->name, c->ordinal, wsi_stream_name(s, sname, sizeof(sname)));
  return wsi_capture_use(s, fn, WSI_USE_ENQUEUE) == WSI_OK ? s : NULL;
}

/* The arguments as enqueue.cc ArgsCheck checks them; 0 or an NCCL error. */
static ncclResult_t args(struct ncclComm *c, int coll, ncclDataType_t dt, ncclRedOp_t op, int root,
                         int peer)
{
  const char *fn = coll_names[coll];
  int reduces = coll == C_ALLREDUCE || coll == C_REDUCE || coll == C_REDUCESCATTER;

  if (!wsn_type_size(dt))
    return fail(c, ncclInvalidArgument, "%s: invalid type %d", fn, (int)dt);
  if (reduces && ((int)op < 0 || (int)op >= ncclNumOps))
    return fail(c, ncclInvalidArgument, "%s: invalid reduction operation %d", fn, (int)op);
  if ((coll == C_BROADCAST || coll == C_REDUCE) && (root < 0 || root >= c->nranks))
    return fail(c, ncclInvalidArgument,
                "%s: invalid root %d (root should be in the 0..%d "
                "range)",
                fn, root, c->nranks);
  if ((coll == C_SEND || coll == C_RECV) && (peer < 0 || peer >= c->nranks))
    return fail(c, ncclInvalidArgument,
                "%s: invalid peer %d (peer should be in the 0..%d "
                "range)",
                fn, peer, c->nranks);
  return ncclSuccess;
}

static ncclResult_t operation(int coll, const void *send, void *recv, size_t count,
                              ncclDataType_t dt, ncclRedOp_t op, int root, int peer,
                              struct ncclComm *c, cudaStream_t stream, const void *frame)
{
  const char *fn = coll_names[coll];
  int p2p = coll == C_SEND || coll == C_RECV;
  struct ncclComm *held_comm = NULL;
  struct wsn_op o;
  struct unit *u;
  ncclResult_t r;
  uint64_t held;

  enter(fn, p2p ? V(2, 7) : coll == C_BROADCAST ? V(2, 3) : V(2, 0), 1, frame);
  if (!c)
    return fail(NULL, ncclInvalidArgument, "%s: comm argument is NULL", fn);
  usable(c, fn, 0);
  if ((r = args(c, coll, dt, op, root, peer)) != ncclSuccess)
    return r;
  /* enqueue.cc taskAppend: "Empty collectives can be discarded." Empty
   * sends and receives are not: they are a message of no bytes (one step
   * of nbytes 0 in scheduleP2pTasksToPlan), and still a rendezvous. */
  if (count == 0 && !p2p)
    return ncclSuccess;
  memset(&o, 0, sizeof(o));
  o.c = c;
  o.coll = coll;
  o.count = count;
  o.dt = dt;
  o.op = coll == C_ALLREDUCE || coll == C_REDUCE || coll == C_REDUCESCATTER ? op : ncclSum;
  o.root = coll == C_BROADCAST || coll == C_REDUCE ? root : -1;
  o.peer = p2p ? peer : -1;
  if (!(o.stream = op_stream(c, stream, fn)))
    return fail(c, ncclUnhandledCudaError,
                "%s: CUDA refuses work on that stream now (stream "
                "capture; see the stand-in's log)",
                fn);
  sizes(&o, count * wsn_type_size(dt));
  o.send_dev = send;
  o.recv_dev = recv;
  o.send = device_bytes(c, send, o.send_bytes, fn, "sendbuff");
  o.recv = device_bytes(c, recv, o.recv_bytes, fn, "recvbuff");
  if (c->nranks == 1 && !p2p) {
    one_rank(&o);
    return ncclSuccess;
  }
  if (group_depth > 0) {
    group_append(&o);
    return ncclSuccess;
  }
  u = unit_alloc(1);
  unit_add(u, &o);
  if ((held = launch(u, &held_comm)) != 0)
    hold(held_comm, fn, held);
  return queued(c);
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_ALLREDUCE, s, r, count, dt, op, -1, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                                  ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_BROADCAST, s, r, count, dt, ncclSum, root, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclBcast(void *buf, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                              cudaStream_t stream)
{
  return operation(C_BROADCAST, buf, buf, count, dt, ncclSum, root, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_REDUCE, s, r, count, dt, op, root, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt,
                                  ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_ALLGATHER, s, r, count, dt, ncclSum, -1, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_REDUCESCATTER, s, r, count, dt, op, -1, -1, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_SEND, s, NULL, count, dt, ncclSum, -1, peer, comm, stream,
                   __builtin_frame_address(0));
}

EXPORT ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                             cudaStream_t stream)
{
  return operation(C_RECV, NULL, r, count, dt, ncclSum, -1, peer, comm, stream,
                   __builtin_frame_address(0));
}

/* ---- groups ---- */

static size_t find_root(size_t *up, size_t i)
{
  while (up[i] != i)
    i = up[i] = up[up[i]];
  return i;
}

/* The group's operations cut into units: those that share a communicator
 * (one plan per communicator) or a stream (one launch per stream here), in
 * the order of their first operation. unit_of[i] is operation i's unit. */
static size_t partition(const struct pending *ops, size_t n, size_t *unit_of)
{
  size_t *up = malloc(n * sizeof(*up)), *id = malloc(n * sizeof(*id)), i, j, nu = 0;

  if (!up || !id)
    wsi_violation("out of memory", "ncclGroupEnd");
  for (i = 0; i < n; i++)
    up[i] = i;
  for (i = 0; i < n; i++)
    for (j = 0; j < i; j++)
      if (ops[i].o.c == ops[j].o.c || ops[i].o.stream == ops[j].o.stream)
        up[find_root(up, i)] = find_root(up, j);
  for (i = 0; i < n; i++)
    id[i] = (size_t)-1;
  for (i = 0; i < n; i++) {
    size_t root = find_root(up, i);
    if (id[root] == (size_t)-1)
      id[root] = nu++;
    unit_of[i] = id[root];
  }
  free(up);
  free(id);
  return nu;
}

/* group.cc doLaunches: "Either none or all communicators in a ncclGroup()
 * can be CUDA graph captured." */
static int capture_mixed(const struct pending *ops, size_t n)
{
  size_t i;
  int yes = 0, no = 0;

  for (i = 0; i < n; i++) {
    if (wsi_stream_capturing(ops[i].o.stream))
      yes = 1;
    else
      no = 1;
  }
  return yes && no;
}

static ncclResult_t launch_group(const struct pending *ops, size_t n)
{
  size_t *unit_of, nu, i, k;
  ncclResult_t r = ncclSuccess;

  if (n == 0)
    return ncclSuccess;
  if (capture_mixed(ops, n))
    return fail(NULL, ncclInvalidUsage,
                "Either none or all communicators in a ncclGroup() can "
                "be CUDA graph captured.");
  for (i = 0; i < n; i++)
    if (!ops[i].o.c->blocking) {
      wsi_lock();
      ops[i].o.c->settle = 2;
      wsi_unlock();
      r = ncclInProgress;
    }
  unit_of = malloc(n * sizeof(*unit_of));
  if (!unit_of)
    wsi_violation("out of memory", "ncclGroupEnd");
  nu = partition(ops, n, unit_of);
  for (k = 0; k < nu; k++) {
    struct unit *u = unit_alloc(n);
    struct ncclComm *held_comm = NULL;
    for (i = 0; i < n; i++)
      if (unit_of[i] == k)
        unit_add(u, &ops[i].o);
    launch(u, &held_comm); /* the held fault does not apply in a group */
  }
  free(unit_of);
  return r;
}

/* nccl.h declares these two as f(), which is no prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
EXPORT ncclResult_t ncclGroupStart(void)
{
  ENTER("ncclGroupStart", V(2, 0));
  group_depth++;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
  ncclResult_t r;

  ENTER("ncclGroupEnd", V(2, 0));
  if (group_depth == 0)
    return fail(NULL, ncclInvalidUsage, "ncclGroupEnd: not in a group call.");
  if (--group_depth > 0)
    return ncclSuccess;
  r = launch_group(group_ops, group_n);
  group_n = 0;
  return r;
}
#pragma GCC diagnostic pop

/* ---- communicators ---- */

/* At exit: a communicator another rank aborted must have been aborted here
 * too; any other one still open is said to have leaked. */
static void exit_check(void)
{
  struct ncclComm *c;

  for (c = all_comms; c; c = c->all_next) {
    int peer, mine;
    if (c->magic != WSN_MAGIC)
      continue;
    wsn_flush(c);
    wsi_lock();
    peer = c->peer_aborted;
    mine = c->local_abort;
    wsi_unlock();
    if (peer >= 0 && !mine)
      wsi_violation("abort not called by every rank",
                    "the process exits, and communicator %s, which its rank %d aborted, was "
                    "never aborted here; NCCL 2.28 requires every active rank to call "
                    "ncclCommAbort",
                    c->name, peer);
  }
  for (c = all_comms; c; c = c->all_next)
    if (c->magic == WSN_MAGIC && c->handed)
      wsi_log("nccl comm %s rank %d leaked: neither ncclCommDestroy nor ncclCommAbort", c->name,
              c->rank);
}

static struct ncclComm *new_comm(const char *name, int blocking, int ordinal)
{
  static int registered;
  struct ncclComm *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  c->magic = WSN_MAGIC;
  snprintf(c->name, sizeof(c->name), "%s", name);
  c->blocking = blocking;
  c->ordinal = ordinal;
  c->physical = wsi_physical(ordinal);
  c->state = ncclInProgress;
  c->error = ncclSuccess;
  c->peer_aborted = -1;
  c->listen_fd = -1;
  c->wake[0] = c->wake[1] = -1;
  wsi_lock();
  c->all_next = all_comms;
  all_comms = c;
  if (!registered) {
    registered = 1;
    atexit(exit_check);
  }
  wsi_unlock();
  return c;
}

/* The blocking attribute and the name from a config, as the played version
 * reads it (init.cc parseCommConfig): only the fields its ncclConfig_t has
 * (it copies min(config->size, its own size) bytes: commName from 2.27);
 * blocking must be 0, 1 or, from 2.17, NCCL_CONFIG_UNDEF_INT for the default
 * 1 (2.14 to 2.16 refuse NCCL_CONFIG_INITIALIZER's undefined value); then
 * NCCL_COMM_BLOCKING (envConfigOverride). */
static ncclResult_t read_config(const ncclConfig_t *config, int *blocking, char *name, size_t len,
                                const char *fn)
{
  int b = wsn_version() < V(2, 17) ? 1 : NCCL_CONFIG_UNDEF_INT;

  if (config) {
    if (config->magic != 0xcafebeef ||
        config->size < offsetof(ncclConfig_t, blocking) + sizeof(config->blocking))
      wsi_violation("ncclConfig_t not initialised",
                    "%s: the config was not set up with NCCL_CONFIG_INITIALIZER", fn);
    b = config->blocking;
    if (config->commName && wsn_version() >= V(2, 27) && config->version >= V(2, 27) &&
        config->size >= offsetof(ncclConfig_t, commName) + sizeof(config->commName))
      snprintf(name, len, "%s", config->commName);
  }
  if (b != 0 && b != 1 && (b != NCCL_CONFIG_UNDEF_INT || wsn_version() < V(2, 17)))
    return fail(NULL, ncclInvalidArgument, "%s: Invalid config blocking attribute value %d", fn, b);
  *blocking = env_blocking(b == NCCL_CONFIG_UNDEF_INT ? 1 : b);
  return ncclSuccess;
}

static void log_up(const struct ncclComm *c)
{
  if (c->parent[0])
    wsi_log("nccl comm %s rank %d/%d device %d up by split of %s", c->name, c->rank, c->nranks,
            c->ordinal, c->parent);
  else
    wsi_log("nccl comm %s rank %d/%d device %d up by init", c->name, c->rank, c->nranks,
            c->ordinal);
}

/* An init ends: c's state, and its error if it failed. */
static void finish(struct ncclComm *c, ncclResult_t r)
{
  wsi_lock();
  if (r == ncclSuccess && c->local_abort)
    r = ncclSystemError;
  c->state = r;
  if (r != ncclSuccess && c->error == ncclSuccess)
    c->error = r;
  c->busy = 0;
  wsi_broadcast();
  wsi_unlock();
  if (r == ncclSuccess) {
    log_up(c);
  } else {
    wsn_last_error("%s", c->why);
    wsi_log("nccl comm %s rank %d/%d failed: %s", c->name, c->rank, c->nranks, c->why);
  }
}

/* init-absent: this rank never joins; it waits until it aborts c (or the
 * parent c is being split from). */
static void wait_for_abort(struct ncclComm *c)
{
  wsi_lock();
  while (!wsn_aborted(c))
    wsi_wait();
  wsi_unlock();
  snprintf(c->why, sizeof(c->why), "never joined (WEFT_STANDIN_NCCL_FAULT init-absent)");
}

struct init {
  struct ncclComm *c;
  char root[WSN_PATH];
};

static ncclResult_t init_run(struct ncclComm *c, const char *root)
{
  struct wsn_hello me, *table;
  ncclResult_t r;

  if (fault_init_absent) {
    wait_for_abort(c);
    return ncclSystemError;
  }
  c->listen_fd = wsn_listen(c->listen_path);
  if (c->listen_fd < 0) {
    snprintf(c->why, sizeof(c->why), "cannot make a socket for %s", c->name);
    return ncclSystemError;
  }
  memset(&me, 0, sizeof(me));
  me.rank = c->rank;
  me.nranks = c->nranks;
  me.physical = c->physical;
  me.pid = (int)getpid();
  wsn_hostid(me.hostid, sizeof(me.hostid));
  memcpy(me.path, c->listen_path, sizeof(me.path));
  table = calloc((size_t)c->nranks, sizeof(*table));
  if (!table)
    return ncclSystemError;
  r = wsn_root_join(c, root, &me, table);
  if (r == ncclSuccess)
    r = wsn_mesh(c, table);
  free(table);
  return r;
}

/* A non-blocking init's thread. Like a split, it completes no sooner than
 * NCCL could: after ncclCommGetAsyncError said ncclInProgress once (or this
 * rank aborted). */
static void *init_thread(void *arg)
{
  struct init *in = arg;
  ncclResult_t r = init_run(in->c, in->root);

  wsi_lock();
  while (!in->c->polled && !in->c->local_abort)
    wsi_wait();
  wsi_unlock();
  finish(in->c, r);
  free(in);
  return NULL;
}

static int start(void *(*fn)(void *), void *arg)
{
  pthread_attr_t attr;
  pthread_t t;
  int rc;

  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  rc = pthread_create(&t, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  return rc;
}

struct wsn_id {
  char magic[8];
  char path[WSN_PATH];
};

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
  struct wsn_id w;

  ENTER("ncclGetUniqueId", V(2, 0));
  if (!id)
    return fail(NULL, ncclInvalidArgument, "ncclGetUniqueId: NULL");
  memset(&w, 0, sizeof(w));
  memcpy(w.magic, "WSNID01", 8);
  if (wsn_root_start(w.path) != 0)
    return fail(NULL, ncclSystemError, "ncclGetUniqueId: cannot start the bootstrap root");
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &w, sizeof(w));
  return ncclSuccess;
}

/* An init, blocking or not. ncclCommInitRankConfig decides by the new
 * communicator's blocking attribute (group.cc ncclAsyncLaunch);
 * ncclCommInitRank runs outside any group, so its job runs at once and it
 * always blocks, whatever NCCL_COMM_BLOCKING makes of the communicator's
 * later calls (init.cc ncclCommInitRank, ncclAsyncLaunch at depth 0). */
static ncclResult_t init_comm(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                              const ncclConfig_t *config, const char *fn, int always_block)
{
  struct wsn_id w;
  struct ncclComm *c;
  struct init *in;
  char name[64];
  int blocking = 1, ordinal = wsi_current();
  ncclResult_t r;
  static unsigned long n;

  if (!comm)
    return fail(NULL, ncclInvalidArgument, "%s: comm is NULL", fn);
  *comm = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(NULL, ncclInvalidArgument, "Invalid rank requested : %d/%d", rank, nranks);
  wsi_lock();
  snprintf(name, sizeof(name), "comm%lu", ++n);
  wsi_unlock();
  if ((r = read_config(config, &blocking, name, sizeof(name), fn)) != ncclSuccess)
    return r;
  memcpy(&w, id.internal, sizeof(w));
  if (memcmp(w.magic, "WSNID01", 8) != 0)
    return fail(NULL, ncclInvalidArgument,
                "%s: not a unique id from this stand-in's "
                "ncclGetUniqueId",
                fn);
  if (wsi_physical(ordinal) < 0)
    return fail(NULL, ncclUnhandledCudaError, "%s: no current CUDA device", fn);
  wsi_context(ordinal, fn);
  c = new_comm(name, blocking, ordinal);
  if (!c)
    return fail(NULL, ncclSystemError, "out of memory");
  c->rank = rank;
  c->nranks = nranks;
  c->busy = 1;
  if (blocking || always_block) {
    r = init_run(c, w.path);
    finish(c, r);
    if (r != ncclSuccess) {
      wsn_close(c, 1);
      c->magic = WSN_DEAD;
      return fail(NULL, r, "%s", c->why);
    }
    c->handed = 1;
    *comm = c;
    return ncclSuccess;
  }
  in = calloc(1, sizeof(*in));
  if (!in)
    return fail(NULL, ncclSystemError, "out of memory");
  in->c = c;
  memcpy(in->root, w.path, sizeof(in->root));
  c->handed = 1;
  *comm = c;
  if (start(init_thread, in) != 0) {
    free(in);
    snprintf(c->why, sizeof(c->why), "cannot start the init thread");
    finish(c, ncclSystemError);
  }
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config)
{
  ENTER("ncclCommInitRankConfig", V(2, 14));
  return init_comm(comm, nranks, id, rank, config, "ncclCommInitRankConfig", 0);
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
  ENTER("ncclCommInitRank", V(2, 0));
  return init_comm(comm, nranks, id, rank, NULL, "ncclCommInitRank", 1);
}

/* Several roots spread the bootstrap in NCCL; the stand-in's first root
 * serves every rank (all ranks pass the same ids). */
EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                             ncclUniqueId *ids, ncclConfig_t *config)
{
  ENTER("ncclCommInitRankScalable", V(2, 23));
  if (!ids || nId <= 0 || nId > nranks)
    return fail(NULL, ncclInvalidArgument,
                "improper usage of ncclCommInitRank: nId = %d, "
                "nranks=%d",
                nId, nranks);
  return init_comm(comm, nranks, ids[0], rank, config, "ncclCommInitRankScalable", 0);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
  QUERY("ncclCommInitAll", V(2, 0));
  (void)comm, (void)ndev, (void)devlist;
  return fail(NULL, ncclInvalidUsage, "ncclCommInitAll: not in the weft stand-in");
}

/* ---- split ---- */

struct split {
  struct ncclComm *parent, *child;
  ncclComm_t *newcomm;
  struct watch *watch;
  uint64_t seq;
  int color, key, nonblocking, returned;
  char why[256];
  struct wsn_hello me;
};

/* Every parent rank's colour, key and hello (init.cc commGetSplitInfo's
 * bootstrapAllGather: NCCL_SPLIT_NOCOLOR ranks take part too). */
static ncclResult_t split_gather(struct split *s, struct wsn_hello *all, int *color, int *key)
{
  struct ncclComm *p = s->parent;
  int i, closed;

  for (i = 0; i < p->nranks; i++) {
    struct wsn_msg *m;
    if (i == p->rank) {
      all[i] = s->me;
      color[i] = s->color;
      key[i] = s->key;
      continue;
    }
    m = wsn_take_bootstrap(p, i, WSN_SPLIT, s->seq, &closed);
    if (!m || m->h.bytes != sizeof(all[i])) {
      wsn_msg_free(m);
      snprintf(s->why, sizeof(s->why),
               closed ? "bootstrap: rank %d of %s closed its connection during ncclCommSplit "
                        "(socketProgress: Connection closed by remote peer)"
                      : "bootstrap: aborted while waiting for rank %d of %s in ncclCommSplit",
               i, p->name);
      return closed ? ncclRemoteError : ncclSystemError;
    }
    memcpy(&all[i], m->data, sizeof(all[i]));
    color[i] = m->h.color;
    key[i] = m->h.key;
    wsn_msg_free(m);
  }
  return ncclSuccess;
}

/* The child's ranks: those of its colour by key, then by parent rank (init.cc
 * commGetSplitInfo); then its mesh. */
static ncclResult_t split_mesh(struct split *s, const struct wsn_hello *all, const int *color,
                               const int *key)
{
  struct ncclComm *p = s->parent, *c = s->child;
  int N = p->nranks, i, k, n = 0;
  struct wsn_hello *table = calloc((size_t)N, sizeof(*table));
  int *order = calloc((size_t)N, sizeof(int));
  ncclResult_t r;

  if (!table || !order) {
    free(table);
    free(order);
    snprintf(s->why, sizeof(s->why), "out of memory");
    return ncclSystemError;
  }
  for (i = 0; i < N; i++)
    if (color[i] == s->color) {
      for (k = n; k > 0 && (key[order[k - 1]] > key[i]); k--)
        order[k] = order[k - 1];
      order[k] = i;
      n++;
    }
  for (k = 0; k < n; k++) {
    table[k] = all[order[k]];
    table[k].rank = k;
    table[k].nranks = n;
    if (order[k] == p->rank)
      c->rank = k;
  }
  c->nranks = n;
  r = wsn_mesh(c, table);
  if (r != ncclSuccess)
    memcpy(s->why, c->why, sizeof(s->why));
  free(table);
  free(order);
  return r;
}

static ncclResult_t split_run(struct split *s)
{
  int N = s->parent->nranks;
  struct wsn_hello *all = calloc((size_t)N, sizeof(*all));
  int *color = calloc((size_t)N, sizeof(int)), *key = calloc((size_t)N, sizeof(int));
  ncclResult_t r;

  if (!all || !color || !key) {
    snprintf(s->why, sizeof(s->why), "out of memory");
    r = ncclSystemError;
  } else if (fault_init_absent) {
    wait_for_abort(s->child ? s->child : s->parent);
    snprintf(s->why, sizeof(s->why), "never joined (WEFT_STANDIN_NCCL_FAULT init-absent)");
    r = ncclSystemError;
  } else {
    r = split_gather(s, all, color, key);
    if (r == ncclSuccess && s->child)
      r = split_mesh(s, all, color, key);
  }
  free(all);
  free(color);
  free(key);
  return r;
}

static void unwatch(struct watch *w)
{
  struct watch **pp;

  if (!w)
    return;
  wsi_lock();
  for (pp = &watches; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  wsi_unlock();
  free(w);
}

/* Watch where a non-blocking split will write its child when that is on
 * the calling thread's stack (the frames of this thread lie there). */
static struct watch *watch_handle(ncclComm_t *where, const struct ncclComm *parent)
{
  pthread_attr_t attr;
  void *addr;
  size_t size;
  struct watch *w;

  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return NULL;
  if (pthread_attr_getstack(&attr, &addr, &size) != 0 || (char *)where < (char *)addr ||
      (char *)where >= (char *)addr + size || !(w = calloc(1, sizeof(*w)))) {
    pthread_attr_destroy(&attr);
    return NULL;
  }
  pthread_attr_destroy(&attr);
  w->where = where;
  w->thread = pthread_self();
  w->lo = addr;
  w->hi = (char *)addr + size;
  snprintf(w->parent, sizeof(w->parent), "%s", parent->name);
  wsi_lock();
  w->next = watches;
  watches = w;
  wsi_unlock();
  return w;
}

/* Hand the child over as init.cc ncclCommInitRankFunc's exit does, even
 * when the split failed (the half-made child) and NULL for
 * NCCL_SPLIT_NOCOLOR: an atomic store into *newcomm. A non-blocking
 * split's handle must still hold the NULL ncclCommSplit put there. */
static void hand_over(struct split *s)
{
  ncclComm_t now = __atomic_load_n(s->newcomm, __ATOMIC_ACQUIRE);

  if (s->nonblocking && now != NULL)
    wsi_violation("split handle changed before the split completed",
                  "the non-blocking ncclCommSplit of communicator %s writes its new "
                  "communicator to newcomm=%p now, and that memory no longer holds the NULL "
                  "ncclCommSplit put there (it holds %p): the variable was reused or written "
                  "before the parent's ncclCommGetAsyncError said ncclSuccess",
                  s->parent->name, (void *)s->newcomm, (void *)now);
  unwatch(s->watch);
  s->watch = NULL;
  if (s->child) {
    wsi_lock();
    s->child->handed = 1;
    wsi_unlock();
  }
  __atomic_store_n(s->newcomm, s->child, __ATOMIC_RELEASE);
}

/* The child's end: up, or failed and handed over all the same (its
 * ncclCommGetAsyncError says ncclSuccess: NCCL sets only initState). */
static void child_done(struct split *s, ncclResult_t r)
{
  struct ncclComm *c = s->child;

  if (!c)
    return;
  wsi_lock();
  if (r == ncclSuccess && wsn_aborted(c)) {
    r = ncclSystemError;
    snprintf(s->why, sizeof(s->why), "ncclCommSplit of %s aborted", s->parent->name);
  }
  c->state = ncclSuccess;
  c->split_failed = r != ncclSuccess;
  if (r != ncclSuccess)
    memcpy(c->why, s->why, sizeof(c->why));
  c->abort_with = NULL;
  c->busy = 0;
  wsi_broadcast();
  wsi_unlock();
  if (r == ncclSuccess)
    log_up(c);
  else
    wsi_log("nccl comm %s rank %d/%d failed: %s", c->name, c->rank, c->nranks, s->why);
}

/* The non-blocking parent's end of the split (group.cc groupLaunch sets
 * its state after the job; groupCleanup puts a failure on it). */
static void parent_done(struct split *s, ncclResult_t r)
{
  struct ncclComm *p = s->parent;

  wsi_lock();
  p->state = ncclSuccess;
  if (r != ncclSuccess && p->error == ncclSuccess) {
    p->error = r;
    snprintf(p->why, sizeof(p->why), "ncclCommSplit failed: %.200s", s->why);
  }
  p->split_busy = 0;
  wsi_broadcast();
  wsi_unlock();
}

/* A non-blocking split's thread. It completes no sooner than NCCL could:
 * after ncclCommSplit returned and the parent's ncclCommGetAsyncError said
 * ncclInProgress once (or the parent aborted). */
static void *split_thread(void *arg)
{
  struct split *s = arg;
  ncclResult_t r = split_run(s);

  wsi_lock();
  while (!s->returned || (!s->parent->polled && !s->parent->local_abort))
    wsi_wait();
  wsi_unlock();
  if (r == ncclSuccess && s->child && wsn_aborted(s->child))
    r = ncclSystemError;
  child_done(s, r);
  if (r != ncclSuccess)
    wsn_last_error("%s", s->why);
  hand_over(s);
  parent_done(s, r);
  free(s);
  return NULL;
}

/* The child's blocking attribute: the config's (parseCommConfig), or with
 * none the parent's (copyCommConfig), NCCL_COMM_BLOCKING over either. */
static ncclResult_t child_config(struct ncclComm *p, int color, const ncclConfig_t *config,
                                 int *blocking, char *name, size_t len)
{
  snprintf(name, len, "%.40s.split%d", p->name, color);
  if (!config) {
    *blocking = env_blocking(p->blocking);
    return ncclSuccess;
  }
  return read_config(config, blocking, name, len, "ncclCommSplit");
}

static void split_send(struct split *s)
{
  struct ncclComm *p = s->parent;
  struct wsn_hdr h;
  int i;

  if (fault_init_absent)
    return;
  for (i = 0; i < p->nranks; i++) {
    if (i == p->rank)
      continue;
    memset(&h, 0, sizeof(h));
    h.kind = WSN_SPLIT;
    h.seq = s->seq;
    h.color = s->color;
    h.key = s->key;
    wsn_send(p, i, &h, &s->me, sizeof(s->me));
  }
}

static struct split *split_new(struct ncclComm *p, int color, int key, ncclComm_t *newcomm)
{
  struct split *s = calloc(1, sizeof(*s));

  if (!s)
    return NULL;
  s->parent = p;
  s->newcomm = newcomm;
  s->color = color;
  s->key = key;
  s->nonblocking = !p->blocking;
  s->me.rank = p->rank;
  s->me.physical = p->physical;
  s->me.pid = (int)getpid();
  wsn_hostid(s->me.hostid, sizeof(s->me.hostid));
  return s;
}

static ncclResult_t split_child(struct split *s, const char *name, int blocking)
{
  struct ncclComm *p = s->parent, *c = new_comm(name, blocking, p->ordinal);

  if (!c || (c->listen_fd = wsn_listen(c->listen_path)) < 0)
    return fail(p, ncclSystemError, "ncclCommSplit: no socket");
  snprintf(c->parent, sizeof(c->parent), "%s", p->name);
  c->busy = 1;
  c->abort_with = p;
  memcpy(s->me.path, c->listen_path, sizeof(s->me.path));
  s->child = c;
  return ncclSuccess;
}

static ncclResult_t split_blocking(struct split *s)
{
  ncclResult_t r = split_run(s);

  child_done(s, r);
  hand_over(s);
  if (r != ncclSuccess)
    fail(NULL, r, "%s", s->why);
  free(s);
  return r;
}

static ncclResult_t split_nonblocking(struct split *s)
{
  struct ncclComm *p = s->parent;

  wsi_lock();
  p->state = ncclInProgress;
  p->split_busy = 1;
  p->polled = 0;
  wsi_unlock();
  s->watch = watch_handle(s->newcomm, p);
  if (start(split_thread, s) != 0)
    wsi_violation("out of threads", "ncclCommSplit could not start its thread");
  /* The last touch of s here: the thread may free it from now on. */
  wsi_lock();
  s->returned = 1;
  wsi_broadcast();
  wsi_unlock();
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
  struct split *s;
  uint64_t pending;
  char name[64];
  int blocking;
  ncclResult_t r;

  ENTER("ncclCommSplit", V(2, 18));
  if (!comm || !newcomm)
    return fail(NULL, ncclInvalidArgument, "ncclCommSplit: %s argument is NULL",
                comm ? "newcomm" : "comm");
  if (group_depth > 0)
    return fail(NULL, ncclInvalidUsage,
                "ncclCommSplit inside ncclGroupStart/ncclGroupEnd: "
                "not in the weft stand-in");
  usable(comm, "ncclCommSplit", 0);
  wsi_lock();
  pending = comm->issued - comm->done;
  wsi_unlock();
  if (pending)
    wsi_violation("split with queued operations",
                  "ncclCommSplit of communicator %s while %llu operation(s) queued on it have not "
                  "completed: NCCL documents that splitting a communicator with outstanding "
                  "operations may deadlock; wait for them to finish first",
                  comm->name, (unsigned long long)pending);
  if (color < NCCL_SPLIT_NOCOLOR)
    return fail(comm, ncclInvalidArgument, "ncclCommSplit: colour %d", color);
  /* "*newcomm should be NCCL_COMM_NULL until comm split fully complete." */
  *newcomm = NULL;
  if (color != NCCL_SPLIT_NOCOLOR &&
      (r = child_config(comm, color, config, &blocking, name, sizeof(name))) != ncclSuccess)
    return r;
  s = split_new(comm, color, key, newcomm);
  if (!s)
    return fail(comm, ncclSystemError, "out of memory");
  if (color != NCCL_SPLIT_NOCOLOR && (r = split_child(s, name, blocking)) != ncclSuccess) {
    free(s);
    return r;
  }
  wsi_lock();
  s->seq = ++comm->split_seq;
  wsi_unlock();
  split_send(s);
  return s->nonblocking ? split_nonblocking(s) : split_blocking(s);
}

/* ---- the rest of a communicator's life ---- */

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *st)
{
  QUERY("ncclCommGetAsyncError", V(2, 4));
  if (!c || !st)
    return fail(NULL, ncclInvalidArgument, "ncclGetAsyncError: %s argument is NULL",
                c ? "asyncError" : "comm");
  alive(c, "ncclCommGetAsyncError");
  wsi_lock();
  if (c->state == ncclInProgress) {
    *st = ncclInProgress;
    if (!c->polled) {
      c->polled = 1;
      wsi_broadcast();
    }
  } else if (c->error != ncclSuccess) {
    *st = c->error;
    c->error_seen = 1;
  } else if (c->settle) {
    c->settle--;
    *st = c->settle ? ncclInProgress : ncclSuccess;
  } else {
    *st = ncclSuccess;
  }
  wsi_unlock();
  return ncclSuccess;
}

/* Wait until every operation queued on c has run, then say so to the peers. */
static void drain_and_fin(struct ncclComm *c)
{
  int p;

  wsi_lock();
  while (c->done < c->issued && !c->local_abort)
    wsi_wait();
  wsi_unlock();
  for (p = 0; c->peers && p < c->nranks; p++)
    if (p != c->rank) {
      struct wsn_hdr h;
      memset(&h, 0, sizeof(h));
      h.kind = WSN_FIN;
      wsn_send(c, p, &h, NULL, 0);
    }
  wsi_lock();
  c->finalized = 1;
  wsi_unlock();
}

static void *finalize_thread(void *arg)
{
  struct ncclComm *c = arg;

  drain_and_fin(c);
  wsi_lock();
  c->state = ncclSuccess;
  c->busy = 0;
  wsi_broadcast();
  wsi_unlock();
  return NULL;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t c)
{
  ENTER("ncclCommFinalize", V(2, 14));
  if (!c)
    return ncclSuccess;
  usable(c, "ncclCommFinalize", 1);
  if (c->blocking) {
    drain_and_fin(c);
    return ncclSuccess;
  }
  wsi_lock();
  c->state = ncclInProgress;
  c->busy = 1;
  wsi_unlock();
  if (start(finalize_thread, c) != 0)
    finalize_thread(c);
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c)
{
  ENTER("ncclCommDestroy", V(2, 0));
  if (!c)
    return ncclSuccess;
  usable(c, "ncclCommDestroy", 1);
  if (!c->finalized)
    drain_and_fin(c);
  wsn_close(c, 0);
  wsi_lock();
  c->magic = WSN_DEAD;
  c->destroyed = 1;
  wsi_unlock();
  wsi_log("nccl comm %s rank %d destroyed", c->name, c->rank);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t c)
{
  int p;

  ENTER("ncclCommAbort", V(2, 4));
  if (!c)
    return ncclSuccess;
  alive(c, "ncclCommAbort");
  wsi_lock();
  c->local_abort = 1;
  wsi_broadcast();
  while (c->busy || c->split_busy)
    wsi_wait();
  wsi_unlock();
  for (p = 0; c->peers && p < c->nranks; p++)
    if (p != c->rank) {
      struct wsn_hdr h;
      memset(&h, 0, sizeof(h));
      h.kind = WSN_ABORT;
      wsn_send(c, p, &h, NULL, 0);
    }
  wsn_close(c, 1);
  wsi_lock();
  c->magic = WSN_DEAD;
  wsi_broadcast();
  wsi_unlock();
  wsi_log("nccl comm %s rank %d aborted", c->name, c->rank);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t c, int *count)
{
  ncclResult_t r;

  QUERY("ncclCommCount", V(2, 0));
  if (!c || !count)
    return fail(NULL, ncclInvalidArgument, "ncclCommCount: NULL argument");
  if ((r = ready(c, "ncclCommCount")) != ncclSuccess)
    return r;
  *count = c->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *device)
{
  ncclResult_t r;

  QUERY("ncclCommCuDevice", V(2, 0));
  if (!c || !device)
    return fail(NULL, ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
  if ((r = ready(c, "ncclCommCuDevice")) != ncclSuccess)
    return r;
  *device = c->ordinal;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t c, int *rank)
{
  ncclResult_t r;

  QUERY("ncclCommUserRank", V(2, 0));
  if (!c || !rank)
    return fail(NULL, ncclInvalidArgument, "ncclCommUserRank: NULL argument");
  if ((r = ready(c, "ncclCommUserRank")) != ncclSuccess)
    return r;
  *rank = c->rank;
  return ncclSuccess;
}

/* Every version has it; it answers for a version too old for weft too. */
EXPORT ncclResult_t ncclGetVersion(int *version)
{
  if (!version)
    return ncclInvalidArgument;
  *version = wsn_version();
  return ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

/* init.cc: "comm is currently unused and can be set to NULL"; the text is
 * debug.cc's ncclLastError, the last WARN of any thread. */
EXPORT const char *ncclGetLastError(ncclComm_t c)
{
  QUERY("ncclGetLastError", V(2, 13));
  (void)c;
  return last_error;
}

EXPORT ncclResult_t ncclMemAlloc(void **p, size_t bytes)
{
  ENTER("ncclMemAlloc", V(2, 19));
  if (!p)
    return fail(NULL, ncclInvalidArgument, "ncclMemAlloc: ptr argument is NULL");
  wsi_context(wsi_current(), "ncclMemAlloc");
  *p = wsi_malloc_device(wsi_current(), bytes);
  return *p ? ncclSuccess : fail(NULL, ncclUnhandledCudaError, "ncclMemAlloc: out of memory");
}

EXPORT ncclResult_t ncclMemFree(void *p)
{
  ENTER("ncclMemFree", V(2, 19));
  if (p && wsi_free(p, WSI_DEVICE) != 0)
    wsi_violation("ncclMemFree of memory ncclMemAlloc did not return", "ncclMemFree(%p)", p);
  return ncclSuccess;
}

/* NCCL's profiling names (pncclX) are the same functions. */
PALIAS(ncclAllReduce);
PALIAS(ncclBroadcast);
PALIAS(ncclBcast);
PALIAS(ncclReduce);
PALIAS(ncclAllGather);
PALIAS(ncclReduceScatter);
PALIAS(ncclSend);
PALIAS(ncclRecv);
PALIAS(ncclGroupStart);
PALIAS(ncclGroupEnd);
PALIAS(ncclGetUniqueId);
PALIAS(ncclCommInitRankConfig);
PALIAS(ncclCommInitRank);
PALIAS(ncclCommInitRankScalable);
PALIAS(ncclCommInitAll);
PALIAS(ncclCommSplit);
PALIAS(ncclCommGetAsyncError);
PALIAS(ncclCommFinalize);
PALIAS(ncclCommDestroy);
PALIAS(ncclCommAbort);
PALIAS(ncclCommCount);
PALIAS(ncclCommCuDevice);
PALIAS(ncclCommUserRank);
PALIAS(ncclGetVersion);
PALIAS(ncclGetErrorString);
PALIAS(ncclGetLastError);
PALIAS(ncclMemAlloc);
PALIAS(ncclMemFree);
