/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime on device memory: the NCCL communicator comes up at the first
 * device collective; all-reduce (every dtype and op, in place and not),
 * broadcast, all-gather and reduce-scatter on device buffers against a
 * reference; non-integer 16-, 32- and 64-bit floats within rounding of the
 * exact sum and the same bits on every rank; an all-reduce captured into a
 * CUDA graph and replayed; mesh groups (split from the
 * world's communicator); send and
 * receive around a ring; a bucket of device tensors against per-tensor
 * all-reduces, on a stream and on the default stream; and stream order (copy
 * in, all-reduce, copy out, all queued on one stream before a single
 * synchronisation). Without a GPU it checks that asking for NCCL is refused
 * with a clear error, then exits 77 (skipped).
 * Run with mpirun -np N, N <= the number of GPUs (1 is fine), or several ranks
 * on one GPU with distinct NCCL_HOSTID (tests/gpu/run.sh), or under the
 * stand-in (tests/standin). test-rt-gpu [MAXELEMS]: the largest size tried
 * (default 1048576).
 */
#include "rt_private.h"
#include "rt-common.h" /* put() and get(): one element of any dtype, as tests/mpi use */

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(cond, ...)                                                                        \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n");                                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
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
    if (op == WEFT_SUM || op == WEFT_AVG) acc += v;
    else if (op == WEFT_PROD) acc *= v;
    else if (op == WEFT_MIN) acc = v < acc ? v : acc;
    else acc = v > acc ? v : acc;
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
    double eps = dt == WEFT_FLOAT16 ? 1.0 / 2048 : dt == WEFT_BFLOAT16 ? 1.0 / 256
                 : dt == WEFT_FLOAT32 ? 1e-7 : 1e-15;
    char *h = malloc(N * es), *all = malloc((size_t)p * N * es), *d;
    CK(h && all, "malloc");
    CU(cudaMalloc((void **)&d, N * es));
    for (i = 0; i < N; i++)
      put(h, i, dt, 0.1 * (rank + 1) + 0.013 * (double)(i % 97) + 1.0 / 3.0);
    CU(cudaMemcpyAsync(d, h, N * es, cudaMemcpyHostToDevice, st));
    CK(weft_allreduce(w, d, d, N, dt, WEFT_SUM, st) == 0, "allreduce %s: %s",
       weft_dtype_name(dt), weft_last_error(ctx));
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
      CK(!memcmp(all, all + i * N * es, N * es), "allreduce %s: rank %zu got other bits "
         "than rank 0", weft_dtype_name(dt), i);
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
      CK(weft_reduce_scatter(w, ds, dr, n, (weft_dtype)dt, WEFT_SUM, st) == 0,
         "reduce_scatter: %s", weft_last_error(ctx));
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
