/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The run stage: run the engine's command (weftx_proc_run(): its own process
 * group, a deadline, stop requests) and turn how the job ended into weftrun's
 * exit status. The engine's stderr is passed on line by line, watching for the
 * one line weft-rank prints when a program fails (agent.h) and, as a fallback,
 * for mpirun's or srun's own report. A stop request (SIGINT, SIGTERM, SIGHUP
 * to weftrun) is forwarded to the engine, which ends every rank on every host;
 * --timeout does the same. Whatever has not ended within the grace period is
 * killed with its process group.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weftrun.h"

#define GRACE_S 10.0      /* from forwarding a signal to SIGKILL */
#define DRAIN_S 3.0       /* reading the last output after mpirun has gone */
#define MPIRUN_TIMEOUT_LEEWAY_S 60  /* after mpirun's own --timeout, weftrun's */
#define MPIRUN_TIMEOUT_STATUS 110   /* mpirun 4.1's exit status on --timeout (ETIMEDOUT) */

typedef struct failure {
  int seen;
  int code;
  char what[1024];
  int lost;          /* mpirun said it lost a daemon; the next lines name the host */
  int first_rank;    /* "Process name: [[j,1],R]" of mpirun's non-zero-status report, or -1 */
  const wr_plan *plan;
  const wr_opts *o;
  const wr_engine *e;
} failure;

/* " (ranks 4-7)" of the plan's host \p name. */
static void
ranks_of(const wr_plan *p, const char *name, char *buf, size_t len)
{
  int first = -1, last = -1, n = 0, h = p ? wr_plan_host_of(p, name) : -1;
  buf[0] = '\0';
  for (int r = 0; h >= 0 && r < p->np; r++)
    if (p->ranks[r].host == h) {
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

/* A failed rank as weftrun names it: its host as the plan has it. */
static void
agent_line(failure *f, const weft_agent_failure *af)
{
  const char *host = af->host;
  if (f->plan && af->rank >= 0 && af->rank < f->plan->np)
    host = f->plan->hosts[f->plan->ranks[af->rank].host].host->name;
  f->seen = 1;
  f->code = af->code;
  snprintf(f->what, sizeof(f->what), "rank %d host %s gpu %s: %s", af->rank, host, af->gpu,
           af->what);
}

static void
watch_line(const char *line, failure *f)
{
  weft_agent_failure af;
  const char *p;
  int rank, sig;
  char host[256];
  if (f->seen)
    return;
  if (weft_agent_fail_parse(line, &af)) {
    agent_line(f, &af);
    return;
  }
  /* mpirun's own words, when weft-rank itself could not say it.
   * "Process name: [[13077,1],2]" then "Exit code:    3" (rank output sent to files) */
  if ((p = strstr(line, "Process name: [[")) && sscanf(p, "Process name: [[%*d,%*d],%d]", &rank) == 1)
    f->first_rank = rank;
  if (f->first_rank >= 0 && (p = strstr(line, "Exit code:")) && sscanf(p, "Exit code: %d", &sig) == 1) {
    f->seen = 1;
    f->code = sig;
    snprintf(f->what, sizeof(f->what), "rank %d: exited with status %d", f->first_rank, sig);
    return;
  }
  if (strstr(line, "lost communication with a remote daemon"))
    f->lost = 1;
  if (f->lost && (p = strstr(line, "Remote daemon:")) && (p = strstr(p, " on node ")) &&
      sscanf(p, " on node %255s", host) == 1) {
    char ranks[64];
    ranks_of(f->plan, host, ranks, sizeof(ranks));
    f->seen = 1;
    f->code = WR_EXIT_HOSTLOST;
    snprintf(f->what, sizeof(f->what), "host %s lost%s: its Open MPI daemon stopped answering "
             "(machine down or network cut)", host, ranks);
    return;
  }
  /* srun's words: "srun: error: vnode1: task 3: Exited with exit code 3" */
  if ((p = strstr(line, "srun: error: ")) && sscanf(p, "srun: error: %255[^:]: task %d: Exited "
                                                    "with exit code %d", host, &rank, &sig) == 3 &&
      sig != 0) {
    f->seen = 1;
    f->code = sig;
    snprintf(f->what, sizeof(f->what), "rank %d host %s: exited with status %d", rank, host, sig);
    return;
  }
  if ((p = strstr(line, "mpirun noticed that process rank ")) &&
      sscanf(p, "mpirun noticed that process rank %d with PID %*d on node %255s exited on signal %d",
             &rank, host, &sig) == 3) {
    f->seen = 1;
    f->code = 128 + sig;
    snprintf(f->what, sizeof(f->what), "rank %d host %s: killed by signal %d", rank, host, sig);
  }
}

/* mpirun's stderr, whole lines at a time: watched line by line, passed on at once. */
static void
on_output(void *arg, int stream, const char *data, size_t len)
{
  failure *f = arg;
  char line[4096];
  (void)stream;
  for (size_t start = 0; start < len && !f->seen;) {
    const char *nl = memchr(data + start, '\n', len - start);
    size_t n = (nl ? (size_t)(nl - data) + 1 : len) - start;
    char *copy = n < sizeof(line) ? line : malloc(n + 1);
    if (copy) {
      memcpy(copy, data + start, n);
      copy[n] = '\0';
      watch_line(copy, f);
      if (copy != line)
        free(copy);
    }
    start += n;
  }
  fwrite(data, 1, len, stderr);
  fflush(stderr);
}

static void
on_event(void *arg, weftx_proc_event ev, int value)
{
  const failure *f = arg;
  switch (ev) {
  case WEFTX_PROC_EV_DEADLINE:
    fprintf(stderr, "weftrun: the job ran longer than --timeout %ld s; ending it\n", f->o->timeout);
    break;
  case WEFTX_PROC_EV_STOP:
    fprintf(stderr, "weftrun: got signal %d; ending the job\n", value);
    break;
  case WEFTX_PROC_EV_KILL:
    fprintf(stderr, "weftrun: %s did not end within %.0f s; killing it\n", f->e->name, GRACE_S);
    break;
  case WEFTX_PROC_EV_CAP:
    break;
  }
}

int
wr_run(const wr_plan *p, const wr_opts *o, const wr_engine *e, char **argv, const wr_argv *env,
       int stop_fd)
{
  failure f = { 0, 0, "", 0, -1, p, o, e };
  weftx_proc_spec s;
  weftx_proc_result r;
  char why[600];
  char **envp = wr_env_build(env);

  if (!envp) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.envp = envp;
  s.err = WEFTX_PROC_PIPE;
  /* with --report-state-on-timeout or --get-stack-traces, mpirun keeps the deadline (and
   * reports); weftrun's own comes later, in case mpirun does not */
  s.timeout = (double)o->timeout + (o->timeout && o->timeout_report ? MPIRUN_TIMEOUT_LEEWAY_S : 0);
  s.stop_signal = SIGTERM;
  s.grace = GRACE_S;
  s.drain = DRAIN_S;
  s.stop_fd = stop_fd;
  s.on_output = on_output;
  s.on_event = on_event;
  s.arg = &f;
  int failed = weftx_proc_run(&s, &r, why, sizeof(why));
  free(envp);
  if (failed) {
    fprintf(stderr, "weftrun: %s\n", why);
    return WR_EXIT_ENGINE;
  }
  if (r.timed_out || (o->timeout && o->timeout_report && r.status == MPIRUN_TIMEOUT_STATUS)) {
    fprintf(stderr, "weftrun: job ended: --timeout %ld s expired (exit %d)\n", o->timeout,
            WR_EXIT_TIMEOUT);
    return WR_EXIT_TIMEOUT;
  }
  if (r.stopped) {
    fprintf(stderr, "weftrun: job ended by signal %d (exit %d)\n", r.stopped, 128 + r.stopped);
    return 128 + r.stopped;
  }
  if (f.seen) {
    fprintf(stderr, "weftrun: job failed: %s (exit %d)\n", f.what, f.code);
    return f.code;
  }
  if (r.status == 0)
    return WR_EXIT_OK;
  if (r.status == WEFTX_PROC_NOEXEC) {
    fprintf(stderr, "weftrun: %s could not be started%s%s (exit %d)\n", e->name,
            why[0] ? ": " : "", why, WR_EXIT_ENGINE);
    return WR_EXIT_ENGINE;
  }
  if (WIFEXITED(r.raw_status))
    fprintf(stderr, "weftrun: %s failed with status %d before any rank reported a failure "
            "(exit %d); see its message above\n", e->name, r.status, WR_EXIT_ENGINE);
  else
    fprintf(stderr, "weftrun: %s was killed by signal %d (exit %d)\n", e->name, r.status - 128,
            WR_EXIT_ENGINE);
  return WR_EXIT_ENGINE;
}
