/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's option table: every option of Open MPI 4.1's mpirun (the
 * command-line table of orte/mca/schizo/ompi/schizo_ompi.c and the MCA
 * options of opal/mca/base), each either understood (placement: weftrun's plan
 * models what mpirun does with it), passed to mpirun as it is (it changes
 * nothing weftrun plans), or refused in one line that says what to use
 * instead; and weft's additions. The same table gives --help and the man
 * page's OPTIONS section (--help-man).
 *
 * The command line is parsed as mpirun parses it: options, a program and its
 * arguments, and for MPMD more contexts after a ':' word. Each context keeps its
 * Open MPI options word for word, so that when mpirun places the ranks it is
 * given exactly what the user typed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "weftrun.h"

enum {
  /* placement: modelled, and handed to mpirun when it places the ranks */
  O_NP = 1,
  O_PERNODE,
  O_PERNODE1,
  O_NPERSOCKET,
  O_HOST,
  O_HOSTFILE,
  O_DEFHOSTFILE,
  O_MAPBY,
  O_RANKBY,
  O_BINDTO,
  O_OVERSUB,
  O_NOOVERSUB,
  O_NOLOCAL,
  O_HWT,
  O_CPR,
  O_CPUSET,
  O_PPR,
  O_BYNODE,
  O_BYSLOT,
  O_BYCORE,
  O_BINDCORE,
  O_BINDSOCKET,
  /* weft's */
  O_GPN,
  O_TOPOLOGY,
  O_GPUVIS,
  O_NCCL,
  O_DRYRUN,
  O_CHECK,
  O_JSON,
  O_GRACE,
  O_HOSTTIMEOUT,
  O_LAUNCHTIMEOUT,
  O_STACKS,
  O_VERBOSE,
  O_VERSION,
  O_HELP,
  O_HELPMAN,
  O_HELPMANEXIT,
  O_HELPCOMP,
  O_ENGINE,
  O_MONITOR,
  O_RESTARTS,
  O_RESTART_ON,
  O_MINHOSTS,
  O_MAXHOSTS,
  O_DISCOVERY,
  O_DISCOVERY_TIMEOUT,
  O_RESTART_WAIT,
  O_CKPT,
  O_MONITOR_OUT,
  O_MONITOR_PROM,
  /* Open MPI's with a meaning weftrun knows */
  O_X,
  O_MCA,
  O_GMCA,
  O_REPORT,
  O_DISPLAY,
  O_DISPLAY5,
  O_OUTPUT5,
  O_RTOS5,
  O_TAG,
  O_TIMESTAMP,
  O_OUTFILE,
  O_TIMEOUT,
  O_STATE_TIMEOUT,
  O_ROOT,
  O_WDIR,
  O_PATH,
  O_PASS0,
  O_PASS1,
  /* Open MPI's that weftrun refuses */
  O_REFUSE0,
  O_REFUSE1,
  O_REFUSE2,
};

#define S_PLACE "Ranks and hosts (Open MPI's)"
#define S_GPU "GPUs and topology (weft's)"
#define S_ENV "Environment"
#define S_REPORT "Reports"
#define S_OUT "Output"
#define S_RUN "Running"
#define S_WATCH "Watching the job"
#define S_RESTART "Restarts (weft's; weftrun(1) RESTARTS)"
#define S_OMPI "Other Open MPI options, passed to mpirun unchanged"
#define S_NO "Open MPI options weftrun refuses"

#define H WT_OPT_HIDDEN
const wt_opt wr_options[] = {
  {O_NP, "np|n|c", WT_OPT_ARG, "N", S_PLACE, "Start N ranks (default: one per slot of every host).",
   0},
  {O_PERNODE, "N|npernode", WT_OPT_ARG, "K", S_PLACE, "Start K ranks on every host.", 0},
  {O_PERNODE1, "pernode", WT_OPT_FLAG, NULL, S_PLACE, "One rank on every host.", 0},
  {O_NPERSOCKET, "npersocket", WT_OPT_ARG, "K", S_PLACE,
   "K ranks on every socket (deprecated by Open MPI: --map-by ppr:K:socket).", 0},
  {O_HOST, "H|host", WT_OPT_ARG, "HOST[:SLOTS],...", S_PLACE,
   "Run on these hosts; may be repeated. A host without :SLOTS has one slot (on GPU hosts "
   "under --map-by gpu: one per GPU).",
   0},
  {O_HOSTFILE, "hostfile|machinefile", WT_OPT_ARG, "FILE", S_PLACE,
   "Read hosts from FILE (Open MPI grammar: 'host slots=N max_slots=M', '#' comments).", 0},
  {O_DEFHOSTFILE, "default-hostfile", WT_OPT_ARG, "FILE", S_PLACE,
   "The hosts when neither -H nor --hostfile is given (as MCA orte_default_hostfile).", 0},
  {O_MAPBY, "map-by", WT_OPT_ARG,
   "POLICY{gpu slot hwthread core l1cache l2cache l3cache socket numa board node}", S_PLACE,
   "gpu (weft's default on GPU hosts) or Open MPI's slot, hwthread, core, l1cache, l2cache, "
   "l3cache, socket, numa, node, ppr:N:OBJ, with :PE=n, :OVERSUBSCRIBE, :NOOVERSUBSCRIBE.",
   0},
  {O_RANKBY, "rank-by", WT_OPT_ARG,
   "POLICY{slot node hwthread core l1cache l2cache l3cache socket numa}", S_PLACE,
   "Number ranks by slot, node, hwthread, core, l1cache, l2cache, l3cache, socket or numa "
   "(:fill).",
   0},
  {O_BINDTO, "bind-to", WT_OPT_ARG,
   "WHAT{gpu-local none hwthread core l1cache l2cache l3cache socket numa board cpu-list}", S_PLACE,
   "gpu-local (weft's default with --map-by gpu), none, hwthread, core, l1cache, l2cache, "
   "l3cache, socket (package), numa, board or cpu-list (:overload-allowed, :if-supported, "
   ":ordered).",
   0},
  {O_OVERSUB, "oversubscribe", WT_OPT_FLAG, NULL, S_PLACE,
   "Allow more ranks on a host than it has slots.", 0},
  {O_NOOVERSUB, "nooversubscribe", WT_OPT_FLAG, NULL, S_PLACE,
   "Never more ranks on a host than its slots (Open MPI's default).", 0},
  {O_NOLOCAL, "nolocal", WT_OPT_FLAG, NULL, S_PLACE, "No rank on the host mpirun runs on.", 0},
  {O_HWT, "use-hwthread-cpus", WT_OPT_FLAG, NULL, S_PLACE,
   "Count hardware threads as cpus (slots of hosts without a count, binding).", 0},
  {O_CPR, "cpus-per-proc|cpus-per-rank", WT_OPT_ARG, "N", S_PLACE,
   "N cpus per rank (deprecated by Open MPI: --map-by OBJ:PE=N).", 0},
  {O_CPUSET, "cpu-set|cpu-list", WT_OPT_ARG, "LIST", S_PLACE,
   "Bind every rank to these logical cpus (with --bind-to cpu-list:ordered, one each).", 0},
  {O_PPR, "ppr", WT_OPT_ARG, "N:OBJ", S_PLACE, "As --map-by ppr:N:OBJ (deprecated).", H},
  {O_BYNODE, "bynode", WT_OPT_FLAG, NULL, S_PLACE, "As --map-by node (deprecated).", H},
  {O_BYSLOT, "byslot", WT_OPT_FLAG, NULL, S_PLACE, "As --map-by slot (deprecated).", H},
  {O_BYCORE, "bycore", WT_OPT_FLAG, NULL, S_PLACE, "As --map-by core (deprecated).", H},
  {O_BINDCORE, "bind-to-core", WT_OPT_FLAG, NULL, S_PLACE, "As --bind-to core (deprecated).", H},
  {O_BINDSOCKET, "bind-to-socket", WT_OPT_FLAG, NULL, S_PLACE, "As --bind-to socket (deprecated).",
   H},
  {O_GPN, "gpus-per-node", WT_OPT_ARG, "N", S_GPU,
   "Trust that every host has N GPUs instead of probing.", 0},
  {O_TOPOLOGY, "topology", WT_OPT_ARG, "FILE|HOST=FILE", S_GPU,
   "Use this hwloc XML file instead of probing (all hosts, or one host); may be repeated.", 0},
  {O_GPUVIS, "gpu-visibility", WT_OPT_ARG, "all|own|none", S_GPU,
   "CUDA_VISIBLE_DEVICES: all GPUs with the rank's first (all), only its own (own), untouched "
   "(none).",
   0},
  {O_NCCL, "nccl-preset", WT_OPT_ARG,
   "auto|none|FAMILY{n1 a2 g2 a3-highgpu-small a3-highgpu-8g a3-edgegpu-8g a3-megagpu-8g "
   "a3-ultragpu-8g a4-highgpu-8g}",
   S_GPU, "NCCL environment for the machine family (auto: detected).", 0},
  {O_X, "x", WT_OPT_ARG, "VAR[=VALUE]", S_ENV,
   "Export VAR (with this value) to every rank; never overwritten by weft. VAR is a name of "
   "letters, digits and '_'; up to 4096 -x.",
   0},
  {O_MCA, "mca", WT_OPT_ARG2, "KEY VALUE", S_ENV, "Set an Open MPI MCA parameter.", 0},
  {O_GMCA, "gmca", WT_OPT_ARG2, "KEY VALUE", S_ENV,
   "Set an Open MPI MCA parameter for every program of an MPMD job.", 0},
  {O_REPORT, "report-bindings", WT_OPT_FLAG, NULL, S_REPORT,
   "Print Open MPI's line per rank ('MCW rank N bound to ...') and, for a rank with a GPU, "
   "weft's line: host, rank, GPU, cores, NUMA nodes, NIC.",
   0},
  {O_DISPLAY,
   "display-map|display-devel-map|display-diffable-map|display-allocation|"
   "display-devel-allocation|display-topo",
   WT_OPT_FLAG, NULL, S_REPORT,
   "Open MPI's map and allocation before the launch (under --map-by gpu: weft's plan).", 0},
  {O_DISPLAY5, "display", WT_OPT_ARG, "LIST", S_REPORT,
   "Open MPI 5's spelling of the reports: map, map-devel, allocation, bind (as "
   "--report-bindings), topo=LIST; under Open MPI 4.1 refused with its own words.",
   0},
  {O_DRYRUN, "dry-run", WT_OPT_FLAG, NULL, S_REPORT,
   "Print the whole plan (hosts, ranks, every variable each rank gets) and start nothing "
   "(weftrun(1), PLAN).",
   0},
  {O_CHECK, "check", WT_OPT_FLAG, NULL, S_REPORT,
   "Check every host in one short job through the engine and print a table (weftrun(1) "
   "CHECKS); start nothing else. Exit 0 all OK, 80 warnings, 81 failures.",
   0},
  {O_JSON, "json", WT_OPT_FLAG, NULL, S_REPORT,
   "With --dry-run, --report-bindings or --check: print the plan (or the check) as JSON on stdout "
   "(schemas: weftrun(1), PLAN and CHECKS).",
   0},
  {O_TAG, "tag-output", WT_OPT_FLAG, NULL, S_OUT,
   "Prefix every output line with the job and rank ([1,R]<stdout>:). Under mpirun each "
   "rank's output comes in whole lines, never glued to another rank's.",
   0},
  {O_TIMESTAMP, "timestamp-output", WT_OPT_FLAG, NULL, S_OUT,
   "Prefix every output line with the time.", 0},
  {O_OUTPUT5, "output", WT_OPT_ARG, "LIST", S_OUT,
   "Open MPI 5's spelling: tag (as --tag-output), timestamp (as --timestamp-output), "
   "merge-stderr-to-stdout; the same under Open MPI 4.1.",
   0},
  {O_OUTFILE, "output-filename", WT_OPT_ARG, "DIR", S_OUT,
   "Write each rank's output into DIR/1/rank.R/stdout and stderr too.", 0},
  {O_TIMEOUT, "timeout", WT_OPT_ARG, "SECONDS", S_RUN,
   "End the job after SECONDS (or $MPIEXEC_TIMEOUT); weftrun then exits 124. With --check: "
   "the whole check's deadline (default 60).",
   0},
  {O_HOSTTIMEOUT, "host-timeout", WT_OPT_ARG, "SECONDS", S_RUN,
   "A host whose agents say nothing for SECONDS (default 30) is lost: the job ends with 75. "
   "A host whose machine acknowledges nothing for 5 s (down, cut off) is lost sooner.",
   0},
  {O_LAUNCHTIMEOUT, "launch-timeout", WT_OPT_ARG, "SECONDS", S_RUN,
   "Ranks that have not started SECONDS (default 60) after the last one that did: their hosts "
   "are lost, the job ends with 75 (a daemon that cannot reach mpirun). 0: wait, as mpirun "
   "does.",
   0},
  {O_STACKS, "get-stack-traces", WT_OPT_FLAG, NULL, S_RUN,
   "When --timeout, a lost host or a weft deadline ends the job: print the stack of each rank "
   "still running (eu-stack or gdb).",
   0},
  {O_STATE_TIMEOUT, "report-state-on-timeout", WT_OPT_FLAG, NULL, S_RUN,
   "On --timeout, Open MPI's report of the job's state; mpirun then keeps the deadline.", 0},
  {O_GRACE, "preempt-grace", WT_OPT_ARG, "SECONDS", S_RUN,
   "On a Google Cloud preemption notice, give the ranks SECONDS (0-3600, default 5) between "
   "SIGTERM and SIGKILL.",
   0},
  {O_ENGINE, "engine", WT_OPT_ARG, "auto|mpirun|srun|hydra", S_RUN,
   "Start the ranks with Open MPI's mpirun, with Slurm's srun --mpi=pmix inside an "
   "allocation, or with MPICH's mpiexec.hydra (auto: hydra for a program built with an "
   "MPICH-family MPI, else mpirun; srun in an allocation without mpirun).",
   0},
  {O_MONITOR, "monitor", WT_OPT_OPTARG, "[=SECONDS]", S_WATCH,
   "Every SECONDS (default " WR_MONITOR_DEFAULT_S_TEXT ", from 0.1) each rank's agent samples "
   "its rank (CPU, memory, threads, NIC rates, its GPU's through NVML) and sends it to "
   "weftrun: a live status line on a terminal, a line naming a rank whose CPU or GPU use stays "
   "well below its peers' (a straggler), and the closing figures.",
   0},
  {O_MONITOR_OUT, "monitor-out", WT_OPT_ARG, "DIR", S_WATCH,
   "With --monitor (implied): write the timeline DIR/timeline.jsonl, one JSON record per rank "
   "per sample (weftrun(1) MONITORING gives the fields), and at the end its picture "
   "DIR/timeline.html; DIR is made if needed, an existing timeline is never overwritten.",
   0},
  {O_MONITOR_PROM, "monitor-prom", WT_OPT_ARG, "DIR", S_WATCH,
   "With --monitor (implied): on every host, DIR/weft-JOB-HOST.prom holds that host's ranks "
   "in Prometheus's text format for node_exporter's textfile collector (its "
   "--collector.textfile.directory), replaced at each sample, removed when the host's last "
   "rank ends (weftrun(1) MONITORING).",
   0},
  {O_RESTARTS, "restarts", WT_OPT_ARG, "N", S_RESTART,
   "Restart the whole job up to N times (0-1000) when a host is lost (75) or a VM preempted "
   "(79): what is left is ended, the lost hosts left out, the job planned again on the hosts "
   "there are and started again. Every rank gets WEFT_RESTART_COUNT, WEFT_MAX_RESTARTS, "
   "TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS and WEFT_CHECKPOINT_DIR (also "
   "without --restarts: count 0, max 0).",
   0},
  {O_RESTART_ON, "restart-on", WT_OPT_ARG, "host|any", S_RESTART,
   "What a restart follows: host (default) a lost host or a preemption; any: also a rank that "
   "failed (a bug in the program restarts too, up to N times).",
   0},
  {O_MINHOSTS, "min-hosts", WT_OPT_ARG, "M", S_RESTART,
   "Restart only on M hosts or more (default 1); with fewer, wait for more (--restart-wait).", 0},
  {O_MAXHOSTS, "max-hosts", WT_OPT_ARG, "M", S_RESTART,
   "Use at most M of the hosts there are (the first M of the list or of --host-discovery's).", 0},
  {O_DISCOVERY, "host-discovery", WT_OPT_ARG, "CMD", S_RESTART,
   "Run CMD (through /bin/sh) at the start and before every restart; it prints the hosts "
   "available now, one 'HOST slots=N' line each (the hostfile grammar), and they are the "
   "job's hosts instead of -H or --hostfile.",
   0},
  {O_DISCOVERY_TIMEOUT, "host-discovery-timeout", WT_OPT_ARG, "SECONDS", S_RESTART,
   "--host-discovery's CMD must end within SECONDS (1-3600, default 30).", 0},
  {O_RESTART_WAIT, "restart-wait", WT_OPT_ARG, "SECONDS", S_RESTART,
   "Before a restart, wait up to SECONDS (0-86400, default 600) for --min-hosts hosts; then "
   "give up with the last attempt's exit status.",
   0},
  {O_CKPT, "checkpoint-dir", WT_OPT_ARG, "DIR", S_RESTART,
   "WEFT_CHECKPOINT_DIR for every rank, where the program keeps what it resumes from (made "
   "here if missing). Default: a directory in the job directory, kept across restarts, removed "
   "when weftrun ends, and on this host only: with several hosts give a shared path.",
   0},
  {O_ROOT, "allow-run-as-root", WT_OPT_FLAG, NULL, S_RUN, "Allow running as root.", 0},
  {O_WDIR, "wdir|wd", WT_OPT_ARG, "DIR", S_RUN, "The ranks' working directory.", 0},
  {O_PATH, "path", WT_OPT_ARG, "DIRS", S_RUN,
   "Look for PROGRAM in DIRS before $PATH on every host.", 0},
  {O_VERBOSE, "verbose|v", WT_OPT_FLAG, NULL, S_RUN,
   "Print the engine's command and what weftrun decides on stderr (not passed to mpirun).", 0},
  {O_VERSION, "version|V", WT_OPT_FLAG, NULL, S_RUN, "Print weftrun's and Open MPI's versions.", 0},
  {O_HELP, "help|h", WT_OPT_FLAG, NULL, S_RUN,
   "Print this help; --help placement, environment or exit-status: more on one topic.", 0},
  {O_HELPMAN, "help-man", WT_OPT_FLAG, NULL, S_RUN,
   "Print the OPTIONS section of the man page (roff).", H},
  {O_HELPMANEXIT, "help-man-exit-status", WT_OPT_FLAG, NULL, S_RUN,
   "Print the EXIT STATUS section of the man page (roff).", H},
  {O_HELPCOMP, "help-completion", WT_OPT_FLAG, NULL, S_RUN,
   "Print the options for shell completion (contrib/completion) and exit.", H},
  /* Open MPI options that change nothing weftrun plans: handed to mpirun */
  {O_PASS0,
   "merge-stderr-to-stdout|quiet|q|xml|do-not-resolve|debug-devel|d|debug-daemons|"
   "debug-daemons-file|leave-session-attached|noprefix|show-progress|use-regexp|"
   "report-child-jobs-separately|disable-recovery|novm|fwd-mpirun-port|set-cwd-to-session-dir|"
   "enable-instant-on-support",
   WT_OPT_FLAG, NULL, S_OMPI, "Open MPI flags passed to mpirun as they are.", WT_OPT_PASS},
  {O_PASS1,
   "prefix|launch-agent|stdin|xml-file|report-pid|report-uri|ompi-server|cartofile|cf|"
   "preload-files|personality|report-events",
   WT_OPT_ARG, "ARG", S_OMPI, "Open MPI options with one argument, passed to mpirun.", WT_OPT_PASS},
  {O_RTOS5, "runtime-options", WT_OPT_ARG, "LIST", S_OMPI,
   "Open MPI 5's run-time options, passed to its mpirun (but do-not-launch: use --dry-run); "
   "refused under 4.1.",
   0},
  /* Open MPI options weftrun refuses (the message says what to use) */
  {O_REFUSE1, "rankfile|rf", WT_OPT_ARG, "FILE", S_NO,
   "use --map-by/--rank-by/--bind-to, or --cpu-set with --bind-to cpu-list:ordered", H},
  {O_REFUSE1, "app", WT_OPT_ARG, "FILE", S_NO,
   "write the programs on the command line, separated by ':' (-np 2 a : -np 2 b)", H},
  {O_REFUSE0, "preload-binary|s", WT_OPT_FLAG, NULL, S_NO,
   "copy the program to every host (or use a shared file system) before the launch", H},
  {O_REFUSE0, "index-argv-by-rank", WT_OPT_FLAG, NULL, S_NO,
   "read the rank from OMPI_COMM_WORLD_RANK (or RANK) in the program", H},
  {O_REFUSE1, "xterm", WT_OPT_ARG, "RANKS", S_NO,
   "use --output-filename DIR and follow the ranks' files", H},
  {O_REFUSE0, "tv|debug", WT_OPT_FLAG, NULL, S_NO,
   "attach the debugger to the program's process (its pid is in --report-pid's job)", H},
  {O_REFUSE1, "debugger", WT_OPT_ARG, "LIST", S_NO, "attach the debugger to the program's process",
   H},
  {O_REFUSE0, "output-proctable", WT_OPT_FLAG, NULL, S_NO,
   "the processes Open MPI starts are weft-rank's; find the programs as its children", H},
  {O_REFUSE0, "do-not-launch", WT_OPT_FLAG, NULL, S_NO,
   "use weftrun --dry-run, which prints the plan and starts nothing", H},
  {O_REFUSE1, "hnp", WT_OPT_ARG, "URI", S_NO,
   "start the job with weftrun alone (a persistent Open MPI VM is not supported)", H},
  {O_REFUSE0, "dvm", WT_OPT_FLAG, NULL, S_NO, "run mpirun --dvm directly", H},
  {O_REFUSE1, "sstore-load", WT_OPT_ARG, "SNAPSHOT", S_NO,
   "restart from your program's own checkpoint", H},
  {O_REFUSE1, "max-vm-size", WT_OPT_ARG, "N", S_NO, "name the hosts to use with -H or --hostfile",
   H},
  {O_REFUSE0, "crdebug", WT_OPT_FLAG, NULL, S_NO, "checkpoint/restart debugging is gone", H},
  {O_REFUSE0, "enable-recovery|continuous", WT_OPT_FLAG, NULL, S_NO,
   "weftrun ends the job when a rank fails; restart the job (exit codes 75 and 79 say when)", H},
  {O_REFUSE1, "max-restarts", WT_OPT_ARG, "N", S_NO,
   "weftrun does not restart single processes; --restarts N restarts the whole job after a lost "
   "host or a preemption (weftrun(1) RESTARTS)",
   H},
  {O_REFUSE1, "am|tune", WT_OPT_ARG, "FILE", S_NO,
   "give the file's parameters as --mca KEY VALUE and -x VAR on the command line", H},
  {0, NULL, 0, NULL, NULL, NULL, 0},
};
#undef H

void wr_opts_init(wr_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->np = -1;
  o->per_node = -1;
  o->gpus_per_node = -1;
  o->preempt_grace = -1;
  o->cpus_per_proc = -1;
  o->npersocket = -1;
  o->restart_on = WR_RESTART_ON_HOST;
  o->discovery_timeout = WR_DISCOVERY_TIMEOUT_S;
  o->restart_wait = WR_RESTART_WAIT_S;
  o->restart_wait_given = 0;
}

/* A word of the command line as a message quotes it ("'%.*s%s'"): its first 64
 * bytes, and "..." when it is longer, so that what is wrong still follows it
 * within the message's buffer. */
#define SHOWN_MAX 64
#define SHOWN(w)                                                                                   \
  (int)(strlen(w) > SHOWN_MAX ? SHOWN_MAX : strlen(w)), (w), (strlen(w) > SHOWN_MAX ? "..." : "")

/* The context being parsed, for the handler. */
typedef struct parse_ctx {
  wr_opts *o;
  wr_app *app;
  int index; /* of the app context */
} parse_ctx;

static int count(const char *spelled, const char *a, long min, long max, long *out, char *why,
                 size_t len)
{
  if (weftx_parse_long(a, min, max, out)) {
    snprintf(why, len, "%s '%.*s%s': expected a whole number from %ld to %ld", spelled, SHOWN(a),
             min, max);
    return -1;
  }
  return 0;
}

static int full(const char *spelled, int n, char *why, size_t len)
{
  if (n < WR_MAX_LIST)
    return 0;
  snprintf(why, len, "%s given more than %d times", spelled, WR_MAX_LIST);
  return -1;
}

static int directory(const char *spelled, const char *a, const char **out, char *why, size_t len)
{
  if (!a[0]) {
    snprintf(why, len, "%s '': give a directory", spelled);
    return -1;
  }
  *out = a;
  return 0;
}

static int one_of(const char *spelled, const char *a, const char *const *ok, char *why, size_t len)
{
  for (int i = 0; ok[i]; i++)
    if (!strcmp(a, ok[i]))
      return 0;
  char list[128] = "";
  size_t off = 0;
  for (int i = 0; ok[i] && off < sizeof(list); i++)
    off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", ok[i]);
  snprintf(why, len, "%s '%.*s%s': expected one of %s", spelled, SHOWN(a), list);
  return -1;
}

/* A word of the context's Open MPI options, kept as typed. */
static int keep(wr_app *a, const char *w, int place, char *why, size_t len)
{
  if (a->nwords + 1 >= WR_MAX_WORDS) {
    snprintf(why, len, "more than %d option words before '%.*s%s'", WR_MAX_WORDS,
             SHOWN(a->program ? a->program[0] : "the program"));
    return -1;
  }
  a->words[a->nwords] = w;
  a->place[a->nwords++] = place;
  return 0;
}

/* A copy of \p s that the options own (the parser's spelling is temporary; it goes in
 * wr_opts_free()); NULL, with a reason, when out of memory. */
static char *own(wr_opts *o, const char *s, char *why, size_t len)
{
  char *d = strdup(s), **v = d ? realloc(o->owned, (size_t)(o->nowned + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(d);
    snprintf(why, len, "out of memory");
    return NULL;
  }
  o->owned = v;
  o->owned[o->nowned++] = d;
  return d;
}

/* The option as mpirun is given it: its words, with --name=value split in two (mpirun
 * 4.1 does not read that form). The spelling is copied: the parser's is temporary. */
static int keep_option(parse_ctx *c, const char *sp, const char *a1, const char *a2, int place,
                       char *why, size_t len)
{
  char *s = own(c->o, sp, why, len);
  if (!s)
    return -1;
  return keep(c->app, s, place, why, len) || (a1 && keep(c->app, a1, place, why, len)) ||
         (a2 && keep(c->app, a2, place, why, len));
}

/* An MCA parameter the command line sets (as mpirun's own parser does). */
static int cmd_mca(wr_opts *o, const char *key, const char *value, const char *spelled, int app,
                   char *why, size_t len)
{
  if (o->ncmd_mca >= WR_MAX_LIST) {
    snprintf(why, len, "more than %d MCA parameters", WR_MAX_LIST);
    return -1;
  }
  o->cmd_mca[o->ncmd_mca].key = key;
  o->cmd_mca[o->ncmd_mca].value = value;
  o->cmd_mca_from[o->ncmd_mca] = spelled;
  o->cmd_mca_app[o->ncmd_mca++] = app;
  return 0;
}

/* Placement is the job's, as Open MPI reads it from the first program's options. */
static int first_only(parse_ctx *c, const char *sp, char *why, size_t len)
{
  if (c->index == 0)
    return 0;
  snprintf(why, len,
           "%s after ':' (program %d): put the placement options before the first "
           "program, where Open MPI reads them for the whole job",
           sp, c->index + 1);
  return -1;
}

static const char *mca_name_of(int id)
{
  switch (id) {
  case O_MAPBY: return "rmaps_base_mapping_policy";
  case O_RANKBY: return "rmaps_base_ranking_policy";
  case O_BINDTO: return "hwloc_base_binding_policy";
  case O_PERNODE: return "rmaps_ppr_n_pernode";
  case O_PERNODE1: return "rmaps_ppr_pernode";
  case O_NPERSOCKET: return "rmaps_ppr_n_persocket";
  case O_OVERSUB: return "rmaps_base_oversubscribe";
  case O_NOOVERSUB: return "rmaps_base_no_oversubscribe";
  case O_NOLOCAL: return "rmaps_base_no_schedule_local";
  case O_HWT: return "hwloc_base_use_hwthreads_as_cpus";
  case O_CPR: return "rmaps_base_cpus_per_rank";
  case O_CPUSET: return "hwloc_base_cpu_set";
  case O_PPR: return "rmaps_ppr_pattern";
  case O_BYNODE: return "rmaps_base_bynode";
  case O_BYSLOT: return "rmaps_base_byslot";
  case O_BYCORE: return "rmaps_base_bycore";
  case O_BINDCORE: return "hwloc_base_bind_to_core";
  case O_BINDSOCKET: return "hwloc_base_bind_to_socket";
  case O_DEFHOSTFILE: return "orte_default_hostfile";
  case O_REPORT: return "hwloc_base_report_bindings";
  default: return NULL;
  }
}

/* Open MPI 5's --display LIST: bind is --report-bindings; map, map-devel, allocation,
 * allocation-devel and topo=... are mpirun's reports, which weftrun leaves to it. */
static int display5(wr_opts *o, const char *sp, const char *list, char *why, size_t len)
{
  char buf[256], *save = NULL;
  if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf)) {
    snprintf(why, len, "%s: the list is too long", sp);
    return -1;
  }
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (!strcasecmp(w, "bind"))
      o->report_bindings = 1;
    else if (strcasecmp(w, "map") && strcasecmp(w, "map-devel") && strcasecmp(w, "allocation") &&
             strcasecmp(w, "allocation-devel") && strncasecmp(w, "topo=", 5)) {
      snprintf(why, len,
               "%s %s: Open MPI 5 displays map, map-devel, allocation, allocation-devel, bind "
               "or topo=LIST, not '%s'",
               sp, list, w);
      return -1;
    } else if (!o->mpirun_only && !(o->mpirun_only = own(o, sp, why, len)))
      return -1;
  }
  if (!o->v5_only && !(o->v5_only = own(o, sp, why, len)))
    return -1;
  return 0;
}

/* Open MPI 5's --output LIST: what weft-rank does for --tag-output, --timestamp-output
 * (the same under either mpirun); merge-stderr-to-stdout is mpirun's flag of that name. */
static int output5(wr_opts *o, const char *sp, const char *list, char *why, size_t len)
{
  char buf[256], *save = NULL;
  if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf)) {
    snprintf(why, len, "%s: the list is too long", sp);
    return -1;
  }
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (!strcasecmp(w, "tag"))
      o->tag_output = 1;
    else if (!strcasecmp(w, "timestamp"))
      o->timestamp_output = 1;
    else {
      snprintf(why, len,
               "%s %s: weftrun takes tag and timestamp (as --tag-output and "
               "--timestamp-output), not '%s'; for merge-stderr-to-stdout give "
               "--merge-stderr-to-stdout, for file=/dir= --output-filename DIR",
               sp, list, w);
      return -1;
    }
  }
  return 0;
}

static int handle(void *ud, const wt_opt *opt, const char *sp, const char *a1, const char *a2,
                  char *why, size_t len)
{
  parse_ctx *c = ud;
  wr_opts *o = c->o;
  wr_app *app = c->app;
  static const char *const vis[] = {"all", "own", "none", NULL};
  static const char *const engines[] = {"auto", "mpirun", "srun", "hydra", NULL};
  static const char *const restart_on[] = {"host", "any", NULL};
  const char *mca = mca_name_of(opt->id);
  int rc = 0;

  /* placement options: the job's (first program), an MCA parameter, kept for mpirun */
  if (opt->id >= O_NP && opt->id <= O_BINDSOCKET && opt->id != O_NP && opt->id != O_HOST &&
      opt->id != O_HOSTFILE && first_only(c, sp, why, len))
    return -1;
  if (mca) {
    char *spelled = own(o, sp, why, len);
    if (!spelled || cmd_mca(o, mca, a1 ? a1 : "1", spelled, c->index, why, len))
      return -1;
  }
  /* an option that asks Open MPI for a CPU placement (the last one given counts) */
  if ((opt->id == O_NPERSOCKET || opt->id == O_HWT || opt->id == O_CPR ||
       (opt->id >= O_CPUSET && opt->id <= O_BINDSOCKET)) &&
      !(o->cpu_placement = own(o, sp, why, len)))
    return -1;
  /* options only mpirun carries out, for --engine srun to refuse (wr_srun_check()) */
  if ((opt->id == O_NOOVERSUB || opt->id == O_NOLOCAL || opt->id == O_STATE_TIMEOUT ||
       opt->id == O_WDIR || opt->id == O_PATH) &&
      !o->mpirun_only && !(o->mpirun_only = own(o, sp, why, len)))
    return -1;
  switch (opt->id) {
  case O_NP:
    if (app->np > 0 && !o->np_twice && !(o->np_twice = own(o, sp, why, len)))
      return -1;
    rc = count(sp, a1, 1, 1000000, &app->np, why, len);
    if (!rc && c->index == 0)
      o->np = app->np;
    break;
  case O_PERNODE:
    rc = count(sp, a1, 1, 100000, &o->per_node, why, len);
    o->cl.npernode = (int)o->per_node;
    break;
  case O_PERNODE1:
    o->per_node = 1;
    o->cl.pernode = 1;
    break;
  case O_NPERSOCKET:
    rc = count(sp, a1, 1, 100000, &o->npersocket, why, len);
    o->cl.npersocket = (int)o->npersocket;
    break;
  case O_HOST:
    if ((rc = full(sp, app->nhost_args, why, len)))
      break;
    app->host_args[app->nhost_args++] = a1;
    if (c->index == 0) {
      o->host_args[o->nhost_args] = a1;
      o->nhost_args = app->nhost_args;
    }
    break;
  case O_HOSTFILE:
    if (app->hostfile) {
      snprintf(why, len, "%s given twice ('%.*s%s' and '%.*s%s'); Open MPI takes one hostfile", sp,
               SHOWN(app->hostfile), SHOWN(a1));
      return -1;
    }
    app->hostfile = a1;
    if (c->index == 0)
      o->hostfile = a1;
    break;
  case O_DEFHOSTFILE: o->default_hostfile = a1; break;
  case O_MAPBY: o->map_by = o->cl.map_by = a1; break;
  case O_RANKBY: o->rank_by = o->cl.rank_by = a1; break;
  case O_BINDTO: o->bind_to = o->cl.bind_to = a1; break;
  case O_OVERSUB: o->oversubscribe = o->cl.oversubscribe = 1; break;
  case O_NOOVERSUB: o->cl.nooversubscribe = 1; break;
  case O_NOLOCAL: o->cl.nolocal = 1; break;
  case O_HWT: break;
  case O_CPR:
    rc = count(sp, a1, 1, 1 << 15, &o->cpus_per_proc, why, len);
    o->cl.cpus_per_proc = (int)o->cpus_per_proc;
    break;
  case O_CPUSET:
  case O_PPR:
  case O_BYNODE:
  case O_BYSLOT:
  case O_BYCORE:
  case O_BINDCORE:
  case O_BINDSOCKET: break;
  case O_GPN: rc = count(sp, a1, 0, 1024, &o->gpus_per_node, why, len); return rc;
  case O_TOPOLOGY: {
    const char *eq = strchr(a1, '=');
    if (!eq) {
      o->topology = a1;
      return 0;
    }
    if (eq == a1 || !eq[1]) {
      snprintf(why, len, "%s '%.*s%s': write FILE or HOST=FILE", sp, SHOWN(a1));
      return -1;
    }
    if (full(sp, o->nhost_topology, why, len))
      return -1;
    /* the host part is split off in hosts/hosts.c */
    o->host_topology[o->nhost_topology].key = a1;
    o->host_topology[o->nhost_topology++].value = eq + 1;
    return 0;
  }
  case O_GPUVIS: o->gpu_visibility = a1; return one_of(sp, a1, vis, why, len);
  case O_NCCL:
    if (!a1[0]) {
      snprintf(why, len,
               "%s '': give auto, none, a family name such as a3-highgpu-8g, or a preset "
               "file's path",
               sp);
      return -1;
    }
    o->nccl_preset = a1;
    return 0;
  case O_DRYRUN: o->dry_run = 1; return 0;
  case O_CHECK: o->check = 1; return 0;
  case O_JSON: o->json = 1; return 0;
  case O_GRACE: return count(sp, a1, 0, 3600, &o->preempt_grace, why, len);
  case O_RESTARTS: return count(sp, a1, 0, 1000, &o->restarts, why, len);
  case O_RESTART_ON:
    if (one_of(sp, a1, restart_on, why, len))
      return -1;
    o->restart_on = strcmp(a1, "any") ? WR_RESTART_ON_HOST : WR_RESTART_ON_ANY;
    o->restart_on_given = 1;
    return 0;
  case O_MINHOSTS: return count(sp, a1, 1, WR_MAX_HOSTS, &o->min_hosts, why, len);
  case O_MAXHOSTS: return count(sp, a1, 1, WR_MAX_HOSTS, &o->max_hosts, why, len);
  case O_DISCOVERY:
    if (!a1[0]) {
      snprintf(why, len, "%s '': give a command that prints 'HOST slots=N' lines", sp);
      return -1;
    }
    o->host_discovery = a1;
    return 0;
  case O_DISCOVERY_TIMEOUT: return count(sp, a1, 1, 3600, &o->discovery_timeout, why, len);
  case O_RESTART_WAIT:
    o->restart_wait_given = 1;
    return count(sp, a1, 0, 86400, &o->restart_wait, why, len);
  case O_CKPT:
    if (!a1[0]) {
      snprintf(why, len, "%s '': give a directory (shared by the hosts when there are several)",
               sp);
      return -1;
    }
    o->checkpoint_dir = a1;
    return 0;
  case O_HOSTTIMEOUT: {
    long v;
    if (count(sp, a1, 1, 3600, &v, why, len))
      return -1;
    o->host_timeout = (double)v;
    return 0;
  }
  case O_LAUNCHTIMEOUT: {
    long v;
    if (count(sp, a1, 0, 86400, &v, why, len))
      return -1;
    o->launch_timeout = v == 0 ? -1.0 : (double)v;
    return 0;
  }
  case O_STACKS: o->stack_traces = 1; return 0;
  case O_ENGINE: o->engine = a1; return one_of(sp, a1, engines, why, len);
  case O_MONITOR: {
    char *end;
    if (!a1) {
      o->monitor = WR_MONITOR_DEFAULT_S;
      return 0;
    }
    double v = strtod(a1, &end);
    if (end == a1 || *end || !(v >= 0.1 && v <= 3600)) {
      snprintf(why, len,
               "%s=%.*s%s: expected seconds from 0.1 to 3600 (--monitor alone: every %s s)", sp,
               SHOWN(a1), WR_MONITOR_DEFAULT_S_TEXT);
      return -1;
    }
    o->monitor = v;
    return 0;
  }
  case O_MONITOR_OUT: return directory(sp, a1, &o->monitor_out, why, len);
  case O_MONITOR_PROM: return directory(sp, a1, &o->monitor_prom, why, len);
  case O_VERBOSE: o->verbose = 1; return 0;
  case O_VERSION: o->version = 1; return 0;
  case O_HELP: o->help = 1; return 0;
  case O_HELPMAN: o->help_man = 1; return 0;
  case O_HELPMANEXIT: o->help_man_exit = 1; return 0;
  case O_HELPCOMP: wt_opt_completion(stdout, wr_options, "-"); exit(fflush(stdout) ? 1 : 0);
  case O_X: {
    if (o->nxvars >= WR_MAX_X) {
      snprintf(why, len,
               "%s given more than %d times; forward the variables through a wrapper "
               "script that sets them",
               sp, WR_MAX_X);
      return -1;
    }
    /* a name: letters, digits and '_', not starting with a digit (anything else is
     * most likely the program or an option that lost its -x argument) */
    size_t n = strcspn(a1, "=");
    int ok = n > 0 && !(a1[0] >= '0' && a1[0] <= '9');
    for (size_t i = 0; ok && i < n; i++)
      ok = a1[i] == '_' || (a1[i] >= 'a' && a1[i] <= 'z') || (a1[i] >= 'A' && a1[i] <= 'Z') ||
           (a1[i] >= '0' && a1[i] <= '9');
    if (!ok) {
      snprintf(why, len,
               "%s '%.*s%s': not a variable name%s; write %s VAR or %s VAR=VALUE (VAR "
               "of letters, digits and '_', not starting with a digit)",
               sp, SHOWN(a1), a1[0] == '-' ? " (an option? -x takes the name of a variable)" : "",
               sp, sp);
      return -1;
    }
    o->xvars[o->nxvars++] = a1;
    break;
  }
  case O_MCA:
  case O_GMCA:
    if (full(sp, o->nmca, why, len))
      return -1;
    o->mca[o->nmca].key = a1;
    o->mca[o->nmca++].value = a2;
    if (cmd_mca(o, a1, a2, "--mca", c->index, why, len))
      return -1;
    break;
  case O_REPORT: o->report_bindings = 1; break;
  case O_DISPLAY:
    if (full(sp, o->ndisplay, why, len))
      return -1;
    if (!(o->display[o->ndisplay++] = own(o, sp, why, len)))
      return -1;
    if (!o->mpirun_only)
      o->mpirun_only = o->display[o->ndisplay - 1];
    break;
  case O_DISPLAY5: rc = display5(o, sp, a1, why, len); break;
  case O_OUTPUT5: rc = output5(o, sp, a1, why, len); break;
  case O_RTOS5:
    if (strstr(a1, "do-not-launch") || strstr(a1, "donotlaunch")) {
      snprintf(why, len, "%s %s: use weftrun --dry-run, which prints the plan and starts nothing",
               sp, a1);
      return -1;
    }
    if (!o->v5_only && !(o->v5_only = own(o, sp, why, len)))
      return -1;
    if (!o->mpirun_only)
      o->mpirun_only = o->v5_only;
    break;
  case O_TAG: o->tag_output = 1; break;
  case O_TIMESTAMP: o->timestamp_output = 1; break;
  case O_OUTFILE: o->output_filename = a1; break;
  case O_TIMEOUT: rc = count(sp, a1, 1, 100L * 24 * 3600, &o->timeout, why, len); break;
  case O_STATE_TIMEOUT: o->timeout_report = 1; break;
  case O_ROOT: o->allow_run_as_root = 1; break;
  case O_WDIR: break;
  case O_PATH:
    if (!o->path_word && !(o->path_word = own(o, sp, why, len)))
      return -1;
    break;
  case O_PASS0:
  case O_PASS1:
    /* -q is mpirun's and weftrun's: no launch line, no closing figures */
    if (!strcmp(sp, "-q") || !strcmp(sp, "--quiet") || !strcmp(sp, "-quiet"))
      o->quiet = 1;
    if (o->npass + 2 >= WR_MAX_LIST)
      return full(sp, WR_MAX_LIST, why, len);
    if (!(o->pass[o->npass++] = own(o, sp, why, len)))
      return -1;
    if (a1)
      o->pass[o->npass++] = a1;
    break;
  case O_REFUSE0:
  case O_REFUSE1:
  case O_REFUSE2:
    snprintf(why, len, "'%s' is an Open MPI option that weftrun does not support; %s", sp,
             opt->help);
    return -1;
  default: snprintf(why, len, "%s: not handled", sp); return -1;
  }
  if (rc)
    return rc;
  /* the Open MPI options kept word for word: all of them for mpirun when it places the
   * ranks; those that do not place ranks (place 0) when weft does */
  {
    int place =
      (opt->id >= O_NP && opt->id <= O_BINDSOCKET) || opt->id == O_REPORT || opt->id == O_DISPLAY
        ? WR_WORD_PLACE
        : WR_WORD_ANY;
    if (opt->id == O_TIMEOUT || opt->id == O_STATE_TIMEOUT)
      place = WR_WORD_TIMEOUT;
    if (opt->id == O_TAG || opt->id == O_TIMESTAMP || opt->id == O_OUTFILE || opt->id == O_OUTPUT5)
      place = WR_WORD_OUTPUT;
    if (opt->id == O_DISPLAY5)
      place = WR_WORD_PLACE;
    return keep_option(c, sp, a1, a2, place, why, len);
  }
}

/* One context: options, then the program and its arguments up to a ':' word. \p colon
 * says whether one ended it. */
static int parse_context(wr_opts *o, int index, int start, int argc, char **argv, int *next,
                         int *colon, char *why, size_t len)
{
  parse_ctx c = {o, &o->apps[index], index};
  int first = argc - start + 1;
  wr_app *a = &o->apps[index];

  a->np = -1;
  a->words = calloc(WR_MAX_WORDS, sizeof(*a->words));
  a->place = calloc(WR_MAX_WORDS, sizeof(*a->place));
  if (!a->words || !a->place) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  if (wt_opt_parse(wr_options, argc - start + 1, argv + start - 1, handle, &c, &first, why, len))
    return -1;
  int p = start - 1 + first, end = p;
  while (end < argc && strcmp(argv[end], ":"))
    end++;
  a->program = argv + p;
  a->nprogram = end - p;
  /* '--' says the program comes next: with none after it, a dry run refuses as the
   * launch does, where without '--' it plans the options alone */
  if (a->nprogram == 0 && p > start - 1 && !strcmp(argv[p - 1], "--")) {
    snprintf(why, len, "no program after '--'; write 'weftrun [options] -- PROGRAM [ARGS]'");
    return -1;
  }
  *colon = end < argc;
  *next = end < argc ? end + 1 : argc;
  if (*colon && a->nprogram == 0) {
    snprintf(why, len,
             "no program before ':' (program %d); write 'weftrun [options] PROGRAM "
             "[ARGS] : [options] PROGRAM [ARGS]'",
             index + 1);
    return -1;
  }
  return 0;
}

/* The restart options that only mean something together. */
static int restart_options(const wr_opts *o)
{
  const char *alone = o->restart_on_given     ? "--restart-on"
                      : o->min_hosts          ? "--min-hosts"
                      : o->restart_wait_given ? "--restart-wait"
                                              : NULL;
  if (alone && !o->restarts) {
    fprintf(stderr, "weftrun: %s goes with --restarts N (N >= 1)\n", alone);
    return 1;
  }
  if (o->max_hosts && !o->host_discovery) {
    fprintf(stderr, "weftrun: --max-hosts goes with --host-discovery (with -H or --hostfile, "
                    "name the hosts to use)\n");
    return 1;
  }
  if (o->min_hosts && o->max_hosts && o->min_hosts > o->max_hosts) {
    fprintf(stderr, "weftrun: --min-hosts %ld is more than --max-hosts %ld\n", o->min_hosts,
            o->max_hosts);
    return 1;
  }
  if (o->restarts && o->napps > 1) {
    fprintf(stderr,
            "weftrun: --restarts takes one program (this command line has %d, "
            "separated by ':'); run them as one program that starts the others\n",
            o->napps);
    return 1;
  }
  if ((o->restarts || o->host_discovery) && o->check) {
    fprintf(stderr, "weftrun: --check checks the hosts once; leave out %s\n",
            o->restarts ? "--restarts" : "--host-discovery");
    return 1;
  }
  return 0;
}

int wr_opts_parse(wr_opts *o, int argc, char **argv)
{
  char why[600];
  int i = 1, next, colon;

  for (;;) {
    if (o->napps == WR_MAX_APPS) {
      fprintf(stderr, "weftrun: more than %d programs separated by ':'\n", WR_MAX_APPS);
      return WR_EXIT_USAGE;
    }
    if (parse_context(o, o->napps, i, argc, argv, &next, &colon, why, sizeof(why))) {
      fprintf(stderr, "weftrun: %s\n", why);
      return WR_EXIT_USAGE;
    }
    o->napps++;
    if (!colon)
      break;
    if (next >= argc) {
      fprintf(stderr, "weftrun: nothing after the last ':'; remove it or add a program\n");
      return WR_EXIT_USAGE;
    }
    i = next;
  }
  o->program = o->apps[0].program;
  o->nprogram = o->apps[0].nprogram;
  /* Open MPI's environment form of --timeout */
  const char *t = getenv("MPIEXEC_TIMEOUT");
  if (!o->timeout && t && *t && weftx_parse_long(t, 1, 100L * 24 * 3600, &o->timeout)) {
    fprintf(stderr, "weftrun: MPIEXEC_TIMEOUT='%s': expected seconds from 1 to 8640000\n", t);
    return WR_EXIT_USAGE;
  }
  if (o->help || o->help_man || o->help_man_exit || o->version)
    return 0;
  if (o->preempt_grace > WEFTX_PREEMPT_GRACE_MAX_S)
    fprintf(stderr,
            "weftrun: warning: --preempt-grace %ld: a Spot VM powers off %d s after the "
            "preemption notice, so the ranks may be cut short; give %d or less\n",
            o->preempt_grace, WEFTX_PREEMPT_GRACE_MAX_S, WEFTX_PREEMPT_GRACE_MAX_S - 5);

  if (restart_options(o))
    return WR_EXIT_USAGE;
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

const char *wr_opts_cpu_mapping(const wr_opts *o)
{
  if (o->cpu_placement)
    return o->cpu_placement;
  if (o->map_by && weftx_policy_gpu(o->map_by) == 0)
    return "--map-by";
  return NULL;
}

void wr_opts_free(wr_opts *o)
{
  for (int i = 0; i < o->nowned; i++)
    free(o->owned[i]);
  free(o->owned);
  for (int i = 0; i < o->napps; i++) {
    free(o->apps[i].words);
    free(o->apps[i].place);
  }
  o->owned = NULL;
  o->nowned = 0;
}

void wr_usage(FILE *out)
{
  fputs(
    "Usage: weftrun [options] [--] PROGRAM [ARGS...] [: [options] PROGRAM [ARGS...]]...\n"
    "Run PROGRAM as an MPI/NCCL job through Open MPI's mpirun (or Slurm's srun), with\n"
    "mpirun's options and placement. On GPU hosts one rank per GPU by default, each bound\n"
    "to the cores, NUMA memory and NIC next to its GPU (weftrun(1), DIFFERENCES FROM MPIRUN).\n",
    out);
  wt_opt_help(out, wr_options);
  wt_exit_help(out);
}
