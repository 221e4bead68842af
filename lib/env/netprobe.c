/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The thin probing half of the interface choice: this machine's interfaces
 * (getifaddrs), the default route (/proc/net/route), name resolution
 * (getaddrinfo, which answers from /etc/hosts or the local resolver), and
 * the interface the kernel would send a packet to a peer from (a connected
 * UDP socket's local address: connect() on UDP sends nothing).
 */
#include "weft_private.h"

#include <weftx/env.h>
#include <weftx/hosts.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static int prefix_of(const struct sockaddr *mask)
{
  const unsigned char *b;
  int n = 0, len;

  if (!mask)
    return 0;
  if (mask->sa_family == AF_INET) {
    b = (const unsigned char *)&((const struct sockaddr_in *)(const void *)mask)->sin_addr;
    len = 4;
  } else {
    b = (const unsigned char *)&((const struct sockaddr_in6 *)(const void *)mask)->sin6_addr;
    len = 16;
  }
  for (int i = 0; i < len; i++)
    for (int bit = 7; bit >= 0 && (b[i] >> bit & 1); bit--)
      n++;
  return n;
}

static void copy_addr(const struct sockaddr *sa, int *family, unsigned char *addr)
{
  memset(addr, 0, 16);
  *family = sa->sa_family;
  if (sa->sa_family == AF_INET)
    memcpy(addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
  else
    memcpy(addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

int weftx_netif_list(weftx_netif **ifs, int *n)
{
  struct ifaddrs *all, *ia;
  weftx_netif *v;
  int count = 0;

  if (!ifs || !n)
    return WEFT_EINVAL;
  if (getifaddrs(&all) != 0)
    return WEFT_ESYS;
  for (ia = all; ia; ia = ia->ifa_next)
    count +=
      ia->ifa_addr && (ia->ifa_addr->sa_family == AF_INET || ia->ifa_addr->sa_family == AF_INET6);
  v = calloc((size_t)count + 1, sizeof(*v));
  if (!v) {
    freeifaddrs(all);
    return WEFT_ENOMEM;
  }
  count = 0;
  for (ia = all; ia; ia = ia->ifa_next) {
    weftx_netif *nif = &v[count];
    if (!ia->ifa_addr ||
        (ia->ifa_addr->sa_family != AF_INET && ia->ifa_addr->sa_family != AF_INET6))
      continue;
    weft__snprintf(nif->name, sizeof(nif->name), "%s", ia->ifa_name);
    copy_addr(ia->ifa_addr, &nif->family, nif->addr);
    nif->prefixlen = prefix_of(ia->ifa_netmask);
    nif->flags = ia->ifa_flags;
    count++;
  }
  freeifaddrs(all);
  *ifs = v;
  *n = count;
  return 0;
}

int weftx_netif_default_route(char *buf, size_t len)
{
  char line[512], name[64];
  unsigned long dest, gw, flags, mask;
  FILE *f;

  if (!buf || len == 0)
    return WEFT_EINVAL;
  buf[0] = '\0';
  f = fopen("/proc/net/route", "r");
  if (!f)
    return WEFT_EIO;
  while (fgets(line, sizeof(line), f)) {
    if (sscanf(line, "%63s %lx %lx %lx %*s %*s %*s %lx", name, &dest, &gw, &flags, &mask) != 5)
      continue;
    if (dest == 0 && mask == 0 && (flags & 1)) {
      weft__snprintf(buf, len, "%s", name);
      break;
    }
  }
  fclose(f);
  return 0;
}

int weftx_host_resolve(const char *host, weftx_netaddr *out, char *why, size_t whylen)
{
  struct addrinfo hints, *res, *ai, *pick = NULL;
  int rc;

  if (!host || !out)
    return WEFT_EINVAL;
  rc = weftx_hostname_check(host, why, whylen);
  if (rc)
    return rc;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0) {
    if (why)
      weft__snprintf(why, whylen, "cannot resolve host '%s': %s; check the name or /etc/hosts",
                     host, gai_strerror(rc));
    return WEFT_ENAME;
  }
  for (ai = res; ai; ai = ai->ai_next)
    if (ai->ai_family == AF_INET || (!pick && ai->ai_family == AF_INET6))
      if (!pick || pick->ai_family != AF_INET)
        pick = ai;
  if (!pick) {
    freeaddrinfo(res);
    if (why)
      weft__snprintf(why, whylen, "host '%s' has no IPv4 or IPv6 address", host);
    return WEFT_ENAME;
  }
  copy_addr(pick->ai_addr, &out->family, out->addr);
  freeaddrinfo(res);
  return 0;
}

int weftx_netaddr_is_local(const weftx_netif *ifs, int nifs, const weftx_netaddr *a)
{
  static const unsigned char v6lo[16] = {[15] = 1};

  if ((a->family == AF_INET && a->addr[0] == 127) ||
      (a->family == AF_INET6 && memcmp(a->addr, v6lo, 16) == 0))
    return 1;
  for (int i = 0; i < nifs; i++)
    if (ifs[i].family == a->family &&
        memcmp(ifs[i].addr, a->addr, a->family == AF_INET ? 4 : 16) == 0)
      return 1;
  return 0;
}

int weftx_netif_route_to(const weftx_netif *ifs, int nifs, const weftx_netaddr *a, char *buf,
                         size_t len)
{
  struct sockaddr_storage peer, local;
  socklen_t slen = sizeof(local);
  weftx_netaddr src;
  int fd, rc = WEFT_ENOENT;

  memset(&peer, 0, sizeof(peer));
  if (a->family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&peer;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(9);
    memcpy(&s4->sin_addr, a->addr, 4);
  } else {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&peer;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(9);
    memcpy(&s6->sin6_addr, a->addr, 16);
  }
  fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return WEFT_ESYS;
  if (connect(fd, (struct sockaddr *)&peer,
              a->family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) ==
        0 &&
      getsockname(fd, (struct sockaddr *)&local, &slen) == 0) {
    copy_addr((struct sockaddr *)&local, &src.family, src.addr);
    for (int i = 0; i < nifs && rc; i++)
      if (ifs[i].family == src.family &&
          memcmp(ifs[i].addr, src.addr, src.family == AF_INET ? 4 : 16) == 0)
        rc = weft__snprintf(buf, len, "%s", ifs[i].name);
  }
  close(fd);
  return rc;
}

/* Is \p host this machine by name? (Debian maps the host name to 127.0.1.1.) */
static int is_local_name(const char *host)
{
  char me[HOST_NAME_MAX + 1];

  if (strcasecmp(host, "localhost") == 0)
    return 1;
  if (gethostname(me, sizeof(me)) != 0)
    return 0;
  me[sizeof(me) - 1] = '\0';
  return strcasecmp(host, me) == 0;
}

int weftx_netif_pick(const char *const *hosts, int nhosts, char *ifname, size_t iflen, char *addr,
                     size_t addrlen, char *why, size_t whylen)
{
  weftx_netif *ifs = NULL;
  weftx_netaddr *targets = NULL;
  char(*routes)[32] = NULL, defif[32];
  const char **rp = NULL;
  int nifs = 0, nt = 0, idx = -1, rc;

  rc = weftx_netif_list(&ifs, &nifs);
  if (rc) {
    if (why)
      weft__snprintf(why, whylen, "cannot list network interfaces: %s", strerror(errno));
    return rc;
  }
  targets = calloc((size_t)nhosts + 1, sizeof(*targets));
  routes = calloc((size_t)nhosts + 1, sizeof(*routes));
  rp = calloc((size_t)nhosts + 1, sizeof(*rp));
  rc = targets && routes && rp ? 0 : WEFT_ENOMEM;
  for (int i = 0; rc == 0 && i < nhosts; i++) {
    if (is_local_name(hosts[i]))
      continue;
    rc = weftx_host_resolve(hosts[i], &targets[nt], why, whylen);
    if (rc || weftx_netaddr_is_local(ifs, nifs, &targets[nt]))
      continue;
    if (weftx_netif_route_to(ifs, nifs, &targets[nt], routes[nt], sizeof(routes[nt])) == 0)
      rp[nt] = routes[nt];
    nt++;
  }
  if (rc == 0 && weftx_netif_default_route(defif, sizeof(defif)) != 0)
    defif[0] = '\0';
  if (rc == 0)
    rc = weftx_netif_choose(ifs, nifs, targets, rp, nt, defif[0] ? defif : NULL, &idx, why, whylen);
  if (rc == 0)
    rc = weft__snprintf(ifname, iflen, "%s", ifs[idx].name);
  if (rc == 0)
    rc = weftx_netaddr_format(ifs[idx].family, ifs[idx].addr, addr, addrlen);
  free(ifs);
  free(targets);
  free(routes);
  free(rp);
  return rc;
}

/* Among \p host's addresses, one inside the subnet of the interface whose address is
 * \p chosen (a host with a management and a data network answers with both). */
static int resolve_on(const char *host, const char *chosen, const weftx_netif *ifs, int nifs,
                      weftx_netaddr *out)
{
  struct addrinfo hints, *res, *ai;
  const weftx_netif *nif = NULL;
  weftx_netaddr c, cand;
  int found = 0;

  if (!chosen || weftx_netaddr_parse(&c, chosen))
    return 0;
  for (int i = 0; i < nifs && !nif; i++)
    if (ifs[i].family == c.family && memcmp(ifs[i].addr, c.addr, 16) == 0)
      nif = &ifs[i];
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (!nif || getaddrinfo(host, NULL, &hints, &res) != 0)
    return 0;
  for (ai = res; ai && !found; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
      continue;
    copy_addr(ai->ai_addr, &cand.family, cand.addr);
    if (weftx_netif_contains(nif, &cand)) {
      *out = cand;
      found = 1;
    }
  }
  freeaddrinfo(res);
  return found;
}

int weftx_master_addr(const char *first_host, const char *chosen_addr, char *buf, size_t len,
                      char *why, size_t whylen)
{
  weftx_netif *ifs = NULL;
  weftx_netaddr a;
  int nifs = 0, local, rc;

  if (!first_host || !buf)
    return WEFT_EINVAL;
  local = is_local_name(first_host);
  if (!local) {
    rc = weftx_host_resolve(first_host, &a, why, whylen);
    if (rc)
      return rc;
    if (weftx_netif_list(&ifs, &nifs) == 0) {
      local = weftx_netaddr_is_local(ifs, nifs, &a);
      if (!local)
        resolve_on(first_host, chosen_addr, ifs, nifs, &a);
    }
    free(ifs);
    if (!local)
      return weftx_netaddr_format(a.family, a.addr, buf, len);
  }
  return weft__snprintf(buf, len, "%s", chosen_addr ? chosen_addr : "127.0.0.1");
}
