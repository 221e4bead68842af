/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Open MPI 4.1's placement, as a pure function: where mpirun 4.1 puts each
 * rank, in which order it numbers them, and what it binds each to, read from
 * ORTE's rmaps framework (rmaps_base_frame.c, rmaps_base_map_job.c,
 * round_robin/, ppr/, rmaps_base_ranking.c, rmaps_base_binding.c) and OPAL's
 * hwloc base (binding policy, the cpu list, the objects it counts).
 *
 * When weft departs from nothing (hosts without GPUs, or a CPU mapping asked
 * for), mpirun places and binds the ranks from the user's own options. This
 * model predicts what it will do, so that --dry-run shows it, each rank's agent
 * can check that Open MPI did what weftrun planned (and refuse loudly when not),
 * or bind itself so where no mpirun runs (srun), and ranks on GPU hosts can be
 * given the GPU nearest their binding.
 *
 * It works in three steps, as ORTE does:
 *   1. the policy: MCA parameters (files, environment, command line, already
 *      merged by the caller: weftx_ompi_mca) -> weftx_ompi_policy;
 *   2. the job: hosts (slots, topology) and app contexts -> which host each
 *      rank goes to and its number (weftx_ompi_job_map), and the binding policy
 *      that follows from it (defaults depend on the number of ranks and on
 *      oversubscription);
 *   3. one host: its ranks -> their bindings (weftx_ompi_node_bind), which each
 *      agent can evaluate on its own host from O(1) data.
 * What the model does not cover (SPAN modifiers, the dist mapper, rankfiles,
 * ppr patterns over several levels) is refused at step 1 with the reason.
 *
 * It is weft's one engine of CPU layouts: weftrun's plan under mpirun (which
 * places and binds, the agents check) and under srun (each agent binds as the
 * model says), and weft-topo and hosts weft places without a GPU to give
 * (weftx_map_host(): one host alone, as mpirun -np N there).
 */
#ifndef WEFTX_OMPI_H
#define WEFTX_OMPI_H

#include <stdio.h>

#include <weft/common.h>
#include <weft/errors.h>
#include <weftx/topo.h>
#include <weftx/map.h>

/* Mapping policies (ORTE_MAPPING_*), ranking policies (ORTE_RANK_BY_*) and binding
 * policies (OPAL_BIND_TO_*) with Open MPI's own numbers: 1 node/none, 2 board,
 * 3 numa, 4 socket, 5-7 L3/L2/L1 cache, 8 core, 9 hwthread, 10 slot/cpu-list. */
enum {
  WEFTX_OMPI_NODE = 1,
  WEFTX_OMPI_BOARD,
  WEFTX_OMPI_NUMA,
  WEFTX_OMPI_SOCKET,
  WEFTX_OMPI_L3,
  WEFTX_OMPI_L2,
  WEFTX_OMPI_L1,
  WEFTX_OMPI_CORE,
  WEFTX_OMPI_HWTHREAD,
  WEFTX_OMPI_SLOT,
  WEFTX_OMPI_SEQ = 20,
  WEFTX_OMPI_PPR = 23,
  WEFTX_OMPI_GPU = 30, /* weft's word, never Open MPI's: --map-by gpu, ppr:N:gpu, --bind-to
                          gpu-local (weftx_policy_parse() reads it; the model refuses it) */
};
#define WEFTX_OMPI_BIND_NONE WEFTX_OMPI_NODE   /* binding: 1 is "none" */
#define WEFTX_OMPI_BIND_CPUSET WEFTX_OMPI_SLOT /* binding: 10 is the cpu list */

/* Directives, in the bits above the policy, as ORTE and OPAL encode them. */
#define WEFTX_OMPI_MAP_NO_USE_LOCAL 0x0100
#define WEFTX_OMPI_MAP_NO_OVERSUB 0x0200
#define WEFTX_OMPI_MAP_SUBSCRIBE 0x0400 /* SUBSCRIBE_GIVEN: oversubscription said either way */
#define WEFTX_OMPI_MAP_GIVEN 0x4000
#define WEFTX_OMPI_RANK_FILL 0x2000
#define WEFTX_OMPI_RANK_GIVEN 0x4000
#define WEFTX_OMPI_BIND_IF_SUPPORTED 0x1000
#define WEFTX_OMPI_BIND_OVERLOAD 0x2000
#define WEFTX_OMPI_BIND_GIVEN 0x4000
#define WEFTX_OMPI_BIND_ORDERED 0x8000
#define WEFTX_OMPI_POLICY(x) ((x)&0x00ff)

/* ---- Step 1: the policy ---------------------------------------------------- */

/* The MCA parameters that decide placement, by their canonical names (synonyms
 * such as rmaps_ppr_n_pernode or hwloc_base_cpu_set are folded in). */
/* clang-format cannot keep an X-macro list as written: */
/* clang-format off */
#define WEFTX_OMPI_MCA_PARAMS(X)                                                     \
  X(MAPPING, "rmaps_base_mapping_policy") X(RANKING, "rmaps_base_ranking_policy")    \
  X(BINDING, "hwloc_base_binding_policy") X(BYCORE, "rmaps_base_bycore")             \
  X(BYNODE, "rmaps_base_bynode") X(BYSLOT, "rmaps_base_byslot")                      \
  X(PERNODE, "rmaps_base_pernode") X(N_PERNODE, "rmaps_base_n_pernode")              \
  X(N_PERSOCKET, "rmaps_base_n_persocket") X(PATTERN, "rmaps_base_pattern")          \
  X(CPUS_PER_PROC, "rmaps_base_cpus_per_proc")                                      \
  X(NO_SCHEDULE_LOCAL, "rmaps_base_no_schedule_local")                               \
  X(NO_OVERSUBSCRIBE, "rmaps_base_no_oversubscribe")                                 \
  X(OVERSUBSCRIBE, "rmaps_base_oversubscribe") X(BIND_TO_CORE, "hwloc_base_bind_to_core") \
  X(BIND_TO_SOCKET, "hwloc_base_bind_to_socket") X(CPU_LIST, "hwloc_base_cpu_list")  \
  X(HWTHREADS, "hwloc_base_use_hwthreads_as_cpus") X(SET_SLOTS, "orte_set_default_slots") \
  X(DEFAULT_HOSTFILE, "orte_default_hostfile") X(RANKFILE, "orte_rankfile")          \
  X(KEEP_FQDN, "orte_keep_fqdn_hostnames") X(RMAPS, "rmaps")                         \
  X(TOPO_FILE, "hwloc_base_topo_file") X(DIST_DEVICE, "rmaps_dist_device")
/* clang-format on */

#define WEFTX_OMPI_MCA_ENUM(id, name) WEFTX_OMPI_MCA_##id,
enum { WEFTX_OMPI_MCA_PARAMS(WEFTX_OMPI_MCA_ENUM) WEFTX_OMPI_MCA_COUNT };
#undef WEFTX_OMPI_MCA_ENUM

/* Their values as Open MPI resolves them (override file > command line >
 * environment > files > default): NULL when unset. Strings belong to the caller. */
typedef struct weftx_ompi_mca {
  const char *v[WEFTX_OMPI_MCA_COUNT];
  const char *from[WEFTX_OMPI_MCA_COUNT]; /* "--map-by", "OMPI_MCA_...", "FILE:LINE" */
} weftx_ompi_mca;

/* The parameter \p name (without OMPI_MCA_; a synonym is fine) stands for, or -1. */
int weftx_ompi_mca_id(const char *name);
/* Its canonical name. */
const char *weftx_ompi_mca_name(int id);

/* The placement options of mpirun's command line. Besides setting their MCA
 * parameter (which the caller folds into weftx_ompi_mca, as mpirun does), they set
 * the job's own policies, which win over the MCA ones (orted_submit.c): --bind-to
 * core with --oversubscribe does not allow overloading, where the same two as MCA
 * parameters do. */
typedef struct weftx_ompi_cmdline {
  const char *map_by, *rank_by, *bind_to;
  int pernode, npernode, npersocket, cpus_per_proc;
  int nolocal, oversubscribe, nooversubscribe;
  int version; /* whose rules: Open MPI MAJOR*100+MINOR, 401 (or 0) for 4.1, 500 for 5.0 */
} weftx_ompi_cmdline;

/* The policy: Open MPI's defaults (the MCA parameters, after rmaps and hwloc open)
 * and the job's own (the command line). After weftx_ompi_job_map() only the first
 * three fields count: the job's resolved policy. */
typedef struct weftx_ompi_policy {
  unsigned mapping; /* WEFTX_OMPI_* | WEFTX_OMPI_MAP_* directives */
  unsigned ranking; /* WEFTX_OMPI_* | WEFTX_OMPI_RANK_* */
  unsigned binding; /* WEFTX_OMPI_* | WEFTX_OMPI_BIND_*; 0: not set (defaults apply) */
  unsigned job_mapping, job_ranking, job_binding; /* the command line's; 0 when not given */
  int job_ppr_n, job_ppr_level, job_ppr_count;    /* with job_mapping PPR */
  int job_cpus_per_rank;                          /* --cpus-per-proc */
  int ppr_n;                                      /* with PPR: ranks per object ... */
  int ppr_level;                       /* ... of this level (WEFTX_OMPI_NODE .. HWTHREAD) */
  int ppr_count;                       /* without -np: the ranks are N per node (NODE), N per socket
                             (SOCKET), else the slots: mpirun looks for "node" or "socket"
                             in the pattern's text, so "2:n" counts slots */
  int cpus_per_rank;                   /* PE=n / --cpus-per-proc; 0 when not given */
  int hwthreads;                       /* hardware threads are cpus */
  int pernode, n_pernode, n_persocket; /* -N / --npernode / --npersocket beside a mapping */
  char cpu_list[256];                  /* --cpu-set / --cpu-list (logical cpus); "" when none */
  char set_slots[32]; /* orte_set_default_slots: "cores", "hwthreads", "sockets", "numas", N */
  int keep_fqdn;
  int version; /* whose rules (weftx_ompi_cmdline's): 0 or 401 Open MPI 4.1, 500 Open MPI 5.0 */
} weftx_ompi_policy;
/* Open MPI 5's rules (PRRTE's rmaps and hwloc base) instead of 4.1's (ORTE's). */
#define WEFTX_OMPI_V5(p) ((p)->version >= 500)

WEFT_BEGIN_DECLS

/** \brief The policy mpirun 4.1 derives from \p m, with its rules: prefixes of words
 * ("so" is socket), modifiers (PE=n, OVERSUBSCRIBE, NOOVERSUBSCRIBE), ppr patterns,
 * the deprecated flags (bynode, byslot, bycore, bind_to_core, ...), -N and
 * --npersocket, --cpus-per-proc, and the conflicts Open MPI refuses.
 * \p cl may be NULL (no placement option on the command line).
 * \return 0; WEFT_EINVAL for what mpirun refuses too, WEFT_ENOTSUP for what Open MPI
 * has and this model does not (SPAN, dist, multi-level ppr); a one-line reason in why. */
int weftx_ompi_policy_make(const weftx_ompi_mca *m, const weftx_ompi_cmdline *cl,
                           weftx_ompi_policy *p, char *why, size_t whylen);

/** \brief The policy as one word for weft-rank's command line, and back. The resolved
 * binding (after step 2) travels with it. \return 0 or WEFT_ERANGE / WEFT_EPARSE. */
int weftx_ompi_policy_format(const weftx_ompi_policy *p, char *buf, size_t len);
int weftx_ompi_policy_parse(const char *s, weftx_ompi_policy *p);

/** \brief "socket", "ppr:2:socket", "core:PE=2", ... for messages and --dry-run. */
const char *weftx_ompi_level_name(int level);
int weftx_ompi_describe(const weftx_ompi_policy *p, char *buf, size_t len);

/* ---- Step 2: the job -------------------------------------------------------- */

/* One host of the job, in Open MPI's node pool order: mpirun's own host first when
 * it is one of them, then as the hosts were given. */
typedef struct weftx_ompi_host {
  const weftx_topo *topo; /* its topology: for objects and, without slots, its cores */
  int slots;              /* slots given; 0: not given (orte_set_default_slots decides) */
  int slots_max;          /* max_slots; 0: none */
  int hnp;                /* mpirun runs here */
} weftx_ompi_host;

/* One app context (a colon-separated part of the command line). */
typedef struct weftx_ompi_app {
  int np;           /* 0: not given */
  const int *hosts; /* the hosts it may use (indices into the job's, ascending), or NULL: all */
  int nhosts;
  int hosts_given; /* -H or a hostfile named them (np is then needed unless slots were given) */
} weftx_ompi_app;

/* One rank of the result. */
typedef struct weftx_ompi_rank {
  int host; /* index into the hosts */
  int app;
  int local_rank; /* OMPI_COMM_WORLD_LOCAL_RANK */
} weftx_ompi_rank;

typedef struct weftx_ompi_job {
  int np;
  weftx_ompi_rank *ranks; /* np of them, by rank */
  int *order;             /* the hosts in the order Open MPI maps them: its nodes, first
                             to last (hosts without ranks left out) */
  int norder;
  int *slots;               /* every host's slots, as the mapper used them */
  int oversubscribed;       /* some host has more ranks than slots */
  weftx_ompi_policy policy; /* with the binding the defaults gave (binding never 0) */
} weftx_ompi_job;

/** \brief Map \p napps app contexts onto \p nhosts hosts as mpirun 4.1 does.
 * \p hnp_topo is mpirun's own topology (the defaults look at it).
 * \return 0 (\p out filled; free with weftx_ompi_job_clear()); WEFT_ENOFIT with mpirun's
 * reason (not enough slots, too many ranks for ppr, ...); WEFT_EINVAL; WEFT_ENOMEM. */
int weftx_ompi_job_map(const weftx_ompi_policy *p, const weftx_ompi_host *hosts, int nhosts,
                       const weftx_ompi_app *apps, int napps, const weftx_topo *hnp_topo,
                       weftx_ompi_job *out, char *why, size_t whylen);
void weftx_ompi_job_clear(weftx_ompi_job *j);

/* ---- Step 3: one host ------------------------------------------------------- */

/* A rank of one host, in local rank order. */
typedef struct weftx_ompi_bound {
  int app;
  hwloc_bitmap_t cpuset; /* where Open MPI binds it: every processor when not bound */
  int bound;             /* 0: not bound */
} weftx_ompi_bound;

/** \brief The bindings of the ranks of one host: \p counts[a] ranks of app a (in
 * app order), on a host with \p slots slots, topology \p t, under the resolved
 * policy \p p (a weftx_ompi_job's). \p out has sum(counts) entries, by local rank;
 * their cpusets are allocated (weftx_ompi_bound_clear()).
 * \return 0, WEFT_ENOFIT (Open MPI would refuse: overload), WEFT_ENOMEM. */
int weftx_ompi_node_bind(const weftx_topo *t, const weftx_ompi_policy *p, int slots,
                         const int *counts, int napps, weftx_ompi_bound *out, char *why,
                         size_t whylen);
void weftx_ompi_bound_clear(weftx_ompi_bound *b, int n);

/** \brief The GPUs of a host's \p n ranks (bindings \p b, by local rank) when the host has
 * at least \p n GPUs: in local rank order, each takes the free GPU whose cpus overlap its
 * binding most (lowest index among equals); else none (-1). 0 or WEFT_ENOMEM. */
int weftx_ompi_gpus(const weftx_topo *t, const weftx_ompi_bound *b, int n, int *gpu);

/** \brief Local rank \p local of \p n (bindings \p b) as weft sees it: its binding (\p real,
 * what the rank is really bound to, when known; else the predicted one), its GPU
 * (weftx_ompi_gpus(), with a note when the host has GPUs but too few, or when that GPU
 * is not one of \p gpus: the GPUs the ranks may have, "3-4", "" none, NULL all), its
 * NIC, NUMA nodes and cores. \p out is initialised (weftx_place_clear()). 0,
 * WEFT_ENOMEM, or WEFT_EINVAL for a \p gpus that is not a list. */
int weftx_ompi_place(const weftx_topo *t, const weftx_ompi_policy *p, const weftx_ompi_bound *b,
                     int n, int local, hwloc_const_cpuset_t real, const char *gpus,
                     weftx_place *out);

/** \brief mpirun's --report-bindings text for \p cpuset on \p t: "socket 0[core 1[hwt 0]]"
 * into \p what and "[./B][../..]" into \p map; 0, or 1 when \p cpuset is every processor
 * ("is not bound (or bound to all available processors)"). */
int weftx_ompi_binding_text(const weftx_topo *t, hwloc_const_cpuset_t cpuset, char *what,
                            size_t wlen, char *map, size_t mlen);

WEFT_END_DECLS

#endif /* WEFTX_OMPI_H */
