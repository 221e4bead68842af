/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor-prom on the agent's side: one Prometheus file per host,
 * DIR/weft-JOB-HOST.prom, holding every rank of the job on that host, for
 * node_exporter's textfile collector. The agents of a host share it this way:
 *
 *  - each agent keeps its rank's latest sample in a file of its own,
 *    DIR/.weft-JOB-HOST.rank-R.sample (hidden, not *.prom: the collector
 *    never reads it), replaced by rename at every sample;
 *  - every change of the host's file happens under an flock() on
 *    DIR/.weft-JOB-HOST.lock, held only while it is written;
 *  - at every sample the agent of the host's lowest live rank gathers the
 *    live ranks' samples and replaces the host's file by rename (a reader
 *    never sees half of one);
 *  - an agent whose rank ends removes its sample and rewrites the host's file
 *    without it; the last one out removes the host's file, what agents
 *    killed before it left, and the lock file.
 *
 * A sample is live while its agent's process exists and it is younger than
 * three intervals (and 2 s): a SIGKILLed agent's rank drops out of the file.
 * Under the lock, "the last one out" is never two agents, nor none.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sample.h"
#include "weft-rank.h"

#define LOCK_S 2.0 /* the longest an agent waits for the host's lock */

struct wk_prom {
  char dir[4096];
  char prefix[300]; /* ".weft-JOB-HOST.rank-": the host's samples */
  char file[4500], file_tmp[4500], lock[4500], mine[4500], mine_tmp[4510];
  const char *job, *host, *gpu;
  int rank;
  double stale_s;
  int warned;
};

/* A rank's sample read back. */
typedef struct frag {
  wt_sample s;
  int rank;
  char gpu[16];
} frag;

/* A name as part of a file name: what is not a letter, digit, '.' or '-' becomes '_'. */
static void file_word(const char *s, char *buf, size_t len)
{
  size_t i = 0;
  for (; s && s[i] && i + 1 < len && i < 64; i++)
    buf[i] = (char)((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                        (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-'
                      ? s[i]
                      : '_');
  buf[i] = '\0';
}

static void warn(wk_prom *p, const char *what, const char *path)
{
  if (!p->warned)
    fprintf(stderr,
            "weft-rank: rank %d host %s: warning: --monitor-prom: cannot %s %s: %s; "
            "this rank is left out of the host's Prometheus file\n",
            p->rank, p->host, what, path, strerror(errno));
  p->warned = 1;
}

wk_prom *wk_prom_open(const char *dir, const char *job, const wt_sample_who *who, double every)
{
  char j[80], h[80];
  wk_prom *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  file_word(job, j, sizeof(j));
  file_word(who->host, h, sizeof(h));
  snprintf(p->dir, sizeof(p->dir), "%s", dir);
  snprintf(p->prefix, sizeof(p->prefix), ".weft-%s-%s.rank-", j, h);
  snprintf(p->file, sizeof(p->file), "%s/weft-%s-%s.prom", dir, j, h);
  snprintf(p->file_tmp, sizeof(p->file_tmp), "%s/.weft-%s-%s.prom.tmp", dir, j, h);
  snprintf(p->lock, sizeof(p->lock), "%s/.weft-%s-%s.lock", dir, j, h);
  snprintf(p->mine, sizeof(p->mine), "%s/%s%d.sample", dir, p->prefix, who->rank);
  snprintf(p->mine_tmp, sizeof(p->mine_tmp), "%s.tmp", p->mine);
  p->job = job;
  p->host = who->host;
  p->gpu = who->gpu;
  p->rank = who->rank;
  p->stale_s = 3 * every + 2;
  return p;
}

/* The host's lock, taken within LOCK_S: its fd (closing it lets go), or -1. The last
 * agent out removes the lock file while it holds it; one that was waiting on that
 * file then holds a lock nobody else can see, so it takes the new one. */
static int lock_host(const wk_prom *p)
{
  double until = weftx_monotonic() + LOCK_S;
  for (;;) {
    struct stat a, b;
    int fd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return -1;
    while (flock(fd, LOCK_EX | LOCK_NB)) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || weftx_monotonic() > until) {
        close(fd);
        return -1;
      }
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
    if (fstat(fd, &a) == 0 && stat(p->lock, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
      return fd;
    close(fd);
    if (weftx_monotonic() > until) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

/* This rank's sample into its own file: the frame weftrun gets, with the rank, the
 * agent's pid and the GPU label. */
static int put_mine(const wk_prom *p, const wt_sample *s)
{
  wt_ctl_out o;
  wt_sample_put(&o, s);
  wt_ctl_put_int(&o, WT_CTL_T_RANK, p->rank);
  wt_ctl_put_int(&o, WT_CTL_T_PID, (int64_t)getpid());
  if (p->gpu)
    wt_ctl_put_str(&o, WT_CTL_T_GPU, p->gpu);
  FILE *f = fopen(p->mine_tmp, "w");
  if (!f)
    return -1;
  int bad = fwrite(o.buf, 1, o.len, f) != o.len;
  bad |= fclose(f);
  if (bad || rename(p->mine_tmp, p->mine)) {
    unlink(p->mine_tmp);
    return -1;
  }
  return 0;
}

/* A rank's sample file, if it is live (see the top). 0, or -1. */
static int read_frag(const wk_prom *p, const char *path, frag *fr)
{
  unsigned char buf[WT_CTL_HEADER + WT_CTL_MAX_PAYLOAD];
  struct stat st;
  struct timespec now;
  wt_ctl_msg m;
  int64_t rank, pid;
  char why[160];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  memset(&st, 0, sizeof(st));
  ssize_t n = fstat(fd, &st) ? -1 : read(fd, buf, sizeof(buf));
  close(fd);
  clock_gettime(CLOCK_REALTIME, &now);
  double age =
    (double)(now.tv_sec - st.st_mtim.tv_sec) + (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  if (n <= 0 || age > p->stale_s || wt_ctl_frame(buf, (size_t)n, why, sizeof(why)) != n ||
      wt_ctl_decode(buf, (size_t)n, &m, why, sizeof(why)) || wt_sample_get(&m, &fr->s) ||
      wt_ctl_get_int(&m, WT_CTL_T_RANK, &rank) || wt_ctl_get_int(&m, WT_CTL_T_PID, &pid) ||
      rank < 0 || rank > 1 << 30 || pid <= 0 || (kill((pid_t)pid, 0) && errno == ESRCH))
    return -1;
  fr->rank = (int)rank;
  if (wt_ctl_get_str(&m, WT_CTL_T_GPU, fr->gpu, sizeof(fr->gpu)))
    fr->gpu[0] = '\0';
  return 0;
}

/* The live samples of the host's ranks into *out (malloc'd), how many; -1 when the
 * directory cannot be read or memory is short. */
static int gather(const wk_prom *p, frag **out)
{
  size_t plen = strlen(p->prefix);
  int n = 0, cap = 0;
  frag *v = NULL;
  DIR *d = opendir(p->dir);
  struct dirent *de;
  *out = NULL;
  if (!d)
    return -1;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    char path[4500];
    if (strncmp(de->d_name, p->prefix, plen) || len < plen + 7 ||
        strcmp(de->d_name + len - 7, ".sample"))
      continue;
    if (n == cap) {
      frag *w = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*v));
      if (!w) {
        free(v);
        closedir(d);
        errno = ENOMEM;
        return -1;
      }
      v = w;
    }
    snprintf(path, sizeof(path), "%s/%s", p->dir, de->d_name);
    if (read_frag(p, path, &v[n]) == 0)
      n++;
  }
  closedir(d);
  *out = v;
  return n;
}

static int by_rank(const void *a, const void *b)
{
  return ((const frag *)a)->rank - ((const frag *)b)->rank;
}

/* The host's file from \p n ranks' samples, replaced by rename. 0, or -1. */
static int write_host(const wk_prom *p, frag *v, int n)
{
  wt_sample_who *who = calloc((size_t)(n > 0 ? n : 1), sizeof(*who));
  wt_sample *s = calloc((size_t)(n > 0 ? n : 1), sizeof(*s));
  FILE *f = who && s ? fopen(p->file_tmp, "w") : NULL;
  int bad = !f;
  if (f) {
    qsort(v, (size_t)n, sizeof(*v), by_rank);
    for (int i = 0; i < n; i++) {
      s[i] = v[i].s;
      who[i].job = p->job;
      who[i].rank = v[i].rank;
      who[i].host = p->host;
      who[i].gpu = v[i].gpu[0] ? v[i].gpu : NULL;
    }
    wt_sample_prom(f, s, who, n);
    bad = ferror(f) | fclose(f);
    if (bad || rename(p->file_tmp, p->file)) {
      unlink(p->file_tmp);
      bad = 1;
    }
  }
  free(who);
  free(s);
  return bad ? -1 : 0;
}

void wk_prom_put(wk_prom *p, const wt_sample *s)
{
  frag *v = NULL;
  if (!p || p->warned)
    return;
  if (put_mine(p, s)) {
    warn(p, "write", p->mine);
    return;
  }
  int fd = lock_host(p);
  if (fd < 0)
    return; /* another agent is slow to let go: the next sample tries again */
  int n = gather(p, &v);
  int lowest = n > 0;
  for (int i = 0; i < n; i++)
    if (v[i].rank < p->rank)
      lowest = 0;
  if (n < 0)
    warn(p, "read the directory", p->dir);
  else if (lowest && write_host(p, v, n))
    warn(p, "write", p->file);
  free(v);
  close(fd);
}

/* Every file of this host's share but the host's file: what agents killed before
 * the last one left (the last one out holds the lock). */
static void sweep(const wk_prom *p)
{
  size_t plen = strlen(p->prefix);
  DIR *d = opendir(p->dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    char path[4500];
    if (strncmp(de->d_name, p->prefix, plen))
      continue;
    snprintf(path, sizeof(path), "%s/%s", p->dir, de->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
  unlink(p->file_tmp);
}

void wk_prom_close(wk_prom *p)
{
  frag *v = NULL;
  if (!p)
    return;
  int fd = lock_host(p);
  unlink(p->mine);
  unlink(p->mine_tmp);
  if (fd < 0) {
    fprintf(stderr,
            "weft-rank: rank %d host %s: warning: --monitor-prom: cannot lock %s: %s; "
            "%s may be left behind\n",
            p->rank, p->host, p->lock, strerror(errno), p->file);
    free(p);
    return;
  }
  int n = gather(p, &v);
  if (n == 0) {
    unlink(p->file);
    sweep(p);
    unlink(p->lock);
  } else if (n > 0 && write_host(p, v, n)) {
    warn(p, "write", p->file);
  }
  free(v);
  close(fd);
  free(p);
}
