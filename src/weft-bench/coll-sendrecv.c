/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv: every rank sends its buffer to the next rank and receives the
 * previous rank's, around a ring (a pipeline stage's exchange). size = the
 * buffer; busbw = algbw (factor 1). Out of place, weft's form is one
 * weft_sendrecv (a batch of the send and the receive, issued together), the
 * raw-MPI baseline one MPI_Sendrecv, the raw-NCCL one ncclSend and ncclRecv in
 * a group. In place both use one buffer, whose result is not defined, and a
 * batch refuses a receive buffer that overlaps its send: there weft_send and
 * weft_recv (and MPI_Send and MPI_Recv) block, even ranks sending first and
 * odd ranks receiving first (on an odd ring the last pair waits one turn). As
 * in nccl-tests, the in-place run is timed and not checked.
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

static int next(const struct bench_args *a) { return (a->rank + 1) % a->nranks; }

static int prev(const struct bench_args *a) { return (a->rank + a->nranks - 1) % a->nranks; }

static void fill(struct bench_args *a)
{
  for (size_t i = 0; i < a->count; i++)
    weftx_dtype_put(a->hsend, a->dtype, i, bench_value(a->rank, i));
}

static size_t check(const struct bench_args *a)
{
  size_t wrong = 0;
  double from = prev(a);

  for (size_t i = 0; i < a->count; i++)
    if (weftx_dtype_get(a->hrecv, a->dtype, i) != bench_round(a->dtype, bench_value((int)from, i)))
      wrong++;
  return wrong;
}

static int run(struct bench_args *a)
{
  int rc;

  if (!a->in_place)
    return weft_sendrecv(a->group, a->send, a->count, next(a), a->recv, a->count, prev(a), a->dtype,
                         a->stream);
  if (a->rank % 2 == 0) {
    rc = weft_send(a->group, a->send, a->count, a->dtype, next(a), a->stream);
    if (rc == 0)
      rc = weft_recv(a->group, a->recv, a->count, a->dtype, prev(a), a->stream);
  } else {
    rc = weft_recv(a->group, a->recv, a->count, a->dtype, prev(a), a->stream);
    if (rc == 0)
      rc = weft_send(a->group, a->send, a->count, a->dtype, next(a), a->stream);
  }
  return rc;
}

static int run_raw(struct bench_args *a)
{
  int c = (int)a->count, rc;

  if (a->count > INT_MAX)
    return WEFT_EOVERFLOW;
  if (!a->in_place)
    return MPI_Sendrecv(a->send, c, a->mpi_dtype, next(a), 0, a->recv, c, a->mpi_dtype, prev(a), 0,
                        a->comm, MPI_STATUS_IGNORE) == MPI_SUCCESS
             ? 0
             : WEFT_EMPI;
  if (a->rank % 2 == 0) {
    rc = MPI_Send(a->send, c, a->mpi_dtype, next(a), 0, a->comm);
    if (rc == MPI_SUCCESS)
      rc = MPI_Recv(a->recv, c, a->mpi_dtype, prev(a), 0, a->comm, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Recv(a->recv, c, a->mpi_dtype, prev(a), 0, a->comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS)
      rc = MPI_Send(a->send, c, a->mpi_dtype, next(a), 0, a->comm);
  }
  return rc == MPI_SUCCESS ? 0 : WEFT_EMPI;
}

/* NCCL groups the send and the receive, so no ordering is needed. */
static int run_nccl(struct bench_args *a)
{
  return bench_nccl_sendrecv(a, a->send, a->recv, a->count, next(a), prev(a));
}

const struct bench_coll bench_sendrecv = {
  .name = "sendrecv",
  .alias = "send_recv",
  .reduces = 0,
  .rooted = 0,
  .min_ranks = 2,
  .help = "each rank sends to the next around a ring (2 ranks or more)",
  .busbw = "1",
  .pairwise = 1,
  .in_place_unchecked = 1,
  .counts = counts,
  .busbw_factor = factor,
  .fill = fill,
  .check = check,
  .run = run,
  .run_raw = run_raw,
  .run_nccl = run_nccl,
};
