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
 *
 * The driver also says which CUDA device sits at a PCI address
 * (weft__cuda_ordinal_of_pci, for weft_init where CUDA's numbering is not
 * PCI order): cuDeviceGetByPCIBusId and the device list need only cuInit
 * too. Those calls are looked up apart: a libcuda.so.1 without them still
 * tells device memory from host memory.
 */
#include "rt_private.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* The driver ABI of the calls (cuda.h, unchanged since CUDA 9.2; this file is
 * built without CUDA's headers too). */
typedef int cu_result;
typedef unsigned long long cu_ptr;
typedef int cu_device; /* CUdevice */
enum {
  CU_ATTR_MEMORY_TYPE = 2,    /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unsigned */
  CU_ATTR_IS_MANAGED = 8,     /* CU_POINTER_ATTRIBUTE_IS_MANAGED, int */
  CU_ATTR_DEVICE_ORDINAL = 9, /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, int */
  CU_MEM_DEVICE = 2,          /* CU_MEMORYTYPE_DEVICE */
  CU_INVALID_VALUE = 1,       /* CUDA_ERROR_INVALID_VALUE */
  CU_INVALID_DEVICE = 101     /* CUDA_ERROR_INVALID_DEVICE */
};

static struct {
  cu_result (*init)(unsigned flags);
  cu_result (*attrs)(unsigned n, int *attrs, void **data, cu_ptr p);
  /* weft__cuda_ordinal_of_pci's, NULL where the library lacks them */
  cu_result (*count)(int *n);                             /* cuDeviceGetCount */
  cu_result (*get)(cu_device *dev, int ordinal);          /* cuDeviceGet */
  cu_result (*by_bus)(cu_device *dev, const char *bus);   /* cuDeviceGetByPCIBusId */
  cu_result (*bus_of)(char *bus, int len, cu_device dev); /* cuDeviceGetPCIBusId */
} cu;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int usable = -1;
static char why[160] = "not looked at yet";

/* Assign a dlsym() result to a function pointer without a pedantic cast warning. */
#define SYM(field, name)                                                                           \
  do {                                                                                             \
    void *s_ = dlsym(lib, name);                                                                   \
    if (!s_) {                                                                                     \
      weft__snprintf(why, sizeof(why), "libcuda.so.1 has no %s", name);                            \
      return;                                                                                      \
    }                                                                                              \
    memcpy(&cu.field, &s_, sizeof(s_));                                                            \
  } while (0)

/* The same for a call that may be absent: the field stays NULL. */
#define OPTIONAL_SYM(field, name)                                                                  \
  do {                                                                                             \
    void *s_ = dlsym(lib, name);                                                                   \
    if (s_)                                                                                        \
      memcpy(&cu.field, &s_, sizeof(s_));                                                          \
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
  OPTIONAL_SYM(count, "cuDeviceGetCount");
  OPTIONAL_SYM(get, "cuDeviceGet");
  OPTIONAL_SYM(by_bus, "cuDeviceGetByPCIBusId");
  OPTIONAL_SYM(bus_of, "cuDeviceGetPCIBusId");
  r = cu.init(0);
  if (r != 0) {
    weft__snprintf(why, sizeof(why), "the NVIDIA driver does not start (cuInit: error %d%s)", r,
                   r == 100  ? ", no CUDA device"
                   : r == 34 ? ", a stub library"
                             : "");
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

/* "N device(s): 0 at BUS, 1 at BUS, ..." into msg: what CUDA sees, for a line
 * that says a GPU is not among them. */
static void seen(int n, char *msg, size_t size)
{
  size_t used;

  weft__snprintf(msg, size, "CUDA sees %d device(s)%s", n, n ? ":" : "");
  for (int i = 0; i < n; i++) {
    cu_device d;
    char bus[32] = "?";
    used = strlen(msg);
    if (cu.get(&d, i) != 0 || cu.bus_of(bus, (int)sizeof(bus), d) != 0)
      weft__snprintf(bus, sizeof(bus), "?");
    if (weft__snprintf(msg + used, size - used, "%s %d at %s", i ? "," : "", i, bus) != 0) {
      msg[used] = '\0'; /* the last that fits */
      break;
    }
  }
}

int weft__cuda_ordinal_of_pci(const char *pci, int *ordinal, char *msg, size_t size)
{
  const char *reason, *missing;
  cu_device dev = -1;
  uint64_t want, key;
  int n = 0, same = 0;
  cu_result r;

  *ordinal = -1;
  if (!weft__cuda_driver(&reason)) {
    weft__snprintf(msg, size, "%s", reason);
    return WEFT__BUS_NODRIVER;
  }
  missing = !cu.count    ? "cuDeviceGetCount"
            : !cu.get    ? "cuDeviceGet"
            : !cu.by_bus ? "cuDeviceGetByPCIBusId"
            : !cu.bus_of ? "cuDeviceGetPCIBusId"
                         : NULL;
  if (missing) {
    weft__snprintf(msg, size, "libcuda.so.1 has no %s; update the NVIDIA driver", missing);
    return WEFT__BUS_ERROR;
  }
  if (weft__pci_parse(pci, strlen(pci), &want) != 0) {
    weft__snprintf(msg, size, "%.40s is not a PCI address", pci);
    return WEFT__BUS_ERROR;
  }
  if ((r = cu.count(&n)) != 0) {
    weft__snprintf(msg, size, "cuDeviceGetCount: CUDA error %d", r);
    return WEFT__BUS_ERROR;
  }
  r = cu.by_bus(&dev, pci);
  if (r == CU_INVALID_DEVICE || r == CU_INVALID_VALUE) {
    seen(n, msg, size);
    return WEFT__BUS_UNSEEN;
  }
  if (r != 0) {
    weft__snprintf(msg, size, "cuDeviceGetByPCIBusId(%s): CUDA error %d", pci, r);
    return WEFT__BUS_ERROR;
  }
  /* The handle is the ordinal with every driver seen so far, but cuda.h does
   * not promise it: find its ordinal, and whether another device has the same
   * address (MIG instances of one GPU), which would leave the choice open. */
  for (int i = 0; i < n; i++) {
    cu_device d;
    char bus[32];
    if ((r = cu.get(&d, i)) != 0) {
      weft__snprintf(msg, size, "cuDeviceGet(%d): CUDA error %d", i, r);
      return WEFT__BUS_ERROR;
    }
    if ((r = cu.bus_of(bus, (int)sizeof(bus), d)) != 0) {
      weft__snprintf(msg, size, "cuDeviceGetPCIBusId of device %d: CUDA error %d", i, r);
      return WEFT__BUS_ERROR;
    }
    if (d == dev && *ordinal < 0)
      *ordinal = i;
    bus[sizeof(bus) - 1] = '\0';
    same += weft__pci_parse(bus, strlen(bus), &key) == 0 && key == want;
  }
  if (*ordinal < 0) {
    weft__snprintf(msg, size,
                   "cuDeviceGetByPCIBusId(%s) gave device handle %d, which is none of "
                   "the %d CUDA lists",
                   pci, dev, n);
    return WEFT__BUS_ERROR;
  }
  if (same > 1) {
    *ordinal = -1;
    weft__snprintf(msg, size,
                   "CUDA sees %d devices at %s (MIG instances of that GPU?), and which "
                   "is this rank's is not known; give each rank one of them in "
                   "CUDA_VISIBLE_DEVICES",
                   same, pci);
    return WEFT__BUS_ERROR;
  }
  return WEFT__BUS_FOUND;
}
