/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement: which GPU, cores, NUMA memory and NIC each local rank of a host gets.
 *
 * One engine decides every layout: Open MPI 4.1's mappers, modelled in
 * weftx/ompi.h, for CPU layouts (what users' command lines mean), and weft's GPU
 * rule (--map-by gpu: one rank per GPU, bound next to it) as the one departure.
 * weftx_map_host() is the pure function of (topology, policy, ranks) that weft-topo
 * shows and weftrun's plan uses when weft places ranks; every rank's agent evaluates
 * weftx_map_rank() on its own host, so nothing ships a plan around. A request that
 * cannot be met is an error with a reason, never a silent wrap.
 */
#ifndef WEFTX_MAP_H
#define WEFTX_MAP_H

#include <stdio.h>

#include <weft/common.h>
#include <weft/errors.h>
#include <weftx/topo.h>

typedef enum weftx_map_by {
  WEFTX_MAP_AUTO = 0, /* gpu on a host with GPUs to give, else Open MPI's default layout */
  WEFTX_MAP_GPU,      /* weft's: one rank per GPU (ppr:N:gpu: N) */
  WEFTX_MAP_CPU,      /* Open MPI's layout of map_words */
} weftx_map_by;

/* The bindings of the GPU rule; a CPU layout binds as bind_words say. */
typedef enum weftx_bind_to {
  WEFTX_BIND_DEFAULT = 0, /* gpu-local under the GPU rule, Open MPI's default otherwise */
  WEFTX_BIND_GPU_LOCAL,   /* the rank's share of the cores local to its GPU */
  WEFTX_BIND_CORE,
  WEFTX_BIND_NUMA,
  WEFTX_BIND_PACKAGE, /* Open MPI's socket */
  WEFTX_BIND_NONE,
  WEFTX_BIND_OTHER, /* an Open MPI binding the GPU rule lacks (l3cache, hwthread, ...) */
} weftx_bind_to;

typedef struct weftx_policy {
  weftx_map_by map_by;
  weftx_bind_to bind_to;
  int ppr_n;                 /* GPU rule: ranks per GPU (ppr:N:gpu); 0: one */
  int pe;                    /* GPU rule: cores per rank (:PE=n); CPU layout: cpus per rank
                           * besides the words (Open MPI's --cpus-per-rank); 0: not given */
  int oversubscribe;         /* allow more ranks than the host's slots */
  int use_hwthreads;         /* count hardware threads as cores (--use-hwthread-cpus) */
  const char *reserved_cpus; /* OS processors the GPU rule never gives ranks ("8-21,112-125"),
                           * or NULL; a CPU layout refuses them (Open MPI has none) */
  const char *gpus;          /* the GPUs ranks may have, by index ("3-4,6": those a Slurm job
                           * was given), or NULL for all; "" for none. The GPU rule counts
                           * and chooses only these; auto is a CPU layout without them */
  const char *map_words, *bind_words; /* --map-by and --bind-to as given, or NULL: what
                           * Open MPI's model reads for a CPU layout */
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

/** \brief Fill \p p from --map-by and --bind-to as users type them, either NULL for
 * the default. The one grammar of both is Open MPI 4.1's (lib/map/ompi-policy.c: its
 * words, prefixes, modifiers PE=n, OVERSUBSCRIBE, NOOVERSUBSCRIBE and its refusals),
 * with weft's words besides: --map-by gpu[:PE=n,...] and ppr:N:gpu (the GPU rule) and
 * --bind-to gpu-local. Any other mapping is a CPU layout (WEFTX_MAP_CPU), which keeps
 * the words for Open MPI's model. Sets map_by, bind_to, ppr_n, pe (the GPU rule's
 * PE=n, else 0), map_words and bind_words; oversubscribe only when a modifier of the
 * GPU rule says so; leaves use_hwthreads, reserved_cpus and gpus alone: initialise
 * \p p (e.g. to {0}) first.
 * \return 0, WEFT_EINVAL (a word Open MPI does not know, with the closest; a
 * contradiction such as gpu-local with a CPU mapping) or WEFT_ENOTSUP (Open MPI has
 * it, the model does not: SPAN, dist), with a one-line reason in \p why. */
int weftx_policy_parse(weftx_policy *p, const char *map_by, const char *bind_to, char *why,
                       size_t whylen);

/** \brief The GPU rule's policy as weftrun spells it ("gpu, bind gpu-local"). */
int weftx_policy_format(const weftx_policy *p, char *buf, size_t len);

/** \brief 1 when \p map_by asks for weft's GPU rule (gpu, ppr:N:gpu), 0 for another
 * mapping (Open MPI's), -1 for none (NULL: the hosts decide). */
int weftx_policy_gpu(const char *map_by);

/** \brief How many ranks this host can take under \p p without oversubscribing
 * (its slots): GPUs (those of p->gpus) times ppr under the GPU rule, Open MPI's
 * default slots (cores, or hardware threads) for a CPU layout. 0 when \p p does not
 * fit \p t (a GPU of p->gpus it lacks). */
int weftx_map_slots(const weftx_topo *t, const weftx_policy *p);

/* Every rank of one host, placed. */
typedef struct weftx_host_map {
  int n;              /* ranks */
  weftx_place *place; /* n of them, by local rank */
  int slots;          /* the host's slots under the policy */
  char how[200];      /* "map-by gpu, bind gpu-local", or Open MPI's resolved policy
                           * ("map-by core, rank-by slot, bind-to core, as mpirun does") */
} weftx_host_map;

/** \brief The one placement of a host's ranks: \p n ranks (0: as many as the policy
 * gives this host) on topology \p t. Under the GPU rule (--map-by gpu, or auto on a
 * host with GPUs to give) each rank by map-gpu.c; otherwise Open MPI 4.1's layout,
 * as `mpirun -np N [the words]` on this host alone would make it (weftx/ompi.h), with
 * the GPU nearest each binding where the host has enough (weftx_ompi_place()).
 * \p out is cleared with weftx_host_map_clear(), also on failure.
 * \return 0; WEFT_ENOFIT with a reason in \p why (more ranks than GPUs, pe larger than
 * the cores there are, not enough slots, ...); WEFT_ENOGPU (map-by gpu or bind-to
 * gpu-local on a host without GPUs); WEFT_EINVAL (a bad gpus or reserved_cpus, gpu-local
 * with a CPU layout, a binding the GPU rule lacks, what mpirun refuses); WEFT_ENOTSUP;
 * WEFT_ENOMEM. */
int weftx_map_host(const weftx_topo *t, const weftx_policy *p, int n, weftx_host_map *out,
                   char *why, size_t whylen);
void weftx_host_map_clear(weftx_host_map *m);

/** \brief Local rank \p local_rank of \p local_size as weftx_map_host() places it (what
 * a rank's agent evaluates on its host). \p out is initialised by the call (its bitmaps
 * are allocated) on success; free them with weftx_place_clear(). \return as
 * weftx_map_host(), and WEFT_EINVAL for a rank outside 0..local_size-1. On failure
 * \p out holds no bitmaps. */
int weftx_map_rank(const weftx_topo *t, const weftx_policy *p, int local_rank, int local_size,
                   weftx_place *out, char *why, size_t whylen);
void weftx_place_clear(weftx_place *pl);

/* A whole job's plan, as weftrun --dry-run and weft-topo print it. */
typedef struct weftx_plan_host {
  const char *name;
  int slots;
  const weftx_topo *topo;   /* not owned */
  const char *topology;     /* file name shown in JSON, or NULL for "live" */
  const char *gpus_allowed; /* the GPUs its ranks may have ("3-4"), or NULL: all of them */
  const char *gpus_from;    /* who allows them ("Slurm job 12"), or NULL */
} weftx_plan_host;

typedef struct weftx_plan_rank {
  int rank;
  int host; /* index into hosts */
  int node_rank;
  int local_rank;
  weftx_place place;
  int nenv;               /* the rank's own variables ("KEY=VALUE"), those not in */
  const char *const *env; /* weftx_plan.env because they differ between ranks */
} weftx_plan_rank;

typedef struct weftx_plan {
  int np;
  int nhosts;
  const weftx_plan_host *hosts;
  const weftx_plan_rank *ranks; /* np of them */
  int nenv;
  const char *const *env;            /* "KEY=VALUE" strings, shown under "env" */
  const char *const *env_source;     /* nenv entries or NULL: where each came from
                                      * ("weft", "-x", "preset a3-highgpu-8g"), under "env_source" */
  const char *const *env_unresolved; /* nenv entries or NULL: why a value still holds a
                                      * placeholder (NULL: resolved), under "env_unresolved" */
  int nforwarded;
  const char *const *forwarded; /* names of variables every rank gets as the launching
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
int weftx_place_format(const weftx_topo *t, const char *host, int rank, const weftx_place *pl,
                       char *buf, size_t len);

WEFT_END_DECLS

#endif /* WEFTX_MAP_H */
