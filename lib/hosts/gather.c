/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a job's hosts come from, in Open MPI 4.1's order: -H, else --hostfile,
 * else the Slurm allocation, else the local host alone. With both -H and a
 * hostfile, mpirun 4.1 takes the -H hosts with their -H counts and does not
 * read the hostfile; so does this.
 */
#include "hosts-private.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

static int from_args(const weftx_hosts_input *in, weftx_hostlist *hl, char *why, size_t whylen)
{
  for (int i = 0; i < in->nhost_args; i++) {
    int rc = weftx_hosts_parse_arg_ompi(hl, in->host_args[i], in->keep_fqdn, why, whylen);
    if (rc)
      return rc;
  }
  return 0;
}

static int from_local(const weftx_hosts_input *in, weftx_hostlist *hl, char *why, size_t whylen)
{
  char name[HOST_NAME_MAX + 1];
  const char *local = in->local_host;

  if (!local) {
    if (gethostname(name, sizeof(name)) != 0)
      weft__snprintf(name, sizeof(name), "localhost");
    name[sizeof(name) - 1] = '\0';
    local = name;
  }
  return weftx_hostlist_add(hl, local, 0, 0, "local host", why, whylen);
}

int weftx_hosts_gather(const weftx_hosts_input *in, weftx_hostlist **out, char *why, size_t whylen)
{
  weftx_hostlist *hl;
  weftx_hosts_origin origin;
  int rc;

  if (!in || !out)
    return WEFT_EINVAL;
  *out = NULL;
  rc = weftx_hostlist_create(&hl);
  if (rc)
    return rc;
  weft__hostlist_set_fqdn(hl, in->keep_fqdn);
  if (in->nhost_args > 0) {
    origin = WEFTX_HOSTS_CMDLINE;
    rc = from_args(in, hl, why, whylen);
  } else if (in->hostfile) {
    origin = WEFTX_HOSTS_HOSTFILE;
    rc = weftx_hostfile_load(hl, in->hostfile, why, whylen);
  } else if (in->slurm_nodelist && *in->slurm_nodelist) {
    origin = WEFTX_HOSTS_SLURM;
    rc = weftx_hosts_parse_slurm(hl, in->slurm_nodelist, in->slurm_tasks_per_node, why, whylen);
  } else {
    origin = WEFTX_HOSTS_LOCAL;
    rc = from_local(in, hl, why, whylen);
  }
  if (rc) {
    weftx_hostlist_destroy(hl);
    return rc;
  }
  weft__hostlist_set_origin(hl, origin);
  *out = hl;
  return 0;
}
