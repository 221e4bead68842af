/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor on the agent's side: every interval, read what the rank
 * uses and send it to weftrun as one SAMPLE over the control channel. The
 * rank is its program and every process it started (a shell script's
 * children, a launcher's workers): the tree is walked from the program
 * through /proc/PID/task/TID/children, and each process's /proc/PID/stat
 * gives CPU time (with what its reaped children used), threads and resident
 * memory, summed. The NIC's byte counters (/sys/class/net/IF/statistics) are
 * kept open and read at offset 0. The rank's GPU (the one it was placed on)
 * is asked through NVML (nvml.c, loaded once, the device found by its PCI
 * address; by index only with an NVML that cannot look one up) on a thread
 * of its own: utilisation, memory used, power, temperature; without NVML (or
 * with one that hangs) a sample says why, once. Each sample goes to the host's Prometheus file too (prom.c).
 * Parsing and rates are sample.c's; here are only the reads.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sample.h"
#include "weft-rank.h"

#define TREE_MAX 4096 /* processes of one rank counted; more are left out */

struct wk_monitor {
  double every, next, last_at;
  long pid, hz, page;
  wt_sample_who who; /* the Prometheus file's labels */
  char host[256], gpu[16];
  struct gpu_watch *watch; /* the rank's GPU's thread (NULL: none) */
  double gpu_since;
  char gpu_why[160]; /* why there are no GPU figures, sent once */
  int said_why;
  wk_prom *prom; /* the host's Prometheus file's share (prom.c), NULL none */
  int tx_fd, rx_fd;
  char nic[32];
  int64_t ticks, tx, rx; /* the last reading, -1 none */
  int64_t ticks_max;     /* the most ticks read: the total reported */
  int64_t seq;
};

static int open_ro(const char *path) { return open(path, O_RDONLY | O_CLOEXEC); }

/* The text of an open /proc or /sys file, NUL-terminated; -1 when unreadable. */
static int read_text(int fd, char *buf, size_t len)
{
  if (fd < 0)
    return -1;
  ssize_t n = pread(fd, buf, len - 1, 0);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* The rank's tree: its processes' stat fields summed into \p sum (ticks, threads,
 * rss_pages); the number of live processes, 0 when the program itself is gone (or
 * has ended and not been reaped yet). */
static int tree_read(long root, wt_proc_stat *sum)
{
  static long stack[TREE_MAX];
  char path[96], buf[1024];
  int top = 0, n = 0;
  memset(sum, 0, sizeof(*sum));
  stack[top++] = root;
  while (top > 0 && n < TREE_MAX) {
    long pid = stack[--top];
    wt_proc_stat st;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open_ro(path);
    /* a zombie still counts: its time moves to its parent's cutime only when reaped */
    int bad = read_text(fd, buf, sizeof(buf)) || wt_sample_parse_stat(buf, &st);
    if (fd >= 0)
      close(fd);
    if (bad)
      continue; /* gone between two reads: its time is in its parent's cutime */
    sum->ticks += st.ticks;
    if (st.exiting)
      continue; /* ended or ending: its memory may already read 0 */
    n++;
    sum->threads += st.threads;
    sum->rss_pages += st.rss_pages;
    /* children of every thread of it */
    snprintf(path, sizeof(path), "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      char cbuf[4096];
      if (de->d_name[0] == '.')
        continue;
      snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/children", pid, de->d_name);
      int cfd = open_ro(path);
      if (read_text(cfd, cbuf, sizeof(cbuf)) == 0) {
        int k = wt_sample_parse_pids(cbuf, stack + top, TREE_MAX - top);
        if (k > 0)
          top += k < TREE_MAX - top ? k : TREE_MAX - top;
      }
      if (cfd >= 0)
        close(cfd);
    }
    if (d)
      closedir(d);
  }
  return n;
}

static int64_t counter(int fd)
{
  char buf[64];
  int64_t v;
  return read_text(fd, buf, sizeof(buf)) || wt_sample_parse_counter(buf, &v) ? -1 : v;
}

/* The rank's GPU is read on a thread of its own: a driver that hangs in NVML must not
 * stop the agent's loop (its heartbeats). The loop reads the latest figures under the
 * lock. Whichever of the two is last frees the gpu_watch: the thread when it sees stop
 * (it may be stuck in NVML for good, then it is never freed), the loop when the thread
 * has said done. */
typedef struct gpu_watch {
  pthread_mutex_t mu;
  double every;
  int gpu;
  char pci[32];
  int stop, done;
  int state; /* 0 starting, 1 reading, -1 given up (why) */
  char why[160];
  int64_t util, mem, power, temp;
  double at; /* when they were read */
} gpu_watch;

#define GPU_START_S 5.0 /* NVML's init and the device's lookup, at most */

static void gpu_open(gpu_watch *w, wk_nvml *n, wk_nvml_dev *dev)
{
  char why[160], buf[64];
  wk_nvml_ret rc = WK_NVML_OK;
  if (wk_nvml_load(n, why, sizeof(why))) {
    snprintf(w->why, sizeof(w->why), "%s", why);
    return;
  }
  if ((rc = n->init()) != WK_NVML_OK) {
    snprintf(w->why, sizeof(w->why), "nvmlInit: %s", wk_nvml_why(n, rc, buf, sizeof(buf)));
    return;
  }
  /* By its PCI address: NVML's indexes need not be the topology's (PCI order). Only an
   * NVML without that lookup (older than driver 270) is asked by index; one that has it
   * and does not know the address gives no figures rather than another GPU's. */
  int by_pci = w->pci[0] && n->by_pci;
  rc = by_pci ? n->by_pci(w->pci, dev) : n->handle((unsigned)w->gpu, dev);
  if (rc != WK_NVML_OK) {
    if (by_pci)
      snprintf(w->why, sizeof(w->why), "NVML has no GPU at %s (the rank's GPU %d): %s", w->pci,
               w->gpu, wk_nvml_why(n, rc, buf, sizeof(buf)));
    else
      snprintf(w->why, sizeof(w->why), "NVML has no GPU %d: %s", w->gpu,
               wk_nvml_why(n, rc, buf, sizeof(buf)));
    n->shutdown();
    return;
  }
  w->state = 1;
}

static void *gpu_thread(void *arg)
{
  gpu_watch *w = arg;
  wk_nvml n;
  wk_nvml_dev dev = NULL;
  char why[160] = "";
  gpu_watch o;
  /* set up outside the lock: it may take long, or hang */
  memset(&o, 0, sizeof(o));
  o.gpu = w->gpu;
  snprintf(o.pci, sizeof(o.pci), "%s", w->pci);
  gpu_open(&o, &n, &dev);
  snprintf(why, sizeof(why), "%s", o.why);
  pthread_mutex_lock(&w->mu);
  w->state = o.state ? 1 : -1;
  snprintf(w->why, sizeof(w->why), "%s", why);
  while (!w->stop && w->state == 1) {
    wk_nvml_util u;
    wk_nvml_mem mem;
    unsigned v;
    int64_t f[4] = {-1, -1, -1, -1};
    pthread_mutex_unlock(&w->mu);
    if (n.utilization && n.utilization(dev, &u) == WK_NVML_OK)
      f[0] = u.gpu;
    if (n.memory && n.memory(dev, &mem) == WK_NVML_OK)
      f[1] = (int64_t)mem.used;
    if (n.power && n.power(dev, &v) == WK_NVML_OK)
      f[2] = v;
    if (n.temperature && n.temperature(dev, WK_NVML_TEMPERATURE_GPU, &v) == WK_NVML_OK)
      f[3] = v;
    double now = weftx_monotonic();
    pthread_mutex_lock(&w->mu);
    w->util = f[0], w->mem = f[1], w->power = f[2], w->temp = f[3];
    w->at = now;
    if (w->stop)
      break;
    pthread_mutex_unlock(&w->mu);
    struct timespec ts = {(time_t)w->every, (long)((w->every - (double)(time_t)w->every) * 1e9)};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&w->mu);
  }
  int up = w->state == 1, mine = w->stop;
  w->done = 1;
  pthread_mutex_unlock(&w->mu);
  /* not mine: the loop may free it from here on */
  if (up)
    n.shutdown();
  if (mine) {
    pthread_mutex_destroy(&w->mu);
    free(w);
  }
  return NULL;
}

static void gpu_start(wk_monitor *m, const wk_monitor_conf *c, double now)
{
  gpu_watch *w = calloc(1, sizeof(*w));
  pthread_t t;
  snprintf(m->gpu, sizeof(m->gpu), "%d", c->gpu);
  m->who.gpu = m->gpu;
  m->gpu_since = now;
  if (!w || pthread_mutex_init(&w->mu, NULL)) {
    free(w);
    snprintf(m->gpu_why, sizeof(m->gpu_why), "out of memory");
    return;
  }
  w->every = c->every;
  w->gpu = c->gpu;
  snprintf(w->pci, sizeof(w->pci), "%s", c->pci);
  if (pthread_create(&t, NULL, gpu_thread, w)) {
    pthread_mutex_destroy(&w->mu);
    free(w);
    snprintf(m->gpu_why, sizeof(m->gpu_why), "cannot start a thread for NVML");
    return;
  }
  pthread_detach(t);
  m->watch = w;
}

/* The latest GPU figures into s, or why there are none (said once). */
static void gpu_read(wk_monitor *m, wt_sample *s, double now)
{
  gpu_watch *w = m->watch;
  if (w) {
    pthread_mutex_lock(&w->mu);
    if (w->state == 1 && now - w->at < 3 * m->every + GPU_START_S) {
      s->gpu_util = w->util, s->gpu_mem = w->mem, s->gpu_power = w->power, s->gpu_temp = w->temp;
    } else if (w->state == -1) {
      snprintf(m->gpu_why, sizeof(m->gpu_why), "%s", w->why);
    } else if (w->state == 1) {
      snprintf(m->gpu_why, sizeof(m->gpu_why), "NVML stopped answering");
    } else if (now - m->gpu_since > GPU_START_S) {
      snprintf(m->gpu_why, sizeof(m->gpu_why), "NVML did not start within %.0f s", GPU_START_S);
    }
    pthread_mutex_unlock(&w->mu);
  }
  if (m->gpu_why[0] && !m->said_why) {
    snprintf(s->why, sizeof(s->why), "%s", m->gpu_why);
    m->said_why = 1;
  }
}

wk_monitor *wk_monitor_new(long pid, const wk_monitor_conf *c, const wt_agent_who *who, double now)
{
  char path[160];
  const char *nic = c->nic;
  wk_monitor *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->every = c->every;
  m->next = now + c->every;
  snprintf(m->host, sizeof(m->host), "%s", who->host);
  m->who.rank = who->rank;
  m->who.host = m->host;
  m->who.job = c->job ? c->job : "";
  m->last_at = now;
  m->hz = sysconf(_SC_CLK_TCK);
  m->page = sysconf(_SC_PAGESIZE);
  m->pid = pid;
  m->tx_fd = m->rx_fd = -1;
  if (nic && nic[0] && !strchr(nic, '/') && strlen(nic) < sizeof(m->nic)) {
    snprintf(m->nic, sizeof(m->nic), "%s", nic);
    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/tx_bytes", nic);
    m->tx_fd = open_ro(path);
    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_bytes", nic);
    m->rx_fd = open_ro(path);
    if (m->tx_fd < 0 || m->rx_fd < 0)
      m->nic[0] = '\0';
  }
  wt_proc_stat st;
  m->ticks = tree_read(pid, &st) ? st.ticks : -1;
  m->tx = counter(m->tx_fd);
  m->rx = counter(m->rx_fd);
  if (c->gpu >= 0)
    gpu_start(m, c, now);
  if (c->prom_dir && c->prom_dir[0] &&
      !(m->prom = wk_prom_open(c->prom_dir, m->who.job, &m->who, c->every))) {
    wk_monitor_free(m);
    return NULL;
  }
  return m;
}

double wk_monitor_next(const wk_monitor *m) { return m ? m->next : 0; }

void wk_monitor_tick(wk_monitor *m, wk_channel *ch, double now)
{
  if (!m || now < m->next)
    return;
  wt_sample s;
  wt_proc_stat st;
  int procs = tree_read(m->pid, &st);
  if (procs == 0) { /* the program has ended: its exit, not a sample, comes next */
    while (m->next <= now)
      m->next += m->every;
    return;
  }
  wt_sample_init(&s);
  s.seq = ++m->seq;
  s.span_ms = (int64_t)((now - m->last_at) * 1000 + 0.5);
  s.procs = procs;
  /* a process that left the tree (an orphan adopted by init) takes its time with it:
   * the use over such a span is unknown, the total never goes back */
  s.cpu_pm = wt_sample_cpu_pm(m->ticks, st.ticks, m->hz, s.span_ms);
  if (st.ticks > m->ticks_max)
    m->ticks_max = st.ticks;
  s.cpu_ms = m->hz > 0 ? m->ticks_max * 1000 / m->hz : -1;
  s.rss = st.rss_pages * m->page;
  s.threads = st.threads;
  m->ticks = st.ticks;
  if (m->nic[0]) {
    int64_t tx = counter(m->tx_fd), rx = counter(m->rx_fd);
    snprintf(s.nic, sizeof(s.nic), "%s", m->nic);
    s.nic_tx = wt_sample_rate(m->tx, tx, s.span_ms);
    s.nic_rx = wt_sample_rate(m->rx, rx, s.span_ms);
    m->tx = tx;
    m->rx = rx;
  }
  gpu_read(m, &s, now);
  wt_ctl_out out;
  wt_sample_put(&out, &s);
  wk_channel_send(ch, &out);
  wk_prom_put(m->prom, &s);
  m->last_at = now;
  /* the next one on the grid, not drifting by how late this one was */
  while (m->next <= now)
    m->next += m->every;
}

void wk_monitor_free(wk_monitor *m)
{
  if (!m)
    return;
  wk_prom_close(m->prom);
  if (m->watch) {
    gpu_watch *w = m->watch;
    pthread_mutex_lock(&w->mu);
    int done = w->done;
    w->stop = 1; /* not done: the thread frees it */
    pthread_mutex_unlock(&w->mu);
    if (done) {
      pthread_mutex_destroy(&w->mu);
      free(w);
    }
  }
  if (m->tx_fd >= 0)
    close(m->tx_fd);
  if (m->rx_fd >= 0)
    close(m->rx_fd);
  free(m);
}
