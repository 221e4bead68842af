/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wires of the NCCL stand-in: Unix stream sockets in the file system (so
 * that ranks in different network namespaces of one machine, as on the
 * virtual cluster, still meet), a bootstrap root per unique id, a full mesh
 * per communicator, and one progress thread per communicator that reads every
 * message as it comes (so that a writer never waits for a reader that is
 * busy elsewhere) and notes a peer's abort, finalisation or disappearance.
 *
 * A peer that disappears (its connection closes without a finalisation or an
 * abort) is an asynchronous error only over a network transport, where NCCL's
 * proxy thread progresses the connection (proxy.cc progressOps, which stores
 * the error of transport/net_socket.cc ncclNetSocketTest in
 * proxyState->asyncResult; misc/socket.cc socketProgress says "Connection
 * closed by remote peer"); and only once an operation uses it, as the proxy
 * touches a connection only for a posted operation. Over P2P and SHM
 * (transport/p2p.cc, shm.cc) the kernels poll memory that nobody writes any
 * more: nothing notices, and an operation that needs the dead peer waits
 * until this rank aborts.
 */
#define _GNU_SOURCE 1 /* accept4, pipe2 */
#include "nccl-standin.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MSG_MAGIC 0x57534d47u   /* "WSMG" */
#define HELLO_MAGIC 0x5753484cu /* "WSHL" */

static unsigned long counter;

enum { TRANSPORT_AUTO, TRANSPORT_NET, TRANSPORT_P2P };
static pthread_once_t transport_once = PTHREAD_ONCE_INIT;
static int transport_mode;

static void parse_transport(void)
{
  const char *s = getenv("WEFT_STANDIN_NCCL_TRANSPORT");

  if (!s || !*s || !strcmp(s, "auto"))
    transport_mode = TRANSPORT_AUTO;
  else if (!strcmp(s, "net"))
    transport_mode = TRANSPORT_NET;
  else if (!strcmp(s, "p2p"))
    transport_mode = TRANSPORT_P2P;
  else {
    fprintf(stderr, "weft-standin: WEFT_STANDIN_NCCL_TRANSPORT=%s: use auto, net or p2p\n", s);
    exit(2);
  }
}

/* NCCL_P2P_DISABLE=1 (graph/paths.cc ncclGetLevel) and NCCL_SHM_DISABLE=1
 * (transport/shm.cc) together leave ranks of one host the network. */
static int env_one(const char *name)
{
  const char *s = getenv(name);

  return s && *s && strtol(s, NULL, 0) == 1;
}

/* Whether two ranks talk over a network transport: by host (auto), unless
 * WEFT_STANDIN_NCCL_TRANSPORT says. */
static int pair_is_net(const char *a, const char *b)
{
  pthread_once(&transport_once, parse_transport);
  if (transport_mode != TRANSPORT_AUTO)
    return transport_mode == TRANSPORT_NET;
  return strcmp(a, b) != 0 || (env_one("NCCL_P2P_DISABLE") && env_one("NCCL_SHM_DISABLE"));
}

void wsn_hostid(char *buf, size_t len)
{
  const char *h = getenv("NCCL_HOSTID");

  if (h && *h) {
    snprintf(buf, len, "%s", h);
    return;
  }
  if (gethostname(buf, len) != 0)
    snprintf(buf, len, "?");
  buf[len - 1] = '\0';
}

static int fill_addr(struct sockaddr_un *a, const char *path)
{
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(a->sun_path))
    return -1;
  memcpy(a->sun_path, path, strlen(path) + 1);
  return 0;
}

int wsn_listen(char *path)
{
  const char *dir = getenv("TMPDIR");
  struct sockaddr_un a;
  unsigned long n;
  int fd;

  if (!dir || !*dir || strlen(dir) > 60)
    dir = "/tmp";
  wsi_lock();
  n = ++counter;
  wsi_unlock();
  snprintf(path, WSN_PATH, "%s/weft-standin-%d-%lu.sock", dir, (int)getpid(), n);
  if (fill_addr(&a, path) != 0)
    return -1;
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  unlink(path);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int connect_to(const char *path)
{
  struct sockaddr_un a;
  int fd, tries;

  if (fill_addr(&a, path) != 0)
    return -1;
  for (tries = 0; tries < 50; tries++) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
      return fd;
    close(fd);
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN)
      return -1;
    usleep(20000);
  }
  return -1;
}

/* All n bytes, written (out) or read; 0, or -1 when the peer is gone. */
static int move_all(int fd, void *buf, size_t n, int out)
{
  char *p = buf;

  while (n > 0) {
    ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : read(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
  return move_all(fd, (void *)(uintptr_t)buf, n, 1);
}

static int read_all(int fd, void *buf, size_t n) { return move_all(fd, buf, n, 0); }

/* Wait until fd is readable, or the communicator is aborted: 1, 0. */
static int wait_readable(struct ncclComm *c, int fd)
{
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int aborted;
    wsi_lock();
    aborted = c ? wsn_aborted(c) : 0;
    wsi_unlock();
    if (aborted)
      return 0;
    if (poll(&p, 1, 100) > 0)
      return 1;
  }
}

/* ---- the bootstrap root of one unique id ---- */

struct root {
  int fd;
  char path[WSN_PATH];
};

static void *root_run(void *arg)
{
  struct root *r = arg;
  struct wsn_hello *table = NULL;
  int *fds = NULL, n = -1, got = 0, i, bad = 0;

  while (n < 0 || got < n) {
    struct wsn_hello h;
    int fd = accept(r->fd, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (read_all(fd, &h, sizeof(h)) != 0 || h.magic != HELLO_MAGIC) {
      close(fd);
      continue;
    }
    if (n < 0) {
      n = h.nranks;
      if (n < 1 || n > (1 << 20))
        break;
      table = calloc((size_t)n, sizeof(*table));
      fds = malloc((size_t)n * sizeof(*fds));
      if (!table || !fds)
        break;
      for (i = 0; i < n; i++)
        fds[i] = -1;
    }
    if (h.nranks != n || h.rank < 0 || h.rank >= n || fds[h.rank] >= 0) {
      bad = 1;
      h.error = 1;
    }
    if (h.rank >= 0 && h.rank < n && fds[h.rank] < 0) {
      table[h.rank] = h;
      fds[h.rank] = fd;
      got++;
    } else {
      close(fd);
    }
    if (bad)
      break;
  }
  for (i = 0; table && fds && i < n; i++)
    if (fds[i] >= 0) {
      table[i].error = bad;
      if (write_all(fds[i], table, (size_t)n * sizeof(*table)) != 0) {
        /* that rank is gone; the others go on */
      }
      close(fds[i]);
    }
  close(r->fd);
  unlink(r->path);
  free(table);
  free(fds);
  free(r);
  return NULL;
}

int wsn_root_start(char *path)
{
  struct root *r = calloc(1, sizeof(*r));
  pthread_attr_t attr;
  pthread_t t;

  if (!r)
    return -1;
  r->fd = wsn_listen(r->path);
  if (r->fd < 0) {
    free(r);
    return -1;
  }
  memcpy(path, r->path, WSN_PATH);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, root_run, r) != 0) {
    close(r->fd);
    unlink(r->path);
    free(r);
    pthread_attr_destroy(&attr);
    return -1;
  }
  pthread_attr_destroy(&attr);
  return 0;
}

ncclResult_t wsn_root_join(struct ncclComm *c, const char *path, const struct wsn_hello *me,
                           struct wsn_hello *table)
{
  struct wsn_hello h = *me;
  int fd = connect_to(path), i;

  if (fd < 0) {
    snprintf(c->why, sizeof(c->why), "bootstrap: cannot reach the root at %s: %s", path,
             strerror(errno));
    return ncclSystemError;
  }
  h.magic = HELLO_MAGIC;
  if (write_all(fd, &h, sizeof(h)) != 0 || !wait_readable(c, fd) ||
      read_all(fd, table, (size_t)me->nranks * sizeof(*table)) != 0) {
    close(fd);
    snprintf(c->why, sizeof(c->why),
             "bootstrap: the root at %s did not answer (aborted, or "
             "a rank never came)",
             path);
    return ncclSystemError;
  }
  close(fd);
  for (i = 0; i < me->nranks; i++)
    if (table[i].error || table[i].nranks != me->nranks) {
      snprintf(c->why, sizeof(c->why),
               "bootstrap: ranks disagree on the number of ranks or "
               "two claim one rank");
      return ncclInvalidUsage;
    }
  return ncclSuccess;
}

/* ---- the mesh and its progress thread ---- */

static void deliver(struct ncclComm *c, int j, struct wsn_msg *m)
{
  struct wsn_peer *p = &c->peers[j];

  if (m->h.kind == WSN_ABORT) {
    p->aborted = 1;
    if (c->peer_aborted < 0)
      c->peer_aborted = j;
    wsn_msg_free(m);
  } else if (m->h.kind == WSN_FIN) {
    p->fin = 1;
    wsn_msg_free(m);
  } else {
    if (p->tail)
      p->tail->next = m;
    else
      p->head = m;
    p->tail = m;
  }
}

int wsn_aborted(const struct ncclComm *c)
{
  return c->local_abort || (c->abort_with && c->abort_with->local_abort);
}

void wsn_remote_error(struct ncclComm *c, int peer)
{
  if (c->error != ncclSuccess || c->local_abort)
    return;
  c->error = ncclRemoteError;
  snprintf(c->why, sizeof(c->why),
           "socketProgress: Connection closed by remote peer: rank %d (pid %d, host %.40s) "
           "of communicator %.40s, which neither finalised nor aborted (the process exited or "
           "the network failed)",
           peer, c->peers[peer].pid, c->peers[peer].hostid, c->name);
  wsn_last_error("%s", c->why);
  wsi_log("nccl comm %s rank %d remote error: rank %d is gone", c->name, c->rank, peer);
}

/* Peer j's connection closed (lock held). A peer that neither finalised nor
 * aborted is dead; over a network transport an operation in flight sees it
 * now, a later one when it starts (wsn_remote_error); over P2P and SHM
 * nothing does. */
static void peer_closed(struct ncclComm *c, int j)
{
  struct wsn_peer *p = &c->peers[j];

  p->closed = 1;
  if (p->fin || p->aborted)
    return;
  p->dead = 1;
  if (p->net && c->issued > c->done)
    wsn_remote_error(c, j);
}

static void *progress_run(void *arg)
{
  struct ncclComm *c = arg;
  struct pollfd *fds = calloc((size_t)c->nranks + 1, sizeof(*fds));
  int *who = calloc((size_t)c->nranks + 1, sizeof(*who));

  if (!fds || !who)
    wsi_violation("out of memory", "the NCCL stand-in's progress thread");
  for (;;) {
    int n = 0, i, k, stop;
    fds[n].fd = c->wake[0];
    fds[n].events = POLLIN;
    who[n++] = -1;
    wsi_lock();
    for (i = 0; i < c->nranks; i++)
      if (i != c->rank && !c->peers[i].closed) {
        fds[n].fd = c->peers[i].fd;
        fds[n].events = POLLIN;
        who[n++] = i;
      }
    stop = !c->progress_on;
    c->iter++;
    wsi_broadcast();
    wsi_unlock();
    if (stop)
      break;
    k = poll(fds, (nfds_t)n, -1);
    if (k < 0 && errno != EINTR)
      break;
    for (i = 0; k > 0 && i < n; i++) {
      struct wsn_msg *m;
      int j = who[i];
      if (!fds[i].revents)
        continue;
      if (j < 0) {
        char buf[64];
        if (read(c->wake[0], buf, sizeof(buf)) < 0) {
          /* a wake-up is only a wake-up */
        }
        continue;
      }
      m = calloc(1, sizeof(*m));
      if (!m)
        wsi_violation("out of memory", "a message of the NCCL stand-in");
      if (read_all(c->peers[j].fd, &m->h, sizeof(m->h)) != 0 || m->h.magic != MSG_MAGIC ||
          (m->h.bytes && !(m->data = malloc(m->h.bytes))) ||
          (m->h.bytes && read_all(c->peers[j].fd, m->data, m->h.bytes) != 0)) {
        wsn_msg_free(m);
        wsi_lock();
        peer_closed(c, j);
        wsi_broadcast();
        wsi_unlock();
        continue;
      }
      wsi_lock();
      deliver(c, j, m);
      wsi_broadcast();
      wsi_unlock();
    }
  }
  free(fds);
  free(who);
  return NULL;
}

ncclResult_t wsn_mesh(struct ncclComm *c, const struct wsn_hello *table)
{
  int i;

  pthread_once(&transport_once, parse_transport);
  if (c->nranks < 1)
    return ncclInternalError;
  for (i = 0; i < c->nranks; i++)
    for (int j = i + 1; j < c->nranks; j++)
      if (table[i].physical == table[j].physical && !strcmp(table[i].hostid, table[j].hostid))
        wsi_violation("duplicate GPU in one communicator",
                      "ranks %d and %d of communicator %s are both on CUDA device (bus id "
                      "0000:%02x:00.0) of host %s: NCCL refuses two ranks of one communicator on "
                      "one GPU (give each rank its own GPU, or, for tests on one GPU, distinct "
                      "NCCL_HOSTID values)",
                      i, j, c->name, 0x10 + table[i].physical, table[i].hostid);
  c->peers = calloc((size_t)c->nranks, sizeof(*c->peers));
  c->p2p_send = calloc((size_t)c->nranks, sizeof(*c->p2p_send));
  c->p2p_recv = calloc((size_t)c->nranks, sizeof(*c->p2p_recv));
  if (!c->peers || !c->p2p_send || !c->p2p_recv) {
    snprintf(c->why, sizeof(c->why), "out of memory");
    return ncclSystemError;
  }
  for (i = 0; i < c->nranks; i++) {
    c->peers[i].fd = -1;
    c->peers[i].pid = table[i].pid;
    snprintf(c->peers[i].hostid, sizeof(c->peers[i].hostid), "%s", table[i].hostid);
    c->peers[i].net = i != c->rank && pair_is_net(table[c->rank].hostid, table[i].hostid);
    pthread_mutex_init(&c->peers[i].wmu, NULL);
  }
  /* Lower ranks listen, higher ones connect and say who they are. */
  for (i = 0; i < c->rank; i++) {
    int32_t me = c->rank;
    int fd = connect_to(table[i].path);
    if (fd < 0 || write_all(fd, &me, sizeof(me)) != 0) {
      snprintf(c->why, sizeof(c->why), "cannot connect to rank %d of %s", i, c->name);
      return ncclSystemError;
    }
    c->peers[i].fd = fd;
  }
  for (i = c->rank + 1; i < c->nranks; i++) {
    int32_t who = -1;
    int fd;
    if (!wait_readable(c, c->listen_fd)) {
      snprintf(c->why, sizeof(c->why), "aborted while connecting");
      return ncclSystemError;
    }
    fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0 || read_all(fd, &who, sizeof(who)) != 0 || who <= c->rank || who >= c->nranks ||
        c->peers[who].fd >= 0) {
      snprintf(c->why, sizeof(c->why), "a stray connection while setting up %s", c->name);
      return ncclSystemError;
    }
    c->peers[who].fd = fd;
  }
  close(c->listen_fd);
  unlink(c->listen_path);
  c->listen_fd = -1;
  if (pipe2(c->wake, O_CLOEXEC) != 0) {
    snprintf(c->why, sizeof(c->why), "pipe: %s", strerror(errno));
    return ncclSystemError;
  }
  wsi_lock();
  c->progress_on = 1;
  wsi_unlock();
  if (pthread_create(&c->progress, NULL, progress_run, c) != 0) {
    wsi_lock();
    c->progress_on = 0;
    wsi_unlock();
    snprintf(c->why, sizeof(c->why), "cannot start a progress thread");
    return ncclSystemError;
  }
  return ncclSuccess;
}

/* A message to this rank itself lands in its own queue (self send/recv, a
 * one-rank communicator). */
static void send_self(struct ncclComm *c, const struct wsn_hdr *h, const void *data, size_t bytes)
{
  struct wsn_msg *m = calloc(1, sizeof(*m));

  if (!m || (bytes && !(m->data = malloc(bytes))))
    wsi_violation("out of memory", "a message of the NCCL stand-in");
  m->h = *h;
  if (bytes)
    memcpy(m->data, data, bytes);
  wsi_lock();
  deliver(c, c->rank, m);
  wsi_broadcast();
  wsi_unlock();
}

void wsn_send(struct ncclComm *c, int peer, struct wsn_hdr *h, const void *data, size_t bytes)
{
  struct wsn_peer *p = &c->peers[peer];

  h->magic = MSG_MAGIC;
  h->from = c->rank;
  h->bytes = bytes;
  if (peer == c->rank) {
    send_self(c, h, data, bytes);
    return;
  }
  pthread_mutex_lock(&p->wmu);
  /* A peer that is gone is noticed by the progress thread; nothing here. */
  if (p->fd >= 0 && write_all(p->fd, h, sizeof(*h)) == 0 && bytes)
    write_all(p->fd, data, bytes);
  pthread_mutex_unlock(&p->wmu);
}

struct wsn_msg *wsn_try_take(struct ncclComm *c, int peer, int kind, uint64_t seq)
{
  struct wsn_peer *p = &c->peers[peer];
  struct wsn_msg **pp, *m;

  for (pp = &p->head; *pp; pp = &(*pp)->next)
    if ((*pp)->h.kind == (uint32_t)kind && (*pp)->h.seq == seq) {
      m = *pp;
      *pp = m->next;
      if (p->tail == m) {
        struct wsn_msg *t = p->head;
        while (t && t->next)
          t = t->next;
        p->tail = t;
      }
      m->next = NULL;
      return m;
    }
  return NULL;
}

struct wsn_msg *wsn_take_bootstrap(struct ncclComm *c, int peer, int kind, uint64_t seq,
                                   int *closed)
{
  struct wsn_msg *m;

  *closed = 0;
  wsi_lock();
  while (!(m = wsn_try_take(c, peer, kind, seq)) && !wsn_aborted(c)) {
    if (c->peers[peer].closed) {
      *closed = 1;
      break;
    }
    wsi_wait();
  }
  wsi_unlock();
  return m;
}

void wsn_msg_free(struct wsn_msg *m)
{
  if (!m)
    return;
  free(m->data);
  free(m);
}

void wsn_flush(struct ncclComm *c)
{
  unsigned long long target;

  wsi_lock();
  if (!c->progress_on) {
    wsi_unlock();
    return;
  }
  target = c->iter + 1;
  wsi_unlock();
  if (write(c->wake[1], "f", 1) < 0) {
    /* the thread runs anyway */
  }
  wsi_lock();
  while (c->progress_on && c->iter < target)
    wsi_wait();
  wsi_unlock();
}

void wsn_close(struct ncclComm *c, int abort)
{
  int i, on;

  wsi_lock();
  on = c->progress_on;
  c->progress_on = 0;
  wsi_broadcast();
  wsi_unlock();
  for (i = 0; c->peers && i < c->nranks; i++)
    if (c->peers[i].fd >= 0)
      shutdown(c->peers[i].fd, SHUT_RDWR);
  if (on) {
    if (write(c->wake[1], "s", 1) < 0) {
      /* the shut sockets wake it too */
    }
    pthread_join(c->progress, NULL);
    close(c->wake[0]);
    close(c->wake[1]);
  }
  /* After an abort a stream worker may still be writing: keep its fd
   * number from being reused by leaving the (shut) socket open. */
  for (i = 0; !abort && c->peers && i < c->nranks; i++)
    if (c->peers[i].fd >= 0) {
      close(c->peers[i].fd);
      c->peers[i].fd = -1;
    }
  if (c->listen_fd >= 0) {
    close(c->listen_fd);
    unlink(c->listen_path);
    c->listen_fd = -1;
  }
}
