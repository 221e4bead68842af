/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hosts and facts stages: the job's hosts as Open MPI takes them
 * (hosts.c, with Open MPI's MCA parameters: mca.c), then all that is learnt
 * of them, the only I/O about hosts weftrun does (facts.c): their
 * topologies, through the remote probe (probe.c) where needed, this VM's
 * Google Cloud facts and preset (gcp.c), a Slurm job's GPUs (slurm.c). What
 * they make is the wr_inventory of weftrun.h.
 */
#ifndef WR_HOSTS_H
#define WR_HOSTS_H

#include "weftrun.h"

/* hosts.c: -H, --hostfile, Open MPI's default hostfile, Slurm or this host; each
 * host's given slots, whether it is this one, its --topology file. WR_EXIT_*. */
int wr_hosts_gather(const wr_opts *o, wr_inventory *inv);
/* hosts.c: whether two host names are one host: the same name (any case), or one is the
 * other's first label ("vm-a" and "vm-a.c.proj.internal"); addresses only as written. */
int wr_same_host(const char *a, const char *b);

/* mca.c: the MCA parameters that decide placement, as mpirun will see them (command
 * line, environment, parameter files; wr_mca in weftrun.h). WR_EXIT_*. */
int wr_mca_gather(const wr_opts *o, wr_mca *m);
void wr_mca_free(wr_mca *m);

/* facts.c: the hosts' topologies (files, the probe, this machine), Google Cloud facts,
 * this VM's preset and, in a Slurm job, each host's GPUs (slurm.c). WR_EXIT_*, or 128+N
 * when stopped by signal N. */
int wr_facts_gather(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                    int stop_fd);
/* Each host's topology: its --topology file, else paths[i] (its probed XML, may be
 * NULL), else this machine's; and its GPUs. WR_EXIT_*. */
int wr_facts_topologies(const wr_opts *o, wr_inventory *inv, char *const *paths);
/* All that the inventory holds (its hosts' topologies, the preset, the MCA parameters). */
void wr_inventory_free(wr_inventory *inv);

/* probe.c: remote hosts' hwloc XML (files in the job directory, into paths[i]) and
 * their Google Cloud facts (into hosts[i]), through the engine and "weft-rank --probe".
 * WR_EXIT_*, or 128+N when stopped by signal N. When the engine failed, its account of
 * the failure and weftrun's line are not said but left in \p said (free()). */
int wr_probe(const wr_opts *o, const wr_engine *e, wr_host *const *hosts, int n, wr_jobdir *dir,
             int stop_fd, char **paths, char **said);
/* One probed host's output (XML, then maybe the GCE line) as "probe-I.xml" in the job
 * directory, its path into *path (allocated); 0 or -1 (said on stderr). */
int wr_probe_save(wr_host *h, int i, const char *buf, size_t len, wr_jobdir *dir, char **path);

/* ompi-version.c: which Open MPI \p mpirun is (NULL: none), from WEFT_OMPI_VERSION, weft's
 * cache or `mpirun --version`, into \p version (MAJOR*100+MINOR; WR_OMPI_DEFAULT without
 * one, WR_OMPI_NOT when it is not Open MPI's); main.c asks it between the facts and the
 * plan. WR_EXIT_* or 128+N when stopped by signal N (said on stderr). */
int wr_ompi_version(const char *mpirun, int stop_fd, int *version);

/* slurm.c: the GPUs each host's ranks may have: those the Slurm job was given there
 * (scontrol show job -d), within a CUDA_VISIBLE_DEVICES of the user's. WR_EXIT_*. */
int wr_slurm_gpus(const wr_opts *o, wr_inventory *inv, int stop_fd);
/* What Slurm says of a job now (scontrol show job). */
typedef struct wr_slurm_job {
  char state[32];   /* JobState= ("RUNNING", "NODE_FAIL"); "" when Slurm forgot the job */
  char reason[64];  /* Reason= ("None", "NodeDown") */
  char nodes[4096]; /* NodeList= ("vnode[0-1]"); "" when not known */
} wr_slurm_job;
/* Does Slurm job \p job still run (its allocation stands)? 1, 0, or -1 when scontrol
 * cannot say (within 10 s), with \p why; what it said into \p j. */
int wr_slurm_alive(const char *job, int stop_fd, wr_slurm_job *j, char *why, size_t whylen);

/* gcp.c: --nccl-preset on this VM: reserved cores and variables for the plan, the
 * checks (warnings), this VM's Google Cloud facts. */
int wr_gcp_prepare(const wr_opts *o, int nhosts, wr_gcp **out); /* WR_EXIT_* */
const char *wr_gcp_reserved_cpus(const wr_gcp *g);
int wr_gcp_env(const wr_gcp *g, char ***env, int *n);            /* "KEY=VALUE", allocated */
const weftx_env *wr_gcp_preset_env(const wr_gcp *g);             /* with origins; NULL: none */
const char *wr_gcp_unresolved(const wr_gcp *g, const char *key); /* why KEY holds a placeholder */
const char *wr_gcp_overrides(const wr_gcp *g,
                             const char *key); /* the preset the user's KEY beats */
int wr_gcp_local(const wr_gcp *g, char *mt, size_t mtlen, char *ph, size_t phlen); /* 1 on GCE */
void wr_gcp_print(const wr_gcp *g, FILE *out);
void wr_gcp_destroy(wr_gcp *g);

#endif /* WR_HOSTS_H */
