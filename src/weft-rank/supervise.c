/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run the rank's program as a child and stay with it, in one poll loop: tell
 * weftrun that it started, send heartbeats with its current weft call, and
 * when it ends how (EXITED); forward the signals Open MPI sends, so that a
 * job teardown reaches the program; on weftrun's END, or when weftrun is lost
 * (the connection closed, or silent past its bound: the dead man's switch),
 * end the program (SIGTERM, a grace, SIGKILL) and exit; kill it when
 * weft-rank's own parent goes away. After a forwarded SIGTERM/SIGINT the
 * program gets GRACE_S seconds before SIGKILL; after a preemption notice the
 * --preempt-grace seconds. The line printed when the rank fails is for the
 * user to read; weftrun takes what happened from the EXITED message only.
 * The program is found as Open MPI finds it (mpirun --path first, then $PATH).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft-rank.h"

#define GRACE_S 5
#define EXITED_SEND_S 3.0   /* the last message's bound */
#define DAEMON_DEATH_MS 100 /* a stop: is the daemon dying (daemon_dead)? */
#define LOOK_S 0.25         /* how often the program's state is looked at */
#define LOOK_GAP_S 2.0      /* a longer gap between looks: the agent itself was held up */

static volatile sig_atomic_t child = 0;
static volatile sig_atomic_t told_to_stop = 0;
static volatile sig_atomic_t preempting = 0;
static volatile sig_atomic_t alarm_killed = 0; /* SIGKILL after a forwarded stop's grace */
static unsigned preempt_grace = WEFTX_PREEMPT_GRACE_S;
static wk_monitor_conf monitor = {.gpu = -1}; /* --monitor: every 0 for none */

void wk_supervise_set_monitor(double every, const char *nic, int gpu, const char *pci,
                              const char *prom_dir, const char *job)
{
  monitor.every = every;
  snprintf(monitor.nic, sizeof(monitor.nic), "%s", nic ? nic : "");
  monitor.gpu = gpu;
  snprintf(monitor.pci, sizeof(monitor.pci), "%s", pci ? pci : "");
  monitor.prom_dir = prom_dir;
  monitor.job = job;
}

void wk_supervise_set_grace(long seconds) { preempt_grace = (unsigned)seconds; }

/* From the watcher's thread: the signal then reaches the handler below, on any thread. */
void wk_supervise_preempt(void)
{
  preempting = 1;
  kill(getpid(), WEFTX_PREEMPT_SIGNAL);
}

static void forward(int sig)
{
  if (sig == SIGALRM) {
    if (child > 0) {
      kill(child, SIGKILL);
      alarm_killed = 1;
    }
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

static const int forwarded[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGCONT, SIGALRM};

/* Run the program as Open MPI's daemon would: with mpirun --path DIRS (which Open MPI
 * hands on as OMPI_exec_path), a name without '/' is looked for in DIRS before $PATH.
 * Returns only on failure, with errno set. */
static void exec_program(char **argv)
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

/* How the rank ended beside its status: SIGKILL needed after the grace (killed), and
 * for WT_CTL_STOP_STOPPED how long it had been stopped. */
typedef struct end_extra {
  int killed;
  double stopped_s;
} end_extra;

static void exited_msg(wk_channel *ch, int code, int sig, int stopped, const char *why,
                       const wk_page *page, double ran, const struct rusage *ru, const end_extra *x)
{
  wt_ctl_out m;
  weftx_page snap;
  wt_ctl_begin(&m, WT_CTL_EXITED);
  wt_ctl_put_int(&m, WT_CTL_T_CODE, code);
  wt_ctl_put_int(&m, WT_CTL_T_SIGNAL, sig);
  wt_ctl_put_int(&m, WT_CTL_T_STOPPED, stopped);
  if (x && x->killed)
    wt_ctl_put_int(&m, WT_CTL_T_KILLED, 1);
  if (x && stopped == WT_CTL_STOP_STOPPED)
    wt_ctl_put_int(&m, WT_CTL_T_STOPPED_MS, (int64_t)(x->stopped_s * 1000));
  wt_ctl_put_int(&m, WT_CTL_T_RUN_MS, (int64_t)(ran * 1000));
  if (ru) { /* the rank's totals, from the kernel (with its descendants it waited for) */
    wt_ctl_put_int(&m, WT_CTL_T_CPU_MS,
                   (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
                     (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000);
    wt_ctl_put_int(&m, WT_CTL_T_RSS, (int64_t)ru->ru_maxrss * 1024);
  }
  if (why)
    wt_ctl_put_str(&m, WT_CTL_T_WHY, why);
  if (page && wk_page_read(page, &snap) == 0)
    wk_page_put(&m, &snap, weftx_monotonic());
  wk_channel_send(ch, &m);
}

/* The failure line on stderr only when weftrun will not say it: no control channel
 * (weft-rank under plain mpirun or srun), or the channel lost before the word went. */
static void fail_said(wk_channel *ch, const wt_agent_who *who, const char *why, int code, int sig)
{
  if (wk_channel_fd(ch) < 0)
    wt_agent_fail_print(stderr, who, why, code, sig);
}

int wk_setup_failed(wk_channel *ch, const wt_agent_who *who, const char *why, int code)
{
  exited_msg(ch, code, 0, WT_CTL_STOP_SETUP, why, NULL, 0, NULL, NULL);
  wk_channel_flush(ch, EXITED_SEND_S);
  fail_said(ch, who, why, code, 0);
  return code;
}

static int setup_errno(wk_channel *ch, const wt_agent_who *who, const char *what, int e)
{
  char why[200];
  snprintf(why, sizeof(why), "%s failed: %s", what, strerror(e));
  return wk_setup_failed(ch, who, why, WK_EXIT_SETUP);
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

/* The command name of process pid (/proc/PID/comm) in buf; "" when unknown. */
static const char *proc_comm(pid_t pid, char *buf, size_t len)
{
  char path[64];
  snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
  FILE *f = fopen(path, "r");
  buf[0] = '\0';
  if (!f)
    return buf;
  if (!fgets(buf, (int)len, f))
    buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
  return buf;
}

/* After the dead man's switch for a silent weftrun (a cut network), once the rank
 * has ended: Open MPI's daemon here would wait for its launcher for as long as TCP
 * takes to give up (minutes), so it is ended too. Only the daemon of Open MPI
 * (orted), never another engine's. */
static void end_orphaned_daemon(void)
{
  char comm[32];
  pid_t pp = getppid();
  if (pp > 1 && !strcmp(proc_comm(pp, comm, sizeof(comm)), "orted"))
    kill(pp, SIGTERM);
}

/* Whether process pid is a host's engine daemon, whose death means its host is lost
 * to the job: Open MPI's orted (prted from 5.0 on) or Slurm's slurmstepd; not mpirun,
 * whose death is the engine's own end. */
static int host_daemon(pid_t pid)
{
  char comm[32];
  proc_comm(pid, comm, sizeof(comm));
  return !strcmp(comm, "orted") || !strcmp(comm, "prted") || !strcmp(comm, "slurmstepd");
}

/* Whether the host's daemon (dfd: its pidfd; -1: none watched) has died, waiting up
 * to ms for it. A daemon killed outright sends its children the parent death signal
 * (SIGTERM) as soon as the thread that started them dies, while its other threads may
 * still be going: the stop can come before the daemon is gone. One that stops its
 * ranks itself (the engine's teardown) lives on until they are gone. */
static int daemon_dead(int dfd, pid_t daemon, int ms)
{
  struct pollfd pf = {dfd, POLLIN, 0};
  if (getppid() != daemon)
    return 1;
  return dfd >= 0 && poll(&pf, 1, ms) == 1;
}

/* Start ending the child: SIGTERM now, SIGKILL at *kill_at. */
static void stop_child(pid_t pid, int sig, double grace, double *kill_at)
{
  if (*kill_at)
    return;
  kill(pid, SIGCONT);
  kill(pid, sig > 0 ? sig : SIGTERM);
  *kill_at = weftx_monotonic() + grace;
}

int wk_supervise(char **argv, const wt_agent_who *who, wk_channel *ch, wk_page *page)
{
  int errp[2];
  if (pipe(errp))
    return setup_errno(ch, who, "pipe", errno);
  fcntl(errp[0], F_SETFD, FD_CLOEXEC);
  fcntl(errp[1], F_SETFD, FD_CLOEXEC);

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
    sigaction(forwarded[i], &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* Open MPI's daemon going away without a word must not leave the program behind. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  pid_t daemon = getppid();
  if (daemon == 1)
    return wk_setup_failed(ch, who, "the engine (mpirun's daemon) went away", WK_EXIT_SETUP);

  /* the program's orphans (a setsid daemon) come to the agent, which ends them with it */
  wk_leftovers_start();
  pid_t agent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return setup_errno(ch, who, "fork", errno);
  if (pid == 0) {
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
      signal(forwarded[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent)
      _exit(128 + SIGKILL);
      /* the agent's stack tools may look at the rank where Yama allows only ancestors */
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, (unsigned long)agent, 0, 0, 0);
#endif
    close(errp[0]);
    exec_program(argv);
    int e = errno;
    if (write(errp[1], &e, sizeof(e)) < 0)
      _exit(127);
    _exit(127);
  }
  child = pid;
  double t0 = weftx_monotonic();
  close(errp[1]);
  int e = 0;
  ssize_t n;
  do
    n = read(errp[0], &e, sizeof(e));
  while (n < 0 && errno == EINTR);
  close(errp[0]);

  if (n != (ssize_t)sizeof(e)) {
    wt_ctl_out m;
    wt_ctl_begin(&m, WT_CTL_STARTED);
    wt_ctl_put_int(&m, WT_CTL_T_PID, pid);
    wk_channel_send(ch, &m);
  }

  int pidfd = pidfd_of(pid), status = 0, stopped = 0, orphaned = 0;
  /* the daemon's death says that this host dropped out of the job; mpirun's is the
   * engine's own end, not watched */
  int dfd = host_daemon(daemon) ? pidfd_of(daemon) : -1;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  wk_monitor *mon = ch && monitor.every > 0 && n != (ssize_t)sizeof(e)
                      ? wk_monitor_new((long)pid, &monitor, who, weftx_monotonic())
                      : NULL;
  double kill_at = 0;
  /* the program stopped (SIGSTOP, Ctrl-Z: state T, or t under a tracer) since stop_seen;
   * looked at every LOOK_S, and a look after a gap of the agent's own (it was stopped
   * or starved itself) starts the count again */
  double stop_seen = 0, looked = 0;
  end_extra extra = {0, 0};
  pid_t w = 0;
  char why[300];
  for (;;) {
    do
      w = wait4(pid, &status, WNOHANG, &ru);
    while (w < 0 && errno == EINTR);
    if (w != 0)
      break;
    wk_leftovers_reap_except(pid);
    double now = weftx_monotonic();
    if (told_to_stop && !stopped)
      stopped = preempting ? WT_CTL_STOP_PREEMPT : WT_CTL_STOP_ENGINE;
    if (kill_at && now >= kill_at) {
      kill(pid, SIGKILL);
      extra.killed = 1;
      kill_at = now + 3600; /* once */
    }
    if (ch && wk_channel_fd(ch) >= 0 && !stopped && !kill_at && now - looked >= LOOK_S) {
      char st = wk_leftovers_state(pid);
      if (looked && now - looked > LOOK_GAP_S)
        stop_seen = 0;
      looked = now;
      if (st != 'T' && st != 't')
        stop_seen = 0;
      else if (!stop_seen)
        stop_seen = now;
      else if (now - stop_seen > wk_channel_lost(ch)) {
        /* lost to the job as a silent host would be, and said so: stopped, not slow */
        stopped = WT_CTL_STOP_STOPPED;
        extra.stopped_s = now - stop_seen;
        stop_child(pid, SIGTERM, wk_channel_grace(ch), &kill_at);
      }
    }
    if (ch && wk_channel_fd(ch) >= 0) {
      weftx_page snap;
      const weftx_page *ps = page && wk_page_read(page, &snap) == 0 ? &snap : NULL;
      const wk_channel_event *ev = wk_channel_pump(ch, now, ps, why, sizeof(why));
      if (ev->type < 0) {
        /* the dead man's switch: nobody would know of this rank any more */
        fprintf(stderr, "weft-rank: rank %d host %s: lost weftrun (%s); ending the rank\n",
                who->rank, who->host, why);
        if (!stopped)
          stopped = WT_CTL_STOP_LOST;
        orphaned = !strstr(why, "closed");
        stop_child(pid, SIGTERM, wk_channel_grace(ch), &kill_at);
      } else if (ev->type == WT_CTL_END) {
        if (!stopped)
          stopped = WT_CTL_STOP_END;
        stop_child(pid, ev->signal, wk_channel_grace(ch), &kill_at);
      } else if (ev->type == WT_CTL_STACK_REQ) {
        wk_stack_send(ch, (long)pid, who);
        wk_channel_heard(ch, weftx_monotonic()); /* the wait was ours, not weftrun's */
        continue;
      } else if (ev->type) {
        continue;
      }
    }
    wk_monitor_tick(mon, ch, now);
    double next = ch ? wk_channel_next(ch) : 0;
    if (mon && (!next || wk_monitor_next(mon) < next))
      next = wk_monitor_next(mon);
    if (kill_at && (!next || kill_at < next))
      next = kill_at;
    if (wk_channel_fd(ch) >= 0 && !stopped && !kill_at && (!next || looked + LOOK_S < next))
      next = looked + LOOK_S;
    int ms = next ? (int)((next - now) * 1000) + 1 : 1000;
    if (ms > 1000 || ms < 0)
      ms = ms < 0 ? 0 : 1000;
    if (pidfd < 0 && ms > 50)
      ms = 50;
    struct pollfd pf[2] = {{ch ? wk_channel_fd(ch) : -1, POLLIN, 0}, {pidfd, POLLIN, 0}};
    poll(pf, 2, ms);
  }
  child = 0;
  alarm(0);
  if (alarm_killed)
    extra.killed = 1;
  /* the rank's Open MPI shared memory, which a killed rank leaves in /dev/shm */
  wk_leftovers_shm();
  wk_monitor_free(mon);
  if (pidfd >= 0)
    close(pidfd);
  if (told_to_stop && !stopped)
    stopped = preempting ? WT_CTL_STOP_PREEMPT : WT_CTL_STOP_ENGINE;
  /* A stop that came from the host's daemon dying (the SIGTERM of PR_SET_PDEATHSIG),
   * not from the engine ending the job: the host dropped out of the job, which weftrun
   * must not take for a rank the engine stopped. */
  if (stopped == WT_CTL_STOP_ENGINE && dfd >= 0 && daemon_dead(dfd, daemon, DAEMON_DEATH_MS))
    stopped = WT_CTL_STOP_DAEMON;
  if (dfd >= 0)
    close(dfd);
  double ran = weftx_monotonic() - t0;
  if (n == (ssize_t)sizeof(e)) {
    snprintf(why, sizeof(why), "cannot run '%s': %s", argv[0], strerror(e));
    exited_msg(ch, WEFTX_PROC_NOEXEC, 0, WT_CTL_STOP_NONE, why, NULL, ran, NULL, NULL);
    wk_channel_flush(ch, EXITED_SEND_S);
    fail_said(ch, who, why, WEFTX_PROC_NOEXEC, 0);
    return WEFTX_PROC_NOEXEC;
  }
  if (w < 0)
    return setup_errno(ch, who, "waitpid", errno);
  int code, sig = 0;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else {
    sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    code = 128 + sig;
  }
  /* The same from mpirun itself (its host's ranks are its children), or from a daemon
   * whose death could not be watched: no word, mpirun's end or the closed connection
   * says it. */
  if (stopped == WT_CTL_STOP_ENGINE && getppid() != daemon) {
    wk_leftovers_end(who, 0);
    return code;
  }
  exited_msg(ch, code, sig, stopped, NULL, page, ran, &ru, &extra);
  wk_channel_flush(ch, orphaned ? 0.1 : EXITED_SEND_S);
  if (code && !stopped)
    fail_said(ch, who, NULL, code, sig);
  fflush(stderr);
  /* what the program left running ends with the rank (after its word: not delayed); said
   * when the program ended on its own, part of ending the rank when it was ended */
  wk_leftovers_end(who, !stopped);
  if (orphaned)
    end_orphaned_daemon();
  return code;
}
