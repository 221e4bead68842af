/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a job's hosts come from, in DESIGN.md's order: -H, else --hostfile,
 * else the Slurm allocation, else the local host alone. With both -H and a
 * hostfile, -H picks hosts out of the hostfile, as mpirun does.
 */
#include "hosts-private.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

static int from_args(const weftx_hosts_input *in, weftx_hostlist *hl, char *why, size_t whylen)
{
  for (int i = 0; i < in->nhost_args; i++) {
    int rc = weftx_hosts_parse_arg(hl, in->host_args[i], why, whylen);
    if (rc)
      return rc;
  }
  return 0;
}

/* Every -H host must be in the hostfile; it takes the hostfile's counts unless -H gave one. */
static int restrict_to_file(const weftx_hosts_input *in, weftx_hostlist *hl, char *why,
                            size_t whylen)
{
  weftx_hostlist *file;
  int rc = weftx_hostlist_create(&file);

  if (rc)
    return rc;
  rc = weftx_hostfile_load(file, in->hostfile, why, whylen);
  for (int i = 0; rc == 0 && i < weftx_hostlist_count(hl); i++) {
    const weftx_host *h = weftx_hostlist_host(hl, i);
    int j = weftx_hostlist_find(file, h->name);
    if (j < 0) {
      if (why)
        weft__snprintf(why, whylen, "host '%s' given with -H is not in hostfile %s; add it "
                       "there or drop one of -H and --hostfile", h->name, in->hostfile);
      rc = WEFT_ENAME;
      break;
    }
    weft__hostlist_inherit(hl, i, weftx_hostlist_host(file, j));
  }
  weftx_hostlist_destroy(file);
  return rc;
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
  if (in->nhost_args > 0) {
    origin = WEFTX_HOSTS_CMDLINE;
    rc = from_args(in, hl, why, whylen);
    if (rc == 0 && in->hostfile)
      rc = restrict_to_file(in, hl, why, whylen);
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
