/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a device bucket's packing costs (issue 12, defect 11): a bucket of
 * many separately allocated tensors is all-reduced on one rank, where NCCL's
 * all-reduce has nothing to move, so the time is the copies into and out of
 * the fusion buffer plus the calls; beside it, two device-to-device copies
 * of the same bytes (what packing must at least cost). Run it once per
 * WEFT_BUCKET_COPY (batch: one cudaMemcpyBatchAsync per message, the
 * default; each: one copy per tensor). Times are CUDA events on the stream,
 * the median of 20 runs after 5 warm-ups.
 *
 *   mpirun -np 1 bench-bucket-pack [TENSORS [BYTES_EACH]]   (default 2000 x 8192)
 *
 * Prints one line: "bucket-pack: MODE, T tensors of B bytes: bucket X us,
 * 2 copies Y us, ratio X/Y". Exit 1 when the data is wrong.
 */
#include <weft.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 20
#define WARM 5

#define CU(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "bench-bucket-pack: %s: %s\n", #call, cudaGetErrorString(e_));               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int cmp(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;

  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  size_t nt = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
  size_t each = argc > 2 ? strtoul(argv[2], NULL, 10) : 8192, i, n = each / 4;
  const char *mode = getenv("WEFT_BUCKET_COPY");
  float t_bucket[RUNS], t_copy[RUNS], *h;
  float **dev;
  char *big, *big2;
  cudaStream_t st;
  cudaEvent_t a, b;
  weft_ctx *ctx;
  weft_bucket *bk;
  int r, bad = 0;

  if (weft_init(&argc, &argv, &ctx) != 0)
    return 1;
  CU(cudaSetDevice(weft_device(ctx)));
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CU(cudaEventCreate(&a));
  CU(cudaEventCreate(&b));
  dev = calloc(nt, sizeof(*dev));
  h = malloc(each);
  if (!dev || !h || nt == 0 || n == 0)
    return 1;
  if (weft_bucket_create(weft_world(ctx), WEFT_FLOAT32, 0, &bk) != 0)
    return 1;
  for (i = 0; i < n; i++)
    h[i] = (float)i;
  for (i = 0; i < nt; i++) {
    /* A gap after each tensor: tensors laid end to end would be reduced where
     * they are, with nothing to pack. */
    CU(cudaMalloc((void **)&dev[i], each + 512));
    CU(cudaMemcpyAsync(dev[i], h, each, cudaMemcpyHostToDevice, st));
    if (weft_bucket_add(bk, dev[i], n) != 0)
      return 1;
  }
  CU(cudaMalloc((void **)&big, nt * each));
  CU(cudaMalloc((void **)&big2, nt * each));
  for (r = 0; r < WARM + RUNS; r++) {
    CU(cudaEventRecord(a, st));
    if (weft_bucket_allreduce(bk, WEFT_SUM, st) != 0) {
      fprintf(stderr, "bench-bucket-pack: %s\n", weft_last_error(ctx));
      return 1;
    }
    CU(cudaEventRecord(b, st));
    CU(cudaEventSynchronize(b));
    if (r >= WARM)
      CU(cudaEventElapsedTime(&t_bucket[r - WARM], a, b));
    CU(cudaEventRecord(a, st));
    CU(cudaMemcpyAsync(big2, big, nt * each, cudaMemcpyDeviceToDevice, st));
    CU(cudaMemcpyAsync(big, big2, nt * each, cudaMemcpyDeviceToDevice, st));
    CU(cudaEventRecord(b, st));
    CU(cudaEventSynchronize(b));
    if (r >= WARM)
      CU(cudaEventElapsedTime(&t_copy[r - WARM], a, b));
  }
  /* One rank: the sum is the tensor itself. */
  for (i = 0; i < nt; i += nt / 7 + 1) {
    CU(cudaMemcpyAsync(h, dev[i], each, cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    for (size_t k = 0; k < n; k++)
      bad += h[k] != (float)k;
  }
  qsort(t_bucket, RUNS, sizeof(float), cmp);
  qsort(t_copy, RUNS, sizeof(float), cmp);
  if (weft_rank(ctx) == 0)
    printf("bucket-pack: %s, %zu tensors of %zu bytes: bucket %.1f us, 2 copies %.1f us, "
           "ratio %.2f%s\n",
           mode && !strcmp(mode, "each") ? "each" : "batch", nt, each, t_bucket[RUNS / 2] * 1e3,
           t_copy[RUNS / 2] * 1e3,
           t_copy[RUNS / 2] > 0 ? t_bucket[RUNS / 2] / t_copy[RUNS / 2] : -1.0,
           bad ? " WRONG DATA" : "");
  weft_bucket_destroy(bk);
  for (i = 0; i < nt; i++)
    cudaFree(dev[i]);
  cudaFree(big);
  cudaFree(big2);
  cudaStreamDestroy(st);
  free(dev);
  free(h);
  weft_finalize(ctx);
  return bad ? 1 : 0;
}
