/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench scale: how a collective scales over the hosts of a hostfile.
 *
 * For each node count K of --nodes, the first K hosts of the hostfile get a
 * hostfile of their own (slots = --ppn) and weft-bench runs on them through
 * weftrun (mpirun when weftrun is not there, which the output says), with
 * --sizes and --json; its table is parsed as it comes. Then, unless --no-pairs,
 * sendrecv runs between neighbouring hosts (h0-h1, h1-h2, ..., back to h0),
 * one rank each, at the largest size, to find a slow link or host. The result:
 * a table of busbw and scaling efficiency, an alpha-beta fit per node count
 * with a prediction for larger counts (scale-fit.c), the slowest link, and
 * DIR/scale.csv, DIR/scale.json, DIR/pairs.csv, DIR/scale.gp and, when gnuplot
 * is installed, DIR/scale.png (or .svg). Every child job's output is kept in
 * DIR/runs/.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"
#include "scale.h"

#define MAX_ARGS 64
#define MAX_BARGS 30       /* weft-bench options after "--" */
#define PLOT_TIMEOUT_S 60 /* gnuplot draws the plot in well under a second */

struct scale_opts {
  const char *hostfile, *out, *launcher;
  const struct bench_coll *coll;
  int counts[SCALE_MAX_COUNTS], ncounts;
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes, pairs, sizes_given;
  long ppn, iters, warmup, timeout;
  char *largs[MAX_ARGS];        /* --launcher-arg, in order */
  int nlargs;
  char **bargs;                 /* after "--": more weft-bench options */
  int nbargs;
};

struct scale {
  struct scale_opts o;
  weftx_hostlist *hosts;
  char self[PATH_MAX], launcher[PATH_MAX];
  int launcher_is_weftrun, tty, vcluster_sizes;
  struct scale_job jobs[SCALE_MAX_COUNTS], pairs[SCALE_MAX_COUNTS];
  int njobs, npairs, step, nsteps;
};

static const char scale_usage_text[] =
  "usage: weft-bench scale [--hostfile FILE] [--nodes 1,2,4] [--ppn N] [--coll NAME]\n"
  "                        [--sizes LIST] [--iters N] [--warmup N] [--out DIR]\n"
  "                        [--launcher weftrun|mpirun|PATH] [--launcher-arg ARG]...\n"
  "                        [--no-pairs] [--timeout SECONDS] [-- WEFT-BENCH OPTIONS]\n"
  "Runs weft-bench at each node count through weftrun and reports busbw, scaling\n"
  "efficiency, an alpha-beta fit with a prediction for larger counts, and the slowest\n"
  "link or host. Writes DIR/scale.csv, scale.json, pairs.csv, scale.gp and a plot.\n"
  "\n"
  "  --hostfile FILE      hosts, Open MPI syntax (default $WEFT_VCLUSTER_HOSTFILE)\n"
  "  --nodes LIST         node counts (default 1,2,4,... up to the hosts in FILE)\n"
  "  --ppn N              ranks per node (default 1)\n"
  "  --coll NAME          collective (default allreduce)\n"
  "  --sizes LIST         message sizes (default 1M,16M,64M; 64K,1M,4M on weft-vcluster)\n"
  "  --iters N            timed iterations per size (default 10)\n"
  "  --warmup N           untimed iterations per size (default 2)\n"
  "  --out DIR            where the files go (default weft-bench-scale)\n"
  "  --launcher L         weftrun (default when found), mpirun, or a path\n"
  "  --launcher-arg ARG   one more launcher argument (repeat for more)\n"
  "  --no-pairs           skip the pairwise sendrecv test of neighbouring hosts\n"
  "  --timeout SECONDS    end a run that takes longer (default 600)\n"
  "Exit status: 0 OK, 1 wrong data, 2 usage, 5 a run failed. See weft-bench(1).\n";

static int scale_usage_error(const char *what, const char *value)
{
  fprintf(stderr, "weft-bench scale: %s '%s'; see weft-bench scale --help\n", what, value);
  return BENCH_EXIT_USAGE;
}

static int parse_counts(const char *v, struct scale_opts *o)
{
  char buf[256], *save = NULL, *tok;

  o->ncounts = 0;
  snprintf(buf, sizeof(buf), "%s", v);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    long k;

    if (o->ncounts == SCALE_MAX_COUNTS || weftx_parse_long(tok, 1, 100000, &k) != 0)
      return -1;
    if (o->ncounts && k <= o->counts[o->ncounts - 1])
      return -1;                /* increasing, so that "the largest" is the last */
    o->counts[o->ncounts++] = (int)k;
  }
  return o->ncounts ? 0 : -1;
}

static int parse_sizes(const char *v, struct scale_opts *o)
{
  return bench_parse_sizes(v, o->sizes, &o->nsizes, NULL, 0);
}

/* \return BENCH_EXIT_OK, BENCH_EXIT_USAGE, or -1 after --help. */
static int scale_parse(int argc, char **argv, struct scale_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->coll = &bench_allreduce;
  o->ppn = 1;
  o->iters = 10;
  o->warmup = 2;
  o->timeout = 600;
  o->pairs = 1;
  o->out = "weft-bench-scale";
  parse_sizes("1M,16M,64M", o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;

    if (!strcmp(a, "--")) {
      o->bargs = argv + i + 1;
      o->nbargs = argc - i - 1;
      /* run_one() has room for this many after the launcher's arguments. */
      if (o->nbargs > MAX_BARGS)
        return scale_usage_error("more than 30 weft-bench options after '--', at",
                                 argv[i + 1 + MAX_BARGS]);
      break;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(scale_usage_text, stdout);
      return -1;
    }
    if (!strcmp(a, "--no-pairs")) {
      o->pairs = 0;
      continue;
    }
    if (strncmp(a, "--", 2))
      return scale_usage_error("unknown argument", a);
    if (!v)
      return scale_usage_error("this option needs a value:", a);
    i++;
    if (!strcmp(a, "--hostfile")) o->hostfile = v;
    else if (!strcmp(a, "--out")) o->out = v;
    else if (!strcmp(a, "--launcher")) o->launcher = v;
    else if (!strcmp(a, "--launcher-arg")) {
      if (o->nlargs == MAX_ARGS - 16)
        return scale_usage_error("too many --launcher-arg, at", v);
      o->largs[o->nlargs++] = (char *)v;
    } else if (!strcmp(a, "--coll")) {
      o->coll = bench_coll_find(v);
      bad = !o->coll;
    } else if (!strcmp(a, "--nodes")) bad = parse_counts(v, o);
    else if (!strcmp(a, "--sizes")) {
      bad = parse_sizes(v, o);
      o->sizes_given = 1;
    }
    else if (!strcmp(a, "--ppn")) bad = weftx_parse_long(v, 1, 4096, &o->ppn);
    else if (!strcmp(a, "--iters")) bad = weftx_parse_long(v, 1, 1000000, &o->iters);
    else if (!strcmp(a, "--warmup")) bad = weftx_parse_long(v, 0, 1000000, &o->warmup);
    else if (!strcmp(a, "--timeout")) bad = weftx_parse_long(v, 1, 86400, &o->timeout);
    else
      return scale_usage_error("unknown option", a);
    if (bad)
      return scale_usage_error(!strcmp(a, "--nodes") ? "--nodes wants increasing counts, got"
                               : !strcmp(a, "--coll") ? "--coll: unknown collective"
                               : "bad value for this option:", v);
  }
  return BENCH_EXIT_OK;
}

/* 1 when snprintf's result \p n fitted in \p len bytes. */
static int fits(int n, size_t len)
{
  return n >= 0 && (size_t)n < len;
}

/* This program's path for the child jobs: the libtool wrapper in a build
 * tree (.libs/lt-weft-bench -> ../weft-bench), else /proc/self/exe. */
static int self_path(char *buf, size_t len)
{
  char exe[PATH_MAX], *slash, *base;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

  if (n <= 0)
    return -1;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  base = slash + 1;
  if (slash && slash - exe >= 6 && !strncmp(slash - 6, "/.libs", 6)) {
    char wrapper[PATH_MAX];

    slash[-6] = '\0';
    if (!strncmp(base, "lt-", 3))
      base += 3;
    if (fits(snprintf(wrapper, sizeof(wrapper), "%s/%s", exe, base), sizeof(wrapper)) &&
        access(wrapper, X_OK) == 0) {
      snprintf(buf, len, "%s", wrapper);
      return 0;
    }
    slash[-6] = '/';
  }
  snprintf(buf, len, "%s", exe);
  return 0;
}

static int on_path(const char *name, char *buf, size_t len)
{
  const char *path = getenv("PATH");
  char dirs[4096], *save = NULL, *dir;

  snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
  for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    if (fits(snprintf(buf, len, "%s/%s", dir, name), len) && access(buf, X_OK) == 0)
      return 0;
  }
  return -1;
}

/* weftrun next to this program (build tree: ../weftrun/weftrun), else on
 * PATH; mpirun otherwise, or what --launcher says. */
static int find_launcher(struct scale *s)
{
  char dir[PATH_MAX], *slash;
  const char *want = s->o.launcher;

  snprintf(dir, sizeof(dir), "%s", s->self);
  slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  if (!want || !strcmp(want, "weftrun")) {
    int near = fits(snprintf(s->launcher, sizeof(s->launcher), "%s/../weftrun/weftrun", dir),
                    sizeof(s->launcher)) && access(s->launcher, X_OK) == 0;

    if (!near)
      near = fits(snprintf(s->launcher, sizeof(s->launcher), "%s/weftrun", dir),
                  sizeof(s->launcher)) && access(s->launcher, X_OK) == 0;
    if (near || on_path("weftrun", s->launcher, sizeof(s->launcher)) == 0) {
      char real[PATH_MAX];

      if (realpath(s->launcher, real))
        snprintf(s->launcher, sizeof(s->launcher), "%s", real);
      s->launcher_is_weftrun = 1;
      return 0;
    }
    if (want) {
      fprintf(stderr, "weft-bench scale: weftrun is neither next to %s nor on PATH; install "
              "weft or use --launcher mpirun\n", s->self);
      return BENCH_EXIT_USAGE;
    }
    want = "mpirun";
    printf("# weftrun not found next to weft-bench or on PATH: using mpirun\n");
  }
  if (strchr(want, '/'))
    snprintf(s->launcher, sizeof(s->launcher), "%s", want);
  else if (on_path(want, s->launcher, sizeof(s->launcher)) != 0) {
    fprintf(stderr, "weft-bench scale: launcher '%s' is not on PATH\n", want);
    return BENCH_EXIT_USAGE;
  }
  s->launcher_is_weftrun = strstr(want, "weftrun") != NULL;
  return 0;
}

static int load_hosts(struct scale *s)
{
  const char *file = s->o.hostfile ? s->o.hostfile : getenv("WEFT_VCLUSTER_HOSTFILE");
  char why[512];
  int rc, n;

  if (!file || !*file) {
    fprintf(stderr, "weft-bench scale: no hosts: give --hostfile FILE (Open MPI syntax), or run "
            "it inside weft-vcluster run\n");
    return BENCH_EXIT_USAGE;
  }
  /* A virtual cluster is for rehearsing, and its links are veth pairs on
   * shared cores: sizes that take seconds, not minutes. */
  if (!s->o.hostfile && !s->o.sizes_given) {
    parse_sizes("64K,1M,4M", &s->o);
    s->vcluster_sizes = 1;
  }
  s->o.hostfile = file;
  rc = weftx_hostlist_create(&s->hosts);
  if (rc == 0)
    rc = weftx_hostfile_load(s->hosts, file, why, sizeof(why));
  if (rc) {
    fprintf(stderr, "weft-bench scale: %s\n", rc == WEFT_ENOMEM ? "out of memory" : why);
    return BENCH_EXIT_USAGE;
  }
  n = weftx_hostlist_count(s->hosts);
  if (s->o.ncounts == 0) {
    for (int k = 1; k < n && s->o.ncounts < SCALE_MAX_COUNTS - 1; k *= 2)
      s->o.counts[s->o.ncounts++] = k;
    s->o.counts[s->o.ncounts++] = n;
  }
  if (s->o.counts[s->o.ncounts - 1] > n) {
    fprintf(stderr, "weft-bench scale: --nodes asks for %d nodes but %s has %d host%s\n",
            s->o.counts[s->o.ncounts - 1], file, n, n == 1 ? "" : "s");
    return BENCH_EXIT_USAGE;
  }
  return 0;
}

static const char *host_name(const struct scale *s, int i, char *buf, size_t len)
{
  const weftx_host *h = weftx_hostlist_host(s->hosts, i);

  if (h->user)
    snprintf(buf, len, "%s@%s", h->user, h->name);
  else
    snprintf(buf, len, "%s", h->name);
  return buf;
}

/* A hostfile of the given hosts with --ppn slots each. */
static int write_hostfile(const struct scale *s, const char *path, const int *idx, int n)
{
  FILE *f = fopen(path, "w");
  char name[512];

  if (!f)
    return -1;
  for (int i = 0; i < n; i++)
    fprintf(f, "%s slots=%ld\n", host_name(s, idx[i], name, sizeof(name)), s->o.ppn);
  return fclose(f);
}

static void size_list(const struct scale_opts *o, char *buf, size_t len)
{
  size_t used = 0;

  buf[0] = '\0';
  for (int i = 0; i < o->nsizes && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? "," : "", o->sizes[i]);
}

/* Run weft-bench COLL on the hosts idx[0..n) with \p ranks ranks. */
static int run_one(struct scale *s, struct scale_job *job, const char *coll, const char *sizes,
                   const int *idx, int n, int ranks, const char *name, const char *label)
{
  char hostfile[PATH_MAX], out[PATH_MAX], err[PATH_MAX], json[PATH_MAX], np[16];
  char iters[24], warmup[24];
  char *argv[MAX_ARGS + 32];
  int argc = 0, rc;

  snprintf(hostfile, sizeof(hostfile), "%s/runs/%s.hosts", s->o.out, name);
  snprintf(out, sizeof(out), "%s/runs/%s.txt", s->o.out, name);
  snprintf(err, sizeof(err), "%s/runs/%s.err", s->o.out, name);
  snprintf(json, sizeof(json), "%s/runs/%s.json", s->o.out, name);
  snprintf(np, sizeof(np), "%d", ranks);
  snprintf(iters, sizeof(iters), "%ld", s->o.iters);
  snprintf(warmup, sizeof(warmup), "%ld", s->o.warmup);
  if (write_hostfile(s, hostfile, idx, n) != 0) {
    fprintf(stderr, "weft-bench scale: cannot write %s: %s\n", hostfile, strerror(errno));
    return BENCH_EXIT_RUNTIME;
  }
  argv[argc++] = s->launcher;
  argv[argc++] = "--hostfile";
  argv[argc++] = hostfile;
  argv[argc++] = "-np";
  argv[argc++] = np;
  for (int i = 0; i < s->o.nlargs; i++)
    argv[argc++] = s->o.largs[i];
  argv[argc++] = s->self;
  argv[argc++] = (char *)coll;
  argv[argc++] = "--sizes";
  argv[argc++] = (char *)sizes;
  argv[argc++] = "-n";
  argv[argc++] = iters;
  argv[argc++] = "-w";
  argv[argc++] = warmup;
  argv[argc++] = "--json";
  argv[argc++] = json;
  for (int i = 0; i < s->o.nbargs; i++)
    argv[argc++] = s->o.bargs[i];
  argv[argc] = NULL;

  s->step++;
  if (s->tty)
    fprintf(stderr, "[%d/%d] %s ...", s->step, s->nsteps, label);
  job->ranks = ranks;
  rc = scale_run_job(argv, out, err, (int)s->o.timeout, job);
  if (rc != 0) {
    if (s->tty)
      fputs("\n", stderr);
    fprintf(stderr, "weft-bench scale: cannot run %s: %s\n", s->launcher, strerror(errno));
    return BENCH_EXIT_RUNTIME;
  }
  /* The table rounds bandwidths to 0.01 GB/s; recompute them from the time. */
  for (int i = 0; i < job->npts; i++) {
    struct scale_point *p = &job->pts[i];
    const struct bench_coll *c = bench_coll_find(coll);

    if (p->time_us > 0 && c) {
      p->algbw = (double)p->bytes / p->time_us / 1e3;
      p->busbw = p->algbw * c->busbw_factor(ranks);
    }
  }
  scale_fit(job);
  if (s->tty)
    fprintf(stderr, " %s in %.1f s\n", job->status == 0 ? "done" : "FAILED", job->seconds);
  printf("# [%d/%d] %s: %s, %.1f s, output in %s\n", s->step, s->nsteps, label,
         job->status == 0 ? "ok" : job->status == 124 ? "timed out" : "FAILED", job->seconds, out);
  if (job->status != 0)
    printf("#   exit status %d; see %s\n", job->status, err);
  fflush(stdout);
  return 0;
}

/* busbw of the job at \p bytes, or -1. */
static double busbw_at(const struct scale_job *j, size_t bytes)
{
  const struct scale_point *p = j->status == 0 ? scale_point_at(j, bytes) : NULL;

  return p ? p->busbw : -1;
}

/* The reference for efficiency: the first multi-node run (single-node
 * bandwidth is intra-node and says nothing about scaling), else the first
 * run with more than one rank. */
static const struct scale_job *reference(const struct scale *s)
{
  for (int i = 0; i < s->njobs; i++)
    if (s->jobs[i].nodes >= 2 && s->jobs[i].status == 0)
      return &s->jobs[i];
  for (int i = 0; i < s->njobs; i++)
    if (s->jobs[i].ranks >= 2 && s->jobs[i].status == 0)
      return &s->jobs[i];
  return NULL;
}

static double efficiency(const struct scale *s, const struct scale_job *j, size_t bytes)
{
  const struct scale_job *ref = reference(s);
  double b0 = ref ? busbw_at(ref, bytes) : -1, b = busbw_at(j, bytes);

  if (!ref || j->nodes < ref->nodes || j->ranks < 2 || !(b0 > 0) || b < 0)
    return NAN;
  return b / b0;
}

/* The slowest link, named when it is below 0.8 x the median of the links;
 * a host when both of its links are. Writes one line to f. */
static void slowest(const struct scale *s, FILE *f, char *what, size_t len)
{
  double bw[SCALE_MAX_COUNTS], med;
  int n = 0, worst = -1;

  snprintf(what, len, "none");
  for (int i = 0; i < s->npairs; i++) {
    double b = busbw_at(&s->pairs[i], s->o.sizes[s->o.nsizes - 1]);

    if (b < 0)
      continue;
    bw[n++] = b;
    if (worst < 0 || b < busbw_at(&s->pairs[worst], s->o.sizes[s->o.nsizes - 1]))
      worst = i;
  }
  if (n < 3 || worst < 0) {
    fprintf(f, "# slowest: not judged (%d link%s measured; 3 or more are needed to compare)\n", n,
            n == 1 ? "" : "s");
    return;
  }
  {
    double wb = busbw_at(&s->pairs[worst], s->o.sizes[s->o.nsizes - 1]);
    int prev = (worst + s->npairs - 1) % s->npairs, next = (worst + 1) % s->npairs;

    med = scale_median(bw, n);
    if (!(wb < 0.8 * med)) {
      fprintf(f, "# slowest: none stands out (every link within 20%% of the median %.3f GB/s)\n",
              med);
      return;
    }
    /* A host is slow when both its links are: the worst link and a neighbour. */
    if (busbw_at(&s->pairs[prev], s->o.sizes[s->o.nsizes - 1]) < 0.8 * med)
      snprintf(what, len, "host %s", s->pairs[worst].host_a);
    else if (busbw_at(&s->pairs[next], s->o.sizes[s->o.nsizes - 1]) < 0.8 * med)
      snprintf(what, len, "host %s", s->pairs[worst].host_b);
    else
      snprintf(what, len, "link %s <-> %s", s->pairs[worst].host_a, s->pairs[worst].host_b);
    fprintf(f, "# slowest: %s: %.3f GB/s, %.2f x the median %.3f GB/s of %d links\n", what, wb,
            wb / med, med, n);
  }
}

static const int predict_mult[] = { 2, 4, 8 };

static void print_table(struct scale *s, char *slow, size_t slowlen)
{
  const struct scale_opts *o = &s->o;
  const struct scale_job *last = NULL;

  printf("#\n# %5s %6s %12s %12s %10s %10s %10s\n", "nodes", "ranks", "size(B)", "time(us)",
         "algbw", "busbw", "efficiency");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    for (int k = 0; k < o->nsizes; k++) {
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = efficiency(s, j, o->sizes[k]);
      char eff[16];

      if (isnan(e))
        snprintf(eff, sizeof(eff), "-");
      else
        snprintf(eff, sizeof(eff), "%.2f", e);
      if (p)
        printf("  %5d %6d %12zu %12.2f %10.3f %10.3f %10s\n", j->nodes, j->ranks, p->bytes,
               p->time_us, p->algbw, p->busbw, eff);
      else
        printf("  %5d %6d %12zu %12s %10s %10s %10s\n", j->nodes, j->ranks, o->sizes[k], "FAILED",
               "-", "-", "-");
    }
  }
  printf("#\n# alpha-beta fit per node count (time = alpha + size x beta, least squares on relative error):\n");
  printf("# %5s %6s %12s %16s %16s\n", "nodes", "ranks", "alpha(us)", "1/beta(GB/s)", "busbw(GB/s)");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    if (isnan(j->alpha_us) || !(j->beta_us_per_byte > 0)) {
      printf("# %5d %6d   no fit (%s)\n", j->nodes, j->ranks,
             j->status ? "the run failed" : j->npts < 2 ? "it needs 2 sizes or more"
             : "time does not grow with size: too noisy, use larger sizes or more --iters");
      continue;
    }
    printf("# %5d %6d %12.2f %16.3f %16.3f\n", j->nodes, j->ranks, j->alpha_us,
           1e-3 / j->beta_us_per_byte, 1e-3 / j->beta_us_per_byte * o->coll->busbw_factor(j->ranks));
    if (j->ranks >= 2)
      last = j;
  }
  if (last) {
    printf("#\n# prediction (ring model: latency grows with ranks - 1, busbw stays at the fit of the "
           "largest run):\n# %5s %6s %12s %12s %10s\n", "nodes", "ranks", "size(B)", "time(us)",
           "busbw");
    for (size_t m = 0; m < sizeof(predict_mult) / sizeof(predict_mult[0]); m++) {
      int nodes = o->counts[o->ncounts - 1] * predict_mult[m], ranks = nodes * (int)o->ppn;
      size_t big = o->sizes[o->nsizes - 1];
      double t = scale_predict(s->jobs, s->njobs, ranks, o->coll->busbw_factor, big);

      if (!isnan(t))
        printf("# %5d %6d %12zu %12.2f %10.3f\n", nodes, ranks, big, t,
               (double)big / t / 1e3 * o->coll->busbw_factor(ranks));
    }
  }
  if (s->npairs) {
    char bw[16];

    printf("#\n# pairs: sendrecv between neighbouring hosts, 1 rank each, %zu bytes:\n",
           o->sizes[o->nsizes - 1]);
    for (int i = 0; i < s->npairs; i++) {
      bench_fmt(bw, 9, busbw_at(&s->pairs[i], o->sizes[o->nsizes - 1]));
      printf("#   %-20s <-> %-20s busbw %9s GB/s%s\n", s->pairs[i].host_a, s->pairs[i].host_b, bw,
             s->pairs[i].status ? " (FAILED)" : "");
    }
    slowest(s, stdout, slow, slowlen);
  }
}

/* scale.csv, size by size so that a plot's lines join the points of one size. */
static void write_csv(const struct scale *s, FILE *csv)
{
  const struct scale_opts *o = &s->o;

  fprintf(csv, "kind,nodes,ranks,size,time_us,algbw,busbw,efficiency,wrong\n");
  for (int k = 0; k < o->nsizes; k++)
    for (int i = 0; i < s->njobs; i++) {
      const struct scale_job *j = &s->jobs[i];
      const struct scale_point *p = j->status == 0 ? scale_point_at(j, o->sizes[k]) : NULL;
      double e = efficiency(s, j, o->sizes[k]);

      if (!p)
        continue;
      fprintf(csv, "measured,%d,%d,%zu,%.3f,%.6f,%.6f,", j->nodes, j->ranks, p->bytes, p->time_us,
              p->algbw, p->busbw);
      if (!isnan(e))
        fprintf(csv, "%.4f", e);
      fprintf(csv, ",%lld\n", p->wrong);
    }
  for (int k = 0; k < o->nsizes; k++)
    for (size_t m = 0; m < sizeof(predict_mult) / sizeof(predict_mult[0]); m++) {
      int nodes = o->counts[o->ncounts - 1] * predict_mult[m], ranks = nodes * (int)o->ppn;
      double t = scale_predict(s->jobs, s->njobs, ranks, o->coll->busbw_factor, o->sizes[k]);
      double algbw = (double)o->sizes[k] / t / 1e3;

      if (!isnan(t))
        fprintf(csv, "predicted,%d,%d,%zu,%.3f,%.6f,%.6f,,\n", nodes, ranks, o->sizes[k], t,
                algbw, algbw * o->coll->busbw_factor(ranks));
    }
}

static int write_files(struct scale *s, const char *slow, int status)
{
  const struct scale_opts *o = &s->o;
  char path[PATH_MAX];
  FILE *csv, *js, *pairs;

  snprintf(path, sizeof(path), "%s/scale.csv", o->out);
  csv = fopen(path, "w");
  snprintf(path, sizeof(path), "%s/scale.json", o->out);
  js = fopen(path, "w");
  snprintf(path, sizeof(path), "%s/pairs.csv", o->out);
  pairs = fopen(path, "w");
  if (!csv || !js || !pairs) {
    fprintf(stderr, "weft-bench scale: cannot write in %s: %s\n", o->out, strerror(errno));
    if (csv) fclose(csv);
    if (js) fclose(js);
    if (pairs) fclose(pairs);
    return BENCH_EXIT_RUNTIME;
  }
  write_csv(s, csv);
  fprintf(js, "{\n  \"version\": 1,\n  \"tool\": \"weft-bench scale\",\n  \"collective\": ");
  weftx_json_string(js, o->coll->name);
  fprintf(js, ",\n  \"hostfile\": ");
  weftx_json_string(js, o->hostfile);
  fprintf(js, ",\n  \"launcher\": ");
  weftx_json_string(js, s->launcher);
  fprintf(js, ",\n  \"ppn\": %ld,\n  \"iters\": %ld,\n  \"sizes\": [", o->ppn, o->iters);
  for (int k = 0; k < o->nsizes; k++)
    fprintf(js, "%s%zu", k ? ", " : "", o->sizes[k]);
  fprintf(js, "],\n  \"runs\": [\n");
  for (int i = 0; i < s->njobs; i++) {
    const struct scale_job *j = &s->jobs[i];

    fprintf(js, "    { \"nodes\": %d, \"ranks\": %d, \"exit_status\": %d, \"seconds\": %.2f, "
            "\"alpha_us\": ", j->nodes, j->ranks, j->status, j->seconds);
    bench_json_num(js, j->alpha_us);
    fprintf(js, ", \"bandwidth_gbs\": ");
    bench_json_num(js, j->beta_us_per_byte > 0 ? 1e-3 / j->beta_us_per_byte : NAN);
    fprintf(js, ",\n      \"results\": [");
    for (int k = 0; k < j->npts; k++) {
      const struct scale_point *p = &j->pts[k];
      double e = efficiency(s, j, p->bytes);

      fprintf(js, "%s\n        { \"size\": %zu, \"time_us\": ", k ? "," : "", p->bytes);
      bench_json_num(js, p->time_us);
      fprintf(js, ", \"algbw\": ");
      bench_json_num(js, p->algbw);
      fprintf(js, ", \"busbw\": ");
      bench_json_num(js, p->busbw);
      fprintf(js, ", \"efficiency\": ");
      bench_json_num(js, e);
      fprintf(js, ", \"wrong\": %lld }", p->wrong);
    }
    fprintf(js, " ] }%s\n", i + 1 < s->njobs ? "," : "");
  }
  fprintf(js, "  ],\n  \"predictions\": [");
  for (size_t m = 0; m < sizeof(predict_mult) / sizeof(predict_mult[0]); m++) {
    int nodes = o->counts[o->ncounts - 1] * predict_mult[m], ranks = nodes * (int)o->ppn;

    for (int k = 0; k < o->nsizes; k++) {
      double t = scale_predict(s->jobs, s->njobs, ranks, o->coll->busbw_factor, o->sizes[k]);
      double algbw = (double)o->sizes[k] / t / 1e3;

      if (isnan(t))
        continue;
      fprintf(js, "%s\n    { \"nodes\": %d, \"ranks\": %d, \"size\": %zu, \"time_us\": %.3f, "
              "\"busbw\": %.6f }", m || k ? "," : "", nodes, ranks, o->sizes[k], t,
              algbw * o->coll->busbw_factor(ranks));
    }
  }
  fprintf(js, " ],\n  \"pairs\": [");
  fprintf(pairs, "host_a,host_b,size,time_us,busbw,exit_status\n");
  for (int i = 0; i < s->npairs; i++) {
    const struct scale_job *j = &s->pairs[i];
    const struct scale_point *p = scale_point_at(j, o->sizes[o->nsizes - 1]);

    fprintf(pairs, "%s,%s,%zu,%.3f,%.6f,%d\n", j->host_a, j->host_b, o->sizes[o->nsizes - 1],
            p ? p->time_us : -1, p ? p->busbw : -1, j->status);
    fprintf(js, "%s\n    { \"a\": ", i ? "," : "");
    weftx_json_string(js, j->host_a);
    fprintf(js, ", \"b\": ");
    weftx_json_string(js, j->host_b);
    fprintf(js, ", \"busbw\": ");
    bench_json_num(js, p && j->status == 0 ? p->busbw : NAN);
    fprintf(js, ", \"exit_status\": %d }", j->status);
  }
  fprintf(js, " ],\n  \"slowest\": ");
  if (strcmp(slow, "none"))
    weftx_json_string(js, slow);
  else
    fputs("null", js);
  fprintf(js, ",\n  \"status\": ");
  weftx_json_string(js, status == BENCH_EXIT_OK ? "OK" : "FAILED");
  fprintf(js, ",\n  \"exit_status\": %d\n}\n", status);
  if ((fclose(csv) | fclose(js) | fclose(pairs)) != 0) {
    fprintf(stderr, "weft-bench scale: cannot write in %s\n", o->out);
    return BENCH_EXIT_RUNTIME;
  }
  return 0;
}

/* scale.gp, and the plot when gnuplot is installed. */
static void write_plot(const struct scale *s)
{
  const struct scale_opts *o = &s->o;
  char path[PATH_MAX], png[PATH_MAX], svg[PATH_MAX], log[PATH_MAX];
  char *argv[] = { "/bin/sh", "-c", "cd \"$1\" && exec gnuplot scale.gp", "sh",
                   (char *)o->out, NULL };
  struct scale_job job;
  FILE *f;
  int measured = 0, started;

  snprintf(path, sizeof(path), "%s/scale.gp", o->out);
  f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "weft-bench scale: cannot write %s: %s\n", path, strerror(errno));
    return;
  }
  fprintf(f, "# weft-bench scale: busbw against the node count, one line per size (measured),\n"
          "# points for the prediction. Run in this directory: gnuplot scale.gp\n"
          "set datafile separator ','\n"
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 900,600; set output 'scale.png'\n"
          "} else { if (strstrt(GPVAL_TERMINALS, ' png ') > 0) {\n"
          "  set terminal png size 900,600; set output 'scale.png'\n"
          "} else {\n  set terminal svg size 900,600; set output 'scale.svg'\n} }\n"
          "set title 'weft-bench scale: %s, %ld rank%s per node'\n"
          "set xlabel 'nodes'; set ylabel 'busbw (GB/s)'\n"
          "set logscale x 2; set grid; set key top right\n"
          "sizes = '", o->coll->name, o->ppn, o->ppn == 1 ? "" : "s");
  for (int k = 0; k < o->nsizes; k++)
    fprintf(f, "%s%zu", k ? " " : "", o->sizes[k]);
  fprintf(f, "'\n"
          "plot for [i=1:words(sizes)] 'scale.csv' using 2:((strcol(1) eq 'measured' && "
          "strcol(4) eq word(sizes, i)) ? $7 : 1/0) with linespoints linecolor i "
          "title word(sizes, i).' B', \\\n"
          "     for [i=1:words(sizes)] 'scale.csv' using 2:((strcol(1) eq 'predicted' && "
          "strcol(4) eq word(sizes, i)) ? $7 : 1/0) with points pointtype 6 linecolor i "
          "title word(sizes, i).' B (predicted)'\n");
  if (fclose(f) != 0)
    return;
  for (int i = 0; i < s->njobs; i++)
    measured += s->jobs[i].status == 0 && s->jobs[i].npts > 0;
  if (!measured) {
    printf("# plot: nothing measured, no plot (%s is written)\n", path);
    return;
  }
  snprintf(png, sizeof(png), "%s/scale.png", o->out);
  snprintf(svg, sizeof(svg), "%s/scale.svg", o->out);
  snprintf(log, sizeof(log), "%s/gnuplot.log", o->out);
  remove(png);
  remove(svg);
  /* Like a job: in its own process group, ended at the deadline (124). */
  memset(&job, 0, sizeof(job));
  job.status = -1;
  started = scale_run_job(argv, "/dev/null", log, PLOT_TIMEOUT_S, &job) == 0;
  if (access(png, R_OK) == 0 || access(svg, R_OK) == 0)
    printf("# plot: %s\n", access(png, R_OK) == 0 ? png : svg);
  else if (started && job.status == 127)
    printf("# plot: gnuplot is not installed; %s is ready for it (gnuplot scale.gp)\n", path);
  else if (job.status == 124)
    printf("# plot: gnuplot made no plot of %s within %d s (see %s)\n", path, PLOT_TIMEOUT_S,
           log);
  else
    printf("# plot: gnuplot failed on %s (exit %d; see %s)\n", path, job.status, log);
}

int bench_scale_main(int argc, char **argv)
{
  struct scale *s = calloc(1, sizeof(*s));
  char sizes[1024], runs[PATH_MAX], slow[300] = "none";
  int rc, status = BENCH_EXIT_OK, maxn;

  if (!s) {
    fprintf(stderr, "weft-bench scale: out of memory\n");
    return BENCH_EXIT_RUNTIME;
  }
  rc = scale_parse(argc, argv, &s->o);
  if (rc == 0)
    rc = load_hosts(s);
  if (rc == 0 && self_path(s->self, sizeof(s->self)) != 0) {
    fprintf(stderr, "weft-bench scale: cannot find this program's path (/proc/self/exe)\n");
    rc = BENCH_EXIT_RUNTIME;
  }
  if (rc == 0)
    rc = find_launcher(s);
  snprintf(runs, sizeof(runs), "%s/runs", s->o.out);
  if (rc == 0 && ((mkdir(s->o.out, 0755) != 0 && errno != EEXIST) ||
                  (mkdir(runs, 0755) != 0 && errno != EEXIST))) {
    fprintf(stderr, "weft-bench scale: cannot make %s: %s\n", runs, strerror(errno));
    rc = BENCH_EXIT_RUNTIME;
  }
  if (rc) {
    weftx_hostlist_destroy(s->hosts);
    free(s);
    return rc < 0 ? BENCH_EXIT_OK : rc;
  }
  s->tty = isatty(STDERR_FILENO);
  maxn = s->o.counts[s->o.ncounts - 1];
  s->nsteps = s->o.ncounts + (s->o.pairs && maxn >= 2 ? (maxn == 2 ? 1 : maxn) : 0);
  size_list(&s->o, sizes, sizeof(sizes));
  printf("# weft-bench scale: %s, %ld rank%s per node, nodes", s->o.coll->name, s->o.ppn,
         s->o.ppn == 1 ? "" : "s");
  for (int i = 0; i < s->o.ncounts; i++)
    printf("%s%d", i ? "," : " ", s->o.counts[i]);
  printf(", sizes %s%s\n# hosts from %s (%d), launcher %s\n", sizes,
         s->vcluster_sizes ? " (a virtual cluster's default; --sizes for others)" : "",
         s->o.hostfile, weftx_hostlist_count(s->hosts), s->launcher);
  {
    struct bench_expect e;

    if (bench_expect_lookup(&e) == 0)
      printf("# machine %s: GPU-data NICs %.0f Gbps per VM, ring busbw ceiling %.1f GB/s; %s\n",
             e.machine, e.nic_gbps, e.ceiling, e.note);
  }
  for (int i = 0; i < s->o.ncounts; i++) {
    int idx[SCALE_MAX_COUNTS * 64], k = s->o.counts[i];
    char label[128], nm[64];
    struct scale_job *j = &s->jobs[s->njobs++];

    for (int h = 0; h < k && h < (int)(sizeof(idx) / sizeof(idx[0])); h++)
      idx[h] = h;
    j->nodes = k;
    snprintf(label, sizeof(label), "%s on %d node%s (%ld rank%s)", s->o.coll->name, k,
             k == 1 ? "" : "s", k * s->o.ppn, k * s->o.ppn == 1 ? "" : "s");
    snprintf(nm, sizeof(nm), "%s-%dnodes", s->o.coll->name, k);
    if ((rc = run_one(s, j, s->o.coll->name, sizes, idx, k, k * (int)s->o.ppn, nm, label)) != 0)
      break;
  }
  if (rc == 0 && s->o.pairs && maxn >= 2) {
    char big[32];
    long ppn = s->o.ppn;

    snprintf(big, sizeof(big), "%zu", s->o.sizes[s->o.nsizes - 1]);
    s->o.ppn = 1;
    for (int h = 0; h < (maxn == 2 ? 1 : maxn) && rc == 0; h++) {
      int idx[2] = { h, (h + 1) % maxn };
      struct scale_job *j = &s->pairs[s->npairs++];
      char label[600], nm[64], a[256], b[256];

      j->nodes = 2;
      j->host_a = weftx_hostlist_host(s->hosts, idx[0])->name;
      j->host_b = weftx_hostlist_host(s->hosts, idx[1])->name;
      snprintf(label, sizeof(label), "sendrecv %s <-> %s", host_name(s, idx[0], a, sizeof(a)),
               host_name(s, idx[1], b, sizeof(b)));
      snprintf(nm, sizeof(nm), "pair-%d-%d", idx[0], idx[1]);
      rc = run_one(s, j, "sendrecv", big, idx, 2, 2, nm, label);
    }
    s->o.ppn = ppn;
  }
  if (rc == 0) {
    for (int i = 0; i < s->njobs + s->npairs; i++) {
      const struct scale_job *j = i < s->njobs ? &s->jobs[i] : &s->pairs[i - s->njobs];

      for (int k = 0; k < j->npts; k++)
        if (j->pts[k].wrong > 0)
          status = BENCH_EXIT_WRONG;
      if (j->status != 0 && status == BENCH_EXIT_OK)
        status = BENCH_EXIT_RUNTIME;
    }
    print_table(s, slow, sizeof(slow));
    rc = write_files(s, slow, status);
    if (rc == 0)
      write_plot(s);
    printf("# files: %s/scale.csv %s/scale.json %s/pairs.csv %s/scale.gp, runs in %s\n", s->o.out,
           s->o.out, s->o.out, s->o.out, runs);
    printf("#\n# Scaling test concluded: %s\n", status == BENCH_EXIT_OK ? "OK" : "FAILED");
  }
  weftx_hostlist_destroy(s->hosts);
  free(s);
  return rc ? rc : status;
}
