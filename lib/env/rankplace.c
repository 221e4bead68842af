/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * From a placement on a topology to the plain numbers and strings of a
 * weftx_rank_info, so that weftx_rank_env() itself never touches hwloc.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <string.h>

int weftx_rank_info_set_place(weftx_rank_info *ri, const weftx_topo *t, const weftx_place *pl)
{
  const weftx_nic *nic;
  const weftx_gpu *gpu;
  int rc;

  if (!ri || !t || !pl)
    return WEFT_EINVAL;
  ri->ngpus = weftx_topo_ngpus(t);
  ri->gpu = pl->gpu;
  ri->ncores = pl->ncores;
  ri->cpus[0] = '\0';
  ri->nic[0] = '\0';
  ri->gpu_pci[0] = '\0';
  if (pl->cpuset) {
    rc = weftx_cpuset_format(pl->cpuset, ri->cpus, sizeof(ri->cpus));
    if (rc)
      return rc;
  }
  nic = pl->nic >= 0 ? weftx_topo_nic(t, pl->nic) : NULL;
  if (nic && nic->name[0])
    weft__snprintf(ri->nic, sizeof(ri->nic), "%s", nic->name);
  /* the address names the GPU in any numbering: gpu may be renumbered later (a Slurm
   * step's devices), the address stays */
  gpu = pl->gpu >= 0 ? weftx_topo_gpu(t, pl->gpu) : NULL;
  if (gpu && gpu->pci[0])
    weft__snprintf(ri->gpu_pci, sizeof(ri->gpu_pci), "%s", gpu->pci);
  return 0;
}
