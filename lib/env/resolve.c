/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All of a job's host names resolved at once, with a deadline: a few worker
 * threads call getaddrinfo() on the names in turn, and the caller waits no
 * longer than it allows, so that a slow or dead resolver stops a job with a
 * message instead of hanging it. Workers still asking when the deadline
 * passes are left to finish on their own: they own a copy of the names and
 * the last one out frees the lot. Each answer is the first IPv4 address,
 * else the first IPv6 one, as weftx_host_resolve() picks.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define WORKERS 16

typedef struct pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, next, done, refs, abandoned;
  char **names;
  weftx_netaddr *addr;
  int *err;
} pool;

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

static void pool_free(pool *p)
{
  for (int i = 0; i < p->n; i++)
    free(p->names[i]);
  free(p->names);
  free(p->addr);
  free(p->err);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}

/* Drop one reference (the pool's lock held); the last one frees it. */
static void pool_leave(pool *p)
{
  int last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (last)
    pool_free(p);
}

static void *worker(void *arg)
{
  pool *p = arg;
  struct addrinfo hints;

  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  pthread_mutex_lock(&p->mu);
  while (p->next < p->n && !p->abandoned) {
    int i = p->next++, e;
    struct addrinfo *res = NULL;
    weftx_netaddr a;
    pthread_mutex_unlock(&p->mu);
    e = getaddrinfo(p->names[i], NULL, &hints, &res);
    memset(&a, 0, sizeof(a));
    if (e == 0) {
      pick(res, &a);
      freeaddrinfo(res);
      if (!a.family)
        e = EAI_NONAME;
    }
    pthread_mutex_lock(&p->mu);
    p->addr[i] = a;
    p->err[i] = e;
    p->done++;
    pthread_cond_signal(&p->cv);
  }
  pool_leave(p);
  return NULL;
}

int weftx_hosts_resolve(const char *const *hosts, int n, double timeout, weftx_netaddr *out,
                        int *err, char *why, size_t whylen)
{
  pool *p;
  int started = 0, rc = 0;
  double end = weftx_monotonic() + timeout;

  if (n <= 0)
    return 0;
  if (!(p = calloc(1, sizeof(*p))))
    return WEFT_ENOMEM;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->n = n;
  p->names = calloc((size_t)n, sizeof(*p->names));
  p->addr = calloc((size_t)n, sizeof(*p->addr));
  p->err = calloc((size_t)n, sizeof(*p->err));
  for (int i = 0; p->names && i < n; i++)
    if (!(p->names[i] = strdup(hosts[i]))) {
      p->n = i;
      break;
    }
  if (!p->names || !p->addr || !p->err || p->n != n) {
    pool_free(p);
    return WEFT_ENOMEM;
  }
  p->refs = 1;
  pthread_mutex_lock(&p->mu);
  for (int w = 0; w < WORKERS && w < n; w++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    p->refs++;
    if (pthread_create(&t, &attr, worker, p) != 0)
      p->refs--;
    else
      started++;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    /* no thread to be had: one by one, without the deadline */
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
      err[i] = weftx_host_resolve(hosts[i], &out[i], NULL, 0) ? EAI_NONAME : 0;
    pthread_mutex_lock(&p->mu);
    pool_leave(p);
    return 0;
  }
  while (p->done < n) {
    double now = weftx_monotonic();
    struct timespec ts;
    if (now >= end) {
      rc = WEFT_ETIMEDOUT;
      break;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(end - now);
    ts.tv_nsec += (long)((end - now - (double)(time_t)(end - now)) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(&p->cv, &p->mu, &ts);
  }
  for (int i = 0; i < n; i++) {
    if (i >= p->next || (p->err[i] == 0 && !p->addr[i].family)) {
      /* not answered in time */
      err[i] = EAI_AGAIN;
      if (why && !why[0])
        weft__snprintf(why, whylen,
                       "host '%s' did not resolve within %.0f s; check the name "
                       "and the resolver (/etc/resolv.conf)",
                       hosts[i], timeout);
      continue;
    }
    err[i] = p->err[i];
    out[i] = p->addr[i];
  }
  p->abandoned = 1;
  pool_leave(p);
  return rc;
}
