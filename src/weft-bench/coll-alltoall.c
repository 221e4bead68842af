/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoall: block i of every rank's buffer goes to rank i, which keeps it at
 * block (sender) of its receive buffer. size = the rank's whole buffer (n
 * blocks), as nccl-tests' alltoall_perf counts it; busbw = algbw x (n-1)/n:
 * each rank sends and receives the n-1 blocks that are not its own. weft
 * refuses in place (the buffers may not overlap), so the in-place columns say
 * N/A. The raw-MPI baseline is MPI_Alltoall, the raw-NCCL one a group of
 * ncclSend and ncclRecv, as alltoall_perf (ncclAllToAll is not in every
 * NCCL).
 */
#include <limits.h>

#include "driver.h"

static void counts(struct bench_args *a, size_t bytes)
{
  size_t blk = bytes / a->esize / (size_t)a->nranks;

  a->count = a->sendcount = a->recvcount = blk * (size_t)a->nranks;
  a->bytes = a->count * a->esize;
}

static double factor(int n) { return (double)(n - 1) / n; }

static size_t block(const struct bench_args *a) { return a->count / (size_t)a->nranks; }

/* Element j of the block rank `from` sends: its index in the sender's buffer. */
static void fill(struct bench_args *a)
{
  for (size_t i = 0; i < a->sendcount; i++)
    weftx_dtype_put(a->hsend, a->dtype, i, bench_value(a->rank, i));
}

static size_t check(const struct bench_args *a)
{
  size_t wrong = 0, b = block(a);

  for (int r = 0; r < a->nranks; r++)
    for (size_t j = 0; j < b; j++)
      if (weftx_dtype_get(a->hrecv, a->dtype, (size_t)r * b + j) !=
          bench_round(a->dtype, bench_value(r, (size_t)a->rank * b + j)))
        wrong++;
  return wrong;
}

static int run(struct bench_args *a)
{
  return weft_alltoall(a->group, a->send, a->recv, block(a), a->dtype, a->stream);
}

static int run_raw(struct bench_args *a)
{
  if (block(a) > INT_MAX)
    return WEFT_EOVERFLOW;
  return MPI_Alltoall(a->send, (int)block(a), a->mpi_dtype, a->recv, (int)block(a), a->mpi_dtype,
                      a->comm) == MPI_SUCCESS
           ? 0
           : WEFT_EMPI;
}

static int run_nccl(struct bench_args *a)
{
  return bench_nccl_alltoall(a, a->send, a->recv, block(a));
}

const struct bench_coll bench_alltoall = {
  .name = "alltoall",
  .alias = "all_to_all",
  .reduces = 0,
  .rooted = 0,
  .min_ranks = 1,
  .help = "block i of every rank goes to rank i (out of place only)",
  .busbw = "(n-1)/n",
  .out_of_place_only = 1,
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
