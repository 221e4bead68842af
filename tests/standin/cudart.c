/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA runtime API of the stand-in (libcudart.so.13, symbol version
 * libcudart.so.13 as the real one has): devices, memory, copies, streams,
 * events, host functions, errors, pointer attributes. Copies keep CUDA's
 * documented synchronisation behaviour ("API synchronization behavior" in the
 * runtime API reference), which is what makes a missing synchronisation show:
 *  - cudaMemcpy from pageable host memory to the device returns once the data
 *    is staged, before it lands; to the host it returns when it is done;
 *    device to device it does not wait at all;
 *  - cudaMemcpyAsync from pageable memory stages it at once; to pageable
 *    memory it waits; cudaMemset is asynchronous.
 * Which calls create a context follows CUDA 12 and later: cudaSetDevice, and
 * any call that needs the device (memory, streams, events, copies,
 * cudaPointerGetAttributes); never cudaGetDeviceCount, cudaGetDeviceProperties
 * or cudaDeviceGetPCIBusId.
 */
#include "pci.h"
#include "standin.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* Also in libcuda.so.1; each library says what it is. */
EXPORT const char weft_standin_marker[] = "weft stand-in, not a GPU";

static __thread cudaError_t last = cudaSuccess;

static cudaError_t ret(cudaError_t e)
{
  if (e != cudaSuccess)
    last = e;
  return e;
}

/* The current device, which must exist (0 has no device at all). */
static cudaError_t need_device(const char *fn)
{
  wsi_api(fn);
  if (wsi_no_driver())
    return ret(cudaErrorInsufficientDriver);
  if (wsi_ndevices() == 0)
    return ret(cudaErrorNoDevice);
  if (wsi_physical(wsi_current()) < 0)
    return ret(cudaErrorInvalidDevice);
  wsi_context(wsi_current(), fn);
  return cudaSuccess;
}

/* ---- devices ---- */

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
  wsi_api("cudaGetDeviceCount");
  if (!count)
    return ret(cudaErrorInvalidValue);
  *count = 0;
  if (wsi_no_driver())
    return ret(cudaErrorInsufficientDriver);
  *count = wsi_ndevices();
  return *count ? cudaSuccess : ret(cudaErrorNoDevice);
}

EXPORT cudaError_t cudaSetDevice(int device)
{
  wsi_api("cudaSetDevice");
  if (wsi_no_driver())
    return ret(cudaErrorInsufficientDriver);
  if (wsi_ndevices() == 0)
    return ret(cudaErrorNoDevice);
  if (device < 0 || device >= wsi_ndevices())
    return ret(cudaErrorInvalidDevice);
  wsi_set_current(device);
  wsi_context(device, "cudaSetDevice");
  return cudaSuccess;
}

EXPORT cudaError_t cudaGetDevice(int *device)
{
  wsi_api("cudaGetDevice");
  if (!device)
    return ret(cudaErrorInvalidValue);
  if (wsi_ndevices() == 0)
    return ret(cudaErrorNoDevice);
  *device = wsi_current();
  return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
  int p;

  wsi_api("cudaGetDeviceProperties");
  if (!prop)
    return ret(cudaErrorInvalidValue);
  p = wsi_physical(device);
  if (p < 0)
    return ret(wsi_ndevices() ? cudaErrorInvalidDevice : cudaErrorNoDevice);
  memset(prop, 0, sizeof(*prop));
  snprintf(prop->name, sizeof(prop->name), "%s", WSI_NAME);
  /* GPU-57534900-0000-0000-0000-<physical>: "WSI" in the first bytes. */
  prop->uuid.bytes[0] = 0x57;
  prop->uuid.bytes[1] = 0x53;
  prop->uuid.bytes[2] = 0x49;
  prop->uuid.bytes[15] = (char)p;
  prop->totalGlobalMem = wsi_memory();
  prop->warpSize = 32;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 4;
  prop->pciBusID = (int)standin_pci_bus(p);
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int device)
{
  int p;

  wsi_api("cudaDeviceGetPCIBusId");
  if (!buf || len < 13)
    return ret(cudaErrorInvalidValue);
  p = wsi_physical(device);
  if (p < 0)
    return ret(cudaErrorInvalidDevice);
  snprintf(buf, (size_t)len, "0000:%02x:00.0", standin_pci_bus(p));
  return cudaSuccess;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
  if (!v)
    return ret(cudaErrorInvalidValue);
  *v = wsi_no_driver() ? 0 : 13000;
  return cudaSuccess;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
  if (!v)
    return ret(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
  cudaError_t e = need_device("cudaDeviceSynchronize");

  if (e != cudaSuccess)
    return e;
  wsi_device_sync(wsi_current());
  return cudaSuccess;
}

EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
  cudaError_t e = need_device("cudaMemGetInfo");

  if (e != cudaSuccess)
    return e;
  if (!free_bytes || !total)
    return ret(cudaErrorInvalidValue);
  *free_bytes = *total = wsi_memory();
  return cudaSuccess;
}

/* ---- memory ---- */

EXPORT cudaError_t cudaMalloc(void **p, size_t bytes)
{
  cudaError_t e = need_device("cudaMalloc");

  if (e != cudaSuccess)
    return e;
  if (!p)
    return ret(cudaErrorInvalidValue);
  *p = wsi_malloc_device(wsi_current(), bytes);
  return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

EXPORT cudaError_t cudaFree(void *p)
{
  cudaError_t e = need_device("cudaFree");

  if (e != cudaSuccess || !p)
    return e;
  if (wsi_free(p, WSI_DEVICE) != 0)
    wsi_violation("cudaFree of memory cudaMalloc did not return",
                  "cudaFree(%p): not the start of a live cudaMalloc allocation (freed twice, "
                  "or host memory)",
                  p);
  return cudaSuccess;
}

EXPORT cudaError_t cudaMallocHost(void **p, size_t bytes)
{
  cudaError_t e = need_device("cudaMallocHost");

  if (e != cudaSuccess)
    return e;
  if (!p)
    return ret(cudaErrorInvalidValue);
  *p = wsi_malloc_pinned(bytes);
  return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
  (void)flags;
  return cudaMallocHost(p, bytes);
}

EXPORT cudaError_t cudaFreeHost(void *p)
{
  wsi_api("cudaFreeHost");
  if (!p)
    return cudaSuccess;
  if (wsi_free(p, WSI_PINNED) != 0)
    wsi_violation("cudaFreeHost of memory cudaMallocHost did not return", "cudaFreeHost(%p)", p);
  return cudaSuccess;
}

EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr)
{
  /* This is the call that makes a context on the current device (the
   * contract weft keeps: CPU-only jobs never make one). */
  cudaError_t e = need_device("cudaPointerGetAttributes");
  int physical, ordinal;
  enum wsi_mem k;

  if (e != cudaSuccess)
    return e;
  if (!a)
    return ret(cudaErrorInvalidValue);
  memset(a, 0, sizeof(*a));
  k = wsi_kind(ptr, &physical, &ordinal);
  if (k == WSI_DEVICE) {
    a->type = cudaMemoryTypeDevice;
    a->device = ordinal;
    a->devicePointer = (void *)(uintptr_t)ptr;
  } else if (k == WSI_PINNED) {
    a->type = cudaMemoryTypeHost;
    a->device = wsi_current();
    a->devicePointer = a->hostPointer = (void *)(uintptr_t)ptr;
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
  }
  return cudaSuccess;
}

/* ---- copies and memset ---- */

struct copy {
  char *dst;
  const char *src;
  size_t n;
  void *staging;
};

static void copy_run(void *arg)
{
  struct copy *c = arg;

  memmove(c->dst, c->src, c->n);
  free(c->staging);
  free(c);
}

static const char *const kinds[] = {"cudaMemcpyHostToHost", "cudaMemcpyHostToDevice",
                                    "cudaMemcpyDeviceToHost", "cudaMemcpyDeviceToDevice",
                                    "cudaMemcpyDefault"};

static cudaError_t copy(const char *fn, void *dst, const void *src, size_t n,
                        enum cudaMemcpyKind kind, cudaStream_t stream, int sync_api)
{
  int dp, sp, ddev, sdev, nr = 0;
  enum wsi_mem dk, sk;
  struct wsi_range r[2];
  struct copy *c;
  wsi_stream *s;
  uint64_t seq;
  int wait;
  cudaError_t e = need_device(fn);

  if (e != cudaSuccess)
    return e;
  if ((int)kind < 0 || (int)kind > 4)
    return ret(cudaErrorInvalidMemcpyDirection);
  if (n == 0)
    return cudaSuccess;
  if (!dst || !src)
    return ret(cudaErrorInvalidValue);
  dk = wsi_kind(dst, &dp, NULL);
  sk = wsi_kind(src, &sp, NULL);
  ddev = dk == WSI_DEVICE;
  sdev = sk == WSI_DEVICE;
  if ((kind == cudaMemcpyHostToHost && (ddev || sdev)) ||
      (kind == cudaMemcpyHostToDevice && (!ddev || sdev)) ||
      (kind == cudaMemcpyDeviceToHost && (ddev || !sdev)) ||
      (kind == cudaMemcpyDeviceToDevice && (!ddev || !sdev)))
    wsi_violation("copy direction does not match the memory",
                  "%s(%p <- %p, %zu bytes, %s): the destination is %s memory and the source %s "
                  "memory",
                  fn, dst, src, n, kinds[kind], ddev ? "device" : "host", sdev ? "device" : "host");
  s = wsi_stream_get(sync_api ? NULL : (void *)stream, fn);
  c = calloc(1, sizeof(*c));
  if (!c)
    return ret(cudaErrorMemoryAllocation);
  c->n = n;
  c->dst = wsi_bytes(dst, n, fn, "the destination");
  c->src = wsi_bytes(src, n, fn, "the source");
  if (ddev)
    r[nr++] = (struct wsi_range){dst, n, 1};
  if (sdev)
    r[nr++] = (struct wsi_range){src, n, 0};
  if (ddev && sk == WSI_HOST) {
    /* Pageable to device: staged now, so the caller may reuse its buffer;
     * the DMA to the device comes later, in stream order. cudaMemcpy first
     * waits for the stream ("a stream sync is performed before the copy"). */
    if (sync_api)
      wsi_stream_sync(s);
    c->staging = malloc(n);
    if (!c->staging) {
      free(c);
      return ret(cudaErrorMemoryAllocation);
    }
    memcpy(c->staging, src, n);
    c->src = c->staging;
  }
  if (sync_api)
    wait = !ddev || (sk == WSI_PINNED); /* to the host, or from pinned memory */
  else
    wait = (!ddev && dk == WSI_HOST) || (!ddev && !sdev); /* to pageable memory */
  seq = wsi_enqueue(s, fn, r, nr, copy_run, c);
  if (wait)
    wsi_wait_op(s, seq);
  return cudaSuccess;
}

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
  return copy("cudaMemcpy", dst, src, n, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                   cudaStream_t stream)
{
  return copy("cudaMemcpyAsync", dst, src, n, kind, stream, 0);
}

struct batch {
  size_t count;
  char **dst;
  const char **src;
  size_t *n;
  void **staging;
};

static void batch_run(void *arg)
{
  struct batch *b = arg;
  size_t i;

  for (i = 0; i < b->count; i++) {
    memmove(b->dst[i], b->src[i], b->n[i]);
    free(b->staging[i]);
  }
  free(b->dst);
  free(b->src);
  free(b->n);
  free(b->staging);
  free(b);
}

EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
                                        const size_t *sizes, size_t count,
                                        struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                        size_t numAttrs, cudaStream_t stream)
{
  struct wsi_range *r;
  struct batch *b;
  wsi_stream *s;
  size_t i, nr = 0;
  cudaError_t e = need_device("cudaMemcpyBatchAsync");

  if (e != cudaSuccess)
    return e;
  if ((uintptr_t)stream <= 1)
    wsi_violation("cudaMemcpyBatchAsync on the legacy stream",
                  "the stream must not be the legacy NULL stream (CUDA runtime API reference, "
                  "cudaMemcpyBatchAsync)");
  if (!dsts || !srcs || !sizes || count == 0 || !attrs || !attrsIdxs || numAttrs == 0 ||
      numAttrs > count || attrsIdxs[0] != 0)
    return ret(cudaErrorInvalidValue);
  for (i = 0; i < numAttrs; i++) {
    if (attrs[i].srcAccessOrder < cudaMemcpySrcAccessOrderStream ||
        attrs[i].srcAccessOrder > cudaMemcpySrcAccessOrderAny)
      return ret(cudaErrorInvalidValue);
    if (i > 0 && (attrsIdxs[i] <= attrsIdxs[i - 1] || attrsIdxs[i] >= count))
      return ret(cudaErrorInvalidValue);
  }
  s = wsi_stream_get(stream, "cudaMemcpyBatchAsync");
  b = calloc(1, sizeof(*b));
  r = calloc(2 * count, sizeof(*r));
  if (b) {
    b->dst = calloc(count, sizeof(*b->dst));
    b->src = calloc(count, sizeof(*b->src));
    b->n = calloc(count, sizeof(*b->n));
    b->staging = calloc(count, sizeof(*b->staging));
  }
  if (!b || !r || !b->dst || !b->src || !b->n || !b->staging)
    wsi_violation("out of memory", "cudaMemcpyBatchAsync of %zu copies", count);
  b->count = count;
  for (i = 0; i < count; i++) {
    enum wsi_mem dk = wsi_kind(dsts[i], NULL, NULL), sk = wsi_kind(srcs[i], NULL, NULL);
    if (!dsts[i] || !srcs[i])
      return ret(cudaErrorInvalidValue);
    b->n[i] = sizes[i];
    b->dst[i] = wsi_bytes(dsts[i], sizes[i], "cudaMemcpyBatchAsync", "a destination");
    b->src[i] = wsi_bytes(srcs[i], sizes[i], "cudaMemcpyBatchAsync", "a source");
    if (dk == WSI_DEVICE)
      r[nr++] = (struct wsi_range){dsts[i], sizes[i], 1};
    if (sk == WSI_DEVICE)
      r[nr++] = (struct wsi_range){srcs[i], sizes[i], 0};
    else if (sizes[i]) {
      b->staging[i] = malloc(sizes[i]);
      if (!b->staging[i])
        wsi_violation("out of memory", "cudaMemcpyBatchAsync staging");
      memcpy(b->staging[i], srcs[i], sizes[i]);
      b->src[i] = b->staging[i];
    }
  }
  wsi_enqueue(s, "cudaMemcpyBatchAsync", r, (int)nr, batch_run, b);
  free(r);
  return cudaSuccess;
}

struct set {
  char *p;
  int v;
  size_t n;
};

static void set_run(void *arg)
{
  struct set *m = arg;

  memset(m->p, m->v, m->n);
  free(m);
}

static cudaError_t set(const char *fn, void *p, int v, size_t n, cudaStream_t stream, int sync_api)
{
  struct wsi_range r;
  struct set *m;
  wsi_stream *s;
  enum wsi_mem k;
  uint64_t seq;
  cudaError_t e = need_device(fn);

  if (e != cudaSuccess)
    return e;
  if (n == 0)
    return cudaSuccess;
  k = wsi_kind(p, NULL, NULL);
  if (k == WSI_HOST)
    wsi_violation("host pointer passed as device memory", "%s(%p, %d, %zu): not device memory",
                  fn, p, v, n);
  s = wsi_stream_get(sync_api ? NULL : (void *)stream, fn);
  m = malloc(sizeof(*m));
  if (!m)
    return ret(cudaErrorMemoryAllocation);
  m->p = wsi_bytes(p, n, fn, "the buffer");
  m->v = v;
  m->n = n;
  r = (struct wsi_range){p, n, 1};
  seq = wsi_enqueue(s, fn, &r, 1, set_run, m);
  if (k == WSI_PINNED)
    wsi_wait_op(s, seq);
  return cudaSuccess;
}

EXPORT cudaError_t cudaMemset(void *p, int v, size_t n)
{
  return set("cudaMemset", p, v, n, NULL, 1);
}

EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t stream)
{
  return set("cudaMemsetAsync", p, v, n, stream, 0);
}

/* ---- streams ---- */

static cudaError_t stream_create(cudaStream_t *out, unsigned flags, const char *fn)
{
  cudaError_t e = need_device(fn);
  wsi_stream *s;

  if (e != cudaSuccess)
    return e;
  if (!out || (flags & ~(unsigned)cudaStreamNonBlocking))
    return ret(cudaErrorInvalidValue);
  s = wsi_stream_create(wsi_current(), (flags & cudaStreamNonBlocking) != 0);
  if (!s)
    return ret(cudaErrorInvalidDevice);
  *out = (cudaStream_t)(void *)s;
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamCreate(cudaStream_t *out)
{
  return stream_create(out, cudaStreamDefault, "cudaStreamCreate");
}

EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
  return stream_create(out, flags, "cudaStreamCreateWithFlags");
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
  wsi_api("cudaStreamDestroy");
  if ((uintptr_t)stream <= 2)
    return ret(cudaErrorInvalidResourceHandle);
  wsi_stream_destroy(wsi_stream_get(stream, "cudaStreamDestroy"), "cudaStreamDestroy");
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  cudaError_t e = need_device("cudaStreamSynchronize");

  if (e != cudaSuccess)
    return e;
  wsi_stream_sync(wsi_stream_get(stream, "cudaStreamSynchronize"));
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
  cudaError_t e = need_device("cudaStreamQuery");

  if (e != cudaSuccess)
    return e;
  /* Not ready is not an error: it does not stay as the last error. */
  return wsi_stream_done(wsi_stream_get(stream, "cudaStreamQuery")) ? cudaSuccess
                                                                     : cudaErrorNotReady;
}

EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
  cudaError_t e = need_device("cudaStreamWaitEvent");

  if (e != cudaSuccess)
    return e;
  if (flags != 0)
    return ret(cudaErrorInvalidValue);
  wsi_stream_wait_event(wsi_stream_get(stream, "cudaStreamWaitEvent"),
                        wsi_event_get(event, "cudaStreamWaitEvent"));
  return cudaSuccess;
}

struct hostfn {
  cudaHostFn_t fn;
  void *data;
};

static void hostfn_run(void *arg)
{
  struct hostfn *h = arg;

  wsi_set_in_host_fn(1);
  h->fn(h->data);
  wsi_set_in_host_fn(0);
  free(h);
}

EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *data)
{
  struct hostfn *h;
  cudaError_t e = need_device("cudaLaunchHostFunc");

  if (e != cudaSuccess)
    return e;
  if (!fn)
    return ret(cudaErrorInvalidValue);
  h = malloc(sizeof(*h));
  if (!h)
    return ret(cudaErrorMemoryAllocation);
  h->fn = fn;
  h->data = data;
  wsi_enqueue(wsi_stream_get(stream, "cudaLaunchHostFunc"), "cudaLaunchHostFunc", NULL, 0,
              hostfn_run, h);
  return cudaSuccess;
}

/* ---- events ---- */

static cudaError_t event_create(cudaEvent_t *out, unsigned flags, const char *fn)
{
  cudaError_t e = need_device(fn);
  wsi_event *ev;

  if (e != cudaSuccess)
    return e;
  if (!out || (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming |
                                   cudaEventInterprocess)))
    return ret(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return ret(cudaErrorInvalidValue);
  ev = wsi_event_create(wsi_current(), !(flags & cudaEventDisableTiming));
  if (!ev)
    return ret(cudaErrorInvalidDevice);
  *out = (cudaEvent_t)(void *)ev;
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventCreate(cudaEvent_t *out)
{
  return event_create(out, cudaEventDefault, "cudaEventCreate");
}

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
  return event_create(out, flags, "cudaEventCreateWithFlags");
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
  wsi_api("cudaEventDestroy");
  wsi_event_destroy(wsi_event_get(event, "cudaEventDestroy"));
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
  wsi_event *e;
  wsi_stream *s;
  cudaError_t err = need_device("cudaEventRecord");

  if (err != cudaSuccess)
    return err;
  e = wsi_event_get(event, "cudaEventRecord");
  s = wsi_stream_get(stream, "cudaEventRecord");
  wsi_event_record(e, s);
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
  wsi_api("cudaEventQuery");
  return wsi_event_done(wsi_event_get(event, "cudaEventQuery")) ? cudaSuccess
                                                                 : cudaErrorNotReady;
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  wsi_api("cudaEventSynchronize");
  wsi_event_sync(wsi_event_get(event, "cudaEventSynchronize"));
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  double v;

  wsi_api("cudaEventElapsedTime");
  if (!ms)
    return ret(cudaErrorInvalidValue);
  v = wsi_event_elapsed(wsi_event_get(start, "cudaEventElapsedTime"),
                        wsi_event_get(end, "cudaEventElapsedTime"));
  if (v == -2)
    return ret(cudaErrorInvalidResourceHandle);
  if (v < 0)
    return ret(cudaErrorNotReady);
  *ms = (float)v;
  return cudaSuccess;
}

/* ---- errors ---- */

EXPORT cudaError_t cudaGetLastError(void)
{
  cudaError_t e = last;

  last = cudaSuccess;
  return e;
}

EXPORT cudaError_t cudaPeekAtLastError(void)
{
  return last;
}

static const struct {
  cudaError_t code;
  const char *name, *text;
} errors[] = {
  {cudaSuccess, "cudaSuccess", "no error"},
  {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
  {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
  {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
   "invalid copy direction for memcpy"},
  {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
   "CUDA driver version is insufficient for CUDA runtime version"},
  {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
  {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
  {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
  {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
};

EXPORT const char *cudaGetErrorString(cudaError_t e)
{
  size_t i;

  for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == e)
      return errors[i].text;
  return "unrecognized error code";
}

EXPORT const char *cudaGetErrorName(cudaError_t e)
{
  size_t i;

  for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == e)
      return errors[i].name;
  return "cudaErrorUnknown";
}
