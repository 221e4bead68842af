/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job plan: which hosts, how many ranks on each, each host's topology,
 * and every rank's placement, from the same weftx_map_rank() that weft-rank
 * evaluates on its host. Remote hosts without --topology HOST=FILE are
 * assumed to look like this one (or --topology FILE) for the report; the
 * ranks there compute their own placement from their own hardware.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "layout.h"
#include "weftrun.h"

typedef struct topo_entry {
  char *path;           /* NULL: this machine */
  weftx_topo *topo;
} topo_entry;

struct wr_job {
  weftx_hostlist *hl;
  weftx_policy pol;
  int by_node;
  int nhosts;
  weftx_plan_host *hosts;
  char **host_file;     /* per host: XML for weft-rank there, NULL: its own hardware */
  char **probed;        /* per host: temporary XML of a probed remote host, or NULL */
  int *counts;
  int *cap;             /* per host: ranks it takes without oversubscribing (weftx_map_slots) */
  int oversub;          /* some host has more ranks than cap: placement wraps there */
  int np;
  topo_entry topos[WR_MAX_LIST + 1];
  int ntopos;
  weftx_plan_rank *ranks;
  char **env;           /* "KEY=VALUE" shown under "env" in the plan JSON */
  int nenv;
  weftx_plan plan;
  wr_gcp *gcp;
  wr_gce *gce;          /* per host: machine type and physical_host, "" when unknown */
  int gce_here;         /* weftrun's own host is on GCE: probe every host for its facts */
  int *hl_of;           /* per host: its index in hl once ordered by physical_host, else NULL */
  int ordered;          /* hosts ordered by physical_host */
};

static int
hl_index(const wr_job *j, int h)
{
  return j->hl_of ? j->hl_of[h] : h;
}

static const char *
base_name(const char *p)
{
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static int
topo_get(wr_job *j, const char *path, weftx_topo **out)
{
  for (int i = 0; i < j->ntopos; i++)
    if ((!path && !j->topos[i].path) || (path && j->topos[i].path && !strcmp(path, j->topos[i].path))) {
      *out = j->topos[i].topo;
      return 0;
    }
  if (j->ntopos >= WR_MAX_LIST + 1) {
    fprintf(stderr, "weftrun: more than %d topology files\n", WR_MAX_LIST);
    return WR_EXIT_USAGE;
  }
  char why[512] = "";
  weftx_topo *t = NULL;
  int rc = weftx_topo_load(path, 0, &t, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOENT ? WR_EXIT_NOINPUT : rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_USAGE;
  }
  topo_entry *e = &j->topos[j->ntopos];
  e->path = NULL;
  if (path && !(e->path = strdup(path))) {
    weftx_topo_destroy(t);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  e->topo = t;
  j->ntopos++;
  *out = t;
  return 0;
}

static int
is_local_name(const char *name)
{
  char me[256];
  if (!strcasecmp(name, "localhost") || !strcmp(name, "127.0.0.1"))
    return 1;
  if (gethostname(me, sizeof(me)) == 0) {
    me[sizeof(me) - 1] = '\0';
    if (!strcasecmp(name, me))
      return 1;
  }
  return 0;
}

static int
gather_hosts(wr_job *j, const wr_opts *o)
{
  weftx_hosts_input in;
  char why[512] = "";
  memset(&in, 0, sizeof(in));
  in.host_args = o->host_args;
  in.nhost_args = o->nhost_args;
  in.hostfile = o->hostfile;
  in.slurm_nodelist = getenv("SLURM_JOB_NODELIST");
  in.slurm_tasks_per_node = getenv("SLURM_TASKS_PER_NODE");
  /* Open MPI's default hostfile (an MCA parameter, as weft-vcluster sets it) stands in
   * for --hostfile when neither -H, --hostfile nor a Slurm allocation says */
  if (!in.nhost_args && !in.hostfile && !in.slurm_nodelist) {
    const char *d = getenv("OMPI_MCA_orte_default_hostfile");
    if (!d || !*d)
      d = getenv("PRTE_MCA_prte_default_hostfile");
    if (d && *d)
      in.hostfile = d;
  }
  int rc = weftx_hosts_gather(&in, &j->hl, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOENT || rc == WEFT_EIO ? WR_EXIT_NOINPUT : WR_EXIT_HOSTS;
  }
  j->nhosts = weftx_hostlist_count(j->hl);
  if (j->nhosts < 1 || j->nhosts > WR_MAX_LIST * 64) {
    fprintf(stderr, "weftrun: %d hosts; weftrun takes 1 to %d\n", j->nhosts, WR_MAX_LIST * 64);
    return WR_EXIT_HOSTS;
  }
  return 0;
}

/* Remote hosts without a topology file are probed (once, all together) when
 * their slots are not given or a report needs their placement. */
static int
probe_remote(wr_job *j, const wr_opts *o)
{
  if (o->gpus_per_node >= 0 || getenv("WEFT_NO_PROBE"))
    return 0;
  const char **names = calloc((size_t)j->nhosts, sizeof(*names));
  int *which = calloc((size_t)j->nhosts, sizeof(*which));
  char **paths = calloc((size_t)j->nhosts, sizeof(*paths));
  int n = 0, rc = WR_EXIT_ENGINE;
  if (!names || !which || !paths || !(j->probed = calloc((size_t)j->nhosts, sizeof(char *))))
    goto out;
  for (int h = 0; h < j->nhosts; h++) {
    const weftx_host *host = weftx_hostlist_host(j->hl, h);
    if (j->host_file[h] || weftx_hostlist_origin(j->hl) == WEFTX_HOSTS_LOCAL ||
        is_local_name(host->name))
      continue;
    if (host->slots_given && !o->dry_run && !o->report_bindings && !j->gce_here)
      continue;
    which[n] = h;
    names[n++] = host->name;
  }
  wr_gce *gce = n ? calloc((size_t)n, sizeof(*gce)) : NULL;
  rc = !n ? 0 : gce ? wr_probe(o, names, n, paths, gce) : WR_EXIT_ENGINE;
  for (int i = 0; !rc && i < n; i++) {
    j->probed[which[i]] = paths[i];
    j->gce[which[i]] = gce[i];
  }
  free(gce);
out:
  free(names);
  free(which);
  free(paths);
  return rc;
}

/* Per host: the topology file named for it, the default one, or none. */
static int
assign_topologies(wr_job *j, const wr_opts *o)
{
  for (int k = 0; k < o->nhost_topology; k++) {
    const char *kv = o->host_topology[k].key;
    size_t n = (size_t)(o->host_topology[k].value - 1 - kv);
    char host[WEFTX_HOSTNAME_MAX + 1];
    if (n > WEFTX_HOSTNAME_MAX) {
      fprintf(stderr, "weftrun: --topology '%s': host name too long\n", kv);
      return WR_EXIT_USAGE;
    }
    memcpy(host, kv, n);
    host[n] = '\0';
    int h = weftx_hostlist_find(j->hl, host);
    if (h < 0) {
      fprintf(stderr, "weftrun: --topology '%s': host '%s' is not one of the job's hosts "
              "(they come from %s); fix the name or add the host\n", kv, host,
              weftx_hosts_origin_name(weftx_hostlist_origin(j->hl)));
      return WR_EXIT_NOHOST;
    }
    free(j->host_file[h]);
    if (!(j->host_file[h] = strdup(o->host_topology[k].value)))
      return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < j->nhosts; h++)
    if (!j->host_file[h] && o->topology && !(j->host_file[h] = strdup(o->topology)))
      return WR_EXIT_ENGINE;
  int rc = probe_remote(j, o);
  if (rc)
    return rc;
  for (int h = 0; h < j->nhosts; h++) {
    weftx_topo *t;
    rc = topo_get(j, j->host_file[h] ? j->host_file[h] : j->probed[h], &t);
    if (rc)
      return rc;
    j->hosts[h].topo = t;
    j->hosts[h].topology = j->host_file[h] ? base_name(j->host_file[h]) : NULL;
    j->hosts[h].name = weftx_hostlist_host(j->hl, h)->name;
  }
  return 0;
}

static void
warn(void *arg, const char *msg)
{
  (void)arg;
  fprintf(stderr, "weftrun: warning: %s\n", msg);
}

/* GCE facts of every host (from the probe): one machine type for all, and hosts
 * ordered by physical_host (cluster, rack, host) when every host has one, so that
 * neighbouring ranks share racks; the hosts' arrays are permuted before any rank
 * is laid out. */
static int
gce_hosts(wr_job *j)
{
  int n = j->nhosts, rc = 0;
  const char **names = calloc((size_t)n, sizeof(*names));
  const char **types = calloc((size_t)n, sizeof(*types));
  const char **phys = calloc((size_t)n, sizeof(*phys));
  int *order = calloc((size_t)n, sizeof(*order));
  weftx_plan_host *hosts = calloc((size_t)n, sizeof(*hosts));
  char **file = calloc((size_t)n, sizeof(*file)), **probed = calloc((size_t)n, sizeof(*probed));
  wr_gce *gce = calloc((size_t)n, sizeof(*gce));
  if (!names || !types || !phys || !order || !hosts || !file || !probed || !gce ||
      !(j->hl_of = calloc((size_t)n, sizeof(int)))) {
    rc = WR_EXIT_ENGINE;
    goto out;
  }
  for (int h = 0; h < n; h++) {
    names[h] = j->hosts[h].name;
    types[h] = j->gce[h].machine_type;
    phys[h] = j->gce[h].physical_host;
  }
  weftx_gcp_check_mixed(names, types, n, warn, NULL);
  if (n < 2 || weftx_gcp_order_hosts(phys, n, order) != 0) {
    free(j->hl_of);
    j->hl_of = NULL;
    goto out;
  }
  for (int h = 0; h < n; h++) {
    hosts[h] = j->hosts[order[h]];
    file[h] = j->host_file[order[h]];
    probed[h] = j->probed ? j->probed[order[h]] : NULL;
    gce[h] = j->gce[order[h]];
    j->hl_of[h] = order[h];
  }
  memcpy(j->hosts, hosts, (size_t)n * sizeof(*hosts));
  memcpy(j->host_file, file, (size_t)n * sizeof(*file));
  if (j->probed)
    memcpy(j->probed, probed, (size_t)n * sizeof(*probed));
  memcpy(j->gce, gce, (size_t)n * sizeof(*gce));
  j->ordered = 1;
out:
  free(names);
  free(types);
  free(phys);
  free(order);
  free(hosts);
  free(file);
  free(probed);
  free(gce);
  return rc;
}

static int
gpus_of(const wr_job *j, const wr_opts *o, int h)
{
  if (o->gpus_per_node >= 0 && !j->host_file[h])
    return (int)o->gpus_per_node;
  return weftx_topo_ngpus(j->hosts[h].topo);
}

static int
plan_counts(wr_job *j, const wr_opts *o)
{
  long total = 0;
  int gpu_map = j->pol.map_by == WEFTX_MAP_GPU || j->pol.map_by == WEFTX_MAP_AUTO;
  if (!(j->cap = calloc((size_t)j->nhosts, sizeof(int))))
    return WR_EXIT_ENGINE;
  for (int h = 0; h < j->nhosts; h++) {
    const weftx_host *host = weftx_hostlist_host(j->hl, hl_index(j, h));
    int slots = host->slots;
    j->cap[h] = gpu_map && gpus_of(j, o, h) > 0 && o->gpus_per_node >= 0 && !j->host_file[h] ?
                (int)o->gpus_per_node : weftx_map_slots(j->hosts[h].topo, &j->pol);
    if (j->pol.map_by == WEFTX_MAP_GPU && gpus_of(j, o, h) == 0) {
      fprintf(stderr, "weftrun: --map-by gpu but host '%s' has no GPU (topology: %s); use "
              "--map-by core, or --gpus-per-node N if the probe is wrong\n", host->name,
              j->host_file[h] ? j->host_file[h] : "this machine");
      return WR_EXIT_NOGPU;
    }
    if (slots <= 0) {
      if (gpu_map && gpus_of(j, o, h) > 0 && o->gpus_per_node >= 0 && !j->host_file[h])
        slots = (int)o->gpus_per_node;
      else
        slots = weftx_map_slots(j->hosts[h].topo, &j->pol);
      if (slots < 1)
        slots = 1;
      weftx_hostlist_default_slots(j->hl, hl_index(j, h), slots);
    }
    j->hosts[h].slots = slots;
    total += slots;
  }
  long np = o->np;
  if (o->per_node > 0) {
    long want = o->per_node * j->nhosts;
    if (np < 0)
      np = want;
    if (np > want) {
      fprintf(stderr, "weftrun: -np %ld is more than -N %ld on %d hosts; raise -N or lower -np\n",
              np, o->per_node, j->nhosts);
      return WR_EXIT_PLACE;
    }
  }
  if (np < 0)
    np = total;
  if (np > 1000000)
    np = 1000000;
  j->np = (int)np;
  if (!(j->counts = calloc((size_t)j->nhosts, sizeof(int))))
    return WR_EXIT_ENGINE;
  if (o->per_node > 0) {
    for (int h = 0; h < j->nhosts; h++)
      if (o->per_node > j->hosts[h].slots && !j->pol.oversubscribe) {
        fprintf(stderr, "weftrun: -N %ld but host '%s' has %d slots; lower -N or add "
                "--oversubscribe\n", o->per_node, j->hosts[h].name, j->hosts[h].slots);
        return WR_EXIT_PLACE;
      }
    long left = np;
    for (int h = 0; h < j->nhosts; h++) {
      j->counts[h] = (int)(left < o->per_node ? left : o->per_node);
      left -= j->counts[h];
    }
    return 0;
  }
  if (np > total && !j->pol.oversubscribe) {
    char list[256] = "";
    size_t off = 0;
    for (int h = 0; h < j->nhosts && off < sizeof(list) - 1; h++)
      off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s:%d", h ? "," : "",
                              j->hosts[h].name, j->hosts[h].slots);
    fprintf(stderr, "weftrun: %ld ranks but the hosts have %ld slots (%s); lower -np, add hosts "
            "or slots (-H host:N), or add --oversubscribe\n", np, total, list);
    return WR_EXIT_PLACE;
  }
  long left = np;
  for (int h = 0; h < j->nhosts && left > 0; h++) {
    j->counts[h] = (int)(left < j->hosts[h].slots ? left : j->hosts[h].slots);
    left -= j->counts[h];
  }
  for (int h = 0; left > 0; h = (h + 1) % j->nhosts, left--)
    j->counts[h]++;
  return 0;
}

static int
place_ranks(wr_job *j)
{
  if (!(j->ranks = calloc((size_t)j->np, sizeof(*j->ranks))))
    return WR_EXIT_ENGINE;
  for (int r = 0; r < j->np; r++) {
    int local = 0;
    int h = weft_layout_host(j->counts, j->nhosts, j->by_node, r, &local);
    weftx_plan_rank *pr = &j->ranks[r];
    char why[512] = "";
    pr->rank = r;
    pr->host = h;
    pr->node_rank = h;
    pr->local_rank = local;
    /* Slots the user gave (-H host:N, slots=N) may exceed what the host has, as
     * mpirun allows: the ranks there then share (oversubscribe) */
    weftx_policy pol = j->pol;
    if (j->counts[h] > j->cap[h]) {
      pol.oversubscribe = 1;
      j->oversub = 1;
    }
    int rc = weftx_map_rank(j->hosts[h].topo, &pol, local, j->counts[h], &pr->place, why,
                           sizeof(why));
    if (rc) {
      memset(&pr->place, 0, sizeof(pr->place));
      fprintf(stderr, "weftrun: rank %d on %s (local rank %d of %d): %s\n", r,
              j->hosts[h].name, local, j->counts[h], why[0] ? why : weft_strerror(rc));
      return rc == WEFT_ENOGPU ? WR_EXIT_NOGPU : rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_PLACE;
    }
  }
  return 0;
}

int
wr_job_add_env(wr_job *j, const char *key, const char *value)
{
  char **v = realloc(j->env, (size_t)(j->nenv + 1) * sizeof(*v));
  size_t n = strlen(key) + strlen(value) + 2;
  if (!v)
    return WR_EXIT_ENGINE;
  j->env = v;
  if (!(v[j->nenv] = malloc(n)))
    return WR_EXIT_ENGINE;
  snprintf(v[j->nenv++], n, "%s=%s", key, value);
  j->plan.env = (const char *const *)j->env;
  j->plan.nenv = j->nenv;
  return 0;
}

/* The -x variables with a value, as every rank will see them. */
static int
add_x_env(wr_job *j, const wr_opts *o)
{
  for (int i = 0; i < o->nxvars; i++) {
    const char *x = o->xvars[i], *eq = strchr(x, '=');
    char key[256];
    size_t n = eq ? (size_t)(eq - x) : strlen(x);
    if (n >= sizeof(key))
      continue;
    memcpy(key, x, n);
    key[n] = '\0';
    const char *v = eq ? eq + 1 : getenv(key);
    if (v && wr_job_add_env(j, key, v))
      return WR_EXIT_ENGINE;
  }
  return 0;
}

int
wr_job_build(const wr_opts *o, wr_job **out)
{
  wr_job *j = calloc(1, sizeof(*j));
  char why[512] = "";
  int rc;
  *out = NULL;
  if (!j)
    return WR_EXIT_ENGINE;
  *out = j;
  if ((rc = weftx_policy_parse(&j->pol, o->map_by, o->bind_to, why, sizeof(why)))) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return WR_EXIT_USAGE;
  }
  if (o->oversubscribe)
    j->pol.oversubscribe = 1;
  j->by_node = (o->rank_by && !strcmp(o->rank_by, "node")) || j->pol.map_by == WEFTX_MAP_NODE;
  if ((rc = gather_hosts(j, o)))
    return rc;
  j->hosts = calloc((size_t)j->nhosts, sizeof(*j->hosts));
  j->host_file = calloc((size_t)j->nhosts, sizeof(*j->host_file));
  if (!j->hosts || !j->host_file)
    return WR_EXIT_ENGINE;
  if ((rc = wr_gcp_prepare(o, j->nhosts, &j->pol, &j->gcp)))
    return rc;
  if (!(j->gce = calloc((size_t)j->nhosts, sizeof(*j->gce))))
    return WR_EXIT_ENGINE;
  if (j->nhosts > 1) {
    wr_gce here;
    j->gce_here = wr_gcp_local(j->gcp, &here);
    for (int h = 0; h < j->nhosts; h++)
      if (weftx_hostlist_origin(j->hl) == WEFTX_HOSTS_LOCAL ||
          is_local_name(weftx_hostlist_host(j->hl, h)->name))
        j->gce[h] = here;
  }
  if ((rc = assign_topologies(j, o)) || (rc = gce_hosts(j)) || (rc = plan_counts(j, o)) ||
      (rc = place_ranks(j)))
    return rc;
  j->plan.np = j->np;
  j->plan.nhosts = j->nhosts;
  j->plan.hosts = j->hosts;
  j->plan.ranks = j->ranks;
  if ((rc = add_x_env(j, o)))
    return rc;
  return wr_gcp_add_env(j->gcp, j);
}

void
wr_job_destroy(wr_job *j)
{
  if (!j)
    return;
  if (j->ranks)
    for (int r = 0; r < j->np; r++)
      weftx_place_clear(&j->ranks[r].place);
  free(j->ranks);
  for (int i = 0; i < j->nenv; i++)
    free(j->env[i]);
  free(j->env);
  for (int i = 0; i < j->ntopos; i++) {
    weftx_topo_destroy(j->topos[i].topo);
    free(j->topos[i].path);
  }
  if (j->host_file)
    for (int h = 0; h < j->nhosts; h++)
      free(j->host_file[h]);
  if (j->probed)
    for (int h = 0; h < j->nhosts; h++) {
      if (j->probed[h])
        unlink(j->probed[h]);
      free(j->probed[h]);
    }
  free(j->probed);
  free(j->host_file);
  free(j->hosts);
  free(j->counts);
  free(j->cap);
  free(j->gce);
  free(j->hl_of);
  weftx_hostlist_destroy(j->hl);
  wr_gcp_destroy(j->gcp);
  free(j);
}

const weftx_plan *
wr_job_plan(const wr_job *j)
{
  return &j->plan;
}

int wr_job_nhosts(const wr_job *j) { return j->nhosts; }
int wr_job_np(const wr_job *j) { return j->np; }
int wr_job_by_node(const wr_job *j) { return j->by_node; }
int wr_job_count(const wr_job *j, int h) { return j->counts[h]; }
int wr_job_slots(const wr_job *j, int h) { return j->hosts[h].slots; }
int wr_job_oversubscribed(const wr_job *j) { return j->oversub; }
int wr_job_ordered(const wr_job *j) { return j->ordered; }
const char *wr_job_host(const wr_job *j, int h) { return j->hosts[h].name; }
const char *wr_job_host_file(const wr_job *j, int h) { return j->host_file[h]; }
const weftx_topo *wr_job_topo(const wr_job *j, int h) { return j->hosts[h].topo; }
const weftx_policy *wr_job_policy(const wr_job *j) { return &j->pol; }
int wr_job_rank_host(const wr_job *j, int r) { return j->ranks[r].host; }
int wr_job_host_is_local(const wr_job *j, int h)
{
  return weftx_hostlist_origin(j->hl) == WEFTX_HOSTS_LOCAL || is_local_name(j->hosts[h].name);
}

int
wr_job_print(const wr_job *j, const wr_opts *o, FILE *out)
{
  if (o->json)
    return weftx_plan_write_json(out, &j->plan) ? WR_EXIT_ENGINE : 0;
  char pol[128] = "", line[512];
  weftx_policy_format(&j->pol, pol, sizeof(pol));
  fprintf(out, "# weftrun plan: %d ranks on %d host%s, map-by %s, rank-by %s\n", j->np,
          j->nhosts, j->nhosts == 1 ? "" : "s", pol, j->by_node ? "node" : "slot");
  if (j->ordered)
    fprintf(out, "# hosts ordered by physical_host (cluster/rack/host)\n");
  for (int h = 0; h < j->nhosts; h++)
    fprintf(out, "# host %s: %d of %d slots, %d GPUs, topology %s\n", j->hosts[h].name,
            j->counts[h], j->hosts[h].slots, weftx_topo_ngpus(j->hosts[h].topo),
            j->host_file[h] ? j->host_file[h] :
            j->probed && j->probed[h] ? "probed" :
            wr_job_host_is_local(j, h) ? "this machine" : "assumed like this machine");
  for (int h = 0; j->gce && h < j->nhosts; h++)
    if (j->gce[h].machine_type[0])
      fprintf(out, "# host %s: machine type %s, physical_host %s\n", j->hosts[h].name,
              j->gce[h].machine_type, j->gce[h].physical_host[0] ? j->gce[h].physical_host : "none");
  wr_gcp_print(j->gcp, out);
  for (int r = 0; r < j->np; r++) {
    const weftx_plan_rank *pr = &j->ranks[r];
    if (weftx_place_format(j->hosts[pr->host].topo, j->hosts[pr->host].name, r, &pr->place, line,
                          sizeof(line)) == 0)
      fprintf(out, "%s\n", line);
  }
  return 0;
}
