/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one call a launcher or a rank agent makes for --nccl-preset: detect the
 * VM when the choice needs it, and pick the preset. "none" asks nothing of
 * anyone; "auto" never fails a job: a metadata server that does not answer is
 * a warning, a machine type without a preset (a CPU VM) is not even that.
 */
#include "gcp_private.h"

#include <string.h>

int weftx_gcp_job_preset(const char *arg, int multi_vm, weftx_gcp_info *info, weftx_preset **p,
                         char *why, size_t whylen)
{
  int automatic = !arg || !strcmp(arg, "auto"), rc;

  *p = NULL;
  memset(info, 0, sizeof(*info));
  if (why && whylen)
    why[0] = '\0';
  if (arg && !strcmp(arg, "none"))
    return 0;
  if (automatic && !multi_vm)
    return 0;
  rc = weftx_gcp_detect(info, why, whylen);
  if (rc == WEFT_ENOMEM)
    return rc;
  if (rc != 0) {
    /* "auto": why holds the reason, the caller prints it as a warning. A family
     * name still loads; resolving says which NIC it misses. */
    memset(info, 0, sizeof(*info));
    if (automatic)
      return 0;
  } else if (automatic && info->on_gce && !info->family) {
    /* A CPU machine type (e2, n2, c3...): nothing to say to every job run there. */
    WEFT__LOG(GCP, "--nccl-preset auto: no preset for machine type %s", info->machine_type);
    return 0;
  }
  return weftx_preset_select(arg ? arg : "auto", info, multi_vm, p, why, whylen);
}
