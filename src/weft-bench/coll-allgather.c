/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather: every rank ends with the blocks of all ranks, in rank order.
 * size = the gathered total (n blocks), as nccl-tests counts it;
 * busbw = algbw x (n-1)/n: each rank receives the n-1 blocks it lacks. In
 * place, each rank's block already lies at its slot of the receive buffer.
 */
#include <limits.h>

#include "driver.h"

static void counts(struct bench_args *a, size_t bytes)
{
  a->sendcount = bytes / a->esize / (size_t)a->nranks;
  a->recvcount = a->count = a->sendcount * (size_t)a->nranks;
  a->bytes = a->count * a->esize;
  a->send_inplace = (size_t)a->rank * a->sendcount;
}

static double factor(int n) { return (double)(n - 1) / n; }

static void fill(struct bench_args *a)
{
  for (size_t i = 0; i < a->sendcount; i++)
    weftx_dtype_put(a->hsend, a->dtype, i, bench_value(a->rank, i));
}

static size_t check(const struct bench_args *a)
{
  size_t wrong = 0;

  for (int r = 0; r < a->nranks; r++)
    for (size_t i = 0; i < a->sendcount; i++)
      if (weftx_dtype_get(a->hrecv, a->dtype, (size_t)r * a->sendcount + i) !=
          bench_round(a->dtype, bench_value(r, i)))
        wrong++;
  return wrong;
}

static int run(struct bench_args *a)
{
  return weft_allgather(a->group, a->send, a->recv, a->sendcount, a->dtype, a->stream);
}

static int run_raw(struct bench_args *a)
{
  if (a->sendcount > INT_MAX)
    return WEFT_EOVERFLOW;
  return MPI_Allgather(a->in_place ? MPI_IN_PLACE : a->send, (int)a->sendcount, a->mpi_dtype,
                       a->recv, (int)a->sendcount, a->mpi_dtype, a->comm) == MPI_SUCCESS
           ? 0
           : WEFT_EMPI;
}

static int run_nccl(struct bench_args *a)
{
  return bench_nccl_allgather(a, a->send, a->recv, a->sendcount);
}

const struct bench_coll bench_allgather = {
  .name = "allgather",
  .alias = "all_gather",
  .reduces = 0,
  .rooted = 0,
  .min_ranks = 1,
  .help = "every rank ends with all ranks' blocks in rank order",
  .busbw = "(n-1)/n",
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
