/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL backend: device buffers, ordered on the caller's stream. Each
 * call makes the rank's device current for its own work and puts back what
 * the thread had (nccl-comm.c), brings the group's communicator up at the
 * group's first device call (nccl-comm.c), looks at the group's calls in
 * flight and leaves this one in flight behind an event (nccl-flight.c): it
 * returns once NCCL has taken the call and never waits for the GPU, so the
 * caller's stream runs on and the call can be captured into a CUDA graph.
 * Sends and receives go through the group's communicator, and so do
 * all-to-all and batches of sends and receives: one ncclGroupStart/End each,
 * one call in flight.
 */
#include "nccl-private.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const ncclDataType_t nccl_types[WEFT_DTYPE_COUNT] = {
  ncclInt8, ncclUint8, ncclInt32, ncclInt64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
static const ncclRedOp_t nccl_ops[WEFT_OP_COUNT] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};

/* One device call from entry to return. */
struct call {
  weft_group *g;
  const char *fn;
  ncclComm_t comm;
  void *saved; /* the thread's CUDA context at entry */
  int watched; /* in flight behind events (not while the stream is captured) */
  int guarded; /* the watchdog watches the NCCL call itself (a blocking communicator) */
};

/* The device current, the communicator up, the calls in flight looked at. */
static int enter(struct call *c, weft_group *g, const char *fn, void *stream)
{
  int rc;

  memset(c, 0, sizeof(*c));
  c->g = g;
  c->fn = fn;
  if ((rc = weft__nc_device(g->ctx, &c->saved)) != 0)
    return rc;
  if ((rc = weft__nc_comm(g, &c->comm, fn)) != 0 || (rc = weft__nc_poll(g, fn, 0)) != 0 ||
      (rc = weft__fl_begin(g, stream, fn, &c->watched)) != 0) {
    weft__nc_device_put_back(c->saved);
    return rc;
  }
  /* A blocking communicator's call can block in the host (its first use
   * connects to the peers): with a deadline, the watchdog watches it. */
  c->guarded = ((struct weft__ncgroup *)g->nccl)->blocking && g->ctx->coll_timeout > 0;
  if (c->guarded)
    weft__fl_blocking_enter(g, fn, g->ctx->coll_timeout);
  return 0;
}

/* NCCL returned r: it took the call (settled), which is now in flight. b:
 * a batch's peers (peer WEFT__FL_BATCH), else NULL. */
static int taken_batch(struct call *c, ncclResult_t r, int peer, const struct weft__fl_batch *b,
                       void *stream)
{
  int rc;

  if (c->guarded)
    weft__fl_blocking_exit();
  c->guarded = 0;
  rc = weft__nc_settle(c->g, c->comm, r, c->fn);
  return rc ? rc : weft__fl_end(c->g, stream, c->fn, peer, b, c->watched);
}

static int taken(struct call *c, ncclResult_t r, int peer, void *stream)
{
  return taken_batch(c, r, peer, NULL, stream);
}

/* Back to the caller with rc; the thread's context put back. */
static int leave(struct call *c, int rc)
{
  if (c->guarded)
    weft__fl_blocking_exit();
  weft__nc_device_put_back(c->saved);
  return rc;
}

/* Device to device on the caller's stream (in-place forms, bucket packing). */
static int copy(weft_ctx *ctx, void *d, const void *s, size_t bytes, void *stream)
{
  cudaError_t e = cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);

  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return weft__rt_fail(ctx, WEFT_ECUDA, "cudaMemcpyAsync of %zu bytes failed: %s", bytes,
                         cudaGetErrorString(e));
  }
  return 0;
}

static int nc_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                        void *stream)
{
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "allreduce", stream)) != 0)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || n == 0)
    return leave(&c, rc);
  rc = taken(&c, ncclAllReduce(s, r, n, nccl_types[dt], nccl_ops[op], c.comm, (cudaStream_t)stream),
             -1, stream);
  return leave(&c, rc);
}

static int nc_broadcast(weft_group *g, void *buf, size_t n, weft_dtype dt, int root, void *stream)
{
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "broadcast", stream)) != 0)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || n == 0)
    return leave(&c, rc);
  rc = taken(&c, ncclBroadcast(buf, buf, n, nccl_types[dt], root, c.comm, (cudaStream_t)stream), -1,
             stream);
  return leave(&c, rc);
}

static int nc_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                        void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  char *mine = (char *)r + (size_t)g->rank * bytes;
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "allgather", stream)) != 0)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || n == 0)
    return leave(&c, rc);
  if (s == r && g->rank != 0) {
    if ((rc = copy(g->ctx, mine, r, bytes, stream)) != 0)
      return leave(&c, rc);
    s = mine;
  }
  rc = taken(&c, ncclAllGather(s, r, n, nccl_types[dt], c.comm, (cudaStream_t)stream), -1, stream);
  return leave(&c, rc);
}

static int nc_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op, void *stream)
{
  size_t bytes = n * weft_dtype_size(dt);
  char *mine = (char *)r + (size_t)g->rank * bytes;
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "reduce_scatter", stream)) != 0)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || n == 0)
    return leave(&c, rc);
  if (s == r && g->rank != 0) {
    /* Ours: the result at the start of the buffer; NCCL's in-place form
     * leaves it at our block, so move it afterwards. */
    rc = taken(
      &c, ncclReduceScatter(s, mine, n, nccl_types[dt], nccl_ops[op], c.comm, (cudaStream_t)stream),
      -1, stream);
    return leave(&c, rc ? rc : copy(g->ctx, r, mine, bytes, stream));
  }
  rc = taken(&c,
             ncclReduceScatter(s, r, n, nccl_types[dt], nccl_ops[op], c.comm, (cudaStream_t)stream),
             -1, stream);
  return leave(&c, rc);
}

/* Point to point on the group's communicator; peer is a group rank, which
 * is the peer's rank in it too. */
static int nc_send(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "send", stream)) != 0 || n == 0)
    return rc ? rc : leave(&c, 0);
  /* a token, so that a batch's deadline can tell whether we posted it */
  weft__p2p_post(g, peer, 1, &rc);
  if (rc != 0)
    return leave(&c, rc);
  rc =
    taken(&c, ncclSend(buf, n, nccl_types[dt], peer, c.comm, (cudaStream_t)stream), peer, stream);
  return leave(&c, rc);
}

static int nc_recv(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream)
{
  struct call c;
  int rc;

  if ((rc = enter(&c, g, "recv", stream)) != 0 || n == 0)
    return rc ? rc : leave(&c, 0);
  weft__p2p_post(g, peer, 0, &rc);
  if (rc != 0)
    return leave(&c, rc);
  rc =
    taken(&c, ncclRecv(buf, n, nccl_types[dt], peer, c.comm, (cudaStream_t)stream), peer, stream);
  return leave(&c, rc);
}

/* NCCL's first failure among the calls of a group, else ncclGroupEnd's
 * (ncclInProgress on a non-blocking communicator: the caller settles it). A
 * call inside a group only records its operation. */
static ncclResult_t first_error(ncclResult_t r, ncclResult_t e)
{
  return r != ncclSuccess && r != ncclInProgress ? r : e;
}

/* All-to-all as one group of sends and receives on the group's
 * communicator, the form nccl-tests' alltoall_perf and PyTorch use: ncclAllToAll
 * is not in every NCCL weft supports (2.14 on). Empty blocks are skipped, as
 * both sides know them to be empty; our own block is a send to ourselves,
 * which NCCL copies within the group. */
static int nc_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                       weft_dtype dt, void *stream)
{
  const char *fn = a->sc ? "alltoallv" : "alltoall";
  size_t es = weft_dtype_size(dt);
  ncclDataType_t t = nccl_types[dt];
  ncclResult_t res;
  struct call c;
  int j, rc;

  if ((rc = enter(&c, g, fn, stream)) != 0)
    return rc;
  if ((rc = weft__arrive(g)) != 0 || (!a->sc && a->n == 0))
    return leave(&c, rc);
  if ((res = ncclGroupStart()) != ncclSuccess)
    return leave(&c, taken(&c, res, -1, stream));
  for (j = 0; res == ncclSuccess && j < g->size; j++) {
    int k = (g->rank + j) % g->size;
    if (weft__a2a_sc(a, k) > 0)
      res = first_error(res, ncclSend((const char *)s + weft__a2a_sd(a, k) * es, weft__a2a_sc(a, k),
                                      t, k, c.comm, (cudaStream_t)stream));
    if (weft__a2a_rc(a, k) > 0)
      res = first_error(res, ncclRecv((char *)r + weft__a2a_rd(a, k) * es, weft__a2a_rc(a, k), t, k,
                                      c.comm, (cudaStream_t)stream));
    if (res == ncclInProgress)
      res = ncclSuccess;
  }
  res = first_error(res, ncclGroupEnd());
  return leave(&c, taken(&c, res, -1, stream));
}

/* A batch: one group of its sends and receives, one call in flight. With a
 * deadline each operation first posts a token to its peer (deadline.c), so
 * that a batch past its deadline names the peers that never posted theirs. */
static int nc_batch(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *stream)
{
  struct weft__fl_batch b;
  ncclResult_t res;
  struct call c;
  size_t i;
  int rc, j;

  if ((rc = enter(&c, g, fn, stream)) != 0)
    return rc;
  memset(&b, 0, sizeof(b));
  for (i = 0; i < n; i++) {
    int send = ops[i].kind == WEFT_P2P_SEND;
    unsigned long nth = weft__p2p_post(g, ops[i].peer, send, &rc);
    if (rc != 0)
      return leave(&c, rc);
    for (j = 0; j < b.n && b.p[j].peer != ops[i].peer; j++)
      ;
    if (j == b.n && b.n == WEFT__FL_PEERS) {
      b.more++;
      continue;
    }
    b.p[j].peer = ops[i].peer;
    b.n += j == b.n;
    if (send)
      b.p[j].send = nth;
    else
      b.p[j].recv = nth;
  }
  if ((res = ncclGroupStart()) != ncclSuccess)
    return leave(&c, taken_batch(&c, res, WEFT__FL_BATCH, &b, stream));
  for (i = 0; res == ncclSuccess && i < n; i++) {
    const weft_p2p *o = &ops[i];
    res = first_error(
      res,
      o->kind == WEFT_P2P_SEND
        ? ncclSend(o->buf, o->count, nccl_types[o->dt], o->peer, c.comm, (cudaStream_t)stream)
        : ncclRecv(o->buf, o->count, nccl_types[o->dt], o->peer, c.comm, (cudaStream_t)stream));
    if (res == ncclInProgress)
      res = ncclSuccess;
  }
  res = first_error(res, ncclGroupEnd());
  return leave(&c, taken_batch(&c, res, WEFT__FL_BATCH, &b, stream));
}

static int nc_copy(weft_ctx *ctx, void *d, const void *s, size_t bytes, void *stream)
{
  void *saved;
  int rc;

  if ((rc = weft__nc_device(ctx, &saved)) != 0)
    return rc;
  rc = copy(ctx, d, s, bytes, stream);
  weft__nc_device_put_back(saved);
  return rc;
}

static int nc_alloc(weft_ctx *ctx, void **p, size_t bytes)
{
  cudaError_t e;
  void *saved;
  int rc;

  *p = NULL;
  if ((rc = weft__nc_device(ctx, &saved)) != 0)
    return rc;
  e = cudaMalloc(p, bytes ? bytes : 1);
  weft__nc_device_put_back(saved);
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
  void *saved;

  if (p && weft__nc_device(ctx, &saved) == 0) {
    cudaFree(p);
    weft__nc_device_put_back(saved);
  }
}

/* How buckets copy tensors to and from the fusion buffer: batched
 * (cudaMemcpyBatchAsync, one call) where the runtime has it, else one copy
 * per tensor. WEFT_BUCKET_COPY=each forces the second, for measurements. */
int weft__nccl_pack(weft_ctx *ctx, size_t n, void *const *dst, const void *const *src,
                    const size_t *bytes, void *stream)
{
  static int each = -1;
  void *saved;
  size_t i;
  int rc;

  if ((rc = weft__nc_device(ctx, &saved)) != 0)
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
    weft__nc_device_put_back(saved);
    return e == cudaSuccess ? 0 : weft__nc_cuda_fail(ctx, "cudaMemcpyBatchAsync", e);
  }
  for (i = 0, rc = 0; rc == 0 && i < n; i++)
    rc = copy(ctx, dst[i], src[i], bytes[i], stream);
  weft__nc_device_put_back(saved);
  return rc;
}

int weft__nccl_wait(weft_group *g)
{
  double limit = g->ctx->coll_timeout > 0 ? g->ctx->coll_timeout : WEFT__COLL_WATCHDOG_S;
  void *saved;
  int rc;

  if (!g->nccl)
    return 0;
  if ((rc = weft__nc_device(g->ctx, &saved)) != 0)
    return rc;
  rc = weft__nc_poll(g, "wait", weftx_monotonic() + limit);
  weft__nc_device_put_back(saved);
  return rc;
}

const struct weft__backend weft__backend_nccl = {
  "nccl",  nc_allreduce, nc_broadcast, nc_allgather, nc_reduce_scatter, nc_send,
  nc_recv, nc_alltoall,  nc_batch,     nc_copy,      nc_alloc,          nc_free,
};
