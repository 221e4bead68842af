/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plan as people and programs read it: the plan JSON of DESIGN.md
 * ("version": 1, one rank per line, in rank order) and the one-line
 * --report-bindings form of a rank's place.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

/* Write \p s as a JSON string, quotes included. */
/* The name a NIC goes by: its interface, else its PCI address. */
static const char *nic_label(const weft_nic *nic)
{
  return nic->name[0] ? nic->name : nic->pci;
}

static int write_rank(FILE *out, const weft_plan *plan, const weft_plan_rank *r)
{
  const weft_plan_host *host = r->host >= 0 && r->host < plan->nhosts ? &plan->hosts[r->host] : NULL;
  const weft_topo *t = host ? host->topo : NULL;
  const weft_place *pl = &r->place;
  char *cpus = NULL;
  int i, first = 1;

  if (pl->cpuset && hwloc_bitmap_list_asprintf(&cpus, pl->cpuset) < 0)
    return WEFT_ENOMEM;
  fprintf(out, "    { \"rank\": %d, \"host\": ", r->rank);
  weft_json_string(out, host ? host->name : "");
  fprintf(out, ", \"node_rank\": %d, \"local_rank\": %d, \"gpu\": ", r->node_rank, r->local_rank);
  if (t && pl->gpu >= 0 && pl->gpu < weft_topo_ngpus(t)) {
    fprintf(out, "{ \"index\": %d, \"pci\": ", pl->gpu);
    weft_json_string(out, weft_topo_gpu(t, pl->gpu)->pci);
    fputs(" }", out);
  } else
    fputs("null", out);
  fputs(", \"cpus\": ", out);
  weft_json_string(out, cpus ? cpus : "");
  free(cpus);
  fputs(", \"numa\": [", out);
  if (pl->nodeset) {
    hwloc_bitmap_foreach_begin(i, pl->nodeset) {
      fprintf(out, first ? "%d" : ", %d", i);
      first = 0;
    }
    hwloc_bitmap_foreach_end();
  }
  fputs("], \"nic\": ", out);
  if (t && pl->nic >= 0 && pl->nic < weft_topo_nnics(t))
    weft_json_string(out, nic_label(weft_topo_nic(t, pl->nic)));
  else
    fputs("null", out);
  fputs(" }", out);
  return 0;
}

int weft_plan_write_json(FILE *out, const weft_plan *plan)
{
  int i, rc;

  if (!out || !plan || plan->np < 0 || (plan->np > 0 && !plan->ranks) ||
      (plan->nhosts > 0 && !plan->hosts) || (plan->nenv > 0 && !plan->env))
    return WEFT_EINVAL;
  fprintf(out, "{ \"version\": 1, \"np\": %d,\n  \"hosts\": [", plan->np);
  for (i = 0; i < plan->nhosts; i++) {
    const weft_plan_host *h = &plan->hosts[i];
    fputs(i ? ",\n    { \"name\": " : "\n    { \"name\": ", out);
    weft_json_string(out, h->name);
    fprintf(out, ", \"slots\": %d, \"gpus\": %d, \"topology\": ", h->slots,
            h->topo ? weft_topo_ngpus(h->topo) : 0);
    weft_json_string(out, h->topology ? h->topology : "live");
    fputs(" }", out);
  }
  fputs(plan->nhosts ? "\n  ],\n  \"ranks\": [" : "],\n  \"ranks\": [", out);
  for (i = 0; i < plan->np; i++) {
    fputs(i ? ",\n" : "\n", out);
    rc = write_rank(out, plan, &plan->ranks[i]);
    if (rc != 0)
      return rc;
  }
  fputs(plan->np ? "\n  ],\n  \"env\": {" : "],\n  \"env\": {", out);
  for (i = 0; i < plan->nenv; i++) {
    const char *kv = plan->env[i], *eq = kv ? strchr(kv, '=') : NULL;
    char key[256];
    if (!eq || (size_t)(eq - kv) >= sizeof(key))
      return WEFT_EINVAL;
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    fputs(i ? ",\n    " : "\n    ", out);
    weft_json_string(out, key);
    fputs(": ", out);
    weft_json_string(out, eq + 1);
  }
  fputs(plan->nenv ? "\n  }\n}\n" : "}\n}\n", out);
  return ferror(out) ? WEFT_EIO : 0;
}

int weft_place_format(const weft_topo *t, const char *host, int rank, const weft_place *pl,
                      char *buf, size_t len)
{
  char gpu[64] = "", cpus[1024] = "", numa[128] = "", nic[64] = "";
  char *list = NULL;

  if (!t || !pl || !buf || !len)
    return WEFT_EINVAL;
  if (pl->gpu >= 0 && pl->gpu < weft_topo_ngpus(t))
    weft__snprintf(gpu, sizeof(gpu), " GPU %d (%s)", pl->gpu, weft_topo_gpu(t, pl->gpu)->pci);
  if (pl->cpuset && hwloc_bitmap_list_asprintf(&list, pl->cpuset) >= 0) {
    if (weft__snprintf(cpus, sizeof(cpus), " cores %s", list) != 0)
      weft__snprintf(cpus, sizeof(cpus), " cores %d processors", hwloc_bitmap_weight(pl->cpuset));
    free(list);
    list = NULL;
  }
  if (pl->nodeset && !hwloc_bitmap_iszero(pl->nodeset) &&
      hwloc_bitmap_list_asprintf(&list, pl->nodeset) >= 0) {
    weft__snprintf(numa, sizeof(numa), " NUMA %s", list);
    free(list);
  }
  if (pl->nic >= 0 && pl->nic < weft_topo_nnics(t))
    weft__snprintf(nic, sizeof(nic), " NIC %s", nic_label(weft_topo_nic(t, pl->nic)));
  return weft__snprintf(buf, len, "%s rank %d (local %d):%s%s%s%s", host ? host : "", rank,
                        pl->local_rank, gpu, cpus, numa, nic);
}
