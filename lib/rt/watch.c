/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In which weft call the rank is, and the deadlines nobody has to ask for.
 * The call page (weftx/page.h) is mapped from WEFT_RANK_PAGE when weftrun's
 * agent made one, else kept in this process; weft_init, weft_finalize and
 * every collective store their call in it on entry and exit: a few stores
 * and a vDSO clock read, no system call, no lock. A watchdog thread (no MPI
 * calls) reads the same page every half second: a rank still in weft_init
 * after WEFT_INIT_TIMEOUT (default 300 s), or in one collective longer than
 * the collective watchdog (WEFT_COLL_WATCHDOG, default 600 s; unless
 * WEFT_COLL_TIMEOUT is set: then the calls return WEFT_ETIMEDOUT themselves,
 * deadline.c, and WEFT_COLL_TIMEOUT=0 turns both off), is ended with
 * exit status 124 after one line naming the call; the page then says why and
 * which ranks the call's group has, so that weftrun names the ranks that
 * never joined instead of this one. 0 turns either off.
 */
#include "rt_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <weftx/page.h>

#define TICK_NS 500000000L

static weftx_page own;
static weftx_page *page = &own;
static int depth; /* nested calls (a bucket's all-reduces) */
static const weft_group *volatile current;
static const char *current_name;      /* the call's words where the page has none (atomic) */
static double init_limit, coll_limit; /* seconds; 0: off */
static pthread_t dog;
static int dog_running;
static pthread_mutex_t dog_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dog_cond;
static int dog_stop;

static void begin(void)
{
  __atomic_store_n(&page->seq, page->seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void end(void) { __atomic_store_n(&page->seq, page->seq + 1, __ATOMIC_RELEASE); }

/* The agent's page, when it named one; else this process's own. */
static void page_open(void)
{
  const char *path = getenv(WEFTX_PAGE_ENV);
  if (page != &own || !path || !*path)
    return;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  void *p =
    fd < 0 ? MAP_FAILED : mmap(NULL, WEFTX_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fd >= 0)
    close(fd);
  if (p == MAP_FAILED) {
    WEFT__LOG(RT, "%s=%s: %s; the call page stays in this process", WEFTX_PAGE_ENV, path,
              strerror(errno));
    return;
  }
  weftx_page *w = p;
  if (w->magic != WEFTX_PAGE_MAGIC || w->version != WEFTX_PAGE_VERSION) {
    WEFT__LOG(RT, "%s=%s is not a weft call page of version %d", WEFTX_PAGE_ENV, path,
              WEFTX_PAGE_VERSION);
    munmap(p, WEFTX_PAGE_SIZE);
    return;
  }
  page = w;
}

void weft__call_enter(const weft_group *g, int op, size_t bytes)
{
  weft__call_enter_named(g, op, NULL, bytes);
}

void weft__call_enter_named(const weft_group *g, int op, const char *name, size_t bytes)
{
  if (depth++)
    return;
  current = g;
  __atomic_store_n(&current_name, name, __ATOMIC_RELAXED);
  begin();
  page->state = WEFTX_PAGE_RUNNING;
  page->op = op;
  page->bytes = bytes;
  page->group_first = g ? g->world_ranks[0] : -1;
  page->group_size = g ? g->size : 0;
  if (g)
    memcpy(page->group, g->name, sizeof(page->group) - 1);
  page->since_ns = weftx_monotonic_ns();
  end();
}

void weft__call_exit(void)
{
  if (--depth > 0)
    return;
  depth = 0;
  begin();
  if (page->state != WEFTX_PAGE_DEADLINE) {
    page->op = WEFTX_OP_NONE;
    page->calls++;
    page->since_ns = weftx_monotonic_ns();
  }
  end();
  current = NULL;
  __atomic_store_n(&current_name, NULL, __ATOMIC_RELAXED);
}

/* "0-3,8" of the group's world ranks (as many as fit). */
static void members(const weft_group *g, char *buf, size_t len)
{
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; g && i < g->size && off + 32 < len;) {
    int j = i;
    while (j + 1 < g->size && g->world_ranks[j + 1] == g->world_ranks[j] + 1)
      j++;
    off +=
      (size_t)(j > i ? snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", g->world_ranks[i],
                                g->world_ranks[j])
                     : snprintf(buf + off, len - off, "%s%d", off ? "," : "", g->world_ranks[i]));
    i = j + 1;
  }
}

void weft__page_deadline(const weft_group *g, int peer, double limit, const char *why)
{
  begin();
  page->state = WEFTX_PAGE_DEADLINE;
  page->timeout_s = limit;
  snprintf(page->why, sizeof(page->why), "%s", why);
  if (peer >= 0) /* point to point: the one that never matched */
    snprintf(page->members, sizeof(page->members), "%d", peer);
  else
    members(g, page->members, sizeof(page->members));
  end();
}

/* The watchdog's verdict: say it, leave it on the page, end the rank.
 * op WEFTX_OP_COUNT: a device call (nccl-flight.c), whose words are in why. */
static void fire(int op, double limit, double in, const weft_group *dg, const char *dwhy)
{
  char why[sizeof(page->why)];
  const weft_group *g = op == WEFTX_OP_COUNT ? dg : current;
  const char *name = __atomic_load_n(&current_name, __ATOMIC_RELAXED);
  int rank = page->world_rank;
  if (op == WEFTX_OP_COUNT)
    snprintf(why, sizeof(why), "%s", dwhy);
  else if (op == WEFTX_OP_INIT)
    snprintf(why, sizeof(why),
             "weft_init waited %.0f s for every rank to arrive "
             "(WEFT_INIT_TIMEOUT=%g); ending the rank",
             in, limit);
  else
    snprintf(why, sizeof(why),
             "%s on group %.32s (%llu bytes) has not finished after %.0f s "
             "(WEFT_COLL_WATCHDOG=%g); ending the rank",
             name ? name : weftx_page_op_name(op), g ? g->name : "?",
             (unsigned long long)page->bytes, in, limit);
  weft__page_deadline(g, -1, limit, why);
  if (rank < 0) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    rank = r ? (int)strtol(r, NULL, 10) : -1;
  }
  fprintf(stderr, "weft: rank %d: %s\n", rank, why);
  _exit(WEFTX_PAGE_DEADLINE_EXIT);
}

static void *watchdog(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&dog_lock);
  while (!dog_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += TICK_NS;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&dog_cond, &dog_lock, &ts);
    if (dog_stop)
      break;
    int state = __atomic_load_n(&page->state, __ATOMIC_ACQUIRE), op = page->op;
    double in = (double)(weftx_monotonic_ns() - page->since_ns) * 1e-9;
    if (state == WEFTX_PAGE_INIT && init_limit > 0 && in > init_limit)
      fire(WEFTX_OP_INIT, init_limit, in, NULL, NULL);
    if (state == WEFTX_PAGE_RUNNING && op != WEFTX_OP_NONE && coll_limit > 0 && in > coll_limit)
      fire(op, coll_limit, in, NULL, NULL);
    /* the device calls in flight, and a blocking NCCL call (nccl-flight.c) */
    char dwhy[sizeof(page->why)];
    const weft_group *dg = NULL;
    double dlimit = 0;
    if (state == WEFTX_PAGE_RUNNING && weft__nccl_overdue(dwhy, sizeof(dwhy), &dg, &dlimit))
      fire(WEFTX_OP_COUNT, dlimit, 0, dg, dwhy);
  }
  pthread_mutex_unlock(&dog_lock);
  return NULL;
}

/* A non-negative number of seconds from \p var, \p def when unset or unreadable (the
 * settings' check after MPI_Init says so then). */
static double seconds(const char *var, double def)
{
  const char *s = getenv(var);
  char *e;
  if (!s || !*s)
    return def;
  errno = 0;
  double v = strtod(s, &e);
  return errno || *e || v < 0 || v > 1e9 ? def : v;
}

void weft__watch_start(void)
{
  page_open();
  init_limit = seconds("WEFT_INIT_TIMEOUT", WEFT__INIT_TIMEOUT_S);
  /* an explicit WEFT_COLL_TIMEOUT makes the calls return WEFT_ETIMEDOUT instead */
  coll_limit = getenv("WEFT_COLL_TIMEOUT") && *getenv("WEFT_COLL_TIMEOUT")
                 ? 0
                 : seconds("WEFT_COLL_WATCHDOG", WEFT__COLL_WATCHDOG_S);
  begin();
  page->state = WEFTX_PAGE_INIT;
  page->op = WEFTX_OP_INIT;
  page->since_ns = weftx_monotonic_ns();
  end();
  if (dog_running || (init_limit <= 0 && coll_limit <= 0))
    return;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&dog_cond, &ca);
  pthread_condattr_destroy(&ca);
  dog_stop = 0;
  /* without the thread there is no watchdog, and nothing else changes */
  dog_running = pthread_create(&dog, NULL, watchdog, NULL) == 0;
  if (!dog_running)
    WEFT__LOG(RT, "no watchdog thread: %s", strerror(errno));
}

void weft__watch_ready(int world_rank)
{
  begin();
  page->world_rank = world_rank;
  page->state = WEFTX_PAGE_RUNNING;
  page->op = WEFTX_OP_NONE;
  page->since_ns = weftx_monotonic_ns();
  end();
}

void weft__watch_stop(int finalized)
{
  if (dog_running) {
    pthread_mutex_lock(&dog_lock);
    dog_stop = 1;
    pthread_cond_signal(&dog_cond);
    pthread_mutex_unlock(&dog_lock);
    pthread_join(dog, NULL);
    pthread_cond_destroy(&dog_cond);
    dog_running = 0;
  }
  begin();
  page->state = finalized ? WEFTX_PAGE_FINALIZED : WEFTX_PAGE_NONE;
  page->op = WEFTX_OP_NONE;
  page->since_ns = weftx_monotonic_ns();
  end();
}
