/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the model examples (tp_mlp, pp_1f1b, moe) keep the buffers they give
 * libweft: host memory, or with --device the rank's GPU (weft_device()), so
 * that the same program runs its collectives through MPI or through NCCL. The
 * math stays on the host: a buffer has a host copy, and put()/get() move it to
 * and from the device around each call. The CUDA runtime is opened with
 * dlopen() only for --device, so the examples build and run without CUDA.
 *
 * Device calls are queued on the legacy default stream (NULL); cudaMemcpy
 * runs on it too, so a get() after a weft call waits for the call.
 */
#ifndef WEFT_EXAMPLE_EXMEM_H
#define WEFT_EXAMPLE_EXMEM_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

/* The few CUDA runtime calls the examples need (cuda_runtime_api.h's
 * signatures, with cudaError_t as int: 0 is cudaSuccess). */
struct exmem_cuda {
  void *lib;
  int (*set_device)(int);
  int (*malloc_)(void **, size_t);
  int (*free_)(void *);
  int (*memcpy_)(void *, const void *, size_t, int);
  const char *(*error_string)(int);
};
enum { EXMEM_H2D = 1, EXMEM_D2H = 2 }; /* cudaMemcpyHostToDevice, ...DeviceToHost */

static struct exmem_cuda exmem_rt;

/* A buffer the examples communicate through: h on the host, d on the device
 * (NULL without --device). at() is what weft gets. */
struct exbuf {
  void *h, *d;
  size_t bytes;
};

static inline void *exbuf_at(const struct exbuf *b) { return b->d ? b->d : b->h; }

/* Open the CUDA runtime and make the rank's device current; 0, or -1 after
 * a line on stderr. */
static inline int exmem_device(const char *prog, int device)
{
  static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                      "/usr/local/cuda/lib64/libcudart.so.13",
                                      "/usr/local/cuda/lib64/libcudart.so.12"};
  void *sym[5];
  static const char *const fns[5] = {"cudaSetDevice", "cudaMalloc", "cudaFree", "cudaMemcpy",
                                     "cudaGetErrorString"};
  size_t i;
  int e;

  if (device < 0) {
    fprintf(stderr,
            "%s: --device, but weft gave this rank no GPU (weft_device() is -1); run "
            "one rank per GPU, or leave out --device\n",
            prog);
    return -1;
  }
  for (i = 0; !exmem_rt.lib && i < sizeof(names) / sizeof(names[0]); i++)
    exmem_rt.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!exmem_rt.lib) {
    fprintf(stderr,
            "%s: --device needs the CUDA runtime (libcudart.so.13 or .12): %s; put its "
            "directory in LD_LIBRARY_PATH\n",
            prog, dlerror());
    return -1;
  }
  for (i = 0; i < 5; i++)
    if (!(sym[i] = dlsym(exmem_rt.lib, fns[i]))) {
      fprintf(stderr, "%s: the CUDA runtime has no %s\n", prog, fns[i]);
      return -1;
    }
  memcpy(&exmem_rt.set_device, &sym[0], sizeof(sym[0]));
  memcpy(&exmem_rt.malloc_, &sym[1], sizeof(sym[1]));
  memcpy(&exmem_rt.free_, &sym[2], sizeof(sym[2]));
  memcpy(&exmem_rt.memcpy_, &sym[3], sizeof(sym[3]));
  memcpy(&exmem_rt.error_string, &sym[4], sizeof(sym[4]));
  if ((e = exmem_rt.set_device(device)) != 0) {
    fprintf(stderr, "%s: cudaSetDevice(%d): %s\n", prog, device, exmem_rt.error_string(e));
    return -1;
  }
  return 0;
}

/* A buffer of bytes (zeroed on the host), on the device too when the runtime
 * is open. 0, or WEFT_ENOMEM / WEFT_ECUDA after a line on stderr. */
static inline int exbuf_alloc(struct exbuf *b, size_t bytes)
{
  int e;

  b->bytes = bytes;
  b->d = NULL;
  if (!(b->h = calloc(bytes ? bytes : 1, 1))) {
    fprintf(stderr, "out of memory for a buffer of %zu bytes\n", bytes);
    return WEFT_ENOMEM;
  }
  if (exmem_rt.lib && (e = exmem_rt.malloc_(&b->d, bytes ? bytes : 1)) != 0) {
    fprintf(stderr, "cudaMalloc of %zu bytes: %s\n", bytes, exmem_rt.error_string(e));
    b->d = NULL;
    return WEFT_ECUDA;
  }
  return 0;
}

static inline void exbuf_free(struct exbuf *b)
{
  free(b->h);
  if (b->d)
    exmem_rt.free_(b->d);
  b->h = b->d = NULL;
}

/* The first bytes of the host copy to the device (put) or back (get). */
static inline int exbuf_put(const struct exbuf *b, size_t bytes)
{
  int e;

  if (!b->d || bytes == 0)
    return 0;
  if ((e = exmem_rt.memcpy_(b->d, b->h, bytes, EXMEM_H2D)) != 0) {
    fprintf(stderr, "cudaMemcpy to the device: %s\n", exmem_rt.error_string(e));
    return WEFT_ECUDA;
  }
  return 0;
}

static inline int exbuf_get(const struct exbuf *b, size_t bytes)
{
  int e;

  if (!b->d || bytes == 0)
    return 0;
  if ((e = exmem_rt.memcpy_(b->h, b->d, bytes, EXMEM_D2H)) != 0) {
    fprintf(stderr, "cudaMemcpy from the device: %s\n", exmem_rt.error_string(e));
    return WEFT_ECUDA;
  }
  return 0;
}

#endif /* WEFT_EXAMPLE_EXMEM_H */
