/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broadcast: the root's buffer reaches every rank. size = the buffer;
 * busbw = algbw (factor 1): a pipelined broadcast moves the buffer once over
 * every link. weft_broadcast has one buffer, so it runs in place only (its
 * out-of-place columns say N/A): the root's buffer holds its data, the
 * others' start from poison.
 */
#include <limits.h>

#include "driver.h"

static void counts(struct bench_args *a, size_t bytes)
{
  a->count = a->sendcount = a->recvcount = bytes / a->esize;
  a->bytes = a->count * a->esize;
}

static double factor(int n)
{
  (void)n;
  return 1.0;
}

/* In place: hsend is the receive buffer's content before the broadcast. */
static void fill(struct bench_args *a)
{
  if (a->rank != a->root) {
    bench_poison(a->hsend, a->dtype, a->count);
    return;
  }
  for (size_t i = 0; i < a->count; i++)
    weftx_dtype_put(a->hsend, a->dtype, i, bench_value(a->root, i));
}

static size_t check(const struct bench_args *a)
{
  size_t wrong = 0;

  for (size_t i = 0; i < a->count; i++)
    if (weftx_dtype_get(a->hrecv, a->dtype, i) != bench_round(a->dtype, bench_value(a->root, i)))
      wrong++;
  return wrong;
}

static int run(struct bench_args *a)
{
  return weft_broadcast(a->group, a->recv, a->count, a->dtype, a->root, a->stream);
}

static int run_raw(struct bench_args *a)
{
  if (a->count > INT_MAX)
    return WEFT_EOVERFLOW;
  return MPI_Bcast(a->recv, (int)a->count, a->mpi_dtype, a->root, a->comm) == MPI_SUCCESS
           ? 0
           : WEFT_EMPI;
}

static int run_nccl(struct bench_args *a) { return bench_nccl_broadcast(a, a->recv, a->count); }

const struct bench_coll bench_broadcast = {
  .name = "broadcast",
  .alias = "bcast",
  .reduces = 0,
  .rooted = 1,
  .min_ranks = 1,
  .in_place_only = 1,
  .help = "the root's buffer (-r) reaches every rank, in place",
  .busbw = "1",
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
