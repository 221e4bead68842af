/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hosts stage: the job's hosts as the user gave them, in mpirun's order
 * of precedence (-H, --hostfile, Open MPI's default hostfile, a Slurm
 * allocation, this host), with what the user said of each: its slots, and its
 * --topology file. Whether a host is weftrun's own is decided here, by name,
 * and whether weftrun runs in a Slurm job (SLURM_JOB_ID beside
 * SLURM_JOB_NODELIST).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "weftrun.h"

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
gather(const wr_opts *o, wr_inventory *inv)
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
      in.hostfile = inv->default_hostfile = d;
  }
  int rc = weftx_hosts_gather(&in, &inv->hl, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOENT || rc == WEFT_EIO ? WR_EXIT_NOINPUT : WR_EXIT_HOSTS;
  }
  inv->origin = weftx_hostlist_origin(inv->hl);
  inv->nhosts = weftx_hostlist_count(inv->hl);
  if (in.slurm_nodelist && (inv->slurm_job = getenv("SLURM_JOB_ID")) && !*inv->slurm_job)
    inv->slurm_job = NULL;
  if (inv->origin == WEFTX_HOSTS_SLURM)
    weft_log(WEFT_LOG_HOSTS, "%d host%s from the Slurm allocation SLURM_JOB_ID=%s: "
             "SLURM_JOB_NODELIST=%s SLURM_TASKS_PER_NODE=%s", inv->nhosts, inv->nhosts == 1 ? "" : "s",
             inv->slurm_job ? inv->slurm_job : "(unset)", in.slurm_nodelist,
             in.slurm_tasks_per_node ? in.slurm_tasks_per_node : "(unset)");
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

/* --topology HOST=FILE for named hosts, --topology FILE for the others. */
static int
assign_files(const wr_opts *o, wr_inventory *inv)
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
      fprintf(stderr, "weftrun: --topology '%s': host '%s' is not one of the job's hosts "
              "(they come from %s); fix the name or add the host\n", kv, host,
              weftx_hosts_origin_name(inv->origin));
      return WR_EXIT_NOHOST;
    }
    inv->hosts[h].file = o->host_topology[k].value;
  }
  for (int h = 0; h < inv->nhosts; h++)
    if (!inv->hosts[h].file)
      inv->hosts[h].file = o->topology;
  return 0;
}

int
wr_hosts_gather(const wr_opts *o, wr_inventory *inv)
{
  int rc;
  memset(inv, 0, sizeof(*inv));
  if ((rc = gather(o, inv)))
    return rc;
  if (!(inv->hosts = calloc((size_t)inv->nhosts, sizeof(*inv->hosts)))) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < inv->nhosts; h++) {
    const weftx_host *x = weftx_hostlist_host(inv->hl, h);
    wr_host *w = &inv->hosts[h];
    w->name = x->name;
    w->index = h;
    w->slots = x->slots;
    w->local = inv->origin == WEFTX_HOSTS_LOCAL || is_local_name(x->name);
  }
  return assign_files(o, inv);
}
