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
 * cudaPointerGetAttributes, graphs); never cudaGetDeviceCount, cudaGetDevice,
 * cudaGetDeviceProperties, cudaDeviceGetPCIBusId or cudaDeviceGetByPCIBusId.
 * A call that needs a context uses the one current to the thread, else the
 * primary context of the thread's device, made current ("Interactions with
 * the CUDA Driver API", runtime API reference).
 *
 * Stream capture (CUDA programming guide, "CUDA Graphs", "Stream Capture"):
 * copies, memsets, batched copies and host functions queued on a capturing
 * stream become graph nodes (wsi_enqueue_replayable, each with a make that
 * copies it for a launch); event records and waits fork and join streams;
 * what capture forbids is the error CUDA returns (stream.c).
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

/* A stream capture error of the stand-in as CUDA's. */
static cudaError_t cap(int e)
{
  static const cudaError_t codes[] = {cudaSuccess,
                                      cudaErrorStreamCaptureUnsupported,
                                      cudaErrorStreamCaptureInvalidated,
                                      cudaErrorStreamCaptureImplicit,
                                      cudaErrorStreamCaptureIsolation,
                                      cudaErrorStreamCaptureMerge,
                                      cudaErrorStreamCaptureUnmatched,
                                      cudaErrorStreamCaptureUnjoined,
                                      cudaErrorStreamCaptureWrongThread,
                                      cudaErrorCapturedEvent,
                                      cudaErrorIllegalState,
                                      cudaErrorInvalidValue};

  return e == 0 ? cudaSuccess : ret(codes[e]);
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

/* "Returns in *device the current device for the calling host thread": the
 * device of the context current to the thread (cudaSetDevice or
 * cuCtxSetCurrent made it so), else the device cudaSetDevice last chose on
 * this thread, 0 when it never did. Makes no context. */
EXPORT cudaError_t cudaGetDevice(int *device)
{
  wsi_api("cudaGetDevice");
  if (!device)
    return ret(cudaErrorInvalidValue);
  if (wsi_no_driver())
    return ret(cudaErrorInsufficientDriver);
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
  snprintf(prop->name, sizeof(prop->name), "%s%s", WSI_NAME, wsi_is_mig(device) ? " MIG" : "");
  /* pci.h's UUIDs; a MIG instance's own (as cuDeviceGetUuid_v2). */
  {
    unsigned char u[16];
    wsi_device_uuid(device, 1, u);
    memcpy(prop->uuid.bytes, u, sizeof(u));
  }
  prop->totalGlobalMem = wsi_memory();
  prop->warpSize = 32;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 4;
  prop->pciBusID = (int)wsi_pci_bus(p);
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

/* cuda_runtime_api.h: "[domain]:[bus]:[device].[function]", 13 characters
 * with the NUL, upper-case hexadecimal as the real one writes it. */
EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int device)
{
  int p;

  wsi_api("cudaDeviceGetPCIBusId");
  if (!buf || len < 13)
    return ret(cudaErrorInvalidValue);
  p = wsi_physical(device);
  if (p < 0)
    return ret(cudaErrorInvalidDevice);
  snprintf(buf, (size_t)len, "%04X:%02X:%02X.%X", 0u, wsi_pci_bus(p), 0u, 0u);
  return cudaSuccess;
}

/* cuda_runtime_api.h: the forms [domain]:[bus]:[device].[function],
 * [domain]:[bus]:[device] and [bus]:[device].[function]; a malformed id is
 * cudaErrorInvalidValue, no visible device there (hidden by
 * CUDA_VISIBLE_DEVICES, or none) cudaErrorInvalidDevice. No context. */
EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *id)
{
  int d;

  wsi_api("cudaDeviceGetByPCIBusId");
  if (!device || !id)
    return ret(cudaErrorInvalidValue);
  if (wsi_no_driver())
    return ret(cudaErrorInsufficientDriver);
  d = wsi_by_bus_id(id);
  if (d == -1)
    return ret(cudaErrorInvalidValue);
  if (d < 0)
    return ret(cudaErrorInvalidDevice);
  *device = d;
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
  /* "invalid to ... synchronize a broader handle which encompasses an active
   * stream capture, such as a device" (programming guide, "Prohibited and
   * Unhandled Operations") */
  if ((e = cap(wsi_capture_device(wsi_physical(wsi_current()), "cudaDeviceSynchronize"))))
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
  if ((e = cap(wsi_capture_unsafe("cudaMalloc"))))
    return e;
  *p = wsi_malloc_device(wsi_current(), bytes);
  return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

EXPORT cudaError_t cudaFree(void *p)
{
  cudaError_t e = need_device("cudaFree");
  int physical;

  if (e != cudaSuccess || !p)
    return e;
  /* cudaFree synchronises the device: unsafe, and forbidden on a device that
   * captures */
  if ((e = cap(wsi_capture_unsafe("cudaFree"))))
    return e;
  if (wsi_kind(p, &physical, NULL) == WSI_DEVICE &&
      (e = cap(wsi_capture_device(physical, "cudaFree"))))
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
  if ((e = cap(wsi_capture_unsafe("cudaMallocHost"))))
    return e;
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
  cudaError_t e;

  wsi_api("cudaFreeHost");
  if (!p)
    return cudaSuccess;
  if ((e = cap(wsi_capture_unsafe("cudaFreeHost"))) ||
      (e = cap(wsi_capture_device(-1, "cudaFreeHost"))))
    return e;
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

/* The host address of bytes [p, p+n) at a launch of a captured graph: the
 * memory must still be what it was when captured (a graph keeps addresses). */
static char *replay_bytes(const void *p, size_t n, enum wsi_mem was, const char *what)
{
  static const char *const kind_names[] = {"pageable host", "device", "page-locked host"};

  if (wsi_kind(p, NULL, NULL) != was)
    wsi_violation("graph uses freed memory",
                  "cudaGraphLaunch: %s (%zu bytes at %p) was %s memory when it was captured "
                  "and is not any more",
                  what, n, p, kind_names[was]);
  return wsi_bytes(p, n, "cudaGraphLaunch", what);
}

static void *clone(const void *t, size_t size, const char *what)
{
  void *c = malloc(size);

  if (!c)
    wsi_violation("out of memory", "cudaGraphLaunch: %s", what);
  memcpy(c, t, size);
  return c;
}

/* A copy: run in the stream; its user addresses and kinds make a replay. */
struct copy {
  char *dst;
  const char *src;
  size_t n;
  void *staging;
  void *udst;
  const void *usrc;
  enum wsi_mem dk, sk;
};

static void copy_run(void *arg)
{
  struct copy *c = arg;

  memmove(c->dst, c->src, c->n);
  free(c->staging);
  free(c);
}

static void *copy_make(void *tmpl)
{
  struct copy *c = clone(tmpl, sizeof(*c), "a copy");

  c->staging = NULL;
  c->dst = replay_bytes(c->udst, c->n, c->dk, "the destination of a copy");
  c->src = replay_bytes(c->usrc, c->n, c->sk, "the source of a copy");
  return c;
}

static void copy_drop(void *tmpl)
{
  struct copy *c = tmpl;

  free(c->staging);
  free(c);
}

static const struct wsi_replay copy_replay = {copy_make, copy_drop};

static const char *const kinds[] = {"cudaMemcpyHostToHost", "cudaMemcpyHostToDevice",
                                    "cudaMemcpyDeviceToHost", "cudaMemcpyDeviceToDevice",
                                    "cudaMemcpyDefault"};

/* Pageable memory is not captured: the stand-in refuses it as CUDA does
 * (cudaErrorStreamCaptureUnsupported), its copies being staged or waited
 * for at the call. */
#define PAGEABLE_IN_CAPTURE                                                                        \
  "a copy to or from pageable host memory cannot be captured (device or page-locked "              \
  "memory only)"

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
  if ((e = cap(wsi_capture_use(s, fn, WSI_USE_ENQUEUE))))
    return e;
  /* cudaMemcpy waits for the copy: potentially unsafe during a capture */
  if (sync_api && (e = cap(wsi_capture_unsafe(fn))))
    return e;
  if ((dk == WSI_HOST || sk == WSI_HOST) &&
      (e = cap(wsi_capture_refuse(s, fn, PAGEABLE_IN_CAPTURE))))
    return e;
  c = calloc(1, sizeof(*c));
  if (!c)
    return ret(cudaErrorMemoryAllocation);
  c->n = n;
  c->udst = dst;
  c->usrc = src;
  c->dk = dk;
  c->sk = sk;
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
  seq = wsi_enqueue_replayable(s, fn, r, nr, copy_run, c, &copy_replay);
  if (wait && seq)
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

struct batch_item {
  char *dst;
  const char *src;
  size_t n;
  void *staging;
  void *udst;
  const void *usrc;
  enum wsi_mem dk, sk;
};

struct batch {
  size_t count;
  struct batch_item *it;
};

static void batch_free(struct batch *b)
{
  size_t i;

  for (i = 0; i < b->count; i++)
    free(b->it[i].staging);
  free(b->it);
  free(b);
}

static void batch_run(void *arg)
{
  struct batch *b = arg;
  size_t i;

  for (i = 0; i < b->count; i++)
    memmove(b->it[i].dst, b->it[i].src, b->it[i].n);
  batch_free(b);
}

static void *batch_make(void *tmpl)
{
  const struct batch *t = tmpl;
  struct batch *b = clone(t, sizeof(*b), "a batch of copies");
  size_t i;

  b->it = clone(t->it, t->count * sizeof(*t->it), "a batch of copies");
  for (i = 0; i < b->count; i++) {
    struct batch_item *x = &b->it[i];
    x->staging = NULL;
    x->dst = replay_bytes(x->udst, x->n, x->dk, "a destination of cudaMemcpyBatchAsync");
    x->src = replay_bytes(x->usrc, x->n, x->sk, "a source of cudaMemcpyBatchAsync");
  }
  return b;
}

static void batch_drop(void *tmpl) { batch_free(tmpl); }

static const struct wsi_replay batch_replay = {batch_make, batch_drop};

EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
                                        const size_t *sizes, size_t count,
                                        struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                        size_t numAttrs, cudaStream_t stream)
{
  struct wsi_range *r;
  struct batch *b;
  wsi_stream *s;
  size_t i, nr = 0;
  int pageable = 0;
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
  for (i = 0; i < count; i++) {
    if (!dsts[i] || !srcs[i])
      return ret(cudaErrorInvalidValue);
    pageable |=
      wsi_kind(dsts[i], NULL, NULL) == WSI_HOST || wsi_kind(srcs[i], NULL, NULL) == WSI_HOST;
  }
  s = wsi_stream_get(stream, "cudaMemcpyBatchAsync");
  if ((e = cap(wsi_capture_use(s, "cudaMemcpyBatchAsync", WSI_USE_ENQUEUE))))
    return e;
  if (pageable && (e = cap(wsi_capture_refuse(s, "cudaMemcpyBatchAsync", PAGEABLE_IN_CAPTURE))))
    return e;
  b = calloc(1, sizeof(*b));
  r = calloc(2 * count, sizeof(*r));
  if (b)
    b->it = calloc(count, sizeof(*b->it));
  if (!b || !r || !b->it)
    wsi_violation("out of memory", "cudaMemcpyBatchAsync of %zu copies", count);
  b->count = count;
  for (i = 0; i < count; i++) {
    struct batch_item *x = &b->it[i];
    x->dk = wsi_kind(dsts[i], NULL, NULL);
    x->sk = wsi_kind(srcs[i], NULL, NULL);
    x->udst = dsts[i];
    x->usrc = srcs[i];
    x->n = sizes[i];
    x->dst = wsi_bytes(dsts[i], sizes[i], "cudaMemcpyBatchAsync", "a destination");
    x->src = wsi_bytes(srcs[i], sizes[i], "cudaMemcpyBatchAsync", "a source");
    if (x->dk == WSI_DEVICE)
      r[nr++] = (struct wsi_range){dsts[i], sizes[i], 1};
    if (x->sk == WSI_DEVICE)
      r[nr++] = (struct wsi_range){srcs[i], sizes[i], 0};
    else if (sizes[i]) {
      x->staging = malloc(sizes[i]);
      if (!x->staging)
        wsi_violation("out of memory", "cudaMemcpyBatchAsync staging");
      memcpy(x->staging, srcs[i], sizes[i]);
      x->src = x->staging;
    }
  }
  wsi_enqueue_replayable(s, "cudaMemcpyBatchAsync", r, (int)nr, batch_run, b, &batch_replay);
  free(r);
  return cudaSuccess;
}

struct set {
  char *p;
  int v;
  size_t n;
  void *up;
  enum wsi_mem k;
};

static void set_run(void *arg)
{
  struct set *m = arg;

  memset(m->p, m->v, m->n);
  free(m);
}

static void *set_make(void *tmpl)
{
  struct set *m = clone(tmpl, sizeof(*m), "a memset");

  m->p = replay_bytes(m->up, m->n, m->k, "the buffer of a memset");
  return m;
}

static void set_drop(void *tmpl) { free(tmpl); }

static const struct wsi_replay set_replay = {set_make, set_drop};

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
    wsi_violation("host pointer passed as device memory", "%s(%p, %d, %zu): not device memory", fn,
                  p, v, n);
  s = wsi_stream_get(sync_api ? NULL : (void *)stream, fn);
  if ((e = cap(wsi_capture_use(s, fn, WSI_USE_ENQUEUE))))
    return e;
  m = malloc(sizeof(*m));
  if (!m)
    return ret(cudaErrorMemoryAllocation);
  m->p = wsi_bytes(p, n, fn, "the buffer");
  m->v = v;
  m->n = n;
  m->up = p;
  m->k = k;
  r = (struct wsi_range){p, n, 1};
  seq = wsi_enqueue_replayable(s, fn, &r, 1, set_run, m, &set_replay);
  if (k == WSI_PINNED && seq)
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

/* Synchronising or querying a capturing stream (or the legacy stream while a
 * blocking stream captures) is an error that invalidates the capture
 * ("Prohibited and Unhandled Operations"). */
EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  cudaError_t e = need_device("cudaStreamSynchronize");
  wsi_stream *s;

  if (e != cudaSuccess)
    return e;
  s = wsi_stream_get(stream, "cudaStreamSynchronize");
  if ((e = cap(wsi_capture_use(s, "cudaStreamSynchronize", WSI_USE_SYNC))))
    return e;
  wsi_stream_sync(s);
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
  cudaError_t e = need_device("cudaStreamQuery");
  wsi_stream *s;

  if (e != cudaSuccess)
    return e;
  s = wsi_stream_get(stream, "cudaStreamQuery");
  if ((e = cap(wsi_capture_use(s, "cudaStreamQuery", WSI_USE_SYNC))))
    return e;
  /* Not ready is not an error: it does not stay as the last error. */
  return wsi_stream_done(s) ? cudaSuccess : cudaErrorNotReady;
}

/* In a capture: an event recorded in the same capture forks or joins the
 * stream; one recorded outside is cudaErrorStreamCaptureIsolation unless
 * cudaEventWaitExternal asks for an external wait node ("Cross-stream
 * Dependencies and Events", "Prohibited and Unhandled Operations"). */
EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
  cudaError_t e = need_device("cudaStreamWaitEvent");
  wsi_stream *s;
  wsi_event *ev;

  if (e != cudaSuccess)
    return e;
  if (flags & ~(unsigned)cudaEventWaitExternal)
    return ret(cudaErrorInvalidValue);
  s = wsi_stream_get(stream, "cudaStreamWaitEvent");
  ev = wsi_event_get(event, "cudaStreamWaitEvent");
  if ((e = cap(wsi_capture_use(s, "cudaStreamWaitEvent", WSI_USE_ENQUEUE))))
    return e;
  return cap(
    wsi_stream_wait_event(s, ev, (flags & cudaEventWaitExternal) != 0, "cudaStreamWaitEvent"));
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

static void *hostfn_make(void *tmpl)
{
  return clone(tmpl, sizeof(struct hostfn), "a host function");
}

static void hostfn_drop(void *tmpl) { free(tmpl); }

static const struct wsi_replay hostfn_replay = {hostfn_make, hostfn_drop};

EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *data)
{
  struct hostfn *h;
  wsi_stream *s;
  cudaError_t e = need_device("cudaLaunchHostFunc");

  if (e != cudaSuccess)
    return e;
  if (!fn)
    return ret(cudaErrorInvalidValue);
  s = wsi_stream_get(stream, "cudaLaunchHostFunc");
  if ((e = cap(wsi_capture_use(s, "cudaLaunchHostFunc", WSI_USE_ENQUEUE))))
    return e;
  h = malloc(sizeof(*h));
  if (!h)
    return ret(cudaErrorMemoryAllocation);
  h->fn = fn;
  h->data = data;
  wsi_enqueue_replayable(s, "cudaLaunchHostFunc", NULL, 0, hostfn_run, h, &hostfn_replay);
  return cudaSuccess;
}

/* ---- stream capture and graphs ---- */

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
  cudaError_t e = need_device("cudaStreamBeginCapture");

  if (e != cudaSuccess)
    return e;
  return cap(wsi_capture_begin(wsi_stream_get(stream, "cudaStreamBeginCapture"), (int)mode,
                               "cudaStreamBeginCapture"));
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
  wsi_graph *g = NULL;
  cudaError_t e = need_device("cudaStreamEndCapture");

  if (e != cudaSuccess)
    return e;
  if (!graph)
    return ret(cudaErrorInvalidValue);
  e = cap(
    wsi_capture_end(wsi_stream_get(stream, "cudaStreamEndCapture"), &g, "cudaStreamEndCapture"));
  *graph = (cudaGraph_t)(void *)g;
  return e;
}

/* cuda_runtime_api.h: on cudaStreamLegacy while a blocking stream of the
 * device captures, cudaErrorStreamCaptureImplicit, "The blocking stream
 * capture is not invalidated." */
EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status)
{
  wsi_stream *s;
  int st;
  cudaError_t e = need_device("cudaStreamIsCapturing");

  if (e != cudaSuccess)
    return e;
  if (!status)
    return ret(cudaErrorInvalidValue);
  s = wsi_stream_get(stream, "cudaStreamIsCapturing");
  if ((e = cap(wsi_capture_use(s, "cudaStreamIsCapturing", WSI_USE_INFO))))
    return e;
  wsi_capture_info(s, &st, NULL, NULL, NULL, NULL);
  *status = (enum cudaStreamCaptureStatus)st;
  return cudaSuccess;
}

/* CUDA 13's signature. "Valid data (other than capture status) is returned
 * only if ... the returned capture status is cudaStreamCaptureStatusActive";
 * every edge is a default one (zero edge data). */
EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *status,
                                            unsigned long long *id, cudaGraph_t *graph,
                                            const cudaGraphNode_t **deps,
                                            const cudaGraphEdgeData **edges, size_t *ndeps)
{
  static __thread cudaGraphEdgeData *zero;
  static __thread size_t nzero;
  wsi_stream *s;
  wsi_graph *g = NULL;
  void *const *d = NULL;
  size_t n = 0;
  int st;
  cudaError_t e = need_device("cudaStreamGetCaptureInfo");

  if (e != cudaSuccess)
    return e;
  if (!status || (edges && !deps))
    return ret(cudaErrorInvalidValue);
  s = wsi_stream_get(stream, "cudaStreamGetCaptureInfo");
  if ((e = cap(wsi_capture_use(s, "cudaStreamGetCaptureInfo", WSI_USE_INFO))))
    return e;
  wsi_capture_info(s, &st, id, &g, &d, &n);
  *status = (enum cudaStreamCaptureStatus)st;
  if (st != 1)
    return cudaSuccess;
  if (graph)
    *graph = (cudaGraph_t)(void *)g;
  if (deps)
    *deps = (const cudaGraphNode_t *)d;
  if (edges) {
    if (nzero < n + 1) {
      cudaGraphEdgeData *z = calloc(n + 1, sizeof(*z));
      if (!z)
        return ret(cudaErrorMemoryAllocation);
      free(zero);
      zero = z;
      nzero = n + 1;
    }
    *edges = zero;
  }
  if (ndeps)
    *ndeps = n;
  return cudaSuccess;
}

EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
  int m;
  cudaError_t e;

  wsi_api("cudaThreadExchangeStreamCaptureMode");
  if (!mode)
    return ret(cudaErrorInvalidValue);
  m = (int)*mode;
  if ((e = cap(wsi_capture_exchange_mode(&m))))
    return e;
  *mode = (enum cudaStreamCaptureMode)m;
  return cudaSuccess;
}

/* CUDA 13: flags, not the old error node and log buffer. */
EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                        unsigned long long flags)
{
  cudaError_t e = need_device("cudaGraphInstantiate");

  if (e != cudaSuccess)
    return e;
  if (!exec || !graph)
    return ret(cudaErrorInvalidValue);
  if (flags & cudaGraphInstantiateFlagDeviceLaunch)
    wsi_violation("not modelled by the stand-in",
                  "cudaGraphInstantiate with cudaGraphInstantiateFlagDeviceLaunch: the stand-in "
                  "launches graphs from the host only");
  if (flags & ~(unsigned long long)(cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                    cudaGraphInstantiateFlagUpload |
                                    cudaGraphInstantiateFlagUseNodePriority))
    return ret(cudaErrorInvalidValue);
  *exec = (cudaGraphExec_t)(void *)wsi_graph_instantiate(
    wsi_graph_get((void *)graph, "cudaGraphInstantiate"));
  return cudaSuccess;
}

/* Every node again on stream, in capture order, each launch after the
 * previous one of the same executable graph (cuda_runtime_api.h). */
EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
  wsi_exec *x;
  wsi_stream *s;
  cudaError_t e = need_device("cudaGraphLaunch");

  if (e != cudaSuccess)
    return e;
  if (!exec)
    return ret(cudaErrorInvalidValue);
  x = wsi_exec_get((void *)exec, "cudaGraphLaunch");
  s = wsi_stream_get(stream, "cudaGraphLaunch");
  if ((e = cap(wsi_capture_use(s, "cudaGraphLaunch", WSI_USE_ENQUEUE))))
    return e;
  return cap(wsi_graph_launch(x, s, "cudaGraphLaunch"));
}

EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
  wsi_api("cudaGraphExecDestroy");
  if (!exec)
    return ret(cudaErrorInvalidValue);
  wsi_exec_destroy(wsi_exec_get((void *)exec, "cudaGraphExecDestroy"));
  return cudaSuccess;
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
  wsi_api("cudaGraphDestroy");
  if (!graph)
    return ret(cudaErrorInvalidValue);
  return cap(
    wsi_graph_destroy(wsi_graph_get((void *)graph, "cudaGraphDestroy"), "cudaGraphDestroy"));
}

/* "If numNodes is higher than the actual number of nodes, the remaining
 * entries in nodes will be set to NULL". */
EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num)
{
  size_t n, i;

  wsi_api("cudaGraphGetNodes");
  if (!graph || !num)
    return ret(cudaErrorInvalidValue);
  n = wsi_graph_nodes(wsi_graph_get((void *)graph, "cudaGraphGetNodes"), (void **)nodes,
                      nodes ? *num : 0);
  if (nodes) {
    for (i = n; i < *num; i++)
      nodes[i] = NULL;
    if (n < *num)
      *num = n;
  } else {
    *num = n;
  }
  return cudaSuccess;
}

/* ---- events ---- */

static cudaError_t event_create(cudaEvent_t *out, unsigned flags, const char *fn)
{
  cudaError_t e = need_device(fn);
  wsi_event *ev;

  if (e != cudaSuccess)
    return e;
  if (!out ||
      (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)))
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
  if ((err = cap(wsi_capture_use(s, "cudaEventRecord", WSI_USE_ENQUEUE))))
    return err;
  return cap(wsi_event_record(e, s));
}

/* An event last recorded in a capturing stream cannot be queried or waited
 * for: cudaErrorCapturedEvent ("Prohibited and Unhandled Operations"; the
 * relaxed mode does not lift it, cudaThreadExchangeStreamCaptureMode). */
EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
  wsi_event *e;
  cudaError_t err;

  wsi_api("cudaEventQuery");
  e = wsi_event_get(event, "cudaEventQuery");
  if ((err = cap(wsi_event_check(e, "cudaEventQuery"))))
    return err;
  return wsi_event_done(e) ? cudaSuccess : cudaErrorNotReady;
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  wsi_event *e;
  cudaError_t err;

  wsi_api("cudaEventSynchronize");
  e = wsi_event_get(event, "cudaEventSynchronize");
  if ((err = cap(wsi_event_check(e, "cudaEventSynchronize"))))
    return err;
  wsi_event_sync(e);
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  wsi_event *a, *b;
  cudaError_t err;
  double v;

  wsi_api("cudaEventElapsedTime");
  if (!ms)
    return ret(cudaErrorInvalidValue);
  a = wsi_event_get(start, "cudaEventElapsedTime");
  b = wsi_event_get(end, "cudaEventElapsedTime");
  if ((err = cap(wsi_event_check(a, "cudaEventElapsedTime"))) ||
      (err = cap(wsi_event_check(b, "cudaEventElapsedTime"))))
    return err;
  v = wsi_event_elapsed(a, b);
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

EXPORT cudaError_t cudaPeekAtLastError(void) { return last; }

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
  {cudaErrorIllegalState, "cudaErrorIllegalState",
   "the operation cannot be performed in the "
   "present state"},
  {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
   "operation not permitted when stream is capturing"},
  {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
   "operation failed due to a previous error during capture"},
  {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
   "operation would result in a merge of separate capture sequences"},
  {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
   "capture was not ended in the same stream as it began"},
  {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
   "capturing stream has unjoined work"},
  {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
   "dependency created on uncaptured work in another stream"},
  {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
   "operation would make the legacy stream depend on a capturing blocking stream"},
  {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
   "operation not permitted on an event last recorded in a capturing stream"},
  {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
   "attempt to terminate a thread-local capture sequence from another thread"},
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
