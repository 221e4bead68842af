/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-flight checks for a GCE VM against its family's preset: the problems
 * that do not fail a job but cost most of its bandwidth (reference pitfalls
 * 1, 8, 9, 12 and 18), and the Google Cloud advice about a topology (this
 * GCE VM's, or a file's that models a GCE shape; never another machine's).
 * Each message names what is wrong and how to fix it.
 */
#include "gcp_private.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void warnf(weftx_gcp_warn_fn warn, void *arg, int *n, const char *fmt, ...)
  WEFT_PRINTF(4, 5);

#include <stdarg.h>

static void warnf(weftx_gcp_warn_fn warn, void *arg, int *n, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  (*n)++;
  if (warn)
    warn(arg, msg);
}

int weftx_gcp_check(const weftx_gcp_info *info, const weftx_preset *p, int multi_vm,
                    weftx_gcp_warn_fn warn, void *arg)
{
  const char *pname = p ? weftx_preset_name(p) : NULL;
  char path[4096];
  int n = 0;

  if (!info || !info->on_gce)
    return 0;
  for (int i = 0; i < weft__preset_nplugins(p); i++) {
    const char *lib = weft__preset_plugin(p, i);
    if (weft__gcp_path(path, sizeof(path), lib) == 0 && access(path, R_OK) != 0)
      warnf(warn, arg, &n,
            "%s: NCCL network plugin %s is missing: NCCL falls back to "
            "plain sockets at a fraction of the bandwidth; install Google's plugin for %s "
            "(see https://cloud.google.com/compute/docs/gpus/gpudirect)",
            info->hostname[0] ? info->hostname : "this VM", lib, info->machine_type);
  }
  for (int i = 0; i < info->nnics; i++) {
    const weftx_gcp_nic *nic = &info->nics[i];
    const char *name = nic->ifname[0] ? nic->ifname : nic->mac;
    if (!nic->ifname[0]) {
      warnf(warn, arg, &n,
            "metadata NIC %d (MAC %s) matches no interface in /sys/class/net: "
            "is the guest's network configured for every vNIC?",
            nic->index, nic->mac);
      continue;
    }
    if (nic->gvnic == 0 && (!nic->gpu || weft__preset_gvnic_all(p)))
      warnf(warn, arg, &n,
            "%s is not a gVNIC (driver gve): bandwidth is capped well below the "
            "machine's; recreate the VM with --network-interface=nic-type=GVNIC",
            name);
    if (nic->gpu && weftx_preset_mtu(p) > 0 && nic->mtu >= 0 && nic->mtu < weftx_preset_mtu(p))
      warnf(warn, arg, &n,
            "GPU NIC %s has MTU %d, %s needs %d: create its VPC network with "
            "--mtu=%d",
            name, nic->mtu, pname, weftx_preset_mtu(p), weftx_preset_mtu(p));
  }
  if (multi_vm && !info->physical_host[0])
    warnf(warn, arg, &n,
          "no instance/attributes/physical_host: the VMs have no compact "
          "placement policy, so bandwidth between them is lower and varies; create them with "
          "a group-placement policy (--collocation=collocated)");
  return n;
}

int weftx_gcp_check_mixed(const char *const *hosts, const char *const *machine_types, int n,
                          weftx_gcp_warn_fn warn, void *arg)
{
  int first = -1, count = 0;
  char msg[1024];

  for (int i = 0; i < n; i++) {
    if (!machine_types[i] || !machine_types[i][0])
      continue;
    if (first < 0) {
      first = i;
    } else if (strcmp(machine_types[i], machine_types[first]) != 0) {
      weft__snprintf(msg, sizeof(msg),
                     "mixed machine types in one job: %s is %s but %s is %s; "
                     "NCCL rails and presets differ, use one machine type for all hosts",
                     hosts && hosts[first] ? hosts[first] : "host 0", machine_types[first],
                     hosts && hosts[i] ? hosts[i] : "another host", machine_types[i]);
      if (warn)
        warn(arg, msg);
      count = 1;
      break;
    }
  }
  return count;
}

/* A topology of a GCE VM: this machine when DMI says it is one (WEFT_GCP_SYSROOT
 * honoured), a file when the DMI product name it recorded does. */
static int topo_models_gce(const weftx_topo *t)
{
  const char *product;

  if (weftx_topo_is_live(t))
    return weftx_gcp_dmi_is_gce();
  product = hwloc_obj_get_info_by_name(hwloc_get_root_obj(weftx_topo_hwloc(t)), "DMIProductName");
  return product && (!strcmp(product, "Google Compute Engine") || !strcmp(product, "Google"));
}

int weftx_gcp_topo_check(const weftx_topo *t, weftx_gcp_warn_fn warn, void *arg)
{
  int n = 0;

  if (!t || !topo_models_gce(t))
    return 0;
  for (int i = 0; i < weftx_topo_nnics(t); i++)
    if (weftx_topo_nic(t, i)->gvnic)
      return 0;
  if (weftx_topo_is_live(t))
    warnf(warn, arg, &n,
          "this is a Google Compute Engine VM without gVNIC (PCI vendor 0x1ae0): "
          "create it with --network-interface=nic-type=GVNIC for full network bandwidth");
  else
    warnf(warn, arg, &n,
          "this topology file models a Google Compute Engine VM without gVNIC "
          "(PCI vendor 0x1ae0): such a VM gets full network bandwidth only when created with "
          "--network-interface=nic-type=GVNIC");
  return n;
}
