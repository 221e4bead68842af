/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Why the job ended, in words: one summary line (what scripts and tests
 * match), then for a timeout, a lost host or a weft deadline one line per
 * rank still running or absent (its host, GPU, pid and its current weft call
 * with the time in it), then the stacks --get-stack-traces brought. Made
 * from the supervisor's state (supervise.c) alone; returns the exit status.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "supervise.h"

#define MAX_LINES 16

/* " (ranks 4-7)" of plan host h. */
static void ranks_of(const wr_sup *s, int h, char *buf, size_t len)
{
  int first = -1, last = -1, n = 0;
  buf[0] = '\0';
  for (int r = 0; r < s->np; r++)
    if (s->p->ranks[r].host == h) {
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

static void who(const wr_sup *s, int r, char *buf, size_t len)
{
  snprintf(buf, len, "rank %d host %s gpu %s", r, wr_sup_host(s, r), s->r[r].gpu);
}

static void size_text(long long b, char *buf, size_t len)
{
  if (b >= 1 << 20)
    snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
  else if (b >= 1 << 10)
    snprintf(buf, len, "%.1f KiB", (double)b / (1 << 10));
  else
    snprintf(buf, len, "%lld B", b);
}

/* What rank r was doing, as far as the channel knows. */
static void doing(const wr_sup *s, int r, double now, char *buf, size_t len)
{
  const wr_rank *x = &s->r[r];
  char size[32];
  if (x->state == WR_RANK_WAITING) {
    snprintf(buf, len, "its agent never connected (the rank never started)");
    return;
  }
  if (x->state == WR_RANK_GONE) {
    snprintf(buf, len, "its agent (pid %ld) went without a word", x->agent_pid);
    return;
  }
  int n = 0;
  if (x->lost)
    n = snprintf(buf, len, "lost; last heard %.1f s before, ", now - x->seen);
  if ((size_t)n < len && x->pid)
    n += snprintf(buf + n, len - (size_t)n, "pid %ld, ", x->pid);
  if ((size_t)n >= len)
    return;
  buf += n;
  len -= (size_t)n;
  double in = now - x->call_since;
  if (!x->have_call || x->wstate == WEFTX_PAGE_NONE) {
    snprintf(buf, len,
             "running for %.1f s, never in a weft call (not a libweft program, or "
             "before weft_init)",
             x->started_at ? now - x->started_at : 0.0);
  } else if (x->op == WEFTX_OP_INIT) {
    snprintf(buf, len, "in weft_init for %.1f s (waiting for the other ranks)", in);
  } else if (x->op != WEFTX_OP_NONE) {
    size_text(x->bytes, size, sizeof(size));
    snprintf(buf, len, "in %s on group %s (%s) for %.1f s", weftx_page_op_name(x->op),
             x->group[0] ? x->group : "?", size, in);
  } else if (x->wstate == WEFTX_PAGE_FINALIZED) {
    snprintf(buf, len, "after weft_finalize for %.1f s", in);
  } else {
    snprintf(buf, len, "in no weft call for %.1f s (%lld done)", in, x->calls);
  }
}

static void rank_line(const wr_sup *s, int r, double now, const char *tag, FILE *out)
{
  char w[400], d[400];
  who(s, r, w, sizeof(w));
  doing(s, r, now, d, sizeof(d));
  fprintf(out, "weftrun:   %s%s: %s\n", tag, w, d);
}

/* Rank lines for the ranks r with want(r), at most MAX_LINES. */
static int list(const wr_sup *s, double now, FILE *out,
                int (*want)(const wr_sup *, int, const void *), const void *arg, const char *tag)
{
  int n = 0;
  for (int r = 0; r < s->np; r++) {
    if (!want(s, r, arg))
      continue;
    if (n < MAX_LINES)
      rank_line(s, r, now, tag, out);
    n++;
  }
  if (n > MAX_LINES)
    fprintf(out, "weftrun:   ... and %d more\n", n - MAX_LINES);
  return n;
}

/* Running when the verdict came (what was happening then is what counts). */
static int running(const wr_sup *s, int r, const void *arg)
{
  (void)arg;
  return s->r[r].running_at_end;
}

static int waiting(const wr_sup *s, int r, const void *arg)
{
  (void)arg;
  return s->r[r].state == WR_RANK_WAITING;
}

static int on_host(const wr_sup *s, int r, const void *arg)
{
  return s->p->ranks[r].host == *(const int *)arg;
}

/* Is world rank \p r in the ranges "0-3,8"? */
static int in_ranges(const char *list, int r)
{
  for (const char *p = list; p && *p;) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p)
      return 0;
    if (*end == '-')
      b = strtol(end + 1, &end, 10);
    if (r >= a && r <= b)
      return 1;
    p = *end == ',' ? end + 1 : NULL;
  }
  return 0;
}

/* Absent from the call that a deadline ended in rank \p arg: members of its group
 * (every rank for weft_init) not in that same call. */
static int absent(const wr_sup *s, int r, const void *arg)
{
  const wr_rank *d = &s->r[*(const int *)arg], *x = &s->r[r];
  if (r == *(const int *)arg)
    return 0;
  if (d->op != WEFTX_OP_INIT && (!d->members || !in_ranges(d->members, r)))
    return 0;
  if (x->state == WR_RANK_EXITED && x->wstate == WEFTX_PAGE_DEADLINE && x->op == d->op)
    return 0; /* timed out in it too */
  if (x->state != WR_RANK_RUNNING && x->state != WR_RANK_CONNECTED)
    return 1;
  if (d->op == WEFTX_OP_INIT)
    return x->op != WEFTX_OP_INIT && (!x->have_call || x->wstate == WEFTX_PAGE_NONE);
  return !(x->op == d->op && !strcmp(x->group, d->group) && x->group_first == d->group_first);
}

static void what_ended(const wr_rank *x, char *buf, size_t len)
{
  if (x->why[0] && x->stopped == WT_CTL_STOP_SETUP)
    snprintf(buf, len, "%s", x->why);
  else if (x->why[0] && x->code == WEFTX_PROC_NOEXEC)
    snprintf(buf, len, "%s; exited with status %d", x->why, x->code);
  else if (x->sig)
    snprintf(buf, len, "killed by signal %d (%s)", x->sig, strsignal(x->sig));
  else
    snprintf(buf, len, "exited with status %d", x->code);
}

/* The other ranks that failed on their own once the job was failing: named after the
 * cause, as what followed from it (a peer's "connection closed" error), or as the same
 * fault met again when they ended the same way. */
static void consequences(const wr_sup *s, FILE *out)
{
  char w[400], what[700];
  int n = 0;
  for (int r = 0; r < s->np; r++) {
    const wr_rank *x = &s->r[r];
    if (r == s->end_rank || x->state != WR_RANK_EXITED || x->stopped || (!x->code && !x->sig))
      continue;
    if (n++ == MAX_LINES) {
      fprintf(out, "weftrun:   ... and more\n");
      break;
    }
    const wr_rank *c = &s->r[s->end_rank];
    who(s, r, w, sizeof(w));
    what_ended(x, what, sizeof(what));
    /* the same end is the same fault met by both, not one caused by the other */
    if (x->code == c->code && x->sig == c->sig && !x->why[0])
      fprintf(out, "weftrun:   then %s: %s as well\n", w, what);
    else
      fprintf(out, "weftrun:   then %s: %s (after rank %d: a consequence, most likely)\n", w, what,
              s->end_rank);
  }
}

/* The ranks whose agents had to send SIGKILL after the grace period: their programs
 * ignored (or outlasted) SIGTERM. One line, the ranks in ranges. */
static void killed(const wr_sup *s, FILE *out)
{
  char list[256];
  int n = 0, len = 0, first = -1, cut = 0;
  list[0] = '\0';
  for (int r = 0; r <= s->np; r++) {
    int k = r < s->np && s->r[r].state == WR_RANK_EXITED && s->r[r].killed;
    if (k) {
      n++;
      if (first < 0)
        first = r;
      continue;
    }
    if (first < 0)
      continue;
    if (!cut && len < (int)sizeof(list) - 24)
      len += r - 1 > first
               ? snprintf(list + len, sizeof(list) - (size_t)len, "%s%d-%d", len ? "," : "", first,
                          r - 1)
               : snprintf(list + len, sizeof(list) - (size_t)len, "%s%d", len ? "," : "", first);
    else if (!cut) {
      cut = 1;
      len += snprintf(list + len, sizeof(list) - (size_t)len, ",...");
    }
    first = -1;
  }
  if (n)
    fprintf(out, "weftrun:   %s %s ignored SIGTERM: killed (SIGKILL) after the grace period\n",
            n == 1 ? "rank" : "ranks", list);
}

static void stacks(const wr_sup *s, FILE *out)
{
  for (int r = 0; r < s->np; r++) {
    const wr_rank *x = &s->r[r];
    if (!x->stack_asked)
      continue;
    fprintf(out, "weftrun: stack of rank %d host %s (pid %ld):\n", r, wr_sup_host(s, r), x->pid);
    if (!x->stack_len) {
      fprintf(out, "  (none came: the agent did not answer in time)\n");
      continue;
    }
    for (const char *l = x->stack; *l;) {
      size_t n = strcspn(l, "\n");
      fprintf(out, "  %.*s\n", (int)n, l);
      l += n + (l[n] == '\n');
    }
  }
}

int wr_summary(const wr_sup *s, const wr_opts *o, FILE *out)
{
  char w[400], what[700], ranks[64];
  double now = s->end_at ? s->end_at : weftx_monotonic();
  const wr_rank *x = s->end_rank >= 0 && s->end_rank < s->np ? &s->r[s->end_rank] : NULL;
  int n;

  switch (s->end) {
  case WR_END_NONE: return WR_EXIT_OK;
  case WR_END_RANK:
    who(s, s->end_rank, w, sizeof(w));
    what_ended(x, what, sizeof(what));
    fprintf(out, "weftrun: job failed: %s: %s (exit %d)\n", w, what, s->code);
    consequences(s, out);
    break;
  case WR_END_DEADLINE:
    who(s, s->end_rank, w, sizeof(w));
    fprintf(out, "weftrun: job failed: %s: %s (exit %d)\n", w,
            x->why[0] ? x->why : "a weft deadline expired", s->code);
    n = list(s, now, out, absent, &s->end_rank, "absent: ");
    if (!n)
      fprintf(out, "weftrun:   every rank of the call had joined: one is stuck inside it\n");
    break;
  case WR_END_LOST: {
    int h = s->end_host;
    ranks_of(s, h, ranks, sizeof(ranks));
    if (s->lost_how == WR_LOST_STOPPED) {
      who(s, s->end_rank, w, sizeof(w));
      fprintf(out,
              "weftrun: job failed: %s: stopped (SIGSTOP or Ctrl-Z), not slow: its program "
              "did not run for %.1f s, longer than --host-timeout %.0f s, so the rank is lost "
              "(exit %d)\n",
              w, x->stopped_s, s->lost_s, s->code);
    } else if (s->lost_how == WR_LOST_AGENT || s->lost_how == WR_LOST_AGENT_SILENT) {
      who(s, s->end_rank, w, sizeof(w));
      fprintf(out, "weftrun: job failed: %s: its agent (weft-rank, pid %ld) %s (exit %d)\n", w,
              x->agent_pid,
              s->lost_how == WR_LOST_AGENT ? "ended without a word (killed?)" : "stopped answering",
              s->code);
    } else if (s->lost_how == WR_LOST_NEVER) {
      /* the other hosts with ranks missing, one pass over the ranks */
      unsigned char *seen = calloc((size_t)s->p->nhosts, 1);
      int more = 0;
      char also[48] = "";
      for (int r = 0; seen && r < s->np; r++) {
        int g = s->p->ranks[r].host;
        if (g != h && !seen[g] && s->r[r].state == WR_RANK_WAITING) {
          seen[g] = 1;
          more++;
        }
      }
      free(seen);
      if (more)
        snprintf(also, sizeof(also), " and %d more host%s", more, more == 1 ? "" : "s");
      fprintf(out,
              "weftrun: job failed: host %s lost%s%s: its ranks had not started %.0f s after "
              "the last rank that did (--launch-timeout): mpirun could not start its daemon "
              "there, or the daemon cannot reach mpirun (exit %d)\n",
              s->p->hosts[h].host->name, ranks, also, s->launch_s, s->code);
      list(s, now, out, waiting, NULL, "");
    } else if (s->lost_how == WR_LOST_ENGINE) {
      fprintf(out,
              "weftrun: job failed: host %s lost%s: mpirun lost its daemon there (machine "
              "down or network cut), and nothing more came from it (exit %d)\n",
              s->p->hosts[h].host->name, ranks, s->code);
    } else if (s->lost_how == WR_LOST_DAEMON) {
      fprintf(out,
              "weftrun: job failed: host %s lost%s: %s there died (killed? out of memory? "
              "machine going down?), and its agents stopped its ranks (exit %d)\n",
              s->p->hosts[h].host->name, ranks,
              !strcmp(s->engine, "srun")            ? "Slurm's step daemon (slurmstepd)"
              : !strcmp(s->engine, "mpiexec.hydra") ? "Hydra's proxy (hydra_pmi_proxy)"
                                                    : "mpirun's daemon (orted)",
              s->code);
    } else if (x && x->state == WR_RANK_EXITED && x->stopped == WT_CTL_STOP_LOST) {
      fprintf(out,
              "weftrun: job failed: host %s lost%s: its agents lost weftrun (network cut?) "
              "(exit %d)\n",
              wr_sup_host(s, s->end_rank), ranks, s->code);
    } else {
      char unanswered[96];
      snprintf(unanswered, sizeof(unanswered),
               "the machine acknowledged nothing for %d s "
               "(machine down or network cut)",
               WT_CTL_UNANSWERED_S);
      fprintf(out, "weftrun: job failed: host %s lost%s: %s (exit %d)\n", s->p->hosts[h].host->name,
              ranks,
              s->lost_how == WR_LOST_UNANSWERED ? unanswered
              : s->lost_how == WR_LOST_CLOSED
                ? "its agents' connections closed at once (machine "
                  "down?)"
                : "no word from its agents for longer than --host-timeout (machine down, "
                  "network cut or agents stopped)",
              s->code);
      list(s, now, out, on_host, &h, "");
    }
    break;
  }
  case WR_END_TIMEOUT: {
    int left = 0;
    for (int r = 0; r < s->np; r++)
      left += running(s, r, NULL);
    fprintf(out,
            "weftrun: job ended: --timeout %ld s expired; %d of %d ranks were still running "
            "(exit %d)\n",
            o->timeout, left, s->np, s->code);
    list(s, now, out, running, NULL, "");
    break;
  }
  case WR_END_SIGNAL:
    fprintf(out, "weftrun: job ended by signal %d (exit %d)\n", s->code - 128, s->code);
    break;
  case WR_END_PREEMPTED:
    who(s, s->end_rank, w, sizeof(w));
    fprintf(out, "weftrun: job ended: %s: the VM was preempted (exit %d)\n", w, s->code);
    break;
  case WR_END_NOFINALIZE:
    who(s, s->end_rank, w, sizeof(w));
    fprintf(out,
            "weftrun: job failed: %s: exited with status 0 while the other ranks ran, "
            "without finalizing (MPI_Finalize, weft_finalize), so %s ended the job (exit %d)\n",
            w, s->engine, s->code);
    break;
  case WR_END_ENGINE:
    if (s->engine_status < 0)
      fprintf(out, "weftrun: %s was killed by signal %d (exit %d)\n", s->engine, -s->engine_status,
              s->code);
    else
      fprintf(out,
              "weftrun: %s failed with status %d before any rank reported a failure "
              "(exit %d); see its message above\n",
              s->engine, s->engine_status, s->code);
    list(s, now, out, running, NULL, "");
    break;
  case WR_END_MISSING: {
    int never = 0;
    for (int r = 0; r < s->np; r++)
      never += s->r[r].state == WR_RANK_WAITING;
    if (!strcmp(s->engine, "mpirun"))
      fprintf(out,
              "weftrun: mpirun exited 0, but %d of %d ranks never ran (is WEFT_MPIRUN or "
              "the mpirun on PATH Open MPI's?) (exit %d)\n",
              never ? never : s->np - s->exited, s->np, s->code);
    else
      fprintf(out, "weftrun: %s exited 0, but %d of %d ranks never ran (exit %d)\n", s->engine,
              never ? never : s->np - s->exited, s->np, s->code);
    break;
  }
  }
  killed(s, out);
  stacks(s, out);
  fflush(out);
  return s->code;
}
