/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bucket: the gradient-fusion case. A row's buffer is cut into --tensors
 * tensors of nearly equal size, registered once in a weft bucket and
 * all-reduced in place in a few fused messages (a bucket has no
 * out-of-place form: those columns say N/A). size = all tensors together;
 * busbw = algbw x 2(n-1)/n as for allreduce. The raw baseline is what a
 * program without fusion does: one MPI_Allreduce (or ncclAllReduce) per
 * tensor, so the speedup shows what fusion gains. With --gap the tensors
 * lie that many bytes apart in the receive buffer (rounded up to whole
 * elements), as a model's parameters lie in memory; the bytes between them
 * stay poisoned. With --floor, one weft all-reduce of the same number of
 * elements, contiguous, is timed beside them (run_contig).
 */
#include <limits.h>
#include <stdlib.h>

#include "driver.h"

struct bucket_state {
  weft_bucket *bucket;
  size_t ntensors;
};

/* Elements between one tensor and the next. */
static size_t gap(const struct bench_args *a) { return (a->gap + a->esize - 1) / a->esize; }

static size_t ntensors(const struct bench_args *a);

static void counts(struct bench_args *a, size_t bytes)
{
  a->count = bytes / a->esize;
  a->bytes = a->count * a->esize;
  a->sendcount = a->recvcount = a->count + ntensors(a) * gap(a);
}

static double factor(int n) { return 2.0 * (n - 1) / n; }

static size_t ntensors(const struct bench_args *a)
{
  return a->count < (size_t)a->tensors ? a->count : (size_t)a->tensors;
}

/* Tensor k holds elements [first(k), first(k + 1)) of the row. */
static size_t first(const struct bench_args *a, size_t n, size_t k)
{
  return a->count / n * k + (k < a->count % n ? k : a->count % n);
}

/* Where tensor k lies in \p buf: gap(a) elements after tensor k - 1. */
static char *at(const struct bench_args *a, void *buf, size_t n, size_t k)
{
  return (char *)buf + (first(a, n, k) + k * gap(a)) * a->esize;
}

/* In place: the tensors live in the receive buffer, where hsend is too. */
static void fill(struct bench_args *a)
{
  size_t n = ntensors(a);

  for (size_t k = 0; k < n; k++)
    bench_fill_reduction(a, at(a, a->hsend, n, k), first(a, n, k + 1) - first(a, n, k),
                         first(a, n, k));
}

static size_t check(const struct bench_args *a)
{
  size_t n = ntensors(a), wrong = 0;

  for (size_t k = 0; k < n; k++)
    wrong += bench_check_reduction(a, at(a, a->hrecv, n, k), first(a, n, k + 1) - first(a, n, k),
                                   first(a, n, k));
  return wrong;
}

static int setup(struct bench_args *a)
{
  struct bucket_state *s = calloc(1, sizeof(*s));
  int rc;

  if (!s)
    return WEFT_ENOMEM;
  a->priv = s;
  s->ntensors = ntensors(a);
  if (s->ntensors == 0)
    return 0;
  rc = weft_bucket_create(a->group, a->dtype, 0, &s->bucket);
  for (size_t k = 0; k < s->ntensors && rc == 0; k++) {
    size_t lo = first(a, s->ntensors, k), hi = first(a, s->ntensors, k + 1);

    rc = weft_bucket_add(s->bucket, at(a, a->recv, s->ntensors, k), hi - lo);
  }
  return rc;
}

static void teardown(struct bench_args *a)
{
  struct bucket_state *s = a->priv;

  if (s && s->bucket)
    weft_bucket_destroy(s->bucket);
  free(s);
  a->priv = NULL;
}

static int run(struct bench_args *a)
{
  struct bucket_state *s = a->priv;

  return s->bucket ? weft_bucket_allreduce(s->bucket, a->op, a->stream) : 0;
}

static int run_raw(struct bench_args *a)
{
  struct bucket_state *s = a->priv;

  for (size_t k = 0; k < s->ntensors; k++) {
    size_t lo = first(a, s->ntensors, k), n = first(a, s->ntensors, k + 1) - lo;
    char *t = at(a, a->recv, s->ntensors, k);

    if (n > INT_MAX)
      return WEFT_EOVERFLOW;
    if (MPI_Allreduce(MPI_IN_PLACE, t, (int)n, a->mpi_dtype, a->mpi_op, a->comm) != MPI_SUCCESS)
      return WEFT_EMPI;
    if (a->op == WEFT_AVG)
      bench_avg_fixup(a, t, n);
  }
  return 0;
}

/* Without fusion: one ncclAllReduce per tensor. */
static int run_nccl(struct bench_args *a)
{
  struct bucket_state *s = a->priv;
  int rc = 0;

  for (size_t k = 0; k < s->ntensors && rc == 0; k++) {
    size_t lo = first(a, s->ntensors, k), n = first(a, s->ntensors, k + 1) - lo;
    char *t = at(a, a->recv, s->ntensors, k);

    rc = bench_nccl_allreduce(a, t, t, n);
  }
  return rc;
}

/* The same number of elements as one contiguous all-reduce, in place. */
static int run_contig(struct bench_args *a)
{
  return a->count ? weft_allreduce(a->group, a->recv, a->recv, a->count, a->dtype, a->op, a->stream)
                  : 0;
}

const struct bench_coll bench_bucket = {
  .name = "bucket",
  .alias = "fusion",
  .reduces = 1,
  .rooted = 0,
  .min_ranks = 1,
  .help = "gradient fusion: --tensors N all-reduced in a few fused messages",
  .busbw = "2(n-1)/n",
  .tensors = 1,
  .in_place_only = 1,
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .setup = setup,
  .teardown = teardown,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
  .run_contig = run_contig,
};
