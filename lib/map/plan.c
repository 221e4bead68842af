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

/* The name a NIC goes by: its interface, else its PCI address. */
static const char *nic_label(const weftx_nic *nic) { return nic->name[0] ? nic->name : nic->pci; }

/* { "KEY": "VALUE", ... } from "KEY=VALUE" strings; with vals, the values come from
 * there instead (sources, reasons), and NULL ones are left out. */
static int write_env(FILE *out, const char *const *kv, const char *const *vals, int n,
                     const char *indent)
{
  int first = 1;

  fputc('{', out);
  for (int i = 0; i < n; i++) {
    const char *eq = kv[i] ? strchr(kv[i], '=') : NULL;
    char key[256];
    if (!eq || (size_t)(eq - kv[i]) >= sizeof(key))
      return WEFT_EINVAL;
    if (vals && !vals[i])
      continue;
    memcpy(key, kv[i], (size_t)(eq - kv[i]));
    key[eq - kv[i]] = '\0';
    fputs(first ? "\n" : ",\n", out);
    fputs(indent, out);
    fputs("  ", out);
    weftx_json_string(out, key);
    fputs(": ", out);
    weftx_json_string(out, vals ? vals[i] : eq + 1);
    first = 0;
  }
  if (!first) {
    fputc('\n', out);
    fputs(indent, out);
  }
  fputc('}', out);
  return 0;
}

static int write_rank(FILE *out, const weftx_plan *plan, const weftx_plan_rank *r)
{
  const weftx_plan_host *host =
    r->host >= 0 && r->host < plan->nhosts ? &plan->hosts[r->host] : NULL;
  const weftx_topo *t = host ? host->topo : NULL;
  const weftx_place *pl = &r->place;
  char *cpus = NULL;
  int i, first = 1;

  if (pl->cpuset && hwloc_bitmap_list_asprintf(&cpus, pl->cpuset) < 0)
    return WEFT_ENOMEM;
  fprintf(out, "    { \"rank\": %d, \"host\": ", r->rank);
  weftx_json_string(out, host ? host->name : "");
  fprintf(out, ", \"node_rank\": %d, \"local_rank\": %d, \"gpu\": ", r->node_rank, r->local_rank);
  if (t && pl->gpu >= 0 && pl->gpu < weftx_topo_ngpus(t)) {
    fprintf(out, "{ \"index\": %d, \"pci\": ", pl->gpu);
    weftx_json_string(out, weftx_topo_gpu(t, pl->gpu)->pci);
    fputs(" }", out);
  } else
    fputs("null", out);
  fputs(", \"cpus\": ", out);
  weftx_json_string(out, cpus ? cpus : "");
  free(cpus);
  fputs(", \"numa\": [", out);
  if (pl->nodeset) {
    hwloc_bitmap_foreach_begin(i, pl->nodeset)
    {
      fprintf(out, first ? "%d" : ", %d", i);
      first = 0;
    }
    hwloc_bitmap_foreach_end();
  }
  fputs("], \"nic\": ", out);
  if (t && pl->nic >= 0 && pl->nic < weftx_topo_nnics(t))
    weftx_json_string(out, nic_label(weftx_topo_nic(t, pl->nic)));
  else
    fputs("null", out);
  if (r->nenv > 0) {
    int rc;
    if (!r->env)
      return WEFT_EINVAL;
    fputs(", \"env\": ", out);
    if ((rc = write_env(out, r->env, NULL, r->nenv, "     ")))
      return rc;
  }
  fputs(" }", out);
  return 0;
}

int weftx_plan_write_json(FILE *out, const weftx_plan *plan)
{
  int i, rc;

  if (!out || !plan || plan->np < 0 || (plan->np > 0 && !plan->ranks) ||
      (plan->nhosts > 0 && !plan->hosts) || (plan->nenv > 0 && !plan->env))
    return WEFT_EINVAL;
  fprintf(out, "{ \"version\": 1, \"np\": %d,\n  \"hosts\": [", plan->np);
  for (i = 0; i < plan->nhosts; i++) {
    const weftx_plan_host *h = &plan->hosts[i];
    fputs(i ? ",\n    { \"name\": " : "\n    { \"name\": ", out);
    weftx_json_string(out, h->name);
    fprintf(out, ", \"slots\": %d, \"gpus\": %d, \"topology\": ", h->slots,
            h->topo ? weftx_topo_ngpus(h->topo) : 0);
    weftx_json_string(out, h->topology ? h->topology : "live");
    if (h->gpus_allowed) {
      fputs(", \"gpus_allowed\": ", out);
      weftx_json_string(out, h->gpus_allowed);
      fputs(", \"gpus_from\": ", out);
      weftx_json_string(out, h->gpus_from ? h->gpus_from : "");
    }
    fputs(" }", out);
  }
  fputs(plan->nhosts ? "\n  ],\n  \"ranks\": [" : "],\n  \"ranks\": [", out);
  for (i = 0; i < plan->np; i++) {
    fputs(i ? ",\n" : "\n", out);
    rc = write_rank(out, plan, &plan->ranks[i]);
    if (rc != 0)
      return rc;
  }
  fputs(plan->np ? "\n  ]," : "],", out);
  if (plan->nforwarded > 0) { /* on a line of its own, before "env" */
    fputs("\n  \"env_forwarded\": [", out);
    for (i = 0; i < plan->nforwarded; i++) {
      fputs(i ? ", " : "", out);
      weftx_json_string(out, plan->forwarded[i]);
    }
    fputs("],", out);
  }
  fputs("\n  \"env\": ", out);
  if ((rc = write_env(out, plan->env, NULL, plan->nenv, "  ")))
    return rc;
  if (plan->env_source) {
    fputs(",\n  \"env_source\": ", out);
    if ((rc = write_env(out, plan->env, plan->env_source, plan->nenv, "  ")))
      return rc;
  }
  for (i = 0; plan->env_unresolved && i < plan->nenv && !plan->env_unresolved[i]; i++)
    ;
  if (plan->env_unresolved && i < plan->nenv) {
    fputs(",\n  \"env_unresolved\": ", out);
    if ((rc = write_env(out, plan->env, plan->env_unresolved, plan->nenv, "  ")))
      return rc;
  }
  fputs("\n}\n", out);
  return ferror(out) ? WEFT_EIO : 0;
}

int weftx_place_format(const weftx_topo *t, const char *host, int rank, const weftx_place *pl,
                       char *buf, size_t len)
{
  char gpu[64] = "", cpus[1024] = "", numa[128] = "", nic[64] = "";
  char *list = NULL;

  if (!t || !pl || !buf || !len)
    return WEFT_EINVAL;
  if (pl->gpu >= 0 && pl->gpu < weftx_topo_ngpus(t))
    weft__snprintf(gpu, sizeof(gpu), " GPU %d (%s)", pl->gpu, weftx_topo_gpu(t, pl->gpu)->pci);
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
  if (pl->nic >= 0 && pl->nic < weftx_topo_nnics(t))
    weft__snprintf(nic, sizeof(nic), " NIC %s", nic_label(weftx_topo_nic(t, pl->nic)));
  return weft__snprintf(buf, len, "%s rank %d (local %d):%s%s%s%s", host ? host : "", rank,
                        pl->local_rank, gpu, cpus, numa, nic);
}
