/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live topologies only: fill in the model, UUID and memory of GPUs that
 * hwloc's OS devices did not describe, from NVML, by PCI address. Any NVML
 * error (no driver, no permission) leaves the fields unknown.
 */
#include "topo_private.h"

#include <stdio.h>

#include <nvml.h>

void weft__topo_nvml_enrich(weftx_topo *t)
{
  nvmlReturn_t r = nvmlInit_v2();

  if (r != NVML_SUCCESS) {
    WEFT__LOG(TOPO, "NVML unavailable (%s): GPU model and memory stay unknown", nvmlErrorString(r));
    return;
  }
  for (int i = 0; i < t->ngpus; i++) {
    weftx_gpu *g = &t->gpus[i];
    nvmlDevice_t dev;
    nvmlMemory_t mem;
    r = nvmlDeviceGetHandleByPciBusId_v2(g->pci, &dev);
    if (r != NVML_SUCCESS) {
      WEFT__LOG(TOPO, "NVML has no GPU at %s (%s)", g->pci, nvmlErrorString(r));
      continue;
    }
    if (!g->model[0] && nvmlDeviceGetName(dev, g->model, sizeof(g->model)) != NVML_SUCCESS)
      g->model[0] = '\0';
    if (!g->uuid[0] && nvmlDeviceGetUUID(dev, g->uuid, sizeof(g->uuid)) != NVML_SUCCESS)
      g->uuid[0] = '\0';
    if (!g->memory && nvmlDeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS)
      g->memory = (unsigned long long)mem.total;
  }
  r = nvmlShutdown();
  if (r != NVML_SUCCESS)
    WEFT__LOG(TOPO, "nvmlShutdown: %s", nvmlErrorString(r));
}
