/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The facts stage, where all of weftrun's I/O about the hosts happens: this
 * VM's Google Cloud preset and facts (gcp.c), the remote hosts' topologies
 * and facts through one probe (probe.c) when their slots are not given or a
 * report needs them, and every host's topology loaded once per file: its
 * --topology file, its probed XML, or this machine (for weftrun's own host,
 * and assumed for a remote host that is not probed: the ranks there place
 * themselves on their own hardware in any case). --gpus-per-node N and
 * WEFT_NO_PROBE skip the probe. First of all every host name is resolved, all
 * at once with a deadline: a host that does not resolve stops a launch (exit
 * 68), and a dry run that would probe it; one that resolves to an address of
 * this machine is mpirun's own host, as Open MPI decides. In a Slurm job,
 * the GPUs it was given on each host (slurm.c).
 */
#include "config.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hosts.h"

#define RESOLVE_DEADLINE_S 15.0

struct wr_topo_entry {
  char *path; /* NULL: this machine */
  weftx_topo *topo;
};

static int topo_get(wr_inventory *inv, const char *path, const weftx_topo **out)
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

/* Will the probe ask host \p w? Not when its topology is known (a file, this machine)
 * or the probe is switched off; always for a report of the plan or on Google Cloud (the
 * facts order the hosts); else when the host's slots depend on it: weft's (its GPUs)
 * when weft may place the ranks, Open MPI's (its cores, its objects for ppr and
 * --npersocket) when Open MPI is asked to. */
static int probed(const wr_opts *o, const wr_host *w, int gce_here)
{
  if (o->gpus_per_node >= 0 || getenv("WEFT_NO_PROBE") || w->file || w->local)
    return 0;
  if (o->dry_run || o->report_bindings || gce_here)
    return 1;
  if (wr_opts_cpu_mapping(o))
    return !w->ompi_given || o->npersocket > 0 ||
           (o->map_by && !strncasecmp(o->map_by, "ppr", 3) && !strstr(o->map_by, "node"));
  return w->slots <= 0;
}

/* Remote hosts without a topology file, probed (once, all together) when their slots
 * are not given, a report needs their placement, or this host is on GCE (their facts
 * then order the hosts). */
static int probe_remote(const wr_opts *o, const wr_engine *e, wr_inventory *inv, int gce_here,
                        wr_jobdir *dir, int stop_fd, char **paths)
{
  /* --check's own job brings each host's topology back (check/check.c) */
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
    if (probed(o, w, gce_here) && !w->unresolved[0])
      which[n++] = w;
  }
  rc = n ? wr_probe(o, e, which, n, dir, stop_fd, got, &inv->probe_said) : 0;
  for (int i = 0; !rc && i < n; i++)
    paths[which[i]->index] = got[i];
  free(which);
  free(got);
  return rc;
}

/* Is \p a this machine's: an address of one of its interfaces, or the loopback (as
 * Open MPI's opal_ifislocal() compares)? */
static int own_address(const weftx_netif *ifs, int n, const weftx_netaddr *a)
{
  static const unsigned char lo4[4] = {127, 0, 0, 1}, lo6[16] = {[15] = 1};
  if ((a->family == AF_INET && !memcmp(a->addr, lo4, 4)) ||
      (a->family == AF_INET6 && !memcmp(a->addr, lo6, 16)))
    return 1;
  for (int i = 0; i < n; i++)
    if (ifs[i].family == a->family && !memcmp(ifs[i].addr, a->addr, a->family == AF_INET ? 4 : 16))
      return 1;
  return 0;
}

/* Every host's name, resolved at once: mpirun's own host by address; a name that does
 * not resolve stops a launch, and a dry run that would probe it. */
static int resolve(const wr_opts *o, wr_inventory *inv, int gce_here)
{
  const char **names = calloc((size_t)inv->nhosts, sizeof(*names));
  weftx_netaddr *addr = calloc((size_t)inv->nhosts, sizeof(*addr));
  int *err = calloc((size_t)inv->nhosts, sizeof(*err)),
      *which = calloc((size_t)inv->nhosts, sizeof(*which));
  weftx_netif *ifs = NULL;
  int n = 0, nifs = 0, rc = 0;
  char why[512] = "";

  if (!names || !addr || !err || !which) {
    rc = WR_EXIT_ENGINE;
    fprintf(stderr, "weftrun: out of memory\n");
    goto out;
  }
  for (int h = 0; h < inv->nhosts; h++)
    if (!(inv->origin == WEFTX_HOSTS_LOCAL) && !inv->hosts[h].local) {
      which[n] = h;
      names[n++] = inv->hosts[h].typed ? inv->hosts[h].typed : inv->hosts[h].name;
    }
  if (n == 0)
    goto out;
  if (weftx_hosts_resolve(names, n, RESOLVE_DEADLINE_S, addr, err, why, sizeof(why)) ==
      WEFT_ENOMEM) {
    rc = WR_EXIT_ENGINE;
    fprintf(stderr, "weftrun: out of memory\n");
    goto out;
  }
  (void)weftx_netif_list(&ifs, &nifs);
  for (int i = 0; i < n && !rc; i++) {
    wr_host *w = &inv->hosts[which[i]];
    if (err[i] == 0) {
      w->local = own_address(ifs, nifs, &addr[i]);
      continue;
    }
    snprintf(w->unresolved, sizeof(w->unresolved), "%s",
             err[i] == EAI_AGAIN
               ? "the resolver could not answer (no name server reached, or none answered in "
                 "time)"
               : gai_strerror(err[i]));
    if (!o->dry_run || probed(o, w, gce_here)) {
      fprintf(stderr,
              "weftrun: cannot resolve host '%s' (%s): %s; check the name or "
              "/etc/hosts\n",
              names[i], weftx_hosts_origin_name(inv->origin), w->unresolved);
      rc = WR_EXIT_NOHOST;
    }
  }
out:
  free(ifs);
  free(names);
  free(addr);
  free(err);
  free(which);
  return rc;
}

static void warn(void *arg, const char *msg)
{
  (void)arg;
  fprintf(stderr, "weftrun: warning: %s\n", msg);
}

/* One machine type for all hosts, or a warning. */
static int check_mixed(const wr_inventory *inv)
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

int wr_facts_topologies(const wr_opts *o, wr_inventory *inv, char *const *paths)
{
  int rc = 0;
  for (int h = 0; !rc && h < inv->nhosts; h++) {
    wr_host *w = &inv->hosts[h];
    const char *path = w->file ? w->file : paths[h];
    w->from = w->file    ? WR_TOPO_FILE
              : paths[h] ? WR_TOPO_PROBED
              : w->local ? WR_TOPO_HERE
                         : WR_TOPO_ASSUMED;
    rc = topo_get(inv, path, &w->topo);
    if (!rc) {
      w->gpus_trusted = o->gpus_per_node >= 0 && !w->file;
      w->gpus = w->gpus_trusted ? (int)o->gpus_per_node : weftx_topo_ngpus(w->topo);
    }
  }
  return rc;
}

int wr_facts_gather(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
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
  if ((rc = resolve(o, inv, gce_here)))
    return rc;
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

void wr_inventory_free(wr_inventory *inv)
{
  for (int i = 0; i < inv->ntopos; i++) {
    weftx_topo_destroy(inv->topos[i].topo);
    free(inv->topos[i].path);
  }
  free(inv->topos);
  for (int i = 0; i < inv->npreset_env; i++)
    free(inv->preset_env[i]);
  free(inv->preset_env);
  free(inv->probe_said);
  inv->probe_said = NULL;
  for (int h = 0; inv->hosts && h < inv->nhosts; h++)
    free(inv->hosts[h].gpus_allowed);
  free(inv->hosts);
  for (int a = 0; a < WR_MAX_APPS; a++)
    free(inv->app_hosts[a]);
  wr_mca_free(&inv->mca);
  weftx_hostlist_destroy(inv->hl);
  wr_gcp_destroy(inv->gcp);
  memset(inv, 0, sizeof(*inv));
}
