/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel's sockets, for both ends: an agent's connect with a
 * deadline, and one connection's buffered, non-blocking reads (whole frames
 * to a callback) and writes (a bounded outbox). weftrun polls thousands of
 * these in one loop, an agent one; neither ever blocks on a peer.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weftx.h>

#include "ctl-io.h"
#include "tcp.h"

void wt_ctl_conn_init(wt_ctl_conn *c, int fd, size_t out_max)
{
  memset(c, 0, sizeof(*c));
  c->fd = fd;
  c->out_max = out_max < WT_CTL_FRAME_MAX ? WT_CTL_FRAME_MAX : out_max;
}

void wt_ctl_conn_close(wt_ctl_conn *c)
{
  if (c->fd >= 0)
    close(c->fd);
  free(c->in);
  free(c->out);
  c->in = c->out = NULL;
  c->fd = -1;
  c->in_len = c->out_len = c->in_cap = 0;
}

/* Room for \p need bytes in *buf (of *cap), doubling from 512; -1 without memory. */
static int room(unsigned char **buf, size_t *cap, size_t need)
{
  if (need <= *cap)
    return 0;
  size_t n = *cap ? *cap : 512;
  while (n < need)
    n *= 2;
  unsigned char *b = realloc(*buf, n);
  if (!b)
    return -1;
  *buf = b;
  *cap = n;
  return 0;
}

int wt_ctl_conn_read(wt_ctl_conn *c, wt_ctl_on_msg fn, void *arg, char *why, size_t whylen)
{
  for (;;) {
    /* the whole frames already here first: a callback that stopped left some */
    for (;;) {
      long f = wt_ctl_frame(c->in, c->in_len, why, whylen);
      if (f < 0)
        return -1;
      if (f == 0)
        break;
      wt_ctl_msg m;
      if (wt_ctl_decode(c->in, (size_t)f, &m, why, whylen))
        return -1;
      c->frames++;
      int stop = fn(arg, &m);
      memmove(c->in, c->in + f, c->in_len - (size_t)f);
      c->in_len -= (size_t)f;
      if (stop)
        return 1;
    }
    /* a frame's header says how much it needs; otherwise read in steps of 512 */
    size_t need = c->in_len + 512;
    if (c->in_len >= WT_CTL_HEADER) {
      size_t f = WT_CTL_HEADER + (((size_t)c->in[4] << 24) | ((size_t)c->in[5] << 16) |
                                  ((size_t)c->in[6] << 8) | c->in[7]);
      need = f > c->in_len ? f : need;
    }
    if (need > WT_CTL_FRAME_MAX)
      need = WT_CTL_FRAME_MAX;
    if (room(&c->in, &c->in_cap, need)) {
      snprintf(why, whylen, "out of memory");
      return -1;
    }
    ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n == 0) {
      snprintf(why, whylen, "connection closed");
      return -1;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
      c->err = errno;
      if (c->err == ETIMEDOUT)
        snprintf(why, whylen, "its machine acknowledged nothing for %d s", WT_CTL_UNANSWERED_S);
      else
        snprintf(why, whylen, "%s", strerror(c->err));
      return -1;
    }
    c->in_len += (size_t)n;
  }
}

int wt_ctl_conn_queue(wt_ctl_conn *c, const wt_ctl_out *m)
{
  if (c->fd < 0 || c->out_len + m->len > c->out_max)
    return -1;
  if (!c->out && !(c->out = malloc(c->out_max)))
    return -1;
  memcpy(c->out + c->out_len, m->buf, m->len);
  c->out_len += m->len;
  return 0;
}

int wt_ctl_conn_flush(wt_ctl_conn *c)
{
  while (c->out_len && c->fd >= 0) {
    ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 0;
    if (n < 0) {
      c->err = errno;
      return -1;
    }
    memmove(c->out, c->out + n, c->out_len - (size_t)n);
    c->out_len -= (size_t)n;
  }
  return 0;
}

int wt_ctl_conn_drain(wt_ctl_conn *c, double deadline)
{
  while (c->out_len) {
    if (wt_ctl_conn_flush(c))
      return -1;
    if (!c->out_len)
      break;
    double left = deadline - weftx_monotonic();
    if (left <= 0)
      return -1;
    struct pollfd pf = {c->fd, POLLOUT, 0};
    if (poll(&pf, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
      return -1;
  }
  return 0;
}

int wt_ctl_split_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
  const char *colon = strrchr(addr, ':');
  const char *h = addr;
  size_t hn;
  if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
    return -1;
  hn = (size_t)(colon - addr);
  if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') { /* [v6]:port */
    h++;
    hn -= 2;
  }
  if (!hn || hn >= hostlen || strlen(colon + 1) >= portlen)
    return -1;
  memcpy(host, h, hn);
  host[hn] = '\0';
  snprintf(port, portlen, "%s", colon + 1);
  return 0;
}

int wt_ctl_keepalive(int fd)
{
  int one = 1, idle = 1, intvl = 1, cnt = WT_CTL_UNANSWERED_S;
  unsigned int user_ms = WT_CTL_UNANSWERED_S * 1000;
  /* TCP_USER_TIMEOUT also bounds data sent and never acknowledged, and overrides the
   * probe count */
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) ||
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms)))
    return -1;
  return 0;
}

int wt_ctl_connect(const char *addr, double deadline, char *why, size_t whylen)
{
  char host[256], port[16];
  weftx_netaddr a;
  long p;
  int fd, e;

  if (wt_ctl_split_address(addr, host, sizeof(host), port, sizeof(port)) ||
      weftx_netaddr_parse(&a, host) || weftx_parse_long(port, 0, 65535, &p)) {
    snprintf(why, whylen, "'%s' is not ADDRESS:PORT", addr);
    return -1;
  }
  /* refused at once: weftrun may not be listening yet only in theory (it listens
   * before it starts the engine), so retry briefly, then give up */
  while ((fd = wt_tcp_dial(&a, (int)p, NULL, deadline)) < 0) {
    e = errno;
    if (weftx_monotonic() + 0.2 >= deadline || (e != ECONNREFUSED && e != EINTR && e != EAGAIN)) {
      snprintf(why, whylen, "%s", strerror(e ? e : ETIMEDOUT));
      return -1;
    }
    usleep(200000);
  }
  return fd;
}
