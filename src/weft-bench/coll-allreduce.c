/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce: every rank ends with the reduction of every rank's buffer.
 * size = count x element size; busbw = algbw x 2(n-1)/n, because a ring
 * all-reduce sends and receives 2(n-1)/n of the buffer on every link. In
 * place, the send and receive buffers are the same.
 */
#include <limits.h>

#include "driver.h"

static void counts(struct bench_args *a, size_t bytes)
{
  a->count = a->sendcount = a->recvcount = bytes / a->esize;
  a->bytes = a->count * a->esize;
}

static double factor(int n) { return 2.0 * (n - 1) / n; }

static void fill(struct bench_args *a) { bench_fill_reduction(a, a->hsend, a->count, 0); }

static size_t check(const struct bench_args *a)
{
  return bench_check_reduction(a, a->hrecv, a->count, 0);
}

static int run(struct bench_args *a)
{
  return weft_allreduce(a->group, a->send, a->recv, a->count, a->dtype, a->op, a->stream);
}

static int run_raw(struct bench_args *a)
{
  if (a->count > INT_MAX)
    return WEFT_EOVERFLOW;
  if (MPI_Allreduce(a->in_place ? MPI_IN_PLACE : a->send, a->recv, (int)a->count, a->mpi_dtype,
                    a->mpi_op, a->comm) != MPI_SUCCESS)
    return WEFT_EMPI;
  if (a->op == WEFT_AVG)
    bench_avg_fixup(a, a->recv, a->count);
  return 0;
}

static int run_nccl(struct bench_args *a)
{
  return bench_nccl_allreduce(a, a->send, a->recv, a->count);
}

const struct bench_coll bench_allreduce = {
  .name = "allreduce",
  .alias = "all_reduce",
  .reduces = 1,
  .rooted = 0,
  .min_ranks = 1,
  .help = "every rank ends with the reduction of all ranks' buffers",
  .busbw = "2(n-1)/n",
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
