/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loader of the CUDA runtime and NCCL (nccl-dl.h). Each library is
 * opened by its soname first, so that LD_LIBRARY_PATH (and ld.so.cache)
 * decide, as they would for a linked library; then in the directory where
 * configure found it (lib64 or lib, NCCL's tarballs and the pip wheel use
 * lib). What the libraries lack is said in one line: NCCL before 2.14 (no
 * non-blocking init) is refused; before 2.18 (no ncclCommSplit) mesh groups
 * come up on their own at first use; a CUDA runtime before 12.8 has no
 * batched copies and buckets copy tensor by tensor.
 */
#include "rt_private.h"
#include "nccl-dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct weft__nccl_api weft__nccl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = WEFT_ENONCCL;
static char why[512] = "";

static void *open_lib(const char *soname, const char *dir, char *err, size_t len)
{
  char path[1024];
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

  if (lib)
    return lib;
  weft__snprintf(err, len, "%s", dlerror());
  if (dir && *dir && weft__snprintf(path, sizeof(path), "%s/%s", dir, soname) == 0 &&
      (lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL)
    return lib;
  return NULL;
}

/* Assign a dlsym() result to a function pointer without a pedantic cast
 * warning; a required symbol that is missing ends the load. */
#define SYM(lib, field, name, required)                                                            \
  do {                                                                                             \
    void *s_ = dlsym(lib, name);                                                                   \
    if (!s_ && (required)) {                                                                       \
      weft__snprintf(why, sizeof(why), "%s has no %s",                                             \
                     lib == rt ? WEFT_CUDART_SONAME : "libnccl.so.2", name);                       \
      goto fail;                                                                                   \
    }                                                                                              \
    memcpy(&weft__nccl.field, &s_, sizeof(s_));                                                    \
  } while (0)

static void load(void)
{
  char err[256];
  void *drv;
  void *rt = open_lib(WEFT_CUDART_SONAME, WEFT_CUDA_LIBDIR, err, sizeof(err)), *nc = NULL;

  if (!rt) {
    weft__snprintf(why, sizeof(why),
                   "the CUDA runtime cannot be loaded (%s); put its "
                   "directory in LD_LIBRARY_PATH",
                   err);
    load_rc = WEFT_ENOCUDA;
    return;
  }
  nc = open_lib("libnccl.so.2", WEFT_NCCL_LIBDIR, err, sizeof(err));
  if (!nc) {
    weft__snprintf(why, sizeof(why),
                   "NCCL cannot be loaded (%s); install NCCL or put the "
                   "directory of libnccl.so.2 in LD_LIBRARY_PATH",
                   err);
    goto fail;
  }
  SYM(rt, GetDeviceCount, "cudaGetDeviceCount", 1);
  SYM(rt, SetDevice, "cudaSetDevice", 1);
  SYM(rt, GetLastError, "cudaGetLastError", 1);
  SYM(rt, GetErrorString, "cudaGetErrorString", 1);
  SYM(rt, Malloc, "cudaMalloc", 1);
  SYM(rt, Free, "cudaFree", 1);
  SYM(rt, MemcpyAsync, "cudaMemcpyAsync", 1);
  SYM(rt, MemcpyBatchAsync, "cudaMemcpyBatchAsync", 0);
  SYM(rt, EventCreateWithFlags, "cudaEventCreateWithFlags", 1);
  SYM(rt, EventRecord, "cudaEventRecord", 1);
  SYM(rt, EventQuery, "cudaEventQuery", 1);
  SYM(rt, EventDestroy, "cudaEventDestroy", 1);
  SYM(rt, StreamIsCapturing, "cudaStreamIsCapturing", 1);
  SYM(nc, GetVersion, "ncclGetVersion", 1);
  SYM(nc, GetUniqueId, "ncclGetUniqueId", 1);
  SYM(nc, CommInitRankConfig, "ncclCommInitRankConfig", 1);
  SYM(nc, CommGetAsyncError, "ncclCommGetAsyncError", 1);
  SYM(nc, CommAbort, "ncclCommAbort", 1);
  SYM(nc, CommFinalize, "ncclCommFinalize", 1);
  SYM(nc, CommDestroy, "ncclCommDestroy", 1);
  SYM(nc, CommSplit, "ncclCommSplit", 0);
  SYM(nc, NcclErrorString, "ncclGetErrorString", 1);
  SYM(nc, NcclLastError, "ncclGetLastError", 1);
  SYM(nc, AllReduce, "ncclAllReduce", 1);
  SYM(nc, Broadcast, "ncclBroadcast", 1);
  SYM(nc, AllGather, "ncclAllGather", 1);
  SYM(nc, ReduceScatter, "ncclReduceScatter", 1);
  SYM(nc, Send, "ncclSend", 1);
  SYM(nc, Recv, "ncclRecv", 1);
  SYM(nc, GroupStart, "ncclGroupStart", 1);
  SYM(nc, GroupEnd, "ncclGroupEnd", 1);
  if (weft__nccl.GetVersion(&weft__nccl.version) != ncclSuccess || weft__nccl.version < 21400) {
    weft__snprintf(why, sizeof(why), "libnccl.so.2 is NCCL %d.%d.%d; weft needs 2.14 or later",
                   weft__nccl.version / 10000, weft__nccl.version / 100 % 100,
                   weft__nccl.version % 100);
    goto fail;
  }
  if (weft__nccl.version < 21800)
    weft__nccl.CommSplit = NULL;
  /* The driver is loaded already (device.c asked it about pointers). */
  if ((drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) != NULL) {
    void *g = dlsym(drv, "cuCtxGetCurrent"), *s = dlsym(drv, "cuCtxSetCurrent");
    if (g && s) {
      memcpy(&weft__nccl.CtxGetCurrent, &g, sizeof(g));
      memcpy(&weft__nccl.CtxSetCurrent, &s, sizeof(s));
    }
  }
  WEFT__LOG(RT, "loaded %s and NCCL %d%s%s", WEFT_CUDART_SONAME, weft__nccl.version,
            weft__nccl.CommSplit ? "" : " (no ncclCommSplit)",
            weft__nccl.MemcpyBatchAsync ? "" : " (no cudaMemcpyBatchAsync)");
  load_rc = 0;
  return; /* the libraries stay loaded for the life of the process */
fail:
  memset(&weft__nccl, 0, sizeof(weft__nccl));
  if (nc)
    dlclose(nc);
  dlclose(rt);
  load_rc = WEFT_ENONCCL;
}

int weft__nc_cuda_fail(weft_ctx *ctx, const char *what, cudaError_t e)
{
  (void)cudaGetLastError();
  return weft__rt_fail(ctx, WEFT_ECUDA, "%s: %s", what, cudaGetErrorString(e));
}

int weft__nccl_ctx_get(void **ctx)
{
  *ctx = NULL;
  return weft__nccl.CtxGetCurrent && weft__nccl.CtxGetCurrent(ctx) == 0 ? 0 : -1;
}

void weft__nccl_ctx_set(void *ctx)
{
  if (weft__nccl.CtxSetCurrent)
    (void)weft__nccl.CtxSetCurrent(ctx);
}

int weft__nccl_load(const char **reason)
{
  if (pthread_once(&once, load) != 0)
    return WEFT_ENONCCL;
  if (reason)
    *reason = why;
  return load_rc;
}
