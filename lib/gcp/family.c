/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Machine type -> family. A family names the network regime (and so the
 * preset file under share/weft/presets/): plain sockets on one gVNIC (N1, A2,
 * G2, A3 High with 1-4 GPUs), GPUDirect-TCPX (A3 High and Edge with 8 GPUs),
 * TCPXO (A3 Mega) and RDMA through gIB (A3 Ultra, A4).
 */
#include "gcp_private.h"

#include <fnmatch.h>
#include <string.h>

static const struct family {
  const char *pattern; /* fnmatch() pattern on the machine type's basename */
  const char *name;
  int host_nics;
} families[] = {
  {"a3-highgpu-8g", "a3-highgpu-8g", 1},
  {"a3-highgpu-[124]g", "a3-highgpu-small", 1},
  {"a3-edgegpu-8g", "a3-edgegpu-8g", 1},
  {"a3-megagpu-8g", "a3-megagpu-8g", 1},
  {"a3-ultragpu-8g", "a3-ultragpu-8g", 2},
  {"a4-highgpu-8g", "a4-highgpu-8g", 2},
  {"a2-*", "a2", 1},
  {"g2-*", "g2", 1},
  {"n1-*", "n1", 1},
};

const char *weftx_gcp_family(const char *machine_type)
{
  const char *base;

  if (!machine_type || !*machine_type)
    return NULL;
  base = strrchr(machine_type, '/');
  base = base ? base + 1 : machine_type;
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(families); i++)
    if (fnmatch(families[i].pattern, base, 0) == 0)
      return families[i].name;
  return NULL;
}

int weftx_gcp_family_host_nics(const char *family)
{
  for (size_t i = 0; family && i < WEFT__ARRAY_SIZE(families); i++)
    if (!strcmp(families[i].name, family))
      return families[i].host_nics;
  return 1;
}
