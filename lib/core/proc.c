/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run one command to its end, whatever happens: in its own process group,
 * its piped output read as it comes (whole lines to a callback, or kept up to
 * a cap), bounded by a monotonic deadline and the caller's stop requests,
 * each followed by a grace period and SIGKILL of the whole group.
 *
 * The child's exit is noticed without a SIGCHLD handler: through a pidfd where
 * the kernel has them, else by polling every 50 ms. It is noticed without
 * reaping it (waitid WNOWAIT), so that the group it leads is killed while its
 * id cannot have been given to anyone else, and only then reaped.
 */
#include "weft_private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weftx/proc.h>

#define CHUNK (64 * 1024)  /* a line longer than this is passed on in pieces */
#define POLL_NO_PIDFD 0.05 /* seconds between exit checks without a pidfd */

extern char **environ;

typedef struct stream {
  int fd;    /* read end; -1 when closed or not piped */
  int which; /* 1 stdout, 2 stderr */
  int keep;  /* kept in the result instead of passed on */
  char *buf; /* a partial line (on_output) */
  size_t len;
} stream;

void weftx_proc_spec_init(weftx_proc_spec *s)
{
  memset(s, 0, sizeof(*s));
  s->out_fd = s->err_fd = s->stop_fd = s->watch_fd = -1;
  s->grace = 10;
  s->drain = 3;
}

static void set_flags(int fd, int fdflags, int flflags)
{
  if (fdflags)
    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | fdflags);
  if (flflags)
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | flflags);
}

/* In the child: connect \p target (0, 1, 2) as \p io says; 0 or -1. */
static int connect_stream(int target, weftx_proc_io io, int pipe_w, int fd)
{
  switch (io) {
  case WEFTX_PROC_INHERIT: return 0;
  case WEFTX_PROC_NULL: {
    int n = open("/dev/null", target ? O_WRONLY : O_RDONLY);
    if (n < 0 || dup2(n, target) < 0)
      return -1;
    return n == target ? 0 : close(n);
  }
  case WEFTX_PROC_PIPE: return dup2(pipe_w, target) < 0 ? -1 : 0;
  case WEFTX_PROC_FD: return dup2(fd, target) < 0 ? -1 : 0;
  }
  return -1;
}

/* In the child, after fork(): never returns. Exec failures go back through \p errfd. */
static void child(const weftx_proc_spec *s, int out_w, int err_w, int errfd, const char *path,
                  pid_t parent)
{
  sigset_t none;
  int e;

  setpgid(0, 0);
  /* the parent may have died before this: then the signal never comes */
  if (s->death_signal && (prctl(PR_SET_PDEATHSIG, s->death_signal) || getppid() != parent))
    _exit(128 + s->death_signal);
  /* a fresh start: nothing this process catches, ignores or blocks is inherited
   * (everything is blocked until the dispositions are the defaults) */
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (connect_stream(0, s->in, -1, -1) || connect_stream(1, s->out, out_w, s->out_fd) ||
      connect_stream(2, s->err, err_w, s->err_fd)) {
    e = errno;
  } else {
    execve(path, s->argv, s->envp ? s->envp : environ);
    e = errno;
  }
  if (write(errfd, &e, sizeof(e)) < 0)
    _exit(WEFTX_PROC_NOEXEC);
  _exit(WEFTX_PROC_NOEXEC);
}

static void close_stream(stream *st)
{
  if (st->fd >= 0)
    close(st->fd);
  st->fd = -1;
}

/* Pass on whole lines; a piece when the buffer is full or at the end (\p final). */
static void pass_lines(const weftx_proc_spec *s, stream *st, int final)
{
  size_t n = st->len;
  if (!n)
    return;
  if (!final && n < CHUNK && !s->raw) {
    while (n && st->buf[n - 1] != '\n')
      n--;
    if (!n)
      return;
  }
  s->on_output(s->arg, st->which, st->buf, n);
  memmove(st->buf, st->buf + n, st->len - n);
  st->len -= n;
}

/* Read what \p st has. Returns 0; 1 when kept output went over the cap; WEFT_ENOMEM. */
static int read_stream(const weftx_proc_spec *s, stream *st, weftx_proc_result *r)
{
  ssize_t n;
  if (st->keep) {
    char part[CHUNK];
    n = read(st->fd, part, sizeof(part));
    if (n > 0) {
      if (s->max_output && r->len + (size_t)n > s->max_output)
        return 1;
      char *b = realloc(r->output, r->len + (size_t)n + 1);
      if (!b)
        return WEFT_ENOMEM;
      r->output = b;
      memcpy(b + r->len, part, (size_t)n);
      r->len += (size_t)n;
      b[r->len] = '\0';
    }
  } else {
    n = read(st->fd, st->buf + st->len, CHUNK - st->len);
    if (n > 0) {
      st->len += (size_t)n;
      pass_lines(s, st, 0);
    }
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    if (!st->keep)
      pass_lines(s, st, 1);
    close_stream(st);
  }
  return 0;
}

static void event(const weftx_proc_spec *s, weftx_proc_event ev, int value)
{
  if (s->on_event)
    s->on_event(s->arg, ev, value);
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0)
    set_flags(fd, FD_CLOEXEC, 0);
  return fd;
#else
  (void)pid;
  return -1;
#endif
}

/* Milliseconds to wait in poll() from \p now until \p next (0: none), at most \p most s. */
static int wait_ms(double now, double next, double most)
{
  double d = most;
  if (next > 0 && next - now < d)
    d = next - now;
  if (d <= 0)
    return 0;
  return (int)(d * 1000) + 1;
}

/* Start the child; 0, or a WEFT_E* code with \p why. The exec error, if any, in *exec_errno. */
static int start(const weftx_proc_spec *s, stream *st, pid_t *pid, int *exec_errno, char *why,
                 size_t whylen)
{
  char path[4096];
  const char *look[] = {s->argv[0], NULL};
  int p[2][2] = {{-1, -1}, {-1, -1}}, ep[2] = {-1, -1};
  weftx_proc_io io[2] = {s->out, s->err};

  *exec_errno = 0;
  /* the lookup happens here, so that the child only calls execve() */
  if (!weftx_find_exe(look, path, sizeof(path)))
    weft__snprintf(path, sizeof(path), "%s", s->argv[0]);
  for (int i = 0; i < 2; i++)
    if (io[i] == WEFTX_PROC_PIPE && pipe(p[i]))
      goto fail;
  if (pipe(ep))
    goto fail;
  set_flags(ep[0], FD_CLOEXEC, 0);
  set_flags(ep[1], FD_CLOEXEC, 0);
  for (int i = 0; i < 2; i++)
    if (p[i][0] >= 0) {
      set_flags(p[i][0], FD_CLOEXEC, O_NONBLOCK);
      set_flags(p[i][1], FD_CLOEXEC, 0);
    }
  fflush(NULL); /* what this process printed comes before the child's output */
  /* Signals wait until the child has put every disposition back to the default
   * (a handler of this process must not run in the child). */
  sigset_t all, old;
  pid_t self = getpid();
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  *pid = fork();
  if (*pid == 0)
    child(s, p[0][1], p[1][1], ep[1], path, self);
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (*pid < 0)
    goto fail;
  setpgid(*pid, *pid); /* also here, so that the group exists before any kill */
  close(ep[1]);
  for (int i = 0; i < 2; i++) {
    if (p[i][1] >= 0)
      close(p[i][1]);
    st[i].fd = p[i][0];
  }
  ssize_t n;
  do
    n = read(ep[0], exec_errno, sizeof(*exec_errno));
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof(*exec_errno))
    *exec_errno = 0;
  close(ep[0]);
  return 0;
fail:
  weft__snprintf(why, whylen, "cannot start %s: %s", s->argv[0], strerror(errno));
  for (int i = 0; i < 2; i++) {
    if (p[i][0] >= 0)
      close(p[i][0]);
    if (p[i][1] >= 0)
      close(p[i][1]);
  }
  if (ep[0] >= 0) {
    close(ep[0]);
    close(ep[1]);
  }
  return WEFT_ESYS;
}

int weftx_proc_run(const weftx_proc_spec *s, weftx_proc_result *r, char *why, size_t whylen)
{
  stream st[2] = {{-1, 1, 0, NULL, 0}, {-1, 2, 0, NULL, 0}};
  pid_t pid = -1;
  int pidfd = -1, exited = 0, status = 0, eno = 0, nomem = 0, rc;
  double t0 = weftx_monotonic(), deadline = s->timeout > 0 ? t0 + s->timeout : 0;
  double kill_at = 0, drain_until = 0;
  int stop_sig = s->stop_signal ? s->stop_signal : SIGTERM;

  memset(r, 0, sizeof(*r));
  if (why && whylen)
    why[0] = '\0';
  if (!s->argv || !s->argv[0] || (s->err == WEFTX_PROC_PIPE && !s->on_output)) {
    weft__snprintf(why, whylen, "weftx_proc_run: no command, or stderr piped without on_output");
    return WEFT_EINVAL;
  }
  st[0].keep = s->out == WEFTX_PROC_PIPE && !s->on_output;
  for (int i = 0; i < 2; i++)
    if (!st[i].keep && (i ? s->err : s->out) == WEFTX_PROC_PIPE && !(st[i].buf = malloc(CHUNK))) {
      free(st[0].buf);
      weft__snprintf(why, whylen, "out of memory");
      return WEFT_ENOMEM;
    }
  if ((rc = start(s, st, &pid, &eno, why, whylen))) {
    free(st[0].buf);
    free(st[1].buf);
    return rc;
  }
  pidfd = pidfd_of(pid);

  double watch_next = 0, watch_until = 0;
  int watching = s->on_watch != NULL, watch_ready = 1;
  while (!exited || st[0].fd >= 0 || st[1].fd >= 0 || watching) {
    double t = weftx_monotonic();
    if (watching && (watch_ready || (watch_next > 0 && t >= watch_next))) {
      int stop = 0;
      watch_ready = 0;
      watch_next = s->on_watch(s->arg, t, exited, &stop);
      if (exited && (watch_next <= 0 || t >= watch_until))
        watching = 0;
      if (!exited && stop < 0) {
        kill(-pid, SIGKILL);
        event(s, WEFTX_PROC_EV_KILL, 0);
      } else if (!exited && stop > 0) {
        kill(s->stop_group ? -pid : pid, stop);
        if (!kill_at)
          kill_at = t + s->grace;
      }
      if (exited && !watching && st[0].fd < 0 && st[1].fd < 0)
        break;
    }
    if (!exited && deadline && !r->timed_out && t >= deadline) {
      r->timed_out = 1;
      kill(s->stop_group ? -pid : pid, stop_sig);
      kill_at = t + s->grace;
      event(s, WEFTX_PROC_EV_DEADLINE, stop_sig);
    }
    if (!exited && kill_at && t >= kill_at) {
      kill(-pid, SIGKILL);
      kill_at = 0;
      event(s, WEFTX_PROC_EV_KILL, 0);
    }
    if (exited && t >= drain_until && (!watching || t >= watch_until))
      break;
    if (!exited) {
      siginfo_t si;
      memset(&si, 0, sizeof(si));
      if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
        exited = 1;
        kill(-pid, SIGKILL); /* whatever is left of its group; the zombie holds the id */
        drain_until = t + s->drain;
        watch_until = t + s->watch_drain;
        watch_ready = 1;
        event(s, WEFTX_PROC_EV_EXIT, si.si_code == CLD_EXITED ? si.si_status : -si.si_status);
        continue;
      }
    }
    double next = exited ? drain_until : kill_at;
    if (exited && watching && watch_until > next)
      next = watch_until;
    if (!exited && deadline && !r->timed_out && (!next || deadline < next))
      next = deadline;
    if (watching && watch_next > 0 && (!next || watch_next < next))
      next = watch_next;
    struct pollfd pf[5] = {
      {st[0].fd, POLLIN, 0},
      {st[1].fd, POLLIN, 0},
      {exited ? -1 : s->stop_fd, POLLIN, 0},
      {exited ? -1 : pidfd, POLLIN, 0},
      {watching ? s->watch_fd : -1, POLLIN, 0},
    };
    int n = poll(pf, 5, wait_ms(t, next, pidfd >= 0 || exited ? 1.0 : POLL_NO_PIDFD));
    if (n < 0 && errno != EINTR)
      break;
    if (n <= 0)
      continue;
    if (pf[4].revents)
      watch_ready = 1;
    unsigned char c;
    /* one byte per wake-up: the descriptor need not be non-blocking */
    if ((pf[2].revents & POLLIN) && read(s->stop_fd, &c, 1) == 1) {
      if (!r->stopped) {
        r->stopped = c ? c : stop_sig;
        kill(s->stop_group ? -pid : pid, c == SIGINT ? SIGINT : stop_sig);
        kill_at = weftx_monotonic() + s->grace;
        event(s, WEFTX_PROC_EV_STOP, r->stopped);
      } else {
        kill(-pid, SIGKILL);
        event(s, WEFTX_PROC_EV_KILL, 0);
      }
    }
    for (int i = 0; i < 2; i++) {
      int got = st[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
                  ? read_stream(s, &st[i], r)
                  : 0;
      if (got) {
        if (got < 0)
          nomem = 1;
        else
          r->capped = 1;
        close_stream(&st[i]);
        kill(-pid, SIGKILL);
        event(s, WEFTX_PROC_EV_CAP, 0);
      }
    }
  }
  for (int i = 0; i < 2; i++) {
    if (st[i].fd >= 0 && !st[i].keep)
      pass_lines(s, &st[i], 1);
    close_stream(&st[i]);
    free(st[i].buf);
  }
  if (pidfd >= 0)
    close(pidfd);
  if (!exited)
    kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  r->raw_status = status;
  r->seconds = weftx_monotonic() - t0;
  if (nomem) {
    weft__snprintf(why, whylen, "out of memory reading the output of %s", s->argv[0]);
    return WEFT_ENOMEM;
  }
  if (eno) {
    weft__snprintf(why, whylen, "cannot run %s: %s", s->argv[0], strerror(eno));
    r->status = WEFTX_PROC_NOEXEC;
  } else if (r->timed_out) {
    r->status = WEFTX_PROC_TIMEOUT;
  } else if (WIFEXITED(status)) {
    r->status = WEXITSTATUS(status);
  } else {
    r->status = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL);
  }
  return 0;
}
