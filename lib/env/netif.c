/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The choice of the network interface for a job, as a pure function of the
 * interface list, the other hosts' addresses and the routes to them, so that
 * every rule is testable with fabricated interfaces. netprobe.c fills the
 * inputs from this machine.
 *
 * Rules: never lo, container or bridge interfaces (docker*, veth*, virbr*,
 * br-*, ...); the interface whose subnet holds the peers or that the kernel
 * routes them through wins (cloud VMs often have a /32 address, so routes
 * matter as much as subnets); ties go to the default route's interface.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const char *const excluded_prefixes[] = {"lo",      "docker", "veth", "virbr", "br-", "cni",
                                                "flannel", "cali",   "tun",  "tap",   NULL};

int weftx_netif_excluded(const char *name)
{
  if (!name)
    return 1;
  for (int i = 0; excluded_prefixes[i]; i++)
    if (strncmp(name, excluded_prefixes[i], strlen(excluded_prefixes[i])) == 0)
      return 1;
  return 0;
}

int weftx_netaddr_parse(weftx_netaddr *a, const char *s)
{
  if (!a || !s)
    return WEFT_EPARSE;
  memset(a, 0, sizeof(*a));
  if (inet_pton(AF_INET, s, a->addr) == 1) {
    a->family = AF_INET;
    return 0;
  }
  if (inet_pton(AF_INET6, s, a->addr) == 1) {
    a->family = AF_INET6;
    return 0;
  }
  return WEFT_EPARSE;
}

int weftx_netaddr_format(int family, const unsigned char *addr, char *buf, size_t len)
{
  char text[INET6_ADDRSTRLEN];

  if (!inet_ntop(family, addr, text, sizeof(text)))
    return WEFT_EINVAL;
  return weft__snprintf(buf, len, "%s", text);
}

int weftx_netif_make(weftx_netif *nif, const char *name, const char *cidr, unsigned flags)
{
  char addr[INET6_ADDRSTRLEN + 1];
  const char *slash = cidr ? strchr(cidr, '/') : NULL;
  weftx_netaddr a;
  long plen;
  size_t len;

  if (!nif || !name || !slash)
    return WEFT_EPARSE;
  len = (size_t)(slash - cidr);
  if (len >= sizeof(addr) || weft__snprintf(nif->name, sizeof(nif->name), "%s", name))
    return WEFT_EPARSE;
  memcpy(addr, cidr, len);
  addr[len] = '\0';
  if (weftx_netaddr_parse(&a, addr))
    return WEFT_EPARSE;
  if (weftx_parse_long(slash + 1, 0, a.family == AF_INET ? 32 : 128, &plen))
    return WEFT_EPARSE;
  nif->family = a.family;
  memcpy(nif->addr, a.addr, sizeof(nif->addr));
  nif->prefixlen = (int)plen;
  nif->flags = flags;
  return 0;
}

int weftx_netif_contains(const weftx_netif *nif, const weftx_netaddr *a)
{
  int bits = nif->prefixlen, bytes = bits / 8, rest = bits % 8;

  if (nif->family != a->family)
    return 0;
  if (memcmp(nif->addr, a->addr, (size_t)bytes) != 0)
    return 0;
  if (rest) {
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    if ((nif->addr[bytes] & mask) != (a->addr[bytes] & mask))
      return 0;
  }
  return 1;
}

static int is_loopback_addr(const weftx_netaddr *a)
{
  static const unsigned char v6lo[16] = {[15] = 1};

  if (a->family == AF_INET)
    return a->addr[0] == 127;
  return memcmp(a->addr, v6lo, 16) == 0;
}

static int is_candidate(const weftx_netif *nif)
{
  return (nif->flags & IFF_UP) && !(nif->flags & IFF_LOOPBACK) && !weftx_netif_excluded(nif->name);
}

/* Is entry \p a better than entry \p b (either may be -1 for none)? */
static int better(const weftx_netif *ifs, const int *score, int a, int b, const char *default_if)
{
  int da, db;

  if (b < 0)
    return 1;
  if (score[a] != score[b])
    return score[a] > score[b];
  da = default_if && strcmp(ifs[a].name, default_if) == 0;
  db = default_if && strcmp(ifs[b].name, default_if) == 0;
  if (da != db)
    return da;
  if (ifs[a].family != ifs[b].family)
    return ifs[a].family == AF_INET;
  return 0;
}

static int no_interface(char *why, size_t whylen, int ntargets)
{
  if (why) {
    if (ntargets)
      weft__snprintf(why, whylen,
                     "no network interface reaches the other hosts (none holds "
                     "their subnet or routes to them); name one with NCCL_SOCKET_IFNAME and "
                     "--mca btl_tcp_if_include");
    else
      weft__snprintf(why, whylen, "no network interface is up, not even lo; check 'ip addr'");
  }
  return WEFT_ENOENT;
}

int weftx_netif_choose(const weftx_netif *ifs, int nifs, const weftx_netaddr *targets,
                       const char *const *routes, int ntargets, const char *default_if, int *index,
                       char *why, size_t whylen)
{
  int *score, best = -1, live = 0;

  if (!index || nifs < 0 || (nifs > 0 && !ifs) || (ntargets > 0 && !targets))
    return WEFT_EINVAL;
  score = calloc((size_t)nifs + 1, sizeof(*score));
  if (!score)
    return WEFT_ENOMEM;
  for (int k = 0; k < ntargets; k++) {
    if (is_loopback_addr(&targets[k]))
      continue;
    live++;
    for (int i = 0; i < nifs; i++)
      score[i] += weftx_netif_contains(&ifs[i], &targets[k]) +
                  (routes && routes[k] && strcmp(routes[k], ifs[i].name) == 0);
  }
  for (int i = 0; i < nifs; i++)
    if (is_candidate(&ifs[i]) && better(ifs, score, i, best, default_if))
      best = i;
  if (best >= 0 && live > 0 && score[best] == 0 &&
      !(default_if && strcmp(ifs[best].name, default_if) == 0))
    best = -1; /* nothing reaches the peers, and this is not even the default route */
  if (best < 0 && live == 0)
    for (int i = 0; i < nifs && best < 0; i++)
      if ((ifs[i].flags & IFF_UP) && ifs[i].family == AF_INET &&
          ((ifs[i].flags & IFF_LOOPBACK) || strcmp(ifs[i].name, "lo") == 0))
        best = i;
  free(score);
  if (best < 0)
    return no_interface(why, whylen, live);
  WEFT__LOG(ENV, "network: chose %s for %d peer address(es)", ifs[best].name, live);
  *index = best;
  return 0;
}
