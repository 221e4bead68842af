/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Supervision: what weftrun knows of every rank, from its agent alone. The
 * control channel's server (control.c) reads the agents' messages; the
 * supervisor's rules (supervise.c, pure) decide when and why the job ends;
 * what the end says: the summary line (summary.c), the launch line and the
 * closing figures (recap.c). run.c (weftrun.h) drives them.
 */
#ifndef WR_SUPERVISE_H
#define WR_SUPERVISE_H

#include "sample.h"
#include "weftrun.h"

/* A host whose agents say nothing for this long is lost (--host-timeout): long enough
 * for an agent starved on an overloaded machine; a machine down or cut off is found
 * sooner, its kernel no longer acknowledging (WT_CTL_UNANSWERED_S, keepalive). */
#define WR_HOST_TIMEOUT_S 30.0
/* Ranks not started this long after the last agent that connected are given up on
 * (--launch-timeout): their daemon could not be started or cannot reach mpirun, which
 * would wait for ever. Measured from the last arrival, not the first, so that a launch
 * across thousands of hosts that keeps making progress is never cut short. */
#define WR_LAUNCH_TIMEOUT_S 60.0
/* After "end the job": an agent's SIGTERM to SIGKILL, and mpirun's SIGTERM to SIGKILL. */
#define WR_END_GRACE_S 2.0
#define WR_ENGINE_GRACE_S 4.0

/* supervise.c: what the control channel told of every rank, and the rules that end
 * the job (pure: times are passed in). */
typedef enum wr_rank_state {
  WR_RANK_WAITING = 0, /* its agent has not connected */
  WR_RANK_CONNECTED,   /* connected, the rank not started yet */
  WR_RANK_RUNNING,
  WR_RANK_EXITED, /* EXITED came */
  WR_RANK_GONE,   /* its connection closed without EXITED */
} wr_rank_state;

typedef struct wr_rank {
  wr_rank_state state;
  int lost;           /* its host (or agent) was declared lost: not waited for */
  int unanswered;     /* its connection failed: the machine stopped acknowledging */
  int running_at_end; /* running when the verdict came (summaries) */
  double hello_at, seen, started_at, exited_at, gone_at;
  long agent_pid, pid;
  char host[64];          /* the agent's own name for its host */
  char gpu[64];           /* "2 (0000:0a:00.0)" or "none" */
  int code, sig, stopped; /* EXITED's; stopped: WT_CTL_STOP_* */
  int killed;             /* EXITED's: SIGTERM was not enough, SIGKILL after the grace */
  double stopped_s;       /* EXITED's with WT_CTL_STOP_STOPPED: how long it was stopped */
  char why[512];
  /* its last weft call (call page) */
  int have_call, wstate, op, group_first, group_size;
  char group[32];
  long long bytes, calls;
  double call_since; /* weftrun's clock */
  char *members;     /* a deadline's group, "0-3,8" */
  char *stack;       /* --get-stack-traces */
  size_t stack_len;
  int stack_asked, stack_done;
  /* what it used: its last SAMPLE (--monitor), and its totals (EXITED's, else the samples') */
  wt_sample last;
  int nsamples;
  long long cpu_ms, peak_rss;           /* -1: not known */
  long long gpu_util_sum, gpu_mem_peak; /* its GPU's, over gpu_n samples (NVML) */
  int gpu_n;
} wr_rank;

typedef enum wr_end {
  WR_END_NONE = 0,
  WR_END_RANK,     /* a rank failed on its own */
  WR_END_DEADLINE, /* a weft deadline ended a rank: the absent are the cause */
  WR_END_LOST,     /* a host (or an agent) was lost */
  WR_END_TIMEOUT,  /* --timeout */
  WR_END_SIGNAL,   /* weftrun got a signal */
  WR_END_PREEMPTED,
  WR_END_ENGINE,     /* mpirun failed, nothing else to say */
  WR_END_NOFINALIZE, /* a rank exited 0 before the others, unfinalized */
  WR_END_MISSING,    /* mpirun exited 0 but ranks never ran */
} wr_end;

typedef enum wr_lost_how {
  WR_LOST_SILENT = 0,
  WR_LOST_CLOSED,
  WR_LOST_AGENT,
  WR_LOST_AGENT_SILENT,
  WR_LOST_UNANSWERED,
  WR_LOST_NEVER,   /* its ranks never started (--launch-timeout) */
  WR_LOST_DAEMON,  /* the engine's daemon there died (an agent saw it) */
  WR_LOST_STOPPED, /* a rank's program was stopped (SIGSTOP, Ctrl-Z) */
  WR_LOST_ENGINE   /* mpirun said it lost its daemon there (its agents never did) */
} wr_lost_how;

#define WR_ACT_END 1    /* END to every agent, stop the engine */
#define WR_ACT_STACKS 2 /* STACK_REQ to the agents with stack_asked */

typedef struct wr_sup wr_sup;
struct wr_sup {
  const wr_plan *p;
  int np;
  wr_rank *r;
  struct wr_sup_host *hosts; /* silence()'s scratch, one per host of the plan */
  double t0, loop_at, lost_s, hb_s, timeout_s;
  double launch_s;      /* --launch-timeout; 0: none */
  double last_hello_at; /* the last agent's arrival; 0 before the first */
  int stacks;
  int connected, exited;
  double first_gone_at, first_stopped_at;
  /* the verdict */
  wr_end end;
  int end_rank, end_host, code;
  wr_lost_how lost_how;
  double end_at, stacks_until, end_after;
  int want_end, want_stacks; /* 1: to do, 2: done (stacks: 3 when in) */
  int engine_exited, engine_judged;
  int engine_status;  /* the engine's exit status, -N when killed by signal N */
  const char *engine; /* its name for the summaries: "mpirun" (default), "srun", "mpiexec.hydra" */
  double engine_at;
  int started;           /* ranks whose STARTED came */
  double all_started_at; /* when the last of them came; 0 before */
  /* called for every SAMPLE once it is stored (monitor/monitor.c), when set */
  void (*on_sample)(void *arg, const wr_sup *s, int rank, double now);
  void *sample_arg;
};

wr_sup *wr_sup_new(const wr_plan *p, const wr_opts *o, double now);
void wr_sup_free(wr_sup *s);
const char *wr_sup_host(const wr_sup *s, int rank); /* the plan's name */
/* HELLO of rank's agent: 0, or -1 with why (then it is refused). */
int wr_sup_hello(wr_sup *s, int rank, long agent_pid, const char *host, double now, char *why,
                 size_t len);
void wr_sup_msg(wr_sup *s, int rank, const wt_ctl_msg *m, double now);
/* rank's connection closed; unanswered: its machine stopped acknowledging (keepalive) */
void wr_sup_gone(wr_sup *s, int rank, int unanswered, double now);
void wr_sup_signal(wr_sup *s, int sig, double now); /* weftrun got signal sig */
void wr_sup_engine_exit(wr_sup *s, int status, double now);
/* mpirun, which failed with nothing else to say, said it lost its daemon on \p host
 * (the plan's index): the host is lost (75) instead. */
void wr_sup_engine_lost(wr_sup *s, int host, double now);
int wr_sup_tick(wr_sup *s, double now);          /* WR_ACT_* to do now */
double wr_sup_next(const wr_sup *s, double now); /* when to tick at the latest */
int wr_sup_done(const wr_sup *s);                /* no agent left connected */
int wr_sup_settled(const wr_sup *s);             /* done, and mpirun's end judged */

/* recap.c: the launch line and the closing figures (wall time, each host's exit, CPU
 * time, peak memory), wanted on a terminal or with --monitor, never with -q. */
int wr_recap_wanted(const wr_opts *o);
void wr_recap_launch(const wr_sup *s, double started, FILE *out);
void wr_recap_end(const wr_sup *s, double started, double now, FILE *out);

/* summary.c: why the job ended, on stderr; the exit status. */
int wr_summary(const wr_sup *s, const wr_opts *o, FILE *out);

/* control.c: the control channel's server: a listener on the job's interface
 * (loopback for a job on this host alone), the per-job secret, every agent's
 * connection in one epoll set. */
typedef struct wr_ctl wr_ctl;
int wr_ctl_open(const wr_net *net, int np, wr_ctl **out, char *why, size_t len);
const char *wr_ctl_address(const wr_ctl *c); /* ADDR:PORT for weft-rank --control */
const char *wr_ctl_secret(const wr_ctl *c);
int wr_ctl_fd(const wr_ctl *c); /* poll it: readable when there is work */
/* Accept, read, answer heartbeats; what the agents say goes to s. */
void wr_ctl_pump(wr_ctl *c, wr_sup *s, double now);
void wr_ctl_end(wr_ctl *c, const wr_sup *s, int sig, const char *why); /* END to every agent */
void wr_ctl_stacks(wr_ctl *c, const wr_sup *s);                        /* STACK_REQ */
void wr_ctl_close(wr_ctl *c);

#endif /* WR_SUPERVISE_H */
