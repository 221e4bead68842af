/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-topo --list-topologies: the names --topology and WEFT_TOPOLOGY accept
 * besides files (weftx_topo_dir()), one a line, each with its description.
 * The name comes first and alone in its column, so that `cut -d' ' -f1` (and
 * shell completion) get the names.
 */
#include "weft-topo.h"

#include <stdlib.h>
#include <string.h>

int topo_list(FILE *out)
{
  weftx_topo_entry *v = NULL;
  char why[512] = "";
  int n = 0, width = 0, rc = weftx_topo_list(&v, &n, why, sizeof(why));

  if (rc != 0) {
    fprintf(stderr, "weft-topo: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOMEM ? TOPO_EXIT_INTERNAL : TOPO_EXIT_TOPOLOGY;
  }
  for (int i = 0; i < n; i++)
    if ((int)strlen(v[i].name) > width)
      width = (int)strlen(v[i].name);
  for (int i = 0; i < n; i++) {
    if (v[i].desc[0])
      fprintf(out, "%-*s  %s\n", width, v[i].name, v[i].desc);
    else
      fprintf(out, "%s\n", v[i].name);
  }
  free(v);
  return TOPO_EXIT_OK;
}
