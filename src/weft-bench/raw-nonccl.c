/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device baseline in a build without CUDA or NCCL: there is none, and
 * the header of the table says so.
 */
#include <stdio.h>

#include "driver.h"

int bench_nccl_open(struct bench_args *a, MPI_Comm comm, char *why, size_t whylen)
{
  (void)a;
  (void)comm;
  snprintf(why, whylen, "this weft-bench was built without NCCL");
  return WEFT_ENONCCL;
}

void bench_nccl_close(struct bench_args *a) { (void)a; }

int bench_nccl_allreduce(struct bench_args *a, const void *s, void *r, size_t count)
{
  (void)a, (void)s, (void)r, (void)count;
  return WEFT_ENONCCL;
}

int bench_nccl_allgather(struct bench_args *a, const void *s, void *r, size_t sendcount)
{
  (void)a, (void)s, (void)r, (void)sendcount;
  return WEFT_ENONCCL;
}

int bench_nccl_reduce_scatter(struct bench_args *a, const void *s, void *r, size_t recvcount)
{
  (void)a, (void)s, (void)r, (void)recvcount;
  return WEFT_ENONCCL;
}

int bench_nccl_broadcast(struct bench_args *a, void *buf, size_t count)
{
  (void)a, (void)buf, (void)count;
  return WEFT_ENONCCL;
}

int bench_nccl_sendrecv(struct bench_args *a, const void *s, void *r, size_t count, int to,
                        int from)
{
  (void)a, (void)s, (void)r, (void)count, (void)to, (void)from;
  return WEFT_ENONCCL;
}

int bench_nccl_alltoall(struct bench_args *a, const void *s, void *r, size_t count)
{
  (void)a, (void)s, (void)r, (void)count;
  return WEFT_ENONCCL;
}
