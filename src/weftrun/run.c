/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The run stage: the hostfile and this host's XML into the job directory, the
 * control channel opened before anything starts, then the engine's command
 * run (weftx_proc_run(): its own process group, stop requests, SIGTERM when
 * weftrun dies) with the control channel polled in the same loop, and what
 * the agents said turned into the exit status. The engine (mpirun or srun)
 * is only the transport, and nothing a rank or the engine prints can change
 * how the job is judged: srun's output goes where weftrun's goes; mpirun's
 * is read, because its agents hand the ranks' output on as records of whole
 * lines (engine/lines.c writes each out, the monitor's line wiped first, and
 * the rest as it came). The supervisor
 * (supervise/supervise.c) decides when the job must end (a
 * failed rank, a lost host, --timeout, a weft deadline); then every agent
 * gets END (SIGTERM, WR_END_GRACE_S, SIGKILL of its rank); mpirun normally
 * ends by itself when its ranks have, and if it has not half a second after
 * the agents' grace (ABORT_S when a rank failed: mpirun is aborting the
 * job itself) it is killed with its process group (a signal while it
 * aborts a job makes Open MPI 4.1 crash, and it can wait long for a lost
 * daemon; its daemons elsewhere end when they lose it). A stop request
 * (SIGINT, SIGTERM, SIGHUP to weftrun) is forwarded to the engine and ends
 * the agents the same way.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/check.h"
#include "engine/engine.h"
#include "hosts/hosts.h"
#include "monitor/monitor.h"
#include "plan/plan.h"
#include "supervise/supervise.h"

extern char **environ;

#define AFTER_S (WR_END_GRACE_S + 3.0) /* after mpirun ended: the agents' last words */
/* After END for a failed rank: mpirun is aborting the job itself and prints its own
 * account when done; on 3 vnodes that takes 4 s, and killing it sooner loses the account
 * a user of mpirun expects. */
#define ABORT_S 8.0

typedef struct job {
  wr_sup *s;
  wr_ctl *c;
  const wr_opts *o;
  const wr_engine *e;
  double kill_at;      /* when mpirun is killed if it is still there */
  wr_mon *mon;         /* --monitor */
  int recap, launched; /* the launch line and closing figures wanted; the first said */
  wr_banners ban;      /* the engine's stderr, its accounts of the end held */
  wr_lines lines;      /* the ranks' output, when the agents hand it on in lines */
  wr_attempt *att;     /* the restart loop's record, or NULL */
} job;

/* A restart's one line, once its ranks have all started: what ended the attempt before,
 * the hosts and world size now, how long the job was down. */
static void say_restart(const job *j, double now)
{
  const wr_attempt *a = j->att;
  const wr_plan *p = j->s->p;
  char names[600] = "", was[32] = "";
  size_t used = 0;
  int n = 0;
  for (int h = 0; h < p->nhosts; h++)
    if (p->hosts[h].count > 0) {
      int w =
        snprintf(names + used, sizeof(names) - used, "%s%s", n ? ", " : "", p->hosts[h].host->name);
      n++;
      if (w > 0 && (size_t)w < sizeof(names) - used)
        used += (size_t)w;
    }
  if (a->prev_np && a->prev_np != p->np)
    snprintf(was, sizeof(was), " (was %d)", a->prev_np);
  fprintf(stderr,
          "weftrun: restart %d of %d: %s; running again on %d host%s (%s), world size %d%s; "
          "the job was down %.1f s\n",
          a->number, a->of, a->cause, n, n == 1 ? "" : "s", names, p->np, was, now - a->down_at);
}

/* Before a rank's output is written: the monitor's line off the screen. */
static void before_output(void *arg)
{
  job *j = arg;
  wr_mon_wipe(j->mon);
}

static void on_output(void *arg, int stream, const char *data, size_t len)
{
  job *j = arg;
  wr_lines_put(&j->lines, stream, data, len);
  if (j->lines.broken == 1) { /* weftrun's output is gone: ended as mpirun ends on SIGPIPE */
    wr_signals_request(SIGPIPE);
    j->lines.broken = 2;
  }
  /* a line left open (a prompt) is not drawn over */
  wr_mon_hold(j->mon, j->lines.open);
}

static const char *reason(const wr_sup *s)
{
  switch (s->end) {
  case WR_END_TIMEOUT: return "--timeout expired";
  case WR_END_LOST: return "a host was lost";
  case WR_END_SIGNAL: return "weftrun got a signal";
  case WR_END_DEADLINE: return "a weft deadline expired";
  case WR_END_PREEMPTED: return "a VM was preempted";
  case WR_END_ENGINE: return "the engine ended";
  default: return "a rank failed";
  }
}

static double on_watch(void *arg, double now, int exited, int *stop)
{
  job *j = arg;
  wr_ctl_pump(j->c, j->s, now);
  if (j->att && j->att->number && !j->att->running && j->s->all_started_at &&
      j->s->started >= j->s->np) {
    wr_mon_wipe(j->mon);
    say_restart(j, j->s->all_started_at);
    j->att->running = j->s->all_started_at;
    j->launched = 1; /* the restart's line stands for the launch line */
  }
  if (j->recap && !j->launched && j->s->all_started_at) {
    wr_mon_wipe(j->mon);
    wr_recap_launch(j->s, j->o->started, stderr);
    j->launched = 1;
  }
  int act = wr_sup_tick(j->s, now);
  if (act)
    wr_mon_wipe(j->mon);
  if (act & WR_ACT_STACKS) {
    fprintf(stderr, "weftrun: %s; asking the agents for the stacks of the ranks still running\n",
            reason(j->s));
    wr_ctl_stacks(j->c, j->s);
  }
  if (act & WR_ACT_END) {
    if (j->s->end == WR_END_TIMEOUT)
      fprintf(stderr, "weftrun: the job ran longer than --timeout %ld s; ending it\n",
              j->o->timeout);
    wr_ctl_end(j->c, j->s, SIGTERM, reason(j->s));
    if (!j->kill_at)
      j->kill_at = now + (j->s->end == WR_END_RANK ? ABORT_S : WR_END_GRACE_S + 0.5);
  }
  /* a restart waits for no one: once the agents that are left have ended, mpirun is
   * only waiting for the lost host's daemon */
  if (j->o->restarts && j->kill_at > now && j->s->end == WR_END_LOST && wr_sup_done(j->s))
    j->kill_at = now;
  if (j->kill_at > 0 && now >= j->kill_at && !exited) {
    *stop = -1;
    j->kill_at = -1;
  }
  if (exited && wr_sup_settled(j->s))
    return 0;
  double next = wr_sup_next(j->s, now);
  return j->kill_at > 0 && j->kill_at < next ? j->kill_at : next;
}

static void on_event(void *arg, weftx_proc_event ev, int value)
{
  job *j = arg;
  wr_mon_wipe(j->mon);
  switch (ev) {
  case WEFTX_PROC_EV_STOP:
    fprintf(stderr, "weftrun: got signal %d; ending the job\n", value);
    wr_sup_signal(j->s, value, weftx_monotonic());
    break;
  case WEFTX_PROC_EV_KILL:
    fprintf(stderr, "weftrun: %s did not end with its ranks; killing it\n", j->e->name);
    break;
  case WEFTX_PROC_EV_EXIT: wr_sup_engine_exit(j->s, value, weftx_monotonic()); break;
  case WEFTX_PROC_EV_DEADLINE:
  case WEFTX_PROC_EV_CAP: break;
  }
}

/* The engine's stderr, as it comes (wr_banners_put()), to weftrun's. */
static void to_stderr(void *arg, const char *data, size_t len)
{
  job *j = arg;
  wr_mon_wipe(j->mon);
  fwrite(data, 1, len, stderr);
}

static void banners_put(void *arg, const char *data, size_t len)
{
  job *j = arg;
  wr_banners_put(&j->ban, data, len);
}

/* srun's stderr (no records): as it comes, but for mpirun-style accounts of the end. */
static void on_engine_stderr(void *arg, int stream, const char *data, size_t len)
{
  job *j = arg;
  if (stream == 2)
    wr_banners_put(&j->ban, data, len);
}

/* Does the summary name the cause of the end, so that the engine's own account of it
 * can go? Not when the engine failed on its own or ran fewer ranks than it should. */
static int cause_named(const wr_sup *s)
{
  return s->end != WR_END_NONE && s->end != WR_END_ENGINE && s->end != WR_END_MISSING;
}

/* No rank has started (every agent still to say hello). */
static int none_started(const wr_sup *s)
{
  for (int r = 0; r < s->np; r++)
    if (s->r[r].state != WR_RANK_WAITING)
      return 0;
  return 1;
}

/* The engine's command (env: variables set for it) run under supervision; the exit
 * status. */
/* What became of the attempt, for the restart loop: the verdict, its times, the hosts
 * lost (the host the verdict names, and every host whose ranks were all given up on or
 * preempted). */
static void record(const wr_sup *s, const wr_plan *p, wr_attempt *att)
{
  if (!att)
    return;
  att->ran = 1;
  att->end = s->end;
  att->np = p->np;
  att->nhosts = 0;
  for (int h = 0; h < p->nhosts; h++)
    att->nhosts += p->hosts[h].count > 0;
  att->running = s->started >= s->np && s->np > 0 ? s->all_started_at : 0;
  att->verdict_at = s->end_at;
  for (int h = 0; h < p->nhosts; h++) {
    int named = (s->end == WR_END_LOST || s->end == WR_END_PREEMPTED) &&
                ((s->end_host >= 0 && s->end_host == h) ||
                 (s->end_host < 0 && s->end_rank >= 0 && p->ranks[s->end_rank].host == h));
    int all = p->hosts[h].count > 0;
    for (int r = 0; r < s->np && all; r++)
      if (p->ranks[r].host == h && !s->r[r].lost && s->r[r].stopped != WT_CTL_STOP_PREEMPT)
        all = 0;
    if ((named || all) && att->nlost < WR_ATTEMPT_LOST_MAX)
      snprintf(att->lost[att->nlost++], sizeof(att->lost[0]), "%s", p->hosts[h].host->name);
  }
}

static int supervised(const wr_plan *p, const wr_opts *o, const wr_engine *e, char **argv,
                      const wr_argv *env, int stop_fd, wr_ctl *ctl, wr_inventory *inv,
                      wr_jobdir *dir, wr_attempt *att)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  char why[600];
  job j = {wr_sup_new(p, o, weftx_monotonic()), ctl, o, e, 0, NULL, wr_recap_wanted(o), 0, {0}};
  j.att = att;
  char **envp = wr_env_build(env);

  if (!j.s || !envp) {
    fprintf(stderr, "weftrun: out of memory\n");
    wr_sup_free(j.s);
    free(envp);
    return WR_EXIT_ENGINE;
  }
  if (o->monitor > 0) {
    int rc = wr_mon_open(o, p->np, j.s->t0, o->restarts ? att : NULL, &j.mon, why, sizeof(why));
    if (rc) {
      fprintf(stderr, "weftrun: %s\n", why);
      wr_sup_free(j.s);
      free(envp);
      return rc;
    }
    j.s->on_sample = wr_mon_sample;
    j.s->sample_arg = j.mon;
  }
  j.s->engine = e->name;
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.envp = envp;
  s.stop_signal = SIGTERM;
  s.grace = WR_ENGINE_GRACE_S;
  s.stop_fd = stop_fd;
  s.death_signal = SIGTERM; /* weftrun killed: the engine ends the job (and the agents lose us) */
  s.watch_fd = wr_ctl_fd(ctl);
  s.watch_drain = AFTER_S;
  s.on_watch = on_watch;
  s.on_event = on_event;
  s.arg = &j;
  /* the engine's stderr through weftrun, so that its accounts of the end can give way to
   * the summary (with -v all of it goes on as it comes); under mpirun all its output,
   * the agents handing their ranks' lines on as records */
  wr_banners_init(&j.ban, to_stderr, &j);
  if (wr_engine_lines(e)) {
    wr_lines_init(&j.lines, before_output, &j);
    if (!o->verbose) {
      j.lines.rest = banners_put;
      j.lines.rest_arg = &j;
    }
    s.out = s.err = WEFTX_PROC_PIPE;
    s.on_output = on_output;
  } else if (!o->verbose) {
    s.err = WEFTX_PROC_PIPE;
    s.raw = 1;
    s.on_output = on_engine_stderr;
  }
  int rc = 0;
  int failed = weftx_proc_run(&s, &r, why, sizeof(why));
  free(envp);
  /* mpirun's own children out of its group, left running when it died: srun under Slurm
   * waits for a dead node's daemon for ever, its job step holding the other nodes' CPUs
   * from a restart; whatever else, nothing of the job outlives it. A tenth of a second
   * after SIGTERM, then SIGKILL: neither srun nor the remote shells to the other hosts'
   * daemons end on SIGTERM while a host is dead, and a restart waits for this (half a
   * second of grace made the job down 1.1 s instead of 0.6 on the virtual cluster). */
  double orphans_at = weftx_monotonic();
  int orphans = weftx_proc_end_orphans(0.1);
  if (orphans && o->verbose)
    fprintf(stderr, "weftrun: ended %d process%s %s left behind (in %.2f s)\n", orphans,
            orphans == 1 ? "" : "es", e->name, weftx_monotonic() - orphans_at);
  /* mpirun failed with nothing else to say, but said which host's daemon it lost (the
   * host's agents died with it before their closes left the machine) */
  char node[256];
  if (!failed && j.s->end == WR_END_ENGINE && wr_banners_lost_node(&j.ban, node, sizeof(node)))
    for (int h = 0; h < p->nhosts; h++)
      if (wr_same_host(p->hosts[h].host->name, node)) {
        wr_sup_engine_lost(j.s, h, weftx_monotonic());
        break;
      }
  record(j.s, p, att);
  wr_mon_close(j.mon);
  /* weftrun's own lines start lines of their own, after a rank's unfinished last line on
   * stderr (or on the terminal both go to); nothing is added to a program's stdout */
  if (j.lines.open && (j.lines.last == stderr || (isatty(1) && isatty(2))))
    fputc('\n', stderr);
  if (!failed && !(r.status == WEFTX_PROC_NOEXEC && why[0]) && j.s->end == WR_END_ENGINE &&
      j.s->engine_status > 0 && none_started(j.s))
    rc = wr_check_name_unreached(o, e, inv, dir, stop_fd, WR_CHECK_UNREACHED_S);
  wr_banners_end(&j.ban, rc || cause_named(j.s));
  if (rc) {
    /* said by wr_check_name_unreached() */
  } else if (failed) {
    fprintf(stderr, "weftrun: %s\n", why);
    rc = WR_EXIT_ENGINE;
  } else if (r.status == WEFTX_PROC_NOEXEC && why[0]) {
    fprintf(stderr, "weftrun: %s could not be started: %s (exit %d)\n", e->name, why,
            WR_EXIT_ENGINE);
    rc = WR_EXIT_ENGINE;
  } else {
    rc = wr_summary(j.s, o, stderr);
    if (j.recap)
      wr_recap_end(j.s, o->started, weftx_monotonic(), stderr);
  }
  wr_sup_free(j.s);
  return rc;
}

/* Once, when ranks go to other hosts: the user's variables that look meant for the job
 * but stay here under mpirun's rule (only -x variables reach the other hosts), with
 * the -x to add. A torchrun user expects the whole environment everywhere. */
static void say_left_here(const wr_plan *p, const wr_opts *o)
{
  char names[700], xs[1000] = "", list[800] = "";
  size_t nl = 0, nx = 0;
  int n = wr_engine_left_here(p, o, environ, names, sizeof(names)), shown = 0;
  if (!n || o->quiet)
    return;
  for (char *t = strtok(names, " "); t; t = strtok(NULL, " ")) {
    int a = snprintf(list + nl, sizeof(list) - nl, "%s%s", shown ? ", " : "", t);
    int b = snprintf(xs + nx, sizeof(xs) - nx, "%s-x %s", shown ? " " : "", t);
    if (a < 0 || b < 0 || (size_t)a >= sizeof(list) - nl || (size_t)b >= sizeof(xs) - nx)
      break;
    nl += (size_t)a;
    nx += (size_t)b;
    shown++;
  }
  list[nl] = xs[nx] = '\0';
  fprintf(stderr,
          "weftrun: %s%s%.0d%s %s set here but reach%s only this host's ranks (mpirun "
          "passes only -x variables to the other hosts); add %s to send %s to every host\n",
          list, shown < n ? " and " : "", shown < n ? n - shown : 0, shown < n ? " more" : "",
          n == 1 ? "is" : "are", n == 1 ? "es" : "", xs, n == 1 ? "it" : "them");
}

/* -v: what the ranks get besides mpirun's environment (plain mpirun sets none of it). */
static void say_rank_vars(const wr_plan *p, const wr_opts *o, const wr_net *net, wr_inventory *inv)
{
  wr_preview pv;
  char why[600];
  memset(&pv, 0, sizeof(pv));
  if (wr_preview_make(p, inv, net, o, &pv, why, sizeof(why))) {
    fprintf(stderr, "weftrun: cannot list the ranks' variables: %s\n", why);
    return;
  }
  for (int i = 0; i < pv.nall; i++)
    fprintf(stderr, "weftrun: every rank gets %s (%s)\n", pv.all[i], pv.source[i]);
  if (pv.rank && p->np > 0 && pv.nrank[0]) {
    fprintf(stderr, "weftrun: each rank gets its own");
    for (int i = 0; i < pv.nrank[0]; i++)
      fprintf(stderr, " %.*s", (int)strcspn(pv.rank[0][i], "="), pv.rank[0][i]);
    fprintf(stderr, " (--dry-run shows each rank's values)\n");
  }
  wr_preview_free(&pv, p->np);
}

/* The hostfile into the job directory; its path in \p path. */
static int write_hostfile(const wr_plan *p, const wr_engine *e, wr_jobdir *dir, char *path,
                          size_t len)
{
  char why[600];
  FILE *f = wr_jobdir_file(dir, "hostfile", path, len, why, sizeof(why));
  if (!f || wr_engine_hostfile(p, e, f) | fclose(f)) {
    fprintf(stderr, "weftrun: %s\n", f ? "cannot write the hostfile" : why);
    return WR_EXIT_ENGINE;
  }
  return 0;
}

static void write_host_xml(const wr_plan *p, wr_jobdir *dir, char *path, size_t len)
{
  char why[600];
  const weftx_topo *t = wr_engine_local_topo(p);
  FILE *f = t ? wr_jobdir_file(dir, "topology.xml", path, len, why, sizeof(why)) : NULL;
  /* without it, every rank here probes its host itself */
  if (!f || (weftx_topo_export_xml(t, f) != 0) | (fclose(f) != 0))
    path[0] = '\0';
}

int wr_run(const wr_plan *p, const wr_opts *o, const wr_net *net, wr_engine *e, wr_inventory *inv,
           wr_jobdir *dir, int stop_fd, wr_attempt *att)
{
  char hostfile[4096], xml[4096], why[600];
  int rc = wr_engine_ready(o, e);
  if (rc)
    return rc;
  rc = write_hostfile(p, e, dir, hostfile, sizeof(hostfile));
  if (rc)
    return rc;
  write_host_xml(p, dir, xml, sizeof(xml));
  /* the control channel listens before anything starts; its secret reaches the agents
   * in the environment (WEFT_* goes to every host), never on a command line */
  wr_ctl *ctl = NULL;
  if (wr_ctl_open(net, p->np, &ctl, why, sizeof(why))) {
    fprintf(stderr, "weftrun: %s\n", why);
    return WR_EXIT_ENGINE;
  }
  /* the job's name for TORCHELASTIC_RUN_ID, the same on every host */
  if (setenv(WT_CTL_SECRET_ENV, wr_ctl_secret(ctl), 1) || setenv("WEFT_JOB_ID", o->job, 1)) {
    fprintf(stderr, "weftrun: out of memory\n");
    wr_ctl_close(ctl);
    return WR_EXIT_ENGINE;
  }
  e->hostfile = hostfile;
  e->host_xml = xml[0] ? xml : NULL;
  e->control = wr_ctl_address(ctl);
  wr_argv a = {NULL, 0, 0}, env = {NULL, 0, 0};
  if ((rc = wr_engine_argv(p, o, net, e, &a, &env, why, sizeof(why))))
    fprintf(stderr, "weftrun: %s\n", why);
  /* srun and Hydra hand every rank the whole environment; mpirun only its -x variables */
  if (!rc && e->kind == WR_ENGINE_MPIRUN)
    say_left_here(p, o);
  if (!rc && o->verbose) {
    say_rank_vars(p, o, net, inv);
    for (int i = 0; i < env.n; i++)
      fprintf(stderr, "weftrun: environment %s%s\n", env.v[i],
              strchr(env.v[i], '=') ? "" : " (unset)");
    wr_argv_print(stderr, "weftrun: running", &a);
  }
  if (!rc)
    rc = supervised(p, o, e, a.v, &env, stop_fd, ctl, inv, dir, att);
  wr_argv_free(&a);
  wr_argv_free(&env);
  unsetenv(WT_CTL_SECRET_ENV);
  unsetenv("WEFT_JOB_ID");
  wr_ctl_close(ctl);
  return rc;
}
