/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory for weft-bench (built when configure found the CUDA
 * runtime): buffers on this rank's GPU, and one stream that the collectives
 * are ordered on and the timer waits for. The copies in and out of the
 * device go on that same stream and are waited for: a cudaMemcpy from
 * pageable memory may return before the data lands, and it runs on the legacy
 * stream, which does not order the benchmark's cudaStreamNonBlocking stream.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "driver.h"

static int dev_alloc(void **p, size_t bytes)
{
  return cudaMalloc(p, bytes ? bytes : 1) == cudaSuccess ? 0 : WEFT_ECUDA;
}

static void dev_release(void *p)
{
  if (p)
    cudaFree(p);
}

/* The benchmark's stream (bench_stream_create): copies are ordered with the
 * collectives on it. */
static cudaStream_t copy_stream;

static int copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
  if (!copy_stream)
    return WEFT_ECUDA;
  if (cudaMemcpyAsync(dst, src, bytes, kind, copy_stream) != cudaSuccess ||
      cudaStreamSynchronize(copy_stream) != cudaSuccess)
    return WEFT_ECUDA;
  return 0;
}

static int dev_upload(void *dst, const void *src, size_t bytes)
{
  return copy(dst, src, bytes, cudaMemcpyHostToDevice);
}

static int dev_download(void *dst, const void *src, size_t bytes)
{
  return copy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

static int dev_sync(void *stream)
{
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? 0 : WEFT_ECUDA;
}

static const struct bench_mem mem_device = {
  .name = "device",
  .alloc = dev_alloc,
  .release = dev_release,
  .upload = dev_upload,
  .download = dev_download,
  .sync = dev_sync,
};

const struct bench_mem *bench_mem_device(int device, char *why, size_t whylen)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);

  if (e != cudaSuccess || n == 0) {
    snprintf(why, whylen, "no usable GPU on this host (cudaGetDeviceCount: %s)",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return NULL;
  }
  if (device < 0 || device >= n) {
    snprintf(why, whylen,
             "GPU %d does not exist: this host has %d (check WEFT_GPU and the "
             "ranks per host)",
             device, n);
    return NULL;
  }
  e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    snprintf(why, whylen, "cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
    return NULL;
  }
  return &mem_device;
}

void bench_gpu_describe(int device, int probe, char *buf, size_t len)
{
  struct cudaDeviceProp prop;
  int n = 0;

  snprintf(buf, len, "none");
  if (!probe || cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n)
    return;
  memset(&prop, 0, sizeof(prop));
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    snprintf(buf, len, "%2d [?] ?", device);
    return;
  }
  /* as nccl-tests writes its device lines: domain:bus:device, then the model */
  snprintf(buf, len, "%2d [%04x:%02x:%02x] %s", device, (unsigned)prop.pciDomainID,
           (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID, prop.name);
}

void *bench_stream_create(void)
{
  cudaStream_t s = NULL;

  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return NULL;
  copy_stream = s;
  return s;
}

void bench_stream_destroy(void *s)
{
  if (s)
    cudaStreamDestroy((cudaStream_t)s);
  if (s == (void *)copy_stream)
    copy_stream = NULL;
}
