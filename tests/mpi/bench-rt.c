/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime's figures, through the public API only (not a test):
 *  1. host all-reduce through weft against raw MPI_Allreduce on the same
 *     buffers, float32, 1 MiB to 16 MiB: ratio = time(MPI) / time(weft);
 *  2. a bucket of NT small tensors, each its own allocation (as a model's
 *     parameters are), against NT separate all-reduces (through weft, and
 *     raw MPI_Allreduce as a program without weft does) and against one
 *     all-reduce of the same total size laid out contiguously.
 * Each time is the median of several repetitions, alternating the
 * contenders (the best of them is printed too).
 *   mpirun -np 4 tests/mpi/bench-rt [tensor_elems (1000; 0: no buckets)] [reps (30)] [NT (1000)]
 * With WEFT_ALLREDUCE=hier on several hosts the first table is hier against
 * (MPI's) flat all-reduce.
 */
#include <weft.h>

#include "../../examples/args.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of n (sorts v); v[0] is then the best. */
static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now(MPI_Comm c)
{
  MPI_Barrier(c);
  return MPI_Wtime();
}

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  weft_group *w;
  weft_bucket *bk;
  size_t elems = 1000, nt = 1000, n, i, t;
  int reps = 30, r, k, rank, iters;
  double tw[100], tm[100], tb[100], ts[100], t1[100], tr[100];
  float *s, *d, **ten, *flat;

  if (weft_init(&argc, &argv, &ctx) != 0)
    return 1;
  if (argc > 1)
    elems = (size_t)strtoul(argv[1], NULL, 10);
  if (argc > 2) {
    long v;
    if (example_parse_long(argv[2], 1, 100, &v) == 0)
      reps = (int)v;
  }
  if (argc > 3) {
    long v;
    if (example_parse_long(argv[3], 1, 1000000, &v) == 0)
      nt = (size_t)v;
  }
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  if (rank == 0)
    printf("# bench-rt: %d ranks, float32, median of %d\n# %10s %12s %12s %8s\n", weft_size(ctx),
           reps, "bytes", "weft_us", "mpi_us", "ratio");
  for (n = (1 << 20) / 4; n <= (16 << 20) / 4; n *= 4) {
    s = malloc(n * 4);
    d = malloc(n * 4);
    if (!s || !d)
      return 1;
    for (i = 0; i < n; i++)
      s[i] = (float)(i % 13);
    iters = 1;
    for (r = 0; r < reps; r++) {
      double t0 = now(MPI_COMM_WORLD);
      for (k = 0; k < iters; k++)
        MPI_Allreduce(s, d, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      tm[r] = (MPI_Wtime() - t0) / iters;
      t0 = now(MPI_COMM_WORLD);
      for (k = 0; k < iters; k++)
        weft_allreduce(w, s, d, n, WEFT_FLOAT32, WEFT_SUM, NULL);
      tw[r] = (MPI_Wtime() - t0) / iters;
    }
    if (rank == 0) {
      double a = median(tw, reps), b = median(tm, reps);
      printf("  %10zu %12.1f %12.1f %8.3f\n", n * 4, a * 1e6, b * 1e6, b / a);
    }
    free(s);
    free(d);
  }

  /* Buckets (tensor_elems 0: skip them). */
  if (elems == 0)
    return weft_finalize(ctx) != 0;
  flat = malloc(nt * elems * 4);
  ten = calloc(nt, sizeof(*ten));
  if (!flat || !ten || weft_bucket_create(w, WEFT_FLOAT32, 0, &bk) != 0)
    return 1;
  for (t = 0; t < nt; t++) {
    ten[t] = malloc(elems * 4);
    if (!ten[t])
      return 1;
    for (i = 0; i < elems; i++)
      ten[t][i] = (float)((t + i) % 7);
    weft_bucket_add(bk, ten[t], elems);
  }
  for (i = 0; i < nt * elems; i++)
    flat[i] = (float)(i % 7);
  weft_bucket_allreduce(bk, WEFT_SUM, NULL); /* warm-up, allocates the fusion buffer */
  for (r = 0; r < reps; r++) {
    double t0 = now(MPI_COMM_WORLD);
    weft_bucket_allreduce(bk, WEFT_SUM, NULL);
    tb[r] = MPI_Wtime() - t0;
    t0 = now(MPI_COMM_WORLD);
    for (t = 0; t < nt; t++)
      weft_allreduce(w, ten[t], ten[t], elems, WEFT_FLOAT32, WEFT_SUM, NULL);
    ts[r] = MPI_Wtime() - t0;
    t0 = now(MPI_COMM_WORLD);
    weft_allreduce(w, flat, flat, nt * elems, WEFT_FLOAT32, WEFT_SUM, NULL);
    t1[r] = MPI_Wtime() - t0;
    t0 = now(MPI_COMM_WORLD);
    for (t = 0; t < nt; t++)
      MPI_Allreduce(MPI_IN_PLACE, ten[t], (int)elems, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    tr[r] = MPI_Wtime() - t0;
  }
  if (rank == 0) {
    double b = median(tb, reps), s1 = median(ts, reps), o = median(t1, reps);
    double m = median(tr, reps);
    printf("# bucket of %zu tensors x %zu floats (%zu bytes in all), median of %d\n", nt, elems,
           nt * elems * 4, reps);
    printf("  bucket %.1f us, %zu separate all-reduces %.1f us (%.1fx), one all-reduce %.1f us "
           "(ratio %.3f)\n",
           b * 1e6, nt, s1 * 1e6, s1 / b, o * 1e6, o / b);
    printf("  %zu separate raw MPI_Allreduce %.1f us (%.1fx)\n", nt, m * 1e6, m / b);
    printf("  best: bucket %.1f us, separate %.1f us (%.1fx), one %.1f us (ratio %.3f)\n",
           tb[0] * 1e6, ts[0] * 1e6, ts[0] / tb[0], t1[0] * 1e6, t1[0] / tb[0]);
  }
  weft_bucket_destroy(bk);
  for (t = 0; t < nt; t++)
    free(ten[t]);
  free(ten);
  free(flat);
  return weft_finalize(ctx) != 0;
}
