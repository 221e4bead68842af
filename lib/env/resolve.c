/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All of a job's host names resolved at once, with a deadline: glibc's
 * getaddrinfo_a() asks for every name in parallel, and gai_suspend() waits
 * no longer than the caller allows, so that a slow or dead resolver stops a
 * job with a message instead of hanging it. Each answer is the first IPv4
 * address, else the first IPv6 one, as weftx_host_resolve() picks.
 */
#define _GNU_SOURCE 1
#include "weft_private.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static void pick(const struct addrinfo *res, weftx_netaddr *out)
{
  const struct addrinfo *ai, *best = NULL;

  for (ai = res; ai; ai = ai->ai_next)
    if (ai->ai_family == AF_INET || (!best && ai->ai_family == AF_INET6))
      if (!best || best->ai_family != AF_INET)
        best = ai;
  memset(out, 0, sizeof(*out));
  if (!best)
    return;
  out->family = best->ai_family;
  if (best->ai_family == AF_INET)
    memcpy(out->addr, &((const struct sockaddr_in *)(const void *)best->ai_addr)->sin_addr, 4);
  else
    memcpy(out->addr, &((const struct sockaddr_in6 *)(const void *)best->ai_addr)->sin6_addr, 16);
}

int weftx_hosts_resolve(const char *const *hosts, int n, double timeout, weftx_netaddr *out,
                        int *err, char *why, size_t whylen)
{
  struct gaicb *cb = calloc((size_t)(n > 0 ? n : 1), sizeof(*cb));
  struct gaicb **list = calloc((size_t)(n > 0 ? n : 1), sizeof(*list));
  struct addrinfo hints;
  double end = weftx_monotonic() + timeout;
  int rc = 0, i, left;

  if (!cb || !list) {
    free(cb);
    free(list);
    return WEFT_ENOMEM;
  }
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  for (i = 0; i < n; i++) {
    cb[i].ar_name = hosts[i];
    cb[i].ar_request = &hints;
    list[i] = &cb[i];
  }
  if (n > 0 && getaddrinfo_a(GAI_NOWAIT, list, n, NULL) != 0) {
    /* the asynchronous resolver is not there: one by one, without its deadline */
    for (i = 0; i < n; i++)
      err[i] = weftx_host_resolve(hosts[i], &out[i], NULL, 0) ? EAI_NONAME : 0;
    free(cb);
    free(list);
    return 0;
  }
  for (;;) {
    double now = weftx_monotonic();
    struct timespec ts;
    left = 0;
    for (i = 0; i < n; i++)
      if (gai_error(&cb[i]) == EAI_INPROGRESS)
        left++;
    if (!left)
      break;
    if (now >= end) {
      rc = WEFT_ETIMEDOUT;
      break;
    }
    ts.tv_sec = (time_t)(end - now);
    ts.tv_nsec = (long)((end - now - (double)ts.tv_sec) * 1e9);
    (void)gai_suspend((const struct gaicb *const *)list, n, &ts);
  }
  for (i = 0; i < n; i++) {
    int e = gai_error(&cb[i]);
    if (e == EAI_INPROGRESS) {
      gai_cancel(&cb[i]);
      err[i] = EAI_AGAIN;
      if (why && rc == WEFT_ETIMEDOUT && !why[0])
        weft__snprintf(why, whylen, "host '%s' did not resolve within %.0f s; check the name "
                       "and the resolver (/etc/resolv.conf)", hosts[i], timeout);
      continue;
    }
    err[i] = e;
    if (e == 0) {
      pick(cb[i].ar_result, &out[i]);
      if (!out[i].family)
        err[i] = EAI_NODATA;
      freeaddrinfo(cb[i].ar_result);
    }
  }
  /* a request cancelled while running still owns its memory: wait for it briefly */
  for (i = 0; i < n && rc; i++)
    if (gai_error(&cb[i]) == EAI_INPROGRESS) {
      struct timespec ts = { 0, 100000000 };
      const struct gaicb *one[1] = { &cb[i] };
      (void)gai_suspend(one, 1, &ts);
      if (gai_error(&cb[i]) == EAI_INPROGRESS) {
        /* still busy: leak the two arrays rather than free what the resolver uses */
        return rc;
      }
      if (gai_error(&cb[i]) == 0)
        freeaddrinfo(cb[i].ar_result);
    }
  free(cb);
  free(list);
  return rc;
}
