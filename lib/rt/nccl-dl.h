/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA runtime and NCCL, opened with dlopen() the first time a device
 * buffer needs them (nccl-dl.c), so that libweft.so does not need them to
 * load and a CPU-only program never maps NCCL's 200 MB. The build still needs
 * their headers (WEFT_HAVE_NCCL); backend-nccl.c calls them by their usual
 * names, which the macros below send through a table that weft__nccl_load()
 * fills (as lib/gcp/curl-dl.h does for libcurl).
 */
#ifndef WEFT_RT_NCCL_DL_H
#define WEFT_RT_NCCL_DL_H

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions as f() (no prototype). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

struct weft__nccl_api {
  /* CUDA runtime */
  cudaError_t (*GetDeviceCount)(int *n);
  cudaError_t (*SetDevice)(int d);
  cudaError_t (*GetLastError)(void);
  const char *(*GetErrorString)(cudaError_t e);
  cudaError_t (*Malloc)(void **p, size_t bytes);
  cudaError_t (*Free)(void *p);
  cudaError_t (*MemcpyAsync)(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                             cudaStream_t st);
  /* CUDA 12.8 and later; NULL before (CUDA 12's has another signature, so
   * only a runtime of the major version weft was built with is opened). */
  cudaError_t (*MemcpyBatchAsync)(void *const *d, const void *const *s, const size_t *n,
                                  size_t count, struct cudaMemcpyAttributes *attrs,
                                  size_t *attrs_idx, size_t nattrs, cudaStream_t st);
  cudaError_t (*EventCreateWithFlags)(cudaEvent_t *e, unsigned flags);
  cudaError_t (*EventRecord)(cudaEvent_t e, cudaStream_t st);
  cudaError_t (*EventQuery)(cudaEvent_t e);
  cudaError_t (*EventDestroy)(cudaEvent_t e);
  cudaError_t (*StreamIsCapturing)(cudaStream_t st, enum cudaStreamCaptureStatus *status);
  /* The driver's current context of the thread (libcuda.so.1; NULL where
   * the driver lacks them: the thread's device is then left as weft set it). */
  int (*CtxGetCurrent)(void **ctx);
  int (*CtxSetCurrent)(void *ctx);
  /* NCCL */
  ncclResult_t (*GetVersion)(int *v);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
  ncclResult_t (*CommInitRankConfig)(ncclComm_t *c, int n, ncclUniqueId id, int rank,
                                     ncclConfig_t *cfg);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t c, ncclResult_t *st);
  ncclResult_t (*CommAbort)(ncclComm_t c);
  ncclResult_t (*CommFinalize)(ncclComm_t c);
  ncclResult_t (*CommDestroy)(ncclComm_t c);
  /* NCCL 2.18 and later; NULL before (groups then come up lazily). */
  ncclResult_t (*CommSplit)(ncclComm_t c, int color, int key, ncclComm_t *out, ncclConfig_t *cfg);
  const char *(*NcclErrorString)(ncclResult_t r);
  const char *(*NcclLastError)(ncclComm_t c);
  ncclResult_t (*AllReduce)(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op,
                            ncclComm_t c, cudaStream_t st);
  ncclResult_t (*Broadcast)(const void *s, void *r, size_t n, ncclDataType_t dt, int root,
                            ncclComm_t c, cudaStream_t st);
  ncclResult_t (*AllGather)(const void *s, void *r, size_t n, ncclDataType_t dt, ncclComm_t c,
                            cudaStream_t st);
  ncclResult_t (*ReduceScatter)(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op,
                                ncclComm_t c, cudaStream_t st);
  ncclResult_t (*Send)(const void *b, size_t n, ncclDataType_t dt, int peer, ncclComm_t c,
                       cudaStream_t st);
  ncclResult_t (*Recv)(void *b, size_t n, ncclDataType_t dt, int peer, ncclComm_t c,
                       cudaStream_t st);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  int version; /* ncclGetVersion's */
};

extern struct weft__nccl_api weft__nccl;

/* Open the CUDA runtime and NCCL once (thread-safe): 0, or WEFT_ENONCCL /
 * WEFT_ENOCUDA with the reason in *why (a static string). */
int weft__nccl_load(const char **why);

/* A CUDA error as the failure of the call: weft__rt_fail's code WEFT_ECUDA,
 * "what: CUDA's words"; CUDA's last error is cleared. */
int weft__nc_cuda_fail(weft_ctx *ctx, const char *what, cudaError_t e);

/* The thread's current CUDA context (NULL: none) into *ctx, and making one
 * current again (NULL: none), through the driver, which makes no context:
 * weft puts back what a thread had after its own device work. 0, or -1 when
 * the driver cannot say (then nothing is put back). */
#define WEFT__CTX_UNKNOWN ((void *)-1)
int weft__nccl_ctx_get(void **ctx);
void weft__nccl_ctx_set(void *ctx);

#undef cudaGetDeviceCount
#define cudaGetDeviceCount weft__nccl.GetDeviceCount
#undef cudaSetDevice
#define cudaSetDevice weft__nccl.SetDevice
#undef cudaGetLastError
#define cudaGetLastError weft__nccl.GetLastError
#undef cudaGetErrorString
#define cudaGetErrorString weft__nccl.GetErrorString
#undef cudaMalloc
#define cudaMalloc weft__nccl.Malloc
#undef cudaFree
#define cudaFree weft__nccl.Free
#undef cudaMemcpyAsync
#define cudaMemcpyAsync weft__nccl.MemcpyAsync
#undef cudaMemcpyBatchAsync
#define cudaMemcpyBatchAsync weft__nccl.MemcpyBatchAsync
#undef cudaEventCreateWithFlags
#define cudaEventCreateWithFlags weft__nccl.EventCreateWithFlags
#undef cudaEventRecord
#define cudaEventRecord weft__nccl.EventRecord
#undef cudaEventQuery
#define cudaEventQuery weft__nccl.EventQuery
#undef cudaEventDestroy
#define cudaEventDestroy weft__nccl.EventDestroy
#undef cudaStreamIsCapturing
#define cudaStreamIsCapturing weft__nccl.StreamIsCapturing
#define ncclGetUniqueId weft__nccl.GetUniqueId
#define ncclCommInitRankConfig weft__nccl.CommInitRankConfig
#define ncclCommGetAsyncError weft__nccl.CommGetAsyncError
#define ncclCommAbort weft__nccl.CommAbort
#define ncclCommFinalize weft__nccl.CommFinalize
#define ncclCommDestroy weft__nccl.CommDestroy
#define ncclCommSplit weft__nccl.CommSplit
#define ncclGetErrorString weft__nccl.NcclErrorString
#define ncclGetLastError weft__nccl.NcclLastError
#define ncclAllReduce weft__nccl.AllReduce
#define ncclBroadcast weft__nccl.Broadcast
#define ncclAllGather weft__nccl.AllGather
#define ncclReduceScatter weft__nccl.ReduceScatter
#define ncclSend weft__nccl.Send
#define ncclRecv weft__nccl.Recv
#define ncclGroupStart weft__nccl.GroupStart
#define ncclGroupEnd weft__nccl.GroupEnd

#endif /* WEFT_RT_NCCL_DL_H */
