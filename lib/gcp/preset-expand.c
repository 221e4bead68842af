/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The placeholders of preset values: @host_nic@, @host_nics@, @gpu_nics@ and
 * @gpu_nicN@, checked when a file is read and filled from this VM's NICs
 * (matched to the metadata MACs) when a preset is resolved.
 */
#include "preset_private.h"

#include <stdlib.h>
#include <string.h>

/* Every @word@ in v must be a placeholder that resolve knows. */
int weft__preset_placeholders_ok(const char *v)
{
  for (const char *a = strchr(v, '@'); a; a = strchr(a, '@')) {
    const char *b = strchr(a + 1, '@');
    size_t len;
    if (!b)
      return 0;
    len = (size_t)(b - a - 1);
    if (!((len == 8 && !strncmp(a + 1, "host_nic", 8)) ||
          (len == 9 && !strncmp(a + 1, "host_nics", 9)) ||
          (len == 8 && !strncmp(a + 1, "gpu_nics", 8)) ||
          (len > 7 && !strncmp(a + 1, "gpu_nic", 7) && strspn(a + 8, "0123456789") == len - 7)))
      return 0;
    a = b + 1;
  }
  return 1;
}

static int nic_list(const weftx_gcp_info *info, int gpu, int max, char *buf, size_t len)
{
  size_t used = 0;
  int n = 0;

  buf[0] = '\0';
  for (int i = 0; info && i < info->nnics && n < max; i++) {
    const weftx_gcp_nic *nic = &info->nics[i];
    if (nic->gpu != gpu)
      continue;
    if (!nic->ifname[0])
      return WEFT_ENOENT;
    if (weft__snprintf(buf + used, len - used, "%s%s", n ? "," : "", nic->ifname) != 0)
      return WEFT_ERANGE;
    used += strlen(buf + used);
    n++;
  }
  return n ? 0 : WEFT_ENOENT;
}

static int gpu_nic(const weftx_gcp_info *info, long k, char *buf, size_t len)
{
  for (int i = 0; info && i < info->nnics; i++)
    if (info->nics[i].gpu && k-- == 0)
      return info->nics[i].ifname[0] ? weft__snprintf(buf, len, "%s", info->nics[i].ifname)
                                     : WEFT_ENOENT;
  return WEFT_ENOENT;
}

int weft__preset_expand(const char *preset, const weftx_gcp_info *info, const char *key,
                        const char *v, char *buf, size_t len, char *why, size_t whylen)
{
  char name[32], sub[1024];
  size_t used = 0;
  int rc;

  if (len == 0)
    return WEFT_ERANGE;

  while (*v) {
    const char *a = strchr(v, '@'), *b;
    size_t lit = a ? (size_t)(a - v) : strlen(v);
    if (used + lit >= len)
      return WEFT_ERANGE;
    memcpy(buf + used, v, lit);
    used += lit;
    if (!a)
      break;
    b = strchr(a + 1, '@');
    if (!b || (size_t)(b - a - 1) >= sizeof(name))
      return WEFT_EPARSE;
    memcpy(name, a + 1, (size_t)(b - a - 1));
    name[b - a - 1] = '\0';
    if (!strcmp(name, "host_nic"))
      rc = nic_list(info, 0, 1, sub, sizeof(sub));
    else if (!strcmp(name, "host_nics"))
      rc = nic_list(info, 0, WEFTX_GCP_MAX_NICS, sub, sizeof(sub));
    else if (!strcmp(name, "gpu_nics"))
      rc = nic_list(info, 1, WEFTX_GCP_MAX_NICS, sub, sizeof(sub));
    else
      rc = gpu_nic(info, strtol(name + 7, NULL, 10), sub, sizeof(sub));
    if (rc != 0) {
      weft__snprintf(why, whylen,
                     "preset %s: %s needs @%s@, but %s; set %s yourself "
                     "(weftrun -x %s=...) or use --nccl-preset none",
                     preset, key, name,
                     !info || !info->on_gce ? "this is not a GCE VM"
                                            : "no local interface matched the metadata MACs",
                     key, key);
      return WEFT_ENOENT;
    }
    if (used + strlen(sub) >= len)
      return WEFT_ERANGE;
    memcpy(buf + used, sub, strlen(sub));
    used += strlen(sub);
    v = b + 1;
  }
  buf[used] = '\0';
  return 0;
}
