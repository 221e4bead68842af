/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL API of the stand-in (libnccl.so.2): communicators (blocking and
 * non-blocking init, split, finalize, destroy, abort, asynchronous errors),
 * collectives, send/recv and groups, with real reductions, across processes.
 *
 * Strict: what NCCL documents as a precondition and weft relies on is
 * checked, and a broken one ends the process with the rule's words:
 *  - two ranks of one communicator on one device (same host, same bus id);
 *  - ncclCommSplit while operations queued on the parent have not completed;
 *  - ncclCommFinalize or ncclCommDestroy (or the end of the process) instead
 *    of ncclCommAbort on a communicator that another rank aborted (NCCL 2.28:
 *    every active rank must call ncclCommAbort); a call queued there before
 *    this rank learned of it hangs until it aborts, as on a GPU;
 *  - any call but ncclCommAbort once ncclCommGetAsyncError has reported an
 *    asynchronous error (and ending it cleanly after one);
 *  - a call on a non-blocking communicator before the previous one settled
 *    (ncclCommGetAsyncError said ncclSuccess), or before init finished;
 *  - buffers that are not device memory, or memory of another device; a
 *    stream of another device; ranks that disagree on a collective.
 *
 * Faults for tests (WEFT_STANDIN_NCCL_FAULT, a comma-separated list; R is the
 * process's MPI world rank, N counts the NCCL operations that process
 * queues, from 1):
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
#include "nccl-standin.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define PALIAS(name) extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))

enum coll { C_ALLREDUCE, C_BROADCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, C_SEND, C_RECV };
static const char *const coll_names[] = {"ncclAllReduce", "ncclBroadcast", "ncclReduce",
                                         "ncclAllGather", "ncclReduceScatter", "ncclSend",
                                         "ncclRecv"};

enum { FAULT_NONE, FAULT_HANG, FAULT_ERROR, FAULT_LATE };

struct wsn_op {
  struct ncclComm *c;
  int coll;
  const void *send_dev;
  void *recv_dev;
  char *send, *recv;          /* where the bytes are */
  size_t send_bytes, recv_bytes, count;
  ncclDataType_t dt;
  ncclRedOp_t op;
  int root, peer, fault;
  uint64_t exec, seq;
};

struct pending {
  struct wsn_op *o;
  cudaStream_t stream;
};

/* Also in libcuda.so.1; each library says what it is. */
EXPORT const char weft_standin_marker[] = "weft stand-in, not a GPU";

static struct ncclComm *all_comms;
static char last_error[256];
static __thread int group_depth;
static __thread struct pending *group_ops;
static __thread size_t group_n, group_cap;

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static int fault_init_absent;
static uint64_t fault_hang_at, fault_error_at, fault_late_at, fault_held_at, ops_count;

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
  fprintf(stderr, "weft-standin: WEFT_STANDIN_NCCL_FAULT=%s: use init-absent:RANK, "
          "hang:RANK:N, async-error:RANK:N, late:RANK:N or held:RANK:N, separated by commas\n",
          getenv("WEFT_STANDIN_NCCL_FAULT"));
  exit(2);
}

static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...) WSI_PRINTF(3, 4);

static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  if (c && c->magic == WSN_MAGIC) {
    wsi_lock();
    memcpy(c->why, last_error, sizeof(c->why));
    wsi_unlock();
  }
  return r;
}

/* ---- rules ---- */

static void alive(struct ncclComm *c, const char *fn)
{
  if (c->magic == WSN_DEAD)
    wsi_violation("use of a destroyed communicator",
                  "%s on communicator %s after ncclCommDestroy or ncclCommAbort", fn, c->name);
  if (c->magic != WSN_MAGIC)
    wsi_violation("not a communicator", "%s: %p is not a communicator", fn, (void *)c);
}

/* Everything but abort and the queries goes through this; ends: the call is
 * ncclCommFinalize or ncclCommDestroy, which end a communicator cleanly.
 * A rank cannot know when another aborts, nor when an error strikes while
 * it queues a call: queuing one then is no fault (it hangs, as on a GPU,
 * until this rank aborts too). Queuing after ncclCommGetAsyncError said
 * there was an error is, and so is ending cleanly instead of aborting. */
static void usable(struct ncclComm *c, const char *fn, int ends)
{
  int peer, settle, fin, seen;
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
  memcpy(why, c->why, sizeof(why));
  wsi_unlock();
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
    wsi_violation("communicator not ready",
                  "%s on communicator %s while its init, split or finalize is in progress "
                  "(ncclCommGetAsyncError still says ncclInProgress)",
                  fn, c->name);
  if (settle)
    wsi_violation("non-blocking call not settled",
                  "%s on communicator %s while its previous call is in progress: with a "
                  "non-blocking communicator, poll ncclCommGetAsyncError until ncclSuccess "
                  "before the next call",
                  fn, c->name);
  if (fin && strcmp(fn, "ncclCommDestroy") != 0)
    wsi_violation("use after ncclCommFinalize", "%s on communicator %s after ncclCommFinalize",
                  fn, c->name);
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

/* ---- operations ---- */

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

/* Every peer's message of this collective (mine: NULL); 0, or -1 when one
 * cannot come. Checks that the peers call the same thing. */
static int gather(const struct wsn_op *o, struct wsn_msg **in, int from_root_only)
{
  struct ncclComm *c = o->c;
  int p;

  for (p = 0; p < c->nranks; p++) {
    in[p] = NULL;
    if (p == c->rank || (from_root_only && p != o->root))
      continue;
    in[p] = wsn_take(c, p, WSN_COLL, o->seq, NULL);
    if (!in[p])
      return -1;
    if (in[p]->h.coll != o->coll || in[p]->h.count != o->count || in[p]->h.dtype != (int)o->dt ||
        in[p]->h.op != (int)o->op || in[p]->h.root != o->root)
      disagree(o, &in[p]->h);
  }
  return 0;
}

static void scatter(const struct wsn_op *o, const void *data, size_t bytes, int only)
{
  struct ncclComm *c = o->c;
  int p;

  for (p = 0; p < c->nranks; p++) {
    struct wsn_hdr h;
    if (p == c->rank || (only >= 0 && p != only))
      continue;
    memset(&h, 0, sizeof(h));
    h.kind = WSN_COLL;
    h.seq = o->seq;
    h.count = o->count;
    h.coll = o->coll;
    h.dtype = (int)o->dt;
    h.op = (int)o->op;
    h.root = o->root;
    wsn_send(c, p, &h, data, bytes);
  }
}

static void execute(struct wsn_op *o)
{
  struct ncclComm *c = o->c;
  size_t es = wsn_type_size(o->dt), n = o->count * es, N = (size_t)c->nranks;
  struct wsn_msg **in = calloc(N, sizeof(*in));
  char *tmp = NULL;
  size_t p;

  if (!in)
    wsi_violation("out of memory", "%s", coll_names[o->coll]);
  switch (o->coll) {
  case C_ALLREDUCE:
  case C_REDUCE:
    if (o->coll == C_REDUCE && c->rank != o->root) {
      scatter(o, o->send, n, o->root);
      break;
    }
    if (o->coll == C_ALLREDUCE)
      scatter(o, o->send, n, -1);
    if (gather(o, in, 0) != 0)
      break;
    tmp = malloc(n);
    if (!tmp)
      wsi_violation("out of memory", "%s", coll_names[o->coll]);
    memcpy(tmp, c->rank == 0 ? o->send : in[0]->data, n);
    for (p = 1; p < N; p++)
      wsn_reduce(tmp, (int)p == c->rank ? o->send : in[p]->data, o->count, o->dt, o->op);
    if (o->op == ncclAvg)
      wsn_divide(tmp, o->count, o->dt, c->nranks);
    memcpy(o->recv, tmp, n);
    break;
  case C_BROADCAST:
    if (c->rank == o->root) {
      scatter(o, o->send, n, -1);
      memmove(o->recv, o->send, n);
    } else if (gather(o, in, 1) == 0) {
      memcpy(o->recv, in[o->root]->data, n);
    }
    break;
  case C_ALLGATHER:
    scatter(o, o->send, n, -1);
    if (gather(o, in, 0) != 0)
      break;
    tmp = malloc(n * N);
    if (!tmp)
      wsi_violation("out of memory", "%s", coll_names[o->coll]);
    for (p = 0; p < N; p++)
      memcpy(tmp + p * n, (int)p == c->rank ? o->send : in[p]->data, n);
    memcpy(o->recv, tmp, n * N);
    break;
  case C_REDUCESCATTER:
    scatter(o, o->send, n * N, -1);
    if (gather(o, in, 0) != 0)
      break;
    tmp = malloc(n);
    if (!tmp)
      wsi_violation("out of memory", "%s", coll_names[o->coll]);
    memcpy(tmp, (c->rank == 0 ? o->send : in[0]->data) + (size_t)c->rank * n, n);
    for (p = 1; p < N; p++)
      wsn_reduce(tmp, ((int)p == c->rank ? o->send : in[p]->data) + (size_t)c->rank * n,
                 o->count, o->dt, o->op);
    if (o->op == ncclAvg)
      wsn_divide(tmp, o->count, o->dt, c->nranks);
    memcpy(o->recv, tmp, n);
    break;
  case C_SEND: {
    struct wsn_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = WSN_P2P;
    h.seq = o->seq;
    h.count = o->count;
    h.dtype = (int)o->dt;
    wsn_send(c, o->peer, &h, o->send, n);
    break;
  }
  case C_RECV: {
    struct wsn_msg *m = wsn_take(c, o->peer, WSN_P2P, o->seq, NULL);
    if (!m)
      break;
    if (m->h.count != o->count || m->h.dtype != (int)o->dt)
      wsi_violation("send and receive disagree",
                    "ncclRecv %llu of %zu %s from rank %d of communicator %s matched an ncclSend "
                    "of %llu %s",
                    (unsigned long long)o->seq, o->count, wsn_type_name(o->dt), o->peer, c->name,
                    (unsigned long long)m->h.count, wsn_type_name((ncclDataType_t)m->h.dtype));
    memcpy(o->recv, m->data, n);
    wsn_msg_free(m);
    break;
  }
  default:
    break;
  }
  for (p = 0; p < N; p++)
    wsn_msg_free(in[p]);
  free(in);
  free(tmp);
}

static void op_run(void *arg)
{
  struct wsn_op *o = arg;
  struct ncclComm *c = o->c;
  int skip;

  wsi_lock();
  while (c->exec_next + 1 != o->exec && !c->local_abort)
    wsi_wait();
  skip = c->local_abort || c->error != ncclSuccess;
  if (!skip && o->fault == FAULT_ERROR) {
    c->error = ncclSystemError;
    snprintf(c->why, sizeof(c->why), "injected asynchronous error in %s (WEFT_STANDIN_NCCL_FAULT)",
             coll_names[o->coll]);
    wsi_log("nccl fault async-error in %s on %s", coll_names[o->coll], c->name);
    skip = 1;
  }
  if (!skip && o->fault == FAULT_HANG) {
    wsi_log("nccl fault hang in %s on %s", coll_names[o->coll], c->name);
    while (!c->local_abort)
      wsi_wait();
    skip = 1;
  }
  wsi_unlock();
  if (!skip)
    execute(o);
  if (!skip && o->fault == FAULT_LATE) {
    wsi_log("nccl fault late in %s on %s", coll_names[o->coll], c->name);
    sleep(1);
  }
  wsi_lock();
  c->exec_next++;
  c->done++;
  wsi_broadcast();
  wsi_unlock();
  free(o);
}

/* Queue o on stream; returns its place in the communicator's order when the
 * held fault is on it (the caller then waits for it), else 0. */
static uint64_t launch(struct wsn_op *o, cudaStream_t stream)
{
  const char *fn = coll_names[o->coll];
  struct ncclComm *c = o->c;
  struct wsi_range r[2];
  wsi_stream *s = wsi_stream_get(stream, fn);
  char sname[96];
  int nr = 0;
  uint64_t held;

  if (wsi_stream_physical(s) != c->physical)
    wsi_violation("stream of another device",
                  "%s on communicator %s (device %d) on %s", fn, c->name, c->ordinal,
                  wsi_stream_name(s, sname, sizeof(sname)));
  if (o->send_bytes)
    r[nr++] = (struct wsi_range){o->send_dev, o->send_bytes, 0};
  if (o->recv_bytes)
    r[nr++] = (struct wsi_range){o->recv_dev, o->recv_bytes, 1};
  wsi_lock();
  o->exec = ++c->issued;
  if (o->coll == C_SEND)
    o->seq = ++c->p2p_send[o->peer];
  else if (o->coll == C_RECV)
    o->seq = ++c->p2p_recv[o->peer];
  else
    o->seq = ++c->coll_seq;
  ops_count++;
  o->fault = ops_count == fault_hang_at ? FAULT_HANG
             : ops_count == fault_error_at ? FAULT_ERROR
             : ops_count == fault_late_at  ? FAULT_LATE : FAULT_NONE;
  held = ops_count == fault_held_at ? o->exec : 0;
  wsi_unlock();
  wsi_enqueue(s, fn, r, nr, op_run, o); /* o is the stream's from here */
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

static ncclResult_t operation(int coll, const void *send, void *recv, size_t count,
                              ncclDataType_t dt, ncclRedOp_t op, int root, int peer,
                              struct ncclComm *c, cudaStream_t stream)
{
  const char *fn = coll_names[coll];
  struct wsn_op *o;
  size_t es, n;
  uint64_t exec;
  int reduces = coll == C_ALLREDUCE || coll == C_REDUCE || coll == C_REDUCESCATTER;

  wsi_api(fn);
  pthread_once(&fault_once, parse_faults);
  if (!c)
    return fail(NULL, ncclInvalidArgument, "%s: comm is NULL", fn);
  usable(c, fn, 0);
  es = wsn_type_size(dt);
  if (!es)
    return fail(c, ncclInvalidArgument, "%s: data type %d is not one the stand-in has", fn, (int)dt);
  if (reduces && ((int)op < 0 || (int)op >= ncclNumOps))
    return fail(c, ncclInvalidArgument, "%s: reduction operation %d", fn, (int)op);
  if (!reduces)
    op = ncclSum;
  if ((coll == C_BROADCAST || coll == C_REDUCE) && (root < 0 || root >= c->nranks))
    return fail(c, ncclInvalidArgument, "%s: root %d of %d ranks", fn, root, c->nranks);
  if (coll != C_BROADCAST && coll != C_REDUCE)
    root = -1;
  if ((coll == C_SEND || coll == C_RECV) && (peer < 0 || peer >= c->nranks || peer == c->rank))
    return fail(c, ncclInvalidArgument, "%s: peer %d of %d ranks (this is rank %d)", fn, peer,
                c->nranks, c->rank);
  if (count == 0)
    return c->blocking || group_depth ? ncclSuccess : queued(c);
  o = calloc(1, sizeof(*o));
  if (!o)
    return fail(c, ncclSystemError, "%s: out of memory", fn);
  o->c = c;
  o->coll = coll;
  o->count = count;
  o->dt = dt;
  o->op = op;
  o->root = root;
  o->peer = peer;
  n = count * es;
  switch (coll) {
  case C_ALLREDUCE: o->send_bytes = n; o->recv_bytes = n; break;
  case C_BROADCAST: o->send_bytes = c->rank == root ? n : 0; o->recv_bytes = n; break;
  case C_REDUCE: o->send_bytes = n; o->recv_bytes = c->rank == root ? n : 0; break;
  case C_ALLGATHER: o->send_bytes = n; o->recv_bytes = n * (size_t)c->nranks; break;
  case C_REDUCESCATTER: o->send_bytes = n * (size_t)c->nranks; o->recv_bytes = n; break;
  case C_SEND: o->send_bytes = n; break;
  default: o->recv_bytes = n; break;
  }
  o->send_dev = send;
  o->recv_dev = recv;
  o->send = device_bytes(c, send, o->send_bytes, fn, "sendbuff");
  o->recv = device_bytes(c, recv, o->recv_bytes, fn, "recvbuff");
  if (group_depth > 0) {
    if (group_n == group_cap) {
      size_t cap = group_cap ? 2 * group_cap : 16;
      struct pending *g = realloc(group_ops, cap * sizeof(*g));
      if (!g)
        wsi_violation("out of memory", "ncclGroupStart");
      group_ops = g;
      group_cap = cap;
    }
    group_ops[group_n].o = o;
    group_ops[group_n].stream = stream;
    group_n++;
    return ncclSuccess;
  }
  if ((exec = launch(o, stream)) != 0)
    hold(c, fn, exec);
  return queued(c);
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_ALLREDUCE, s, r, count, dt, op, -1, -1, comm, stream);
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt,
                                  int root, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_BROADCAST, s, r, count, dt, ncclSum, root, -1, comm, stream);
}

EXPORT ncclResult_t ncclBcast(void *buf, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                              cudaStream_t stream)
{
  return operation(C_BROADCAST, buf, buf, count, dt, ncclSum, root, -1, comm, stream);
}

EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_REDUCE, s, r, count, dt, op, root, -1, comm, stream);
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt,
                                  ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_ALLGATHER, s, r, count, dt, ncclSum, -1, -1, comm, stream);
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_REDUCESCATTER, s, r, count, dt, op, -1, -1, comm, stream);
}

EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
  return operation(C_SEND, s, NULL, count, dt, ncclSum, -1, peer, comm, stream);
}

EXPORT ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                             cudaStream_t stream)
{
  return operation(C_RECV, NULL, r, count, dt, ncclSum, -1, peer, comm, stream);
}

/* nccl.h declares these two as f(), which is no prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
EXPORT ncclResult_t ncclGroupStart(void)
{
  wsi_api("ncclGroupStart");
  group_depth++;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
  ncclResult_t r = ncclSuccess;
  size_t i;
  int pass;

  wsi_api("ncclGroupEnd");
  if (group_depth == 0)
    return fail(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0)
    return ncclSuccess;
  /* A non-blocking communicator in the group makes the group in progress
   * (looked at before the launch: a launched operation may be freed). */
  for (i = 0; i < group_n; i++) {
    struct ncclComm *c = group_ops[i].o->c;
    if (!c->blocking) {
      wsi_lock();
      c->settle = 2;
      wsi_unlock();
      r = ncclInProgress;
    }
  }
  /* Sends first: they never wait, so a group of sends and receives in any
   * order completes, as NCCL's does. */
  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < group_n; i++)
      if (group_ops[i].o && (pass == 1 || group_ops[i].o->coll == C_SEND)) {
        launch(group_ops[i].o, group_ops[i].stream);
        group_ops[i].o = NULL;
      }
  group_n = 0;
  return r;
}
#pragma GCC diagnostic pop

/* ---- communicators ---- */

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

/* The blocking attribute and name from a config (NULL: defaults). */
static void read_config(const ncclConfig_t *config, int *blocking, char *name, size_t len,
                        const char *fn)
{
  if (!config)
    return;
  if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, commName) + sizeof(char *))
    wsi_violation("ncclConfig_t not initialised",
                  "%s: the config was not set up with NCCL_CONFIG_INITIALIZER", fn);
  if (config->blocking != NCCL_CONFIG_UNDEF_INT)
    *blocking = config->blocking != 0;
  if (config->commName)
    snprintf(name, len, "%s", config->commName);
}

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
  if (r == ncclSuccess)
    wsi_log("nccl comm %s rank %d/%d device %d up", c->name, c->rank, c->nranks, c->ordinal);
  else
    wsi_log("nccl comm %s rank %d/%d failed: %s", c->name, c->rank, c->nranks, c->why);
}

static void wait_for_abort(struct ncclComm *c)
{
  wsi_lock();
  while (!c->local_abort)
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

static void *init_thread(void *arg)
{
  struct init *in = arg;

  finish(in->c, init_run(in->c, in->root));
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

  wsi_api("ncclGetUniqueId");
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

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config)
{
  struct wsn_id w;
  struct ncclComm *c;
  struct init *in;
  char name[64];
  int blocking = 1, ordinal = wsi_current();
  static unsigned long n;

  wsi_api("ncclCommInitRankConfig");
  pthread_once(&fault_once, parse_faults);
  if (!comm)
    return fail(NULL, ncclInvalidArgument, "ncclCommInitRankConfig: comm is NULL");
  *comm = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(NULL, ncclInvalidArgument, "ncclCommInitRankConfig: rank %d of %d", rank, nranks);
  snprintf(name, sizeof(name), "comm%lu", ++n);
  read_config(config, &blocking, name, sizeof(name), "ncclCommInitRankConfig");
  memcpy(&w, id.internal, sizeof(w));
  if (memcmp(w.magic, "WSNID01", 8) != 0)
    return fail(NULL, ncclInvalidArgument, "ncclCommInitRankConfig: not a unique id from this "
                "stand-in's ncclGetUniqueId");
  if (wsi_physical(ordinal) < 0)
    return fail(NULL, ncclUnhandledCudaError, "ncclCommInitRankConfig: no current CUDA device");
  wsi_context(ordinal, "ncclCommInitRankConfig");
  c = new_comm(name, blocking, ordinal);
  if (!c)
    return fail(NULL, ncclSystemError, "out of memory");
  c->rank = rank;
  c->nranks = nranks;
  c->busy = 1;
  if (blocking) {
    ncclResult_t r = init_run(c, w.path);
    finish(c, r);
    if (r != ncclSuccess) {
      wsn_close(c, 1);
      c->magic = WSN_DEAD;
      return fail(NULL, r, "%s", c->why);
    }
    *comm = c;
    return ncclSuccess;
  }
  in = calloc(1, sizeof(*in));
  if (!in)
    return fail(NULL, ncclSystemError, "out of memory");
  in->c = c;
  memcpy(in->root, w.path, sizeof(in->root));
  *comm = c;
  if (start(init_thread, in) != 0) {
    free(in);
    finish(c, fail(c, ncclSystemError, "cannot start the init thread"));
  }
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
  return ncclCommInitRankConfig(comm, nranks, id, rank, NULL);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
  (void)comm, (void)ndev, (void)devlist;
  return fail(NULL, ncclInvalidUsage, "ncclCommInitAll: not in the weft stand-in");
}

struct split {
  struct ncclComm *parent, *child;
  uint64_t seq;
  int color, key;
  struct wsn_hello me;
};

static ncclResult_t split_run(struct split *s)
{
  struct ncclComm *p = s->parent, *c = s->child;
  int N = p->nranks, i, k, n = 0;
  struct wsn_hello *all = calloc((size_t)N, sizeof(*all)), *table = calloc((size_t)N, sizeof(*table));
  int *color = calloc((size_t)N, sizeof(int)), *key = calloc((size_t)N, sizeof(int));
  int *order = calloc((size_t)N, sizeof(int));
  ncclResult_t r = ncclSuccess;

  if (!all || !table || !color || !key || !order) {
    r = ncclSystemError;
    goto out;
  }
  if (fault_init_absent) {
    wait_for_abort(c);
    r = ncclSystemError;
    goto out;
  }
  for (i = 0; i < N; i++) {
    struct wsn_msg *m;
    if (i == p->rank) {
      all[i] = s->me;
      color[i] = s->color;
      key[i] = s->key;
      continue;
    }
    m = wsn_take(p, i, WSN_SPLIT, s->seq, c);
    if (!m || m->h.bytes != sizeof(all[i])) {
      wsn_msg_free(m);
      snprintf(c->why, sizeof(c->why), "rank %d of %s never split (closed %d, aborted %d, error "
               "%d, abort here %d)", i, p->name, p->peers[i].closed, p->peers[i].aborted,
               (int)p->error, c->local_abort);
      r = ncclSystemError;
      goto out;
    }
    memcpy(&all[i], m->data, sizeof(all[i]));
    color[i] = m->h.color;
    key[i] = m->h.key;
    wsn_msg_free(m);
  }
  /* Members of our colour, by key, then by parent rank. */
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
out:
  free(all);
  free(table);
  free(color);
  free(key);
  free(order);
  return r;
}

static void *split_thread(void *arg)
{
  struct split *s = arg;

  finish(s->child, split_run(s));
  free(s);
  return NULL;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
  struct ncclComm *c;
  struct split *s;
  struct wsn_hdr h;
  uint64_t pending;
  char name[64];
  int blocking, i;

  wsi_api("ncclCommSplit");
  pthread_once(&fault_once, parse_faults);
  if (!comm || !newcomm)
    return fail(NULL, ncclInvalidArgument, "ncclCommSplit: NULL argument");
  *newcomm = NULL;
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
  blocking = comm->blocking;
  snprintf(name, sizeof(name), "%.40s.split%d", comm->name, color);
  read_config(config, &blocking, name, sizeof(name), "ncclCommSplit");
  s = calloc(1, sizeof(*s));
  if (!s)
    return fail(comm, ncclSystemError, "out of memory");
  s->parent = comm;
  s->color = color;
  s->key = key;
  s->me.rank = comm->rank;
  s->me.physical = comm->physical;
  s->me.pid = (int)getpid();
  wsn_hostid(s->me.hostid, sizeof(s->me.hostid));
  if (color != NCCL_SPLIT_NOCOLOR) {
    c = new_comm(name, blocking, comm->ordinal);
    if (!c || (c->listen_fd = wsn_listen(c->listen_path)) < 0) {
      free(s);
      return fail(comm, ncclSystemError, "ncclCommSplit: no socket");
    }
    c->busy = 1;
    memcpy(s->me.path, c->listen_path, sizeof(s->me.path));
    s->child = c;
  }
  wsi_lock();
  s->seq = ++comm->split_seq;
  wsi_unlock();
  if (!fault_init_absent)
    for (i = 0; i < comm->nranks; i++) {
      if (i == comm->rank)
        continue;
      memset(&h, 0, sizeof(h));
      h.kind = WSN_SPLIT;
      h.seq = s->seq;
      h.color = color;
      h.key = key;
      wsn_send(comm, i, &h, &s->me, sizeof(s->me));
    }
  if (!s->child) {
    free(s);
    return ncclSuccess;
  }
  c = s->child;
  if (blocking) {
    ncclResult_t r = split_run(s);
    free(s);
    finish(c, r);
    if (r != ncclSuccess) {
      wsn_close(c, 1);
      c->magic = WSN_DEAD;
      return fail(comm, r, "%s", c->why);
    }
    *newcomm = c;
    return ncclSuccess;
  }
  *newcomm = c;
  if (start(split_thread, s) != 0) {
    free(s);
    finish(c, fail(c, ncclSystemError, "cannot start the split thread"));
  }
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *st)
{
  if (!c || !st)
    return ncclInvalidArgument;
  alive(c, "ncclCommGetAsyncError");
  wsi_lock();
  if (c->state == ncclInProgress)
    *st = ncclInProgress;
  else if (c->error != ncclSuccess) {
    *st = c->error;
    c->error_seen = 1;
  }
  else if (c->settle) {
    c->settle--;
    *st = c->settle ? ncclInProgress : ncclSuccess;
  } else
    *st = ncclSuccess;
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
  for (p = 0; p < c->nranks; p++)
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
  wsi_api("ncclCommFinalize");
  if (!c)
    return fail(NULL, ncclInvalidArgument, "ncclCommFinalize: NULL");
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
  wsi_api("ncclCommDestroy");
  if (!c)
    return fail(NULL, ncclInvalidArgument, "ncclCommDestroy: NULL");
  usable(c, "ncclCommDestroy", 1);
  if (!c->finalized)
    drain_and_fin(c);
  wsn_close(c, 0);
  wsi_lock();
  c->magic = WSN_DEAD;
  c->destroyed = 1;
  wsi_unlock();
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t c)
{
  int p;

  wsi_api("ncclCommAbort");
  if (!c)
    return ncclSuccess;
  alive(c, "ncclCommAbort");
  wsi_lock();
  c->local_abort = 1;
  wsi_broadcast();
  while (c->busy)
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
  if (!c || !count)
    return ncclInvalidArgument;
  alive(c, "ncclCommCount");
  *count = c->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *device)
{
  if (!c || !device)
    return ncclInvalidArgument;
  alive(c, "ncclCommCuDevice");
  *device = c->ordinal;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t c, int *rank)
{
  if (!c || !rank)
    return ncclInvalidArgument;
  alive(c, "ncclCommUserRank");
  *rank = c->rank;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetVersion(int *version)
{
  if (!version)
    return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
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

EXPORT const char *ncclGetLastError(ncclComm_t c)
{
  if (c && c->why[0])
    return c->why;
  return last_error;
}

EXPORT ncclResult_t ncclMemAlloc(void **p, size_t bytes)
{
  wsi_api("ncclMemAlloc");
  if (!p)
    return ncclInvalidArgument;
  wsi_context(wsi_current(), "ncclMemAlloc");
  *p = wsi_malloc_device(wsi_current(), bytes);
  return *p ? ncclSuccess : ncclUnhandledCudaError;
}

EXPORT ncclResult_t ncclMemFree(void *p)
{
  wsi_api("ncclMemFree");
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
