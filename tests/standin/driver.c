/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver API of the stand-in (libcuda.so.1): the few calls a program
 * makes to learn about memory without a context. cuInit must come first,
 * as with the real driver, and no call here creates a context.
 */
#include "standin.h"

#include <cuda.h>
#include <string.h>

static int initialised;

/* What is exported (version script cuda.map): the real names. */
#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuInit(unsigned int flags)
{
  wsi_api("cuInit");
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (wsi_no_driver())
    return CUDA_ERROR_NO_DEVICE;
  if (wsi_ndevices() == 0)
    return CUDA_ERROR_NO_DEVICE;
  initialised = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
  wsi_api("cuDeviceGetCount");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = wsi_ndevices();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
  wsi_api("cuDeviceGet");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= wsi_ndevices())
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
  wsi_api("cuCtxGetCurrent");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = wsi_has_context(wsi_current()) ? (CUcontext)wsi_context_handle(wsi_physical(wsi_current()))
                                        : NULL;
  return CUDA_SUCCESS;
}

/* One attribute of ptr into data; 0, or -1 for an attribute we do not know. */
static int attribute(CUpointer_attribute a, void *data, const void *ptr)
{
  int physical, ordinal;
  enum wsi_mem k = wsi_kind(ptr, &physical, &ordinal);

  switch (a) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = k == WSI_DEVICE ? CU_MEMORYTYPE_DEVICE : k == WSI_PINNED ? CU_MEMORYTYPE_HOST : 0;
    return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = k == WSI_DEVICE ? ordinal : -2;
    return 0;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(int *)data = 0;
    return 0;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = k == WSI_DEVICE ? (CUcontext)wsi_context_handle(physical) : NULL;
    return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = k != WSI_HOST ? (CUdeviceptr)(uintptr_t)ptr : 0;
    return 0;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)data = k == WSI_PINNED ? (void *)(uintptr_t)ptr : NULL;
    return 0;
  default:
    return -1;
  }
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr)
{
  const void *p = (const void *)(uintptr_t)ptr;

  wsi_api("cuPointerGetAttribute");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  /* Unlike cuPointerGetAttributes, memory CUDA does not know is an error. */
  if (wsi_kind(p, NULL, NULL) == WSI_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  return attribute(a, data, p) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                       CUdeviceptr ptr)
{
  const void *p = (const void *)(uintptr_t)ptr;
  unsigned i;

  wsi_api("cuPointerGetAttributes");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!attrs || !data)
    return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < n; i++)
    if (!data[i] || attribute(attrs[i], data[i], p) != 0)
      return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
  {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
  {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
};

/* The name (name != 0) or the text of an error code. */
static CUresult describe(CUresult code, const char **s, int name)
{
  size_t i;

  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == code) {
      *s = name ? errors[i].name : errors[i].text;
      return CUDA_SUCCESS;
    }
  *s = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult code, const char **s)
{
  return describe(code, s, 0);
}

EXPORT CUresult cuGetErrorName(CUresult code, const char **s)
{
  return describe(code, s, 1);
}
