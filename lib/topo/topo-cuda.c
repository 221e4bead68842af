/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live topologies only: fill in the model, UUID and memory of GPUs that
 * hwloc's OS devices did not describe, from the CUDA runtime, matching
 * devices by PCI address. Any CUDA error (no driver, no device, devices
 * hidden by CUDA_VISIBLE_DEVICES) leaves the fields unknown. The runtime is
 * opened here, when first asked (its soname, then where configure found it),
 * so that the tools that never ask (weftrun and weft-rank load with
 * WEFTX_TOPO_NO_DETAILS) do not load it at every start.
 */
#include "topo_private.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

/* The exported name of cudaGetDeviceProperties (CUDA 12 maps it to ..._v2). */
#define NAME_(f) #f
#define NAME(f) NAME_(f)

static struct {
  int tried, ok;
  cudaError_t (*count)(int *n);
  cudaError_t (*props)(struct cudaDeviceProp *prop, int device);
  const char *(*error)(cudaError_t e);
} rt;

static int load(void)
{
  char path[1024];
  void *lib, *f[3];

  if (rt.tried)
    return rt.ok;
  rt.tried = 1;
  lib = dlopen(WEFT_CUDART_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib &&
      weft__snprintf(path, sizeof(path), "%s/%s", WEFT_CUDA_LIBDIR, WEFT_CUDART_SONAME) == 0)
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    WEFT__LOG(TOPO, "no CUDA runtime (%s): GPU model and memory stay unknown", dlerror());
    return 0;
  }
  f[0] = dlsym(lib, "cudaGetDeviceCount");
  f[1] = dlsym(lib, NAME(cudaGetDeviceProperties));
  f[2] = dlsym(lib, "cudaGetErrorString");
  if (!f[0] || !f[1] || !f[2]) {
    WEFT__LOG(TOPO,
              "%s lacks cudaGetDeviceCount, cudaGetDeviceProperties or "
              "cudaGetErrorString: GPU model and memory stay unknown",
              WEFT_CUDART_SONAME);
    dlclose(lib);
    return 0;
  }
  memcpy(&rt.count, &f[0], sizeof(f[0]));
  memcpy(&rt.props, &f[1], sizeof(f[1]));
  memcpy(&rt.error, &f[2], sizeof(f[2]));
  rt.ok = 1;
  return 1; /* stays loaded for the life of the process */
}

static int needs_enrich(const weftx_topo *t)
{
  for (int i = 0; i < t->ngpus; i++)
    if (!t->gpus[i].model[0] || !t->gpus[i].uuid[0] || !t->gpus[i].memory)
      return 1;
  return 0;
}

static void format_uuid(char *buf, size_t len, const unsigned char *u)
{
  weft__snprintf(
    buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
    u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

void weft__topo_cuda_enrich(weftx_topo *t)
{
  int n = 0;
  cudaError_t err;

  if (!needs_enrich(t) || !load())
    return;
  err = rt.count(&n);
  if (err != cudaSuccess) {
    WEFT__LOG(TOPO, "CUDA cannot list devices (%s): GPU model and memory stay unknown",
              rt.error(err));
    return;
  }
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp prop;
    char pci[16];
    memset(&prop, 0, sizeof(prop));
    err = rt.props(&prop, d);
    if (err != cudaSuccess) {
      WEFT__LOG(TOPO, "CUDA device %d: %s", d, rt.error(err));
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
