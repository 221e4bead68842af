/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter: the reduction of every rank's buffer, of which rank r keeps
 * block r. size = the whole input (n blocks), as nccl-tests counts it;
 * busbw = algbw x (n-1)/n. In place, rank r's result is left at block r of
 * its input (NCCL's in-place form); raw MPI's in-place form leaves it at
 * the start, which is only timed, not checked.
 */
#include <limits.h>

#include "driver.h"

static void counts(struct bench_args *a, size_t bytes)
{
  a->recvcount = bytes / a->esize / (size_t)a->nranks;
  a->sendcount = a->count = a->recvcount * (size_t)a->nranks;
  a->bytes = a->count * a->esize;
  a->recv_inplace = (size_t)a->rank * a->recvcount;
}

static double factor(int n) { return (double)(n - 1) / n; }

static void fill(struct bench_args *a) { bench_fill_reduction(a, a->hsend, a->sendcount, 0); }

static size_t check(const struct bench_args *a)
{
  return bench_check_reduction(a, a->hrecv, a->recvcount, (size_t)a->rank * a->recvcount);
}

static int run(struct bench_args *a)
{
  return weft_reduce_scatter(a->group, a->send, a->recv, a->recvcount, a->dtype, a->op, a->stream);
}

static int run_raw(struct bench_args *a)
{
  void *out = a->in_place ? a->send : a->recv;

  if (a->recvcount > INT_MAX)
    return WEFT_EOVERFLOW;
  if (MPI_Reduce_scatter_block(a->in_place ? MPI_IN_PLACE : a->send, out, (int)a->recvcount,
                               a->mpi_dtype, a->mpi_op, a->comm) != MPI_SUCCESS)
    return WEFT_EMPI;
  if (a->op == WEFT_AVG)
    bench_avg_fixup(a, out, a->recvcount);
  return 0;
}

static int run_nccl(struct bench_args *a)
{
  return bench_nccl_reduce_scatter(a, a->send, a->recv, a->recvcount);
}

const struct bench_coll bench_reduce_scatter = {
  .name = "reduce_scatter",
  .alias = "reducescatter",
  .reduces = 1,
  .rooted = 0,
  .help = "the reduction of all buffers, of which rank r keeps block r",
  .busbw = "(n-1)/n",
  .min_ranks = 1,
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
