/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attempts of a job (--restarts): the variables every rank is given (also
 * without --restarts), the directory kept across attempts (the default
 * WEFT_CHECKPOINT_DIR, the hostfiles of the restarts), the discovery command
 * run with a deadline, the wait for --min-hosts hosts (a stop request ends it
 * at once; nothing runs then but the discovery command, which dies with
 * weftrun), the backoff of fast failures, and the closing list of attempts.
 * Each attempt is the whole pipeline (main.c): hosts, facts, plan, launch.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "restart/restart.h"
#include "hosts/hosts.h"
#include "supervise/supervise.h"

typedef struct loop {
  wr_opts *o;
  int stop_fd;
  char dir[4096];      /* kept across the attempts; "" until made */
  char ckpt[4200];     /* WEFT_CHECKPOINT_DIR */
  char hosts[4200];    /* this attempt's hostfile, when weftrun writes it */
  wr_given_host *orig; /* the hosts of the first attempt (without --host-discovery) */
  int norig;
  wr_rs_state st;
  wr_attempt *att; /* every attempt so far */
  int natt;
  int hush;      /* the discovery command's failure said once while waiting */
  int mon_made;  /* the job's timeline is made (wr_attempt's) */
  double mon_t0; /* its clock's zero */
  int saved_dh;  /* DEFAULT_HOSTFILE set to "none" */
  char *user_dh; /* its value before, or NULL */
} loop;

#define DEFAULT_HOSTFILE "OMPI_MCA_orte_default_hostfile"

static const char *tmpdir(void)
{
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

/* The directory kept across the attempts, with the default checkpoint directory. */
static int make_dir(loop *l)
{
  if (l->dir[0])
    return 0;
  int n = snprintf(l->dir, sizeof(l->dir), "%s/weft-%ld-XXXXXX", tmpdir(), (long)getpid());
  if (n < 0 || (size_t)n >= sizeof(l->dir) || !mkdtemp(l->dir)) {
    fprintf(stderr, "weftrun: cannot make a private directory in %s: %s; check TMPDIR\n", tmpdir(),
            strerror(errno));
    l->dir[0] = '\0';
    return WR_EXIT_ENGINE;
  }
  return 0;
}

static int checkpoint_dir(loop *l)
{
  const wr_opts *o = l->o;
  if (o->checkpoint_dir) {
    snprintf(l->ckpt, sizeof(l->ckpt), "%s", o->checkpoint_dir);
    if (mkdir(l->ckpt, 0700) && errno != EEXIST) {
      fprintf(stderr, "weftrun: --checkpoint-dir %s: cannot make it: %s\n", l->ckpt,
              strerror(errno));
      return WR_EXIT_USAGE;
    }
    return 0;
  }
  int rc = make_dir(l);
  if (rc)
    return rc;
  snprintf(l->ckpt, sizeof(l->ckpt), "%s/checkpoint", l->dir);
  if (mkdir(l->ckpt, 0700)) {
    fprintf(stderr, "weftrun: cannot make %s: %s\n", l->ckpt, strerror(errno));
    return WR_EXIT_ENGINE;
  }
  return 0;
}

static int set_long(const char *key, long v)
{
  char buf[32];
  snprintf(buf, sizeof(buf), "%ld", v);
  return setenv(key, buf, 1);
}

static int overlap_set; /* SLURM_OVERLAP is weftrun's own (set_vars) */

/* What every rank of attempt k is given (weftrun(1) RESTARTS): WEFT_* reaches every host. */

static int set_vars(const loop *l, int k)
{
  int rc = set_long("WEFT_RESTART_COUNT", k) || set_long("WEFT_MAX_RESTARTS", l->o->restarts) ||
           setenv("WEFT_CHECKPOINT_DIR", l->ckpt, 1);
  if (!rc && k > 0)
    rc = set_long("WEFT_PREV_WORLD_SIZE", l->att[k - 1].np);
  else if (!rc)
    rc = unsetenv("WEFT_PREV_WORLD_SIZE");
  /* In a Slurm allocation, the dead node's job step outlives the attempt until Slurm
   * finds the node down (SlurmdTimeout, 300 s by default), holding the CPUs of every node
   * it ran on: the next attempt's step (mpirun's srun of its daemons, or srun itself)
   * shares them (srun --overlap), or it would wait for that step for minutes. A value
   * of the user's own stays. */
  if (!rc && k > 0 && getenv("SLURM_JOB_ID") && !getenv("SLURM_OVERLAP")) {
    rc = setenv("SLURM_OVERLAP", "1", 1);
    overlap_set = !rc;
  }
  if (rc)
    fprintf(stderr, "weftrun: out of memory\n");
  return rc ? WR_EXIT_ENGINE : 0;
}

static void unset_vars(void)
{
  if (overlap_set)
    unsetenv("SLURM_OVERLAP");
  overlap_set = 0;
  unsetenv("WEFT_RESTART_COUNT");
  unsetenv("WEFT_MAX_RESTARTS");
  unsetenv("WEFT_CHECKPOINT_DIR");
  unsetenv("WEFT_PREV_WORLD_SIZE");
}

/* A line on stderr, unless the discovery command's failures are already said. */
static void say(const loop *l, const char *fmt, ...) WEFT_PRINTF(2, 3);
static void say(const loop *l, const char *fmt, ...)
{
  va_list ap;
  if (l->hush)
    return;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* --host-discovery's command, within its deadline: its hosts into *h (*n of them, 0 for
 * none). 0; else the line is said and WR_EXIT_HOSTS returned (a stop request: 128+sig). */
static int discover(loop *l, wr_given_host **h, int *n)
{
  const wr_opts *o = l->o;
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)o->host_discovery, NULL};
  char why[700] = "";
  weftx_proc_spec s;
  weftx_proc_result r;
  *h = NULL;
  *n = 0;
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.out = WEFTX_PROC_PIPE;
  s.max_output = 1 << 20;
  s.timeout = (double)o->discovery_timeout;
  s.grace = 1;
  s.stop_fd = l->stop_fd;
  s.death_signal = SIGKILL; /* weftrun killed: nothing of it stays */
  int failed = weftx_proc_run(&s, &r, why, sizeof(why));
  int rc = WR_EXIT_HOSTS;
  if (failed)
    say(l, "weftrun: --host-discovery '%s': %s\n", o->host_discovery, why);
  else if (r.stopped) {
    say(l,
        "weftrun: got signal %d while --host-discovery ran; nothing is running "
        "(exit %d)\n",
        r.stopped, 128 + r.stopped);
    rc = 128 + r.stopped;
  } else if (r.timed_out)
    say(l,
        "weftrun: --host-discovery '%s' did not end within %ld s "
        "(--host-discovery-timeout); it was killed\n",
        o->host_discovery, o->discovery_timeout);
  else if (r.capped)
    say(l, "weftrun: --host-discovery '%s' printed more than 1 MiB; it was killed\n",
        o->host_discovery);
  else if (r.status)
    say(l,
        "weftrun: --host-discovery '%s' failed (exit %d); it must exit 0 and print "
        "one 'HOST slots=N' line per host\n",
        o->host_discovery, r.status);
  else if (wr_rs_parse_hosts(r.output ? r.output : "", r.len, h, n, why, sizeof(why)))
    say(l,
        "weftrun: --host-discovery '%s' printed what is not a host list: %s; it must "
        "print one 'HOST slots=N' line per host\n",
        o->host_discovery, why);
  else
    rc = 0;
  free(r.output);
  return rc;
}

/* A word of -H, --host, --hostfile, --machinefile (and -host, ...); 2 when its value is
 * the next word, 1 when it is in the word ("--host=a,b"). */
static int host_word(const char *w)
{
  static const char *const names[] = {"H", "host", "hostfile", "machinefile", NULL};
  if (w[0] != '-')
    return 0;
  w += w[1] == '-' ? 2 : 1;
  size_t n = strcspn(w, "=");
  for (int i = 0; names[i]; i++)
    if (strlen(names[i]) == n && !strncmp(w, names[i], n))
      return w[n] == '=' ? 1 : 2;
  return 0;
}

/* The program's Open MPI words with its hosts replaced by --hostfile \p path: when
 * mpirun places the ranks it reads them word for word. */
static int replace_host_words(wr_app *a, const char *path)
{
  int k = 0;
  for (int i = 0; i < a->nwords; i++) {
    int h = host_word(a->words[i]);
    if (h) {
      i += h - 1;
      continue;
    }
    a->words[k] = a->words[i];
    a->place[k++] = a->place[i];
  }
  if (k + 2 > WR_MAX_WORDS)
    return -1;
  a->words[k] = "--hostfile";
  a->place[k++] = WR_WORD_PLACE;
  a->words[k] = path;
  a->place[k++] = WR_WORD_PLACE;
  a->nwords = k;
  return 0;
}

/* The hosts for attempt k into the hostfile the attempt reads: \p h, n of them. */
static int use_hosts(loop *l, int k, const wr_given_host *h, int n)
{
  int rc = make_dir(l);
  if (rc)
    return rc;
  snprintf(l->hosts, sizeof(l->hosts), "%s/hosts.%d", l->dir, k);
  FILE *f = fopen(l->hosts, "w");
  if (f)
    wr_rs_write_hosts(f, h, n);
  if (!f || fclose(f)) {
    fprintf(stderr, "weftrun: cannot write %s: %s\n", l->hosts, strerror(errno));
    return WR_EXIT_ENGINE;
  }
  /* the attempt's hosts are these, as if given with --hostfile; and they alone: Open
   * MPI starts its daemons on every host of its default hostfile (weft-vcluster's, a
   * site's), which holds the hosts left out too */
  if (!l->saved_dh) {
    const char *v = getenv(DEFAULT_HOSTFILE);
    l->saved_dh = 1;
    if (v && !(l->user_dh = strdup(v))) {
      fprintf(stderr, "weftrun: out of memory\n");
      return WR_EXIT_ENGINE;
    }
    if (setenv(DEFAULT_HOSTFILE, "none", 1)) {
      fprintf(stderr, "weftrun: out of memory\n");
      return WR_EXIT_ENGINE;
    }
  }
  wr_app *a = &l->o->apps[0];
  if (replace_host_words(a, l->hosts)) {
    fprintf(stderr, "weftrun: more than %d option words\n", WR_MAX_WORDS);
    return WR_EXIT_USAGE;
  }
  a->nhost_args = 0;
  a->hostfile = l->hosts;
  l->o->nhost_args = 0;
  l->o->hostfile = l->hosts;
  return 0;
}

static void host_names(char *buf, size_t len, const wr_given_host *h, int n)
{
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", h[i].name);
    if (w < 0 || (size_t)w >= len - used) {
      snprintf(buf + (len > 5 ? len - 5 : 0), len > 5 ? 5 : len, "...");
      return;
    }
    used += (size_t)w;
  }
}

/* What ended attempt \p a, for the restart line. */
static void cause(const wr_attempt *a, char *buf, size_t len)
{
  char names[400];
  wr_given_host h[8];
  int n = a->nlost < 8 ? a->nlost : 8;
  for (int i = 0; i < n; i++)
    snprintf(h[i].name, sizeof(h[i].name), "%s", a->lost[i]);
  host_names(names, sizeof(names), h, n);
  if (a->code == WR_EXIT_PREEMPTED)
    snprintf(buf, len, "%s preempted (%d)", n ? names : "a VM was", a->code);
  else if (a->code == WR_EXIT_HOSTLOST)
    snprintf(buf, len, "%s lost (%d)", n ? names : "a host was", a->code);
  else
    snprintf(buf, len, "the job failed (exit %d)", a->code);
}

/* Sleep until \p until or a stop request: 0, or the signal. */
static int nap(int stop_fd, double until)
{
  double now = weftx_monotonic();
  if (until <= now)
    return 0;
  struct pollfd p = {stop_fd, POLLIN, 0};
  int ms = (int)((until - now) * 1000) + 1;
  if (poll(&p, stop_fd >= 0 ? 1 : 0, ms) > 0)
    return wr_signals_pending(stop_fd);
  return 0;
}

/* The hosts of attempt k > 0: waited for up to --restart-wait, after the backoff. 0 with
 * the hostfile written; else the exit status (the last attempt's when the wait ran out). */
static int next_hosts(loop *l, int k, int last_rc)
{
  const wr_opts *o = l->o;
  long min = o->min_hosts > 0 ? o->min_hosts : 1;
  double start = weftx_monotonic(), backoff = wr_rs_backoff(l->st.fast);
  double deadline = start + (double)o->restart_wait;
  if (backoff > 0)
    fprintf(stderr,
            "weftrun: %d attempt%s in a row failed within %.0f s of starting; "
            "waiting %.0f s before the next\n",
            l->st.fast, l->st.fast == 1 ? "" : "s", WR_FAST_S, backoff);
  int sig = nap(l->stop_fd, start + backoff), said = 0;
  for (;;) {
    if (sig) {
      fprintf(stderr,
              "weftrun: got signal %d while waiting to restart; nothing is running "
              "(exit %d)\n",
              sig, 128 + sig);
      return 128 + sig;
    }
    wr_given_host *found = NULL, *pick = NULL;
    int nfound = 0, rc = 0;
    if (o->host_discovery) {
      rc = discover(l, &found, &nfound);
      if (rc > 128) {
        free(found);
        return rc;
      }
      /* a failure while waiting (a cloud API down for a moment): no host for now, asked
       * again until --restart-wait runs out; said once */
      if (rc) {
        if (!l->hush)
          fprintf(stderr,
                  "weftrun: asking --host-discovery again every %.0f s until "
                  "--restart-wait runs out\n",
                  WR_POLL_S);
        l->hush = 1;
        free(found);
        found = NULL;
        nfound = 0;
        rc = 0;
      } else
        l->hush = 0;
    } else {
      found = l->orig;
      nfound = l->norig;
    }
    double now = weftx_monotonic();
    pick = nfound ? calloc((size_t)nfound, sizeof(*pick)) : NULL;
    int n = pick ? wr_rs_select(&l->st, found, nfound, now, o->max_hosts, pick) : 0;
    if (nfound && !pick)
      rc = WR_EXIT_ENGINE;
    if (found != l->orig)
      free(found);
    if (!rc && n >= min) {
      rc = use_hosts(l, k, pick, n);
      free(pick);
      return rc;
    }
    free(pick);
    if (rc) {
      fprintf(stderr, "weftrun: out of memory\n");
      return rc;
    }
    if (now >= deadline) {
      fprintf(stderr,
              "weftrun: no restart: %d host%s available, --min-hosts is %ld, after waiting "
              "%ld s (--restart-wait); exit %d, the last attempt's\n",
              n, n == 1 ? "" : "s", min, o->restart_wait, last_rc);
      return last_rc;
    }
    if (!said++)
      fprintf(stderr,
              "weftrun: %d host%s available, --min-hosts is %ld; waiting up to %ld s "
              "for more (--restart-wait)\n",
              n, n == 1 ? "" : "s", min, o->restart_wait);
    double wake = now + WR_POLL_S, back = wr_rs_next_back(&l->st, now);
    if (!o->host_discovery && back > 0 && back < deadline)
      wake = back;
    else if (!o->host_discovery)
      wake = deadline;
    sig = nap(l->stop_fd, wake < deadline ? wake : deadline);
  }
}

/* The closing list: one line per attempt, when there were several. */
static void closing(const loop *l, FILE *out)
{
  if (l->natt < 2)
    return;
  for (int i = 0; i < l->natt; i++) {
    const wr_attempt *a = &l->att[i];
    char c[600] = "";
    if (a->code)
      cause(a, c, sizeof(c));
    if (!a->ran) {
      fprintf(out, "weftrun: attempt %d of %d: did not start (exit %d)\n", i + 1, l->natt, a->code);
      continue;
    }
    fprintf(out, "weftrun: attempt %d of %d: %d rank%s on %d host%s, %.1f s, %s%s\n", i + 1,
            l->natt, a->np, a->np == 1 ? "" : "s", a->nhosts, a->nhosts == 1 ? "" : "s",
            a->ended - a->begun, a->code ? "ended: " : "exit 0", c);
  }
}

/* --dry-run: the policy the launch would follow. */
static void policy(const loop *l, FILE *out)
{
  const wr_opts *o = l->o;
  fprintf(out,
          "# restarts: up to %ld whole-job restart%s after a lost host (75) or a "
          "preemption (79)%s\n",
          o->restarts, o->restarts == 1 ? "" : "s",
          o->restart_on == WR_RESTART_ON_ANY ? " or a failed rank (--restart-on any)" : "");
  if (o->host_discovery)
    fprintf(out, "# restarts: hosts from --host-discovery '%s' (run with a %ld s deadline)%s\n",
            o->host_discovery, o->discovery_timeout, o->max_hosts ? ", at most --max-hosts" : "");
  else
    fprintf(out, "# restarts: hosts: those given, less the ones that failed\n");
  fprintf(out, "# restarts: at least %ld host%s, waiting up to %ld s for them (--restart-wait)\n",
          o->min_hosts > 0 ? o->min_hosts : 1, o->min_hosts > 1 ? "s" : "", o->restart_wait);
  fprintf(out,
          "# restarts: a host that failed is left out %.0f s, doubled at each failure up to "
          "%.0f s; an attempt that fails within %.0f s of starting delays the next %.0f s, "
          "doubled up to %.0f s\n",
          WR_COOLDOWN_S, WR_COOLDOWN_MAX_S, WR_FAST_S, WR_BACKOFF_S, WR_BACKOFF_MAX_S);
  if (o->checkpoint_dir)
    fprintf(out, "# restarts: WEFT_CHECKPOINT_DIR=%s\n", o->checkpoint_dir);
  else
    fprintf(out, "# restarts: WEFT_CHECKPOINT_DIR in the job's private directory "
                 "(this host only; --checkpoint-dir for a shared one)\n");
}

/* The lost hosts of \p a that Slurm's node list \p nodes still holds, ", "-separated,
 * into \p out; how many. */
static int still_held(const wr_attempt *a, const char *nodes, char *out, size_t len)
{
  weftx_hostlist *hl = NULL;
  char why[200];
  int n = 0;
  size_t at = 0;
  out[0] = '\0';
  if (weftx_hostlist_create(&hl))
    return 0;
  if (!weftx_hosts_parse_slurm(hl, nodes, NULL, why, sizeof(why)))
    for (int i = 0; i < a->nlost; i++)
      if (weftx_hostlist_find(hl, a->lost[i]) >= 0) {
        int w = snprintf(out + at, len - at, "%s%s", n ? ", " : "", a->lost[i]);
        if (w > 0 && (size_t)w < len - at)
          at += (size_t)w;
        n++;
      }
  weftx_hostlist_destroy(hl);
  return n;
}

/* In a Slurm job, after an attempt that failed: what Slurm
 * made of it. 1 when Slurm ended the allocation: nothing to restart on; said, and *rc
 * is exit 75 when a node failure ended it (the allocation was made without --no-kill;
 * 75 is what a requeueing batch script looks for). 0 otherwise; after a lost host or a
 * preemption that will be restarted (\p restart), whether Slurm took the node out of
 * the job (--no-kill) or has not decided yet (it waits SlurmdTimeout, 300 s by default,
 * before it calls a node down): the restart goes on now on the other nodes, saying
 * what Slurm will do then. */
static int slurm_verdict(int stop_fd, const wr_attempt *a, int restart, int *rc)
{
  const char *job = getenv("SLURM_JOB_ID"), *all = getenv("SLURM_JOB_NODELIST");
  char why[700] = "", held[1024];
  if (!job || !*job || !all || !a->code)
    return 0;
  int lost = a->code == WR_EXIT_HOSTLOST || a->code == WR_EXIT_PREEMPTED;
  if (!lost && !a->number) /* a failure of the first attempt: Slurm is not in question */
    return 0;
  if (lost && a->nlost && !still_held(a, all, held, sizeof(held)))
    return 0; /* hosts from elsewhere (--host-discovery) */
  wr_slurm_job j;
  int alive = wr_slurm_alive(job, stop_fd, &j, why, sizeof(why));
  if (alive == 0) {
    /* lost now, or Slurm says so: COMPLETING with Reason=NodeDown, then NODE_FAIL */
    int node_fail = lost || !strcmp(j.state, "NODE_FAIL") || !strcmp(j.reason, "NodeDown");
    if (node_fail)
      *rc = WR_EXIT_HOSTLOST;
    fprintf(stderr, "weftrun: Slurm ended job %s's allocation%s%s%s%s; no restart; exit %d%s\n",
            job, j.state[0] ? " (" : "", j.state, j.state[0] ? ")" : "",
            node_fail ? " when its node failed (it was not made with --no-kill)" : "", *rc,
            node_fail ? ", which a batch script can requeue on (weftrun(1) RESTARTS)" : "");
    return 1;
  }
  if (!lost || !restart)
    return 0;
  if (alive < 0)
    fprintf(stderr,
            "weftrun: cannot tell whether Slurm job %s's allocation stands (%s); restarting "
            "on its other nodes\n",
            job, why);
  else if (!j.nodes[0] || !a->nlost || !still_held(a, j.nodes, held, sizeof(held)))
    fprintf(stderr,
            "weftrun: Slurm took the lost node out of job %s (--no-kill); its nodes now: %s; "
            "restarting on them\n",
            job, j.nodes[0] ? j.nodes : "unknown");
  else
    fprintf(stderr,
            "weftrun: Slurm has not yet found %s down (it waits SlurmdTimeout); restarting "
            "now on job %s's other nodes: an allocation made with --no-kill goes on without "
            "%s, any other is ended by Slurm then (weftrun(1) RESTARTS)\n",
            held, job, a->nlost == 1 ? "it" : "them");
  return 0;
}

static int keep(loop *l, const wr_attempt *a)
{
  wr_attempt *v = realloc(l->att, (size_t)(l->natt + 1) * sizeof(*v));
  if (!v)
    return WR_EXIT_ENGINE;
  l->att = v;
  v[l->natt++] = *a;
  return 0;
}

int wr_restart_run(wr_opts *o, int stop_fd, wr_attempt_fn fn, void *arg)
{
  loop l;
  memset(&l, 0, sizeof(l));
  l.o = o;
  l.stop_fd = stop_fd;
  int launch = !o->dry_run && !o->check;
  int rc = 0;
  if (o->dry_run && o->restarts && !o->json)
    policy(&l, stdout);
  if (launch)
    rc = checkpoint_dir(&l);
  if (!rc && o->host_discovery) {
    wr_given_host *h = NULL;
    int n = 0;
    rc = discover(&l, &h, &n);
    if (!rc && !n) {
      fprintf(stderr,
              "weftrun: --host-discovery '%s' printed no host; it must print one "
              "'HOST slots=N' line per host available\n",
              o->host_discovery);
      rc = WR_EXIT_HOSTS;
    }
    if (!rc && o->max_hosts && n > o->max_hosts)
      n = (int)o->max_hosts;
    if (!rc && o->min_hosts && n < o->min_hosts) {
      fprintf(stderr, "weftrun: --host-discovery found %d host%s; --min-hosts is %ld\n", n,
              n == 1 ? "" : "s", o->min_hosts);
      rc = WR_EXIT_HOSTS;
    }
    if (!rc)
      rc = use_hosts(&l, 0, h, n);
    free(h);
  }
  for (int k = 0; !rc || k > 0; k++) {
    wr_attempt a;
    memset(&a, 0, sizeof(a));
    if (k > 0) {
      const wr_attempt *b = &l.att[k - 1];
      a.number = k;
      a.of = (int)o->restarts;
      cause(b, a.cause, sizeof(a.cause));
      a.down_at = b->verdict_at ? b->verdict_at : b->ended;
      a.prev_np = b->np;
    }
    if (launch && (rc = set_vars(&l, k)))
      break;
    /* one timeline for the job: the restarts append to the first attempt's */
    a.mon_made = l.mon_made;
    a.mon_t0 = l.mon_t0;
    a.begun = weftx_monotonic();
    rc = fn(o, stop_fd, &a, arg);
    l.mon_made = a.mon_made;
    l.mon_t0 = a.mon_t0;
    a.ended = weftx_monotonic();
    a.code = rc;
    if (k == 0 && !o->host_discovery) {
      l.orig = a.given; /* the hosts the restarts choose from */
      l.norig = a.ngiven;
      a.given = NULL;
    }
    free(a.given);
    a.given = NULL;
    if (keep(&l, &a)) {
      fprintf(stderr, "weftrun: out of memory\n");
      break;
    }
    if (!launch || !o->restarts)
      break;
    int again = wr_rs_restartable(&a, rc, o->restart_on) && k < o->restarts;
    if (slurm_verdict(stop_fd, &a, again, &rc))
      break;
    if (!wr_rs_restartable(&a, rc, o->restart_on))
      break;
    if (k >= o->restarts) {
      fprintf(stderr, "weftrun: all %ld restart%s used; exit %d, the last attempt's\n", o->restarts,
              o->restarts == 1 ? "" : "s", rc);
      break;
    }
    if (wr_rs_note(&l.st, &a, weftx_monotonic())) {
      fprintf(stderr, "weftrun: out of memory\n");
      break;
    }
    int w = next_hosts(&l, k + 1, rc);
    if (w) {
      rc = w;
      break;
    }
  }
  closing(&l, stderr);
  if (launch)
    unset_vars();
  if (l.saved_dh &&
      (l.user_dh ? setenv(DEFAULT_HOSTFILE, l.user_dh, 1) : unsetenv(DEFAULT_HOSTFILE)))
    fprintf(stderr, "weftrun: out of memory\n");
  free(l.user_dh);
  if (l.dir[0])
    wr_jobdir_rmtree(AT_FDCWD, l.dir, 0);
  free(l.orig);
  free(l.att);
  wr_rs_state_free(&l.st);
  return rc;
}
