/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * From a placement on a topology to the plain numbers and strings of a
 * weft_rank_info, so that weft_rank_env() itself never touches hwloc.
 */
#include "weft_private.h"

#include <string.h>

int weft_rank_info_set_place(weft_rank_info *ri, const weft_topo *t, const weft_place *pl)
{
  const weft_nic *nic;
  int rc;

  if (!ri || !t || !pl)
    return WEFT_EINVAL;
  ri->ngpus = weft_topo_ngpus(t);
  ri->gpu = pl->gpu;
  ri->ncores = pl->ncores;
  ri->cpus[0] = '\0';
  ri->nic[0] = '\0';
  if (pl->cpuset) {
    rc = weft_cpuset_format(pl->cpuset, ri->cpus, sizeof(ri->cpus));
    if (rc)
      return rc;
  }
  nic = pl->nic >= 0 ? weft_topo_nic(t, pl->nic) : NULL;
  if (nic && nic->name[0])
    weft__snprintf(ri->nic, sizeof(ri->nic), "%s", nic->name);
  return 0;
}
