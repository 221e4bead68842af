/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The program's output, read by the agent: its stdout and stderr become the
 * ends of a pipe each (stdout a pseudo-terminal of the agent's own when the
 * agent's stdout is one, as under mpirun, so that the program buffers as it
 * would there), which a thread reads. Two uses:
 *
 *  - whole lines (--lines, weftrun's mpirun engine). mpirun forwards what it
 *    reads from a rank in pieces of up to 4 KiB, cut anywhere (a terminal's
 *    reads can end inside a single write), so the lines of different ranks
 *    are glued where a piece ends mid-line, and its --tag-output tags pieces
 *    (and drops output when a piece holds many short lines). Here each line
 *    is made whole first, tagged and stamped as mpirun would (--tag-output,
 *    --timestamp-output), and handed on as one record through the agent's
 *    stderr: a pipe from mpirun's daemon, shrunk to one page, written a
 *    whole number of records at most a page at a time, so that every read of
 *    it ends at a record's end. weftrun reads mpirun's stderr and writes each
 *    record to its stdout or stderr (engine/lines.c). A record is
 *    WT_LINE_MARK, 'O' (stdout) or 'E' (stderr), the line, '\n'; a lower-case
 *    'o' or 'e' marks a piece without its end of line (a prompt, a partial
 *    last line), flushed once the line has waited LINE_WAIT_S or at the end.
 *    A line longer than LINE_MAX is cut, each piece ending in WT_LINE_CUT. The
 *    program's order within each stream is kept, and between its streams as
 *    the thread reads them.
 *
 *  - --output-filename DIR: the rank's stdout and stderr also go to
 *    DIR/1/rank.R/stdout and stderr, as Open MPI 4.1's mpirun writes them
 *    (with lines: what the terminal gets, tags included, as mpirun's files).
 *    Without lines (srun) the bytes are copied as they come, to the files and
 *    where the agent's descriptors went.
 *
 * At the end what is left in the pipes is copied within a deadline, so that
 * a program's background child holding them open cannot keep the rank alive.
 */
#define _GNU_SOURCE /* posix_openpt, ptsname_r, F_SETPIPE_SZ */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "weft-rank.h"

#define DRAIN_S 3.0
#define REC_MAX 4096  /* a record at most; the pipe's page */
#define PREFIX_MAX 96 /* a tag and a time stamp at most */
#define LINE_MAX_ (REC_MAX - 2 - PREFIX_MAX - (int)sizeof(WT_LINE_CUT)) /* bytes of a line */
#define LINE_WAIT_S 0.2 /* a line without its end is flushed after this */

typedef struct line {
  char buf[LINE_MAX_];
  size_t len;
  double since; /* when its first byte came (0: empty) */
  int cont;     /* its start went out already (a flushed piece) */
} line;

struct wk_output {
  int pipe[2];           /* read ends: stdout's (a terminal's master, or a pipe), stderr's */
  int file[2];           /* DIR/1/rank.R/stdout, stderr; -1 none */
  int orig[2];           /* the rank's descriptors 1 and 2 as they were */
  int stop[2];           /* a byte here: the end has come, drain */
  int lines, tag, stamp; /* whole lines as records; tagged; time-stamped */
  char tags[2][64];      /* "[J,R]<stdout>:", "[J,R]<stderr>:" */
  int v5;                /* under Open MPI 5's mpirun: its forms of the prefixes */
  line part[2];
  char batch[REC_MAX]; /* records not written yet */
  size_t blen;
  pthread_t thread;
  int started;
};

static void write_all(int fd, const char *p, size_t n)
{
  while (fd >= 0 && n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; /* a terminal gone or a full disk: the rank goes on */
    p += w;
    n -= (size_t)w;
  }
}

static void flush_batch(wk_output *o)
{
  write_all(o->orig[1], o->batch, o->blen);
  o->blen = 0;
}

/* The line of stream \p i handed on: whole (end 1), a piece cut off a longer line (2),
 * or a piece without its end (0). */
static void emit(wk_output *o, int i, int end)
{
  line *l = &o->part[i];
  char prefix[PREFIX_MAX + 1] = "", rec[REC_MAX];
  size_t n = 0;
  if (!l->cont && (o->tag || o->stamp)) {
    char when[64] = "";
    if (o->stamp) {
      time_t now = time(NULL);
      struct tm tm;
      /* ctime's words, as mpirun's --timestamp-output has them */
      if (localtime_r(&now, &tm))
        strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", &tm);
    }
    if (o->v5 && o->stamp) /* Open MPI 5: "[ctime][J,R]<stdout>: " */
      snprintf(prefix, sizeof(prefix), "[%s]%s", when,
               o->tag ? o->tags[i]
               : i    ? "<stderr>: "
                      : "<stdout>: ");
    else
      snprintf(prefix, sizeof(prefix), "%s%s", when,
               o->tag ? o->tags[i]
               : i    ? "<stderr>:"
                      : "<stdout>:");
  }
  size_t plen = strlen(prefix);
  rec[n++] = WT_LINE_MARK;
  rec[n++] = (char)((i ? 'E' : 'O') + (end ? 0 : 'a' - 'A'));
  memcpy(rec + n, prefix, plen);
  n += plen;
  memcpy(rec + n, l->buf, l->len);
  n += l->len;
  if (end == 2) {
    memcpy(rec + n, WT_LINE_CUT, sizeof(WT_LINE_CUT) - 1);
    n += sizeof(WT_LINE_CUT) - 1;
  }
  if (end)
    rec[n++] = '\n';
  write_all(o->file[i], rec + 2, n - 2);
  if (!end)
    rec[n++] = '\n'; /* every record ends so; weftrun drops this one */
  if (o->blen + n > sizeof(o->batch))
    flush_batch(o);
  memcpy(o->batch + o->blen, rec, n);
  o->blen += n;
  l->cont = !end;
  l->len = 0;
  l->since = 0;
}

/* \p n bytes of stream \p i cut into lines. */
static void take(wk_output *o, int i, const char *p, size_t n, double now)
{
  line *l = &o->part[i];
  while (n > 0) {
    const char *nl = memchr(p, '\n', n);
    size_t k = nl ? (size_t)(nl - p) : n, room = sizeof(l->buf) - l->len;
    if (k > room) {
      memcpy(l->buf + l->len, p, room);
      l->len += room;
      emit(o, i, 2);
      p += room;
      n -= room;
      continue;
    }
    memcpy(l->buf + l->len, p, k);
    l->len += k;
    p += k;
    n -= k;
    if (nl) {
      emit(o, i, 1);
      p++;
      n--;
    }
  }
  if (l->len && !l->since)
    l->since = now;
}

/* How long poll may wait: until the drain's deadline, or a waiting line's flush. */
static int wait_ms(const wk_output *o, double deadline, double now)
{
  double until = deadline;
  for (int i = 0; o->lines && i < 2; i++)
    if (o->part[i].len && (until < 0 || o->part[i].since + LINE_WAIT_S < until))
      until = o->part[i].since + LINE_WAIT_S;
  if (until < 0)
    return -1;
  return until <= now ? 0 : (int)((until - now) * 1000) + 1;
}

static void *copy_main(void *arg)
{
  wk_output *o = arg;
  int open_ = 2;
  double deadline = -1;
  char buf[65536];
  struct pollfd fds[3] = {
    {o->pipe[0], POLLIN, 0}, {o->pipe[1], POLLIN, 0}, {o->stop[0], POLLIN, 0}};
  while (open_ > 0) {
    double now = weftx_monotonic();
    if (deadline >= 0 && now >= deadline)
      break;
    if (o->lines && o->blen)
      flush_batch(o); /* what was read goes out before the thread waits again */
    int rc = poll(fds, 3, wait_ms(o, deadline, now));
    if (rc < 0 && errno != EINTR)
      break;
    now = weftx_monotonic();
    if (rc > 0 && fds[2].revents) {
      deadline = now + DRAIN_S;
      fds[2].fd = -1;
    }
    for (int i = 0; rc > 0 && i < 2; i++) {
      if (fds[i].fd < 0 || !fds[i].revents)
        continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n <= 0) { /* a terminal's master reads EIO once its last slave is closed */
        fds[i].fd = -1;
        open_--;
        continue;
      }
      if (o->lines) {
        take(o, i, buf, (size_t)n, now);
      } else {
        write_all(o->file[i], buf, (size_t)n);
        write_all(o->orig[i], buf, (size_t)n);
      }
    }
    for (int i = 0; o->lines && i < 2; i++)
      if (o->part[i].len && now >= o->part[i].since + LINE_WAIT_S)
        emit(o, i, 0);
  }
  /* a partial last line, as it is */
  for (int i = 0; o->lines && i < 2; i++)
    if (o->part[i].len)
      emit(o, i, 0);
  if (o->lines)
    flush_batch(o);
  return NULL;
}

static int cloexec_pipe(int fd[2])
{
  if (pipe(fd))
    return -1;
  fcntl(fd[0], F_SETFD, FD_CLOEXEC);
  fcntl(fd[1], F_SETFD, FD_CLOEXEC);
  return 0;
}

/* A terminal for the program's stdout, as mpirun's daemon makes one: no echo, no
 * translation of line ends. 0 with the master in fd[0] and the slave in fd[1]. */
static int cloexec_pty(int fd[2])
{
  struct termios t;
  char name[128];
  fd[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  fd[1] = -1;
  if (fd[0] < 0 || grantpt(fd[0]) || unlockpt(fd[0]) || ptsname_r(fd[0], name, sizeof(name)) ||
      (fd[1] = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
    if (fd[0] >= 0)
      close(fd[0]);
    fd[0] = -1;
    return -1;
  }
  if (tcgetattr(fd[1], &t) == 0) {
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | ECHONL);
    t.c_iflag &= ~(tcflag_t)(ICRNL | INLCR | ISTRIP | INPCK | IXON);
    t.c_oflag &= ~(tcflag_t)(OCRNL | ONLCR);
    tcsetattr(fd[1], TCSANOW, &t);
  }
  return 0;
}

/* mpirun's tag of this rank's stream: "[J,R]<stdout>:", J the job's local number as
 * mpirun prints it (the low 16 bits of Open MPI's job id). */
static void make_tags(wk_output *o, int rank)
{
  const char *id = getenv("OMPI_MCA_ess_base_jobid"), *v = getenv("OMPI_VERSION");
  unsigned long job = id ? strtoul(id, NULL, 10) & 0xffff : 0;
  /* Open MPI 5 (OMPI_VERSION 5.x): its first job is 1, a space after the tag */
  o->v5 = v && strtol(v, NULL, 10) >= 5;
  if (o->v5)
    job = 1;
  snprintf(o->tags[0], sizeof(o->tags[0]), "[%lu,%d]<stdout>:%s", job, rank, o->v5 ? " " : "");
  snprintf(o->tags[1], sizeof(o->tags[1]), "[%lu,%d]<stderr>:%s", job, rank, o->v5 ? " " : "");
}

/* mkdir of one level; an existing directory is fine. */
static int dir_at(const char *path, char *why, size_t len)
{
  if (mkdir(path, 0750) == 0 || errno == EEXIST)
    return 0;
  snprintf(why, len, "--output-filename: cannot make %s: %s", path, strerror(errno));
  return -1;
}

static int open_files(wk_output *o, const char *dir, int rank, char *why, size_t len)
{
  char path[4096], file[4200];
  snprintf(path, sizeof(path), "%s", dir);
  if (dir_at(path, why, len))
    return -1;
  snprintf(path, sizeof(path), "%s/1", dir);
  if (dir_at(path, why, len))
    return -1;
  snprintf(path, sizeof(path), "%s/1/rank.%d", dir, rank);
  if (dir_at(path, why, len))
    return -1;
  for (int i = 0; i < 2; i++) {
    snprintf(file, sizeof(file), "%s/%s", path, i ? "stderr" : "stdout");
    if ((o->file[i] = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
      snprintf(why, len, "--output-filename: cannot write %s: %s", file, strerror(errno));
      return -1;
    }
  }
  return 0;
}

int wk_output_start(const wt_agent_args *a, int rank, wk_output **out, char *why, size_t len)
{
  wk_output *o = calloc(1, sizeof(*o));
  *out = NULL;
  if (!o) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  o->pipe[0] = o->pipe[1] = o->file[0] = o->file[1] = o->orig[0] = o->orig[1] = -1;
  o->stop[0] = o->stop[1] = -1;
  o->lines = a->lines;
  o->tag = a->tag_output;
  o->stamp = a->timestamp_output;
  make_tags(o, rank);
  if (a->output_filename && open_files(o, a->output_filename, rank, why, len))
    goto fail;
  int p[2][2] = {{-1, -1}, {-1, -1}};
  int pty = o->lines && isatty(1) && cloexec_pty(p[0]) == 0;
  if (cloexec_pipe(o->stop) || (!pty && cloexec_pipe(p[0])) || cloexec_pipe(p[1]) ||
      (o->orig[0] = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 ||
      (o->orig[1] = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0) {
    snprintf(why, len, "the rank's output: %s", strerror(errno));
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 2; k++)
        if (p[i][k] >= 0)
          close(p[i][k]);
    goto fail;
  }
  if (o->lines) {
    /* one page: every read of mpirun's daemon ends where a write of whole records did */
    struct stat st;
    if (fstat(o->orig[1], &st) == 0 && S_ISFIFO(st.st_mode))
      fcntl(o->orig[1], F_SETPIPE_SZ, REC_MAX);
  }
  fflush(stdout);
  fflush(stderr);
  /* the write ends become descriptors 1 and 2 (inherited by the program: no CLOEXEC) */
  dup2(p[0][1], 1);
  dup2(p[1][1], 2);
  close(p[0][1]);
  close(p[1][1]);
  o->pipe[0] = p[0][0];
  o->pipe[1] = p[1][0];
  if (pthread_create(&o->thread, NULL, copy_main, o) != 0) {
    dup2(o->orig[0], 1);
    dup2(o->orig[1], 2);
    snprintf(why, len, "the rank's output: cannot start a thread");
    goto fail;
  }
  o->started = 1;
  *out = o;
  return 0;
fail:
  wk_output_finish(o);
  return -1;
}

void wk_output_finish(wk_output *o)
{
  if (!o)
    return;
  if (o->started) {
    fflush(stdout);
    fflush(stderr);
    /* the rank's ends of the pipes go: the copy ends once the program's have gone too */
    dup2(o->orig[0], 1);
    dup2(o->orig[1], 2);
    if (write(o->stop[1], "x", 1) < 0)
      pthread_cancel(o->thread);
    pthread_join(o->thread, NULL);
  }
  for (int i = 0; i < 2; i++) {
    if (o->pipe[i] >= 0)
      close(o->pipe[i]);
    if (o->file[i] >= 0)
      close(o->file[i]);
    if (o->orig[i] >= 0)
      close(o->orig[i]);
    if (o->stop[i] >= 0)
      close(o->stop[i]);
  }
  free(o);
}
