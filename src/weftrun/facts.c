/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The facts stage, where all of weftrun's I/O about the hosts happens: this
 * VM's Google Cloud preset and facts (gcp.c), the remote hosts' topologies
 * and facts through one probe (probe.c) when their slots are not given or a
 * report needs them, and every host's topology loaded once per file: its
 * --topology file, its probed XML, or this machine (for weftrun's own host,
 * and assumed for a remote host that is not probed: the ranks there place
 * themselves on their own hardware in any case). --gpus-per-node N and
 * WEFT_NO_PROBE skip the probe. In a Slurm job, the GPUs it was given on
 * each host (slurm.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weftrun.h"

struct wr_topo_entry {
  char *path;                   /* NULL: this machine */
  weftx_topo *topo;
};

static int
topo_get(wr_inventory *inv, const char *path, const weftx_topo **out)
{
  for (int i = 0; i < inv->ntopos; i++)
    if ((!path && !inv->topos[i].path) ||
        (path && inv->topos[i].path && !strcmp(path, inv->topos[i].path))) {
      *out = inv->topos[i].topo;
      return 0;
    }
  char why[512] = "";
  weftx_topo *t = NULL;
  /* this machine through the per-user cache; no GPU details, which start the driver */
  int rc = weftx_topo_load(path, WEFTX_TOPO_CACHE | WEFTX_TOPO_NO_DETAILS, &t, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOENT ? WR_EXIT_NOINPUT : rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_USAGE;
  }
  wr_topo_entry *v = realloc(inv->topos, (size_t)(inv->ntopos + 1) * sizeof(*v));
  char *p = path ? strdup(path) : NULL;
  if (!v || (path && !p)) {
    if (v)
      inv->topos = v;
    free(p);
    weftx_topo_destroy(t);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  inv->topos = v;
  v[inv->ntopos].path = p;
  v[inv->ntopos++].topo = t;
  *out = t;
  return 0;
}

/* Remote hosts without a topology file, probed (once, all together) when their slots
 * are not given, a report needs their placement, or this host is on GCE (their facts
 * then order the hosts). */
static int
probe_remote(const wr_opts *o, const wr_engine *e, wr_inventory *inv, int gce_here,
             wr_jobdir *dir, int stop_fd, char **paths)
{
  /* --check's own job brings each host's topology back (check.c) */
  if (o->gpus_per_node >= 0 || getenv("WEFT_NO_PROBE") || o->check)
    return 0;
  wr_host **which = calloc((size_t)inv->nhosts, sizeof(*which));
  char **got = calloc((size_t)inv->nhosts, sizeof(*got));
  int n = 0, rc;
  if (!which || !got) {
    free(which);
    free(got);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < inv->nhosts; h++) {
    wr_host *w = &inv->hosts[h];
    if (w->file || w->local || (w->slots > 0 && !o->dry_run && !o->report_bindings && !gce_here))
      continue;
    which[n++] = w;
  }
  rc = n ? wr_probe(o, e, which, n, dir, stop_fd, got) : 0;
  for (int i = 0; !rc && i < n; i++)
    paths[which[i]->index] = got[i];
  free(which);
  free(got);
  return rc;
}

static void
warn(void *arg, const char *msg)
{
  (void)arg;
  fprintf(stderr, "weftrun: warning: %s\n", msg);
}

/* One machine type for all hosts, or a warning. */
static int
check_mixed(const wr_inventory *inv)
{
  if (inv->nhosts < 2)
    return 0;
  const char **names = calloc((size_t)inv->nhosts, sizeof(*names));
  const char **types = calloc((size_t)inv->nhosts, sizeof(*types));
  if (!names || !types) {
    free(names);
    free(types);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < inv->nhosts; h++) {
    names[h] = inv->hosts[h].name;
    types[h] = inv->hosts[h].machine_type;
  }
  weftx_gcp_check_mixed(names, types, inv->nhosts, warn, NULL);
  free(names);
  free(types);
  return 0;
}

int
wr_facts_topologies(const wr_opts *o, wr_inventory *inv, char *const *paths)
{
  int rc = 0;
  for (int h = 0; !rc && h < inv->nhosts; h++) {
    wr_host *w = &inv->hosts[h];
    const char *path = w->file ? w->file : paths[h];
    w->from = w->file ? WR_TOPO_FILE : paths[h] ? WR_TOPO_PROBED :
              w->local ? WR_TOPO_HERE : WR_TOPO_ASSUMED;
    rc = topo_get(inv, path, &w->topo);
    if (!rc) {
      w->gpus_trusted = o->gpus_per_node >= 0 && !w->file;
      w->gpus = w->gpus_trusted ? (int)o->gpus_per_node : weftx_topo_ngpus(w->topo);
    }
  }
  return rc;
}

int
wr_facts_gather(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                int stop_fd)
{
  int rc, gce_here = 0;
  char **paths = NULL;

  if ((rc = wr_gcp_prepare(o, inv->nhosts, &inv->gcp)))
    return rc;
  if (wr_gcp_env(inv->gcp, &inv->preset_env, &inv->npreset_env)) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  if (inv->nhosts > 1) {
    char mt[64], ph[256];
    gce_here = wr_gcp_local(inv->gcp, mt, sizeof(mt), ph, sizeof(ph));
    for (int h = 0; gce_here && h < inv->nhosts; h++)
      if (inv->hosts[h].local) {
        snprintf(inv->hosts[h].machine_type, sizeof(inv->hosts[h].machine_type), "%s", mt);
        snprintf(inv->hosts[h].physical_host, sizeof(inv->hosts[h].physical_host), "%s", ph);
      }
  }
  if (!(paths = calloc((size_t)inv->nhosts, sizeof(*paths)))) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  rc = probe_remote(o, e, inv, gce_here, dir, stop_fd, paths);
  if (!rc)
    rc = wr_facts_topologies(o, inv, paths);
  for (int h = 0; h < inv->nhosts; h++)
    free(paths[h]);
  free(paths);
  if (!rc)
    rc = wr_slurm_gpus(o, inv, stop_fd);
  return rc ? rc : check_mixed(inv);
}

void
wr_inventory_free(wr_inventory *inv)
{
  for (int i = 0; i < inv->ntopos; i++) {
    weftx_topo_destroy(inv->topos[i].topo);
    free(inv->topos[i].path);
  }
  free(inv->topos);
  for (int i = 0; i < inv->npreset_env; i++)
    free(inv->preset_env[i]);
  free(inv->preset_env);
  for (int h = 0; inv->hosts && h < inv->nhosts; h++)
    free(inv->hosts[h].gpus_allowed);
  free(inv->hosts);
  weftx_hostlist_destroy(inv->hl);
  wr_gcp_destroy(inv->gcp);
  memset(inv, 0, sizeof(*inv));
}
