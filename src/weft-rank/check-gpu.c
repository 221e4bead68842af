/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank --check's GPU check: the NVIDIA GPUs on this host's PCI bus (its
 * topology: hwloc, or WEFT_TOPOLOGY), and what NVML says of them when the
 * driver's libnvidia-ml.so.1 is there (loaded with dlopen, so that weft needs
 * no NVML at build time): how many it sees, their model and memory,
 * uncorrected ECC errors, retired pages waiting for a reset, persistence mode
 * and the processes already running on them. Without NVML the record says
 * "absent" and why. Xid errors are not something NVML can be asked for after
 * the fact (only waited for), so they are left to dmesg.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "weft-rank.h"

/* The part of NVML's C ABI used here (nvml.h; stable since NVML 2). */
typedef int nvml_ret;
typedef void *nvml_dev;
typedef struct nvml_mem { unsigned long long total, free, used; } nvml_mem;
typedef struct nvml_proc1 { unsigned int pid; unsigned long long used; } nvml_proc1;
typedef struct nvml_proc3 {
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance, compute_instance;
} nvml_proc3;

#define NVML_OK 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_UNCORRECTED 1     /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED */
#define NVML_VOLATILE 0        /* NVML_VOLATILE_ECC: since the driver loaded */
#define MAX_PROCS 64

typedef struct nvml {
  nvml_ret (*init)(void);
  nvml_ret (*shutdown)(void);
  nvml_ret (*count)(unsigned *);
  nvml_ret (*handle)(unsigned, nvml_dev *);
  nvml_ret (*name)(nvml_dev, char *, unsigned);
  nvml_ret (*memory)(nvml_dev, nvml_mem *);
  nvml_ret (*persistence)(nvml_dev, int *);
  nvml_ret (*ecc)(nvml_dev, int, int, unsigned long long *);
  nvml_ret (*retired_pending)(nvml_dev, int *);
  nvml_ret (*procs3)(nvml_dev, unsigned *, nvml_proc3 *);
  nvml_ret (*procs1)(nvml_dev, unsigned *, nvml_proc1 *);
  const char *(*error)(nvml_ret);
} nvml;

/* dlsym() into a function pointer (POSIX guarantees the representations agree) */
static void
sym(void *h, const char *name, void *fn)
{
  void *p = dlsym(h, name);
  memcpy(fn, &p, sizeof(p));
}

static int
nvml_load(nvml *n, char *why, size_t len)
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
  sym(h, "nvmlDeviceGetName", &n->name);
  sym(h, "nvmlDeviceGetMemoryInfo", &n->memory);
  sym(h, "nvmlDeviceGetPersistenceMode", &n->persistence);
  sym(h, "nvmlDeviceGetTotalEccErrors", &n->ecc);
  sym(h, "nvmlDeviceGetRetiredPagesPendingStatus", &n->retired_pending);
  sym(h, "nvmlDeviceGetComputeRunningProcesses_v3", &n->procs3);
  sym(h, "nvmlDeviceGetComputeRunningProcesses", &n->procs1);
  sym(h, "nvmlErrorString", &n->error);
  if (!n->init || !n->shutdown || !n->count || !n->handle) {
    snprintf(why, len, "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetCount_v2 (too old)");
    return -1;
  }
  return 0;
}

static const char *
nvml_why(const nvml *n, nvml_ret rc, char *buf, size_t len)
{
  if (n->error && n->error(rc))
    return n->error(rc);
  snprintf(buf, len, "NVML error %d", rc);
  return buf;
}

/* The processes on one GPU: pid and name, one record each. */
static void
procs(const nvml *n, nvml_dev d, unsigned idx, wk_facts *f)
{
  unsigned cnt = MAX_PROCS;
  unsigned pids[MAX_PROCS];
  int got = 0;
  if (n->procs3) {
    nvml_proc3 p[MAX_PROCS];
    nvml_ret rc = n->procs3(d, &cnt, p);
    if (rc == NVML_OK || rc == NVML_ERROR_INSUFFICIENT_SIZE)
      for (unsigned i = 0; i < cnt && i < MAX_PROCS; i++)
        pids[got++] = p[i].pid;
  } else if (n->procs1) {
    nvml_proc1 p[MAX_PROCS];
    nvml_ret rc = n->procs1(d, &cnt, p);
    if (rc == NVML_OK || rc == NVML_ERROR_INSUFFICIENT_SIZE)
      for (unsigned i = 0; i < cnt && i < MAX_PROCS; i++)
        pids[got++] = p[i].pid;
  }
  for (int i = 0; i < got; i++) {
    char path[64], comm[64] = "?";
    snprintf(path, sizeof(path), "/proc/%u/comm", pids[i]);
    FILE *c = fopen(path, "r");
    if (c && fgets(comm, sizeof(comm), c))
      comm[strcspn(comm, "\n")] = '\0';
    if (c)
      fclose(c);
    wk_fact(f, WEFT_CK_GPU_BUSY, "%u %u %s", idx, pids[i], comm);
  }
}

static void
nvml_facts(wk_facts *f)
{
  nvml n;
  char why[200], buf[64];
  unsigned count = 0;
  nvml_ret rc;
  if (nvml_load(&n, why, sizeof(why))) {
    wk_fact(f, WEFT_CK_GPU_NVML, "absent %s", why);
    return;
  }
  if ((rc = n.init()) != NVML_OK) {
    wk_fact(f, WEFT_CK_GPU_NVML, "absent nvmlInit: %s", nvml_why(&n, rc, buf, sizeof(buf)));
    return;
  }
  if ((rc = n.count(&count)) != NVML_OK) {
    wk_fact(f, WEFT_CK_GPU_NVML, "absent nvmlDeviceGetCount: %s", nvml_why(&n, rc, buf, sizeof(buf)));
    n.shutdown();
    return;
  }
  wk_fact(f, WEFT_CK_GPU_NVML, "%u", count);
  char model[96] = "";
  unsigned long long least = 0;
  int persist_off = 0, mixed = 0;
  for (unsigned i = 0; i < count; i++) {
    nvml_dev d;
    char name[96] = "";
    nvml_mem m;
    int mode, pending;
    unsigned long long ecc;
    if (n.handle(i, &d) != NVML_OK)
      continue;
    if (n.name && n.name(d, name, sizeof(name)) == NVML_OK) {
      if (!model[0])
        snprintf(model, sizeof(model), "%s", name);
      else if (strcmp(model, name))
        mixed = 1;
    }
    if (n.memory && n.memory(d, &m) == NVML_OK && (!least || m.total < least))
      least = m.total;
    if (n.persistence && n.persistence(d, &mode) == NVML_OK && mode == 0)
      persist_off++;
    /* NVML_ERROR_NOT_SUPPORTED on GPUs without ECC: nothing to say then */
    if (n.ecc && n.ecc(d, NVML_UNCORRECTED, NVML_VOLATILE, &ecc) == NVML_OK && ecc > 0)
      wk_fact(f, WEFT_CK_GPU_ECC, "%u %llu", i, ecc);
    if (n.retired_pending && n.retired_pending(d, &pending) == NVML_OK && pending)
      wk_fact(f, WEFT_CK_GPU_RETIRED, "%u", i);
    procs(&n, d, i, f);
  }
  if (model[0])
    wk_fact(f, WEFT_CK_GPU_MODEL, "%s", mixed ? "mixed models" : model);
  if (least)
    wk_fact(f, WEFT_CK_GPU_MEM, "%llu", least);
  wk_fact(f, WEFT_CK_GPU_PERSIST, "%d", persist_off);
  n.shutdown();
}

void
wk_check_gpus(wk_facts *f)
{
  weftx_topo *t = NULL;
  char why[600] = "";
  int rc = weftx_topo_load(NULL, 0, &t, why, sizeof(why));
  if (rc == 0) {
    char *xml = NULL;
    int len = 0;
    hwloc_topology_t h = weftx_topo_hwloc(t);
    int rdma = 0;
    for (int i = 0; i < weftx_topo_nnics(t); i++)
      rdma += weftx_topo_nic(t, i)->rdma[0] != '\0';
    wk_fact(f, WEFT_CK_GPU_PCI, "%d", weftx_topo_ngpus(t));
    wk_fact(f, WEFT_CK_NET_RDMA, "%d", rdma);
    if (hwloc_topology_export_xmlbuffer(h, &xml, &len, 0) == 0 && xml && len > 1)
      wk_fact_raw(f, "xml", xml, (size_t)len - 1);
    if (xml)
      hwloc_free_xmlbuffer(h, xml);
    weftx_topo_destroy(t);
  } else {
    wk_fact(f, WEFT_CK_GPU_PCI, "unknown %s", why[0] ? why : weft_strerror(rc));
  }
  nvml_facts(f);
}
