/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network stage: the interface the hosts with ranks reach each other on
 * (for Open MPI's TCP traffic and NCCL_SOCKET_IFNAME), MASTER_ADDR on it and
 * a MASTER_PORT, all chosen once by weftrun from the plan and handed to every
 * rank.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"

/* WR_EXIT_*, with the reason in why. */
int wr_net_try(const wr_plan *p, wr_net *m, char *why, size_t len)
{
  const char **hosts = calloc((size_t)p->nhosts, sizeof(*hosts));
  const wr_host *first = NULL;
  int n = 0, rc = 0;
  memset(m, 0, sizeof(*m));
  why[0] = '\0';
  if (!hosts) {
    snprintf(why, len, "out of memory");
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < p->nhosts; h++)
    if (p->hosts[h].count > 0) {
      hosts[n++] = p->hosts[h].host->name;
      if (!first)
        first = p->hosts[h].host;
    }
  int single_local = n == 1 && first->local;
  if (!single_local && (rc = weftx_netif_pick(hosts, n, m->ifname, sizeof(m->ifname), m->ifaddr,
                                              sizeof(m->ifaddr), why, len))) {
    if (!why[0])
      snprintf(why, len, "%s", weft_strerror(rc));
    rc = rc == WEFT_ENAME ? WR_EXIT_NOHOST : WR_EXIT_ENGINE;
    goto out;
  }
  if ((rc = weftx_master_addr(hosts[0], single_local ? NULL : m->ifaddr, m->addr, sizeof(m->addr),
                              why, len))) {
    if (!why[0])
      snprintf(why, len, "%s", weft_strerror(rc));
    rc = WR_EXIT_NOHOST;
    goto out;
  }
  if (first->local) {
    if ((rc = weftx_master_port(0, &m->port, why, len))) {
      if (!why[0])
        snprintf(why, len, "%s", weft_strerror(rc));
      rc = WR_EXIT_ENGINE;
    }
  } else {
    m->port = weftx_port_candidate((unsigned long)getpid(), 0);
  }
out:
  free(hosts);
  return rc;
}

int wr_net_choose(const wr_plan *p, wr_net *m)
{
  char why[512];
  int rc = wr_net_try(p, m, why, sizeof(why));
  if (rc)
    fprintf(stderr, "weftrun: %s\n", why);
  return rc;
}
