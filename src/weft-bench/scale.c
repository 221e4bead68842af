/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench scale: how a collective scales over the hosts of a hostfile (or
 * of the Slurm allocation it runs in).
 * This file runs the measurements; the command line is in options.c, one
 * child job in scale-run.c, the analysis in scale-analysis.c and the output
 * in scale-output.c.
 *
 * For each node count K of --nodes, the first K hosts of the hostfile get a
 * hostfile of their own (slots = --ppn) and weft-bench runs on them through
 * weftrun (mpirun when weftrun is not there, which the output says), with
 * --sizes and --json; its table is parsed as it comes. Then, unless --no-pairs,
 * the pairwise collective runs between neighbouring hosts (h0-h1, h1-h2, ...,
 * back to h0), one rank each, at the largest size, to find a link or host
 * that stands out. All of it is done --repeat times, round after round, so
 * that a change of load falls on every measurement alike; each figure is the
 * median of its repeats. Every child job's output is kept in DIR/runs/.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weftx/proc.h>

#include "scale.h"

/* The launcher, its arguments, weft-bench and its options. */
#define MAX_ARGV (SCALE_MAX_LARGS + SCALE_MAX_BARGS + 16)

/* 1 when snprintf's result \p n fitted in \p len bytes. */
static int fits(int n, size_t len) { return n >= 0 && (size_t)n < len; }

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
    char build[PATH_MAX], beside[PATH_MAX];
    const char *look[] = {build, beside, "weftrun", NULL};

    if (!fits(snprintf(build, sizeof(build), "%s/../weftrun/weftrun", dir), sizeof(build)) ||
        !fits(snprintf(beside, sizeof(beside), "%s/weftrun", dir), sizeof(beside)))
      look[0] = look[1] = "weftrun";
    if (weftx_find_exe(look, s->launcher, sizeof(s->launcher))) {
      char real[PATH_MAX];

      if (realpath(s->launcher, real))
        snprintf(s->launcher, sizeof(s->launcher), "%s", real);
      s->launcher_is_weftrun = 1;
      return 0;
    }
    if (want) {
      fprintf(stderr,
              "weft-bench scale: weftrun is neither next to %s nor on PATH; install "
              "weft or use --launcher mpirun\n",
              s->self);
      return BENCH_EXIT_USAGE;
    }
    want = "mpirun";
    printf("# weftrun not found next to weft-bench or on PATH: using mpirun\n");
  }
  {
    const char *look[] = {want, NULL};

    if (!weftx_find_exe(look, s->launcher, sizeof(s->launcher))) {
      fprintf(stderr, "weft-bench scale: launcher '%s' is %s\n", want,
              strchr(want, '/') ? "not an executable file" : "not on PATH");
      return BENCH_EXIT_USAGE;
    }
  }
  s->launcher_is_weftrun = strstr(want, "weftrun") != NULL;
  return 0;
}

/* The hosts of the Slurm allocation this runs in (salloc -N4 weft-bench scale). */
static int slurm_hosts(struct scale *s, const char *nodes, char *why, size_t len)
{
  const char *job = getenv("SLURM_JOB_ID");
  int rc = weftx_hostlist_create(&s->hosts);

  if (rc == 0)
    rc = weftx_hosts_parse_slurm(s->hosts, nodes, NULL, why, len);
  snprintf(s->source, sizeof(s->source),
           "the Slurm allocation SLURM_JOB_ID=%s "
           "(SLURM_JOB_NODELIST=%s)",
           job ? job : "?", nodes);
  s->o.hostfile = s->source;
  return rc;
}

static int load_hosts(struct scale *s)
{
  const char *nodes = getenv("SLURM_JOB_NODELIST");
  const char *file = s->o.hostfile ? s->o.hostfile : getenv("WEFT_VCLUSTER_HOSTFILE");
  char why[512];
  int rc, n;

  if (!s->o.hostfile && nodes && *nodes) {
    rc = slurm_hosts(s, nodes, why, sizeof(why));
    file = s->source;
  } else {
    if (!file || !*file) {
      fprintf(stderr,
              "weft-bench scale: no hosts: give --hostfile FILE (Open MPI syntax), run it "
              "in a Slurm allocation (salloc -N4 weft-bench scale), or inside weft-vcluster run\n");
      return BENCH_EXIT_USAGE;
    }
    /* A virtual cluster is for rehearsing, and its links are veth pairs on
     * shared cores: sizes that take seconds, not minutes. */
    if (!s->o.hostfile && !s->o.sizes_given) {
      bench_parse_sizes("64K,1M,4M", s->o.sizes, &s->o.nsizes, NULL, 0);
      s->vcluster_sizes = 1;
    }
    s->o.hostfile = file;
    rc = weftx_hostlist_create(&s->hosts);
    if (rc == 0)
      rc = weftx_hostfile_load(s->hosts, file, why, sizeof(why));
  }
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
  if (s->o.pairs && s->o.counts[s->o.ncounts - 1] > SCALE_MAX_PAIRS) {
    fprintf(stderr,
            "weft-bench scale: the pairwise test runs one job per host, for %d hosts at "
            "most, and --nodes asks for %d; add --no-pairs\n",
            SCALE_MAX_PAIRS, s->o.counts[s->o.ncounts - 1]);
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
static int run_one(struct scale *s, struct scale_job *job, const struct bench_coll *coll,
                   const char *sizes, const int *idx, int n, int ranks, const char *name,
                   const char *label)
{
  char hostfile[PATH_MAX], out[PATH_MAX], err[PATH_MAX], json[PATH_MAX], np[16];
  char iters[24], warmup[24];
  char *argv[MAX_ARGV];
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
  argv[argc++] = (char *)coll->name;
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
  scale_job_finish(job, coll->busbw_factor);
  if (s->tty)
    fprintf(stderr, " %s\n", job->status == 0 ? "done" : "FAILED");
  printf("# [%d/%d] %s: %s, output in %s\n", s->step, s->nsteps, label,
         job->status == 0     ? "ok"
         : job->status == 124 ? "timed out"
                              : "FAILED",
         out);
  if (job->status != 0)
    printf("#   exit status %d; see %s\n", job->status, err);
  fflush(stdout);
  return 0;
}

/* " run 2 of 3" and "-r2" for repeat \p r of several, else "". */
static void repeat_names(const struct scale *s, int r, char *label, size_t llen, char *suffix,
                         size_t slen)
{
  label[0] = suffix[0] = '\0';
  if (s->o.repeat > 1) {
    snprintf(label, llen, ", run %d of %ld", r + 1, s->o.repeat);
    snprintf(suffix, slen, "-r%d", r + 1);
  }
}

/* One job per node count of --nodes, on the first hosts (repeat \p r). */
static int run_counts(struct scale *s, const char *sizes, int r)
{
  char rl[64], rs[16];
  int rc = 0;

  repeat_names(s, r, rl, sizeof(rl), rs, sizeof(rs));
  s->njobs = s->o.ncounts;
  for (int i = 0; i < s->o.ncounts && rc == 0; i++) {
    int k = s->o.counts[i], *idx = calloc((size_t)k, sizeof(int));
    char label[160], nm[64];
    struct scale_job *j = &s->jobs[i];

    if (!idx) {
      fprintf(stderr, "weft-bench scale: out of memory\n");
      return BENCH_EXIT_RUNTIME;
    }
    for (int h = 0; h < k; h++)
      idx[h] = h;
    j->nodes = k;
    snprintf(label, sizeof(label), "%s on %d node%s (%ld rank%s)%s", s->o.coll->name, k,
             k == 1 ? "" : "s", k * s->o.ppn, k * s->o.ppn == 1 ? "" : "s", rl);
    snprintf(nm, sizeof(nm), "%s-%dnodes%s", s->o.coll->name, k, rs);
    rc = run_one(s, j, s->o.coll, sizes, idx, k, k * (int)s->o.ppn, nm, label);
    free(idx);
  }
  return rc;
}

/* The pairwise collective between neighbouring hosts, one rank each, at the
 * largest size: h0-h1, h1-h2, ..., and back to h0 (one pair for 2 hosts). */
static int run_pairs(struct scale *s, int maxn, int r)
{
  const struct bench_coll *pw = bench_coll_pairwise();
  char big[32], rl[64], rs[16];
  long ppn = s->o.ppn;
  int rc = 0;

  repeat_names(s, r, rl, sizeof(rl), rs, sizeof(rs));
  snprintf(big, sizeof(big), "%zu", s->o.sizes[s->o.nsizes - 1]);
  s->o.ppn = 1;
  s->npairs = maxn == 2 ? 1 : maxn;
  for (int h = 0; h < s->npairs && rc == 0; h++) {
    int idx[2] = {h, (h + 1) % maxn};
    struct scale_job *j = &s->pairs[h];
    char label[640], nm[64], a[256], b[256];

    j->nodes = 2;
    j->host_a = weftx_hostlist_host(s->hosts, idx[0])->name;
    j->host_b = weftx_hostlist_host(s->hosts, idx[1])->name;
    snprintf(label, sizeof(label), "%s %s <-> %s%s", pw->name, host_name(s, idx[0], a, sizeof(a)),
             host_name(s, idx[1], b, sizeof(b)), rl);
    snprintf(nm, sizeof(nm), "pair-%d-%d%s", idx[0], idx[1], rs);
    rc = run_one(s, j, pw, big, idx, 2, 2, nm, label);
  }
  s->o.ppn = ppn;
  return rc;
}

static void print_header(const struct scale *s, const char *sizes)
{
  struct bench_expect e;

  printf("# weft-bench scale: %s, %ld rank%s per node, nodes", s->o.coll->name, s->o.ppn,
         s->o.ppn == 1 ? "" : "s");
  for (int i = 0; i < s->o.ncounts; i++)
    printf("%s%d", i ? "," : " ", s->o.counts[i]);
  printf(", sizes %s%s, each measured %ld time%s\n# hosts from %s (%d), launcher %s\n", sizes,
         s->vcluster_sizes ? " (a virtual cluster's default; --sizes for others)" : "", s->o.repeat,
         s->o.repeat == 1 ? "" : "s", s->o.hostfile, weftx_hostlist_count(s->hosts), s->launcher);
  if (bench_expect_lookup(&e) == 0)
    printf("# machine %s: GPU-data NICs %.0f Gbps per VM, ring busbw ceiling %.1f GB/s; %s\n",
           e.machine, e.nic_gbps, e.ceiling, e.note);
}

int bench_scale_main(int argc, char **argv)
{
  struct scale *s = calloc(1, sizeof(*s));
  char sizes[1024], runs[PATH_MAX];
  int rc, status = BENCH_EXIT_OK, maxn;

  if (!s) {
    fprintf(stderr, "weft-bench scale: out of memory\n");
    return BENCH_EXIT_RUNTIME;
  }
  rc = scale_parse(argc, argv, &s->o);
  if (rc == 0)
    rc = load_hosts(s);
  if (rc == 0 && weftx_self_exe(s->self, sizeof(s->self)) != 0) {
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
  s->nsteps =
    (int)s->o.repeat * (s->o.ncounts + (s->o.pairs && maxn >= 2 ? (maxn == 2 ? 1 : maxn) : 0));
  size_list(&s->o, sizes, sizeof(sizes));
  print_header(s, sizes);
  for (int r = 0; rc == 0 && r < s->o.repeat; r++) {
    rc = run_counts(s, sizes, r);
    if (rc == 0 && s->o.pairs && maxn >= 2)
      rc = run_pairs(s, maxn, r);
  }
  if (rc == 0) {
    status = scale_status(s->jobs, s->njobs, s->pairs, s->npairs);
    scale_print(s, stdout);
    rc = scale_write_files(s, status);
    if (rc == 0)
      scale_write_plot(s);
    printf("# files: %s/scale.csv %s/scale.json %s/pairs.csv %s/scale.gp, runs in %s\n", s->o.out,
           s->o.out, s->o.out, s->o.out, runs);
    if (status == BENCH_EXIT_OK && scale_shared(s))
      printf("#\n# Scaling test concluded: SHARED CORES (every run passed, but ranks shared one "
             "machine's cores: the efficiencies measure that sharing, not scaling)\n");
    else
      printf("#\n# Scaling test concluded: %s\n", status == BENCH_EXIT_OK ? "OK" : "FAILED");
  }
  weftx_hostlist_destroy(s->hosts);
  free(s);
  return rc ? rc : status;
}
