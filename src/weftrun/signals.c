/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SIGINT, SIGTERM and SIGHUP to weftrun become stop requests: one byte (the
 * signal number) each on a pipe, which the child runner (weftx_proc_run())
 * watches while mpirun or the probe runs, and which the pipeline checks
 * between its stages. So weftrun always ends the job and removes its job
 * directory itself instead of dying where the signal finds it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "weftrun.h"

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
  int saved = errno;
  unsigned char c = (unsigned char)sig;
  if (write(sig_pipe[1], &c, 1) < 0) {
    /* the pipe is full: requests are already pending, nothing is lost */
  }
  errno = saved;
}

void wr_signals_request(int sig)
{
  if (sig_pipe[1] >= 0)
    on_signal(sig);
}

int wr_signals_install(void)
{
  if (sig_pipe[0] >= 0)
    return sig_pipe[0];
  if (pipe(sig_pipe))
    return -1;
  for (int i = 0; i < 2; i++) {
    fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[i], F_SETFL, O_NONBLOCK);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return sig_pipe[0];
}

int wr_signals_pending(int fd)
{
  unsigned char c;
  return fd >= 0 && read(fd, &c, 1) == 1 ? c : 0;
}
