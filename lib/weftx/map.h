/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement: which GPU, cores, NUMA memory and NIC each local rank of a host gets.
 *
 * weftx_map_rank() is a pure function of (topology, policy, local rank, local
 * size): the launcher evaluates it for reports and dry runs, and every rank's
 * agent evaluates it again on its own host, so nothing ships a plan around.
 * A request that cannot be met is an error with a reason, never a silent wrap.
 */
#ifndef WEFTX_MAP_H
#define WEFTX_MAP_H

#include <stdio.h>

#include <weft/common.h>
#include <weft/errors.h>
#include <weftx/topo.h>

typedef enum weftx_map_by {
  WEFTX_MAP_AUTO = 0, /* gpu on hosts with GPUs, core otherwise */
  WEFTX_MAP_GPU,      /* one rank per GPU */
  WEFTX_MAP_CORE,     /* ranks over cores in order */
  WEFTX_MAP_NUMA,     /* ranks round-robin over NUMA nodes */
  WEFTX_MAP_PACKAGE,  /* ranks round-robin over packages */
  WEFTX_MAP_PPR,      /* ppr:N:OBJ: N ranks per object */
  WEFTX_MAP_SLOT,     /* Open MPI's by-slot: as core, for compatibility */
  WEFTX_MAP_NODE,     /* Open MPI's by-node: spreads over hosts; on one host as core */
} weftx_map_by;

typedef enum weftx_bind_to {
  WEFTX_BIND_DEFAULT = 0, /* gpu-local under map-by gpu, core otherwise */
  WEFTX_BIND_GPU_LOCAL,   /* the rank's share of the cores local to its GPU */
  WEFTX_BIND_CORE,
  WEFTX_BIND_NUMA,
  WEFTX_BIND_PACKAGE,
  WEFTX_BIND_NONE,
} weftx_bind_to;

typedef enum weftx_obj {
  WEFTX_OBJ_NONE = 0, WEFTX_OBJ_CORE, WEFTX_OBJ_NUMA, WEFTX_OBJ_PACKAGE, WEFTX_OBJ_GPU, WEFTX_OBJ_NODE,
} weftx_obj;

typedef struct weftx_policy {
  weftx_map_by map_by;
  weftx_bind_to bind_to;
  int ppr_n;              /* with WEFTX_MAP_PPR: ranks per object */
  weftx_obj ppr_obj;       /* with WEFTX_MAP_PPR: the object */
  int pe;                 /* cores per rank; 0: share the cores there are evenly */
  int oversubscribe;      /* allow more ranks than the policy's slots (cores/GPUs) */
  int use_hwthreads;      /* count hardware threads as cores */
  const char *reserved_cpus; /* OS processors never given to ranks ("8-21,112-125"), or NULL */
  const char *gpus;       /* the GPUs ranks may have, by index ("3-4,6": those a Slurm job
                           * was given), or NULL for all; "" for none. With a list, map-by
                           * gpu and its slots count only these, and auto is core without them */
} weftx_policy;

/* What one local rank gets. Clear with weftx_place_clear(). */
typedef struct weftx_place {
  int local_rank;
  int gpu;                /* GPU index in the topology, -1 for none */
  int nic;                /* NIC index in the topology, -1 for none */
  hwloc_bitmap_t cpuset;  /* processors to bind to (all processors for bind none) */
  hwloc_bitmap_t nodeset; /* NUMA nodes for memory (OS indexes); empty when unknown */
  int ncores;             /* cores in cpuset: OMP_NUM_THREADS */
  int bound;              /* 0 for bind none */
  char note[200];         /* what the rank should know about this placement
                           * ("oversubscribed: ...", "no PCI locality: ..."); "" when nothing */
} weftx_place;

WEFT_BEGIN_DECLS

/** \brief Fill \p p from --map-by and --bind-to strings as users type them
 * ("gpu", "core", "numa", "package", "slot", "ppr:2:numa", "ppr:1:package:pe=4",
 * "core:pe=2", "gpu:pe=8"; bind "gpu-local", "core", "numa", "package", "none").
 * Either may be NULL for the default. Open MPI modifiers after ':' such as
 * "PE=4", "OVERSUBSCRIBE" and "HWTCPUS" are understood ("socket" is "package",
 * "hwthread" is core with HWTCPUS).
 * Sets map_by, bind_to, ppr_n, ppr_obj and pe; sets oversubscribe and
 * use_hwthreads only when a modifier says so, and leaves reserved_cpus and gpus alone:
 * initialise \p p (e.g. to {0}) before the first call.
 * \return 0, or WEFT_EPARSE (malformed), WEFT_ENAME (unknown word; \p why names
 * the closest known one), WEFT_EINVAL (contradiction, e.g. map-by core with
 * bind-to gpu-local), with a one-line reason in \p why. */
int weftx_policy_parse(weftx_policy *p, const char *map_by, const char *bind_to,
                                  char *why, size_t whylen);

/** \brief The policy as weftrun would spell it ("gpu, bind gpu-local"); static storage per call site is not used: writes into \p buf. */
int weftx_policy_format(const weftx_policy *p, char *buf, size_t len);

/** \brief How many ranks this host can take under \p p without oversubscribing
 * (its slots): GPUs for map-by gpu (those of p->gpus), cores (or threads) otherwise, N x
 * objects for ppr. 0 when \p p does not fit \p t (a GPU of p->gpus it lacks). */
int weftx_map_slots(const weftx_topo *t, const weftx_policy *p);

/** \brief Place local rank \p local_rank of \p local_size on topology \p t.
 * \p out is initialised by the call (its bitmaps are allocated) on success;
 * free them with weftx_place_clear(). The rules: weft-topo(1), PLACEMENT.
 * \return 0; WEFT_ENOFIT with a reason in \p why (more ranks than GPUs, pe larger
 * than the cores there are, no such object, ...); WEFT_ENOGPU (map-by gpu or
 * bind-to gpu-local on a machine without GPUs); WEFT_EINVAL (a rank outside
 * 0..local_size-1, reserved_cpus or gpus that do not parse, a GPU in gpus that
 * the topology does not have, gpu-local without map-by gpu); WEFT_ENOMEM. On failure \p out holds no bitmaps. */
int weftx_map_rank(const weftx_topo *t, const weftx_policy *p, int local_rank,
                              int local_size, weftx_place *out, char *why, size_t whylen);
void weftx_place_clear(weftx_place *pl);

/* A whole job's plan, as weftrun --dry-run and weft-topo print it. */
typedef struct weftx_plan_host {
  const char *name;
  int slots;
  const weftx_topo *topo;       /* not owned */
  const char *topology;        /* file name shown in JSON, or NULL for "live" */
  const char *gpus_allowed;    /* the GPUs its ranks may have ("3-4"), or NULL: all of them */
  const char *gpus_from;       /* who allows them ("Slurm job 12"), or NULL */
} weftx_plan_host;

typedef struct weftx_plan_rank {
  int rank;
  int host;                    /* index into hosts */
  int node_rank;
  int local_rank;
  weftx_place place;
  int nenv;                    /* the rank's own variables ("KEY=VALUE"), those not in */
  const char *const *env;      /* weftx_plan.env because they differ between ranks */
} weftx_plan_rank;

typedef struct weftx_plan {
  int np;
  int nhosts;
  const weftx_plan_host *hosts;
  const weftx_plan_rank *ranks;  /* np of them */
  int nenv;
  const char *const *env;      /* "KEY=VALUE" strings, shown under "env" */
  const char *const *env_source;     /* nenv entries or NULL: where each came from
                                      * ("weft", "-x", "preset a3-highgpu-8g"), under "env_source" */
  const char *const *env_unresolved; /* nenv entries or NULL: why a value still holds a
                                      * placeholder (NULL: resolved), under "env_unresolved" */
  int nforwarded;
  const char *const *forwarded;      /* names of variables every rank gets as the launching
                                      * environment has them, under "env_forwarded" */
} weftx_plan;

/** \brief Write \p plan as the plan JSON of DESIGN.md ("version": 1) to \p out.
 * Within a version fields are only ever added (weftrun(1), PLAN JSON). */
int weftx_plan_write_json(FILE *out, const weftx_plan *plan);

/** \brief One --report-bindings line for a rank:
 * "vm-a rank 0 (local 0): GPU 0 (0000:04:00.0) cores 0-12 NUMA 0 NIC enp6s0".
 * "cores" lists the OS processors of pl->cpuset (all of them for bind none:
 * the caller says whether the rank is bound); GPU and NIC are left out when
 * the rank has none. \return 0, WEFT_EINVAL, or WEFT_ERANGE when \p buf is too small. */
int weftx_place_format(const weftx_topo *t, const char *host, int rank,
                                  const weftx_place *pl, char *buf, size_t len);

WEFT_END_DECLS

#endif /* WEFTX_MAP_H */
