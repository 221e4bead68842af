/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's option table (Open MPI's mpirun dialect plus weft's additions)
 * and the handler that fills a wr_opts from it. The same table gives --help
 * and the man page's OPTIONS section (--help-man).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weftrun.h"

enum {
  O_NP = 1, O_PERNODE, O_HOST, O_HOSTFILE, O_MAPBY, O_BINDTO, O_RANKBY, O_OVERSUB,
  O_GPN, O_TOPOLOGY, O_GPUVIS, O_NCCL, O_X, O_MCA,
  O_REPORT, O_DRYRUN, O_CHECK, O_JSON, O_TAG, O_TIMESTAMP, O_OUTFILE,
  O_TIMEOUT, O_HOSTTIMEOUT, O_STACKS, O_GRACE, O_ROOT, O_VERBOSE, O_VERSION, O_HELP, O_HELPMAN, O_HELPMANEXIT,
  O_PERNODE1, O_PASS0, O_PASS1, O_ENGINE, O_HELPCOMP, O_MONITOR, O_MONITOR_OUT, O_MONITOR_PROM,
};

#define S_PLACE "Ranks and hosts"
#define S_GPU "GPUs and topology"
#define S_ENV "Environment"
#define S_REPORT "Reports"
#define S_OUT "Output"
#define S_RUN "Running"
#define S_WATCH "Watching the job"
#define S_OMPI "Passed to Open MPI unchanged"

const weft_opt wr_options[] = {
  { O_NP, "np|n|c", WEFT_OPT_ARG, "N", S_PLACE,
    "Start N ranks (default: one per slot of every host).", 0 },
  { O_PERNODE, "N|npernode", WEFT_OPT_ARG, "K", S_PLACE,
    "Start K ranks on every host.", 0 },
  { O_PERNODE1, "pernode", WEFT_OPT_FLAG, NULL, S_PLACE,
    "One rank on every host (-N 1).", 0 },
  { O_HOST, "H|host", WEFT_OPT_ARG, "HOST[:SLOTS],...", S_PLACE,
    "Run on these hosts; may be repeated. Without :SLOTS a host's slots are its GPUs (or cores).", 0 },
  { O_HOSTFILE, "hostfile|machinefile", WEFT_OPT_ARG, "FILE", S_PLACE,
    "Read hosts from FILE (Open MPI grammar: 'host slots=N max_slots=M', '#' comments).", 0 },
  { O_MAPBY, "map-by", WEFT_OPT_ARG, "POLICY", S_PLACE,
    "gpu (default with GPUs), core, numa, package, slot or ppr:N:OBJ, with :PE=n.", 0 },
  { O_BINDTO, "bind-to", WEFT_OPT_ARG, "WHAT", S_PLACE,
    "gpu-local (default with --map-by gpu), core, numa, package or none.", 0 },
  { O_RANKBY, "rank-by", WEFT_OPT_ARG, "slot|node", S_PLACE,
    "Number ranks host by host (slot, default) or round-robin over hosts (node).", 0 },
  { O_OVERSUB, "oversubscribe", WEFT_OPT_FLAG, NULL, S_PLACE,
    "Allow more ranks on a host than it has slots (they then yield their core while waiting).", 0 },
  { O_GPN, "gpus-per-node", WEFT_OPT_ARG, "N", S_GPU,
    "Trust that every host has N GPUs instead of probing.", 0 },
  { O_TOPOLOGY, "topology", WEFT_OPT_ARG, "FILE|HOST=FILE", S_GPU,
    "Use this hwloc XML file instead of probing (all hosts, or one host); may be repeated.", 0 },
  { O_GPUVIS, "gpu-visibility", WEFT_OPT_ARG, "all|own|none", S_GPU,
    "CUDA_VISIBLE_DEVICES: all GPUs with the rank's first (all), only its own (own), untouched (none).", 0 },
  { O_NCCL, "nccl-preset", WEFT_OPT_ARG, "auto|none|FAMILY", S_GPU,
    "NCCL environment for the machine family (auto: detected).", 0 },
  { O_X, "x", WEFT_OPT_ARG, "VAR[=VALUE]", S_ENV,
    "Export VAR (with this value) to every rank; never overwritten by weft.", 0 },
  { O_MCA, "mca", WEFT_OPT_ARG2, "KEY VALUE", S_ENV,
    "Set an Open MPI MCA parameter.", 0 },
  { O_REPORT, "report-bindings", WEFT_OPT_FLAG, NULL, S_REPORT,
    "Print one line per rank: host, rank, GPU, cores, NUMA nodes, NIC.", 0 },
  { O_DRYRUN, "dry-run", WEFT_OPT_FLAG, NULL, S_REPORT,
    "Print the whole plan (hosts, ranks, every variable each rank gets) and start nothing (weftrun(1), PLAN).", 0 },
  { O_CHECK, "check", WEFT_OPT_FLAG, NULL, S_REPORT,
    "Check every host in one short job through the engine and print a table (weftrun(1) "
    "CHECKS); start nothing else. Exit 0 all OK, 80 warnings, 81 failures.", 0 },
  { O_JSON, "json", WEFT_OPT_FLAG, NULL, S_REPORT,
    "With --dry-run, --report-bindings or --check: print the plan (or the check) as JSON on stdout "
    "(schemas: weftrun(1), PLAN and CHECKS).", 0 },
  { O_TAG, "tag-output", WEFT_OPT_FLAG, NULL, S_OUT,
    "Prefix every output line with the job and rank.", 0 },
  { O_TIMESTAMP, "timestamp-output", WEFT_OPT_FLAG, NULL, S_OUT,
    "Prefix every output line with the time.", 0 },
  { O_OUTFILE, "output-filename", WEFT_OPT_ARG, "DIR", S_OUT,
    "Write each rank's output under DIR instead of the terminal.", 0 },
  { O_TIMEOUT, "timeout", WEFT_OPT_ARG, "SECONDS", S_RUN,
    "End the job after SECONDS (or $MPIEXEC_TIMEOUT); weftrun then exits 124. With --check: "
    "the whole check's deadline (default 60).", 0 },
  { O_HOSTTIMEOUT, "host-timeout", WEFT_OPT_ARG, "SECONDS", S_RUN,
    "A host whose agents say nothing for SECONDS (default 5) is lost: the job ends with 75.", 0 },
  { O_STACKS, "get-stack-traces", WEFT_OPT_FLAG, NULL, S_RUN,
    "When --timeout, a lost host or a weft deadline ends the job: print the stack of each rank "
    "still running (eu-stack or gdb).", 0 },
  { O_GRACE, "preempt-grace", WEFT_OPT_ARG, "SECONDS", S_RUN,
    "On a Google Cloud preemption notice, give the ranks SECONDS (0-3600, default 5) between "
    "SIGTERM and SIGKILL.", 0 },
  { O_ENGINE, "engine", WEFT_OPT_ARG, "auto|mpirun|srun", S_RUN,
    "Start the ranks with Open MPI's mpirun, or with Slurm's srun --mpi=pmix inside an "
    "allocation (auto: mpirun; srun in an allocation without mpirun).", 0 },
  { O_MONITOR, "monitor", WEFT_OPT_OPTARG, "[=SECONDS]", S_WATCH,
    "Every SECONDS (default " WR_MONITOR_DEFAULT_S_TEXT ", from 0.1) each rank's agent samples "
    "its rank (CPU, memory, threads, NIC rates) and sends it to weftrun: a live status line on "
    "a terminal, a line naming a rank whose CPU use stays well below its peers' (a straggler), "
    "and the summary's figures.", 0 },
  { O_MONITOR_OUT, "monitor-out", WEFT_OPT_ARG, "DIR", S_WATCH,
    "With --monitor (implied): write the timeline DIR/timeline.jsonl, one JSON record per rank "
    "per sample (weftrun(1) MONITORING gives the fields); DIR is made if needed, an existing "
    "timeline is never overwritten.", 0 },
  { O_MONITOR_PROM, "monitor-prom", WEFT_OPT_ARG, "DIR", S_WATCH,
    "With --monitor (implied): on every host, each rank's agent keeps DIR/weft-JOB-rank-R.prom "
    "in Prometheus's text format for node_exporter's textfile collector (its "
    "--collector.textfile.directory), replaced at each sample, removed when the rank ends.", 0 },
  { O_ROOT, "allow-run-as-root", WEFT_OPT_FLAG, NULL, S_RUN,
    "Allow running as root.", 0 },
  { O_VERBOSE, "verbose|v", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print the engine's command and what weftrun decides on stderr.", 0 },
  { O_VERSION, "version|V", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print weftrun's and Open MPI's versions.", 0 },
  { O_HELP, "help|h", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print this help; --help placement, environment or exit-status: more on one topic.", 0 },
  { O_HELPMAN, "help-man", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print the OPTIONS section of the man page (roff).", WEFT_OPT_HIDDEN },
  { O_HELPMANEXIT, "help-man-exit-status", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print the EXIT STATUS section of the man page (roff).", WEFT_OPT_HIDDEN },
  { O_HELPCOMP, "help-completion", WEFT_OPT_FLAG, NULL, S_RUN,
    "Print the options for shell completion (contrib/completion) and exit.", WEFT_OPT_HIDDEN },
  /* Open MPI options weft leaves to mpirun: the explicit pass-through list. */
  { O_PASS0, "display-map|display-allocation|display-devel-map|display-topo|merge-stderr-to-stdout|"
    "nolocal|use-hwthread-cpus|leave-session-attached|debug-daemons|noprefix|quiet|q|"
    "report-state-on-timeout|xml|enable-recovery|do-not-resolve",
    WEFT_OPT_FLAG, NULL, S_OMPI, "Open MPI flags passed to mpirun as they are.", WEFT_OPT_PASS },
  { O_PASS1, "wdir|wd|prefix|path|stdin|launch-agent|gmca|am|tune|max-restarts|"
    "report-pid|report-uri",
    WEFT_OPT_ARG, "ARG", S_OMPI, "Open MPI options with one argument, passed to mpirun.", WEFT_OPT_PASS },
  { 0, NULL, 0, NULL, NULL, NULL, 0 },
};

void
wr_opts_init(wr_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->np = -1;
  o->per_node = -1;
  o->gpus_per_node = -1;
  o->preempt_grace = -1;
}

static int
count(const char *spelled, const char *a, long min, long max, long *out, char *why, size_t len)
{
  if (weftx_parse_long(a, min, max, out)) {
    snprintf(why, len, "%s '%s': expected a whole number from %ld to %ld", spelled, a, min, max);
    return -1;
  }
  return 0;
}

static int
full(const char *spelled, int n, char *why, size_t len)
{
  if (n < WR_MAX_LIST)
    return 0;
  snprintf(why, len, "%s given more than %d times", spelled, WR_MAX_LIST);
  return -1;
}

static int
directory(const char *spelled, const char *a, const char **out, char *why, size_t len)
{
  if (!a[0]) {
    snprintf(why, len, "%s '': give a directory", spelled);
    return -1;
  }
  *out = a;
  return 0;
}

static int
one_of(const char *spelled, const char *a, const char *const *ok, char *why, size_t len)
{
  for (int i = 0; ok[i]; i++)
    if (!strcmp(a, ok[i]))
      return 0;
  char list[128] = "";
  size_t off = 0;
  for (int i = 0; ok[i] && off < sizeof(list); i++)
    off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", ok[i]);
  snprintf(why, len, "%s '%s': expected one of %s", spelled, a, list);
  return -1;
}

static int
handle(void *ud, const weft_opt *opt, const char *sp, const char *a1, const char *a2, char *why,
       size_t len)
{
  wr_opts *o = ud;
  static const char *const vis[] = { "all", "own", "none", NULL };
  static const char *const rankby[] = { "slot", "node", NULL };
  static const char *const engines[] = { "auto", "mpirun", "srun", NULL };
  switch (opt->id) {
  case O_NP: return count(sp, a1, 1, 1000000, &o->np, why, len);
  case O_PERNODE: return count(sp, a1, 1, 100000, &o->per_node, why, len);
  case O_PERNODE1: o->per_node = 1; return 0;
  case O_HOST:
    if (full(sp, o->nhost_args, why, len))
      return -1;
    o->host_args[o->nhost_args++] = a1;
    return 0;
  case O_HOSTFILE:
    if (o->hostfile) {
      snprintf(why, len, "%s given twice ('%s' and '%s'); give one hostfile", sp, o->hostfile, a1);
      return -1;
    }
    o->hostfile = a1;
    return 0;
  case O_MAPBY: o->map_by = a1; return 0;
  case O_BINDTO: o->bind_to = a1; return 0;
  case O_RANKBY: o->rank_by = a1; return one_of(sp, a1, rankby, why, len);
  case O_OVERSUB: o->oversubscribe = 1; return 0;
  case O_GPN: return count(sp, a1, 0, 1024, &o->gpus_per_node, why, len);
  case O_TOPOLOGY: {
    const char *eq = strchr(a1, '=');
    if (!eq) {
      o->topology = a1;
      return 0;
    }
    if (eq == a1 || !eq[1]) {
      snprintf(why, len, "%s '%s': write FILE or HOST=FILE", sp, a1);
      return -1;
    }
    if (full(sp, o->nhost_topology, why, len))
      return -1;
    /* the host part is split off in plan.c, which owns the copies */
    o->host_topology[o->nhost_topology].key = a1;
    o->host_topology[o->nhost_topology++].value = eq + 1;
    return 0;
  }
  case O_GPUVIS: o->gpu_visibility = a1; return one_of(sp, a1, vis, why, len);
  case O_NCCL: o->nccl_preset = a1; return 0;
  case O_X:
    if (full(sp, o->nxvars, why, len))
      return -1;
    if (a1[0] == '\0' || a1[0] == '=') {
      snprintf(why, len, "%s '%s': write VAR or VAR=VALUE", sp, a1);
      return -1;
    }
    o->xvars[o->nxvars++] = a1;
    return 0;
  case O_MCA:
    if (full(sp, o->nmca, why, len))
      return -1;
    o->mca[o->nmca].key = a1;
    o->mca[o->nmca++].value = a2;
    return 0;
  case O_REPORT: o->report_bindings = 1; return 0;
  case O_DRYRUN: o->dry_run = 1; return 0;
  case O_CHECK: o->check = 1; return 0;
  case O_JSON: o->json = 1; return 0;
  case O_TAG: o->tag_output = 1; return 0;
  case O_TIMESTAMP: o->timestamp_output = 1; return 0;
  case O_OUTFILE: o->output_filename = a1; return 0;
  case O_TIMEOUT: return count(sp, a1, 1, 100L * 24 * 3600, &o->timeout, why, len);
  case O_HOSTTIMEOUT: {
    long v;
    if (count(sp, a1, 1, 3600, &v, why, len))
      return -1;
    o->host_timeout = (double)v;
    return 0;
  }
  case O_STACKS: o->stack_traces = 1; return 0;
  case O_GRACE: return count(sp, a1, 0, 3600, &o->preempt_grace, why, len);
  case O_ENGINE: o->engine = a1; return one_of(sp, a1, engines, why, len);
  case O_MONITOR: {
    char *end;
    if (!a1) {
      o->monitor = WR_MONITOR_DEFAULT_S;
      return 0;
    }
    double v = strtod(a1, &end);
    if (end == a1 || *end || !(v >= 0.1 && v <= 3600)) {
      snprintf(why, len, "%s=%s: expected seconds from 0.1 to 3600 (--monitor alone: every %s s)",
               sp, a1, WR_MONITOR_DEFAULT_S_TEXT);
      return -1;
    }
    o->monitor = v;
    return 0;
  }
  case O_MONITOR_OUT: return directory(sp, a1, &o->monitor_out, why, len);
  case O_MONITOR_PROM: return directory(sp, a1, &o->monitor_prom, why, len);
  case O_ROOT: o->allow_run_as_root = 1; return 0;
  case O_VERBOSE: o->verbose = 1; return 0;
  case O_VERSION: o->version = 1; return 0;
  case O_HELP: o->help = 1; return 0;
  case O_HELPMAN: o->help_man = 1; return 0;
  case O_HELPMANEXIT: o->help_man_exit = 1; return 0;
  case O_HELPCOMP: weft_opt_completion(stdout, wr_options, "-"); exit(fflush(stdout) ? 1 : 0);
  case O_PASS0:
  case O_PASS1:
    /* -q is mpirun's and weftrun's: no launch line, no closing figures */
    if (!strcmp(sp, "-q") || !strcmp(sp, "--quiet") || !strcmp(sp, "-quiet"))
      o->quiet = 1;
    if (o->npass + 2 >= WR_MAX_LIST)
      return full(sp, WR_MAX_LIST, why, len);
    o->pass[o->npass++] = sp;
    if (a1)
      o->pass[o->npass++] = a1;
    return 0;
  }
  snprintf(why, len, "%s: not handled", sp);
  return -1;
}

int
wr_opts_parse(wr_opts *o, int argc, char **argv)
{
  char why[512];
  int first = argc;
  if (weft_opt_parse(wr_options, argc, argv, handle, o, &first, why, sizeof(why))) {
    fprintf(stderr, "weftrun: %s\n", why);
    return WR_EXIT_USAGE;
  }
  o->program = argv + first;
  o->nprogram = argc - first;
  /* Open MPI's environment form of --timeout */
  const char *t = getenv("MPIEXEC_TIMEOUT");
  if (!o->timeout && t && *t && weftx_parse_long(t, 1, 100L * 24 * 3600, &o->timeout)) {
    fprintf(stderr, "weftrun: MPIEXEC_TIMEOUT='%s': expected seconds from 1 to 8640000\n", t);
    return WR_EXIT_USAGE;
  }
  if (o->help || o->help_man || o->help_man_exit || o->version)
    return 0;
  if (o->preempt_grace > WEFTX_PREEMPT_GRACE_MAX_S)
    fprintf(stderr, "weftrun: warning: --preempt-grace %ld: a Spot VM powers off %d s after the "
            "preemption notice, so the ranks may be cut short; give %d or less\n",
            o->preempt_grace, WEFTX_PREEMPT_GRACE_MAX_S, WEFTX_PREEMPT_GRACE_MAX_S - 5);

  if ((o->monitor_out || o->monitor_prom) && !o->monitor)
    o->monitor = WR_MONITOR_DEFAULT_S;
  if (o->json && !o->dry_run && !o->report_bindings && !o->check) {
    fprintf(stderr, "weftrun: --json goes with --dry-run, --report-bindings or --check\n");
    return WR_EXIT_USAGE;
  }
  if (o->nprogram == 0 && !o->dry_run && !o->check) {
    fprintf(stderr, "weftrun: no program to run; write 'weftrun [options] PROGRAM [ARGS]' "
            "(weftrun --help lists the options)\n");
    return WR_EXIT_USAGE;
  }
  return 0;
}

void
wr_usage(FILE *out)
{
  fputs("Usage: weftrun [options] [--] PROGRAM [ARGS...]\n"
        "Run PROGRAM as an MPI/NCCL job through Open MPI's mpirun (or Slurm's srun), one\n"
        "rank per GPU by default, each bound to the cores, NUMA memory and NIC next to its GPU.\n",
        out);
  weft_opt_help(out, wr_options);
  weft_exit_help(out);
}
