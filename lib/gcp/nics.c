/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which /sys/class/net interface is which metadata NIC. Names differ by image
 * (eth1 on COS, enp6s0 on Ubuntu), MACs do not: each metadata
 * network-interfaces/<i>/mac is looked up among the interfaces' addresses.
 * The first NICs in metadata order (one, or two on A3 Ultra and A4) are the
 * host NICs; the rest carry GPU data and are ordered by PCI slot, which is the
 * order Google's TCPX bindings and profile scripts use (enp6s0, enp12s0,
 * enp134s0, enp140s0 on A3 High).
 */
#include "gcp_private.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void read_device(const char *dir, const char *ifname, weftx_gcp_nic *n)
{
  char path[4096], line[256];
  FILE *f;

  if (weft__snprintf(path, sizeof(path), "%s/%s/mtu", dir, ifname) == 0 &&
      weft__gcp_read_line(path, line, sizeof(line)) == 0) {
    long mtu;
    if (weftx_parse_long(line, 0, 1 << 20, &mtu) == 0)
      n->mtu = (int)mtu;
  }
  if (weft__snprintf(path, sizeof(path), "%s/%s/device/uevent", dir, ifname) != 0)
    return;
  f = fopen(path, "r");
  if (!f)
    return;
  n->gvnic = 0;
  while (fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "PCI_SLOT_NAME=", 14))
      weft__snprintf(n->pci, sizeof(n->pci), "%s", line + 14);
    else if (!strcmp(line, "DRIVER=gve") || !strncasecmp(line, "PCI_ID=1AE0:", 12))
      n->gvnic = 1;
  }
  fclose(f);
}

static int cmp_nic(const void *a, const void *b)
{
  const weftx_gcp_nic *x = a, *y = b;

  if (x->gpu != y->gpu)
    return x->gpu - y->gpu;
  if (x->gpu && x->pci[0] && y->pci[0] && strcmp(x->pci, y->pci))
    return strcmp(x->pci, y->pci);
  return x->index - y->index;
}

static int cmp_index(const void *a, const void *b)
{
  return ((const weftx_gcp_nic *)a)->index - ((const weftx_gcp_nic *)b)->index;
}

int weftx_gcp_nics_match(weftx_gcp_info *info)
{
  char dir[4096], path[4096], addr[64];
  int host_nics = weftx_gcp_family_host_nics(info->family);
  struct dirent *de;
  DIR *d;

  if (weft__gcp_path(dir, sizeof(dir), "/sys/class/net") != 0)
    return WEFT_ERANGE;
  d = opendir(dir);
  while (d && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' ||
        weft__snprintf(path, sizeof(path), "%s/%s/address", dir, de->d_name) != 0 ||
        weft__gcp_read_line(path, addr, sizeof(addr)) != 0)
      continue;
    for (int i = 0; i < info->nnics; i++) {
      weftx_gcp_nic *n = &info->nics[i];
      if (n->ifname[0] || strcasecmp(n->mac, addr) != 0)
        continue;
      if (weft__snprintf(n->ifname, sizeof(n->ifname), "%s", de->d_name) != 0)
        n->ifname[0] = '\0';
      else
        read_device(dir, de->d_name, n);
      WEFT__LOG(GCP, "NIC %d (%s) is %s pci %s mtu %d", n->index, n->mac, n->ifname,
                n->pci[0] ? n->pci : "?", n->mtu);
    }
  }
  if (d)
    closedir(d);
  qsort(info->nics, (size_t)info->nnics, sizeof(info->nics[0]), cmp_index);
  for (int i = 0; i < info->nnics; i++)
    info->nics[i].gpu = i >= host_nics;
  qsort(info->nics, (size_t)info->nnics, sizeof(info->nics[0]), cmp_nic);
  return 0;
}
