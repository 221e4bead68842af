/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PCI address of the stand-in's physical device P, the same in its CUDA
 * (cudaDeviceGetPCIBusId, cudaDeviceProp.pciBusID) and its NVML
 * (nvmlDeviceGetHandleByPciBusId_v2): 0000:BB:00.0 with BB from
 * WEFT_STANDIN_PCI_BUS ("04,05,0a,...", hexadecimal, one per device in CUDA's
 * order) when it names one, else 0x10 + P. A test sets it to a topology
 * file's GPU addresses, so that weft's placement and the stand-in agree on
 * which GPU is which. A list that is not hexadecimal bytes ends the process.
 */
#ifndef WEFT_STANDIN_PCI_H
#define WEFT_STANDIN_PCI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned
standin_pci_bus(int p)
{
  const char *s = getenv("WEFT_STANDIN_PCI_BUS");
  for (int i = 0; s && *s; i++) {
    char *end;
    unsigned long b = strtoul(s, &end, 16);
    if (end == s || b > 0xff || (*end && *end != ',')) {
      fprintf(stderr, "weft-standin: WEFT_STANDIN_PCI_BUS='%s': expected hexadecimal bus "
              "numbers 00 to ff, comma-separated\n", getenv("WEFT_STANDIN_PCI_BUS"));
      abort();
    }
    if (i == p)
      return (unsigned)b;
    s = *end ? end + 1 : end;
  }
  return 0x10u + (unsigned)p;
}

#endif /* WEFT_STANDIN_PCI_H */
