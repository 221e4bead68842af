/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run the engine's command and turn how the job ended into weftrun's exit
 * status. mpirun runs in its own process group; its stderr comes through a
 * pipe and is passed on line by line, watching for the one line weft-rank
 * prints when a program fails (and, as a fallback, for mpirun's own report).
 * SIGINT, SIGTERM and SIGHUP are forwarded to mpirun, which ends every rank
 * on every host; --timeout does the same. Whatever does not end within the
 * grace period is killed with its process group. Every wait has a deadline.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weftrun.h"

#define GRACE_S 10.0      /* from forwarding a signal to SIGKILL */
#define DRAIN_S 3.0       /* reading the last output after mpirun has gone */

static int sig_pipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
  int saved = errno;
  unsigned char c = (unsigned char)sig;
  if (write(sig_pipe[1], &c, 1) < 0) {
    /* the pipe is full: a signal is already pending, nothing is lost */
  }
  errno = saved;
}

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct failure {
  int seen;
  int code;
  char what[512];
  int lost;          /* mpirun said it lost a daemon; the next lines name the host */
  int first_rank;    /* "Process name: [[j,1],R]" of mpirun's non-zero-status report, or -1 */
  const wr_job *job; /* to name the ranks of a lost host; may be NULL */
} failure;

/* "ranks 4-7" of host h, from the plan. */
static void
ranks_of(const wr_job *j, const char *host, char *buf, size_t len)
{
  int first = -1, last = -1, n = 0;
  buf[0] = '\0';
  if (!j)
    return;
  for (int h = 0; h < wr_job_nhosts(j); h++)
    if (!strcmp(wr_job_host(j, h), host))
      for (int r = 0; r < wr_job_np(j); r++)
        if (wr_job_rank_host(j, r) == h) {
          if (first < 0)
            first = r;
          last = r;
          n++;
        }
  if (n == 1)
    snprintf(buf, len, " (rank %d)", first);
  else if (n > 1 && last - first + 1 == n)
    snprintf(buf, len, " (ranks %d-%d)", first, last);
  else if (n > 1)
    snprintf(buf, len, " (%d ranks from %d)", n, first);
}

/* "weft-rank: rank 3 host vnode1 gpu 2 (0000:0a:00.0): exited with status 3" */
static void
watch_line(const char *line, failure *f)
{
  const char *p = strstr(line, "weft-rank: rank ");
  if (p && !f->seen) {
    const char *s;
    int v;
    if ((s = strstr(p, "exited with status ")) && sscanf(s, "exited with status %d", &v) == 1)
      f->code = v;
    else if ((s = strstr(p, "killed by signal ")) && sscanf(s, "killed by signal %d", &v) == 1)
      f->code = 128 + v;
    else
      return;
    f->seen = 1;
    snprintf(f->what, sizeof(f->what), "%s", p + strlen("weft-rank: "));
    size_t n = strlen(f->what);
    while (n && (f->what[n - 1] == '\n' || f->what[n - 1] == '\r'))
      f->what[--n] = '\0';
    return;
  }
  /* mpirun's own words, when weft-rank itself could not say it */
  int rank, sig;
  char host[256];
  /* "Process name: [[13077,1],2]" then "Exit code:    3" (rank output sent to files) */
  if (!f->seen && (p = strstr(line, "Process name: [[")) &&
      sscanf(p, "Process name: [[%*d,%*d],%d]", &rank) == 1)
    f->first_rank = rank;
  if (!f->seen && f->first_rank >= 0 && (p = strstr(line, "Exit code:")) &&
      sscanf(p, "Exit code: %d", &sig) == 1) {
    f->seen = 1;
    f->code = sig;
    snprintf(f->what, sizeof(f->what), "rank %d: exited with status %d", f->first_rank, sig);
    return;
  }
  if (!f->seen && strstr(line, "lost communication with a remote daemon"))
    f->lost = 1;
  if (!f->seen && f->lost && (p = strstr(line, "Remote daemon:")) &&
      (p = strstr(p, " on node ")) && sscanf(p, " on node %255s", host) == 1) {
    char ranks[64];
    ranks_of(f->job, host, ranks, sizeof(ranks));
    f->seen = 1;
    f->code = WR_EXIT_HOSTLOST;
    snprintf(f->what, sizeof(f->what), "host %s lost%s: its Open MPI daemon stopped answering "
             "(machine down or network cut)", host, ranks);
    return;
  }
  if (!f->seen && (p = strstr(line, "mpirun noticed that process rank ")) &&
      sscanf(p, "mpirun noticed that process rank %d with PID %*d on node %255s exited on signal %d",
             &rank, host, &sig) == 3) {
    f->seen = 1;
    f->code = 128 + sig;
    snprintf(f->what, sizeof(f->what), "rank %d host %s: killed by signal %d", rank, host, sig);
  }
}

static void
pass_on(char *buf, size_t *len, int final, failure *f)
{
  size_t start = 0;
  for (size_t i = 0; i < *len; i++) {
    if (buf[i] != '\n')
      continue;
    buf[i] = '\0';
    watch_line(buf + start, f);
    buf[i] = '\n';
    fwrite(buf + start, 1, i + 1 - start, stderr);
    start = i + 1;
  }
  if (start < *len && (final || *len >= 8000)) {
    /* a long line without newline, or the end: pass what there is */
    fwrite(buf + start, 1, *len - start, stderr);
    start = *len;
  }
  memmove(buf, buf + start, *len - start);
  *len -= start;
  fflush(stderr);
}

static int
setup_signals(void)
{
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
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL); /* wakes the loop as soon as mpirun ends */
  signal(SIGPIPE, SIG_IGN);
  return 0;
}

int
wr_run(const wr_job *j, const wr_opts *o, char **argv)
{
  int errp[2];
  if (setup_signals() || pipe(errp)) {
    perror("weftrun: pipe");
    return WR_EXIT_ENGINE;
  }
  fcntl(errp[0], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    perror("weftrun: fork");
    return WR_EXIT_ENGINE;
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    dup2(errp[1], STDERR_FILENO);
    close(errp[1]);
    execvp(argv[0], argv);
    fprintf(stderr, "weftrun: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid); /* also here, so that the group exists before any kill below */
  close(errp[1]);
  fcntl(errp[0], F_SETFL, O_NONBLOCK);

  failure f = { 0, 0, "", 0, -1, j };
  char buf[8192];
  size_t len = 0;
  double start = now();
  double deadline = o->timeout > 0 ? start + (double)o->timeout : 0;
  double kill_at = 0, drain_until = 0;
  int timed_out = 0, got_signal = 0, status = 0, exited = 0, out_open = 1;

  while (out_open || !exited) {
    double t = now();
    if (deadline && !timed_out && t >= deadline && !exited) {
      timed_out = 1;
      fprintf(stderr, "weftrun: the job ran longer than --timeout %ld s; ending it\n", o->timeout);
      kill(pid, SIGTERM);
      kill_at = t + GRACE_S;
    }
    if (kill_at && t >= kill_at && !exited) {
      fprintf(stderr, "weftrun: mpirun did not end within %.0f s; killing it\n", GRACE_S);
      kill(-pid, SIGKILL);
      kill_at = 0;
    }
    if (exited && drain_until && t >= drain_until)
      break;
    if (!exited) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = 1;
        drain_until = now() + DRAIN_S;
        kill(-pid, SIGKILL); /* anything left in mpirun's group */
        continue;
      }
    }
    double next = exited ? drain_until : t + 0.5;
    if (deadline && !timed_out && deadline < next)
      next = deadline;
    if (kill_at && kill_at < next)
      next = kill_at;
    int ms = (int)((next - now()) * 1000) + 1;
    if (ms < 1)
      ms = 1;
    if (!exited && ms > 1000)
      ms = 1000; /* SIGCHLD wakes the loop; this only bounds a lost wake-up */
    struct pollfd pf[2] = { { out_open ? errp[0] : -1, POLLIN, 0 }, { sig_pipe[0], POLLIN, 0 } };
    int n = poll(pf, 2, ms);
    if (n < 0 && errno != EINTR)
      break;
    if (pf[1].revents & POLLIN) {
      unsigned char c;
      while (read(sig_pipe[0], &c, 1) == 1) {
        if (exited || c == SIGCHLD)
          continue;
        if (got_signal) {
          kill(-pid, SIGKILL);
          continue;
        }
        got_signal = c;
        fprintf(stderr, "weftrun: got signal %d; ending the job\n", c);
        kill(pid, c == SIGHUP ? SIGTERM : c);
        kill_at = now() + GRACE_S;
      }
    }
    if (out_open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t r = read(errp[0], buf + len, sizeof(buf) - 1 - len);
      if (r > 0) {
        len += (size_t)r;
        pass_on(buf, &len, 0, &f);
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        out_open = 0;
      }
    }
  }
  if (len)
    pass_on(buf, &len, 1, &f);
  close(errp[0]);
  if (!exited) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }

  if (timed_out) {
    fprintf(stderr, "weftrun: job ended: --timeout %ld s expired (exit %d)\n", o->timeout,
            WR_EXIT_TIMEOUT);
    return WR_EXIT_TIMEOUT;
  }
  if (got_signal) {
    fprintf(stderr, "weftrun: job ended by signal %d (exit %d)\n", got_signal, 128 + got_signal);
    return 128 + got_signal;
  }
  if (f.seen) {
    fprintf(stderr, "weftrun: job failed: %s (exit %d)\n", f.what, f.code);
    return f.code;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return WR_EXIT_OK;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    fprintf(stderr, "weftrun: mpirun could not be started (exit %d)\n", WR_EXIT_ENGINE);
    return WR_EXIT_ENGINE;
  }
  if (WIFEXITED(status))
    fprintf(stderr, "weftrun: mpirun failed with status %d before any rank reported a failure "
            "(exit %d); see its message above\n", WEXITSTATUS(status), WR_EXIT_ENGINE);
  else
    fprintf(stderr, "weftrun: mpirun was killed by signal %d (exit %d)\n", WTERMSIG(status),
            WR_EXIT_ENGINE);
  return WR_EXIT_ENGINE;
}
