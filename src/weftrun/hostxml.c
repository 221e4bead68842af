/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launching host's topology for its own ranks: weftrun has already probed
 * this machine to plan the job, so it writes that topology once as hwloc XML
 * into a private directory ($TMPDIR/weft-PID-XXXXXX, mode 0700) and the
 * weft-rank instances on this host load it (as this system, so binding still
 * happens) instead of each probing the hardware again. weftrun removes the
 * directory when the job ends, however it ends; only a SIGKILL leaves it, and
 * its name says which weftrun it belonged to.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weftrun.h"

#define XML_NAME "topology.xml"

/* The live topology of a local host that has ranks and no --topology file, or NULL. */
static const weftx_topo *
local_live_topo(const wr_job *j)
{
  for (int h = 0; h < wr_job_nhosts(j); h++)
    if (wr_job_count(j, h) > 0 && wr_job_host_is_local(j, h) && !wr_job_host_file(j, h) &&
        weftx_topo_is_live(wr_job_topo(j, h)))
      return wr_job_topo(j, h);
  return NULL;
}

void
wr_hostxml_create(const wr_job *j, char *path, size_t len)
{
  path[0] = '\0';
  const weftx_topo *t = local_live_topo(j);
  if (!t)
    return;
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp)
    tmp = "/tmp";
  char dir[4096];
  if ((size_t)snprintf(dir, sizeof(dir), "%s/weft-%ld-XXXXXX", tmp, (long)getpid()) >= sizeof(dir) ||
      !mkdtemp(dir))
    return; /* no place for it: every rank probes its host itself, as without it */
  if ((size_t)snprintf(path, len, "%s/" XML_NAME, dir) >= len ||
      hwloc_topology_export_xml(weftx_topo_hwloc(t), path, 0) != 0) {
    unlink(path);
    rmdir(dir);
    path[0] = '\0';
  }
}

void
wr_hostxml_remove(char *path)
{
  if (!path[0])
    return;
  unlink(path);
  char *slash = strrchr(path, '/');
  if (slash) {
    *slash = '\0';
    rmdir(path);
  }
  path[0] = '\0';
}
