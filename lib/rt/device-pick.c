/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which CUDA device is the rank's GPU, the pure rules: what an entry of
 * CUDA_VISIBLE_DEVICES is, whether weftrun's WEFT_GPU (an index in PCI order)
 * can be taken as CUDA's number there, and PCI addresses. init.c asks them,
 * and asks the driver (device.c) where they say the index cannot be trusted.
 */
#include "rt_private.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int weft__vis_count(const char *vis)
{
  int n = 0;

  if (!vis || !*vis)
    return 0;
  for (n = 1; *vis; vis++)
    n += *vis == ',';
  return n;
}

enum weft__vis_kind weft__vis_entry(const char *s, size_t len, long *index)
{
  char item[32];

  *index = -1;
  if (len >= 4 && !strncmp(s, "GPU-", 4))
    return WEFT__VIS_UUID;
  if (len >= 4 && !strncmp(s, "MIG-", 4))
    return WEFT__VIS_MIG;
  /* digits only: weftx_parse_long would take a sign, CUDA may not */
  if (len == 0 || len >= sizeof(item) || strspn(s, "0123456789") < len)
    return WEFT__VIS_OTHER;
  memcpy(item, s, len);
  item[len] = '\0';
  if (weftx_parse_long(item, 0, 1 << 20, index) != 0) {
    *index = -1;
    return WEFT__VIS_OTHER;
  }
  return WEFT__VIS_INDEX;
}

int weft__gpu_index_trusted(const char *vis, const char *order, char *why, size_t size)
{
  static const char *const kind[] = {"an index", "a GPU by UUID", "a MIG instance",
                                     "an entry that is no index"};

  if (!order || strcmp(order, "PCI_BUS_ID") != 0) {
    if (!order)
      weft__snprintf(why, size, "CUDA_DEVICE_ORDER is unset: CUDA's default, FASTEST_FIRST");
    else
      weft__snprintf(why, size, "CUDA_DEVICE_ORDER=%.60s", order);
    return 0;
  }
  while (vis && *vis) {
    size_t len = strcspn(vis, ",");
    long idx;
    enum weft__vis_kind k = weft__vis_entry(vis, len, &idx);
    if (k != WEFT__VIS_INDEX) {
      weft__snprintf(why, size, "CUDA_VISIBLE_DEVICES names %s: %.*s", kind[k],
                     (int)(len < 60 ? len : 60), vis);
      return 0;
    }
    vis += len;
    if (*vis == ',')
      vis++;
  }
  return 1;
}

int weft__gpu_ordinal(long v, const char *vis)
{
  if (!vis || !*vis)
    return (int)v;
  for (int pos = 0; *vis; pos++) {
    size_t len = strcspn(vis, ",");
    long idx;
    if (weft__vis_entry(vis, len, &idx) == WEFT__VIS_INDEX && idx == v)
      return pos;
    vis += len;
    if (*vis == ',')
      vis++;
  }
  return -1;
}

static int hexfield(const char **s, const char *end, int maxdigits, unsigned long max,
                    unsigned long *out)
{
  const char *p = *s;
  unsigned long v = 0;

  while (p < end && p - *s < maxdigits && *p && strchr("0123456789abcdefABCDEF", *p)) {
    v = v * 16 + (unsigned long)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
    p++;
  }
  if (p == *s || v > max)
    return -1;
  *s = p;
  *out = v;
  return 0;
}

int weft__pci_parse(const char *s, size_t len, uint64_t *key)
{
  const char *end = s + len;
  unsigned long dom, bus, dev, fn;

  if (hexfield(&s, end, 8, 0xffffffffUL, &dom) || s >= end || *s++ != ':' ||
      hexfield(&s, end, 2, 0xff, &bus) || s >= end || *s++ != ':' ||
      hexfield(&s, end, 2, 0x1f, &dev) || s >= end || *s++ != '.' || hexfield(&s, end, 1, 7, &fn) ||
      s != end)
    return -1;
  *key = (uint64_t)dom << 16 | (uint64_t)bus << 8 | (uint64_t)dev << 3 | (uint64_t)fn;
  return 0;
}

int weft__first_item(const char *s, char *buf, size_t size)
{
  size_t n = strcspn(s, ",");

  if (n >= size)
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return 0;
}
