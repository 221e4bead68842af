/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device baseline of weft-bench (built with CUDA and NCCL): NCCL called
 * directly, on a communicator of its own made the way nccl-tests makes it
 * (rank 0's ncclGetUniqueId broadcast over MPI), so that --baseline compares
 * weft's device path with bare NCCL on the same buffers and stream. The
 * communicator is non-blocking so that its set-up has a deadline
 * (WEFT_INIT_TIMEOUT, default 120 s), after which it is aborted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "driver.h"

/* Wait, up to \p seconds, until a non-blocking call on \p comm is done. */
static ncclResult_t settle(ncclComm_t comm, ncclResult_t res, double seconds)
{
  double end = weftx_monotonic() + seconds;

  while (res == ncclInProgress) {
    if (weftx_monotonic() > end)
      return ncclInProgress;
    if (ncclCommGetAsyncError(comm, &res) != ncclSuccess)
      return ncclSystemError;
  }
  return res;
}

static int done(struct bench_args *a, ncclResult_t res)
{
  res = settle((ncclComm_t)a->nccl, res, 300);
  return res == ncclSuccess ? 0 : WEFT_ENCCL;
}

static ncclDataType_t nccl_type(weft_dtype dt)
{
  switch (dt) {
  case WEFT_INT8: return ncclInt8;
  case WEFT_UINT8: return ncclUint8;
  case WEFT_INT32: return ncclInt32;
  case WEFT_INT64: return ncclInt64;
  case WEFT_FLOAT16: return ncclFloat16;
  case WEFT_BFLOAT16: return ncclBfloat16;
  case WEFT_FLOAT64: return ncclFloat64;
  default: return ncclFloat32;
  }
}

static ncclRedOp_t nccl_op(weft_op op)
{
  switch (op) {
  case WEFT_PROD: return ncclProd;
  case WEFT_MIN: return ncclMin;
  case WEFT_MAX: return ncclMax;
  case WEFT_AVG: return ncclAvg;
  default: return ncclSum;
  }
}

int bench_nccl_open(struct bench_args *a, MPI_Comm comm, char *why, size_t whylen)
{
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclUniqueId id;
  ncclComm_t nc = NULL;
  ncclResult_t res = ncclSuccess;
  const char *t = getenv("WEFT_INIT_TIMEOUT");
  double timeout = t && atof(t) > 0 ? atof(t) : 120;
  int ok, all = 0;

  memset(&id, 0, sizeof(id));
  if (a->rank == 0)
    res = ncclGetUniqueId(&id);
  ok = res == ncclSuccess;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    snprintf(why, whylen, "ncclGetUniqueId failed on rank 0");
    return WEFT_ENCCL;
  }
  if (MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, comm) != MPI_SUCCESS) {
    snprintf(why, whylen, "MPI_Bcast of the NCCL id failed");
    return WEFT_EMPI;
  }
  config.blocking = 0;
  res = ncclCommInitRankConfig(&nc, a->nranks, id, a->rank, &config);
  if (nc)
    res = settle(nc, res, timeout);
  ok = res == ncclSuccess;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    snprintf(why, whylen, "the raw NCCL communicator did not come up%s: %s",
             res == ncclInProgress ? " in time (WEFT_INIT_TIMEOUT)" : "",
             ok ? "failed on another rank" : ncclGetErrorString(res));
    if (nc)
      ncclCommAbort(nc);
    return WEFT_ENCCL;
  }
  a->nccl = nc;
  return 0;
}

void bench_nccl_close(struct bench_args *a)
{
  if (a->nccl)
    ncclCommDestroy((ncclComm_t)a->nccl);
  a->nccl = NULL;
}

int bench_nccl_allreduce(struct bench_args *a, const void *s, void *r, size_t count)
{
  return done(a, ncclAllReduce(s, r, count, nccl_type(a->dtype), nccl_op(a->op),
                               (ncclComm_t)a->nccl, (cudaStream_t)a->stream));
}

int bench_nccl_allgather(struct bench_args *a, const void *s, void *r, size_t sendcount)
{
  return done(a, ncclAllGather(s, r, sendcount, nccl_type(a->dtype), (ncclComm_t)a->nccl,
                               (cudaStream_t)a->stream));
}

int bench_nccl_reduce_scatter(struct bench_args *a, const void *s, void *r, size_t recvcount)
{
  return done(a, ncclReduceScatter(s, r, recvcount, nccl_type(a->dtype), nccl_op(a->op),
                                   (ncclComm_t)a->nccl, (cudaStream_t)a->stream));
}

int bench_nccl_broadcast(struct bench_args *a, void *buf, size_t count)
{
  return done(a, ncclBroadcast(buf, buf, count, nccl_type(a->dtype), a->root, (ncclComm_t)a->nccl,
                               (cudaStream_t)a->stream));
}

int bench_nccl_sendrecv(struct bench_args *a, const void *s, void *r, size_t count, int to,
                        int from)
{
  ncclComm_t nc = (ncclComm_t)a->nccl;
  ncclResult_t res;

  res = ncclGroupStart();
  if (res == ncclSuccess)
    res = ncclSend(s, count, nccl_type(a->dtype), to, nc, (cudaStream_t)a->stream);
  if (res == ncclSuccess || res == ncclInProgress)
    res = ncclRecv(r, count, nccl_type(a->dtype), from, nc, (cudaStream_t)a->stream);
  if (res == ncclSuccess || res == ncclInProgress)
    res = ncclGroupEnd();
  else
    ncclGroupEnd();
  return done(a, res);
}

/* alltoall_perf's form: every peer's send and receive in one group (empty
 * blocks too, as there; our own a send to ourselves). */
int bench_nccl_alltoall(struct bench_args *a, const void *s, void *r, size_t count)
{
  ncclComm_t nc = (ncclComm_t)a->nccl;
  size_t bytes = count * a->esize;
  ncclResult_t res;

  res = ncclGroupStart();
  for (int k = 0; k < a->nranks && (res == ncclSuccess || res == ncclInProgress); k++) {
    res = ncclSend((const char *)s + (size_t)k * bytes, count, nccl_type(a->dtype), k, nc,
                   (cudaStream_t)a->stream);
    if (res == ncclSuccess || res == ncclInProgress)
      res = ncclRecv((char *)r + (size_t)k * bytes, count, nccl_type(a->dtype), k, nc,
                     (cudaStream_t)a->stream);
  }
  if (res == ncclSuccess || res == ncclInProgress)
    res = ncclGroupEnd();
  else
    ncclGroupEnd();
  return done(a, res);
}
