/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TCP for the tools (tcp.h): a listener, a connect from a given address with
 * a deadline, an accept, on numeric addresses. Waits are poll(2)s bounded by
 * the caller's deadline; a signal does not cut one short.
 */
#define _GNU_SOURCE /* accept4 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

static socklen_t sockaddr_of(const weftx_netaddr *a, int port, struct sockaddr_storage *ss)
{
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((unsigned short)port);
    memcpy(&s6->sin6_addr, a->addr, 16);
    return sizeof(*s6);
  }
  struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)ss;
  s4->sin_family = AF_INET;
  s4->sin_port = htons((unsigned short)port);
  memcpy(&s4->sin_addr, a->addr, 4);
  return sizeof(*s4);
}

/* close(2) that leaves errno as it was. */
static int fail(int fd, int rc)
{
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

int wt_tcp_listen(const weftx_netaddr *addr, int port, int backlog, int *got)
{
  weftx_netaddr any;
  struct sockaddr_storage ss;
  int one = 1;
  if (!addr) {
    memset(&any, 0, sizeof(any));
    any.family = AF_INET;
    addr = &any;
  }
  int fd = socket(addr->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  socklen_t sl = sockaddr_of(addr, port, &ss);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
      bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, backlog))
    return fail(fd, -1);
  sl = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &sl))
    return fail(fd, -1);
  *got = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)(void *)&ss)->sin6_port
                                        : ((struct sockaddr_in *)(void *)&ss)->sin_port);
  return fd;
}

int wt_tcp_accept(int lfd) { return accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

int wt_tcp_dial_start(const weftx_netaddr *to, int port, const weftx_netaddr *from, int *done)
{
  struct sockaddr_storage ss;
  *done = 0;
  int fd = socket(to->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  if (from && from->family == to->family &&
      bind(fd, (struct sockaddr *)&ss, sockaddr_of(from, 0, &ss)))
    return fail(fd, -2);
  if (connect(fd, (struct sockaddr *)&ss, sockaddr_of(to, port, &ss)) == 0)
    *done = 1;
  else if (errno != EINPROGRESS)
    return fail(fd, -1);
  return fd;
}

int wt_tcp_dial_state(int fd)
{
  int err = 0;
  socklen_t el = sizeof(err);
  struct pollfd p = {fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0)
    return 0;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
    err = errno;
  errno = err;
  return err ? -1 : 1;
}

int wt_tcp_dial(const weftx_netaddr *to, int port, const weftx_netaddr *from, double deadline)
{
  int done, fd = wt_tcp_dial_start(to, port, from, &done);
  while (fd >= 0 && !done) {
    double left = deadline - weftx_monotonic();
    struct pollfd p = {fd, POLLOUT, 0};
    int n = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
    int st = n > 0 ? wt_tcp_dial_state(fd) : 0;
    if (st > 0)
      break;
    if (st == 0 && (n > 0 || (n < 0 && errno == EINTR)))
      continue;
    if (n == 0)
      errno = ETIMEDOUT;
    return fail(fd, -1);
  }
  return fd;
}

void wt_tcp_room(long need)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need &&
      rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max : (rlim_t)need;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}
