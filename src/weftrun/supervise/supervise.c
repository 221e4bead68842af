/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The supervisor's rules: what weftrun knows of every rank from its agent's
 * messages on the control channel (control.c reads them), and when and why
 * the job ends. The first verdict wins, with one exception: a rank that a
 * weft deadline ended (its call page says so) is not the root cause, the
 * ranks that never joined are. A host is lost when its agents stop talking
 * for --host-timeout seconds, or their connections close without a word, or
 * fail because the machine stopped acknowledging (TCP keepalive);
 * mpirun's own end decides only what the channel left open (a rank that
 * exited 0 without finalizing, ranks that never started). Pure: every time
 * is passed in; nothing here reads or writes anything but the wr_sup.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "supervise.h"

#define SETTLE_S 0.3 /* after a first agent vanished: the others of its host too? */
/* The same on weftrun's own host, whose machine is up: its agents vanish when mpirun
 * ends them (a signal to mpirun), so its exit, when it comes, is the verdict. */
#define LOCAL_SETTLE_S 1.5
#define STACKS_S 20.0       /* --get-stack-traces: the most the stacks may take */
#define RANK_END_S 1.0      /* a failed rank: mpirun's own teardown first */
#define ENGINE_SETTLE_S 1.5 /* after mpirun ended: the agents' last messages still coming */
/* After mpirun failed while a host's agents fell silent and the others spoke or ended:
 * long enough for the kernel to find that host's connections unanswered (a machine that
 * died leaves them open: nothing sends the close), keepalive's probes a second apart. */
#define ENGINE_SILENT_S (WT_CTL_UNANSWERED_S + 3.0)
/* What an agent said up to this long after mpirun's end may have been on its way when its
 * machine died (read after the end, or sent while it was being killed): a host speaks
 * after mpirun's end only when its agents are heard later than that. A live agent speaks
 * every heartbeat (a second), so a host that is up is heard soon after. */
#define ENGINE_HEARD_S 1.0

static void judge_engine(wr_sup *s, double now);
static double engine_judge_at(const wr_sup *s);

/* A host as silence() sees it: its agents' latest word, how many are live, the first
 * quiet one (-1: none). */
struct wr_sup_host {
  double last;
  int live, quiet;
};

wr_sup *wr_sup_new(const wr_plan *p, const wr_opts *o, double now)
{
  wr_sup *s = calloc(1, sizeof(*s));
  if (!s || !(s->r = calloc((size_t)(p->np ? p->np : 1), sizeof(*s->r))) ||
      !(s->hosts = calloc((size_t)(p->nhosts ? p->nhosts : 1), sizeof(*s->hosts)))) {
    if (s)
      free(s->r);
    free(s);
    return NULL;
  }
  s->engine = "mpirun";
  s->p = p;
  s->np = p->np;
  s->t0 = now;
  s->loop_at = now;
  s->lost_s = o->host_timeout > 0 ? o->host_timeout : WR_HOST_TIMEOUT_S;
  s->hb_s = s->lost_s / 5 < 1.0 ? s->lost_s / 5 : 1.0;
  s->timeout_s = (double)o->timeout;
  s->launch_s = o->launch_timeout < 0   ? 0
                : o->launch_timeout > 0 ? o->launch_timeout
                                        : WR_LAUNCH_TIMEOUT_S;
  s->stacks = o->stack_traces;
  for (int r = 0; r < s->np; r++) {
    snprintf(s->r[r].gpu, sizeof(s->r[r].gpu), "none");
    wt_sample_init(&s->r[r].last);
    s->r[r].cpu_ms = s->r[r].peak_rss = -1;
  }
  return s;
}

void wr_sup_free(wr_sup *s)
{
  if (!s)
    return;
  for (int r = 0; r < s->np; r++) {
    free(s->r[r].members);
    free(s->r[r].stack);
  }
  free(s->r);
  free(s->hosts);
  free(s);
}

const char *wr_sup_host(const wr_sup *s, int rank)
{
  return s->p->hosts[s->p->ranks[rank].host].host->name;
}

static void decide(wr_sup *s, wr_end end, int rank, int host, int code, double now)
{
  if (s->end)
    return;
  s->end = end;
  for (int r = 0; r < s->np; r++)
    s->r[r].running_at_end = s->r[r].state == WR_RANK_RUNNING ||
                             s->r[r].state == WR_RANK_CONNECTED || s->r[r].state == WR_RANK_WAITING;
  s->end_rank = rank;
  s->end_host = host;
  s->code = code;
  s->end_at = now;
  /* the stacks of the ranks still running first, when they were asked for */
  if (s->stacks && !s->engine_exited &&
      (end == WR_END_TIMEOUT || end == WR_END_DEADLINE || end == WR_END_LOST)) {
    s->want_stacks = 1;
    s->stacks_until = now + STACKS_S;
  } else if ((end == WR_END_RANK || end == WR_END_DEADLINE || end == WR_END_PREEMPTED) &&
             !s->engine_exited) {
    /* mpirun ends a job whose rank failed by itself, fastest when nobody else
     * stops the ranks under it; the agents are told a moment later */
    s->end_after = now + RANK_END_S;
  } else {
    s->want_end = 1;
  }
}

int wr_sup_hello(wr_sup *s, int rank, long agent_pid, const char *host, double now, char *why,
                 size_t len)
{
  if (rank < 0 || rank >= s->np) {
    snprintf(why, len, "rank %d is not in this job of %d ranks", rank, s->np);
    return -1;
  }
  wr_rank *r = &s->r[rank];
  if (r->state != WR_RANK_WAITING) {
    snprintf(why, len, "rank %d has an agent already (pid %ld on %s)", rank, r->agent_pid, r->host);
    return -1;
  }
  r->state = WR_RANK_CONNECTED;
  r->agent_pid = agent_pid;
  snprintf(r->host, sizeof(r->host), "%s", host);
  r->hello_at = r->seen = now;
  s->last_hello_at = now;
  s->connected++;
  return 0;
}

/* The rank's last weft call, from a HEARTBEAT or EXITED. */
static void take_call(wr_rank *r, const wt_ctl_msg *m, double now)
{
  int64_t v;
  if (wt_ctl_get_int(m, WT_CTL_T_WSTATE, &v))
    return;
  r->have_call = 1;
  r->wstate = (int)v;
  r->op = (int)wt_ctl_int_or(m, WT_CTL_T_OP, 0);
  r->calls = wt_ctl_int_or(m, WT_CTL_T_CALLS, 0);
  r->bytes = wt_ctl_int_or(m, WT_CTL_T_BYTES, 0);
  r->group_first = (int)wt_ctl_int_or(m, WT_CTL_T_GROUP_FIRST, -1);
  r->group_size = (int)wt_ctl_int_or(m, WT_CTL_T_GROUP_SIZE, 0);
  r->call_since = now - (double)wt_ctl_int_or(m, WT_CTL_T_IN_MS, 0) / 1000.0;
  if (wt_ctl_get_str(m, WT_CTL_T_GROUP, r->group, sizeof(r->group)))
    r->group[0] = '\0';
}

static void exited(wr_sup *s, int rank, const wt_ctl_msg *m, double now)
{
  wr_rank *r = &s->r[rank];
  char members[WT_CTL_MAX_TEXT + 1];
  if (r->state == WR_RANK_EXITED)
    return;
  r->state = WR_RANK_EXITED;
  r->exited_at = now;
  s->exited++;
  r->code = (int)wt_ctl_int_or(m, WT_CTL_T_CODE, 0);
  r->sig = (int)wt_ctl_int_or(m, WT_CTL_T_SIGNAL, 0);
  r->stopped = (int)wt_ctl_int_or(m, WT_CTL_T_STOPPED, 0);
  r->killed = wt_ctl_int_or(m, WT_CTL_T_KILLED, 0) != 0;
  r->stopped_s = (double)wt_ctl_int_or(m, WT_CTL_T_STOPPED_MS, 0) / 1000.0;
  take_call(r, m, now);
  /* the kernel's totals for the rank (wait4) replace what the samples saw */
  int64_t v;
  if (!wt_ctl_get_int(m, WT_CTL_T_CPU_MS, &v) && v >= 0)
    r->cpu_ms = v;
  if (!wt_ctl_get_int(m, WT_CTL_T_RSS, &v) && v > r->peak_rss)
    r->peak_rss = v;
  if (wt_ctl_get_str(m, WT_CTL_T_WHY, r->why, sizeof(r->why)))
    r->why[0] = '\0';
  if (r->wstate == WEFTX_PAGE_DEADLINE &&
      !wt_ctl_get_str(m, WT_CTL_T_MEMBERS, members, sizeof(members)) && members[0])
    r->members = strdup(members);
  if (r->stopped && !s->first_stopped_at)
    s->first_stopped_at = now;
  if (r->stopped == WT_CTL_STOP_PREEMPT)
    decide(s, WR_END_PREEMPTED, rank, -1, WR_EXIT_PREEMPTED, now);
  else if (r->stopped == WT_CTL_STOP_LOST)
    decide(s, WR_END_LOST, rank, s->p->ranks[rank].host, WR_EXIT_HOSTLOST, now);
  else if (r->stopped == WT_CTL_STOP_STOPPED) {
    /* its agent lives and talks, but the rank does nothing: lost, as a silent host */
    if (!s->end)
      s->lost_how = WR_LOST_STOPPED;
    decide(s, WR_END_LOST, rank, s->p->ranks[rank].host, WR_EXIT_HOSTLOST, now);
  } else if (r->stopped == WT_CTL_STOP_DAEMON) {
    if (!s->end)
      s->lost_how = WR_LOST_DAEMON;
    decide(s, WR_END_LOST, rank, s->p->ranks[rank].host, WR_EXIT_HOSTLOST, now);
  } else if (r->stopped == WT_CTL_STOP_SETUP || (!r->stopped && r->code))
    decide(s, r->wstate == WEFTX_PAGE_DEADLINE ? WR_END_DEADLINE : WR_END_RANK, rank, -1, r->code,
           now);
}

static void stack_piece(wr_rank *r, const wt_ctl_msg *m)
{
  char text[2 * WT_CTL_MAX_TEXT + 8], why[WT_CTL_MAX_TEXT + 1];
  wt_ctl_get_str(m, WT_CTL_T_TEXT, text, WT_CTL_MAX_TEXT + 1);
  if (!wt_ctl_get_str(m, WT_CTL_T_WHY, why, sizeof(why)) && why[0] && !r->stack_len) {
    size_t t = strlen(text);
    snprintf(text + t, sizeof(text) - t, "%s(%.4096s)\n", t ? "\n" : "", why);
  }
  size_t n = strlen(text);
  if (r->stack_len + n < 256 * 1024) {
    char *b = realloc(r->stack, r->stack_len + n + 1);
    if (b) {
      memcpy(b + r->stack_len, text, n + 1);
      r->stack = b;
      r->stack_len += n;
    }
  }
  if (wt_ctl_int_or(m, WT_CTL_T_LAST, 1))
    r->stack_done = 1;
}

void wr_sup_msg(wr_sup *s, int rank, const wt_ctl_msg *m, double now)
{
  wr_rank *r = &s->r[rank];
  r->seen = now;
  switch (m->type) {
  case WT_CTL_PLACED: wt_ctl_get_str(m, WT_CTL_T_GPU, r->gpu, sizeof(r->gpu)); break;
  case WT_CTL_STARTED:
    r->pid = (long)wt_ctl_int_or(m, WT_CTL_T_PID, 0);
    if (!r->started_at && ++s->started == s->np)
      s->all_started_at = now;
    r->started_at = now;
    if (r->state == WR_RANK_CONNECTED)
      r->state = WR_RANK_RUNNING;
    break;
  case WT_CTL_SAMPLE:
    if (r->state != WR_RANK_RUNNING || wt_sample_get(m, &r->last))
      break;
    r->nsamples++;
    if (r->last.cpu_ms > r->cpu_ms)
      r->cpu_ms = r->last.cpu_ms;
    if (r->last.rss > r->peak_rss)
      r->peak_rss = r->last.rss;
    if (r->last.gpu_util >= 0) {
      r->gpu_util_sum += r->last.gpu_util;
      r->gpu_n++;
    }
    if (r->last.gpu_mem > r->gpu_mem_peak)
      r->gpu_mem_peak = r->last.gpu_mem;
    if (s->on_sample)
      s->on_sample(s->sample_arg, s, rank, now);
    break;
  case WT_CTL_HEARTBEAT: take_call(r, m, now); break;
  case WT_CTL_EXITED: exited(s, rank, m, now); break;
  case WT_CTL_STACK: stack_piece(r, m); break;
  default: break;
  }
}

void wr_sup_gone(wr_sup *s, int rank, int unanswered, double now)
{
  wr_rank *r = &s->r[rank];
  if (r->state == WR_RANK_EXITED || r->state == WR_RANK_GONE)
    return;
  r->state = WR_RANK_GONE;
  r->unanswered = unanswered;
  r->gone_at = now;
  if (!s->first_gone_at)
    s->first_gone_at = now;
}

void wr_sup_signal(wr_sup *s, int sig, double now)
{
  decide(s, WR_END_SIGNAL, -1, -1, 128 + sig, now);
}

static int live(const wr_rank *r)
{
  return (r->state == WR_RANK_CONNECTED || r->state == WR_RANK_RUNNING) && !r->lost;
}

/* The ranks of host h (all of them, or only rank \p only) are given up on. */
static void give_up(wr_sup *s, int h, int only)
{
  for (int r = 0; r < s->np; r++)
    if (only >= 0 ? r == only : s->p->ranks[r].host == h)
      s->r[r].lost = 1;
}

/* The rank whose agent vanished first, -1 for none. */
static int first_gone(const wr_sup *s)
{
  int first = -1;
  for (int r = 0; s->first_gone_at && r < s->np; r++)
    if (s->r[r].state == WR_RANK_GONE && (first < 0 || s->r[r].gone_at < s->r[first].gone_at))
      first = r;
  return first;
}

/* When the agents that vanished are judged: SETTLE_S after the first, LOCAL_SETTLE_S
 * when it was on weftrun's own host; 0 when none vanished. */
static double settle_at(const wr_sup *s)
{
  if (!s->first_gone_at)
    return 0;
  int first = first_gone(s);
  const wr_host *w = first >= 0 ? s->p->hosts[s->p->ranks[first].host].host : NULL;
  return s->first_gone_at + (w && w->local ? LOCAL_SETTLE_S : SETTLE_S);
}

/* Agents that vanished, SETTLE_S after the first: a host all of whose agents went
 * is lost; otherwise the first agent that went is. */
static void vanished(wr_sup *s, double now)
{
  int first = first_gone(s);
  if (first < 0)
    return;
  int h = s->p->ranks[first].host, whole = 1;
  for (int r = 0; r < s->np; r++)
    if (s->p->ranks[r].host == h && live(&s->r[r]))
      whole = 0;
  s->lost_how = s->r[first].unanswered ? WR_LOST_UNANSWERED
                : whole                ? WR_LOST_CLOSED
                                       : WR_LOST_AGENT;
  decide(s, WR_END_LOST, first, h, WR_EXIT_HOSTLOST, now);
}

/* When ranks still missing are given up on (--launch-timeout): launch_s after the last
 * agent that came, while some have not; 0 when there is no such time. */
static double launch_deadline(const wr_sup *s)
{
  if (s->launch_s <= 0 || !s->last_hello_at || s->connected >= s->np || s->end)
    return 0;
  return s->last_hello_at + s->launch_s;
}

/* Ranks whose agents have not come by launch_deadline(): each is given up on, and the
 * host of the lowest is lost (mpirun would wait for their daemons for ever). */
static void never_started(wr_sup *s, double now)
{
  double due = launch_deadline(s);
  int first = -1;
  if (!due || now < due)
    return;
  for (int r = 0; r < s->np; r++)
    if (s->r[r].state == WR_RANK_WAITING) {
      if (first < 0)
        first = r;
      s->r[r].lost = 1;
    }
  if (first < 0)
    return;
  s->lost_how = WR_LOST_NEVER;
  decide(s, WR_END_LOST, first, s->p->ranks[first].host, WR_EXIT_HOSTLOST, now);
}

/* A host none of whose agents has said anything for lost_s; or one silent agent. One
 * pass over the ranks (each host's latest word, its live ranks, its first quiet rank),
 * then the hosts in order: it runs at every turn of weftrun's loop, and a job of
 * 16,000 hosts has 128,000 ranks. */
static void silence(wr_sup *s, double now)
{
  int nh = s->p->nhosts;
  for (int h = 0; h < nh; h++)
    s->hosts[h] = (struct wr_sup_host){0, 0, -1};
  for (int r = 0; r < s->np; r++) {
    const wr_rank *x = &s->r[r];
    struct wr_sup_host *y = &s->hosts[s->p->ranks[r].host];
    if (!live(x))
      continue;
    y->live++;
    if (x->seen > y->last)
      y->last = x->seen;
    if (now - x->seen > s->lost_s && y->quiet < 0)
      y->quiet = r;
  }
  for (int h = 0; h < nh && !s->end; h++) {
    int quiet = s->hosts[h].quiet;
    if (s->hosts[h].live && now - s->hosts[h].last > s->lost_s) {
      s->lost_how = WR_LOST_SILENT;
      decide(s, WR_END_LOST, quiet, h, WR_EXIT_HOSTLOST, now);
      give_up(s, h, -1);
    } else if (quiet >= 0) {
      s->lost_how = WR_LOST_AGENT_SILENT;
      decide(s, WR_END_LOST, quiet, h, WR_EXIT_HOSTLOST, now);
      give_up(s, h, quiet);
    }
  }
}

static int stacks_in(const wr_sup *s)
{
  for (int r = 0; r < s->np; r++)
    if (s->r[r].stack_asked && !s->r[r].stack_done && live(&s->r[r]))
      return 0;
  return 1;
}

int wr_sup_tick(wr_sup *s, double now)
{
  int act = 0;
  /* weftrun itself was held up (stopped, starved): its peers' silence means nothing */
  if (now - s->loop_at > s->lost_s / 2)
    for (int r = 0; r < s->np; r++)
      if (live(&s->r[r]))
        s->r[r].seen = now;
  s->loop_at = now;
  if (!s->end && !s->engine_exited) {
    if (s->timeout_s > 0 && now >= s->t0 + s->timeout_s)
      decide(s, WR_END_TIMEOUT, -1, -1, WR_EXIT_TIMEOUT, now);
    if (!s->end && s->first_gone_at && now >= settle_at(s))
      vanished(s, now);
    if (!s->end)
      silence(s, now);
    if (!s->end)
      never_started(s, now);
  }
  /* A dead host's daemon can end mpirun before weftrun has heard its agents' connections
   * close (whoever killed it killed them in turn): when mpirun failed (exited non-zero;
   * not killed by a signal, which ends its own host's agents too), agents that vanish
   * before the judgement still name the host, SETTLE_S after the first as above. */
  int settling = !s->end && s->engine_exited && s->engine_status > 0 && s->first_gone_at;
  if (settling && !s->engine_judged && now >= s->first_gone_at + SETTLE_S)
    vanished(s, now);
  if (s->engine_exited && !s->engine_judged && (wr_sup_done(s) || now >= engine_judge_at(s)) &&
      !(settling && !s->end && now < s->first_gone_at + SETTLE_S))
    judge_engine(s, now);
  if (s->want_stacks == 1) {
    s->want_stacks = 2;
    for (int r = 0; r < s->np; r++)
      if (s->r[r].state == WR_RANK_RUNNING)
        s->r[r].stack_asked = 1;
    act |= WR_ACT_STACKS;
  }
  if (s->want_stacks == 2 && (stacks_in(s) || now >= s->stacks_until)) {
    s->want_stacks = 3;
    s->want_end = 1;
  }
  if (s->end_after && !s->want_end && now >= s->end_after)
    s->want_end = 1;
  if (s->want_end == 1) {
    s->want_end = 2;
    act |= WR_ACT_END;
  }
  return act;
}

double wr_sup_next(const wr_sup *s, double now)
{
  double next = now + s->hb_s;
  if (s->timeout_s > 0 && !s->end && s->t0 + s->timeout_s < next)
    next = s->t0 + s->timeout_s;
  if (s->first_gone_at && !s->end && settle_at(s) < next)
    next = settle_at(s);
  double due = launch_deadline(s);
  if (due && due < next)
    next = due;
  if (s->want_stacks == 2 && s->stacks_until < next)
    next = s->stacks_until;
  if (s->end_after && !s->want_end && s->end_after < next)
    next = s->end_after;
  if (s->engine_exited && !s->engine_judged && engine_judge_at(s) < next)
    next = engine_judge_at(s);
  return next;
}

void wr_sup_engine_exit(wr_sup *s, int status, double now)
{
  s->engine_exited = 1;
  s->engine_status = status;
  s->engine_at = now;
}

/* When mpirun's end is judged: ENGINE_SETTLE_S after it, or ENGINE_SILENT_S when it
 * failed and a host's live agents have said nothing since (ENGINE_HEARD_S) while other
 * ranks spoke or ended: mpirun lost that host's daemon, and its agents died with the
 * machine without a word (a dead machine's connections are not closed). A host that is
 * up and only slow to speak is judged as soon as it is heard. */
static double engine_judge_at(const wr_sup *s)
{
  int h, silent = -1, heard = 0;
  if (s->engine_status <= 0)
    return s->engine_at + ENGINE_SETTLE_S;
  for (int r = 0; r < s->np; r++) {
    const wr_rank *x = &s->r[r];
    if (!live(x) || x->seen > s->engine_at)
      heard = 1;
  }
  for (h = 0; heard && silent < 0 && h < s->p->nhosts; h++) {
    int mute = 0, spoke = 0;
    for (int r = 0; r < s->np; r++)
      if (s->p->ranks[r].host == h && live(&s->r[r])) {
        mute += s->r[r].seen <= s->engine_at + ENGINE_HEARD_S;
        spoke += s->r[r].seen > s->engine_at + ENGINE_HEARD_S;
      }
    if (mute && !spoke)
      silent = h;
  }
  return s->engine_at + (silent >= 0 ? ENGINE_SILENT_S : ENGINE_SETTLE_S);
}

/* mpirun has ended and the agents had their say: what the channel left open. */
static void judge_engine(wr_sup *s, double now)
{
  int status = s->engine_status;
  s->engine_judged = 1;
  if (s->end)
    return;
  if (status < 0) /* killed by signal -status: as a shell says it, for NOFINALIZE */
    status = 128 - status;
  if (status != 0) {
    /* a rank that ended with 0 before the others were stopped: MPI ends a job whose
     * rank exits without finalizing */
    int first = -1;
    for (int r = 0; r < s->np; r++) {
      const wr_rank *x = &s->r[r];
      if (x->state == WR_RANK_EXITED && !x->stopped && x->code == 0 &&
          (!s->first_stopped_at || x->exited_at <= s->first_stopped_at) &&
          x->wstate != WEFTX_PAGE_FINALIZED && (first < 0 || x->exited_at < s->r[first].exited_at))
        first = r;
    }
    int all_ok = 1;
    for (int r = 0; r < s->np; r++)
      all_ok &= s->r[r].state == WR_RANK_EXITED && !s->r[r].stopped && !s->r[r].code;
    if (first >= 0 && !all_ok)
      decide(s, WR_END_NOFINALIZE, first, -1, status, now);
    else
      decide(s, WR_END_ENGINE, -1, -1, WR_EXIT_ENGINE, now);
  } else if (s->exited < s->np) {
    decide(s, WR_END_MISSING, -1, -1, WR_EXIT_ENGINE, now);
  }
}

void wr_sup_engine_lost(wr_sup *s, int host, double now)
{
  if (s->end != WR_END_ENGINE || host < 0 || host >= s->p->nhosts)
    return;
  s->end = WR_END_NONE;
  decide(s, WR_END_LOST, -1, host, WR_EXIT_HOSTLOST, now);
  s->lost_how = WR_LOST_ENGINE;
}

int wr_sup_settled(const wr_sup *s)
{
  return wr_sup_done(s) && (!s->engine_exited || s->engine_judged);
}

int wr_sup_done(const wr_sup *s)
{
  for (int r = 0; r < s->np; r++)
    if (live(&s->r[r]))
      return 0;
  return 1;
}
