/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --nccl-preset: the cores an NCCL preset reserves (reserve-cpus), which
 * weftrun keeps every rank off, so that weft-topo places as weftrun does.
 * auto takes the family of the machine the topology models: the WeftModel of
 * a shipped topology, or this VM's machine type on Google Cloud. weftrun's
 * auto applies the family's preset to jobs of more than one VM only; weft-topo
 * shows that placement and says in one line that a one-VM job differs.
 */
#include "weft-topo.h"

#include <string.h>

/* The machine type the topology models: WeftModel (shipped files), or this VM's. */
static const char *machine_type(const weftx_topo *t, weftx_gcp_info *info)
{
  const char *m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(weftx_topo_hwloc(t)), "WeftModel");
  char why[512];

  if (m && *m)
    return m;
  if (!weftx_topo_is_live(t) || weftx_gcp_identify(info, why, sizeof(why)) != 0 || !info->on_gce)
    return NULL;
  return info->machine_type;
}

int topo_preset(const weftx_topo *t, const struct topo_opts *o, struct topo_preset *out)
{
  weftx_gcp_info info;
  const char *arg = o->preset ? o->preset : "auto", *mt = NULL, *family;
  char why[600];
  int rc;

  memset(out, 0, sizeof(*out));
  memset(&info, 0, sizeof(info));
  if (!strcmp(arg, "none"))
    return 0;
  if (!strcmp(arg, "auto")) {
    mt = machine_type(t, &info);
    family = mt ? weftx_gcp_family(mt) : NULL;
    if (!family)
      return 0;
    out->automatic = 1;
  } else {
    family = arg;
  }
  rc = weftx_preset_load(family, &out->preset, why, sizeof(why));
  if (rc == WEFT_ENAME && out->automatic)
    return 0; /* a family without a preset file: weftrun's auto applies none either */
  if (rc != 0) {
    fprintf(stderr, "weft-topo: --nccl-preset: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOMEM ? TOPO_EXIT_INTERNAL : TOPO_EXIT_USAGE;
  }
  out->reserved = weftx_preset_reserved_cpus(out->preset);
  return 0;
}

void topo_preset_line(FILE *out, const struct topo_preset *p, const char *prefix)
{
  const char *name;

  if (!p->preset || !p->reserved)
    return;
  name = weftx_preset_name(p->preset);
  if (p->automatic)
    fprintf(out,
            "%snccl preset %s (auto) reserves cores %s, as weftrun does in a job of more than "
            "one VM; in a job of one VM weftrun applies no preset under auto (--nccl-preset none "
            "shows that)\n",
            prefix, name, p->reserved);
  else
    fprintf(out, "%snccl preset %s reserves cores %s, as weftrun --nccl-preset %s does\n", prefix,
            name, p->reserved, name);
}

void topo_preset_clear(struct topo_preset *p)
{
  weftx_preset_free(p->preset);
  memset(p, 0, sizeof(*p));
}
