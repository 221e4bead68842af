/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's internal interface. weftrun is a straight pipeline; each stage
 * reads what the earlier ones made and none calls back into an earlier one:
 *
 *   options.c   the command line                              -> wr_opts
 *   hosts.c     the job's hosts as the user gave them          -> wr_inventory, one wr_host each
 *   facts.c     all that is learnt about them (all the I/O: topology files, the
 *               remote probe in probe.c, this machine, Google Cloud in gcp.c)
 *                                                              -> the same wr_host structs
 *   plan.c      pure: hosts + facts + policy + options -> ranks per host, every
 *               rank's placement, the environment to show      -> wr_plan
 *   network.c   the interface, MASTER_ADDR, MASTER_PORT        -> wr_net
 *   engine.c    the engine (chosen right after the hosts, as the probe runs
 *               through it): mpirun (engine-mpirun.c) or Slurm's srun
 *               (engine-srun.c); its command line, environment, hostfile
 *                                                              -> argv, envp
 *   run.c       run it under supervision: the control channel (control.c)
 *               tells what happens to every rank, supervise.c decides when
 *               and why the job ends, summary.c says it      -> the exit status
 *
 * With --check, check.c takes over after the facts stage: one short job of
 * "weft-rank --check" through the engine (check-run.c), the plan made from what it
 * found, the evaluation (src/common/check.h) and its table (check-report.c).
 *
 * slurm.c is the facts a Slurm job adds (the GPUs it was given on each host);
 * report.c prints a plan (--dry-run, --report-bindings --json); jobdir.c holds
 * every file weftrun writes for a job; exec.c finds mpirun, srun and weft-rank
 * and builds argument vectors; signals.c turns SIGINT/TERM/HUP into stop requests.
 */
#ifndef WEFTRUN_H
#define WEFTRUN_H

#include <pthread.h>

#include <weftx.h>

#include "agent.h"
#include "check.h"
#include "opt.h"
#include "sample.h"

/* Exit codes of weftrun itself, from the one table in agent.h (the man page's EXIT
 * STATUS is generated from it); a failed rank's own code is passed through instead.
 * WR_EXIT_RANK and WR_EXIT_SIGNAL are negative: they stand for ranges. */
#define WR_EXIT_ENUM(name, code, ...) WR_EXIT_##name = (code),
enum wr_exit { WEFT_EXIT_TABLE(WR_EXIT_ENUM) };
#undef WR_EXIT_ENUM

/* A host whose agents say nothing for this long is lost (--host-timeout): long enough
 * for an agent starved on an overloaded machine; a machine down or cut off is found
 * sooner, its kernel no longer acknowledging (WEFT_CTL_UNANSWERED_S, keepalive). */
#define WR_HOST_TIMEOUT_S 30.0
/* Ranks not started this long after the last agent that connected are given up on
 * (--launch-timeout): their daemon could not be started or cannot reach mpirun, which
 * would wait for ever. Measured from the last arrival, not the first, so that a launch
 * across thousands of hosts that keeps making progress is never cut short. */
#define WR_LAUNCH_TIMEOUT_S 60.0
/* After "end the job": an agent's SIGTERM to SIGKILL, and mpirun's SIGTERM to SIGKILL. */
#define WR_END_GRACE_S 2.0
#define WR_ENGINE_GRACE_S 4.0

/* --monitor without a value */
#define WR_MONITOR_DEFAULT_S 5.0
#define WR_MONITOR_DEFAULT_S_TEXT "5"

/* Upper bound of every repeated option. */
#define WR_MAX_LIST 256
#define WR_MAX_HOSTS WEFT_AGENT_MAX_HOSTS
#define WR_MAX_APPS 64            /* programs of an MPMD command line */
#define WR_MAX_WORDS 1024         /* option words of one program */

typedef struct wr_pair { const char *key, *value; } wr_pair;

/* What an option word of the user's is to mpirun: */
enum {
  WR_WORD_ANY = 0,              /* changes nothing weft plans: always given to mpirun */
  WR_WORD_PLACE,                /* places ranks: given when Open MPI places them */
  WR_WORD_TIMEOUT,              /* --timeout and its reports: given when mpirun keeps the
                                   deadline (--report-state-on-timeout, --get-stack-traces) */
};

/* One program of the command line (MPMD: several, separated by ':'). */
typedef struct wr_app {
  long np;                      /* -1: not given */
  const char *host_args[WR_MAX_LIST];
  int nhost_args;
  const char *hostfile;
  char **program;               /* its argv (not NULL-terminated: nprogram words) */
  int nprogram;
  const char **words;           /* its Open MPI options, word for word */
  int *place;                   /* per word: WR_WORD_* */
  int nwords;
} wr_app;

typedef struct wr_opts {
  long np;                      /* the first program's -np; -1: one rank per slot */
  long per_node;                /* -N; -1 when not given */
  const char *host_args[WR_MAX_LIST]; /* the first program's -H */
  int nhost_args;
  const char *hostfile;         /* the first program's */
  const char *default_hostfile; /* --default-hostfile */
  const char *map_by, *bind_to, *rank_by;
  const char *cpu_placement;    /* an option that asks Open MPI for a CPU placement, or NULL */
  const char *mpirun_only;      /* the first other option only mpirun carries out (for srun) */
  long npersocket, cpus_per_proc; /* -1 when not given */
  weftx_ompi_cmdline cl;        /* the placement options, for the Open MPI model */
  wr_pair cmd_mca[WR_MAX_LIST]; /* MCA parameters the command line sets, in order */
  const char *cmd_mca_from[WR_MAX_LIST];
  int cmd_mca_app[WR_MAX_LIST];
  int ncmd_mca;
  int report_bindings, json, dry_run, check;
  const char *display[WR_MAX_LIST]; /* --display-map and its kin, as typed */
  int ndisplay;
  const char *topology;         /* FILE for every host */
  wr_pair host_topology[WR_MAX_LIST]; /* host=FILE */
  int nhost_topology;
  long gpus_per_node;           /* -1: probe */
  const char *gpu_visibility;   /* all | own | none */
  const char *nccl_preset;      /* auto | none | FAMILY; NULL: auto */
  const char *xvars[WR_MAX_LIST];
  int nxvars;
  wr_pair mca[WR_MAX_LIST];     /* --mca and --gmca */
  int nmca;
  int tag_output, timestamp_output, oversubscribe, allow_run_as_root;
  const char *engine;           /* auto | mpirun | srun; NULL: auto */
  const char *output_filename;
  long timeout;                 /* seconds; 0: none */
  double host_timeout;          /* --host-timeout seconds; 0: WR_HOST_TIMEOUT_S */
  double launch_timeout;        /* --launch-timeout seconds; 0: WR_LAUNCH_TIMEOUT_S, -1: none */
  int stack_traces;             /* --get-stack-traces */
  int timeout_report;           /* --report-state-on-timeout, --get-stack-traces */
  long preempt_grace;           /* --preempt-grace seconds; -1: weft-rank's default */
  double monitor;               /* --monitor: seconds between samples; 0: off */
  const char *monitor_out;      /* --monitor-out DIR */
  const char *monitor_prom;     /* --monitor-prom DIR */
  char job[300];                /* the job's name in Prometheus labels: "HOST:PID" of weftrun */
  int quiet;                    /* -q: no launch line, no closing figures */
  double started;               /* weftrun's start (weftx_monotonic()), for the launch line */
  const char *pass[WR_MAX_LIST]; /* other Open MPI options passed through, with their arguments */
  int npass;
  int version, help, help_man, help_man_exit, verbose, refused;
  wr_app apps[WR_MAX_APPS];
  int napps;
  char **program;               /* the first program's argv */
  int nprogram;
  char **owned;                 /* strings the options own */
  int nowned;
} wr_opts;

/* options.c */
extern const weft_opt wr_options[];
void wr_opts_init(wr_opts *o);
/* Parse argv into o; on error print one line and return WR_EXIT_USAGE. */
int wr_opts_parse(wr_opts *o, int argc, char **argv);
int wr_strings_own(wr_opts *o, char *s); /* o frees s in wr_opts_free(); 0 or -1 */
/* The option that asks Open MPI for a placement of its own (--map-by core, --cpu-set,
 * ...), as typed; NULL when there is none. */
const char *wr_opts_cpu_mapping(const wr_opts *o);
void wr_opts_free(wr_opts *o);
void wr_usage(FILE *out);

/* signals.c: SIGINT, SIGTERM and SIGHUP become one byte each (the signal number) on a
 * pipe, a stop request for weftx_proc_run(); never an asynchronous death. */
int wr_signals_install(void);      /* the pipe's read end, or -1 */
int wr_signals_pending(int fd);    /* the signal waiting on fd (consumed), or 0 */

/* jobdir.c: the job's private directory, $TMPDIR/weft-PID-XXXXXX (mode 0700), made
 * on first use; every file weftrun writes for the job is in it, and it goes with the
 * job (on success, errors and signals; only a SIGKILL of weftrun leaves it). */
typedef struct wr_jobdir {
  char path[4096];              /* "" until made */
  char **files;                 /* what is in it, to remove */
  int nfiles;
} wr_jobdir;
/* A new file NAME in it, open for writing; its path in \p path. NULL with \p why. */
FILE *wr_jobdir_file(wr_jobdir *d, const char *name, char *path, size_t len, char *why,
                     size_t whylen);
/* The name the directory has or will have ("$TMPDIR/weft-PID-XXXXXX" before it is made). */
void wr_jobdir_name(const wr_jobdir *d, char *buf, size_t len);
void wr_jobdir_remove(wr_jobdir *d);

/* exec.c: the programs weftrun starts and their argument vectors. */
typedef struct wr_argv { char **v; int n, cap; } wr_argv;
int wr_argv_add(wr_argv *a, const char *s);   /* 0 or WEFT_ENOMEM */
int wr_argv_put(wr_argv *a, const char *key, const char *value); /* "KEY=VALUE" */
int wr_argv_add_cb(void *a, const char *s);   /* the same, as weft_agent_args_write() calls it */
void wr_argv_free(wr_argv *a);
void wr_argv_print(FILE *out, const char *prefix, const wr_argv *a);
const char *wr_find_rank_agent(char *buf, size_t len); /* $WEFT_RANK_PATH, build tree, libexec */
const char *wr_find_mpirun(char *buf, size_t len);     /* $WEFT_MPIRUN, else $PATH */
const char *wr_find_srun(char *buf, size_t len);       /* $WEFT_SRUN, else $PATH */
/* weftrun's environment with \p changes ("KEY=VALUE" sets, "KEY" unsets; NULL: none), for
 * execve: a NULL-terminated array of pointers into both (free() the array only). */
char **wr_env_build(const wr_argv *changes);

/* Where a host's topology came from. */
typedef enum wr_topo_from {
  WR_TOPO_FILE = 1,             /* --topology (HOST=)FILE */
  WR_TOPO_PROBED,               /* the remote probe */
  WR_TOPO_HERE,                 /* this machine: the host is weftrun's own */
  WR_TOPO_ASSUMED,              /* this machine's, assumed for a remote host not probed */
} wr_topo_from;

/* One host of the job: what the user said of it (hosts.c), then what is known of it
 * (facts.c). The plan reads it and never changes it. */
typedef struct wr_host {
  const char *name;             /* validated, as Open MPI names it; belongs to the inventory */
  const char *typed;            /* the full name when Open MPI shortens it, else NULL */
  int index;                    /* position in the user's list */
  int slots;                    /* given (-H host:N, slots=N, listed twice); 0: not given */
  int ompi_slots, ompi_given;   /* Open MPI's count of them (weftx_host) */
  int slots_max;                /* max_slots; 0: none */
  int local;                    /* weftrun's own host (mpirun's): by name, or its address */
  char unresolved[128];         /* why the name does not resolve (a dry run goes on), or "" */
  const char *file;             /* its --topology file, or NULL */
  const weftx_topo *topo;       /* its topology (never NULL after facts.c) */
  wr_topo_from from;
  int gpus;                     /* GPUs: of topo, or --gpus-per-node's N when trusted */
  int gpus_trusted;             /* gpus is --gpus-per-node's */
  char machine_type[64];        /* Google Cloud: "" when unknown */
  char physical_host[256];      /* "" without compact placement */
  char *gpus_allowed;           /* the GPUs its ranks may have ("3-4", "" none), NULL: all */
  const char *gpus_from;        /* who says so: "Slurm job 12", "CUDA_VISIBLE_DEVICES" */
} wr_host;

/* mca.c: the MCA parameters that decide placement, as mpirun will see them (command
 * line, environment, parameter files). WR_EXIT_*. */
typedef struct wr_mca {
  weftx_ompi_mca m;
  int fixed[WEFTX_OMPI_MCA_COUNT]; /* set by the override file */
  int default_hostfile_builtin;    /* orte_default_hostfile is Open MPI's own default */
  char **strings;
  int nstrings;
} wr_mca;
int wr_mca_gather(const wr_opts *o, wr_mca *m);
void wr_mca_free(wr_mca *m);

typedef struct wr_topo_entry wr_topo_entry;
typedef struct wr_gcp wr_gcp;

/* The hosts and their facts, and what belongs to them. */
typedef struct wr_inventory {
  weftx_hostlist *hl;           /* owns the names */
  weftx_hosts_origin origin;
  int nhosts;
  wr_host *hosts;               /* as the user gave them */
  wr_topo_entry *topos;         /* loaded topologies, by file */
  int ntopos;
  wr_gcp *gcp;                  /* --nccl-preset on this VM */
  char **preset_env;            /* its variables as "KEY=VALUE", for the plan */
  int npreset_env;
  wr_mca mca;                   /* Open MPI's placement parameters */
  int keep_fqdn;
  int *app_hosts[WR_MAX_APPS];  /* the hosts each program may use (indices); NULL: all */
  int app_nhosts[WR_MAX_APPS];
  const char *slurm_job;        /* SLURM_JOB_ID inside an allocation, else NULL */
  int no_mapper;                /* the engine (srun) has no Open MPI mapper: the agents bind
                                   every rank, to Open MPI's layout where it is that */
  const char *default_hostfile; /* the hosts came from Open MPI's default hostfile, this one */
  char gpus_from[64];           /* the wr_host.gpus_from they share */
} wr_inventory;


/* hosts.c: -H, --hostfile, Open MPI's default hostfile, Slurm or this host; each
 * host's given slots, whether it is this one, its --topology file. WR_EXIT_*. */
int wr_hosts_gather(const wr_opts *o, wr_inventory *inv);
void wr_inventory_free(wr_inventory *inv);

/* engine.c: which engine runs the job, chosen after the hosts (the probe runs through
 * it): --engine, or auto (mpirun; srun inside a Slurm allocation without mpirun). What
 * the engine cannot do is refused here in one line. WR_EXIT_*. */
typedef enum wr_engine_kind { WR_ENGINE_MPIRUN = 1, WR_ENGINE_SRUN } wr_engine_kind;
/* The engine as the user names it: $WEFT_MPIRUN ($WEFT_SRUN) as given, else the bare name
 * (exec.c) */
const char *wr_engine_given(wr_engine_kind kind);
typedef struct wr_engine {
  wr_engine_kind kind;
  const char *name;             /* "mpirun" or "srun" */
  char why[160];                /* how it was chosen: "--engine srun", "auto: ..." */
  char path[4096];              /* the program; its name alone when not found (dry run) */
  char call[4096];              /* its argv[0], as the user would type it: $WEFT_MPIRUN
                                 * ($WEFT_SRUN) as given, else the bare name, looked up on
                                 * the same PATH at exec; mpirun takes an absolute argv[0]
                                 * for --prefix and puts its bin/ and lib/ at the front of
                                 * every rank's PATH and LD_LIBRARY_PATH */
  int found;
  char agent[4096];             /* weft-rank */
  const char *hostfile;         /* where wr_engine_hostfile()'s text will be */
  const char *host_xml;         /* this host's XML for its ranks, or NULL */
  const char *control;          /* the control channel's ADDR:PORT, or NULL (--dry-run) */
  const weft_agent_args *agent_args; /* what the agents get besides the plan's, or NULL */
} wr_engine;
int wr_engine_choose(const wr_opts *o, const wr_inventory *inv, wr_engine *e);
/* The engine, mpirun allowed to run as root when weftrun is, and weft-rank all there to
 * run a job: 0, or WR_EXIT_ENGINE with one line on stderr that says what to do (exec.c). */
int wr_engine_ready(const wr_opts *o, const wr_engine *e);

/* facts.c: the hosts' topologies (files, the probe, this machine), Google Cloud facts,
 * this VM's preset and, in a Slurm job, each host's GPUs (slurm.c). WR_EXIT_*, or 128+N
 * when stopped by signal N. */
int wr_facts_gather(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                    int stop_fd);
/* Each host's topology: its --topology file, else paths[i] (its probed XML, may be
 * NULL), else this machine's; and its GPUs. WR_EXIT_*. */
int wr_facts_topologies(const wr_opts *o, wr_inventory *inv, char *const *paths);

/* probe.c: remote hosts' hwloc XML (files in the job directory, into paths[i]) and
 * their Google Cloud facts (into hosts[i]), through the engine and "weft-rank --probe".
 * WR_EXIT_*, or 128+N when stopped by signal N. */
int wr_probe(const wr_opts *o, const wr_engine *e, wr_host *const *hosts, int n, wr_jobdir *dir,
             int stop_fd, char **paths);
/* One probed host's output (XML, then maybe the GCE line) as "probe-I.xml" in the job
 * directory, its path into *path (allocated); 0 or -1 (said on stderr). */
int wr_probe_save(wr_host *h, int i, const char *buf, size_t len, wr_jobdir *dir, char **path);

/* slurm.c: the GPUs each host's ranks may have: those the Slurm job was given there
 * (scontrol show job -d), within a CUDA_VISIBLE_DEVICES of the user's. WR_EXIT_*. */
int wr_slurm_gpus(const wr_opts *o, wr_inventory *inv, int stop_fd);
/* A CUDA_VISIBLE_DEVICES that Slurm set (a batch script's, a step's): never forwarded. */
int wr_slurm_cvd_is_slurms(void);

/* gcp.c: --nccl-preset on this VM: reserved cores and variables for the plan, the
 * checks (warnings), this VM's Google Cloud facts. */
int wr_gcp_prepare(const wr_opts *o, int nhosts, wr_gcp **out);   /* WR_EXIT_* */
const char *wr_gcp_reserved_cpus(const wr_gcp *g);
int wr_gcp_env(const wr_gcp *g, char ***env, int *n);             /* "KEY=VALUE", allocated */
const weftx_env *wr_gcp_preset_env(const wr_gcp *g);              /* with origins; NULL: none */
const char *wr_gcp_unresolved(const wr_gcp *g, const char *key);  /* why KEY holds a placeholder */
const char *wr_gcp_overrides(const wr_gcp *g, const char *key);   /* the preset the user's KEY beats */
int wr_gcp_local(const wr_gcp *g, char *mt, size_t mtlen, char *ph, size_t phlen); /* 1 on GCE */
void wr_gcp_print(const wr_gcp *g, FILE *out);
void wr_gcp_destroy(wr_gcp *g);

/* plan.c: the pure plan. Who places the ranks: */
typedef enum wr_mode {
  WR_MODE_GPU = 1,              /* weft: one rank per GPU, bound next to it (weft-rank binds) */
  WR_MODE_OMPI,                 /* Open MPI's layout of the user's own options: mpirun's
                                   (it binds), or the model's under srun (weft-rank binds) */
} wr_mode;

typedef struct wr_plan_host {
  const wr_host *host;          /* its facts */
  int slots;                    /* given, else its GPUs or cores (the policy's slots) */
  int cap;                      /* ranks it takes without oversubscribing */
  int count;                    /* ranks planned on it */
  int *per_app;                 /* of them, the ranks of each program (napps) */
  int ompi_slots;               /* Open MPI's slots of it (WR_MODE_OMPI) */
} wr_plan_host;

typedef struct wr_plan {
  wr_mode mode;
  char mode_why[256];           /* why this mode: "no host has a GPU", "--map-by core", ... */
  int mpirun_binds;             /* WR_MODE_OMPI under mpirun: mpirun maps and binds, and the
                                   ranks get mpirun's environment */
  char departure[512];          /* WR_MODE_GPU: how the layout differs from mpirun's, or "" */
  weftx_policy pol;             /* WR_MODE_GPU */
  weftx_ompi_policy ompi;       /* WR_MODE_OMPI: Open MPI's resolved policy */
  int by_node;                  /* ranks numbered round-robin over the hosts */
  int np;
  int napps;
  int nhosts;
  wr_plan_host *hosts;          /* in rank order (Open MPI's node order), hosts without ranks last */
  int ordered;                  /* sorted by physical_host */
  int oversub;                  /* some host has more ranks than its cap */
  weftx_plan_rank *ranks;       /* np of them; .host indexes hosts */
  int *rank_app;                /* the program of each rank */
  char **env;                   /* "KEY=VALUE" the plan shows: -x values, the preset's */
  int nenv;
} wr_plan;

/* What the plan takes of this machine besides the hosts' facts. */
typedef struct wr_plan_here {
  const char *reserved_cpus;    /* the preset's cores no rank gets, or NULL */
  char *const *preset_env;      /* the preset's "KEY=VALUE" */
  int npreset_env;
  char *const *environ;         /* weftrun's environment: the value of -x VAR */
} wr_plan_here;

/* WR_EXIT_*, with a one-line reason in why on failure. */
int wr_plan_make(const wr_opts *o, const wr_inventory *inv, const wr_plan_here *here,
                 wr_plan **out, char *why, size_t whylen);
/* plan-gpu.c and plan-ompi.c: the two ways of placing, after plan.c has chosen one. */
int wr_plan_gpu(wr_plan *p, const wr_opts *o, const wr_host *hosts, int nhosts,
                const wr_plan_here *here, char *why, size_t whylen);
int wr_plan_ompi(wr_plan *p, const wr_opts *o, const wr_inventory *inv, char *why,
                 size_t whylen);
/* The layout weft-rank gets: each program's ranks per host in plan order, run-length
 * coded, ';' between programs (layout.h). Allocated. */
char *wr_plan_layout(const wr_plan *p);
void wr_plan_destroy(wr_plan *p);
int wr_plan_host_of(const wr_plan *p, const char *name); /* plan index of a host, or -1 */

/* network.c: the job's network, chosen once and handed to every rank. */
typedef struct wr_net {
  char ifname[32];              /* "" for a job on this host alone */
  char ifaddr[64];
  char addr[256];               /* MASTER_ADDR */
  int port;                     /* MASTER_PORT */
} wr_net;
int wr_net_choose(const wr_plan *p, wr_net *n); /* WR_EXIT_*, the reason on stderr */
int wr_net_try(const wr_plan *p, wr_net *n, char *why, size_t len); /* WR_EXIT_*, quiet */

/* preview.c: every variable each rank will get (--dry-run, the plan JSON): what all
 * ranks share once, with its source, and each rank's own; the user's variables that
 * go as they are, by name only. */
typedef struct wr_preview {
  int nall;
  char **all;                   /* "KEY=VALUE" every rank gets */
  char **source;                /* where each came from ("weft", "-x", "preset a3-highgpu-8g") */
  char **unresolved;            /* why a value still holds a placeholder, else NULL */
  weftx_env_origin *origin;
  int nforwarded;
  char **forwarded;             /* names of the variables forwarded as the user has them */
  char ***rank;                 /* np NULL-terminated lists: the variables that differ */
  int *nrank;
} wr_preview;
int wr_preview_make(const wr_plan *p, const wr_inventory *inv, const wr_net *net,
                    const wr_opts *o, wr_preview *pv, char *why, size_t len); /* WEFT_E* */
void wr_preview_print(const wr_preview *pv, const wr_plan *p, FILE *out);
void wr_preview_free(wr_preview *pv, int np);

/* report.c: the plan as --dry-run prints it, or as JSON; net may be NULL. */
int wr_report(const wr_plan *p, const wr_inventory *inv, const wr_net *net, const wr_opts *o,
              FILE *out);

/* engine.c: the engine's command line for a plan, the variables it adds to weftrun's
 * environment for it ("KEY=VALUE", into env), and the hostfile it reads. */
int wr_engine_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                   wr_argv *out, wr_argv *env, char *why, size_t whylen); /* WR_EXIT_* */
int wr_engine_hostfile(const wr_plan *p, const wr_engine *e, FILE *out); /* 0 or -1 */
/* Variables forwarded to every rank by default (weftx_env_forward_default() less those
 * that describe one host). */
int wr_engine_forwarded(const char *name, size_t n);
/* Those that plan p's engine passes to every host: all of them when weft places the
 * ranks; when Open MPI does, only WEFT_* (mpirun passes the rest as it would alone). */
int wr_engine_forwards(const wr_plan *p, const char *name, size_t n);
/* weft-rank, its arguments for a plan, "--" and program \p app's words (engine.c, for
 * both engines). */
int wr_engine_agent(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                    const char *output_filename, int app, wr_argv *a, char *why, size_t whylen);

/* engine-mpirun.c and engine-srun.c: each engine's command line, environment, hostfile
 * and probe. */
int wr_mpirun_argv(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a);
int wr_mpirun_env(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *env);
int wr_mpirun_app_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, int app,
                       wr_argv *a);
int wr_mpirun_hostfile(const wr_plan *p, FILE *out);
int wr_mpirun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                         wr_argv *a);
int wr_srun_check(const wr_opts *o, const wr_inventory *inv, char *why, size_t len);
int wr_srun_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                 wr_argv *a, wr_argv *env);
int wr_srun_hostfile(const wr_plan *p, FILE *out);
int wr_srun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                       wr_argv *a, wr_argv *env);


/* supervise.c: what the control channel told of every rank, and the rules that end
 * the job (pure: times are passed in). */
typedef enum wr_rank_state {
  WR_RANK_WAITING = 0,          /* its agent has not connected */
  WR_RANK_CONNECTED,            /* connected, the rank not started yet */
  WR_RANK_RUNNING,
  WR_RANK_EXITED,               /* EXITED came */
  WR_RANK_GONE,                 /* its connection closed without EXITED */
} wr_rank_state;

typedef struct wr_rank {
  wr_rank_state state;
  int lost;                     /* its host (or agent) was declared lost: not waited for */
  int unanswered;               /* its connection failed: the machine stopped acknowledging */
  int running_at_end;           /* running when the verdict came (summaries) */
  double hello_at, seen, started_at, exited_at, gone_at;
  long agent_pid, pid;
  char host[64];                /* the agent's own name for its host */
  char gpu[64];                 /* "2 (0000:0a:00.0)" or "none" */
  int code, sig, stopped;       /* EXITED's; stopped: WEFT_CTL_STOP_* */
  char why[512];
  /* its last weft call (call page) */
  int have_call, wstate, op, group_first, group_size;
  char group[32];
  long long bytes, calls;
  double call_since;            /* weftrun's clock */
  char *members;                /* a deadline's group, "0-3,8" */
  char *stack;                  /* --get-stack-traces */
  size_t stack_len;
  int stack_asked, stack_done;
  /* what it used: its last SAMPLE (--monitor), and its totals (EXITED's, else the samples') */
  weft_sample last;
  int nsamples;
  long long cpu_ms, peak_rss;   /* -1: not known */
  long long gpu_util_sum, gpu_mem_peak; /* its GPU's, over gpu_n samples (NVML) */
  int gpu_n;
} wr_rank;

typedef enum wr_end {
  WR_END_NONE = 0,
  WR_END_RANK,                  /* a rank failed on its own */
  WR_END_DEADLINE,              /* a weft deadline ended a rank: the absent are the cause */
  WR_END_LOST,                  /* a host (or an agent) was lost */
  WR_END_TIMEOUT,               /* --timeout */
  WR_END_SIGNAL,                /* weftrun got a signal */
  WR_END_PREEMPTED,
  WR_END_ENGINE,                /* mpirun failed, nothing else to say */
  WR_END_NOFINALIZE,            /* a rank exited 0 before the others, unfinalized */
  WR_END_MISSING,               /* mpirun exited 0 but ranks never ran */
} wr_end;

typedef enum wr_lost_how { WR_LOST_SILENT = 0, WR_LOST_CLOSED, WR_LOST_AGENT,
                           WR_LOST_AGENT_SILENT, WR_LOST_UNANSWERED,
                           WR_LOST_NEVER, /* its ranks never started (--launch-timeout) */
                           WR_LOST_DAEMON /* the engine's daemon there died (an agent saw it) */
} wr_lost_how;

#define WR_ACT_END 1                     /* END to every agent, stop the engine */
#define WR_ACT_STACKS 2                  /* STACK_REQ to the agents with stack_asked */

typedef struct wr_sup wr_sup;
struct wr_sup {
  const wr_plan *p;
  int np;
  wr_rank *r;
  struct wr_sup_host *hosts;    /* silence()'s scratch, one per host of the plan */
  double t0, loop_at, lost_s, hb_s, timeout_s;
  double launch_s;              /* --launch-timeout; 0: none */
  double last_hello_at;         /* the last agent's arrival; 0 before the first */
  int stacks;
  int connected, exited;
  double first_gone_at, first_stopped_at;
  /* the verdict */
  wr_end end;
  int end_rank, end_host, code;
  wr_lost_how lost_how;
  double end_at, stacks_until, end_after;
  int want_end, want_stacks;    /* 1: to do, 2: done (stacks: 3 when in) */
  int engine_exited, engine_judged;
  int engine_status;            /* the engine's exit status, -N when killed by signal N */
  const char *engine;           /* its name for the summaries: "mpirun" (default), "srun" */
  double engine_at;
  int started;                  /* ranks whose STARTED came */
  double all_started_at;        /* when the last of them came; 0 before */
  /* called for every SAMPLE once it is stored (monitor.c's), when set */
  void (*on_sample)(void *arg, const wr_sup *s, int rank, double now);
  void *sample_arg;
};

wr_sup *wr_sup_new(const wr_plan *p, const wr_opts *o, double now);
void wr_sup_free(wr_sup *s);
const char *wr_sup_host(const wr_sup *s, int rank);       /* the plan's name */
/* HELLO of rank's agent: 0, or -1 with why (then it is refused). */
int wr_sup_hello(wr_sup *s, int rank, long agent_pid, const char *host, double now, char *why,
                 size_t len);
void wr_sup_msg(wr_sup *s, int rank, const weft_ctl_msg *m, double now);
/* rank's connection closed; unanswered: its machine stopped acknowledging (keepalive) */
void wr_sup_gone(wr_sup *s, int rank, int unanswered, double now);
void wr_sup_signal(wr_sup *s, int sig, double now);       /* weftrun got signal sig */
void wr_sup_engine_exit(wr_sup *s, int status, double now);
int wr_sup_tick(wr_sup *s, double now);                   /* WR_ACT_* to do now */
double wr_sup_next(const wr_sup *s, double now);          /* when to tick at the latest */
int wr_sup_done(const wr_sup *s);                         /* no agent left connected */
int wr_sup_settled(const wr_sup *s);                      /* done, and mpirun's end judged */

/* straggle.c: the straggler rule (pure). Use is CPU in thousandths of a core. */
#define WR_STRAGGLE_RATIO 0.5    /* below half the median of every rank's latest use */
#define WR_STRAGGLE_FLOOR_PM 200 /* and that median at least a fifth of a core */
#define WR_STRAGGLE_SAMPLES 3    /* for this many samples in a row */
typedef struct wr_straggle {
  int n;
  int *low;                     /* low samples in a row, per rank */
  char *flagged;                /* named already */
} wr_straggle;
int wr_straggle_init(wr_straggle *st, int n); /* 0, -1 out of memory */
void wr_straggle_free(wr_straggle *st);
/* The median of the values of v that are not negative (scratch: n of them); -1 when
 * fewer than two are. */
int64_t wr_median(const int64_t *v, int n, int64_t *scratch);
/* Rank's new sample \p use against \p median (wr_median of every rank's latest): 1 when
 * it makes the rank a straggler (once per rank), 0 otherwise. */
int wr_straggle_step(wr_straggle *st, int rank, int64_t use, int64_t median);

/* monitor.c: --monitor's timeline, stragglers and live line, fed by the supervisor's
 * on_sample (wr_mon_sample, with the wr_mon as arg). open: WR_EXIT_* with why. */
typedef struct wr_mon wr_mon;
int wr_mon_open(const wr_opts *o, int np, double t0, wr_mon **out, char *why, size_t len);
void wr_mon_sample(void *arg, const wr_sup *s, int rank, double now);
void wr_mon_wipe(wr_mon *m);  /* the live line off the screen, before another line */
void wr_mon_close(wr_mon *m); /* NULL is fine */

/* picture.c: DIR/timeline.html (inline SVG: CPU, GPU and memory over time, one line per
 * rank) from DIR/timeline.jsonl at the end of a --monitor-out job. */
typedef struct wr_point {
  double t, cpu, rss;        /* cpu in cores, rss in bytes; -1 absent */
  int rank;
  double gpu;                /* 0 to 1; -1 absent */
} wr_point;
typedef struct wr_series { wr_point *p; int n, cap; char host[64]; } wr_series;
/* One timeline line: 0, or -1 when it is not a record (host: "" when absent). */
int wr_timeline_parse(const char *line, wr_point *pt, char *host, size_t hostlen);
/* The page for \p n ranks' series; \p what is its first paragraph. */
void wr_picture_draw(FILE *out, const wr_series *v, int n, const char *what);
int wr_picture_write(const char *jsonl, const char *html, int np, const char *what, char *why,
                     size_t len); /* 0, or -1 with why */

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
const char *wr_ctl_address(const wr_ctl *c);   /* ADDR:PORT for weft-rank --control */
const char *wr_ctl_secret(const wr_ctl *c);
int wr_ctl_fd(const wr_ctl *c);                /* poll it: readable when there is work */
/* Accept, read, answer heartbeats; what the agents say goes to s. */
void wr_ctl_pump(wr_ctl *c, wr_sup *s, double now);
void wr_ctl_end(wr_ctl *c, const wr_sup *s, int sig, const char *why); /* END to every agent */
void wr_ctl_stacks(wr_ctl *c, const wr_sup *s);                        /* STACK_REQ */
void wr_ctl_close(wr_ctl *c);

/* run.c: run the command (env: variables set for it) under supervision; the exit
 * status. */
int wr_run(const wr_plan *p, const wr_opts *o, const wr_engine *e, char **argv,
           const wr_argv *env, int stop_fd, wr_ctl *ctl);

/* check.c: --check: the check job, the plan made from what it found, the evaluation
 * (src/common/check.h), the table. WR_EXIT_OK, _CHECKWARN, _CHECKFAIL, or another
 * WR_EXIT_* when the check itself cannot run. */
int wr_check(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
             int stop_fd);

/* check-run.c: check jobs side by side. What came back from one host: */
typedef struct wr_check_got {
  weft_check_fact *facts;       /* its records but hello, end and xml, as they came */
  int nfacts, cap;
  char *xml;                    /* its topology, NUL-terminated, or NULL */
  size_t xmllen;
  double hello;                 /* seconds from the job's start to its hello; -1: none */
  int end;                      /* its agent reported to the end */
} wr_check_got;

#define WR_CHECK_ERR_MAX 16384  /* bytes of the engine's messages kept */

typedef struct wr_check_priv wr_check_priv;
typedef struct wr_check_job {
  char **argv;                  /* the engine's command (a wr_argv's, the job's to free);
                                 * host I of the job is its rank I */
  wr_argv env;                  /* the variables the engine sets for it (the job's) */
  int nhosts;
  double start_s;               /* every hello within this, or the job is stopped */
  double timeout_s;             /* the whole job */
  int verbose;                  /* the engine's messages go on to stderr too */
  int labels;                   /* its stdout is srun's --label lines, not mpirun's tags */
  wr_check_got *got;            /* out: nhosts of them */
  char *err;                    /* out: the engine's last messages, NUL-terminated */
  size_t errlen;
  int status;                   /* out: the engine's exit status (weftx_proc_result) */
  int timed_out, start_late, stopped;
  double seconds;
  wr_check_priv *priv;
} wr_check_job;

/* Run \p n jobs side by side until each ends; weftrun's stop requests (stop_fd) are
 * passed on to all. 0, 128+N when stopped by signal N, -1 when nothing could run. */
int wr_check_run(wr_check_job *jobs, int n, int stop_fd);
/* What a job holds (its argv too); it may be made again afterwards. */
void wr_check_job_free(wr_check_job *j);

/* check-report.c: the check as a table with its problems, or as JSON. */
typedef struct wr_check_report {
  const weft_check_input *in;
  const weft_check_result *res;
  const char *pair_rule;        /* "every pair, both ways", ... */
  double seconds;
  int exit_code;
} wr_check_report;
void wr_check_print(const wr_check_report *r, FILE *out);
void wr_check_print_json(const wr_check_report *r, FILE *out);

#endif /* WEFTRUN_H */
