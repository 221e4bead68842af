/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hosts stage: the job's hosts as Open MPI 4.1 takes them (the ras and
 * rmaps bases): the -H hosts of every program, else their hostfiles, else a
 * Slurm allocation, else Open MPI's default hostfile (--default-hostfile, the
 * MCA parameter orte_default_hostfile as weft-vcluster sets it, <sysconfdir>'s
 * file), else this host; with what the user said of each (its slots by Open
 * MPI's rules and by weft's, its --topology file), and for each program the
 * hosts it may use. Whether a host is mpirun's own is decided by name here and
 * by address in facts.c; whether weftrun runs in a Slurm job (SLURM_JOB_ID
 * beside SLURM_JOB_NODELIST) here too.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hosts.h"

static int is_local_name(const char *name)
{
  char me[256];
  if (!strcasecmp(name, "localhost") || !strcmp(name, "127.0.0.1"))
    return 1;
  if (gethostname(me, sizeof(me)) == 0) {
    me[sizeof(me) - 1] = '\0';
    if (!strcasecmp(name, me))
      return 1;
    /* Open MPI knows itself by its first label too */
    char *dot = strchr(me, '.');
    if (dot && (size_t)(dot - me) == strlen(name) && !strncasecmp(name, me, (size_t)(dot - me)))
      return 1;
  }
  return 0;
}

/* One of this machine's addresses (or a loopback one), written as a number. */
static int is_local_address(const char *name)
{
  weftx_netaddr a;
  weftx_netif *ifs = NULL;
  int n = 0, local = 0;
  if (weftx_netaddr_parse(&a, name))
    return 0;
  if (weftx_netif_list(&ifs, &n) == 0 || n == 0)
    local = weftx_netaddr_is_local(ifs, n, &a);
  free(ifs);
  return local;
}

static int fail_hosts(int rc, const char *why)
{
  fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
  return rc == WEFT_ENOENT || rc == WEFT_EIO ? WR_EXIT_NOINPUT : WR_EXIT_HOSTS;
}

/* The default hostfile: whether to read it (1), with its path. A file Open MPI only
 * looks for by default may be missing; one named must be there. */
static int default_hostfile(const wr_opts *o, const wr_inventory *inv, const char **path)
{
  const char *d =
    o->default_hostfile ? o->default_hostfile : inv->mca.m.v[WEFTX_OMPI_MCA_DEFAULT_HOSTFILE];
  *path = d;
  if (!d || !*d || !strcmp(d, "none"))
    return 0;
  if (!o->default_hostfile && inv->mca.default_hostfile_builtin && access(d, F_OK) != 0)
    return 0;
  return 1;
}

static int gather(const wr_opts *o, wr_inventory *inv)
{
  weftx_hosts_input in;
  char why[1024] = ""; /* -H's message quotes 400 bytes of it before what is wrong */
  int keep_fqdn = 0, rc;
  const char *dflt;

  memset(&in, 0, sizeof(in));
  {
    const char *k = inv->mca.m.v[WEFTX_OMPI_MCA_KEEP_FQDN];
    keep_fqdn = k && (!strcmp(k, "1") || !strcasecmp(k, "true") || !strcasecmp(k, "yes"));
  }
  in.keep_fqdn = inv->keep_fqdn = keep_fqdn;
  /* -H of any program, else a hostfile of any program: the first program's first, then
   * the hosts the others add */
  for (int a = 0; a < o->napps && !in.nhost_args; a++)
    if (o->apps[a].nhost_args) {
      in.host_args = o->apps[a].host_args;
      in.nhost_args = o->apps[a].nhost_args;
    }
  for (int a = 0; a < o->napps && !in.nhost_args && !in.hostfile; a++)
    in.hostfile = o->apps[a].hostfile;
  if (!in.nhost_args && !in.hostfile) {
    in.slurm_nodelist = getenv("SLURM_JOB_NODELIST");
    in.slurm_tasks_per_node = getenv("SLURM_TASKS_PER_NODE");
  }
  /* an allocation comes first, as in Open MPI's ras base (ras_base_allocate.c) */
  if (!in.nhost_args && !in.hostfile && !in.slurm_nodelist && default_hostfile(o, inv, &dflt)) {
    /* Open MPI's default hostfile: its hosts when it names any, else on */
    weftx_hostlist *probe = NULL;
    if ((rc = weftx_hostlist_create(&probe)))
      return fail_hosts(rc, "out of memory");
    rc = weftx_hostfile_load(probe, dflt, why, sizeof(why));
    weftx_hostlist_destroy(probe);
    if (rc == 0)
      in.hostfile = inv->default_hostfile = dflt;
    else if (rc != WEFT_EPARSE || !strstr(why, "no host in the file"))
      return fail_hosts(rc, why);
    why[0] = '\0';
  }
  rc = weftx_hosts_gather(&in, &inv->hl, why, sizeof(why));
  if (rc)
    return fail_hosts(rc, why);
  /* the hosts the other programs add, after the first program's */
  for (int a = 0; a < o->napps && !rc; a++) {
    const wr_app *ap = &o->apps[a];
    if (in.nhost_args && ap->host_args != in.host_args)
      for (int k = 0; k < ap->nhost_args && !rc; k++)
        rc = weftx_hosts_parse_arg_ompi(inv->hl, ap->host_args[k], keep_fqdn, why, sizeof(why));
    else if (!in.nhost_args && in.hostfile && ap->hostfile && ap->hostfile != in.hostfile)
      rc = weftx_hostfile_load(inv->hl, ap->hostfile, why, sizeof(why));
  }
  if (rc)
    return fail_hosts(rc, why);
  inv->origin = weftx_hostlist_origin(inv->hl);
  inv->nhosts = weftx_hostlist_count(inv->hl);
  /* inside an allocation whatever named the hosts (srun checks they are in it) */
  if (getenv("SLURM_JOB_NODELIST") && (inv->slurm_job = getenv("SLURM_JOB_ID")) && !*inv->slurm_job)
    inv->slurm_job = NULL;
  if (inv->origin == WEFTX_HOSTS_SLURM)
    weft_log(WEFT_LOG_HOSTS,
             "%d host%s from the Slurm allocation SLURM_JOB_ID=%s: "
             "SLURM_JOB_NODELIST=%s SLURM_TASKS_PER_NODE=%s",
             inv->nhosts, inv->nhosts == 1 ? "" : "s", inv->slurm_job ? inv->slurm_job : "(unset)",
             in.slurm_nodelist, in.slurm_tasks_per_node ? in.slurm_tasks_per_node : "(unset)");
  else
    weft_log(WEFT_LOG_HOSTS, "%d host%s from %s%s%s", inv->nhosts, inv->nhosts == 1 ? "" : "s",
             weftx_hosts_origin_name(inv->origin), in.hostfile ? " " : "",
             in.hostfile ? in.hostfile : "");
  if (inv->nhosts < 1 || inv->nhosts > WR_MAX_HOSTS) {
    fprintf(stderr, "weftrun: %d hosts; weftrun takes 1 to %d\n", inv->nhosts, WR_MAX_HOSTS);
    return WR_EXIT_HOSTS;
  }
  return 0;
}

/* The hosts each program may use: its own -H or hostfile, else every host. */
static int app_hosts(const wr_opts *o, wr_inventory *inv)
{
  char why[1024];

  for (int a = 0; a < o->napps; a++) {
    const wr_app *ap = &o->apps[a];
    weftx_hostlist *own = NULL;
    int rc = 0;
    if (o->napps == 1 || (!ap->nhost_args && !ap->hostfile))
      continue;
    if ((rc = weftx_hostlist_create(&own)))
      return fail_hosts(rc, "out of memory");
    for (int k = 0; k < ap->nhost_args && !rc; k++)
      rc = weftx_hosts_parse_arg_ompi(own, ap->host_args[k], inv->keep_fqdn, why, sizeof(why));
    if (!rc && !ap->nhost_args)
      rc = weftx_hostfile_load(own, ap->hostfile, why, sizeof(why));
    if (rc) {
      weftx_hostlist_destroy(own);
      return fail_hosts(rc, why);
    }
    if (!(inv->app_hosts[a] = calloc((size_t)inv->nhosts, sizeof(int)))) {
      weftx_hostlist_destroy(own);
      return fail_hosts(WEFT_ENOMEM, "out of memory");
    }
    /* in the pool's order, as Open MPI lists a program's target hosts */
    for (int h = 0; h < inv->nhosts; h++)
      if (weftx_hostlist_find(own, weftx_hostlist_host(inv->hl, h)->name) >= 0)
        inv->app_hosts[a][inv->app_nhosts[a]++] = h;
    weftx_hostlist_destroy(own);
  }
  return 0;
}

/* --topology HOST=FILE for named hosts, --topology FILE for the others. */
static int assign_files(const wr_opts *o, wr_inventory *inv)
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
    int h = weftx_hostlist_find(inv->hl, host);
    if (h < 0) {
      /* Open MPI's name of it: the first label */
      char *dot = strchr(host, '.');
      if (dot) {
        *dot = '\0';
        h = weftx_hostlist_find(inv->hl, host);
        *dot = '.';
      }
    }
    /* this host by any of its names (localhost, its name, its addresses) for the job's
     * host that is this one, however the job names it */
    if (h < 0 && (is_local_name(host) || is_local_address(host)))
      for (int i = 0; i < inv->nhosts && h < 0; i++)
        if (inv->hosts[i].local)
          h = i;
    if (h < 0) {
      fprintf(stderr,
              "weftrun: --topology '%s': host '%s' is not one of the job's hosts "
              "(they come from %s); fix the name or add the host\n",
              kv, host, weftx_hosts_origin_name(inv->origin));
      return WR_EXIT_NOHOST;
    }
    inv->hosts[h].file = o->host_topology[k].value;
  }
  for (int h = 0; h < inv->nhosts; h++)
    if (!inv->hosts[h].file)
      inv->hosts[h].file = o->topology;
  return 0;
}

int wr_hosts_gather(const wr_opts *o, wr_inventory *inv)
{
  int rc;
  memset(inv, 0, sizeof(*inv));
  if ((rc = wr_mca_gather(o, &inv->mca)) || (rc = gather(o, inv)))
    return rc;
  if (!(inv->hosts = calloc((size_t)inv->nhosts, sizeof(*inv->hosts)))) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < inv->nhosts; h++) {
    const weftx_host *x = weftx_hostlist_host(inv->hl, h);
    wr_host *w = &inv->hosts[h];
    w->name = x->name;
    w->typed = x->typed;
    w->index = h;
    w->slots = x->slots;
    w->ompi_slots = x->ompi_slots;
    w->ompi_given = x->ompi_given;
    w->slots_max = x->max_slots;
    w->local = inv->origin == WEFTX_HOSTS_LOCAL || is_local_name(x->name) ||
               (x->typed && is_local_name(x->typed));
  }
  if ((rc = app_hosts(o, inv)))
    return rc;
  return assign_files(o, inv);
}

/* Open MPI shortens "vm-a.c.proj.internal" to "vm-a" in what it says (a lost daemon's
 * node, a restart's lost host); two full names in different domains are not one. */
int wr_same_host(const char *a, const char *b)
{
  if (!strcasecmp(a, b))
    return 1;
  size_t na = strcspn(a, "."), nb = strcspn(b, ".");
  int numeric = a[0] >= '0' && a[0] <= '9';
  if (numeric || (a[na] && b[nb]) || (!a[na] && !b[nb]))
    return 0;
  return na == nb && !strncasecmp(a, b, na);
}
