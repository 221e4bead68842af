/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a Google Cloud machine family should reach, printed beside the
 * results: the GPU-data NIC line rate of one VM, the ring busbw ceiling it
 * implies (line rate / 8: busbw counts exactly the bytes each node's NICs
 * carry) and, where one is published, the healthy busbw range. Figures from
 * GCP's machine-type pages, Google's Cluster Health Scanner thresholds and
 * published nccl-tests runs (2 VMs x 8 GPUs, all_gather, large messages);
 * see shared/reference/gcp_nccl.md sections 1.1, 5 and 8b.
 *
 * The machine type comes from WEFT_MACHINE_TYPE, else the name of the
 * topology file in WEFT_TOPOLOGY ("a3-megagpu-8g.xml"), else the GCE
 * metadata server (asked only on a GCE VM, which DMI tells).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static const struct family {
  const char *type; /* machine type, or a prefix ending in '*' */
  double nic_gbps;  /* GPU-data line rate per VM */
  double lo, hi;    /* healthy busbw, GB/s; 0 when not published */
  const char *note;
} families[] = {
  {"a3-ultragpu-8g", 3200, 250, 336,
   "GPUDirect RDMA: Google health check >= 250, best published 329-336 (all_gather, 2 VMs)"},
  {"a4-highgpu-8g", 3200, 250, 0, "GPUDirect RDMA: Google health check >= 250 (all_gather, 2 VMs)"},
  {"a3-megagpu-8g", 1600, 150, 189,
   "GPUDirect-TCPXO: Google health check >= 150, best published 188.7 (all_gather, 2 VMs)"},
  {"a3-highgpu-8g", 800, 60, 71,
   "GPUDirect-TCPX: Google health check >= 60, best published 70.9 (all_gather, 2 VMs); "
   "about 20 without TCPX"},
  {"a3-edgegpu-8g", 400, 0, 0, "GPUDirect-TCPX, 400-800 Gbps by region; no published busbw"},
  {"a3-highgpu-4g", 100, 0, 0, "one NIC, sockets; no published busbw"},
  {"a3-highgpu-2g", 50, 0, 0, "one NIC, sockets; no published busbw"},
  {"a3-highgpu-1g", 25, 0, 0, "one NIC, sockets; no published busbw"},
  {"a2-megagpu-16g", 100, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-highgpu-8g", 100, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-ultragpu-8g", 100, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-highgpu-4g", 50, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-ultragpu-4g", 50, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-highgpu-2g", 32, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-ultragpu-2g", 32, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-highgpu-1g", 24, 0, 0, "one NIC; no published multi-VM busbw"},
  {"a2-ultragpu-1g", 24, 0, 0, "one NIC; no published multi-VM busbw"},
  {"g2-standard-96", 100, 0, 0, "L4 over PCIe; no published multi-VM busbw"},
  {"g2-standard-48", 50, 0, 0, "L4 over PCIe; no published multi-VM busbw"},
  {"g2-standard-32", 32, 0, 0, "L4; no published multi-VM busbw"},
  {"g2-standard-24", 32, 0, 0, "L4; no published multi-VM busbw"},
  {"g2-standard-16", 32, 0, 0, "L4; no published multi-VM busbw"},
  {"g2-standard-12", 16, 0, 0, "L4; no published multi-VM busbw"},
  {"g2-standard-8", 16, 0, 0, "L4; no published multi-VM busbw"},
  {"g2-standard-4", 10, 0, 0, "L4; no published multi-VM busbw"},
  {"n1-*", 100, 0, 0, "N1 with GPUs: up to 100 Gbps by GPU and vCPU count; measure"},
};

int bench_expect_for(const char *machine_type, struct bench_expect *e)
{
  const char *base = strrchr(machine_type, '/');

  base = base ? base + 1 : machine_type;
  for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
    const struct family *f = &families[i];
    size_t n = strlen(f->type);
    int match = f->type[n - 1] == '*' ? !strncmp(base, f->type, n - 1) : !strcmp(base, f->type);

    if (match) {
      e->machine = f->type[n - 1] == '*' ? base : f->type;
      e->nic_gbps = f->nic_gbps;
      e->ceiling = f->nic_gbps / 8;
      e->healthy_lo = f->lo;
      e->healthy_hi = f->hi;
      e->note = f->note;
      return 0;
    }
  }
  return -1;
}

int bench_expect_lookup(struct bench_expect *e)
{
  static char from_topology[64];
  const char *s = getenv("WEFT_MACHINE_TYPE"), *t = getenv("WEFT_TOPOLOGY");

  memset(e, 0, sizeof(*e));
  if (s && *s && bench_expect_for(s, e) == 0) {
    e->source = "WEFT_MACHINE_TYPE";
    return 0;
  }
  if (t && *t) {
    const char *base = strrchr(t, '/');
    char *dot;

    snprintf(from_topology, sizeof(from_topology), "%s", base ? base + 1 : t);
    dot = strstr(from_topology, ".xml");
    if (dot)
      *dot = '\0';
    if (bench_expect_for(from_topology, e) == 0) {
      e->source = "WEFT_TOPOLOGY";
      return 0;
    }
  }
  if (weftx_gcp_dmi_is_gce()) {
    static weftx_gcp_info info;
    char why[256];

    if (weftx_gcp_detect(&info, why, sizeof(why)) == 0 && info.on_gce &&
        bench_expect_for(info.machine_type, e) == 0) {
      e->source = "GCE metadata";
      return 0;
    }
  }
  return -1;
}
