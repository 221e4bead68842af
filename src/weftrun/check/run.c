/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --check's jobs, run side by side (each through weftx_proc_run() in a thread
 * of its own, so that a host whose engine hangs holds up only its own job),
 * with two deadlines each: every host's agent must have said hello within
 * the start deadline, or the job is stopped; the whole job must end within
 * its timeout. weftrun's stop requests are passed on to every job.
 *
 * What the agents print comes back through the engine, cut into one stream
 * per rank (engine/streams.c), and each rank's stream is read as records
 * (agent.h), with the topology's XML that follows an "xml BYTES" record
 * taken as it is. Everything else goes: this is the one parser of the
 * check's records.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define GRACE_S 3.0          /* from stopping the engine to SIGKILL of its group */
#define LINE_MAX_BYTES 65536 /* longest record kept */
#define STOP_LATE 0xfe       /* our stop byte: the start deadline passed */

typedef struct stream {
  char *buf; /* a partial line */
  size_t len, cap;
  size_t raw_left; /* bytes of XML still to come */
} stream;

struct wr_check_priv {
  stream *rank;
  wr_streams out; /* the engine's stdout, cut into the ranks' */
  pthread_mutex_t mu;
  int nhello;
  int stop[2];
  int done_fd; /* written when the job has ended */
  double t0;
  pthread_t thread;
  int started, stop_sent;
};

static void add_fact(wr_check_got *g, const char *key, const char *value, size_t vlen)
{
  if (g->nfacts == g->cap) {
    int cap = g->cap ? 2 * g->cap : 32;
    wr_check_fact *v = realloc(g->facts, (size_t)cap * sizeof(*v));
    if (!v)
      return;
    g->facts = v;
    g->cap = cap;
  }
  char *k = strdup(key), *val = strndup(value, vlen);
  if (!k || !val) {
    free(k);
    free(val);
    return;
  }
  g->facts[g->nfacts].key = k;
  g->facts[g->nfacts++].value = val;
}

static void on_record(wr_check_job *j, int rank, const char *line)
{
  char key[64];
  const char *value;
  size_t vlen;
  int host;
  wr_check_got *g = &j->got[rank];
  if (!wt_agent_check_parse(line, &host, key, sizeof(key), &value, &vlen) || host != rank)
    return;
  if (!strcmp(key, WT_CK_HELLO)) {
    pthread_mutex_lock(&j->priv->mu);
    if (g->hello < 0) {
      g->hello = weftx_monotonic() - j->priv->t0;
      j->priv->nhello++;
    }
    pthread_mutex_unlock(&j->priv->mu);
  } else if (!strcmp(key, WT_CK_END)) {
    g->end = 1;
  } else if (!strcmp(key, "xml")) {
    long n = strtol(value, NULL, 10);
    free(g->xml);
    g->xml = NULL;
    g->xmllen = 0;
    if (n > 0 && n < (1L << 30) && (g->xml = malloc((size_t)n + 1)))
      j->priv->rank[rank].raw_left = (size_t)n;
    return;
  }
  add_fact(g, key, value, vlen);
}

/* Rank \p r's bytes, as it printed them. */
static void feed(void *arg, int r, const char *data, size_t len)
{
  wr_check_job *j = arg;
  stream *s = &j->priv->rank[r];
  wr_check_got *g = &j->got[r];
  while (len > 0) {
    if (s->raw_left > 0) {
      size_t n = len < s->raw_left ? len : s->raw_left;
      if (g->xml)
        memcpy(g->xml + g->xmllen, data, n);
      g->xmllen += n;
      s->raw_left -= n;
      if (!s->raw_left && g->xml)
        g->xml[g->xmllen] = '\0';
      data += n;
      len -= n;
      continue;
    }
    const char *nl = memchr(data, '\n', len);
    size_t n = nl ? (size_t)(nl - data) : len;
    if (s->len + n + 1 > s->cap && s->len + n < LINE_MAX_BYTES) {
      size_t cap = s->len + n + 256;
      char *b = realloc(s->buf, cap);
      if (b) {
        s->buf = b;
        s->cap = cap;
      }
    }
    if (s->len + n + 1 <= s->cap) {
      memcpy(s->buf + s->len, data, n);
      s->len += n;
    }
    data += n + (nl != NULL);
    len -= n + (nl != NULL);
    if (nl && s->buf) {
      s->buf[s->len] = '\0';
      on_record(j, r, s->buf);
      s->len = 0;
    }
  }
}

static void on_output(void *arg, int which, const char *data, size_t len)
{
  wr_check_job *j = arg;
  if (which == 1) {
    wr_streams_put(&j->priv->out, data, len);
    return;
  }
  if (j->verbose) {
    fwrite(data, 1, len, stderr);
    fflush(stderr);
  }
  /* the engine's messages: the last WR_CHECK_ERR_MAX bytes are kept */
  if (len >= WR_CHECK_ERR_MAX) {
    data += len - (WR_CHECK_ERR_MAX - 1);
    len = WR_CHECK_ERR_MAX - 1;
  }
  if (j->errlen + len >= WR_CHECK_ERR_MAX) {
    size_t drop = j->errlen + len - (WR_CHECK_ERR_MAX - 1);
    memmove(j->err, j->err + drop, j->errlen - drop);
    j->errlen -= drop;
  }
  memcpy(j->err + j->errlen, data, len);
  j->errlen += len;
  j->err[j->errlen] = '\0';
}

static void *run_one(void *arg)
{
  wr_check_job *j = arg;
  weftx_proc_spec s;
  weftx_proc_result r;
  char why[600];
  char **envp = wr_env_build(&j->env);
  weftx_proc_spec_init(&s);
  s.argv = j->argv;
  s.envp = envp;
  s.in = WEFTX_PROC_NULL;
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_PIPE;
  s.timeout = j->timeout_s;
  s.grace = GRACE_S;
  s.drain = 1;
  s.stop_fd = j->priv->stop[0];
  s.on_output = on_output;
  s.arg = j;
  j->priv->t0 = weftx_monotonic();
  if (!envp) {
    snprintf(why, sizeof(why), "out of memory");
    j->status = WEFTX_PROC_NOEXEC;
    on_output(j, 2, why, strlen(why));
  } else if (weftx_proc_run(&s, &r, why, sizeof(why))) {
    j->status = WEFTX_PROC_NOEXEC;
    on_output(j, 2, why, strlen(why));
  } else {
    j->status = r.status;
    j->timed_out = r.timed_out;
    if (r.stopped && r.stopped != STOP_LATE)
      j->stopped = r.stopped;
    if (r.status == WEFTX_PROC_NOEXEC && why[0])
      on_output(j, 2, why, strlen(why));
    free(r.output);
  }
  free(envp);
  j->seconds = weftx_monotonic() - j->priv->t0;
  if (j->verbose)
    fprintf(stderr, "weftrun: check job of %d host%s ended after %.2f s (exit %d%s)\n", j->nhosts,
            j->nhosts == 1 ? "" : "s", j->seconds, j->status,
            j->start_late ? ", stopped at the start deadline" : "");
  if (write(j->priv->done_fd, "", 1) < 0) {
    /* the coordinator also wakes up at its next deadline */
  }
  return NULL;
}

static void job_free_priv(wr_check_job *j)
{
  if (!j->priv)
    return;
  for (int r = 0; j->priv->rank && r < j->nhosts; r++)
    free(j->priv->rank[r].buf);
  free(j->priv->rank);
  for (int i = 0; i < 2; i++)
    if (j->priv->stop[i] >= 0)
      close(j->priv->stop[i]);
  pthread_mutex_destroy(&j->priv->mu);
  free(j->priv);
  j->priv = NULL;
}

void wr_check_job_free(wr_check_job *j)
{
  job_free_priv(j);
  for (int i = 0; j->argv && j->argv[i]; i++)
    free(j->argv[i]);
  free(j->argv);
  j->argv = NULL;
  wr_argv_free(&j->env);
  for (int h = 0; j->got && h < j->nhosts; h++) {
    for (int i = 0; i < j->got[h].nfacts; i++) {
      free(j->got[h].facts[i].key);
      free(j->got[h].facts[i].value);
    }
    free(j->got[h].facts);
    free(j->got[h].xml);
  }
  free(j->got);
  free(j->err);
  j->got = NULL;
  j->err = NULL;
}

static int job_init(wr_check_job *j, int done_fd)
{
  j->got = calloc((size_t)j->nhosts + 1, sizeof(*j->got));
  j->err = calloc(WR_CHECK_ERR_MAX, 1);
  j->priv = calloc(1, sizeof(*j->priv));
  if (!j->got || !j->err || !j->priv ||
      !(j->priv->rank = calloc((size_t)j->nhosts + 1, sizeof(*j->priv->rank))))
    return -1;
  for (int h = 0; h < j->nhosts; h++)
    j->got[h].hello = -1;
  wr_streams_init(&j->priv->out, j->labels, j->nhosts, feed, j);
  j->priv->stop[0] = j->priv->stop[1] = -1;
  j->priv->done_fd = done_fd;
  pthread_mutex_init(&j->priv->mu, NULL);
  if (pipe(j->priv->stop))
    return -1;
  return 0;
}

int wr_check_run(wr_check_job *jobs, int n, int stop_fd)
{
  int done[2], running = 0, stopped = 0;
  if (pipe(done))
    return -1;
  for (int i = 0; i < n; i++) {
    wr_check_job *j = &jobs[i];
    if (job_init(j, done[1])) {
      j->status = WEFTX_PROC_NOEXEC;
      if (j->err)
        j->errlen = (size_t)snprintf(j->err, WR_CHECK_ERR_MAX, "out of memory");
      continue;
    }
    if (pthread_create(&j->priv->thread, NULL, run_one, j)) {
      j->status = WEFTX_PROC_NOEXEC;
      j->errlen =
        (size_t)snprintf(j->err, WR_CHECK_ERR_MAX, "cannot start a thread: %s", strerror(errno));
      continue;
    }
    j->priv->started = 1;
    running++;
  }
  double t0 = weftx_monotonic();
  while (running > 0) {
    double now = weftx_monotonic(), next = 0;
    for (int i = 0; i < n; i++) {
      wr_check_job *j = &jobs[i];
      if (!j->priv || !j->priv->started || j->priv->stop_sent)
        continue;
      pthread_mutex_lock(&j->priv->mu);
      int all = j->priv->nhello >= j->nhosts;
      pthread_mutex_unlock(&j->priv->mu);
      if (all)
        continue;
      double at = t0 + j->start_s;
      if (now >= at) {
        unsigned char b = STOP_LATE;
        j->start_late = 1;
        j->priv->stop_sent = 1;
        if (write(j->priv->stop[1], &b, 1) < 0) {
          /* its own timeout ends it */
        }
      } else if (!next || at < next) {
        next = at;
      }
    }
    struct pollfd p[2] = {{done[0], POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int ms = next ? (int)((next - weftx_monotonic()) * 1000) + 1 : 1000;
    if (ms < 1)
      ms = 1;
    /* the hellos are not signalled: look again at least every 100 ms */
    if (ms > 100)
      ms = 100;
    if (poll(p, 2, ms) < 0 && errno != EINTR)
      break;
    if (p[0].revents & POLLIN) {
      char b[64];
      ssize_t r = read(done[0], b, sizeof(b));
      running -= r > 0 ? (int)r : 0;
    }
    if (p[1].revents & POLLIN) {
      unsigned char sig;
      if (read(stop_fd, &sig, 1) == 1) {
        stopped = stopped ? stopped : sig;
        for (int i = 0; i < n; i++)
          if (jobs[i].priv && jobs[i].priv->started && write(jobs[i].priv->stop[1], &sig, 1) < 0) {
            /* that job's own timeout ends it */
          }
      }
    }
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].priv && jobs[i].priv->started)
      pthread_join(jobs[i].priv->thread, NULL);
  for (int i = 0; i < n; i++) {
    job_free_priv(&jobs[i]);
    if (stopped && !jobs[i].stopped)
      jobs[i].stopped = stopped;
  }
  close(done[0]);
  close(done[1]);
  return stopped ? 128 + stopped : 0;
}
