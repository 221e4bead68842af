/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory for weft-bench (built when configure found the CUDA
 * runtime): buffers on this rank's GPU, copies through cudaMemcpy, and a
 * stream that the collectives are ordered on and the timer waits for.
 */
#include <stdio.h>

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

static int dev_upload(void *dst, const void *src, size_t bytes)
{
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : WEFT_ECUDA;
}

static int dev_download(void *dst, const void *src, size_t bytes)
{
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : WEFT_ECUDA;
}

static int dev_sync(void *stream)
{
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? 0 : WEFT_ECUDA;
}

static const struct bench_mem mem_device = {
  .name = "device", .alloc = dev_alloc, .release = dev_release,
  .upload = dev_upload, .download = dev_download, .sync = dev_sync,
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
    snprintf(why, whylen, "GPU %d does not exist: this host has %d (check WEFT_GPU and the "
             "ranks per host)", device, n);
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
  char pci[32];
  int n = 0;

  snprintf(buf, len, "none");
  if (!probe || cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n)
    return;
  if (cudaDeviceGetPCIBusId(pci, (int)sizeof(pci), device) != cudaSuccess)
    snprintf(pci, sizeof(pci), "?");
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    snprintf(prop.name, sizeof(prop.name), "?");
  snprintf(buf, len, "%d [%s] %s", device, pci, prop.name);
}

void *bench_stream_create(void)
{
  cudaStream_t s = NULL;

  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return NULL;
  return s;
}

void bench_stream_destroy(void *stream)
{
  if (stream)
    cudaStreamDestroy((cudaStream_t)stream);
}
