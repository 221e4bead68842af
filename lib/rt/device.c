/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a buffer lives, asked of the CUDA driver without creating a context.
 *
 * The runtime's cudaPointerGetAttributes makes a context on the current
 * device (hundreds of MB of GPU memory) the first time it is called, so a
 * CPU-only job that asked it about every host buffer would hold one per rank
 * on GPU 0. The driver's cuPointerGetAttributes needs only cuInit, which
 * makes none, and says "not CUDA's" for ordinary host memory without an
 * error. libcuda.so.1 comes with the NVIDIA driver: it is opened on first
 * use, and where it cannot be opened (or cuInit fails: no driver, no device)
 * every buffer is host memory. This file is built with or without CUDA and
 * NCCL, so that device memory is recognised (and refused with
 * WEFT_ENONCCL) even by a libweft built without NCCL.
 */
#include "rt_private.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* The driver ABI of the two calls (cuda.h, unchanged since CUDA 9.2). */
typedef int cu_result;
typedef unsigned long long cu_ptr;
enum {
  CU_ATTR_MEMORY_TYPE = 2,    /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unsigned */
  CU_ATTR_IS_MANAGED = 8,     /* CU_POINTER_ATTRIBUTE_IS_MANAGED, int */
  CU_ATTR_DEVICE_ORDINAL = 9, /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, int */
  CU_MEM_DEVICE = 2           /* CU_MEMORYTYPE_DEVICE */
};

static struct {
  cu_result (*init)(unsigned flags);
  cu_result (*attrs)(unsigned n, int *attrs, void **data, cu_ptr p);
} cu;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int usable = -1;
static char why[160] = "not looked at yet";

/* Assign a dlsym() result to a function pointer without a pedantic cast warning. */
#define SYM(field, name)                                                                    \
  do {                                                                                      \
    void *s_ = dlsym(lib, name);                                                            \
    if (!s_) {                                                                              \
      weft__snprintf(why, sizeof(why), "libcuda.so.1 has no %s", name);                     \
      return;                                                                               \
    }                                                                                       \
    memcpy(&cu.field, &s_, sizeof(s_));                                                     \
  } while (0)

static void load(void)
{
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  cu_result r;

  if (!lib) {
    weft__snprintf(why, sizeof(why), "no NVIDIA driver (libcuda.so.1: %s)", dlerror());
    return;
  }
  SYM(init, "cuInit");
  SYM(attrs, "cuPointerGetAttributes");
  r = cu.init(0);
  if (r != 0) {
    weft__snprintf(why, sizeof(why), "the NVIDIA driver does not start (cuInit: error %d%s)", r,
                   r == 100 ? ", no CUDA device" : r == 34 ? ", a stub library" : "");
    return;
  }
  usable = 1; /* the library stays loaded for the life of the process */
}

int weft__cuda_driver(const char **reason)
{
  pthread_once(&once, load);
  if (reason)
    *reason = why;
  return usable == 1;
}

int weft__device_of(const void *p)
{
  int attrs[3] = {CU_ATTR_MEMORY_TYPE, CU_ATTR_IS_MANAGED, CU_ATTR_DEVICE_ORDINAL};
  unsigned type = 0;
  int managed = 0, ordinal = -1;
  void *data[3] = {&type, &managed, &ordinal};

  if (!p || !weft__cuda_driver(NULL))
    return -1;
  if (cu.attrs(3, attrs, data, (cu_ptr)(uintptr_t)p) != 0)
    return -1;
  if (type != CU_MEM_DEVICE && !managed)
    return -1;
  return ordinal >= 0 ? ordinal : 0;
}

int weft__is_device_ptr(weft_ctx *ctx, const void *p)
{
  (void)ctx;
  return weft__device_of(p) >= 0;
}
