/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime on device memory: the NCCL communicator comes up at the first
 * device collective; all-reduce (every dtype and op, in place and not),
 * broadcast, all-gather and reduce-scatter on device buffers against a
 * reference; non-integer 16-, 32- and 64-bit floats within rounding of the
 * exact sum and the same bits on every rank; an all-reduce captured into a
 * CUDA graph and replayed; mesh groups (split from the
 * world's communicator); send and
 * receive around a ring; all-to-all of every type and alltoallv with uneven
 * counts; a batch of sends and receives where every rank sends first, and a
 * pipeline of weft_sendrecv; a bucket of device tensors against per-tensor
 * all-reduces, on a stream and on the default stream; and stream order (copy
 * in, all-reduce, copy out, all queued on one stream before a single
 * synchronisation). Without a GPU it checks that asking for NCCL is refused
 * with a clear error, then exits 77 (skipped).
 * Run with mpirun -np N, N <= the number of GPUs (1 is fine), or several ranks
 * on one GPU with distinct NCCL_HOSTID (tests/gpu/run.sh), or under the
 * stand-in (tests/standin). test-rt-gpu [MAXELEMS]: the largest size tried
 * (default 1048576). test-rt-gpu alltoall-absent | batch-absent (3 ranks or
 * more, WEFT_COLL_TIMEOUT set): the deadline of a device all-to-all or batch
 * the last rank never comes to names it.
 */
#include "rt_private.h"
#include "rt-common.h" /* put() and get(): one element of any dtype, as tests/mpi use */

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(cond, ...)                                                                              \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)
#define CU(call) CK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

static double val(int r, size_t i, weft_dtype dt)
{
  int v = (int)((r * 7 + i * 3 + (size_t)dt) % 5);
  return dt == WEFT_UINT8 ? v % 4 : v - 2;
}

static double reduce(size_t i, int p, weft_dtype dt, weft_op op)
{
  double acc = val(0, i, dt);
  int r;
  for (r = 1; r < p; r++) {
    double v = val(r, i, dt);
    if (op == WEFT_SUM || op == WEFT_AVG)
      acc += v;
    else if (op == WEFT_PROD)
      acc *= v;
    else if (op == WEFT_MIN)
      acc = v < acc ? v : acc;
    else
      acc = v > acc ? v : acc;
  }
  return op == WEFT_AVG ? acc / p : acc;
}

/* Without a GPU: WEFT_BACKEND=nccl must be refused at init, clearly. */
static int no_gpu(int *argc, char ***argv)
{
  weft_ctx *ctx = NULL;
  int rc;

  setenv("WEFT_BACKEND", "nccl", 1);
  rc = weft_init(argc, argv, &ctx);
  if (rc != WEFT_ENOGPU && rc != WEFT_ENOCUDA && rc != WEFT_ENONCCL) {
    fprintf(stderr, "FAIL: WEFT_BACKEND=nccl without a GPU gave %s\n", weft_err_name(rc));
    return 1;
  }
  printf("SKIP: no usable GPU here (WEFT_BACKEND=nccl refused with %s, as it should)\n",
         weft_err_name(rc));
  return 77;
}

/* Every rank sends its block to the next and receives the previous one's;
 * even ranks send first, odd ones receive first, so that no rank waits for a
 * receive queued behind its own send. */
static int ring(weft_ctx *ctx, weft_group *w, cudaStream_t st)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), next = (rank + 1) % p,
      prev = (rank + p - 1) % p, i, checks = 0;
  int32_t h[1000], *ds, *dr;

  if (p < 2)
    return 0;
  CU(cudaMalloc((void **)&ds, sizeof(h)));
  CU(cudaMalloc((void **)&dr, sizeof(h)));
  for (i = 0; i < 1000; i++)
    h[i] = rank * 1000 + i;
  CU(cudaMemcpyAsync(ds, h, sizeof(h), cudaMemcpyHostToDevice, st));
  if (rank % 2 == 0) {
    CK(weft_send(w, ds, 1000, WEFT_INT32, next, st) == 0, "send: %s", weft_last_error(ctx));
    CK(weft_recv(w, dr, 1000, WEFT_INT32, prev, st) == 0, "recv: %s", weft_last_error(ctx));
  } else {
    CK(weft_recv(w, dr, 1000, WEFT_INT32, prev, st) == 0, "recv: %s", weft_last_error(ctx));
    CK(weft_send(w, ds, 1000, WEFT_INT32, next, st) == 0, "send: %s", weft_last_error(ctx));
  }
  CU(cudaMemcpyAsync(h, dr, sizeof(h), cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  for (i = 0; i < 1000; i++)
    CK(h[i] == prev * 1000 + i, "ring [%d]: %d, want %d", i, h[i], prev * 1000 + i);
  checks++;
  cudaFree(ds);
  cudaFree(dr);
  return checks;
}

/* Non-integer data: NCCL reduces in its ring's order and rounds a 16-bit
 * type after every step, so the result is not a rank-order sum to the bit;
 * it must be within rounding of the exact sum, and the same bits on every
 * rank. (The integer-valued checks above cannot see either.) */
static int rounding(weft_ctx *ctx, weft_group *w, cudaStream_t st)
{
  static const weft_dtype types[] = {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64};
  enum { N = 4099 };
  int rank = weft_group_rank(w), p = weft_group_size(w), checks = 0;
  size_t t, i;

  for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    weft_dtype dt = types[t];
    size_t es = weft_dtype_size(dt);
    /* relative precision of one rounding: 2^-11 (fp16), 2^-8 (bf16) */
    double eps = dt == WEFT_FLOAT16    ? 1.0 / 2048
                 : dt == WEFT_BFLOAT16 ? 1.0 / 256
                 : dt == WEFT_FLOAT32  ? 1e-7
                                       : 1e-15;
    char *h = malloc(N * es), *all = malloc((size_t)p * N * es), *d;
    CK(h && all, "malloc");
    CU(cudaMalloc((void **)&d, N * es));
    for (i = 0; i < N; i++)
      put(h, i, dt, 0.1 * (rank + 1) + 0.013 * (double)(i % 97) + 1.0 / 3.0);
    CU(cudaMemcpyAsync(d, h, N * es, cudaMemcpyHostToDevice, st));
    CK(weft_allreduce(w, d, d, N, dt, WEFT_SUM, st) == 0, "allreduce %s: %s", weft_dtype_name(dt),
       weft_last_error(ctx));
    CU(cudaMemcpyAsync(h, d, N * es, cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    for (i = 0; i < N; i++) {
      double exact = 0;
      int r;
      for (r = 0; r < p; r++) {
        char one[8];
        put(one, 0, dt, 0.1 * (r + 1) + 0.013 * (double)(i % 97) + 1.0 / 3.0);
        exact += get(one, 0, dt);
      }
      CK(fabs(get(h, i, dt) - exact) <= 2 * p * eps * fabs(exact),
         "allreduce %s [%zu]: %.9g, exact %.9g", weft_dtype_name(dt), i, get(h, i, dt), exact);
    }
    /* the same bits everywhere (host buffers: through MPI) */
    CK(weft_allgather(w, h, all, N * es, WEFT_UINT8, NULL) == 0, "allgather: %s",
       weft_last_error(ctx));
    for (i = 1; i < (size_t)p; i++)
      CK(!memcmp(all, all + i * N * es, N * es),
         "allreduce %s: rank %zu got other bits "
         "than rank 0",
         weft_dtype_name(dt), i);
    cudaFree(d);
    free(h);
    free(all);
    checks++;
  }
  return checks;
}

/* An all-reduce captured into a CUDA graph (as PyTorch's CUDA graphs do) and
 * replayed twice: weft's call must not synchronise or query the capturing
 * stream (CUDA would invalidate the capture), with or without deadlines. */
static int graph(weft_ctx *ctx, weft_group *w)
{
  int p = weft_group_size(w), i, k;
  cudaStream_t cs;
  cudaGraph_t gr;
  cudaGraphExec_t ge;
  float h[256], *d;

  CU(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&d, sizeof(h)));
  for (i = 0; i < 256; i++)
    h[i] = 1;
  CU(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, cs));
  CU(cudaStreamSynchronize(cs));
  CU(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
  CK(weft_allreduce(w, d, d, 256, WEFT_FLOAT32, WEFT_SUM, cs) == 0, "allreduce in a capture: %s",
     weft_last_error(ctx));
  CU(cudaStreamEndCapture(cs, &gr));
  CU(cudaGraphInstantiate(&ge, gr, 0));
  for (k = 0; k < 2; k++)
    CU(cudaGraphLaunch(ge, cs));
  CU(cudaStreamSynchronize(cs));
  CU(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
  for (i = 0; i < 256; i++)
    CK(h[i] == (float)(p * p), "graph replayed twice [%d]: %g, want %d", i, h[i], p * p);
  /* weft's next call on the group, outside the graph, still works */
  CK(weft_allreduce(w, d, d, 256, WEFT_FLOAT32, WEFT_SUM, cs) == 0 && weft_group_wait(w) == 0,
     "allreduce after the graph: %s", weft_last_error(ctx));
  CU(cudaGraphExecDestroy(ge));
  CU(cudaGraphDestroy(gr));
  CU(cudaStreamDestroy(cs));
  cudaFree(d);
  return 1;
}

/* Mesh groups tp=2 x dp=*: all-reduce of the world rank over each group, on
 * the communicators split from the world's. */
static int mesh(weft_ctx *ctx, cudaStream_t st)
{
  weft_mesh *m;
  int rank = weft_rank(ctx), p = weft_size(ctx), checks = 0, d;
  static const char *const dims[] = {"tp", "dp"};
  float *dv, h[64];

  if (p < 2 || p % 2)
    return 0;
  CK(weft_mesh_create(ctx, "tp=2,dp=*", &m) == 0, "mesh: %s", weft_last_error(ctx));
  CU(cudaMalloc((void **)&dv, sizeof(h)));
  for (d = 0; d < 2; d++) {
    weft_group *g = weft_mesh_group(m, dims[d]);
    int i, want = 0, j;
    CK(g != NULL, "mesh group %s: %s", dims[d], weft_last_error(ctx));
    for (j = 0; j < weft_group_size(g); j++)
      want += weft_group_world_rank(g, j);
    for (i = 0; i < 64; i++)
      h[i] = (float)rank;
    CU(cudaMemcpyAsync(dv, h, sizeof(h), cudaMemcpyHostToDevice, st));
    CK(weft_allreduce(g, dv, dv, 64, WEFT_FLOAT32, WEFT_SUM, st) == 0, "mesh %s: %s", dims[d],
       weft_last_error(ctx));
    CU(cudaMemcpyAsync(h, dv, sizeof(h), cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    for (i = 0; i < 64; i++)
      CK(h[i] == (float)want, "mesh %s [%d]: %g, want %d", dims[d], i, h[i], want);
    checks++;
  }
  cudaFree(dv);
  weft_mesh_destroy(m);
  return checks;
}

/* ---- all-to-all and batches ---- */

/* Byte b of what rank `from` sends rank `to` (every byte says where it came
 * from, whatever the type). */
static unsigned char xbyte(int from, int to, size_t b)
{
  uint64_t x = ((uint64_t)from << 40) ^ ((uint64_t)to << 20) ^ b;

  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ULL;
  return (unsigned char)(x >> 56);
}

static void xfill(char *h, int from, int to, size_t bytes)
{
  for (size_t b = 0; b < bytes; b++)
    h[b] = (char)xbyte(from, to, b);
}

static void xexpect(const char *h, int from, int to, size_t bytes, const char *what)
{
  for (size_t b = 0; b < bytes; b++)
    CK((unsigned char)h[b] == xbyte(from, to, b), "%s: byte %zu of the block from %d to %d", what,
       b, from, to);
}

/* weft_alltoall of every type, weft_alltoallv with uneven counts (some 0)
 * and gaps that must stay untouched, all queued on st before one sync. */
static int a2a(weft_ctx *ctx, weft_group *w, cudaStream_t st)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), k, dt, checks = 0;
  size_t n = 1000, sc[8], sd[8], rc[8], rd[8], stot = 0, rtot = 0;
  char *h, *got, *ds, *dr;

  CK(p <= 8, "at most 8 ranks");
  h = malloc(8 * n * (size_t)p * 8);
  got = malloc(8 * n * (size_t)p * 8);
  CK(h && got, "malloc");
  CU(cudaMalloc((void **)&ds, 8 * n * (size_t)p * 8));
  CU(cudaMalloc((void **)&dr, 8 * n * (size_t)p * 8));
  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
    size_t es = weft_dtype_size((weft_dtype)dt), blk = n * es;
    for (k = 0; k < p; k++)
      xfill(h + (size_t)k * blk, rank, k, blk);
    CU(cudaMemcpyAsync(ds, h, blk * (size_t)p, cudaMemcpyHostToDevice, st));
    CK(weft_alltoall(w, ds, dr, n, (weft_dtype)dt, st) == 0, "alltoall %s: %s", weft_dtype_name(dt),
       weft_last_error(ctx));
    CU(cudaMemcpyAsync(got, dr, blk * (size_t)p, cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    for (k = 0; k < p; k++)
      xexpect(got + (size_t)k * blk, k, rank, blk, "device alltoall");
    checks++;
  }
  CK(weft_alltoall(w, ds, ds, n, WEFT_FLOAT32, st) == WEFT_EINVAL, "device alltoall in place");
  /* alltoallv of doubles: send blocks backwards with gaps, receive forwards */
  for (k = p - 1; k >= 0; k--) {
    sc[k] = (size_t)((rank * 3 + k * 5 + 1) % 4) * 100;
    sd[k] = stot + 3;
    stot = sd[k] + sc[k];
  }
  for (k = 0; k < p; k++) {
    rc[k] = (size_t)((k * 3 + rank * 5 + 1) % 4) * 100;
    rd[k] = rtot;
    rtot += rc[k] + 5;
  }
  for (k = 0; k < p; k++)
    xfill(h + sd[k] * 8, rank, k, sc[k] * 8);
  CU(cudaMemcpyAsync(ds, h, stot * 8, cudaMemcpyHostToDevice, st));
  memset(got, 0xa5, rtot * 8);
  CU(cudaMemcpyAsync(dr, got, rtot * 8, cudaMemcpyHostToDevice, st));
  CK(weft_alltoallv(w, ds, sc, sd, dr, rc, rd, WEFT_FLOAT64, st) == 0, "alltoallv: %s",
     weft_last_error(ctx));
  CU(cudaMemcpyAsync(got, dr, rtot * 8, cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  for (k = 0; k < p; k++) {
    size_t b;
    xexpect(got + rd[k] * 8, k, rank, rc[k] * 8, "device alltoallv");
    for (b = 0; b < 5 * 8; b++)
      CK((unsigned char)got[(rd[k] + rc[k]) * 8 + b] == 0xa5, "device alltoallv wrote a gap");
  }
  checks++;
  cudaFree(ds);
  cudaFree(dr);
  free(h);
  free(got);
  return checks;
}

/* Every rank sends first, in one batch: two blocks to the next rank (matched
 * in order), one of another type to the previous, and the receives. One at a
 * time with weft_send this hangs on a GPU (a send needs its receive). Then a
 * pipeline of weft_sendrecv with WEFT_NO_PEER at its ends, and a batch that
 * mixes host and device buffers, refused. */
static int batch(weft_ctx *ctx, weft_group *w, cudaStream_t st)
{
  enum { N = 5000 };
  int rank = weft_group_rank(w), p = weft_group_size(w), next = (rank + 1) % p,
      prev = (rank + p - 1) % p, i;
  char *h = malloc(6 * N * 8), *d;
  weft_p2p ops[6];

  if (p < 2) {
    free(h);
    return 0;
  }
  CK(h != NULL, "malloc");
  CU(cudaMalloc((void **)&d, 6 * N * 8));
  xfill(h, rank, 1000 + next, N * 4);
  xfill(h + N * 8, rank, 2000 + next, N * 4);
  xfill(h + 2 * N * 8, rank, 3000 + prev, N * 8);
  CU(cudaMemcpyAsync(d, h, 3 * N * 8, cudaMemcpyHostToDevice, st));
  for (i = 0; i < 6; i++) {
    ops[i].kind = i < 3 ? WEFT_P2P_SEND : WEFT_P2P_RECV;
    ops[i].peer = i == 2 || i == 3 || i == 4 ? prev : next;
    ops[i].buf = d + (size_t)i * N * 8;
    ops[i].count = N;
    ops[i].dt = i % 3 == 2 ? WEFT_FLOAT64 : i % 3 == 1 ? WEFT_INT32 : WEFT_FLOAT32;
  }
  CK(weft_p2p_batch(w, ops, 6, st) == 0, "device batch: %s", weft_last_error(ctx));
  CU(cudaMemcpyAsync(h, d + 3 * N * 8, 3 * N * 8, cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  xexpect(h, prev, 1000 + rank, N * 4, "device batch, first send");
  xexpect(h + N * 8, prev, 2000 + rank, N * 4, "device batch, second send");
  xexpect(h + 2 * N * 8, next, 3000 + rank, N * 8, "device batch, other way");
  /* a pipeline: send to rank + 1, receive from rank - 1 */
  xfill(h, rank, rank + 1, N * 2);
  CU(cudaMemcpyAsync(d, h, N * 2, cudaMemcpyHostToDevice, st));
  CK(weft_sendrecv(w, d, N, rank + 1 < p ? rank + 1 : WEFT_NO_PEER, d + N * 8, N,
                   rank > 0 ? rank - 1 : WEFT_NO_PEER, WEFT_BFLOAT16, st) == 0,
     "device sendrecv: %s", weft_last_error(ctx));
  CU(cudaMemcpyAsync(h, d + N * 8, N * 2, cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  if (rank > 0)
    xexpect(h, rank - 1, rank, N * 2, "device sendrecv");
  ops[0].buf = h;
  CK(weft_p2p_batch(w, ops, 2, st) == WEFT_EINVAL && strstr(weft_last_error(ctx), "one kind"),
     "a batch of host and device buffers: %s", weft_last_error(ctx));
  CK(weft_group_wait(w) == 0, "wait: %s", weft_last_error(ctx));
  cudaFree(d);
  free(h);
  return 2;
}

/* With WEFT_COLL_TIMEOUT: the last rank never comes to a device all-to-all
 * (what "alltoall-absent") or to its part of a ring of sendrecv
 * ("batch-absent"); the others' weft_group_wait() must fail within the
 * deadline naming it, and every rank aborts the communicator (the absent one
 * when it comes back, told by the others). */
static int absent(weft_ctx *ctx, weft_group *w, cudaStream_t st, const char *what)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), rc;
  char want[96];
  float *d;

  CK(p >= 3, "%s needs 3 ranks or more", what);
  CU(cudaMalloc((void **)&d, (size_t)p * 2048 * sizeof(float)));
  CK(weft_allreduce(w, d, d, 16, WEFT_FLOAT32, WEFT_SUM, st) == 0 && weft_group_wait(w) == 0,
     "first allreduce: %s", weft_last_error(ctx));
  if (rank == p - 1) {
    sleep((unsigned)(ctx->coll_timeout + 3));
    CK(weft_group_wait(w) != 0, "the absent rank was not told of the abort");
    printf("ABSENT-OK rank %d told: %s\n", rank, weft_last_error(ctx));
    cudaFree(d);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
  }
  if (!strcmp(what, "alltoall-absent")) {
    CK(weft_alltoall(w, d, d + (size_t)p * 1024, 1024, WEFT_FLOAT32, st) == 0, "alltoall: %s",
       weft_last_error(ctx));
    snprintf(want, sizeof(want), "world rank(s) %d had not joined", p - 1);
  } else {
    CK(weft_sendrecv(w, d, 1024, (rank + 1) % p, d + 1024, 1024, (rank + p - 1) % p, WEFT_FLOAT32,
                     st) == 0,
       "sendrecv: %s", weft_last_error(ctx));
    snprintf(want, sizeof(want), "world rank(s) %d never posted", p - 1);
  }
  rc = weft_group_wait(w);
  if (rank != 0 && rank != p - 2 && !strcmp(what, "batch-absent")) {
    printf("ABSENT-OK rank %d (not next to it): %s\n", rank, weft_err_name(rc));
  } else if (rc == WEFT_ENCCL && strstr(weft_last_error(ctx), "aborted the group's NCCL")) {
    /* another rank's deadline came first, and it told us */
    printf("ABSENT-OK rank %d told: %s\n", rank, weft_last_error(ctx));
  } else {
    CK(rc == WEFT_ETIMEDOUT && strstr(weft_last_error(ctx), want), "%s: %s (%s)", what,
       weft_err_name(rc), weft_last_error(ctx));
    printf("ABSENT-OK rank %d: %s\n", rank, weft_last_error(ctx));
  }
  cudaFree(d);
  /* Until the absent rank has heard of the abort: a notice from a process
   * that has ended may be lost with its shared memory. */
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

int main(int argc, char **argv)
{
  size_t sizes[] = {1, 1021, 1 << 20};
  weft_ctx *ctx;
  weft_group *w;
  cudaStream_t st;
  struct cudaDeviceProp prop;
  int ndev = 0, rank, p, dt, op, ip, checks = 0;
  size_t si, i;

  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
    return no_gpu(&argc, &argv);
  CK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  if (argc > 1 && strstr(argv[1], "-absent")) {
    w = weft_world(ctx);
    CU(cudaSetDevice(weft_device(ctx)));
    CU(cudaStreamCreate(&st));
    absent(ctx, w, st, argv[1]);
    CU(cudaStreamDestroy(st));
    CK(weft_finalize(ctx) == 0, "finalize");
    return 0;
  }
  if (argc > 1)
    sizes[2] = (size_t)strtoul(argv[1], NULL, 10);
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  p = weft_size(ctx);
  CK(weft_device(ctx) < ndev, "rank %d: device %d of %d", rank, weft_device(ctx), ndev);
  CU(cudaGetDeviceProperties(&prop, weft_device(ctx)));
  if (rank == 0)
    printf("# device %d: %s\n", weft_device(ctx), prop.name);
  CU(cudaSetDevice(weft_device(ctx)));
  CU(cudaStreamCreate(&st));

  for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
    for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
      size_t n = sizes[si], es = weft_dtype_size((weft_dtype)dt), big = n * (size_t)p;
      char *h = malloc(big * es), *got = malloc(big * es), *ds, *dr;
      CK(h && got, "malloc");
      CU(cudaMalloc((void **)&ds, big * es));
      CU(cudaMalloc((void **)&dr, big * es));
      CK(weft__is_device_ptr(ctx, ds) && !weft__is_device_ptr(ctx, h), "pointer kinds");
      for (op = 0; op < WEFT_OP_COUNT; op++)
        for (ip = 0; ip < 2; ip++) {
          char *out = ip ? ds : dr;
          int rc;
          for (i = 0; i < n; i++)
            put(h, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
          /* Stream order: copy in, reduce, copy out, then one sync. */
          CU(cudaMemcpyAsync(ds, h, n * es, cudaMemcpyHostToDevice, st));
          rc = weft_allreduce(w, ds, out, n, (weft_dtype)dt, (weft_op)op, st);
          if (op == WEFT_AVG && dt <= WEFT_INT64) {
            CK(rc == WEFT_EDTYPE, "int avg");
            CU(cudaStreamSynchronize(st));
            continue;
          }
          CK(rc == 0, "allreduce %s %s: %s", weft_dtype_name(dt), weft_op_name(op),
             weft_last_error(ctx));
          CU(cudaMemcpyAsync(got, out, n * es, cudaMemcpyDeviceToHost, st));
          CU(cudaStreamSynchronize(st));
          for (i = 0; i < n; i++) {
            double want = reduce(i, p, (weft_dtype)dt, (weft_op)op), g = get(got, i, dt);
            CK(fabs(g - want) <= (op == WEFT_AVG ? 0.01 * fabs(want) + 1e-3 : 0),
               "allreduce %s %s n=%zu inplace=%d [%zu]: %g, want %g", weft_dtype_name(dt),
               weft_op_name(op), n, ip, i, g, want);
          }
          checks++;
        }
      /* broadcast from the last rank, all-gather, reduce-scatter (sum) */
      for (i = 0; i < n; i++)
        put(h, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
      CU(cudaMemcpyAsync(ds, h, n * es, cudaMemcpyHostToDevice, st));
      CK(weft_broadcast(w, ds, n, (weft_dtype)dt, p - 1, st) == 0, "broadcast: %s",
         weft_last_error(ctx));
      CU(cudaMemcpyAsync(got, ds, n * es, cudaMemcpyDeviceToHost, st));
      CU(cudaStreamSynchronize(st));
      for (i = 0; i < n; i++)
        CK(get(got, i, dt) == val(p - 1, i, (weft_dtype)dt), "broadcast [%zu]", i);
      CU(cudaMemcpyAsync(ds, h, n * es, cudaMemcpyHostToDevice, st));
      CK(weft_allgather(w, ds, dr, n, (weft_dtype)dt, st) == 0, "allgather: %s",
         weft_last_error(ctx));
      CU(cudaMemcpyAsync(got, dr, big * es, cudaMemcpyDeviceToHost, st));
      CU(cudaStreamSynchronize(st));
      for (i = 0; i < big; i++)
        CK(get(got, i, dt) == val((int)(i / n), i % n, (weft_dtype)dt), "allgather [%zu]", i);
      for (i = 0; i < big; i++)
        put(h, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
      CU(cudaMemcpyAsync(ds, h, big * es, cudaMemcpyHostToDevice, st));
      CK(weft_reduce_scatter(w, ds, dr, n, (weft_dtype)dt, WEFT_SUM, st) == 0, "reduce_scatter: %s",
         weft_last_error(ctx));
      CU(cudaMemcpyAsync(got, dr, n * es, cudaMemcpyDeviceToHost, st));
      CU(cudaStreamSynchronize(st));
      for (i = 0; i < n; i++)
        CK(get(got, i, dt) == reduce((size_t)rank * n + i, p, (weft_dtype)dt, WEFT_SUM),
           "reduce_scatter [%zu]", i);
      checks += 3;
      cudaFree(ds);
      cudaFree(dr);
      free(h);
      free(got);
    }

  /* A bucket of device tensors against per-tensor all-reduces. */
  {
    enum { NT = 300 };
    float *dev[NT], *ref[NT], *ha = malloc(4096 * 4), *hb = malloc(4096 * 4);
    size_t n[NT], t;
    weft_bucket *b;
    CK(ha && hb, "malloc");
    CK(weft_bucket_create(w, WEFT_FLOAT32, 64 << 10, &b) == 0, "bucket_create");
    for (t = 0; t < NT; t++) {
      n[t] = (t * 131) % 4000 + 1;
      for (i = 0; i < n[t]; i++)
        ha[i] = (float)((rank + (int)t + (int)i) % 9) - 4;
      CU(cudaMalloc((void **)&dev[t], n[t] * 4));
      CU(cudaMalloc((void **)&ref[t], n[t] * 4));
      CU(cudaMemcpy(dev[t], ha, n[t] * 4, cudaMemcpyHostToDevice));
      CU(cudaMemcpy(ref[t], ha, n[t] * 4, cudaMemcpyHostToDevice));
      CK(weft_bucket_add(b, dev[t], n[t]) == 0, "bucket_add: %s", weft_last_error(ctx));
    }
    CK(weft_bucket_add(b, ha, 1) == WEFT_EINVAL, "host tensor in a device bucket");
    CK(weft_bucket_allreduce(b, WEFT_SUM, st) == 0, "bucket_allreduce: %s", weft_last_error(ctx));
    for (t = 0; t < NT; t++)
      CK(weft_allreduce(w, ref[t], ref[t], n[t], WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce");
    CU(cudaStreamSynchronize(st));
    /* Again on the default stream (NULL), which batched copies refuse. */
    CK(weft_bucket_allreduce(b, WEFT_SUM, NULL) == 0, "bucket_allreduce on NULL: %s",
       weft_last_error(ctx));
    for (t = 0; t < NT; t++)
      CK(weft_allreduce(w, ref[t], ref[t], n[t], WEFT_FLOAT32, WEFT_SUM, NULL) == 0, "allreduce");
    CU(cudaDeviceSynchronize());
    for (t = 0; t < NT; t++) {
      CU(cudaMemcpy(ha, dev[t], n[t] * 4, cudaMemcpyDeviceToHost));
      CU(cudaMemcpy(hb, ref[t], n[t] * 4, cudaMemcpyDeviceToHost));
      CK(!memcmp(ha, hb, n[t] * 4), "bucket tensor %zu differs", t);
      cudaFree(dev[t]);
      cudaFree(ref[t]);
    }
    weft_bucket_destroy(b);
    free(ha);
    free(hb);
    checks++;
  }
  checks += rounding(ctx, w, st);
  checks += graph(ctx, w);
  checks += ring(ctx, w, st);
  checks += a2a(ctx, w, st);
  checks += batch(ctx, w, st);
  checks += mesh(ctx, st);
  /* Host buffers still go through MPI on a GPU machine. */
  {
    int x = rank + 1, y = 0;
    CK(weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0 && y == p * (p + 1) / 2,
       "host allreduce");
  }
  CU(cudaStreamDestroy(st));
  if (rank == 0)
    printf("test-rt-gpu: %d rank(s), %d device checks passed\n", p, checks);
  CK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
