/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run the rank's program as a child and stay with it: forward the signals
 * Open MPI sends (so that a job teardown reaches the program), kill it when
 * weft-rank's own parent goes away, and when it fails print the one line
 * weftrun looks for, then exit with the program's code so that Open MPI ends
 * the job. After a forwarded SIGTERM/SIGINT the program gets GRACE_S seconds
 * before SIGKILL; after a preemption notice, the --preempt-grace seconds. The
 * program is found as Open MPI finds it (mpirun --path first, then $PATH).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft-rank.h"

#define GRACE_S 5

static volatile sig_atomic_t child = 0;
static volatile sig_atomic_t told_to_stop = 0;
static volatile sig_atomic_t preempting = 0;
static unsigned preempt_grace = WEFTX_PREEMPT_GRACE_S;

void
wk_supervise_set_grace(long seconds)
{
  preempt_grace = (unsigned)seconds;
}

/* From the watcher's thread: the signal then reaches the handler below, on any thread. */
void
wk_supervise_preempt(void)
{
  preempting = 1;
  kill(getpid(), WEFTX_PREEMPT_SIGNAL);
}

static void
forward(int sig)
{
  if (sig == SIGALRM) {
    if (child > 0)
      kill(child, SIGKILL);
    return;
  }
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
    unsigned grace = preempting ? preempt_grace : GRACE_S;
    /* the first stop request sets the deadline; later ones do not move it */
    if (!told_to_stop) {
      told_to_stop = sig;
      if (grace == 0 && child > 0) {
        kill(child, SIGKILL);
        return;
      }
      alarm(grace ? grace : 1); /* no child yet: it is killed once started */
    }
  }
  if (child > 0)
    kill(child, sig);
}

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT,
                                 SIGALRM };

/* Run the program as Open MPI's daemon would: with mpirun --path DIRS (which Open MPI
 * hands on as OMPI_exec_path), a name without '/' is looked for in DIRS before $PATH.
 * Returns only on failure, with errno set. */
static void
exec_program(char **argv)
{
  const char *dirs = getenv("OMPI_exec_path");
  char path[4096];
  if (dirs && *dirs && !strchr(argv[0], '/')) {
    const char *p = dirs;
    while (*p) {
      size_t n = strcspn(p, ":");
      if (n > 0 && n + strlen(argv[0]) + 2 < sizeof(path)) {
        snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, argv[0]);
        if (access(path, X_OK) == 0) {
          execv(path, argv);
          return;
        }
      }
      p += n + (p[n] == ':');
    }
  }
  execvp(argv[0], argv);
}

/* The failure line for a setup step that failed with errno \p e. */
static int
setup_failed(const weft_agent_who *who, const char *what, int e)
{
  char why[200];
  snprintf(why, sizeof(why), "%s failed: %s", what, strerror(e));
  weft_agent_fail_print(stderr, who, why, WK_EXIT_SETUP, 0);
  return WK_EXIT_SETUP;
}

int
wk_supervise(char **argv, const weft_agent_who *who)
{
  int errp[2];
  if (pipe(errp))
    return setup_failed(who, "pipe", errno);
  fcntl(errp[0], F_SETFD, FD_CLOEXEC);
  fcntl(errp[1], F_SETFD, FD_CLOEXEC);

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
    sigaction(forwarded[i], &sa, NULL);
  /* Open MPI's daemon going away without a word must not leave the program behind. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() == 1)
    return WK_EXIT_SETUP;

  pid_t pid = fork();
  if (pid < 0)
    return setup_failed(who, "fork", errno);
  if (pid == 0) {
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
      signal(forwarded[i], SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(errp[0]);
    exec_program(argv);
    int e = errno;
    if (write(errp[1], &e, sizeof(e)) < 0)
      _exit(127);
    _exit(127);
  }
  child = pid;
  close(errp[1]);
  int e = 0;
  ssize_t n;
  do
    n = read(errp[0], &e, sizeof(e));
  while (n < 0 && errno == EINTR);
  close(errp[0]);

  int status = 0;
  pid_t w;
  do
    w = waitpid(pid, &status, 0);
  while (w < 0 && errno == EINTR);
  child = 0;
  alarm(0);
  if (n == (ssize_t)sizeof(e)) {
    char why[600];
    snprintf(why, sizeof(why), "cannot run '%s': %s", argv[0], strerror(e));
    weft_agent_fail_print(stderr, who, why, WEFTX_PROC_NOEXEC, 0);
    return WEFTX_PROC_NOEXEC;
  }
  if (w < 0)
    return WK_EXIT_SETUP;
  int code;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
    if (code && !told_to_stop)
      weft_agent_fail_print(stderr, who, NULL, code, 0);
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    code = 128 + sig;
    if (!told_to_stop)
      weft_agent_fail_print(stderr, who, NULL, code, sig);
  }
  fflush(stderr);
  return code;
}
