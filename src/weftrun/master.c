/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job's network: the interface the hosts reach each other on (for Open
 * MPI's TCP traffic and NCCL_SOCKET_IFNAME), MASTER_ADDR on it and a
 * MASTER_PORT, all chosen once by weftrun and handed to every rank.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weftrun.h"

int
wr_master_choose(const wr_job *j, wr_master *m)
{
  char why[512] = "";
  int nh = wr_job_nhosts(j);
  const char *hosts[WR_MAX_LIST];
  int n = 0;
  memset(m, 0, sizeof(*m));
  for (int h = 0; h < nh && n < WR_MAX_LIST; h++)
    if (wr_job_count(j, h) > 0)
      hosts[n++] = wr_job_host(j, h);
  int single_local = n == 1 && wr_job_host_is_local(j, 0);
  if (!single_local) {
    int rc = weftx_netif_pick(hosts, n, m->ifname, sizeof(m->ifname), m->ifaddr,
                             sizeof(m->ifaddr), why, sizeof(why));
    if (rc) {
      fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
      return rc == WEFT_ENAME ? WR_EXIT_NOHOST : WR_EXIT_ENGINE;
    }
  }
  int rc = weftx_master_addr(hosts[0], single_local ? NULL : m->ifaddr, m->addr, sizeof(m->addr),
                            why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
    return WR_EXIT_NOHOST;
  }
  if (wr_job_host_is_local(j, 0)) {
    if ((rc = weftx_master_port(0, &m->port, why, sizeof(why)))) {
      fprintf(stderr, "weftrun: %s\n", why[0] ? why : weft_strerror(rc));
      return WR_EXIT_ENGINE;
    }
  } else {
    m->port = weftx_port_candidate((unsigned long)getpid(), 0);
  }
  return 0;
}
