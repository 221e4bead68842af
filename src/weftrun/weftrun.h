/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's internal interface: the parsed command line, the job plan, the
 * engine that turns the plan into an mpirun command, and the exit codes.
 */
#ifndef WEFTRUN_H
#define WEFTRUN_H

#include <weftx.h>

#include "opt.h"

/* Exit codes of weftrun itself (the man page's EXIT STATUS is the contract);
 * a failed rank's own code (128+N for signal N) is passed through instead. */
#define WR_EXIT_OK       0
#define WR_EXIT_USAGE    2   /* bad option or option value */
#define WR_EXIT_HOSTS    65  /* bad hostfile, -H list or Slurm node list */
#define WR_EXIT_NOINPUT  66  /* a file named on the command line cannot be read */
#define WR_EXIT_PLACE    67  /* the placement asked for does not fit the hosts */
#define WR_EXIT_NOHOST   68  /* a host named in --topology host=FILE is not in the job */
#define WR_EXIT_NOGPU    69  /* GPUs asked for (--map-by gpu) on a host without any */
#define WR_EXIT_ENGINE   70  /* mpirun or weft-rank cannot be started, or mpirun failed alone */
#define WR_EXIT_HOSTLOST 75  /* a host was lost during the job (its daemon stopped answering) */
#define WR_EXIT_TIMEOUT  124 /* --timeout expired: the job was ended */

/* Upper bounds that keep every list fixed-size and every wait bounded. */
#define WR_MAX_LIST 256

typedef struct wr_pair { const char *key, *value; } wr_pair;

typedef struct wr_opts {
  long np;                      /* -1: one rank per slot */
  long per_node;                /* -N; -1 when not given */
  const char *host_args[WR_MAX_LIST];
  int nhost_args;
  const char *hostfile;
  const char *map_by, *bind_to, *rank_by;
  int report_bindings, json, dry_run;
  const char *topology;         /* FILE for every host */
  wr_pair host_topology[WR_MAX_LIST]; /* host=FILE */
  int nhost_topology;
  long gpus_per_node;           /* -1: probe */
  const char *gpu_visibility;   /* all | own | none */
  const char *nccl_preset;      /* auto | none | FAMILY; NULL: auto */
  const char *xvars[WR_MAX_LIST];
  int nxvars;
  wr_pair mca[WR_MAX_LIST];
  int nmca;
  int tag_output, timestamp_output, oversubscribe, allow_run_as_root;
  const char *output_filename;
  long timeout;                 /* seconds; 0: none */
  long preempt_grace;           /* --preempt-grace seconds; -1: weft-rank's default */
  const char *pass[WR_MAX_LIST]; /* Open MPI options passed through, with their arguments */
  int npass;
  int version, help, help_man, verbose;
  char **program;               /* argv of the program, NULL-terminated */
  int nprogram;
} wr_opts;

/* options.c */
extern const weft_opt wr_options[];
void wr_opts_init(wr_opts *o);
/* Parse argv into o; on error print one line and return WR_EXIT_USAGE. */
int wr_opts_parse(wr_opts *o, int argc, char **argv);
void wr_usage(FILE *out);

/* plan.c: hosts, their topologies and every rank's placement. */
typedef struct wr_job wr_job;
int wr_job_build(const wr_opts *o, wr_job **out);   /* returns a WR_EXIT_* code */
void wr_job_destroy(wr_job *j);
int wr_job_print(const wr_job *j, const wr_opts *o, FILE *out); /* --dry-run / report */
const weftx_plan *wr_job_plan(const wr_job *j);
int wr_job_nhosts(const wr_job *j);
int wr_job_np(const wr_job *j);
int wr_job_by_node(const wr_job *j);
int wr_job_count(const wr_job *j, int h);
int wr_job_slots(const wr_job *j, int h);
int wr_job_oversubscribed(const wr_job *j); /* some host has more ranks than cores/GPUs */
int wr_job_ordered(const wr_job *j);        /* hosts ordered by physical_host (not as given) */
const char *wr_job_host(const wr_job *j, int h);
const char *wr_job_host_file(const wr_job *j, int h); /* NULL: the host's own hardware */
const weftx_topo *wr_job_topo(const wr_job *j, int h);
const weftx_policy *wr_job_policy(const wr_job *j);
int wr_job_host_is_local(const wr_job *j, int h);
int wr_job_rank_host(const wr_job *j, int r);
int wr_job_add_env(wr_job *j, const char *key, const char *value); /* shown in the plan JSON */

/* probe.c: each remote host's hwloc XML, through mpirun and "weft-rank --probe",
 * into temporary files paths[i] (the caller unlinks and frees them), and its GCE
 * facts into gce[i] (may be NULL; left as they are for a host not on GCE).
 * Returns a WR_EXIT_* code. */
typedef struct wr_gce {
  char machine_type[64];        /* "" when unknown (not on GCE) */
  char physical_host[256];      /* "" without compact placement */
} wr_gce;
int wr_probe(const wr_opts *o, const char *const *hosts, int n, char **paths, wr_gce *gce);

/* gcp.c: --nccl-preset on this VM: sets pol->reserved_cpus, prints the checks;
 * the preset's variables go to --dry-run and the plan JSON. */
typedef struct wr_gcp wr_gcp;
int wr_gcp_prepare(const wr_opts *o, int nhosts, weftx_policy *pol, wr_gcp **out); /* WR_EXIT_* */
int wr_gcp_add_env(const wr_gcp *g, wr_job *j);       /* the preset's variables, wr_job_add_env() */
int wr_gcp_local(const wr_gcp *g, wr_gce *out);       /* this host's GCE facts; 1 when on GCE */
void wr_gcp_print(const wr_gcp *g, FILE *out);
void wr_gcp_destroy(wr_gcp *g);

/* master.c: interface, MASTER_ADDR and MASTER_PORT for the job. */
typedef struct wr_master {
  char ifname[32];  /* "" for a job on this host alone */
  char ifaddr[64];
  char addr[256];   /* MASTER_ADDR */
  int port;         /* MASTER_PORT */
} wr_master;
int wr_master_choose(const wr_job *j, wr_master *m); /* returns a WR_EXIT_* code */

/* hostxml.c: this host's live topology as XML for its ranks, in a private temporary
 * directory (path "" when there is none to give); removed again by wr_hostxml_remove(). */
void wr_hostxml_create(const wr_job *j, char *path, size_t len);
void wr_hostxml_remove(char *path);

/* engine.c: the mpirun command line for a job. */
typedef struct wr_argv { char **v; int n, cap; } wr_argv;
int wr_argv_add(wr_argv *a, const char *s);
void wr_argv_free(wr_argv *a);
int wr_engine_argv(const wr_job *j, const wr_opts *o, const char *mpirun, const char *rank_agent,
                   const wr_master *m, const char *host_xml, wr_argv *out);
const char *wr_find_rank_agent(char *buf, size_t len);
const char *wr_find_mpirun(char *buf, size_t len);

/* run.c: run the command, watch for failed ranks, apply the timeout and signals. */
int wr_run(const wr_job *j, const wr_opts *o, char **argv); /* j may be NULL */

#endif /* WEFTRUN_H */
