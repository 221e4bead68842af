/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who the stand-in's physical devices are, the same for its CUDA (libcuda,
 * libcudart) and its NVML (built without CUDA): PCI address and UUID.
 *
 * Physical device P (0 .. WEFT_STANDIN_DEVICES-1) is at 0000:BB:00.0, BB the
 * P-th entry of WEFT_STANDIN_PCI_BUS ("04,0a,05,...", hexadecimal) when the
 * list has one, else 0x10 + P. The physical order is CUDA's default order
 * (CUDA_DEVICE_ORDER unset or FASTEST_FIRST); CUDA_DEVICE_ORDER=PCI_BUS_ID and
 * NVML number the devices by ascending bus instead (standin_pci_order). A
 * test sets the list to a topology file's GPU addresses, so that weft's
 * placement and the stand-in agree on which GPU is which. A list that is not
 * hexadecimal bytes, or that puts two devices on one bus, ends the process.
 *
 * UUIDs (cudaDeviceProp.uuid, cuDeviceGetUuid, nvmlDeviceGetUUID): physical
 * device P is GPU-575349PP-0000-0000-0000-0000000000PP ("WSI", then P in
 * hexadecimal), and its one MIG instance MIG-57534dPP-0000-0000-0000-0000000000PP
 * ("WSM"). GPU UUIDs differ from the 7th hexadecimal digit on, so that a short
 * prefix (GPU-5753490) is ambiguous and GPU-57534903 names device 3.
 */
#ifndef WEFT_STANDIN_PCI_H
#define WEFT_STANDIN_PCI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned standin_pci_bus(int p)
{
  const char *s = getenv("WEFT_STANDIN_PCI_BUS");
  for (int i = 0; s && *s; i++) {
    char *end;
    unsigned long b = strtoul(s, &end, 16);
    if (end == s || b > 0xff || (*end && *end != ',')) {
      fprintf(stderr,
              "weft-standin: WEFT_STANDIN_PCI_BUS='%s': expected hexadecimal bus "
              "numbers 00 to ff, comma-separated\n",
              getenv("WEFT_STANDIN_PCI_BUS"));
      abort();
    }
    if (i == p)
      return (unsigned)b;
    s = *end ? end + 1 : end;
  }
  return 0x10u + (unsigned)p;
}

/* order[k] = the physical device with the k-th lowest bus, k < n: the order of
 * CUDA_DEVICE_ORDER=PCI_BUS_ID and of NVML's indexes. Two devices on one bus
 * end the process (a real machine has no such thing). */
static inline void standin_pci_order(int n, int *order)
{
  for (int i = 0; i < n; i++) {
    int k = i;
    order[i] = i;
    while (k > 0 && standin_pci_bus(order[k - 1]) > standin_pci_bus(order[k])) {
      int t = order[k - 1];
      order[k - 1] = order[k];
      order[k] = t;
      k--;
    }
    if (k > 0 && standin_pci_bus(order[k - 1]) == standin_pci_bus(order[k])) {
      fprintf(stderr,
              "weft-standin: WEFT_STANDIN_PCI_BUS='%s' puts devices %d and %d on bus "
              "%02x\n",
              getenv("WEFT_STANDIN_PCI_BUS") ? getenv("WEFT_STANDIN_PCI_BUS") : "", order[k - 1],
              order[k], standin_pci_bus(order[k]));
      abort();
    }
  }
}

/* The 16 bytes of physical device p's UUID, or of its MIG instance's. */
static inline void standin_uuid(int p, int mig, unsigned char u[16])
{
  memset(u, 0, 16);
  u[0] = 0x57;
  u[1] = 0x53;
  u[2] = mig ? 0x4d : 0x49;
  u[3] = (unsigned char)p;
  u[15] = (unsigned char)p;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (or "MIG-..."), as nvidia-smi -L
 * writes it; len >= 41. */
static inline void standin_uuid_str(const unsigned char u[16], int mig, char *buf, size_t len)
{
  snprintf(buf, len, "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           mig ? "MIG" : "GPU", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
           u[11], u[12], u[13], u[14], u[15]);
}

/* One hexadecimal field of at most max digits ending at a character of stop
 * (or at the end when stop has '\0'); its value, or -1. */
static inline long standin_hex_field(const char **s, int max, const char *stop)
{
  long v = 0;
  int n = 0;
  const char *p = *s;

  for (; *p && strchr("0123456789abcdefABCDEF", *p); p++, n++)
    v = v * 16 + (*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
  if (n == 0 || n > max || !strchr(stop, *p))
    return -1;
  *s = p;
  return v;
}

/* A PCI bus id in the forms cuDeviceGetByPCIBusId and cudaDeviceGetByPCIBusId
 * take (cuda.h, cuda_runtime_api.h): [domain]:[bus]:[device].[function],
 * [domain]:[bus]:[device] or [bus]:[device].[function], hexadecimal, either
 * case ("0000:04:00.0", "00000000:04:00.0", "04:00.0"). 0, or -1 when s is
 * none of them (no sign, space or 0x). */
static inline int standin_parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev,
                                       unsigned *fn)
{
  const char *p = s;
  long a, b, c, d = 0;
  int colons = 0;

  if (!s)
    return -1;
  for (const char *q = s; *q; q++)
    colons += *q == ':';
  if (colons == 2) {
    if ((a = standin_hex_field(&p, 8, ":")) < 0 || (p++, b = standin_hex_field(&p, 2, ":")) < 0 ||
        (p++, c = standin_hex_field(&p, 2, ".")) < 0 ||
        (*p == '.' && (p++, d = standin_hex_field(&p, 1, "")) < 0))
      return -1;
  } else if (colons == 1) {
    a = 0;
    if ((b = standin_hex_field(&p, 2, ":")) < 0 || (p++, c = standin_hex_field(&p, 2, ".")) < 0 ||
        *p != '.' || (p++, d = standin_hex_field(&p, 1, "")) < 0)
      return -1;
  } else {
    return -1;
  }
  if (c > 0x1f || d > 7)
    return -1;
  *dom = (unsigned)a;
  *bus = (unsigned)b;
  *dev = (unsigned)c;
  *fn = (unsigned)d;
  return 0;
}

#endif /* WEFT_STANDIN_PCI_H */
