/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank --check's network check, what a job's ranks do first, rehearsed:
 *
 *  - the master (host 0 of the check job, the host MASTER_ADDR names) binds
 *    MASTER_PORT, as PyTorch's store and most rendezvous do: if the port is
 *    taken, the record names the process holding it, and the rendezvous
 *    moves to one of 8 ports derived from the check's nonce;
 *  - every other agent connects to MASTER_ADDR:MASTER_PORT (or the next of
 *    those ports), registers the address and port of its own listener on the
 *    job's interface, and measures its clock against the master's (three
 *    round trips, the shortest kept: offset = (t_sent + t_back)/2 - t_master);
 *  - the master sends each agent the addresses of the hosts the pair rule
 *    (agent.h) gives it, and every agent opens a TCP connection to each of
 *    them, in parallel, from its address on the job's interface, and checks
 *    that the right agent answers;
 *  - each agent tells the master when it is done; the master ends the
 *    rendezvous when all are (or at the deadline), so every listener stays up
 *    while anyone may still test it.
 *
 * Each wait has its deadline; messages are short lines that begin with the
 * nonce, so another program listening on a port is told apart.
 */
#define _GNU_SOURCE /* pipe2 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tcp.h"

#define PAIR_S 2.0  /* one pair: connect and answer */
#define HELLO_S 1.5 /* the master's answer on a port */
#define REG_S 5.0   /* the master waits this long for every agent to register */
#define PINGS 3
#define RENDEZVOUS_PORTS 8   /* ports the rendezvous may move to when MASTER_PORT is taken */
#define MAX_CLIENTS_EXTRA 64 /* connections beyond the agents' (strangers, retries) */
#define LISTEN_BACKLOG 1024
#define TAG "WEFTCHK"

/* ---- Lines over sockets, each wait with its deadline ------------------------ */

typedef struct conn {
  int fd;
  char buf[2048];
  size_t len;
} conn;

static double now_real(const wk_check_net *a)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + a->skew;
}

static int ms_until(double deadline)
{
  double d = deadline - weftx_monotonic();
  return d <= 0 ? 0 : (int)(d * 1000) + 1;
}

static int sendf(int fd, double deadline, const char *fmt, ...) WEFT_PRINTF(3, 4);
static int sendf(int fd, double deadline, const char *fmt, ...)
{
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(line))
    return -1;
  for (int off = 0; off < n;) {
    ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += (int)w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR)
      return -1;
    struct pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, ms_until(deadline)) <= 0)
      return -1;
  }
  return 0;
}

/* A whole line out of what has arrived (without its '\n'): 1; 0 when none yet. */
static int take_line(conn *c, char *out, size_t len)
{
  char *nl = memchr(c->buf, '\n', c->len);
  if (!nl)
    return 0;
  size_t n = (size_t)(nl - c->buf);
  snprintf(out, len, "%.*s", (int)n, c->buf);
  memmove(c->buf, nl + 1, c->len - n - 1);
  c->len -= n + 1;
  return 1;
}

/* Read what is there: 0, or -1 at the end of the stream, an error or a line too long. */
static int fill(conn *c)
{
  if (c->len >= sizeof(c->buf))
    return -1;
  ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
  if (r > 0)
    c->len += (size_t)r;
  return r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)) ? 0 : -1;
}

/* The next line: 1, 0 at the deadline, -1 at the end of the stream. */
static int read_line(conn *c, char *out, size_t len, double deadline)
{
  for (;;) {
    if (take_line(c, out, len))
      return 1;
    struct pollfd p = {c->fd, POLLIN, 0};
    int n = poll(&p, 1, ms_until(deadline));
    if (n == 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -1;
    if (n > 0 && fill(c))
      return take_line(c, out, len) ? 1 : -1;
  }
}

static void errno_why(int e, char *why, size_t len)
{
  switch (e) {
  case ECONNREFUSED: snprintf(why, len, "connection refused"); break;
  case EHOSTUNREACH: snprintf(why, len, "no route to host"); break;
  case ENETUNREACH: snprintf(why, len, "network unreachable"); break;
  case ETIMEDOUT: snprintf(why, len, "timed out"); break;
  case EINVAL: snprintf(why, len, "rejected by a blackhole or prohibit route"); break;
  case EACCES:
  case EPERM: snprintf(why, len, "a local firewall rule refuses it"); break;
  default: snprintf(why, len, "%s", strerror(e));
  }
}

/* Why a connect failed (wt_tcp_dial's -1 or -2, with errno). */
static void dial_why(int rc, int e, char *why, size_t len)
{
  if (rc == -2)
    snprintf(why, len, "cannot bind to the job's interface: %s", strerror(e));
  else
    errno_why(e, why, len);
}

/* A connect to ADDR:PORT from \p src (NULL: the kernel's choice): started, the socket
 * with *done 1 when it is made already (\p deadline < 0), or made by \p deadline; -1
 * with the reason. */
static int dial(const char *addr, int port, const weftx_netaddr *src, double deadline, int *done,
                char *why, size_t len)
{
  weftx_netaddr a;
  int fd;
  *done = 0;
  if (weftx_netaddr_parse(&a, addr)) {
    snprintf(why, len, "bad address %s", addr);
    return -1;
  }
  fd = deadline < 0 ? wt_tcp_dial_start(&a, port, src, done) : wt_tcp_dial(&a, port, src, deadline);
  if (fd < 0)
    dial_why(fd, errno, why, len);
  return fd < 0 ? -1 : fd;
}

/* ---- Who holds a port -------------------------------------------------------- */

/* The socket inode listening on TCP \p port (/proc/net/tcp, tcp6), or 0. */
static unsigned long listener_inode(int port)
{
  static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6", NULL};
  for (int i = 0; files[i]; i++) {
    FILE *f = fopen(files[i], "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
      char local[80];
      unsigned st, p;
      unsigned long inode;
      if (sscanf(line, " %*d: %79s %*s %x %*s %*s %*s %*s %*s %lu", local, &st, &inode) != 3)
        continue;
      const char *colon = strrchr(local, ':');
      if (colon && sscanf(colon + 1, "%x", &p) == 1 && (int)p == port && st == 0x0a) {
        fclose(f);
        return inode;
      }
    }
    if (f)
      fclose(f);
  }
  return 0;
}

/* The process with socket \p inode open: 1 with its pid and name, else 0. */
static int inode_owner(unsigned long inode, long *pid, char *comm, size_t len)
{
  char want[64];
  DIR *proc = opendir("/proc");
  struct dirent *d;
  int found = 0;
  snprintf(want, sizeof(want), "socket:[%lu]", inode);
  while (proc && !found && (d = readdir(proc))) {
    char path[300];
    long p;
    if (weftx_parse_long(d->d_name, 1, 1L << 30, &p))
      continue;
    snprintf(path, sizeof(path), "/proc/%s/fd", d->d_name);
    DIR *fds = opendir(path);
    struct dirent *e;
    while (fds && !found && (e = readdir(fds))) {
      char link[600], target[80];
      snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
      ssize_t n = readlink(link, target, sizeof(target) - 1);
      if (n > 0) {
        target[n] = '\0';
        found = !strcmp(target, want);
      }
    }
    if (fds)
      closedir(fds);
    if (found) {
      *pid = p;
      snprintf(path, sizeof(path), "/proc/%ld/comm", p);
      FILE *c = fopen(path, "r");
      if (!c || !fgets(comm, (int)len, c))
        snprintf(comm, len, "?");
      comm[strcspn(comm, "\n")] = '\0';
      if (c)
        fclose(c);
    }
  }
  if (proc)
    closedir(proc);
  return found;
}

/* ---- Ports and addresses ------------------------------------------------------ */

static unsigned long id_hash(const char *id)
{
  unsigned long h = 1469598103934665603UL;
  for (; *id; id++)
    h = (h ^ (unsigned char)*id) * 1099511628211UL;
  return h;
}

/* The ports the rendezvous may be on, in the order the master tries them. */
static int ports(const wk_check_net *a, int *out)
{
  int n = 0;
  if (a->master_port > 0)
    out[n++] = a->master_port;
  for (int k = 0; n < RENDEZVOUS_PORTS + 1 && k < 2 * RENDEZVOUS_PORTS; k++) {
    int p = weftx_port_candidate(id_hash(a->id), k);
    if (p != a->master_port)
      out[n++] = p;
  }
  return n;
}

int wk_check_ifaddr(const weftx_netif *ifs, int nifs, const char *ifname)
{
  int found = -1;
  for (int i = 0; ifname && i < nifs; i++)
    if (!strcmp(ifs[i].name, ifname) &&
        (found < 0 || (ifs[i].family == AF_INET && ifs[found].family != AF_INET)))
      found = i;
  return found;
}

/* This host's address on the job's interface: 0, or -1 when it has none. */
static int job_address(const wk_check_net *a, weftx_netaddr *out)
{
  weftx_netif *ifs = NULL;
  int nifs = 0, i;
  if (!a->ifname || weftx_netif_list(&ifs, &nifs))
    return -1;
  if ((i = wk_check_ifaddr(ifs, nifs, a->ifname)) >= 0) {
    out->family = ifs[i].family;
    memcpy(out->addr, ifs[i].addr, sizeof(out->addr));
  }
  free(ifs);
  return i >= 0 ? 0 : -1;
}

/* ---- The responder: every agent answers the pair tests --------------------------- */

typedef struct responder {
  int lfd, me;
  const char *id;
  int stop[2];
  double deadline;
  pthread_t thread;
} responder;

#define MAX_ANSWERING 256

static void *respond(void *arg)
{
  responder *r = arg;
  conn c[MAX_ANSWERING];
  double since[MAX_ANSWERING];
  int nc = 0;
  for (;;) {
    struct pollfd p[MAX_ANSWERING + 2];
    p[0] = (struct pollfd){r->stop[0], POLLIN, 0};
    p[1] = (struct pollfd){nc < MAX_ANSWERING ? r->lfd : -1, POLLIN, 0};
    for (int i = 0; i < nc; i++)
      p[i + 2] = (struct pollfd){c[i].fd, POLLIN, 0};
    if (weftx_monotonic() >= r->deadline)
      break;
    int n = poll(p, (nfds_t)nc + 2, 200);
    if (n < 0 && errno != EINTR)
      break;
    if (p[0].revents)
      break;
    double t = weftx_monotonic();
    for (int i = 0; i < nc;) {
      char line[256], id[64], what[16];
      long j;
      int done = (p[i + 2].revents && fill(&c[i])) || t - since[i] > PAIR_S;
      if (!done && take_line(&c[i], line, sizeof(line))) {
        if (sscanf(line, TAG " %63s %15s %ld", id, what, &j) == 3 && !strcmp(id, r->id) &&
            !strcmp(what, "PAIR"))
          sendf(c[i].fd, t + 0.5, TAG " %s ME %d\n", r->id, r->me);
        done = 1;
      }
      if (!done) {
        i++;
        continue;
      }
      /* the last one takes its place (its poll entry is not looked at again) */
      close(c[i].fd);
      nc--;
      c[i] = c[nc];
      since[i] = since[nc];
      p[i + 2] = p[nc + 2];
    }
    if (p[1].revents & POLLIN) {
      int fd = wt_tcp_accept(r->lfd);
      if (fd >= 0) {
        c[nc].fd = fd;
        c[nc].len = 0;
        since[nc++] = t;
      }
    }
  }
  for (int i = 0; i < nc; i++)
    close(c[i].fd);
  return NULL;
}

/* ---- The table of hosts, as the master sends it ------------------------------- */

typedef struct peer {
  int idx; /* -1: not registered */
  char addr[64];
  int port;
} peer;

/* ---- The master: the rendezvous ---------------------------------------------- */

typedef struct master {
  const wk_check_net *a;
  int lfd;
  peer *table; /* a->n entries, indexed by host */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int table_ready, self_done, over;
  int stop[2];
  double reg_deadline;
  pthread_t thread;
} master;

typedef struct client {
  conn c;
  int idx;    /* -1 until it registers */
  int ready;  /* its clock is measured: it waits for its list */
  int listed; /* its list was sent */
  int done;
} client;

/* The entries of host \p idx's targets: "PEERS K" then "J ADDR PORT" lines. */
static void send_table(master *m, client *cl)
{
  const wk_check_net *a = m->a;
  int t[WT_CHECK_MAX_TARGETS], k = wt_check_targets(cl->idx, a->n, t, WT_CHECK_MAX_TARGETS);
  double dl = weftx_monotonic() + 1.0;
  if (sendf(cl->c.fd, dl, TAG " %s PEERS %d\n", a->id, k))
    return;
  for (int i = 0; i < k; i++) {
    const peer *p = &m->table[t[i]];
    if (sendf(cl->c.fd, dl, "%d %s %d\n", t[i], p->idx >= 0 ? p->addr : "-",
              p->idx >= 0 ? p->port : 0))
      return;
  }
}

static void on_client_line(master *m, client *cl, const char *line)
{
  const wk_check_net *a = m->a;
  char id[64], what[16], addr[64];
  long idx, port;
  if (sscanf(line, TAG " %63s %15s", id, what) != 2 || strcmp(id, a->id))
    return;
  if (!strcmp(what, "REG") && cl->idx < 0 &&
      sscanf(line, TAG " %*s REG %ld %63s %ld", &idx, addr, &port) == 3 && idx > 0 && idx < a->n) {
    pthread_mutex_lock(&m->mu);
    int late = m->table_ready;
    if (!late) {
      cl->idx = (int)idx;
      m->table[idx].idx = (int)idx;
      snprintf(m->table[idx].addr, sizeof(m->table[idx].addr), "%s", addr);
      m->table[idx].port = (int)port;
    }
    pthread_mutex_unlock(&m->mu);
    sendf(cl->c.fd, weftx_monotonic() + 1, TAG " %s %s\n", a->id, late ? "LATE" : "HI");
  } else if (!strcmp(what, "PING")) {
    sendf(cl->c.fd, weftx_monotonic() + 1, TAG " %s PONG %.6f\n", a->id, now_real(a));
  } else if (!strcmp(what, "READY")) {
    cl->ready = 1;
  } else if (!strcmp(what, "DONE")) {
    cl->done = 1;
  }
}

static void *serve(void *arg)
{
  master *m = arg;
  const wk_check_net *a = m->a;
  int cap = a->n - 1 + MAX_CLIENTS_EXTRA, nc = 0, registered = 0, sent = 0;
  client *cl = calloc((size_t)cap + 1, sizeof(*cl));
  struct pollfd *p = calloc((size_t)cap + 2, sizeof(*p));
  if (!cl || !p)
    goto out;
  while (weftx_monotonic() < a->deadline) {
    double t = weftx_monotonic();
    if (!sent && (registered == a->n - 1 || t >= m->reg_deadline)) {
      pthread_mutex_lock(&m->mu);
      m->table_ready = 1;
      pthread_cond_broadcast(&m->cv);
      pthread_mutex_unlock(&m->mu);
      sent = 1;
    }
    /* each list goes once the table is complete and its agent has measured its clock */
    for (int i = 0; sent && i < nc; i++)
      if (cl[i].idx >= 0 && cl[i].ready && !cl[i].listed) {
        send_table(m, &cl[i]);
        cl[i].listed = 1;
      }
    int all = sent;
    for (int i = 0; i < nc && all; i++)
      all = cl[i].idx < 0 || cl[i].done;
    pthread_mutex_lock(&m->mu);
    all = all && m->self_done;
    pthread_mutex_unlock(&m->mu);
    if (all)
      break;
    p[0] = (struct pollfd){m->stop[0], POLLIN, 0};
    p[1] = (struct pollfd){nc < cap ? m->lfd : -1, POLLIN, 0};
    for (int i = 0; i < nc; i++)
      p[i + 2] = (struct pollfd){cl[i].c.fd, POLLIN, 0};
    int n = poll(p, (nfds_t)nc + 2, 100);
    if (n < 0 && errno != EINTR)
      break;
    if (p[0].revents) {
      char b;
      if (read(m->stop[0], &b, 1) < 0)
        break;
      continue; /* self_done changed */
    }
    for (int i = 0; i < nc;) {
      char line[512];
      int gone = p[i + 2].revents && fill(&cl[i].c);
      while (take_line(&cl[i].c, line, sizeof(line))) {
        int was = cl[i].idx;
        on_client_line(m, &cl[i], line);
        registered += was < 0 && cl[i].idx >= 0;
      }
      /* a client that went away counts as done (its own records say why); one that
       * never registered is forgotten */
      if (gone)
        cl[i].done = 1;
      if (!gone || cl[i].idx >= 0) {
        i++;
        continue;
      }
      close(cl[i].c.fd);
      nc--;
      cl[i] = cl[nc];
      p[i + 2] = p[nc + 2];
    }
    if (p[1].revents & POLLIN) {
      int fd = wt_tcp_accept(m->lfd);
      if (fd >= 0) {
        memset(&cl[nc], 0, sizeof(cl[nc]));
        cl[nc].c.fd = fd;
        cl[nc++].idx = -1;
      }
    }
  }
  for (int i = 0; i < nc; i++) {
    if (cl[i].idx >= 0)
      sendf(cl[i].c.fd, weftx_monotonic() + 0.2, TAG " %s BYE\n", a->id);
    close(cl[i].c.fd);
  }
out:
  pthread_mutex_lock(&m->mu);
  m->table_ready = 1;
  m->over = 1;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  free(cl);
  free(p);
  return NULL;
}

/* The master binds MASTER_PORT (its record says free or who holds it), else the
 * next rendezvous port; the socket, or -1. */
static int master_listen(const wk_check_net *a, wk_facts *f)
{
  int list[RENDEZVOUS_PORTS + 1], np = ports(a, list), got = 0;
  weftx_netaddr any, m;
  /* every address of MASTER_ADDR's family */
  memset(&any, 0, sizeof(any));
  any.family = a->master_addr && weftx_netaddr_parse(&m, a->master_addr) == 0 ? m.family : AF_INET;
  for (int i = 0; i < np; i++) {
    int fd = wt_tcp_listen(&any, list[i], LISTEN_BACKLOG, &got);
    int e = errno;
    if (i == 0 && a->master_port > 0) {
      long pid;
      char comm[64];
      unsigned long ino;
      if (fd >= 0)
        wk_fact(f, WT_CK_PORT, "%d free", a->master_port);
      else if (e == EADDRINUSE && (ino = listener_inode(a->master_port)) &&
               inode_owner(ino, &pid, comm, sizeof(comm)))
        wk_fact(f, WT_CK_PORT, "%d taken %ld %s", a->master_port, pid, comm);
      else
        wk_fact(f, WT_CK_PORT, "%d taken ? %s", a->master_port, strerror(e));
    }
    if (fd >= 0)
      return fd;
  }
  return -1;
}

/* ---- The pair tests ----------------------------------------------------------- */

typedef struct probe {
  int j;
  char addr[64];
  int port;
  int fd, state; /* 0 connecting, 1 waiting for the answer, 2 ok, 3 failed */
  double t0, ms;
  conn c;
  char why[120];
} probe;

static void pairs(const wk_check_net *a, const peer *targets, int k, const weftx_netaddr *src,
                  wk_facts *f)
{
  probe *p = calloc((size_t)k + 1, sizeof(*p));
  struct pollfd *pf = calloc((size_t)k + 1, sizeof(*pf));
  double deadline = weftx_monotonic() + PAIR_S;
  if (deadline > a->deadline)
    deadline = a->deadline;
  if (!p || !pf) {
    free(p);
    free(pf);
    return;
  }
  for (int i = 0; i < k; i++) {
    int done;
    p[i].j = targets[i].idx;
    snprintf(p[i].addr, sizeof(p[i].addr), "%s", targets[i].addr);
    p[i].port = targets[i].port;
    p[i].t0 = weftx_monotonic();
    p[i].fd = dial(p[i].addr, p[i].port, src, -1, &done, p[i].why, sizeof(p[i].why));
    p[i].c.fd = p[i].fd;
    if (p[i].fd < 0)
      p[i].state = 3;
    else if (done)
      p[i].state = sendf(p[i].fd, deadline, TAG " %s PAIR %d\n", a->id, a->me) ? 3 : 1;
  }
  for (;;) {
    int open = 0;
    for (int i = 0; i < k; i++) {
      pf[i] = (struct pollfd){p[i].state < 2 ? p[i].fd : -1, p[i].state == 0 ? POLLOUT : POLLIN, 0};
      open += p[i].state < 2;
    }
    if (!open || weftx_monotonic() >= deadline)
      break;
    if (poll(pf, (nfds_t)k, ms_until(deadline)) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < k; i++) {
      char line[256], id[64];
      int who;
      if (!pf[i].revents)
        continue;
      if (p[i].state == 0) {
        int st = wt_tcp_dial_state(p[i].fd);
        if (st < 0) {
          errno_why(errno, p[i].why, sizeof(p[i].why));
          p[i].state = 3;
        } else if (st > 0)
          p[i].state = sendf(p[i].fd, deadline, TAG " %s PAIR %d\n", a->id, a->me) ? 3 : 1;
        if (p[i].state == 3 && !p[i].why[0])
          snprintf(p[i].why, sizeof(p[i].why), "cannot send");
        continue;
      }
      int gone = fill(&p[i].c);
      if (take_line(&p[i].c, line, sizeof(line))) {
        if (sscanf(line, TAG " %63s ME %d", id, &who) == 2 && !strcmp(id, a->id) && who == p[i].j) {
          p[i].state = 2;
          p[i].ms = (weftx_monotonic() - p[i].t0) * 1000;
        } else {
          p[i].state = 3;
          snprintf(p[i].why, sizeof(p[i].why), "another program answers on port %d", p[i].port);
        }
      } else if (gone) {
        p[i].state = 3;
        snprintf(p[i].why, sizeof(p[i].why), "connection closed without an answer");
      }
    }
  }
  for (int i = 0; i < k; i++) {
    if (p[i].state == 2)
      wk_fact(f, WT_CK_PAIR, "%d ok %.2f", p[i].j, p[i].ms);
    else if (p[i].state == 3)
      wk_fact(f, WT_CK_PAIR, "%d fail %s", p[i].j, p[i].why);
    else
      wk_fact(f, WT_CK_PAIR, "%d fail no answer within %.0f s", p[i].j, PAIR_S);
    if (p[i].fd >= 0)
      close(p[i].fd);
  }
  free(p);
  free(pf);
}

/* ---- One agent's part ----------------------------------------------------------- */

/* A client: register with the master, measure the clock, get the targets. The
 * connection, or -1 (the record says why). */
static int join(const wk_check_net *a, const weftx_netaddr *src, int my_port, peer **targets,
                int *k, wk_facts *f)
{
  int list[RENDEZVOUS_PORTS + 1], np = ports(a, list), stranger[RENDEZVOUS_PORTS + 1] = {0};
  double reg_end = weftx_monotonic() + REG_S, t_hi = 0;
  char why[160] = "no answer", line[256];
  conn c = {-1, "", 0};
  if (reg_end > a->deadline - PAIR_S - 1)
    reg_end = a->deadline - PAIR_S - 1;
  while (c.fd < 0 && weftx_monotonic() < reg_end) {
    for (int i = 0; i < np && c.fd < 0; i++) {
      double t = weftx_monotonic(), dl = t + HELLO_S < reg_end ? t + HELLO_S : reg_end;
      char w[120];
      if (stranger[i])
        continue;
      int done, fd = dial(a->master_addr, list[i], src, dl, &done, w, sizeof(w));
      if (fd < 0) {
        if (i == 0 || strcmp(w, "connection refused"))
          snprintf(why, sizeof(why), "port %d: %s", list[i], w);
        continue;
      }
      /* the address the master sees us from, when we have none on the job's interface */
      char me[64] = "";
      struct sockaddr_storage ss;
      socklen_t sl = sizeof(ss);
      if (src)
        weftx_netaddr_format(src->family, src->addr, me, sizeof(me));
      else if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        inet_ntop(ss.ss_family,
                  ss.ss_family == AF_INET6
                    ? (void *)&((struct sockaddr_in6 *)(void *)&ss)->sin6_addr
                    : (void *)&((struct sockaddr_in *)(void *)&ss)->sin_addr,
                  me, sizeof(me));
      conn try = {fd, "", 0};
      char id[64] = "", what[16] = "";
      int got = !sendf(fd, dl, TAG " %s REG %d %s %d\n", a->id, a->me, me[0] ? me : "-", my_port) &&
                read_line(&try, line, sizeof(line), dl) == 1;
      if (got && sscanf(line, TAG " %63s %15s", id, what) == 2 && !strcmp(id, a->id) &&
          !strcmp(what, "HI")) {
        c = try;
        t_hi = weftx_monotonic() - t;
      } else if (got && !strcmp(id, a->id)) {
        snprintf(why, sizeof(why), "registered too late (after %.0f s)", REG_S);
        close(fd);
        reg_end = 0;
      } else {
        stranger[i] = 1;
        snprintf(why, sizeof(why), "port %d: another program answers there", list[i]);
        close(fd);
      }
    }
    if (c.fd < 0 && weftx_monotonic() < reg_end)
      usleep(100000);
  }
  if (c.fd < 0) {
    wk_fact(f, WT_CK_MASTER, "fail %s", why);
    return -1;
  }
  /* the clock: the round trip with the shortest time bounds the error best */
  double best = -1, off = 0;
  for (int i = 0; i < PINGS; i++) {
    double t1 = now_real(a), t2, dl = weftx_monotonic() + 1;
    char id[64];
    if (sendf(c.fd, dl, TAG " %s PING %.6f\n", a->id, t1) ||
        read_line(&c, line, sizeof(line), dl) != 1 ||
        sscanf(line, TAG " %63s PONG %lf", id, &t2) != 2)
      break;
    double t3 = now_real(a);
    if (best < 0 || t3 - t1 < best) {
      best = t3 - t1;
      off = t1 + (t3 - t1) / 2 - t2;
    }
  }
  if (best >= 0)
    wk_fact(f, WT_CK_CLOCK, "%.6f %.6f", off, best / 2);
  /* the targets */
  if (sendf(c.fd, weftx_monotonic() + 1, TAG " %s READY\n", a->id)) {
    wk_fact(f, WT_CK_MASTER, "fail the master went away");
    close(c.fd);
    return -1;
  }
  double dl = a->deadline - PAIR_S - 0.5;
  char id[64];
  int want = -1;
  if (read_line(&c, line, sizeof(line), dl) != 1 ||
      sscanf(line, TAG " %63s PEERS %d", id, &want) != 2 || want < 0 ||
      want > WT_CHECK_MAX_TARGETS) {
    wk_fact(f, WT_CK_MASTER, "fail the master sent no list of hosts to test");
    close(c.fd);
    return -1;
  }
  wk_fact(f, WT_CK_MASTER, "ok %.2f", t_hi * 1000);
  *targets = calloc((size_t)want + 1, sizeof(**targets));
  *k = 0;
  for (int i = 0; *targets && i < want; i++) {
    peer *p = &(*targets)[*k];
    if (read_line(&c, line, sizeof(line), dl) != 1 ||
        sscanf(line, "%d %63s %d", &p->idx, p->addr, &p->port) != 3)
      break;
    if (!strcmp(p->addr, "-"))
      wk_fact(f, WT_CK_PAIR, "%d skip not registered with the master", p->idx);
    else
      (*k)++;
  }
  return c.fd;
}

void wk_check_net_run(const wk_check_net *a, wk_facts *f)
{
  weftx_netaddr src, *srcp = job_address(a, &src) == 0 ? &src : NULL;
  responder r = {-1, a->me, a->id, {-1, -1}, a->deadline, 0};
  int rport = 0, responding = 0;
  peer *targets = NULL;
  int k = 0;

  if (a->n < 2 || !a->master_addr) {
    /* one host: its MASTER_PORT alone */
    if (a->me == 0 && a->master_port > 0) {
      int fd = master_listen(a, f);
      if (fd >= 0)
        close(fd);
    }
    if (a->me == 0)
      wk_fact(f, WT_CK_CLOCK, "0 0");
    return;
  }
  /* this host's listener for the pair tests, on the job's interface */
  r.lfd = wt_tcp_listen(srcp, 0, LISTEN_BACKLOG, &rport);
  if (r.lfd < 0 || pipe2(r.stop, O_CLOEXEC) || pthread_create(&r.thread, NULL, respond, &r)) {
    wk_fact(f, WT_CK_MASTER, "fail cannot listen for the pair tests: %s", strerror(errno));
    if (r.lfd >= 0)
      close(r.lfd);
    return;
  }
  responding = 1;

  if (a->me == 0) {
    master m;
    memset(&m, 0, sizeof(m));
    m.a = a;
    m.reg_deadline = weftx_monotonic() + REG_S;
    if (m.reg_deadline > a->deadline - PAIR_S - 1)
      m.reg_deadline = a->deadline - PAIR_S - 1;
    wt_tcp_room(a->n + MAX_CLIENTS_EXTRA + 64);
    m.table = calloc((size_t)a->n, sizeof(*m.table));
    m.lfd = m.table ? master_listen(a, f) : -1;
    pthread_mutex_init(&m.mu, NULL);
    pthread_cond_init(&m.cv, NULL);
    wk_fact(f, WT_CK_CLOCK, "0 0");
    for (int i = 0; m.table && i < a->n; i++)
      m.table[i].idx = -1;
    if (m.table) {
      m.table[0].idx = 0;
      m.table[0].port = rport;
      if (srcp)
        weftx_netaddr_format(srcp->family, srcp->addr, m.table[0].addr, sizeof(m.table[0].addr));
      else
        snprintf(m.table[0].addr, sizeof(m.table[0].addr), "%s", a->master_addr);
    }
    m.stop[0] = m.stop[1] = -1;
    if (m.lfd < 0 || pipe2(m.stop, O_CLOEXEC) || pthread_create(&m.thread, NULL, serve, &m)) {
      wk_fact(f, WT_CK_MASTER, "fail cannot run the rendezvous: %s", strerror(errno));
    } else {
      pthread_mutex_lock(&m.mu);
      while (!m.table_ready)
        pthread_cond_wait(&m.cv, &m.mu);
      pthread_mutex_unlock(&m.mu);
      int t[WT_CHECK_MAX_TARGETS], nt = wt_check_targets(0, a->n, t, WT_CHECK_MAX_TARGETS);
      if ((targets = calloc((size_t)nt + 1, sizeof(*targets)))) {
        pthread_mutex_lock(&m.mu);
        for (int i = 0; i < nt; i++)
          if (m.table[t[i]].idx >= 0)
            targets[k++] = m.table[t[i]];
          else
            wk_fact(f, WT_CK_PAIR, "%d skip not registered with the master", t[i]);
        pthread_mutex_unlock(&m.mu);
        pairs(a, targets, k, srcp, f);
      }
      pthread_mutex_lock(&m.mu);
      m.self_done = 1;
      pthread_mutex_unlock(&m.mu);
      if (write(m.stop[1], "", 1) < 0) {
        /* the server notices self_done within its poll period anyway */
      }
      pthread_join(m.thread, NULL);
    }
    if (m.lfd >= 0)
      close(m.lfd);
    for (int i = 0; i < 2; i++)
      if (m.stop[i] >= 0)
        close(m.stop[i]);
    free(m.table);
  } else {
    int fd = join(a, srcp, rport, &targets, &k, f);
    if (fd >= 0) {
      char line[128];
      conn c = {fd, "", 0};
      pairs(a, targets, k, srcp, f);
      /* done; wait until everyone is (the master's BYE), so that this host keeps
       * answering the others' tests until then */
      if (!sendf(fd, weftx_monotonic() + 1, TAG " %s DONE\n", a->id))
        read_line(&c, line, sizeof(line), a->deadline);
      close(fd);
    }
  }
  free(targets);
  if (responding) {
    if (write(r.stop[1], "", 1) < 0) {
      /* the responder ends at its deadline anyway */
    }
    pthread_join(r.thread, NULL);
    close(r.stop[0]);
    close(r.stop[1]);
    close(r.lfd);
  }
}
