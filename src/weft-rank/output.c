/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --output-filename DIR for engines that have no such option (srun): the
 * rank's standard output and error go to DIR/1/rank.R/stdout and stderr, as
 * Open MPI 4.1's mpirun writes them, and, as mpirun does, to the terminal
 * too. A thread copies two pipes (now the rank's descriptors 1 and 2, which
 * the program inherits) into the files and the original descriptors; at the
 * end what is left in the pipes is copied within a deadline, so that a
 * program's background child holding them open cannot keep the rank alive.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft-rank.h"

#define DRAIN_S 3.0

struct wk_output {
  int pipe[2];               /* read ends: stdout's, stderr's */
  int file[2];               /* DIR/1/rank.R/stdout, stderr */
  int orig[2];               /* the rank's descriptors 1 and 2 as they were */
  int stop[2];               /* a byte here: the end has come, drain */
  pthread_t thread;
  int started;
};

static void
write_all(int fd, const char *p, ssize_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, p, (size_t)n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; /* a terminal gone or a full disk: the rank goes on */
    p += w;
    n -= w;
  }
}

static void *
copy_main(void *arg)
{
  wk_output *o = arg;
  int open_ = 2;
  double deadline = -1;
  char buf[65536];
  struct pollfd fds[3] = { { o->pipe[0], POLLIN, 0 }, { o->pipe[1], POLLIN, 0 },
                           { o->stop[0], POLLIN, 0 } };
  while (open_ > 0) {
    int wait = deadline < 0 ? -1 : (int)((deadline - weftx_monotonic()) * 1000);
    if (deadline >= 0 && wait <= 0)
      break;
    if (poll(fds, 3, wait) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[2].revents) {
      deadline = weftx_monotonic() + DRAIN_S;
      fds[2].fd = -1;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !fds[i].revents)
        continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        fds[i].fd = -1;
        open_--;
        continue;
      }
      write_all(o->file[i], buf, n);
      write_all(o->orig[i], buf, n);
    }
  }
  return NULL;
}

static int
cloexec_pipe(int fd[2])
{
  if (pipe(fd))
    return -1;
  fcntl(fd[0], F_SETFD, FD_CLOEXEC);
  fcntl(fd[1], F_SETFD, FD_CLOEXEC);
  return 0;
}

/* mkdir of one level; an existing directory is fine. */
static int
dir_at(const char *path, char *why, size_t len)
{
  if (mkdir(path, 0750) == 0 || errno == EEXIST)
    return 0;
  snprintf(why, len, "--output-filename: cannot make %s: %s", path, strerror(errno));
  return -1;
}

int
wk_output_start(const char *dir, int rank, wk_output **out, char *why, size_t len)
{
  char path[4096], file[4200];
  wk_output *o = calloc(1, sizeof(*o));
  *out = NULL;
  if (!o) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  o->pipe[0] = o->pipe[1] = o->file[0] = o->file[1] = o->orig[0] = o->orig[1] = -1;
  o->stop[0] = o->stop[1] = -1;
  snprintf(path, sizeof(path), "%s", dir);
  if (dir_at(path, why, len))
    goto fail;
  snprintf(path, sizeof(path), "%s/1", dir);
  if (dir_at(path, why, len))
    goto fail;
  snprintf(path, sizeof(path), "%s/1/rank.%d", dir, rank);
  if (dir_at(path, why, len))
    goto fail;
  for (int i = 0; i < 2; i++) {
    snprintf(file, sizeof(file), "%s/%s", path, i ? "stderr" : "stdout");
    if ((o->file[i] = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
      snprintf(why, len, "--output-filename: cannot write %s: %s", file, strerror(errno));
      goto fail;
    }
  }
  int p[2][2] = { { -1, -1 }, { -1, -1 } };
  if (cloexec_pipe(o->stop) || cloexec_pipe(p[0]) || cloexec_pipe(p[1]) ||
      (o->orig[0] = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 ||
      (o->orig[1] = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0) {
    snprintf(why, len, "--output-filename: %s", strerror(errno));
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 2; k++)
        if (p[i][k] >= 0)
          close(p[i][k]);
    goto fail;
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
    snprintf(why, len, "--output-filename: cannot start a thread");
    goto fail;
  }
  o->started = 1;
  *out = o;
  return 0;
fail:
  wk_output_finish(o);
  return -1;
}

void
wk_output_finish(wk_output *o)
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
