/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's pipeline and what its stages hand each other. weftrun is a straight
 * pipeline (main.c); each stage reads what the earlier ones made and none calls
 * back into an earlier one. Each stage or product after the first is a folder
 * with its own header:
 *
 *   options.c   the command line                                   -> wr_opts
 *   hosts/      the job's hosts as the user gave them, then all that is learnt
 *               of them (all the I/O: topology files, the remote probe, this
 *               machine, Google Cloud, a Slurm job's GPUs)          -> wr_inventory
 *   engine/     the engine (chosen right after the hosts, as the probe runs
 *               through it): mpirun or Slurm's srun; its command line,
 *               environment and hostfile for a plan                -> wr_engine
 *   plan/       pure: hosts + facts + policy + options -> ranks per host, every
 *               rank's placement; then the network; the plan shown -> wr_plan, wr_net
 *   run.c       the engine's command run under supervision (supervise/: the
 *               control channel, the rules that end the job, what its end says;
 *               monitor/: what --monitor does with the samples)    -> the exit status
 *
 * With --check, check/ takes over after the facts stage: short jobs of
 * "weft-rank --check" through the engine, the plan made from what they found,
 * its evaluation and its table.
 *
 * signals.c turns SIGINT/TERM/HUP into stop requests; jobdir.c holds every file
 * weftrun writes for a job.
 */
#ifndef WEFTRUN_H
#define WEFTRUN_H

#include <weftx.h>

#include "agent.h"
#include "opt.h"

/* Exit codes of weftrun itself, from the one table in agent.h (the man page's EXIT
 * STATUS is generated from it); a failed rank's own code is passed through instead.
 * WR_EXIT_RANK and WR_EXIT_SIGNAL are negative: they stand for ranges. */
#define WR_EXIT_ENUM(name, code, ...) WR_EXIT_##name = (code),
enum wr_exit { WT_EXIT_TABLE(WR_EXIT_ENUM) };
#undef WR_EXIT_ENUM

/* --monitor without a value */
#define WR_MONITOR_DEFAULT_S 5.0
#define WR_MONITOR_DEFAULT_S_TEXT "5"

/* --restart-on: what a restart follows (--restarts). */
enum { WR_RESTART_ON_HOST = 1, WR_RESTART_ON_ANY };
#define WR_RESTART_WAIT_S 600     /* --restart-wait's default */
#define WR_DISCOVERY_TIMEOUT_S 30 /* --host-discovery-timeout's default */

/* Upper bound of every repeated option. */
#define WR_MAX_LIST 256
#define WR_MAX_X 4096 /* -x: mpirun has no bound; weftrun's, documented in weftrun(1) */
#define WR_MAX_HOSTS WT_AGENT_MAX_HOSTS
#define WR_MAX_APPS 64     /* programs of an MPMD command line */
#define WR_MAX_WORDS 10240 /* option words of one program (room for WR_MAX_X -x) */

typedef struct wr_pair {
  const char *key, *value;
} wr_pair;

/* What an option word of the user's is to mpirun: */
enum {
  WR_WORD_ANY = 0, /* changes nothing weft plans: always given to mpirun */
  WR_WORD_PLACE,   /* places ranks: given when Open MPI places them */
  WR_WORD_TIMEOUT, /* --timeout and its reports: given when mpirun keeps the
                                   deadline (--report-state-on-timeout, --get-stack-traces) */
  WR_WORD_OUTPUT,  /* --tag-output, --timestamp-output, --output-filename: never
                                   given; the agents do them on whole lines (wr_engine_lines) */
};

/* One program of the command line (MPMD: several, separated by ':'). */
typedef struct wr_app {
  long np; /* -1: not given */
  const char *host_args[WR_MAX_LIST];
  int nhost_args;
  const char *hostfile;
  char **program; /* its argv (not NULL-terminated: nprogram words) */
  int nprogram;
  const char **words; /* its Open MPI options, word for word */
  int *place;         /* per word: WR_WORD_* */
  int nwords;
} wr_app;

typedef struct wr_opts {
  long np;                            /* the first program's -np; -1: one rank per slot */
  long per_node;                      /* -N; -1 when not given */
  const char *host_args[WR_MAX_LIST]; /* the first program's -H */
  int nhost_args;
  const char *hostfile;         /* the first program's */
  const char *default_hostfile; /* --default-hostfile */
  const char *map_by, *bind_to, *rank_by;
  const char *cpu_placement;      /* an option that asks Open MPI for a CPU placement, or NULL */
  const char *mpirun_only;        /* the first other option only mpirun carries out (for srun) */
  const char *path_word;          /* --path as typed, or NULL */
  const char *np_twice;           /* -np as typed when a program gives it twice, or NULL */
  const char *v5_only;            /* the first option of Open MPI 5's alone (--display ...), as
                                     typed: refused under 4.1 (plan.c) */
  long npersocket, cpus_per_proc; /* -1 when not given */
  weftx_ompi_cmdline cl;          /* the placement options, for the Open MPI model */
  wr_pair cmd_mca[WR_MAX_LIST];   /* MCA parameters the command line sets, in order */
  const char *cmd_mca_from[WR_MAX_LIST];
  int cmd_mca_app[WR_MAX_LIST];
  int ncmd_mca;
  int report_bindings, json, dry_run, check;
  const char *display[WR_MAX_LIST]; /* --display-map and its kin, as typed */
  int ndisplay;
  const char *topology;               /* FILE for every host */
  wr_pair host_topology[WR_MAX_LIST]; /* host=FILE */
  int nhost_topology;
  long gpus_per_node;         /* -1: probe */
  const char *gpu_visibility; /* all | own | none */
  const char *nccl_preset;    /* auto | none | FAMILY; NULL: auto */
  const char *xvars[WR_MAX_X];
  int nxvars;
  wr_pair mca[WR_MAX_LIST]; /* --mca and --gmca */
  int nmca;
  int tag_output, timestamp_output, oversubscribe, allow_run_as_root;
  const char *engine; /* auto | mpirun | srun; NULL: auto */
  const char *output_filename;
  long timeout;          /* seconds; 0: none */
  double host_timeout;   /* --host-timeout seconds; 0: WR_HOST_TIMEOUT_S */
  double launch_timeout; /* --launch-timeout seconds; 0: WR_LAUNCH_TIMEOUT_S, -1: none */
  int stack_traces;      /* --get-stack-traces */
  int timeout_report;    /* --report-state-on-timeout, --get-stack-traces */
  long preempt_grace;    /* --preempt-grace seconds; -1: weft-rank's default */
  long restarts;         /* --restarts N: whole-job restarts; 0: none */
  int restart_on;        /* WR_RESTART_ON_*: what a restart follows */
  int restart_on_given, restart_wait_given;
  long min_hosts, max_hosts;     /* --min-hosts, --max-hosts; 0: not given */
  const char *host_discovery;    /* --host-discovery CMD, or NULL */
  long discovery_timeout;        /* --host-discovery-timeout seconds */
  long restart_wait;             /* --restart-wait: seconds to wait for --min-hosts */
  const char *checkpoint_dir;    /* --checkpoint-dir DIR, or NULL: under the job directory */
  double monitor;                /* --monitor: seconds between samples; 0: off */
  const char *monitor_out;       /* --monitor-out DIR */
  const char *monitor_prom;      /* --monitor-prom DIR */
  char job[300];                 /* the job's name in Prometheus labels: "HOST:PID" of weftrun */
  int quiet;                     /* -q: no launch line, no closing figures */
  double started;                /* weftrun's start (weftx_monotonic()), for the launch line */
  const char *pass[WR_MAX_LIST]; /* other Open MPI options passed through, with their arguments */
  int npass;
  int version, help, help_man, help_man_exit, verbose;
  wr_app apps[WR_MAX_APPS];
  int napps;
  char **program; /* the first program's argv */
  int nprogram;
  char **owned; /* strings the options own */
  int nowned;
} wr_opts;

/* options.c */
extern const wt_opt wr_options[];
void wr_opts_init(wr_opts *o);
/* Parse argv into o; on error print one line and return WR_EXIT_USAGE. */
int wr_opts_parse(wr_opts *o, int argc, char **argv);
/* The option that asks Open MPI for a placement of its own (--map-by core, --cpu-set,
 * ...), as typed; NULL when there is none. */
const char *wr_opts_cpu_mapping(const wr_opts *o);
void wr_opts_free(wr_opts *o);
void wr_usage(FILE *out);

/* signals.c: SIGINT, SIGTERM and SIGHUP become one byte each (the signal number) on a
 * pipe, a stop request for weftx_proc_run(); never an asynchronous death. */
int wr_signals_install(void);   /* the pipe's read end, or -1 */
int wr_signals_pending(int fd); /* the signal waiting on fd (consumed), or 0 */
/* A stop request as if signal \p sig had come (SIGPIPE: weftrun's output is gone). */
void wr_signals_request(int sig);

/* jobdir.c: the job's private directory, $TMPDIR/weft-PID-XXXXXX (mode 0700), made
 * on first use; every file weftrun writes for the job is in it, and it goes with the
 * job (on success, errors and signals; only a SIGKILL of weftrun leaves it). */
typedef struct wr_jobdir {
  char path[4096]; /* "" until made */
  char **files;    /* what is in it, to remove */
  int nfiles;
} wr_jobdir;
/* A new file NAME in it, open for writing; its path in \p path. NULL with \p why. */
FILE *wr_jobdir_file(wr_jobdir *d, const char *name, char *path, size_t len, char *why,
                     size_t whylen);
/* The name the directory has or will have ("$TMPDIR/weft-PID-XXXXXX" before it is made). */
void wr_jobdir_name(const wr_jobdir *d, char *buf, size_t len);
/* What a dry run checks for the launch it stands for: that the private directory can be
 * made (it is, and removed at once); WR_EXIT_ENGINE with a line on stderr otherwise. */
int wr_jobdir_try(const wr_jobdir *d);
void wr_jobdir_remove(wr_jobdir *d);
/* Remove \p name in directory \p at (AT_FDCWD) with all it holds, following no link. */
void wr_jobdir_rmtree(int at, const char *name, int depth);

/* Where a host's topology came from. */
typedef enum wr_topo_from {
  WR_TOPO_FILE = 1, /* --topology (HOST=)FILE */
  WR_TOPO_PROBED,   /* the remote probe */
  WR_TOPO_HERE,     /* this machine: the host is weftrun's own */
  WR_TOPO_ASSUMED,  /* this machine's, assumed for a remote host not probed */
} wr_topo_from;

/* One host of the job: what the user said of it (hosts/hosts.c), then what is known of
 * it (hosts/facts.c). The plan reads it and never changes it. */
typedef struct wr_host {
  const char *name;           /* validated, as Open MPI names it; belongs to the inventory */
  const char *typed;          /* the full name when Open MPI shortens it, else NULL */
  int index;                  /* position in the user's list */
  int slots;                  /* given (-H host:N, slots=N, listed twice); 0: not given */
  int ompi_slots, ompi_given; /* Open MPI's count of them (weftx_host) */
  int slots_max;              /* max_slots; 0: none */
  int local;                  /* weftrun's own host (mpirun's): by name, or its address */
  char unresolved[128];       /* why the name does not resolve (a dry run goes on), or "" */
  const char *file;           /* its --topology file, or NULL */
  const weftx_topo *topo;     /* its topology (never NULL after hosts/facts.c) */
  wr_topo_from from;
  int gpus;                /* GPUs: of topo, or --gpus-per-node's N when trusted */
  int gpus_trusted;        /* gpus is --gpus-per-node's */
  char machine_type[64];   /* Google Cloud: "" when unknown */
  char physical_host[256]; /* "" without compact placement */
  char *gpus_allowed;      /* the GPUs its ranks may have ("3-4", "" none), NULL: all */
  const char *gpus_from;   /* who says so: "Slurm job 12", "CUDA_VISIBLE_DEVICES" */
} wr_host;

/* The MCA parameters that decide placement, as mpirun will see them (hosts/mca.c). */
typedef struct wr_mca {
  weftx_ompi_mca m;
  int fixed[WEFTX_OMPI_MCA_COUNT]; /* set by the override file */
  int default_hostfile_builtin;    /* orte_default_hostfile is Open MPI's own default */
  char **strings;
  int nstrings;
} wr_mca;

typedef struct wr_topo_entry wr_topo_entry;
typedef struct wr_gcp wr_gcp;

/* The hosts and their facts, and what belongs to them. */
#define WR_OMPI_DEFAULT 401 /* without mpirun (srun, --dry-run): Open MPI 4.1's rules */
#define WR_OMPI_NOT (-1)
typedef struct wr_inventory {
  weftx_hostlist *hl; /* owns the names */
  weftx_hosts_origin origin;
  int nhosts;
  wr_host *hosts;       /* as the user gave them */
  wr_topo_entry *topos; /* loaded topologies, by file */
  int ntopos;
  wr_gcp *gcp;       /* --nccl-preset on this VM */
  char **preset_env; /* its variables as "KEY=VALUE", for the plan */
  int npreset_env;
  wr_mca mca; /* Open MPI's placement parameters */
  int keep_fqdn;
  int *app_hosts[WR_MAX_APPS]; /* the hosts each program may use (indices); NULL: all */
  int app_nhosts[WR_MAX_APPS];
  const char *slurm_job;        /* SLURM_JOB_ID inside an allocation, else NULL */
  int no_mapper;                /* the engine (srun) has no Open MPI mapper: the agents bind
                                   every rank, to Open MPI's layout where it is that */
  const char *default_hostfile; /* the hosts came from Open MPI's default hostfile, this one */
  char gpus_from[64];           /* the wr_host.gpus_from they share */
  int ompi_version; /* the engine's Open MPI, 401 or 500 (MAJOR*100+MINOR), whose placement
                      rules the plan models (hosts/ompi-version.c); WR_OMPI_NOT: mpirun is
                      not Open MPI's */
  char *probe_said; /* the probe failed before any host answered: the engine's
                                 * account and weftrun's line, not yet said (main.c says
                                 * them, or names the hosts the engine cannot reach) */
} wr_inventory;

/* The engine that starts the job (engine/), chosen right after the hosts: the probe, the
 * check and the job run through it. */
typedef enum wr_engine_kind {
  WR_ENGINE_MPIRUN = 1,
  WR_ENGINE_SRUN,
  WR_ENGINE_HYDRA
} wr_engine_kind;
typedef struct wr_engine {
  wr_engine_kind kind;
  const char *name; /* "mpirun", "srun" or "hydra" */
  char why[160];    /* how it was chosen: "--engine srun", "auto: ..." */
  char path[4096];  /* the program; its name alone when not found (dry run) */
  char call[4096];  /* its argv[0], as the user would type it: $WEFT_MPIRUN
                                 * ($WEFT_SRUN) as given, else the bare name, looked up on
                                 * the same PATH at exec; mpirun takes an absolute argv[0]
                                 * for --prefix and puts its bin/ and lib/ at the front of
                                 * every rank's PATH and LD_LIBRARY_PATH */
  int found;
  char agent[4096];                /* weft-rank */
  const char *hostfile;            /* where wr_engine_hostfile()'s text will be */
  const char *host_xml;            /* this host's XML for its ranks, or NULL */
  const char *control;             /* the control channel's ADDR:PORT, or NULL (--dry-run) */
  const wt_agent_args *agent_args; /* what the agents get besides the plan's, or NULL */
} wr_engine;

/* The plan (plan/). Who places the ranks: */
typedef enum wr_mode {
  WR_MODE_GPU = 1, /* weft: one rank per GPU, bound next to it (weft-rank binds) */
  WR_MODE_OMPI,    /* Open MPI's layout of the user's own options: mpirun's
                                   (it binds), or the model's under srun (weft-rank binds) */
} wr_mode;

typedef struct wr_plan_host {
  const wr_host *host; /* its facts */
  int slots;           /* given, else its GPUs or cores (the policy's slots) */
  int cap;             /* ranks it takes without oversubscribing */
  int count;           /* ranks planned on it */
  int *per_app;        /* of them, the ranks of each program (napps) */
  int ompi_slots;      /* Open MPI's slots of it (WR_MODE_OMPI) */
} wr_plan_host;

typedef struct wr_plan {
  wr_mode mode;
  char mode_why[256];     /* why this mode: "no host has a GPU", "--map-by core", ... */
  int mpirun_binds;       /* WR_MODE_OMPI under mpirun: mpirun maps and binds, and the
                                   ranks get mpirun's environment */
  char departure[512];    /* WR_MODE_GPU: how the layout differs from mpirun's, or "" */
  weftx_policy pol;       /* WR_MODE_GPU */
  weftx_ompi_policy ompi; /* WR_MODE_OMPI: Open MPI's resolved policy */
  int by_node;            /* ranks numbered round-robin over the hosts */
  int np;
  int napps;
  int nhosts;
  wr_plan_host *hosts;    /* in rank order (Open MPI's node order), hosts without ranks last */
  int ordered;            /* sorted by physical_host */
  int oversub;            /* some host has more ranks than its cap */
  weftx_plan_rank *ranks; /* np of them; .host indexes hosts */
  int *rank_app;          /* the program of each rank */
  char **env;             /* "KEY=VALUE" the plan shows: -x values, the preset's */
  int nenv;
} wr_plan;

/* The job's network (plan/network.c), chosen once and handed to every rank. */
typedef struct wr_net {
  char ifname[32]; /* "" for a job on this host alone */
  char ifaddr[64];
  char addr[256]; /* MASTER_ADDR */
  int port;       /* MASTER_PORT */
} wr_net;

/* One attempt of the job, as the restart loop (restart/) needs it: the hosts it was
 * given, what became of it. Filled by main.c's pipeline and wr_run(). */
#define WR_ATTEMPT_LOST_MAX 64
typedef struct wr_given_host {
  char name[256];
  int slots, max_slots; /* as given; 0: not given */
} wr_given_host;
typedef struct wr_attempt {
  wr_given_host *given; /* the hosts the pipeline took (inventory order) */
  int ngiven;
  int ran;           /* the engine's command was run */
  int end;           /* the supervisor's verdict (wr_end, supervise.h) */
  int np, nhosts;    /* its world size and hosts with ranks */
  double begun;      /* weftx_monotonic() when the attempt began */
  double running;    /* when its last rank started; 0: not all did */
  double verdict_at; /* when the supervisor decided the end (a loss found); 0: none */
  double ended;      /* when wr_run() returned */
  char lost[WR_ATTEMPT_LOST_MAX][256]; /* hosts lost or preempted */
  int nlost;
  int code; /* its exit status */
  /* a restart: said in one line once its ranks have all started (run.c) */
  int number, of;  /* restart number/of (1..); 0: the first attempt */
  char cause[600]; /* what ended the one before: "vnode2 was lost (75)" */
  double down_at;  /* when the one before was found ending */
  int prev_np;     /* its world size */
  /* --monitor-out: one timeline for the job, the restarts appending to it */
  int mon_made;  /* this job's timeline is there (an earlier attempt made it) */
  double mon_t0; /* its clock's zero (weftx_monotonic()) */
} wr_attempt;

/* run.c: the run stage: the hostfile and this host's XML into the job directory, the
 * control channel opened, the engine's command run under supervision; the exit status. */
int wr_run(const wr_plan *p, const wr_opts *o, const wr_net *net, wr_engine *e, wr_inventory *inv,
           wr_jobdir *dir, int stop_fd, wr_attempt *att);

#endif /* WEFTRUN_H */
