/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's end of the control channel (ctl.h): it listens on the interface
 * chosen for the job (loopback for a job on this host alone) before the
 * engine starts, with a secret of 16 random bytes the agents get through the
 * environment, and keeps every agent's connection in one epoll set, which the
 * run stage polls in the same loop as mpirun. Every connection gets a challenge
 * of its own at once and proves the secret in its first message (HELLO, an
 * HMAC of that challenge keyed by the secret: ctl.h) or is closed without a
 * word; the secret itself never crosses the network. Heartbeats are answered at once;
 * everything else goes to the supervisor's rules (supervise.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl-io.h"
#include "hmac.h"
#include "supervise.h"
#include "tcp.h"

#define HELLO_S 10.0 /* a connection's bound to say HELLO */
#define OUTBOX 8192  /* weftrun's messages are small: an agent that reads none is gone */

typedef struct slot {
  wt_ctl_conn conn;
  int rank; /* -1 until its HELLO */
  double opened;
  int want_out;                             /* EPOLLOUT registered */
  char challenge[WT_CTL_CHALLENGE_LEN + 1]; /* this connection's, for its HELLO */
} slot;

struct wr_ctl {
  int lfd, ep;
  char addr[300];
  char secret[WT_CTL_SECRET_LEN + 1];
  slot **slots;
  int nslots, cap;
  int unwelcomed; /* connections without a HELLO yet */
  int warned_fds;
  int deaf; /* the listener is out of the epoll set (no descriptors) */
};

/* n hex digits (and a NUL) of random bytes */
static int random_hex(char *out, size_t n)
{
  unsigned char b[64];
  size_t got = 0;
  if (n / 2 > sizeof(b))
    return -1;
  while (got < n / 2) {
    ssize_t k = getrandom(b + got, n / 2 - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    got += (size_t)k;
  }
  wt_hex(b, n / 2, out);
  memset(b, 0, sizeof(b));
  return 0;
}

int wr_ctl_open(const wr_net *net, int np, wr_ctl **out, char *why, size_t len)
{
  const char *host = net && net->ifaddr[0] ? net->ifaddr : "127.0.0.1";
  weftx_netaddr a;
  char num[64];
  int port = 0;
  wr_ctl *c = calloc(1, sizeof(*c));

  *out = NULL;
  /* one descriptor per agent: thousands of them need more than the usual soft limit */
  struct rlimit rl;
  wt_tcp_room((long)np + 256);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)np + 64)
    fprintf(stderr,
            "weftrun: warning: %d ranks, but only %llu open files allowed (ulimit -n): "
            "agents beyond that cannot report; raise the limit\n",
            np, (unsigned long long)rl.rlim_cur);
  if (!c) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  c->lfd = c->ep = -1;
  if (random_hex(c->secret, WT_CTL_SECRET_LEN)) {
    snprintf(why, len, "cannot make the job's secret: getrandom: %s", strerror(errno));
    goto fail;
  }
  if (weftx_netaddr_parse(&a, host) || weftx_netaddr_format(a.family, a.addr, num, sizeof(num))) {
    snprintf(why, len, "the control channel cannot listen on '%s': not a numeric address", host);
    goto fail;
  }
  if ((c->lfd = wt_tcp_listen(&a, 0, SOMAXCONN, &port)) < 0) {
    snprintf(why, len, "the control channel cannot listen on %s: %s", host, strerror(errno));
    goto fail;
  }
  snprintf(c->addr, sizeof(c->addr), a.family == AF_INET6 ? "[%s]:%d" : "%s:%d", num, port);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
  if ((c->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 || epoll_ctl(c->ep, EPOLL_CTL_ADD, c->lfd, &ev)) {
    snprintf(why, len, "the control channel: epoll: %s", strerror(errno));
    goto fail;
  }
  *out = c;
  return 0;
fail:
  wr_ctl_close(c);
  return -1;
}

const char *wr_ctl_address(const wr_ctl *c) { return c->addr; }

const char *wr_ctl_secret(const wr_ctl *c) { return c->secret; }

int wr_ctl_fd(const wr_ctl *c) { return c->ep; }

static void drop(wr_ctl *c, int i)
{
  slot *sl = c->slots[i];
  if (!sl)
    return;
  if (sl->rank < 0)
    c->unwelcomed--;
  epoll_ctl(c->ep, EPOLL_CTL_DEL, sl->conn.fd, NULL);
  wt_ctl_conn_close(&sl->conn);
  free(sl);
  c->slots[i] = NULL;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
  if (c->deaf && epoll_ctl(c->ep, EPOLL_CTL_ADD, c->lfd, &ev) == 0)
    c->deaf = 0;
}

/* Send what is queued; watch for room when some is left. -1: the agent is gone. */
static int flush(wr_ctl *c, int i)
{
  slot *sl = c->slots[i];
  if (wt_ctl_conn_flush(&sl->conn))
    return -1;
  int want = sl->conn.out_len > 0;
  if (want != sl->want_out) {
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0),
                             .data.u64 = (uint64_t)i + 1};
    epoll_ctl(c->ep, EPOLL_CTL_MOD, sl->conn.fd, &ev);
    sl->want_out = want;
  }
  return 0;
}

static int send_msg(wr_ctl *c, int i, const wt_ctl_out *m)
{
  return wt_ctl_conn_queue(&c->slots[i]->conn, m) || flush(c, i) ? -1 : 0;
}

static void accept_all(wr_ctl *c, double now)
{
  for (;;) {
    int fd = wt_tcp_accept(c->lfd);
    if (fd < 0) {
      /* out of descriptors: the agent's connection waits in the backlog (it gives up
       * after its bound and says so); say it once here too */
      if (errno == EMFILE || errno == ENFILE) {
        if (!c->warned_fds)
          fprintf(stderr, "weftrun: warning: out of file descriptors for agents' connections "
                          "(ulimit -n)\n");
        c->warned_fds = 1;
        /* the listener stays readable: unwatch it until a connection closes */
        if (epoll_ctl(c->ep, EPOLL_CTL_DEL, c->lfd, NULL) == 0)
          c->deaf = 1;
      }
      return;
    }
    int i = 0;
    while (i < c->nslots && c->slots[i])
      i++;
    if (i == c->nslots) {
      if (c->nslots == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        slot **v = realloc(c->slots, (size_t)cap * sizeof(*v));
        if (!v) {
          close(fd);
          return;
        }
        memset(v + c->cap, 0, (size_t)(cap - c->cap) * sizeof(*v));
        c->slots = v;
        c->cap = cap;
      }
      c->nslots++;
    }
    slot *sl = calloc(1, sizeof(*sl));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i + 1};
    if (!sl || random_hex(sl->challenge, WT_CTL_CHALLENGE_LEN) ||
        epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev)) {
      free(sl);
      close(fd);
      continue;
    }
    wt_ctl_conn_init(&sl->conn, fd, OUTBOX);
    if (wt_ctl_keepalive(fd)) /* then only --host-timeout notices a machine gone */
      weft_log(WEFT_LOG_RUN, "no TCP keepalive on an agent's connection: %s", strerror(errno));
    sl->rank = -1;
    sl->opened = now;
    c->slots[i] = sl;
    c->unwelcomed++;
    /* the challenge first: the agent's HELLO answers it */
    wt_ctl_out m;
    wt_ctl_begin(&m, WT_CTL_CHALLENGE);
    wt_ctl_put_str(&m, WT_CTL_T_CHALLENGE, sl->challenge);
    if (send_msg(c, i, &m))
      drop(c, i);
  }
}

/* Whether a HELLO's proof is this connection's challenge signed with the job's secret
 * for the rank and host it names. Constant time: how long the comparison takes says
 * nothing of the secret. */
static int proven(const wr_ctl *c, const slot *sl, const wt_ctl_msg *m, int64_t rank,
                  const char *host)
{
  char proof[WT_CTL_PROOF_LEN + 8], want[WT_CTL_PROOF_LEN + 1];
  if (wt_ctl_get_str(m, WT_CTL_T_PROOF, proof, sizeof(proof)) || strlen(proof) != WT_CTL_PROOF_LEN)
    return 0;
  wt_ctl_proof(c->secret, sl->challenge, rank, host, want);
  int ok = wt_same_bytes(proof, want, WT_CTL_PROOF_LEN);
  memset(want, 0, sizeof(want));
  return ok;
}

typedef struct reading {
  wr_ctl *c;
  wr_sup *s;
  int i;
  double now;
  int refused;
} reading;

static int on_frame(void *arg, const wt_ctl_msg *m)
{
  reading *rd = arg;
  slot *sl = rd->c->slots[rd->i];
  wt_ctl_out out;
  if (sl->rank < 0) {
    char host[WT_CTL_MAX_TEXT + 1], why[300];
    int64_t rank = -1;
    if (m->type != WT_CTL_HELLO || wt_ctl_get_int(m, WT_CTL_T_RANK, &rank) ||
        wt_ctl_get_str(m, WT_CTL_T_HOST, host, sizeof(host)) || !proven(rd->c, sl, m, rank, host)) {
      rd->refused = 1; /* not one of ours: no answer */
      return 1;
    }
    if (wr_sup_hello(rd->s, (int)rank, (long)wt_ctl_int_or(m, WT_CTL_T_PID, 0), host, rd->now, why,
                     sizeof(why))) {
      wt_ctl_begin(&out, WT_CTL_REFUSE);
      wt_ctl_put_str(&out, WT_CTL_T_WHY, why);
      send_msg(rd->c, rd->i, &out);
      rd->refused = 1;
      return 1;
    }
    sl->rank = (int)rank;
    rd->c->unwelcomed--;
    wt_ctl_begin(&out, WT_CTL_WELCOME);
    wt_ctl_put_int(&out, WT_CTL_T_HB_MS, (int64_t)(rd->s->hb_s * 1000));
    wt_ctl_put_int(&out, WT_CTL_T_LOST_MS, (int64_t)(rd->s->lost_s * 1000));
    wt_ctl_put_int(&out, WT_CTL_T_GRACE_MS, (int64_t)(WR_END_GRACE_S * 1000));
    send_msg(rd->c, rd->i, &out);
    return 0;
  }
  if (m->type == WT_CTL_HEARTBEAT) {
    wt_ctl_begin(&out, WT_CTL_PONG);
    wt_ctl_put_int(&out, WT_CTL_T_SEQ, wt_ctl_int_or(m, WT_CTL_T_SEQ, 0));
    send_msg(rd->c, rd->i, &out);
  }
  wr_sup_msg(rd->s, sl->rank, m, rd->now);
  return 0;
}

static void serve(wr_ctl *c, wr_sup *s, int i, unsigned events, double now)
{
  slot *sl = c->slots[i];
  char why[300] = "the connection broke";
  reading rd = {c, s, i, now, 0};
  if ((events & EPOLLOUT) && flush(c, i))
    goto gone;
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
    return;
  int rc;
  do
    rc = wt_ctl_conn_read(&sl->conn, on_frame, &rd, why, sizeof(why));
  while (rc == 1 && !rd.refused);
  if (rd.refused) {
    /* a REFUSE goes out as far as the socket takes it at once */
    wt_ctl_conn_flush(&sl->conn);
    drop(c, i);
    return;
  }
  if (rc == 0)
    return;
gone:
  if (sl->rank >= 0) {
    weft_log(WEFT_LOG_RUN, "rank %d's agent: %s", sl->rank, why);
    wr_sup_gone(s, sl->rank, sl->conn.err == ETIMEDOUT, now);
  }
  drop(c, i);
}

void wr_ctl_pump(wr_ctl *c, wr_sup *s, double now)
{
  struct epoll_event ev[256];
  for (int round = 0; round < 64; round++) {
    int n = epoll_wait(c->ep, ev, 256, 0);
    if (n <= 0)
      break;
    for (int k = 0; k < n; k++) {
      if (ev[k].data.u64 == 0)
        accept_all(c, now);
      else if (ev[k].data.u64 - 1 < (uint64_t)c->nslots && c->slots[ev[k].data.u64 - 1])
        serve(c, s, (int)(ev[k].data.u64 - 1), ev[k].events, now);
    }
  }
  /* a connection that never says who it is does not stay */
  for (int i = 0; c->unwelcomed && i < c->nslots; i++)
    if (c->slots[i] && c->slots[i]->rank < 0 && now - c->slots[i]->opened > HELLO_S)
      drop(c, i);
}

static void to_all(wr_ctl *c, const wr_sup *s, const wt_ctl_out *m, int only_asked)
{
  for (int i = 0; i < c->nslots; i++) {
    slot *sl = c->slots[i];
    if (!sl || sl->rank < 0 || (only_asked && !s->r[sl->rank].stack_asked))
      continue;
    if (send_msg(c, i, m))
      drop(c, i);
  }
}

void wr_ctl_end(wr_ctl *c, const wr_sup *s, int sig, const char *why)
{
  wt_ctl_out m;
  wt_ctl_begin(&m, WT_CTL_END);
  wt_ctl_put_int(&m, WT_CTL_T_SIGNAL, sig);
  wt_ctl_put_str(&m, WT_CTL_T_WHY, why);
  to_all(c, s, &m, 0);
}

void wr_ctl_stacks(wr_ctl *c, const wr_sup *s)
{
  wt_ctl_out m;
  wt_ctl_begin(&m, WT_CTL_STACK_REQ);
  to_all(c, s, &m, 1);
}

void wr_ctl_close(wr_ctl *c)
{
  if (!c)
    return;
  for (int i = 0; i < c->nslots; i++)
    drop(c, i);
  free(c->slots);
  if (c->lfd >= 0)
    close(c->lfd);
  if (c->ep >= 0)
    close(c->ep);
  memset(c->secret, 0, sizeof(c->secret));
  free(c);
}
