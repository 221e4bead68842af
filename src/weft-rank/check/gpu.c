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

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_PROCS 64

/* The processes on one GPU: pid and name, one record each. */
static void procs(const wk_nvml *n, wk_nvml_dev d, unsigned idx, wk_facts *f)
{
  unsigned cnt = MAX_PROCS;
  unsigned pids[MAX_PROCS];
  int got = 0;
  if (n->procs3) {
    wk_nvml_proc3 p[MAX_PROCS];
    wk_nvml_ret rc = n->procs3(d, &cnt, p);
    if (rc == WK_NVML_OK || rc == WK_NVML_ERROR_INSUFFICIENT_SIZE)
      for (unsigned i = 0; i < cnt && i < MAX_PROCS; i++)
        pids[got++] = p[i].pid;
  } else if (n->procs1) {
    wk_nvml_proc1 p[MAX_PROCS];
    wk_nvml_ret rc = n->procs1(d, &cnt, p);
    if (rc == WK_NVML_OK || rc == WK_NVML_ERROR_INSUFFICIENT_SIZE)
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
    wk_fact(f, WT_CK_GPU_BUSY, "%u %u %s", idx, pids[i], comm);
  }
}

static void nvml_facts(wk_facts *f)
{
  wk_nvml n;
  char why[200], buf[64];
  unsigned count = 0;
  wk_nvml_ret rc;
  if (wk_nvml_load(&n, why, sizeof(why))) {
    wk_fact(f, WT_CK_GPU_NVML, "absent %s", why);
    return;
  }
  if ((rc = n.init()) != WK_NVML_OK) {
    wk_fact(f, WT_CK_GPU_NVML, "absent nvmlInit: %s", wk_nvml_why(&n, rc, buf, sizeof(buf)));
    return;
  }
  if ((rc = n.count(&count)) != WK_NVML_OK) {
    wk_fact(f, WT_CK_GPU_NVML, "absent nvmlDeviceGetCount: %s",
            wk_nvml_why(&n, rc, buf, sizeof(buf)));
    n.shutdown();
    return;
  }
  wk_fact(f, WT_CK_GPU_NVML, "%u", count);
  char model[96] = "";
  unsigned long long least = 0;
  int persist_off = 0, mixed = 0;
  for (unsigned i = 0; i < count; i++) {
    wk_nvml_dev d;
    char name[96] = "";
    wk_nvml_mem m;
    int mode, pending;
    unsigned long long ecc;
    if (n.handle(i, &d) != WK_NVML_OK)
      continue;
    if (n.name && n.name(d, name, sizeof(name)) == WK_NVML_OK) {
      if (!model[0])
        snprintf(model, sizeof(model), "%s", name);
      else if (strcmp(model, name))
        mixed = 1;
    }
    if (n.memory && n.memory(d, &m) == WK_NVML_OK && (!least || m.total < least))
      least = m.total;
    if (n.persistence && n.persistence(d, &mode) == WK_NVML_OK && mode == 0)
      persist_off++;
    /* NVML_ERROR_NOT_SUPPORTED on GPUs without ECC: nothing to say then */
    if (n.ecc && n.ecc(d, WK_NVML_UNCORRECTED, WK_NVML_VOLATILE, &ecc) == WK_NVML_OK && ecc > 0)
      wk_fact(f, WT_CK_GPU_ECC, "%u %llu", i, ecc);
    if (n.retired_pending && n.retired_pending(d, &pending) == WK_NVML_OK && pending)
      wk_fact(f, WT_CK_GPU_RETIRED, "%u", i);
    procs(&n, d, i, f);
  }
  if (model[0])
    wk_fact(f, WT_CK_GPU_MODEL, "%s", mixed ? "mixed models" : model);
  if (least)
    wk_fact(f, WT_CK_GPU_MEM, "%llu", least);
  wk_fact(f, WT_CK_GPU_PERSIST, "%d", persist_off);
  n.shutdown();
}

void wk_check_gpus(wk_facts *f)
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
    wk_fact(f, WT_CK_GPU_PCI, "%d", weftx_topo_ngpus(t));
    wk_fact(f, WT_CK_NET_RDMA, "%d", rdma);
    if (hwloc_topology_export_xmlbuffer(h, &xml, &len, 0) == 0 && xml && len > 1)
      wk_fact_raw(f, "xml", xml, (size_t)len - 1);
    if (xml)
      hwloc_free_xmlbuffer(h, xml);
    weftx_topo_destroy(t);
  } else {
    wk_fact(f, WT_CK_GPU_PCI, "unknown %s", why[0] ? why : weft_strerror(rc));
  }
  nvml_facts(f);
}
