/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --check: a pre-flight check of every host in one short job, started
 * through the engine exactly as the real job would be (the same mpirun or srun,
 * its options, hostfile, forwarded environment and network choice: engine/),
 * but with one "weft-rank --check" per host instead of the ranks. Each agent
 * reports what it finds as records (run.c reads them); the plan is then made
 * as the real job's would be, from the topologies the agents sent back; and
 * the evaluation (eval.c) turns facts and plan into the table report.c prints.
 *
 * When the engine cannot start on every host, it usually fails the whole job
 * and says little about which host: the hosts that did not answer are then
 * split into groups of which one short "reach" job each runs, side by side,
 * halving the groups that fail until each host that cannot be reached is
 * found alone (with what the engine said about it); the full check then runs
 * again on the hosts that can be. Every job has a start deadline and a
 * timeout, and the whole check a deadline (--timeout, default 60 s).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hosts/hosts.h"
#include "plan/plan.h"

#define DEFAULT_TIMEOUT_S 60 /* the whole check, without --timeout */
#define AGENT_S 10           /* what each agent has, all included */
#define START_S 10.0         /* every hello within this, plus 1 s per 50 hosts */
#define SPLIT 8              /* a failed job's silent hosts go into this many groups */

extern char **environ;

enum { UNKNOWN = 0, REACHED, UNREACHABLE, NONAME };

typedef struct check {
  const wr_opts *o;
  wr_opts oc;                          /* the options the check jobs are built from */
  const char *words[WR_MAX_WORDS + 1]; /* its first program's option words */
  int place[WR_MAX_WORDS + 1];
  wr_inventory *inv;
  wr_jobdir *dir;
  int stop_fd;
  double t0, end;
  const wr_engine *e; /* the real job's engine */
  char id[40];
  wr_net net;    /* chosen for the hosts that resolve */
  int master;    /* the first of them: MASTER_ADDR */
  int port;      /* MASTER_PORT */
  int user_port; /* it is the user's (-x MASTER_PORT) */
  int *state;    /* per host of the inventory */
  char **why;    /* per host: why it was not reached */
  int njobs;
} check;

static double left(const check *c) { return c->end - weftx_monotonic(); }

static void set_why(check *c, int h, const char *fmt, ...) WEFT_PRINTF(3, 4);
static void set_why(check *c, int h, const char *fmt, ...)
{
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  free(c->why[h]);
  c->why[h] = strdup(buf);
}

/* The engine's first words worth showing: its first line that is not a rule or blank. */
static void engine_says(const char *err, char *buf, size_t len)
{
  buf[0] = '\0';
  for (const char *l = err ? err : ""; *l;) {
    size_t n = strcspn(l, "\n");
    const char *s = l;
    while (s < l + n && (*s == ' ' || *s == '\t'))
      s++;
    size_t m = (size_t)(l + n - s);
    while (m && (s[m - 1] == ' ' || s[m - 1] == '\r'))
      m--;
    if (m && strspn(s, "-=*") < m && strncmp(s, "mpirun: Forwarding signal", 25)) {
      snprintf(buf, len, "%.*s", (int)(m < 300 ? m : 300), s);
      return;
    }
    l += n + (l[n] == '\n');
  }
}

/* MASTER_PORT: the user's (-x MASTER_PORT=N, or -x MASTER_PORT from the environment)
 * when given, as the ranks would get it; else weftrun's own choice. */
static int master_port(const wr_opts *o, int chosen, int *user)
{
  *user = 0;
  for (int i = 0; i < o->nxvars; i++) {
    const char *x = o->xvars[i], *v = NULL;
    long p;
    if (!strncmp(x, "MASTER_PORT=", 12))
      v = x + 12;
    else if (!strcmp(x, "MASTER_PORT"))
      v = getenv("MASTER_PORT");
    if (v && !weftx_parse_long(v, 1, 65535, &p)) {
      *user = 1;
      return (int)p;
    }
  }
  return chosen;
}

static void make_id(char *buf, size_t len)
{
  unsigned char r[8];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
    unsigned long x =
      (unsigned long)getpid() * 2654435761UL ^ (unsigned long)(weftx_monotonic() * 1e9);
    memcpy(r, &x, sizeof(r) < sizeof(x) ? sizeof(r) : sizeof(x));
  }
  if (fd >= 0)
    close(fd);
  snprintf(buf, len, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
           r[7]);
}

/* A plan of one rank on each of the hosts \p idx, for the engine. */
static int one_each(const check *c, const int *idx, int k, wr_plan *p)
{
  memset(p, 0, sizeof(*p));
  p->hosts = calloc((size_t)k + 1, sizeof(*p->hosts));
  p->ranks = calloc((size_t)k + 1, sizeof(*p->ranks));
  if (!p->hosts || !p->ranks) {
    free(p->hosts);
    free(p->ranks);
    return -1;
  }
  p->np = p->nhosts = k;
  p->napps = 1;
  p->mode = WR_MODE_GPU; /* weft's layout: one agent on each host, as given */
  for (int i = 0; i < k; i++) {
    p->hosts[i].host = &c->inv->hosts[idx[i]];
    p->hosts[i].slots = p->hosts[i].cap = p->hosts[i].count = 1;
    p->ranks[i].rank = i;
    p->ranks[i].host = i;
    p->ranks[i].node_rank = i;
  }
  return 0;
}

/* One check job of the hosts \p idx through the engine, in \p mode ("full" or "reach"). */
static int make_job(check *c, const int *idx, int k, const char *mode, wr_check_job *j)
{
  char hostfile[4096], why[600], name[32];
  wr_plan p;
  wr_net net = c->net;
  wt_agent_args ag;
  wr_argv a = {NULL, 0, 0}, env = {NULL, 0, 0};
  wr_engine e = *c->e;
  int rc = -1;

  memset(j, 0, sizeof(*j));
  if (one_each(c, idx, k, &p)) {
    fprintf(stderr, "weftrun: out of memory\n");
    return -1;
  }
  /* a job without the first host has another master */
  if (idx[0] != c->master || !c->net.addr[0]) {
    const wr_host *first = &c->inv->hosts[idx[0]];
    if (weftx_master_addr(first->name, net.ifaddr[0] ? net.ifaddr : NULL, net.addr,
                          sizeof(net.addr), why, sizeof(why)))
      snprintf(net.addr, sizeof(net.addr), "%s", first->name);
    /* the port the job would use there: the user's, or one free here when here */
    if (c->user_port || !first->local || weftx_master_port(0, &net.port, why, sizeof(why)))
      net.port = c->port;
  } else {
    net.port = c->port;
  }
  snprintf(name, sizeof(name), "check-hosts-%d", c->njobs++);
  FILE *f = wr_jobdir_file(c->dir, name, hostfile, sizeof(hostfile), why, sizeof(why));
  if (!f || wr_engine_hostfile(&p, &e, f) | fclose(f)) {
    fprintf(stderr, "weftrun: %s\n", f ? "cannot write the check's hostfile" : why);
    goto out;
  }
  wt_agent_args_init(&ag);
  ag.check = mode;
  ag.check_id = c->id;
  double budget = left(c) - 2;
  ag.check_deadline = budget < AGENT_S ? (budget < 2 ? 2 : (long)budget) : AGENT_S;
  e.hostfile = hostfile;
  e.host_xml = NULL;
  e.agent_args = &ag;
  if (wr_engine_argv(&p, &c->oc, &net, &e, &a, &env, why, sizeof(why))) {
    fprintf(stderr, "weftrun: %s\n", why);
    wr_argv_free(&a);
    wr_argv_free(&env);
    goto out;
  }
  if (c->o->verbose)
    wr_argv_print(stderr, "weftrun: checking:", &a);
  j->argv = a.v; /* the job's from here */
  j->env = env;
  j->nhosts = k;
  j->start_s = START_S + k / 50.0;
  j->timeout_s = j->start_s + (double)ag.check_deadline + 3;
  if (j->start_s > left(c))
    j->start_s = left(c) > 1 ? left(c) : 1;
  if (j->timeout_s > left(c))
    j->timeout_s = left(c) > 1 ? left(c) : 1;
  j->verbose = c->o->verbose;
  j->labels = e.kind != WR_ENGINE_MPIRUN;
  rc = 0;
out:
  free(p.hosts);
  free(p.ranks);
  return rc;
}

/* wr_check_run()'s result as weftrun's: a pipe it could not make is a failure to launch */
static int ran(int rc)
{
  if (rc < 0) {
    fprintf(stderr, "weftrun: cannot run the check: %s\n", strerror(errno));
    return WR_EXIT_ENGINE;
  }
  return rc;
}

/* ---- Finding the hosts the engine cannot reach ----------------------------- */

typedef struct group {
  int *idx;
  int k;
} group;

/* The silent hosts of the job of \p idx, into \p out. */
static int silent(const wr_check_job *j, const int *idx, int *out)
{
  int k = 0;
  for (int i = 0; i < j->nhosts; i++)
    if (j->got[i].hello < 0)
      out[k++] = idx[i];
  return k;
}

/* Split \p idx (k) into at most \p parts groups appended to \p g. */
static int split(const int *idx, int k, int parts, group *g, int *ng)
{
  if (parts > k)
    parts = k;
  for (int p = 0, from = 0; p < parts; p++) {
    int size = k / parts + (p < k % parts);
    if (!(g[*ng].idx = malloc((size_t)size * sizeof(int))))
      return -1;
    memcpy(g[*ng].idx, idx + from, (size_t)size * sizeof(int));
    g[(*ng)++].k = size;
    from += size;
  }
  return 0;
}

/* Reach jobs over the hosts \p idx until each is reached or found alone unreachable
 * (or the deadline). 0, or 128+N when stopped. */
static int find_unreachable(check *c, const int *idx, int k)
{
  int n = c->inv->nhosts, ng = 0, rc = 0;
  group *g = calloc((size_t)2 * n + 2, sizeof(*g)), *next = calloc((size_t)2 * n + 2, sizeof(*g));
  wr_check_job *jobs = calloc((size_t)2 * n + 2, sizeof(*jobs));
  int *quiet = calloc((size_t)n + 1, sizeof(int));
  if (!g || !next || !jobs || !quiet || split(idx, k, SPLIT, g, &ng)) {
    fprintf(stderr, "weftrun: out of memory\n");
    rc = WR_EXIT_ENGINE;
    goto out;
  }
  while (ng > 0 && left(c) > 1 && !rc) {
    int nj = 0, nn = 0;
    for (int i = 0; i < ng; i++)
      if (make_job(c, g[i].idx, g[i].k, "reach", &jobs[nj]) == 0)
        nj++;
      else
        g[i].k = 0;
    rc = nj ? ran(wr_check_run(jobs, nj, c->stop_fd)) : 0;
    for (int i = 0, jn = 0; i < ng; i++) {
      if (!g[i].k)
        continue;
      wr_check_job *j = &jobs[jn++];
      for (int h = 0; h < j->nhosts; h++)
        if (j->got[h].hello >= 0)
          c->state[g[i].idx[h]] = REACHED;
      int q = silent(j, g[i].idx, quiet);
      if (q == 1 && g[i].k == 1) {
        char says[400];
        engine_says(j->err, says, sizeof(says));
        c->state[quiet[0]] = UNREACHABLE;
        if (j->start_late) {
          set_why(c, quiet[0], "no answer within %.0f s", j->start_s);
        } else if (says[0])
          set_why(c, quiet[0], "%s", says);
        else
          set_why(c, quiet[0], "%s",
                  j->status ? "the engine failed there"
                            : "the engine ended without starting weft-rank there");
      } else if (q > 0 && !rc && split(quiet, q, q > 1 ? 2 : 1, next, &nn)) {
        rc = WR_EXIT_ENGINE;
      }
      wr_check_job_free(j);
    }
    for (int i = 0; i < ng; i++)
      free(g[i].idx);
    group *t = g;
    g = next;
    next = t;
    ng = nn;
  }
out:
  for (int i = 0; g && i < ng; i++)
    free(g[i].idx);
  free(g);
  free(next);
  free(jobs);
  free(quiet);
  return rc;
}

/* ---- From what came back to the evaluation ---------------------------------- */

/* The probed topologies and Google Cloud facts of the hosts that answered, into the
 * inventory, as the probe would have put them. */
static int learn(check *c, const int *idx, const wr_check_job *j)
{
  int n = c->inv->nhosts, rc = 0;
  char **paths = calloc((size_t)n + 1, sizeof(*paths));
  if (!paths)
    return WR_EXIT_ENGINE;
  for (int i = 0; i < j->nhosts; i++) {
    wr_host *w = &c->inv->hosts[idx[i]];
    const wr_check_got *g = &j->got[i];
    const char *gce = NULL;
    for (int f = 0; f < g->nfacts && !gce; f++)
      if (!strcmp(g->facts[f].key, WT_CK_GCE))
        gce = g->facts[f].value;
    if (gce) {
      size_t m = strcspn(gce, " ");
      snprintf(w->machine_type, sizeof(w->machine_type), "%.*s", (int)m, gce);
      const char *ph = gce + m + (gce[m] == ' ');
      snprintf(w->physical_host, sizeof(w->physical_host), "%s", strcmp(ph, "-") ? ph : "");
    }
    if (g->xml && !w->file && !w->local &&
        wr_probe_save(w, w->index, g->xml, g->xmllen, c->dir, &paths[w->index]))
      paths[w->index] = NULL;
  }
  rc = wr_facts_topologies(c->o, c->inv, paths);
  for (int h = 0; h < n; h++)
    free(paths[h]);
  free(paths);
  return rc;
}

static int exit_of(wr_check_status s)
{
  return s == WR_CHECK_FAIL   ? WR_EXIT_CHECKFAIL
         : s == WR_CHECK_WARN ? WR_EXIT_CHECKWARN
                              : WR_EXIT_OK;
}

/* The plan, made as the real job's would be, its ranks per host into the input;
 * the plan itself is kept for --dry-run. */
static void expect(check *c, wr_check_host *hosts, wr_plan **plan, char *why, size_t len)
{
  wr_plan_here here = {wr_gcp_reserved_cpus(c->inv->gcp), c->inv->preset_env, c->inv->npreset_env,
                       environ};
  *plan = NULL;
  if (wr_plan_make(c->o, c->inv, &here, plan, why, len)) {
    wr_plan_destroy(*plan);
    *plan = NULL;
    return;
  }
  why[0] = '\0';
  const wr_plan *p = *plan;
  for (int h = 0; h < p->nhosts; h++) {
    const wr_host *w = p->hosts[h].host;
    int gpu = p->pol.map_by == WEFTX_MAP_GPU || (p->pol.map_by == WEFTX_MAP_AUTO && w->gpus > 0);
    hosts[w->index].planned = p->hosts[h].count;
    hosts[w->index].planned_gpus = gpu ? p->hosts[h].count : 0;
  }
}

static int report(check *c, const int *idx, const wr_check_job *j, const char *net_why)
{
  int n = c->inv->nhosts, rc;
  wr_check_host *hosts = calloc((size_t)n + 1, sizeof(*hosts));
  wr_check_result res;
  wr_plan *plan = NULL;
  char plan_why[1024] = "", says[400] = "";
  if (!hosts) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  if (j)
    engine_says(j->err, says, sizeof(says));
  for (int h = 0; h < n; h++) {
    hosts[h].name = c->inv->hosts[h].name;
    hosts[h].planned = hosts[h].planned_gpus = -1;
    hosts[h].engine_why = c->why[h];
    hosts[h].start_s = -1;
  }
  for (int i = 0; j && i < j->nhosts; i++) {
    wr_check_host *w = &hosts[idx[i]];
    const wr_check_got *g = &j->got[i];
    w->answered = g->hello >= 0;
    w->complete = g->end;
    w->start_s = g->hello;
    w->facts = g->facts;
    w->nfacts = g->nfacts;
    if (!w->answered && !w->engine_why)
      w->engine_why = j->start_late ? "no answer within the start deadline" : says[0] ? says : NULL;
    else if (w->answered && !w->complete && !w->engine_why)
      w->engine_why = j->timed_out ? "the check job ran out of time" : says[0] ? says : NULL;
  }
  if (j && learn(c, idx, j) == 0)
    expect(c, hosts, &plan, plan_why, sizeof(plan_why));
  wr_check_input in = {hosts,         n,
                       c->e->name,    weft_version_string(),
                       c->net.ifname, j && j->nhosts ? idx[0] : -1,
                       c->port,       plan_why[0] ? plan_why : net_why};
  if (wr_check_evaluate(&in, &res)) {
    fprintf(stderr, "weftrun: out of memory\n");
    wr_plan_destroy(plan);
    free(hosts);
    return WR_EXIT_ENGINE;
  }
  rc = exit_of(res.worst);
  wr_check_report r = {&in, &res,
                       n <= WT_CHECK_ALL_PAIRS ? "every pair, both ways"
                                               : "ring neighbours, the master and 4 more per host",
                       weftx_monotonic() - c->t0, rc};
  if (c->o->dry_run && !c->o->json && plan)
    wr_report(plan, c->inv, &c->net, c->o, stdout);
  if (c->o->json)
    wr_check_print_json(&r, stdout);
  else
    wr_check_print(&r, stdout);
  fflush(stdout);
  wr_check_result_free(&res);
  wr_plan_destroy(plan);
  free(hosts);
  return rc;
}

/* ---- The check ---------------------------------------------------------------- */

/* The full check of the hosts \p idx: 0 (the job in \p j), 128+N when stopped by
 * signal N, WR_EXIT_ENGINE when it cannot be made. */
static int run_full(check *c, const int *idx, int k, wr_check_job *j)
{
  if (make_job(c, idx, k, "full", j))
    return WR_EXIT_ENGINE;
  return ran(wr_check_run(j, 1, c->stop_fd));
}

/* The options of the check jobs: the user's, but output the check can read (tagged,
 * not to files, nothing merged into it, no stdin, no reports). The option words go to
 * mpirun as the user typed them (engine/mpirun.c): those are filtered by name, each
 * with as many arguments as weftrun's option table gives it. */
static void job_options(check *c)
{
  static const char *const drop[] = {"xml",
                                     "merge-stderr-to-stdout",
                                     "stdin",
                                     "report-pid",
                                     "report-uri",
                                     "tag-output",
                                     "timestamp-output",
                                     "output-filename",
                                     "report-bindings",
                                     "display-map",
                                     "display-allocation",
                                     "display-devel-map",
                                     "display-topo",
                                     NULL};
  wr_opts *oc = &c->oc;
  const wr_app *a = &c->o->apps[0];
  int n = 0;
  *oc = *c->o;
  oc->tag_output = 1;
  oc->timestamp_output = 0;
  oc->output_filename = NULL;
  oc->report_bindings = 0;
  oc->npass = 0;
  c->words[n] = "--tag-output";
  c->place[n++] = WR_WORD_ANY;
  for (int i = 0; i < a->nwords && n < WR_MAX_WORDS; i++) {
    const char *w = a->words[i], *bare = w + strspn(w, "-");
    const wt_opt *row = w[0] == '-' ? wt_opt_find(wr_options, bare) : NULL;
    int nargs = !row ? 0 : row->kind == WT_OPT_ARG ? 1 : row->kind == WT_OPT_ARG2 ? 2 : 0;
    int dropped = 0;
    for (int d = 0; row && drop[d]; d++)
      dropped |= !strcmp(bare, drop[d]);
    /* an option's words go or stay together */
    for (int k = 0; k <= nargs && i + k < a->nwords; k++)
      if (!dropped && n < WR_MAX_WORDS) {
        c->words[n] = a->words[i + k];
        c->place[n++] = a->place[i + k];
      }
    i += nargs;
  }
  oc->apps[0].words = c->words;
  oc->apps[0].place = c->place;
  oc->apps[0].nwords = n;
  /* a metadata server named for the job (off GCE: tests) is asked on every host, as
   * the probe does */
  const char *md = getenv("GCE_METADATA_HOST");
  int given = 0;
  for (int i = 0; i < oc->nxvars; i++)
    given |= !strncmp(oc->xvars[i], "GCE_METADATA_HOST", 17);
  if (md && *md && !given && oc->nxvars < WR_MAX_X && oc->apps[0].nwords + 2 <= WR_MAX_WORDS) {
    oc->xvars[oc->nxvars++] = "GCE_METADATA_HOST";
    c->words[oc->apps[0].nwords] = "-x"; /* mpirun gets the option words */
    c->place[oc->apps[0].nwords++] = WR_WORD_ANY;
    c->words[oc->apps[0].nwords] = "GCE_METADATA_HOST";
    c->place[oc->apps[0].nwords++] = WR_WORD_ANY;
  }
}

/* The check's state for a run of \p seconds from now (its deadline). */
static void begin(check *c, const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                  int stop_fd, double seconds)
{
  memset(c, 0, sizeof(*c));
  c->o = o;
  c->inv = inv;
  c->dir = dir;
  c->stop_fd = stop_fd;
  c->t0 = weftx_monotonic();
  c->end = c->t0 + seconds;
  c->e = e;
  job_options(c);
  make_id(c->id, sizeof(c->id));
}

/* The hosts whose names resolve here into \p idx (how many); the others NONAME, with
 * why: a name that does not resolve here is a host no engine reaches. */
static int resolvable(check *c, int *idx)
{
  int k = 0;
  for (int h = 0; h < c->inv->nhosts; h++) {
    weftx_netaddr a;
    char why[400];
    const wr_host *w = &c->inv->hosts[h];
    if (!w->local && weftx_host_resolve(w->name, &a, why, sizeof(why))) {
      c->state[h] = NONAME;
      set_why(c, h, "%s", why);
    } else {
      idx[k++] = h;
    }
  }
  return k;
}

/* The job's network, master and port for the hosts \p idx, as the real job's: 0, 1
 * when no interface was found (the check goes on without one), -1 out of memory. */
static int choose_net(check *c, const int *idx, int k)
{
  wr_plan p;
  if (one_each(c, idx, k, &p))
    return -1;
  int none = wr_net_choose(&p, &c->net) != 0;
  free(p.hosts);
  free(p.ranks);
  if (none)
    memset(&c->net, 0, sizeof(c->net));
  c->master = idx[0];
  c->port = master_port(c->o, c->net.port, &c->user_port);
  return none;
}

int wr_check_unreachable(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                         int stop_fd, double seconds, int *state, char **why)
{
  check c;
  int n = inv->nhosts, rc = 0;
  int *idx = calloc((size_t)n + 1, sizeof(int));
  wr_engine alone = *e; /* the failed job's control channel is not the check's */

  alone.control = NULL;
  alone.hostfile = NULL;
  alone.host_xml = NULL;
  if (!idx)
    return WR_EXIT_ENGINE;
  begin(&c, o, &alone, inv, dir, stop_fd, seconds);
  memset(state, 0, (size_t)n * sizeof(*state)); /* UNKNOWN */
  c.state = state;
  c.why = why;
  int k = resolvable(&c, idx);
  if (k > 0)
    rc = choose_net(&c, idx, k) < 0 ? WR_EXIT_ENGINE : find_unreachable(&c, idx, k);
  for (int h = 0; h < n; h++)
    state[h] = state[h] == UNREACHABLE ? WR_HOST_UNREACHABLE
               : state[h] == NONAME    ? WR_HOST_NONAME
                                       : 0;
  free(idx);
  return rc;
}

int wr_check(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir, int stop_fd)
{
  check c;
  int n = inv->nhosts, rc, k = 0;
  int *idx = NULL, *done_idx = NULL;
  wr_check_job job, *final = NULL;
  char net_why[600] = "";

  memset(&job, 0, sizeof(job));
  begin(&c, o, e, inv, dir, stop_fd, o->timeout > 0 ? (double)o->timeout : DEFAULT_TIMEOUT_S);
  if ((rc = wr_engine_ready(o, e)))
    return rc;
  c.state = calloc((size_t)n + 1, sizeof(int));
  c.why = calloc((size_t)n + 1, sizeof(char *));
  idx = calloc((size_t)n + 1, sizeof(int));
  done_idx = calloc((size_t)n + 1, sizeof(int));
  if (!c.state || !c.why || !idx || !done_idx) {
    fprintf(stderr, "weftrun: out of memory\n");
    rc = WR_EXIT_ENGINE;
    goto out;
  }
  k = resolvable(&c, idx);
  if (k > 0) {
    rc = choose_net(&c, idx, k);
    if (rc < 0) {
      rc = WR_EXIT_ENGINE;
      goto out;
    }
    if (rc) {
      rc = 0;
      snprintf(net_why, sizeof(net_why),
               "weftrun found no network interface for the job (see "
               "above); every agent checks without one");
    }
    if ((rc = run_full(&c, idx, k, &job)))
      goto stopped;
    final = &job;
    int q = silent(&job, idx, done_idx);
    for (int i = 0; job.start_late && i < q; i++)
      set_why(&c, done_idx[i], "no answer within %.0f s", job.start_s);
    if (q > 0) {
      /* the engine did not start everywhere: find where it cannot, then check the rest */
      for (int i = 0; i < k; i++)
        if (job.got[i].hello >= 0)
          c.state[idx[i]] = REACHED;
      if ((rc = find_unreachable(&c, done_idx, q)))
        goto stopped;
      int r = 0;
      for (int i = 0; i < k; i++)
        if (c.state[idx[i]] == REACHED)
          done_idx[r++] = idx[i];
        else if (c.state[idx[i]] == UNKNOWN && !c.why[idx[i]])
          set_why(&c, idx[i], "%s",
                  "no answer, and the check's deadline came before it was "
                  "tried alone");
      wr_check_job_free(&job);
      final = NULL;
      if (r > 0 && left(&c) > 2) {
        memcpy(idx, done_idx, (size_t)r * sizeof(int));
        k = r;
        if ((rc = run_full(&c, idx, k, &job)))
          goto stopped;
        final = &job;
      }
    }
  }
  rc = report(&c, idx, final, net_why[0] ? net_why : NULL);
  goto out;
stopped:
  if (rc > 128)
    fprintf(stderr, "weftrun: got signal %d; the check was stopped (exit %d)\n", rc - 128, rc);
out:
  wr_check_job_free(&job);
  for (int h = 0; c.why && h < n; h++)
    free(c.why[h]);
  free(c.why);
  free(c.state);
  free(idx);
  free(done_idx);
  return rc;
}

int wr_check_name_unreached(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                            int stop_fd, double seconds)
{
  int n = inv->nhosts, rc = WR_EXIT_ENGINE, found = 0, noname = 0;
  int *state = calloc((size_t)n + 1, sizeof(int));
  char **why = calloc((size_t)n + 1, sizeof(char *));
  if (state && why)
    rc = wr_check_unreachable(o, e, inv, dir, stop_fd, seconds, state, why);
  for (int h = 0; !rc && h < n; h++) {
    found += state[h] != 0;
    noname |= state[h] == WR_HOST_NONAME;
  }
  for (int h = 0; found && h < n; h++) {
    if (state[h] == WR_HOST_NONAME)
      fprintf(stderr,
              "weftrun: job failed: host %s is unknown: %s; no rank started; correct "
              "its name in %s (exit %d)\n",
              inv->hosts[h].name, why[h] ? why[h] : "", o->hostfile ? o->hostfile : "-H",
              WR_EXIT_NOHOST);
    else if (state[h])
      fprintf(stderr,
              "weftrun: job failed: host %s cannot be reached through %s (%s); no rank "
              "started; check that it is up and that %s can start processes there, or leave it "
              "out of the job (exit %d)\n",
              inv->hosts[h].name, e->name, why[h] ? why[h] : "no answer", e->name,
              WR_EXIT_HOSTLOST);
  }
  for (int h = 0; why && h < n; h++)
    free(why[h]);
  free(why);
  free(state);
  if (rc > 128)
    return rc;
  return found ? (noname ? WR_EXIT_NOHOST : WR_EXIT_HOSTLOST) : 0;
}
