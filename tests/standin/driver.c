/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver API of the stand-in (libcuda.so.1): the calls a program makes to
 * learn about devices and memory without a context, and to manage the
 * thread's current context (cuCtxGetCurrent/cuCtxSetCurrent, primary
 * contexts), sharing the runtime's view of them (core.c). cuInit must come
 * first, as with the real driver; only cuDevicePrimaryCtxRetain creates a
 * context.
 */
#include "core.h"

#include <cuda.h>
#include <stdio.h>
#include <string.h>

/* cuda.h maps these names to their _v2; the plain names are exported too, as
 * the real library has them (cuDeviceGetUuid: the GPU's UUID even for a MIG
 * instance, which _v2 names by its own). */
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);

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

static CUresult uuid_of(CUuuid *uuid, CUdevice dev, int mig_uuid)
{
  unsigned char u[16];

  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  if (wsi_device_uuid(dev, mig_uuid, u) != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  memcpy(uuid->bytes, u, sizeof(u));
  return CUDA_SUCCESS;
}

/* cuda.h: "If the device is in MIG mode, returns its MIG UUID". */
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
  wsi_api("cuDeviceGetUuid_v2");
  return uuid_of(uuid, dev, 1);
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
  wsi_api("cuDeviceGetUuid");
  return uuid_of(uuid, dev, 0);
}

/* cuda.h: "[domain]:[bus]:[device].[function]", 13 characters with the NUL;
 * upper-case hexadecimal, as the real one writes it (NCCL lowers it before
 * looking in /sys). */
EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev)
{
  int p;

  wsi_api("cuDeviceGetPCIBusId");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!bus || len < 13)
    return CUDA_ERROR_INVALID_VALUE;
  if ((p = wsi_physical(dev)) < 0)
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf(bus, (size_t)len, "%04X:%02X:%02X.%X", 0u, wsi_pci_bus(p), 0u, 0u);
  return CUDA_SUCCESS;
}

/* cuda.h: [domain]:[bus]:[device].[function], [domain]:[bus]:[device] or
 * [bus]:[device].[function]; a device CUDA_VISIBLE_DEVICES hides is
 * CUDA_ERROR_INVALID_DEVICE. No context is made. */
EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
  int d;

  wsi_api("cuDeviceGetByPCIBusId");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev || !id)
    return CUDA_ERROR_INVALID_VALUE;
  d = wsi_by_bus_id(id);
  if (d == -1)
    return CUDA_ERROR_INVALID_VALUE;
  if (d < 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = d;
  return CUDA_SUCCESS;
}

/* cuda.h: "If no context is bound to the calling CPU thread then *pctx is set
 * to NULL and CUDA_SUCCESS is returned." */
EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
  wsi_api("cuCtxGetCurrent");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = (CUcontext)wsi__ctx_current();
  return CUDA_SUCCESS;
}

/* cuda.h: "If ctx is NULL then the CUDA context previously bound to the
 * calling CPU thread is unbound". The runtime's calls then use this context
 * (cudaGetDevice says its device); binding one makes none. */
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
  wsi_api("cuCtxSetCurrent");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  return wsi__ctx_bind(ctx) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
  void *ctx;

  wsi_api("cuCtxGetDevice");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  if (!(ctx = wsi__ctx_current()))
    return CUDA_ERROR_INVALID_CONTEXT;
  *dev = wsi_ordinal(wsi__ctx_physical(ctx));
  return CUDA_SUCCESS;
}

/* The primary context, shared with the runtime: retaining it makes it (a
 * context, logged by=cuDevicePrimaryCtxRetain) but not current. */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
  wsi_api("cuDevicePrimaryCtxRetain");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (wsi_physical(dev) < 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *ctx = (CUcontext)wsi__primary_retain(dev, "cuDevicePrimaryCtxRetain");
  return CUDA_SUCCESS;
}

static CUresult release(CUdevice dev, const char *fn)
{
  wsi_api(fn);
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (wsi_physical(dev) < 0)
    return CUDA_ERROR_INVALID_DEVICE;
  return wsi__primary_release(dev, fn) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
  return release(dev, "cuDevicePrimaryCtxRelease_v2");
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
  return release(dev, "cuDevicePrimaryCtxRelease");
}

/* Whether the primary context exists (active), without making it. */
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
  wsi_api("cuDevicePrimaryCtxGetState");
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!flags || !active)
    return CUDA_ERROR_INVALID_VALUE;
  if (wsi_physical(dev) < 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = wsi_has_context(dev);
  return CUDA_SUCCESS;
}

/* One attribute of ptr into data; 0, or -1 for an attribute we do not know. */
static int attribute(CUpointer_attribute a, void *data, const void *ptr)
{
  int physical, ordinal;
  enum wsi_mem k = wsi_kind(ptr, &physical, &ordinal);

  switch (a) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = k == WSI_DEVICE   ? CU_MEMORYTYPE_DEVICE
                        : k == WSI_PINNED ? CU_MEMORYTYPE_HOST
                                          : 0;
    return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = k == WSI_DEVICE ? ordinal : -2; return 0;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = 0; return 0;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = k == WSI_DEVICE ? (CUcontext)wsi_context_handle(physical) : NULL;
    return 0;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = k != WSI_HOST ? (CUdeviceptr)(uintptr_t)ptr : 0;
    return 0;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)data = k == WSI_PINNED ? (void *)(uintptr_t)ptr : NULL;
    return 0;
  default: return -1;
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
  {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
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

EXPORT CUresult cuGetErrorString(CUresult code, const char **s) { return describe(code, s, 0); }

EXPORT CUresult cuGetErrorName(CUresult code, const char **s) { return describe(code, s, 1); }
