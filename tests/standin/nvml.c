/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in of NVML (libnvidia-ml.so.1): the calls weft-rank --check makes,
 * with NVML's own signatures, structs and error codes, over the stand-in's
 * devices (WEFT_STANDIN_DEVICES, WEFT_STANDIN_MEMORY_MB; every one named
 * "weft stand-in (not a GPU)"). As NVML does, it answers a call before
 * nvmlInit_v2 (or after the matching nvmlShutdown) with
 * NVML_ERROR_UNINITIALIZED, a bad index or NULL with
 * NVML_ERROR_INVALID_ARGUMENT, and a buffer too small with
 * NVML_ERROR_INSUFFICIENT_SIZE and the size needed. WEFT_STANDIN_NO_DRIVER=1
 * plays a machine without a driver (nvmlInit_v2 fails), and
 * WEFT_STANDIN_NVML_FAULT lists what the devices report (README). For
 * weftrun --monitor every device is busy (90% utilisation, 250 W, 60 C, a
 * quarter of its memory used) unless WEFT_STANDIN_NVML_UTIL scripts it:
 * "I:PCT,..." sets the utilisation of device I (the I-th by PCI bus: NVML's
 * index, and CUDA's under CUDA_DEVICE_ORDER=PCI_BUS_ID). A device is found by
 * index or by its PCI address (pci.h, the address the stand-in's CUDA gives
 * it); NVML numbers the devices by ascending PCI bus whatever CUDA_DEVICE_ORDER
 * says (nvml.h: "the order in which NVML enumerates devices has no guarantees
 * of consistency between reboots. For that reason it is recommended that
 * devices be looked up by their PCI ids or UUID"), and
 * WEFT_STANDIN_NVML_ORDER=reverse numbers them in reverse PCI order, as NVML
 * and CUDA disagree on some machines, so that a GPU looked up by CUDA's index
 * is the wrong one. nvmlDeviceGetUUID gives the UUID the stand-in's CUDA gives
 * the device (pci.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pci.h"

#define EXPORT __attribute__((visibility("default")))

/* nvml.h's values */
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
};
#define MAX_DEVICES 64

typedef struct nvmlMemory {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct nvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct device {
  int index;              /* position by PCI bus */
  int physical;           /* the stand-in's device (pci.h) */
  unsigned long long ecc; /* uncorrected, volatile */
  int retired_pending;
  unsigned int busy_pid; /* 0: no process */
  unsigned int util;     /* percent (--monitor) */
} device;
typedef struct nvmlUtilization {
  unsigned int gpu, memory;
} nvmlUtilization_t;

/* nvml.h's declarations of what is here */
EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int rc);
EXPORT int nvmlDeviceGetCount_v2(unsigned int *count);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **handle);
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **handle);
EXPORT int nvmlDeviceGetName(void *h, char *name, unsigned int length);
EXPORT int nvmlDeviceGetUUID(void *h, char *uuid, unsigned int length);
EXPORT int nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m);
EXPORT int nvmlDeviceGetPersistenceMode(void *h, int *mode);
EXPORT int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *count);
EXPORT int nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending);
EXPORT int nvmlDeviceGetUtilizationRates(void *h, nvmlUtilization_t *u);
EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw);
EXPORT int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *c);
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count,
                                                   nvmlProcessInfo_t *infos);

static int inits;
static int ndev = -1;
static int persistence = 1;
static int hang;
static int reverse; /* NVML's index i is device ndev - 1 - i */
static device devs[MAX_DEVICES];

static long env_long(const char *name, long dflt, long lo, long hi)
{
  const char *v = getenv(name);
  char *end;
  long n = v && *v ? strtol(v, &end, 10) : dflt;
  if (v && *v && (*end || n < lo || n > hi)) {
    fprintf(stderr, "weft-standin: %s='%s': expected %ld to %ld\n", name, v, lo, hi);
    abort();
  }
  return n;
}

/* WEFT_STANDIN_NVML_FAULT: ecc:I:N, retired:I, busy:I:PID, persistence-off, hang */
static void setup(void)
{
  if (ndev >= 0)
    return;
  ndev = (int)env_long("WEFT_STANDIN_DEVICES", 8, 0, MAX_DEVICES);
  int order[MAX_DEVICES];
  standin_pci_order(ndev, order);
  for (int i = 0; i < MAX_DEVICES; i++) {
    devs[i].index = i;
    devs[i].physical = i < ndev ? order[i] : i;
    devs[i].util = 90;
  }
  const char *o = getenv("WEFT_STANDIN_NVML_ORDER");
  if (o && *o && strcmp(o, "pci") && strcmp(o, "reverse")) {
    fprintf(stderr, "weft-standin: WEFT_STANDIN_NVML_ORDER='%s': expected pci or reverse\n", o);
    abort();
  }
  reverse = o && !strcmp(o, "reverse");
  const char *u = getenv("WEFT_STANDIN_NVML_UTIL");
  for (const char *p = u; p && *p;) {
    size_t n = strcspn(p, ",");
    int i;
    unsigned pct;
    char item[64];
    snprintf(item, sizeof(item), "%.*s", (int)(n < sizeof(item) ? n : sizeof(item) - 1), p);
    if (sscanf(item, "%d:%u", &i, &pct) != 2 || i < 0 || i >= MAX_DEVICES || pct > 100) {
      fprintf(stderr, "weft-standin: WEFT_STANDIN_NVML_UTIL: '%s' is not I:PERCENT\n", item);
      abort();
    }
    devs[i].util = pct;
    p += n + (p[n] == ',');
  }
  const char *f = getenv("WEFT_STANDIN_NVML_FAULT");
  for (const char *p = f; p && *p;) {
    size_t n = strcspn(p, ",");
    char item[64];
    int i;
    unsigned long long v;
    snprintf(item, sizeof(item), "%.*s", (int)(n < sizeof(item) ? n : sizeof(item) - 1), p);
    if (sscanf(item, "ecc:%d:%llu", &i, &v) == 2 && i >= 0 && i < MAX_DEVICES)
      devs[i].ecc = v;
    else if (sscanf(item, "retired:%d", &i) == 1 && i >= 0 && i < MAX_DEVICES)
      devs[i].retired_pending = 1;
    else if (sscanf(item, "busy:%d:%llu", &i, &v) == 2 && i >= 0 && i < MAX_DEVICES)
      devs[i].busy_pid = (unsigned)v;
    else if (!strcmp(item, "persistence-off"))
      persistence = 0;
    else if (!strcmp(item, "hang"))
      hang = 1;
    else {
      fprintf(stderr, "weft-standin: WEFT_STANDIN_NVML_FAULT: unknown '%s'\n", item);
      abort();
    }
    p += n + (p[n] == ',');
  }
}

static const device *dev_of(const void *handle)
{
  const device *d = handle;
  return d >= devs && d < devs + ndev ? d : NULL;
}

EXPORT int weft_standin_marker = 1;

EXPORT int nvmlInit_v2(void)
{
  setup();
  const char *nd = getenv("WEFT_STANDIN_NO_DRIVER");
  if (nd && !strcmp(nd, "1"))
    return NVML_ERROR_DRIVER_NOT_LOADED;
  while (hang) /* a driver that never answers */
    pause();
  inits++;
  return NVML_SUCCESS;
}

EXPORT int nvmlShutdown(void)
{
  if (inits == 0)
    return NVML_ERROR_UNINITIALIZED;
  inits--;
  return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(int rc)
{
  switch (rc) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  }
  return "Unknown Error";
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *count)
{
  if (!inits)
    return NVML_ERROR_UNINITIALIZED;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)ndev;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **handle)
{
  if (!inits)
    return NVML_ERROR_UNINITIALIZED;
  if (!handle || index >= (unsigned)ndev)
    return NVML_ERROR_INVALID_ARGUMENT;
  *handle = &devs[reverse ? (unsigned)ndev - 1 - index : index];
  return NVML_SUCCESS;
}

/* "DOMAIN:BUS:DEVICE.FUNCTION" (NVML's own form has an 8-digit domain, lspci's 4)
 * or "BUS:DEVICE.FUNCTION", hexadecimal, either case. */
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **handle)
{
  unsigned dom = 0, bus, dev, fn;
  char end;
  if (!inits)
    return NVML_ERROR_UNINITIALIZED;
  if (!pci || !handle ||
      (sscanf(pci, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &end) != 4 &&
       (dom = 0, sscanf(pci, "%x:%x.%x%c", &bus, &dev, &fn, &end) != 3)))
    return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < ndev; i++)
    if (dom == 0 && dev == 0 && fn == 0 && bus == standin_pci_bus(devs[i].physical)) {
      *handle = &devs[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

#define DEVICE(h)                                                                                  \
  const device *d = dev_of(h);                                                                     \
  if (!inits)                                                                                      \
    return NVML_ERROR_UNINITIALIZED;                                                               \
  if (!d)                                                                                          \
  return NVML_ERROR_INVALID_ARGUMENT

EXPORT int nvmlDeviceGetName(void *h, char *name, unsigned int length)
{
  static const char n[] = "weft stand-in (not a GPU)";
  DEVICE(h);
  if (!name)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (length < sizeof(n))
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, n, sizeof(n));
  return NVML_SUCCESS;
}

/* "GPU-..." as nvidia-smi -L writes it; NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96,
 * a smaller buffer that cannot hold it is NVML_ERROR_INSUFFICIENT_SIZE. */
EXPORT int nvmlDeviceGetUUID(void *h, char *uuid, unsigned int length)
{
  unsigned char u[16];
  char s[48];
  DEVICE(h);
  if (!uuid)
    return NVML_ERROR_INVALID_ARGUMENT;
  standin_uuid(d->physical, 0, u);
  standin_uuid_str(u, 0, s, sizeof(s));
  if (length < strlen(s) + 1)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(uuid, s, strlen(s) + 1);
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m)
{
  DEVICE(h);
  if (!m)
    return NVML_ERROR_INVALID_ARGUMENT;
  m->total = (unsigned long long)env_long("WEFT_STANDIN_MEMORY_MB", 16384, 1, 1L << 24) << 20;
  m->used = d->busy_pid || d->util ? m->total / 4 : 0;
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetUtilizationRates(void *h, nvmlUtilization_t *u)
{
  DEVICE(h);
  if (!u)
    return NVML_ERROR_INVALID_ARGUMENT;
  u->gpu = d->util;
  u->memory = d->util / 2;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw)
{
  DEVICE(h);
  if (!mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  *mw = 100000 + 1667 * d->util; /* 100 W idle, 250 W at 90% */
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *c)
{
  DEVICE(h);
  if (!c || sensor != 0) /* NVML_TEMPERATURE_GPU */
    return NVML_ERROR_INVALID_ARGUMENT;
  *c = 30 + d->util / 3;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetPersistenceMode(void *h, int *mode)
{
  DEVICE(h);
  if (!mode)
    return NVML_ERROR_INVALID_ARGUMENT;
  *mode = persistence;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *count)
{
  DEVICE(h);
  if (!count || type < 0 || type > 1 || counter < 0 || counter > 1)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = type == 1 && counter == 0 ? d->ecc : 0;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending)
{
  DEVICE(h);
  if (!pending)
    return NVML_ERROR_INVALID_ARGUMENT;
  *pending = d->retired_pending;
  return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count,
                                                   nvmlProcessInfo_t *infos)
{
  DEVICE(h);
  unsigned need = d->busy_pid ? 1 : 0;
  if (!count || (*count && !infos))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (*count < need) {
    *count = need;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = need;
  if (need) {
    memset(&infos[0], 0, sizeof(infos[0]));
    infos[0].pid = d->busy_pid;
    infos[0].usedGpuMemory = 1ULL << 30;
  }
  return NVML_SUCCESS;
}
