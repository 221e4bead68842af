/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hosts of a job: -H/--host strings, Open MPI hostfiles, Slurm node lists,
 * and host name validation.
 *
 * Everything here is pure text processing (no DNS, no ssh): a weftx_hostlist is
 * an ordered list of validated host names with their slots, built from what
 * the user typed, in mpirun's order of precedence. A name that is accepted
 * contains only letters, digits, '-', '_', '.' (or is an IPv4/IPv6 literal),
 * never starts with '-', and so can be handed to ssh or mpirun as one argument
 * without reaching a shell unquoted.
 *
 * Errors are negative WEFT_E* codes with a one-line reason in a caller's
 * \p why buffer: "hosts.txt:3: 'slots=x' is not a number; write slots=N
 * with N from 1 to 100000".
 */
#ifndef WEFTX_HOSTS_H
#define WEFTX_HOSTS_H

#include <stdio.h>

#include <weft/common.h>
#include <weft/errors.h>

#define WEFTX_HOSTNAME_MAX 253       /* longest accepted host name (RFC 1123) */
#define WEFTX_HOSTS_SLOTS_MAX 100000 /* largest slots=, max_slots= or :N accepted */
#define WEFTX_HOSTFILE_LINE_MAX 4096 /* longest hostfile line accepted */
#define WEFTX_SLURM_HOSTS_MAX 100000 /* most hosts a Slurm node list may expand to */

/* Where a host list came from (weftx_hostlist_origin()). */
typedef enum weftx_hosts_origin {
  WEFTX_HOSTS_NONE = 0, /* empty list, nothing added yet */
  WEFTX_HOSTS_CMDLINE,  /* -H/--host */
  WEFTX_HOSTS_HOSTFILE, /* --hostfile/--machinefile */
  WEFTX_HOSTS_SLURM,    /* SLURM_JOB_NODELIST */
  WEFTX_HOSTS_LOCAL,    /* the local host alone */
} weftx_hosts_origin;

/* One host. Read-only; belongs to its list. */
typedef struct weftx_host {
  const char *name;   /* validated host name or address, never NULL */
  const char *user;   /* "user" of "user@host", NULL when none */
  int slots;          /* slots; 0 when the input gave none ("the machine decides":
                            weftrun uses the GPU count, else the cores) */
  int max_slots;      /* max_slots=; 0 when not given (no limit) */
  int slots_given;    /* 1 when the user gave a number (":N", "slots=") or listed
                            the host more than once (each listing counts one slot) */
  int listed;         /* how many times the input named this host */
  const char *source; /* where it was first named: "hosts.txt:3", "-H", "SLURM_JOB_NODELIST" */
  int ompi_slots;     /* the slots Open MPI 4.1 gives it from this input: -H host alone is 1,
                            a hostfile line without slots= is 1 until its cores count */
  int ompi_given;     /* Open MPI counts ompi_slots as given (else: the host's cores) */
  const char *typed;  /* the name as typed when Open MPI shortens it (a.b.c -> a), or NULL */
} weftx_host;

/* How a host was named, for Open MPI's rules on slots (weftx_hostlist_add_ompi()). */
typedef enum weftx_host_form {
  WEFTX_HOST_DASH = 1, /* -H: no count is 1 slot; named again, one more (or the count) */
  WEFTX_HOST_LINE,     /* a hostfile line: no slots= is 1 slot, not given; named again,
                            one more slot, and a slots= then is an error */
} weftx_host_form;

typedef struct weftx_hostlist weftx_hostlist;

WEFT_BEGIN_DECLS

/** \brief An empty host list, allocated by the callee; free with weftx_hostlist_destroy().
 * \return 0 or WEFT_ENOMEM. */
int weftx_hostlist_create(weftx_hostlist **out);
/** \brief Free \p hl and every string it holds (NULL is fine). */
void weftx_hostlist_destroy(weftx_hostlist *hl);

/** \brief Number of distinct hosts. */
int weftx_hostlist_count(const weftx_hostlist *hl);
/** \brief Host \p i (0..count-1) in first-named order; NULL when out of range.
 * Belongs to \p hl, valid until the next change of \p hl. */
const weftx_host *weftx_hostlist_host(const weftx_hostlist *hl, int i);
/** \brief Index of the host called \p name (exact, case-insensitive), or -1. */
int weftx_hostlist_find(const weftx_hostlist *hl, const char *name);
/** \brief Sum of the slots of all hosts (hosts with slots 0 count 0). */
long weftx_hostlist_total_slots(const weftx_hostlist *hl);
/** \brief Where the hosts came from (set by the parsers and weftx_hosts_gather()). */
weftx_hosts_origin weftx_hostlist_origin(const weftx_hostlist *hl);
/** \brief "-H", "hostfile", "SLURM_JOB_NODELIST", "local host" or "none". */
const char *weftx_hosts_origin_name(weftx_hosts_origin o);

/** \brief Add a host, or merge it into the entry of the same name as mpirun does:
 * slots add up, the largest max_slots wins, \p listed counts up.
 * \param name    host, "user@host" allowed; validated with weftx_hostname_check().
 * \param slots   0 for "not given", else 1..WEFTX_HOSTS_SLOTS_MAX.
 * \param max_slots 0 for "not given"; when slots is 0 and max_slots is given,
 *                slots become max_slots (mpirun's rule).
 * \param source  "FILE:LINE", "-H", ...: copied.
 * \return 0; WEFT_ENAME (bad name) or WEFT_ERANGE with a reason in \p why; WEFT_ENOMEM. */
int weftx_hostlist_add(weftx_hostlist *hl, const char *name, int slots, int max_slots,
                       const char *source, char *why, size_t whylen);

/** \brief Add a host as Open MPI 4.1 reads -H and hostfiles (orte/util/dash_host,
 * orte/util/hostfile): the name shortened to its first label unless it is an address
 * or \p keep_fqdn, counts as \p form says (\p slots: 0 none, -1 "*" or "auto" of -H,
 * which leave the count to the host's cores), max_slots no lower than slots. The
 * fields of weftx_hostlist_add() are kept too.
 * \return 0; WEFT_EPARSE (a slot count for a host a hostfile already named, which
 * mpirun refuses) or WEFT_ENAME / WEFT_ERANGE with a reason; WEFT_ENOMEM. */
int weftx_hostlist_add_ompi(weftx_hostlist *hl, const char *name, weftx_host_form form, int slots,
                            int max_slots, int keep_fqdn, const char *source, char *why,
                            size_t whylen);

/** \brief Give host \p i \p slots when the input gave it none (slots 0): weftrun calls it
 * with the GPU count of a GPU host, else its cores. Hosts with slots keep them.
 * \return 0, or WEFT_EINVAL for a bad index or \p slots < 1. */
int weftx_hostlist_default_slots(weftx_hostlist *hl, int i, int slots);

/** \brief Parse one -H/--host argument "a,b:4,user@c,10.0.0.7:2,d:*" into \p hl, with
 * Open MPI's rules (weftx_hostlist_add_ompi(), WEFTX_HOST_DASH): ompi_slots 1 for an
 * entry without ":N". weft's own view stays: slots 0 for such an entry ("the machine
 * decides": weftrun gives GPU hosts one slot per GPU), 2 for a host named twice. IPv6
 * addresses are refused (Open MPI 4.1 cannot launch on them). May be called once per -H.
 * \return 0; WEFT_EPARSE / WEFT_ENAME / WEFT_ERANGE with "-H 'a,,b': empty host name; ..." in \p why. */
int weftx_hosts_parse_arg(weftx_hostlist *hl, const char *arg, char *why, size_t whylen);
/** \brief As weftx_hosts_parse_arg(), keeping full host names when \p keep_fqdn. */
int weftx_hosts_parse_arg_ompi(weftx_hostlist *hl, const char *arg, int keep_fqdn, char *why,
                               size_t whylen);

/** \brief Parse an Open MPI hostfile \p path into \p hl.
 * Grammar per line: `[user@]host [slots=N] [max_slots=M]` with the synonyms
 * `count=`/`cpu=` for slots and `max-slots=`/`slots_max=`/`slots-max=` for max_slots,
 * spaces allowed around '='; `#` starts a comment (whole line or trailing); blank
 * lines skipped; as Open MPI 4.1: a host named again gets one more slot, and a slot
 * count on a host named twice is an error (weftx_hostlist_add_ompi(), WEFTX_HOST_LINE).
 * Unknown keywords, Open MPI's relative (+n1) and excluded (^host) forms, bad numbers,
 * lines over WEFTX_HOSTFILE_LINE_MAX and files with no host are errors.
 * \return 0; WEFT_ENOENT / WEFT_EIO (cannot read), WEFT_EPARSE / WEFT_ENAME / WEFT_ERANGE
 *         with "FILE:LINE: what is wrong; what to do" in \p why; WEFT_ENOMEM. */
int weftx_hostfile_load(weftx_hostlist *hl, const char *path, char *why, size_t whylen);
/** \brief As weftx_hostfile_load() from an open stream; \p name is used in messages. */
int weftx_hostfile_read(weftx_hostlist *hl, FILE *f, const char *name, char *why, size_t whylen);

/** \brief Expand a Slurm node list ("gpu[01-04,07]", "a[1-2]-b[3-4]", "n1,n[3-5],x")
 * into \p hl, in Slurm's order (cartesian products vary the last bracket fastest),
 * keeping zero padding ("gpu[08-10]" gives gpu08 gpu09 gpu10).
 * \param tasks_per_node  SLURM_TASKS_PER_NODE ("2(x3),1") to give each host its
 *        slots, or NULL to leave slots 0.
 * \return 0; WEFT_EPARSE (unbalanced or nested brackets, bad range, more than
 *         WEFTX_SLURM_HOSTS_MAX hosts, counts not matching the hosts) / WEFT_ENAME with a reason. */
int weftx_hosts_parse_slurm(weftx_hostlist *hl, const char *nodelist, const char *tasks_per_node,
                            char *why, size_t whylen);

/** \brief Expand SLURM_TASKS_PER_NODE ("2(x3),1" = 2,2,2,1) into \p counts (up to \p max).
 * \param[out] n  how many counts. \return 0, WEFT_EPARSE, or WEFT_ERANGE when more than \p max. */
int weftx_slurm_tasks_per_node(const char *s, int *counts, int max, int *n, char *why,
                               size_t whylen);
/** \brief As weftx_slurm_tasks_per_node() for any per-node counts in that form
 * (SLURM_JOB_CPUS_PER_NODE, SLURM_STEP_TASKS_PER_NODE); \p name is the variable, for messages. */
int weftx_slurm_per_node(const char *name, const char *s, int *counts, int max, int *n, char *why,
                         size_t whylen);

/* ---- Slurm's GPUs (lib/hosts/slurm-gpus.c) ----
 * What Slurm 22.05 says about a job's GPUs, measured on weft-vcluster --slurm:
 * job steps get CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS ("0,1", the GPUs'
 * indices on the node), a batch script SLURM_JOB_GPUS, an salloc shell none
 * (only SLURM_GPUS_PER_NODE "2" or "h100:2" when --gpus-per-node was given);
 * "scontrol show job -d" lists each node's "GRES=gpu:2(IDX:0-1)". */

#define WEFTX_SLURM_GPUS_MAX 256 /* GPUs of one node, and 1 + the largest index, accepted */

/** \brief Parse GPU indices as Slurm writes them: "0,1,4" (SLURM_JOB_GPUS, SLURM_STEP_GPUS,
 * CUDA_VISIBLE_DEVICES set by Slurm) or with ranges "0-1,4" (scontrol's IDX:). An empty
 * string is no GPU. \p idx gets them in the order given, each at most once.
 * \param name  what \p s is ("SLURM_STEP_GPUS"), for messages.
 * \return 0; WEFT_EPARSE (not an index, a range backwards, an index twice, index >=
 *         WEFTX_SLURM_GPUS_MAX) or WEFT_ERANGE (more than \p max) with a reason in \p why. */
int weftx_slurm_gpu_indices(const char *name, const char *s, int *idx, int max, int *n, char *why,
                            size_t whylen);

/** \brief Write \p n GPU indices as a list, runs of consecutive ones as ranges ("0-1,4"),
 * "" for none. \return 0, or WEFT_ERANGE when \p buf is too small. */
int weftx_slurm_gpu_list(const int *idx, int n, char *buf, size_t len);

/** \brief The number of GPUs in a value of salloc/sbatch/srun's --gpus* options as Slurm exports
 * them (SLURM_GPUS_PER_NODE, SLURM_GPUS, SLURM_GPUS_PER_TASK): "2", "h100:2", "a100:1,v100:2" (3).
 * \return 0 with \p count >= 0, or WEFT_EPARSE with a reason. */
int weftx_slurm_gpus_count(const char *name, const char *s, int *count, char *why, size_t whylen);

/* The GPUs of a GRES string (weftx_slurm_gres_gpus()). */
typedef struct weftx_slurm_gres {
  int count;                     /* GPUs named: "gpu:2" 2, "gpu" 1; 0 without a gpu entry */
  char type[64];                 /* "h100" when every gpu entry names that type, else "" */
  int nidx;                      /* indices given in "(IDX:...)"; -1 when none are given */
  int idx[WEFTX_SLURM_GPUS_MAX]; /* the indices, in the order given */
} weftx_slurm_gres;

/** \brief The GPUs of a GRES list as scontrol, squeue and sinfo print it: "gpu:2",
 * "gres:gpu:2" or "gres/gpu:2" (TresPerNode), "gpu:h100:2(IDX:0-1)" (scontrol show job -d),
 * "gpu:8(S:0-1)" (sinfo %G), "gpu:2,nic:1" (other resources are skipped), "gpu(IDX:0-1)"
 * (a count from the indices), "(null)" or "" (none). Counts of several gpu entries add up.
 * \return 0, or WEFT_EPARSE with a reason (a count that disagrees with the indices too). */
int weftx_slurm_gres_gpus(const char *name, const char *s, weftx_slurm_gres *out, char *why,
                          size_t whylen);

/* One node of a Slurm job and the GPUs the job has there (weftx_slurm_job_gpus()). */
typedef struct weftx_slurm_node_gpus {
  char *name; /* the node */
  int count;  /* GPUs the job has on it; 0 when none */
  char *idx;  /* their indices on the node as a list ("3-4,6"), "" when
                                      none, NULL when Slurm gave a count without indices */
} weftx_slurm_node_gpus;

/** \brief The GPUs of a job on each of its nodes, from the text of "scontrol show job -d
 * JOBID": its detail lines "Nodes=vnode[0-2] CPU_IDs=0-1 Mem=0 GRES=gpu:2(IDX:0-1)" (one per
 * group of nodes with the same allocation; a node list expands as SLURM_JOB_NODELIST does;
 * no GRES, "GRES=" or "GRES=(null)" is no GPU). \p out is allocated by the callee, one entry
 * per node in the order named (none when the text has no detail line); free it with
 * weftx_slurm_job_gpus_free().
 * \return 0; WEFT_EPARSE with "scontrol show job -d, line N: ..." in \p why; WEFT_ENOMEM. */
int weftx_slurm_job_gpus(const char *text, weftx_slurm_node_gpus **out, int *n, char *why,
                         size_t whylen);
void weftx_slurm_job_gpus_free(weftx_slurm_node_gpus *v, int n);

/** \brief Is \p name an acceptable host: RFC 1123 name (labels of letters, digits, '-',
 * and '_', 1-63 characters, no leading/trailing '-'), an IPv4 or an IPv6 literal,
 * optionally preceded by "user@" (user: letters, digits, '.', '_', '-', no leading '-')?
 * Anything with spaces, shell metacharacters or a leading '-' is refused.
 * \return 0, or WEFT_ENAME with "'a;b': ';' is not allowed in a host name; ..." in \p why. */
int weftx_hostname_check(const char *name, char *why, size_t whylen);

/* The inputs of weftx_hosts_gather(), in order of precedence. */
typedef struct weftx_hosts_input {
  const char *const *host_args; /* the -H/--host arguments, in order */
  int nhost_args;
  const char *hostfile;             /* --hostfile/--machinefile, NULL when none */
  const char *slurm_nodelist;       /* getenv("SLURM_JOB_NODELIST") or NULL */
  const char *slurm_tasks_per_node; /* getenv("SLURM_TASKS_PER_NODE") or NULL */
  const char *local_host;           /* this host's name; NULL: gethostname() */
  int keep_fqdn;                    /* Open MPI's orte_keep_fqdn_hostnames */
} weftx_hosts_input;

/** \brief The job's hosts, as Open MPI 4.1 takes them: -H (then a hostfile given as
 * well is not read: mpirun takes the -H hosts and their counts); else the hostfile;
 * else the Slurm allocation; else the local host alone.
 * \p out is allocated by the callee; free with weftx_hostlist_destroy().
 * \return 0, or the first parser's error with its reason in \p why. */
int weftx_hosts_gather(const weftx_hosts_input *in, weftx_hostlist **out, char *why, size_t whylen);

WEFT_END_DECLS

#endif /* WEFTX_HOSTS_H */
