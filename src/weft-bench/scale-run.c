/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One child job of weft-bench scale: the launcher (weftrun or mpirun) runs
 * weft-bench in its own process group, its stdout is copied to a file and its
 * table rows are parsed as they come, its stderr goes to a file, and the whole
 * group is ended (SIGTERM, then SIGKILL) when the deadline passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "scale.h"

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double number(const char *s)
{
  char *end;
  double v = strtod(s, &end);

  return end == s ? -1 : v;
}

/* A table row: size count type redop root time algbw busbw #wrong [...]. */
static void parse_row(const char *line, struct scale_job *job)
{
  char t[64], al[64], bu[64], wr[64];
  size_t bytes;
  struct scale_point *p;

  if (line[0] == '#' || job->npts == BENCH_MAX_SIZES)
    return;
  if (sscanf(line, "%zu %*s %*s %*s %*s %63s %63s %63s %63s", &bytes, t, al, bu, wr) != 5)
    return;
  p = &job->pts[job->npts++];
  p->bytes = bytes;
  p->time_us = number(t);
  p->algbw = number(al);
  p->busbw = number(bu);
  p->wrong = strcmp(wr, "N/A") ? (long long)number(wr) : -1;
}

static void child(char *const *argv, int out_fd, const char *err_path)
{
  int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

  setpgid(0, 0);
  if (err < 0 || null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err, 2) < 0)
    _exit(127);
  execvp(argv[0], argv);
  fprintf(stderr, "weft-bench scale: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* End the job's process group: SIGTERM, then SIGKILL after 3 s. */
static int stop_group(pid_t pid)
{
  int st = 0;

  kill(-pid, SIGTERM);
  for (int i = 0; i < 60; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      return st;
    usleep(50000);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &st, 0);
  return st;
}

int scale_run_job(char *const *argv, const char *out_path, const char *err_path, int timeout_s,
                  struct scale_job *job)
{
  int fds[2], st = 0, timed_out = 0;
  char buf[4096], line[4096];
  size_t len = 0;
  double t0 = now(), deadline = t0 + timeout_s;
  FILE *out;
  pid_t pid;

  out = fopen(out_path, "w");
  if (!out)
    return -1;
  if (pipe(fds) != 0) {
    fclose(out);
    return -1;
  }
  /* Only the child's stdout (a dup2, which clears the flag) stays open in
   * the job, so that the pipe ends when the job does. */
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  fcntl(fileno(out), F_SETFD, FD_CLOEXEC);
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    fclose(out);
    return -1;
  }
  if (pid == 0)
    child(argv, fds[1], err_path);
  setpgid(pid, pid);
  close(fds[1]);
  for (;;) {
    struct pollfd p = { .fd = fds[0], .events = POLLIN };
    double left = deadline - now();
    ssize_t n;

    if (left <= 0) {
      timed_out = 1;
      break;
    }
    if (poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) <= 0)
      continue;
    n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    fwrite(buf, 1, (size_t)n, out);
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] == '\n' || len == sizeof(line) - 1) {
        line[len] = '\0';
        parse_row(line, job);
        len = 0;
      }
      if (buf[i] != '\n')
        line[len++] = buf[i];
    }
  }
  close(fds[0]);
  fclose(out);
  /* stdout closed: the job is ending; give it until the deadline to exit. */
  while (!timed_out) {
    pid_t w = waitpid(pid, &st, WNOHANG);

    if (w == pid)
      break;
    if (w < 0 && errno != EINTR)
      break;
    if (now() > deadline)
      timed_out = 1;
    else
      usleep(20000);
  }
  if (timed_out) {
    stop_group(pid);
    job->status = 124;
  } else {
    job->status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  }
  job->seconds = now() - t0;
  return 0;
}
