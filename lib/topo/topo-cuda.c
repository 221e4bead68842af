/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live topologies only: fill in the model, UUID and memory of GPUs that
 * hwloc's OS devices did not describe, from the CUDA runtime, matching
 * devices by PCI address. Any CUDA error (no driver, no device, devices
 * hidden by CUDA_VISIBLE_DEVICES) leaves the fields unknown.
 */
#include "topo_private.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int needs_enrich(const weftx_topo *t)
{
  for (int i = 0; i < t->ngpus; i++)
    if (!t->gpus[i].model[0] || !t->gpus[i].uuid[0] || !t->gpus[i].memory)
      return 1;
  return 0;
}

static void format_uuid(char *buf, size_t len, const unsigned char *u)
{
  weft__snprintf(buf, len,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                 u[13], u[14], u[15]);
}

void weft__topo_cuda_enrich(weftx_topo *t)
{
  int n = 0;
  cudaError_t err;

  if (!needs_enrich(t))
    return;
  err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    WEFT__LOG(TOPO, "CUDA cannot list devices (%s): GPU model and memory stay unknown",
              cudaGetErrorString(err));
    return;
  }
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp prop;
    char pci[16];
    memset(&prop, 0, sizeof(prop));
    err = cudaGetDeviceProperties(&prop, d);
    if (err != cudaSuccess) {
      WEFT__LOG(TOPO, "CUDA device %d: %s", d, cudaGetErrorString(err));
      continue;
    }
    if (weft__snprintf(pci, sizeof(pci), "%04x:%02x:%02x.0", (unsigned)prop.pciDomainID & 0xffffu,
                       (unsigned)prop.pciBusID & 0xffu, (unsigned)prop.pciDeviceID & 0xffu) != 0)
      continue;
    for (int i = 0; i < t->ngpus; i++) {
      weftx_gpu *g = &t->gpus[i];
      if (strcmp(g->pci, pci) != 0)
        continue;
      if (!g->model[0])
        weft__snprintf(g->model, sizeof(g->model), "%s", prop.name);
      if (!g->uuid[0])
        format_uuid(g->uuid, sizeof(g->uuid), (const unsigned char *)prop.uuid.bytes);
      if (!g->memory)
        g->memory = (unsigned long long)prop.totalGlobalMem;
    }
  }
}
