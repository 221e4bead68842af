/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVML (the NVIDIA driver's management library) loaded at run time with
 * dlopen, so that weft needs no NVML to build and runs where there is no
 * driver: the part of its C ABI that weft-rank --check (check/gpu.c) and
 * --monitor's samples (monitor.c) call, found by name, each function NULL
 * when this driver's NVML lacks it. The tests load NVML's stand-in
 * (tests/standin/nvml.c) through LD_LIBRARY_PATH.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "weft-rank.h"

/* dlsym() into a function pointer (POSIX guarantees the representations agree) */
static void sym(void *h, const char *name, void *fn)
{
  void *p = dlsym(h, name);
  memcpy(fn, &p, sizeof(p));
}

int wk_nvml_load(wk_nvml *n, char *why, size_t len)
{
  void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  memset(n, 0, sizeof(*n));
  if (!h) {
    snprintf(why, len, "no libnvidia-ml.so.1 (no NVIDIA driver)");
    return -1;
  }
  sym(h, "nvmlInit_v2", &n->init);
  sym(h, "nvmlShutdown", &n->shutdown);
  sym(h, "nvmlDeviceGetCount_v2", &n->count);
  sym(h, "nvmlDeviceGetHandleByIndex_v2", &n->handle);
  sym(h, "nvmlDeviceGetHandleByPciBusId_v2", &n->by_pci);
  sym(h, "nvmlDeviceGetName", &n->name);
  sym(h, "nvmlDeviceGetMemoryInfo", &n->memory);
  sym(h, "nvmlDeviceGetPersistenceMode", &n->persistence);
  sym(h, "nvmlDeviceGetTotalEccErrors", &n->ecc);
  sym(h, "nvmlDeviceGetRetiredPagesPendingStatus", &n->retired_pending);
  sym(h, "nvmlDeviceGetComputeRunningProcesses_v3", &n->procs3);
  sym(h, "nvmlDeviceGetComputeRunningProcesses", &n->procs1);
  sym(h, "nvmlDeviceGetUtilizationRates", &n->utilization);
  sym(h, "nvmlDeviceGetPowerUsage", &n->power);
  sym(h, "nvmlDeviceGetTemperature", &n->temperature);
  sym(h, "nvmlErrorString", &n->error);
  if (!n->init || !n->shutdown || !n->count || !n->handle) {
    snprintf(why, len, "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetCount_v2 (too old)");
    return -1;
  }
  return 0;
}

const char *wk_nvml_why(const wk_nvml *n, wk_nvml_ret rc, char *buf, size_t len)
{
  if (n->error && n->error(rc))
    return n->error(rc);
  snprintf(buf, len, "NVML error %d", rc);
  return buf;
}
