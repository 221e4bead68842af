/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job runtime: bootstrap, parallel groups, collectives and buckets.
 *
 * A program calls weft_init() once, takes the world group or builds a mesh
 * ("tp=2,pp=2,dp=*") and asks it for groups, then runs collectives on them.
 * Host buffers go through MPI, or within one host through shared memory
 * (cross-memory attach); device (CUDA) buffers go through NCCL, ordered on
 * the caller's stream. Every int-returning function returns 0 on success
 * or a negative WEFT_E* code; weft_last_error() then holds a one-line
 * explanation (which operation, which group, which ranks).
 *
 * Environment: WEFT_BACKEND=auto|mpi|nccl, WEFT_GPU and WEFT_GPU_PCI (the
 * rank's GPU in PCI order and its PCI address, set by weftrun),
 * WEFT_INIT_TIMEOUT (seconds, weft_init and NCCL bootstrap, default 300),
 * WEFT_COLL_TIMEOUT (seconds per collective, default 0 = no deadline),
 * WEFT_ALLREDUCE=flat|hier|auto, WEFT_HIER_THRESHOLD (bytes, default 1 MiB),
 * WEFT_HOST_SHM=1|0, WEFT_HOST_SHM_THRESHOLD (bytes, default 0: every size),
 * WEFT_HOST_SHM_STAGED (bytes, default 64M: all-reduces up to this size are
 * copied through the shared window, larger ones read with cross-memory attach).
 *
 * \note Not thread-safe: call from one thread per ctx (the MPI thread level
 * asked for is MPI_THREAD_FUNNELED).
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <stdint.h>

#include <weft/common.h>
#include <weft/errors.h>

WEFT_BEGIN_DECLS

/** Opaque handles. A ctx owns its world group and its meshes' groups; a
 * mesh owns the groups weft_mesh_group() returns; buckets belong to the
 * caller (weft_bucket_destroy()). */
typedef struct weft_ctx weft_ctx;
typedef struct weft_group weft_group;
typedef struct weft_mesh weft_mesh;
typedef struct weft_bucket weft_bucket;

/** Element types. Values are stable (append only). */
typedef enum weft_dtype {
  WEFT_INT8 = 0,
  WEFT_UINT8 = 1,
  WEFT_INT32 = 2,
  WEFT_INT64 = 3,
  WEFT_FLOAT16 = 4,  /* IEEE 754 binary16 */
  WEFT_BFLOAT16 = 5, /* bfloat16: the top half of a float */
  WEFT_FLOAT32 = 6,
  WEFT_FLOAT64 = 7,
  WEFT_DTYPE_COUNT
} weft_dtype;

/** Reduction operations. WEFT_AVG is the sum divided by the group size,
 * for floating-point types only (integers give WEFT_EDTYPE: use WEFT_SUM and
 * divide as you wish). */
typedef enum weft_op {
  WEFT_SUM = 0,
  WEFT_PROD = 1,
  WEFT_MIN = 2,
  WEFT_MAX = 3,
  WEFT_AVG = 4,
  WEFT_OP_COUNT
} weft_op;

/* ---- Context ------------------------------------------------------------ */

/** \brief Start the runtime: MPI (if the program has not initialised it),
 * local/node ranks, the device. NCCL comes up lazily at the first collective
 * on device memory, so CPU-only jobs never touch CUDA.
 * \param[in,out] argc, argv the program's, or NULL.
 * \param[out] ctx allocated by the callee, free with weft_finalize(). */
WEFT_EXPORT int weft_init(int *argc, char ***argv, weft_ctx **ctx);

/** \brief Tear down communicators, and MPI if weft_init() started it.
 * Frees \p ctx, its groups and meshes (not buckets). NULL is a no-op. */
WEFT_EXPORT int weft_finalize(weft_ctx *ctx);

/** \brief Rank and size in MPI_COMM_WORLD. */
WEFT_EXPORT int weft_rank(const weft_ctx *ctx);
WEFT_EXPORT int weft_size(const weft_ctx *ctx);

/** \brief Rank among the ranks of this host, and their number. */
WEFT_EXPORT int weft_local_rank(const weft_ctx *ctx);
WEFT_EXPORT int weft_local_size(const weft_ctx *ctx);

/** \brief Index of this host (0..weft_node_count()-1, in order of the
 * lowest world rank on each host) and the number of hosts. */
WEFT_EXPORT int weft_node_rank(const weft_ctx *ctx);
WEFT_EXPORT int weft_node_count(const weft_ctx *ctx);

/** \brief CUDA device index this rank uses: the GPU weftrun planned (WEFT_GPU,
 * found by its PCI address WEFT_GPU_PCI where CUDA numbers GPUs otherwise),
 * else the local rank; -1 for none. */
WEFT_EXPORT int weft_device(const weft_ctx *ctx);

/** \brief One line about the last failure on \p ctx ("" when none).
 * The string belongs to the library, valid until the next call on ctx. */
WEFT_EXPORT const char *weft_last_error(const weft_ctx *ctx);

/* ---- Restarts ------------------------------------------------------------- */

/** What a rank learns about the attempt it runs in (weft_restart_info()). */
typedef struct weft_restart {
  /** 1 when an earlier attempt of this job ran (count > 0). */
  int restarted;
  /** Attempts before this one: 0 on the first. */
  int count;
  /** Restarts the launcher allows; -1 when it did not say. */
  int max_restarts;
  /** Ranks of the previous attempt; 0 on the first, or when only torchrun's
   * variables are set (torchrun does not say). */
  int prev_world_size;
  /** Where the job keeps checkpoints across attempts (WEFT_CHECKPOINT_DIR),
   * NULL when unset; the string is the environment's. */
  const char *checkpoint_dir;
} weft_restart;

/** \brief Whether this run is a restart, and of which world size, from the
 * variables weftrun --restarts gives every rank: WEFT_RESTART_COUNT,
 * WEFT_MAX_RESTARTS, WEFT_PREV_WORLD_SIZE (from the second attempt on),
 * WEFT_CHECKPOINT_DIR, or torchrun's TORCHELASTIC_RESTART_COUNT and
 * TORCHELASTIC_MAX_RESTARTS alone. None set (plain mpirun): the first
 * attempt, nothing known. Not collective, and \p ctx may be NULL (before
 * weft_init()): then a failure is said on stderr, else in weft_last_error().
 * \return WEFT_EINVAL for a variable that is not a whole number in range or
 * an empty directory, for WEFT_ and torchrun's values that differ, a count
 * above the maximum, or a previous world size on the first attempt or
 * missing on a later one (weftrun sets both). */
WEFT_EXPORT int weft_restart_info(weft_ctx *ctx, weft_restart *out);

/* ---- Groups and meshes ---------------------------------------------------- */

/** \brief The group of all ranks; belongs to \p ctx. */
WEFT_EXPORT weft_group *weft_world(weft_ctx *ctx);
WEFT_EXPORT int weft_group_rank(const weft_group *g);
WEFT_EXPORT int weft_group_size(const weft_group *g);
/** \brief The world rank of member \p group_rank of \p g, or WEFT_ERANGE. */
WEFT_EXPORT int weft_group_world_rank(const weft_group *g, int group_rank);
/** \brief The group's name ("world", "dp", "tp,dp"); belongs to the library. */
WEFT_EXPORT const char *weft_group_name(const weft_group *g);
/** \brief The context \p g belongs to. */
WEFT_EXPORT weft_ctx *weft_group_ctx(const weft_group *g);

/** \brief Build a mesh from a layout: "name=size,..." with at most one size
 * "*" (whatever divides the world). The first dimension varies fastest
 * (Megatron order: rank = tp + TP*(pp + PP*dp) for "tp=2,pp=2,dp=*").
 * Collective over the world.
 * \param[out] mesh allocated by the callee, free with weft_mesh_destroy()
 * (or weft_finalize()).
 * \return WEFT_EPARSE (syntax), WEFT_ENAME (duplicate name),
 * WEFT_ERANGE (sizes that do not multiply to / divide the world size). */
WEFT_EXPORT int weft_mesh_create(weft_ctx *ctx, const char *layout, weft_mesh **mesh);

/** \brief The group of ranks that differ from this one only along \p dims
 * ("dp", or "tp,dp"); built at the first call (collective over the world:
 * every rank must ask for the same dims in the same order), then cached.
 * Belongs to the mesh. NULL on error (weft_last_error() says why). */
WEFT_EXPORT weft_group *weft_mesh_group(weft_mesh *mesh, const char *dims);

/** \brief This rank's coordinate along \p dim, or WEFT_ENAME. */
WEFT_EXPORT int weft_mesh_coord(const weft_mesh *mesh, const char *dim);

/** \brief Number of dimensions and the size of \p dim (WEFT_ENAME if none). */
WEFT_EXPORT int weft_mesh_ndims(const weft_mesh *mesh);
WEFT_EXPORT int weft_mesh_dim_size(const weft_mesh *mesh, const char *dim);

/** \brief Free a mesh and its groups. NULL is a no-op. */
WEFT_EXPORT void weft_mesh_destroy(weft_mesh *mesh);

/* ---- Collectives ---------------------------------------------------------- */

/* Host buffers go through MPI (within one host through shared memory), device buffers (of this rank's device, both
 * of a call in the same memory) through NCCL. sendbuf == recvbuf is in place.
 * stream: a cudaStream_t of weft_device() for device buffers, ignored for host
 * buffers. NULL is the legacy default stream, which serialises with every
 * blocking stream of the device; pass (void *)cudaStreamPerThread for the
 * thread's default stream, or a cudaStreamNonBlocking stream and order other
 * streams' work with events. On host memory counts above INT_MAX are refused by
 * all-gather and reduce-scatter (WEFT_EOVERFLOW), on device memory not. With
 * WEFT_COLL_TIMEOUT set, a host collective that does not complete in time
 * returns WEFT_ETIMEDOUT and weft_last_error() names the ranks that had not
 * joined; the caller should then abort the job (MPI_Abort). A device call
 * returns once NCCL has queued it on the stream and never waits for the GPU
 * (so it can be captured into a CUDA graph); its deadline counts from when
 * the stream reaches it, and one that runs past it fails the group's next
 * device call or weft_group_wait() with WEFT_ETIMEDOUT, or, while the
 * program waits for the GPU elsewhere, ends the rank (exit status 124). Calls
 * captured into a graph are not watched. */

/** \brief Element size of \p dt in bytes, 0 for an unknown type. */
WEFT_EXPORT size_t weft_dtype_size(weft_dtype dt);
/** \brief "float32", "bfloat16", ...; "?" for an unknown type. */
WEFT_EXPORT const char *weft_dtype_name(weft_dtype dt);
/** \brief "sum", "avg", ...; "?" for an unknown op. */
WEFT_EXPORT const char *weft_op_name(weft_op op);

/** \brief IEEE half (WEFT_FLOAT16) and bfloat16 (WEFT_BFLOAT16) to and from float,
 * as weft reduces them on host memory: round to nearest even, NaN and infinities kept. */
WEFT_EXPORT float weft_half_to_float(uint16_t h);
WEFT_EXPORT uint16_t weft_float_to_half(float f);
WEFT_EXPORT float weft_bf16_to_float(uint16_t b);
WEFT_EXPORT uint16_t weft_float_to_bf16(float f);

WEFT_EXPORT int weft_allreduce(weft_group *g, const void *sendbuf, void *recvbuf, size_t count,
                               weft_dtype dt, weft_op op, void *stream);
WEFT_EXPORT int weft_broadcast(weft_group *g, void *buf, size_t count, weft_dtype dt, int root,
                               void *stream);
/** recvbuf holds sendcount * group size elements, in group rank order. */
WEFT_EXPORT int weft_allgather(weft_group *g, const void *sendbuf, void *recvbuf, size_t sendcount,
                               weft_dtype dt, void *stream);
/** sendbuf holds recvcount * group size elements; block i goes to rank i. */
WEFT_EXPORT int weft_reduce_scatter(weft_group *g, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, weft_dtype dt, weft_op op, void *stream);
WEFT_EXPORT int weft_send(weft_group *g, const void *buf, size_t count, weft_dtype dt, int peer,
                          void *stream);
WEFT_EXPORT int weft_recv(weft_group *g, void *buf, size_t count, weft_dtype dt, int peer,
                          void *stream);
WEFT_EXPORT int weft_barrier(weft_group *g);

/** \brief Wait until every device call weft queued on \p g has finished on
 * the GPU (host calls finish before they return), at most WEFT_COLL_TIMEOUT
 * seconds for each from when its stream reaches it (without it, the
 * collective watchdog's WEFT_COLL_WATCHDOG). Returns 0, or the failure of
 * one of those calls (WEFT_ETIMEDOUT naming the ranks that had not joined,
 * WEFT_ENCCL); then the group's NCCL communicator has been aborted on every
 * member. Not collective; calls captured into a CUDA graph are not waited for. */
WEFT_EXPORT int weft_group_wait(weft_group *g);

/* ---- Model parallelism: all-to-all and batches of sends and receives ------ */

/** \brief All-to-all of equal blocks (expert parallelism: the "ep" group).
 * sendbuf holds count * group size elements, block i going to group rank i;
 * recvbuf gets block i from group rank i. The buffers must not overlap (in
 * place is refused with WEFT_EINVAL). On host memory within one host through
 * shared memory, else MPI (counts above INT_MAX: WEFT_EOVERFLOW); on device
 * memory one ncclGroupStart/End of sends and receives on the group's
 * communicator. */
WEFT_EXPORT int weft_alltoall(weft_group *g, const void *sendbuf, void *recvbuf, size_t count,
                              weft_dtype dt, void *stream);
/** \brief All-to-all with per-peer counts and displacements, as
 * MPI_Alltoallv, in elements: sendcounts[i] elements at sendbuf + sdispls[i]
 * go to group rank i, recvcounts[i] from it land at recvbuf + rdispls[i].
 * recvcounts[i] must equal rank i's sendcounts[this rank] (a rank can learn
 * them first with weft_alltoall of one count per rank); on host memory within
 * one host a mismatch fails the call on every rank (WEFT_EINVAL), elsewhere
 * it is the caller's error, as with MPI and NCCL. No receive block may
 * overlap another or any send block (in place is refused). */
WEFT_EXPORT int weft_alltoallv(weft_group *g, const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, weft_dtype dt, void *stream);

/** One operation of a batch: send count elements of buf to group rank peer,
 * or receive them from it. */
typedef enum weft_p2p_kind { WEFT_P2P_SEND = 0, WEFT_P2P_RECV = 1 } weft_p2p_kind;
typedef struct weft_p2p {
  weft_p2p_kind kind;
  int peer;  /* group rank, not this rank */
  void *buf; /* read for a send, written for a receive */
  size_t count;
  weft_dtype dt;
} weft_p2p;

/** \brief Sends and receives issued together and completed together
 * (pipeline parallelism: the "pp" group), as ncclGroupStart/End around them
 * or MPI_Startall, so that ranks that all send first do not wait for each
 * other. Each operation matches the peer's operation of the other kind in the
 * order both ranks issue them (within and across batches, weft_send and
 * weft_recv included); a count of 0 is still a message. Buffers of one batch
 * are all host memory or all this rank's device memory; a receive buffer must
 * not overlap any other buffer of the batch. On host memory the call returns
 * when every operation has finished (MPI, nothing copied); on device memory
 * once they are queued on stream, as one call in flight. */
WEFT_EXPORT int weft_p2p_batch(weft_group *g, const weft_p2p *ops, size_t nops, void *stream);
/** No peer for weft_sendrecv(): that half is skipped (MPI_PROC_NULL). */
#define WEFT_NO_PEER (-1)
/** \brief A batch of one send to dest and one receive from source (either
 * may be WEFT_NO_PEER): a pipeline stage's send-next, receive-previous. */
WEFT_EXPORT int weft_sendrecv(weft_group *g, const void *sendbuf, size_t sendcount, int dest,
                              void *recvbuf, size_t recvcount, int source, weft_dtype dt,
                              void *stream);

/* ---- Gradient fusion buckets ---------------------------------------------- */

/** \brief A bucket: tensors of type \p dt registered once, all-reduced in
 * few messages of at most \p capacity_bytes (0: 25 MiB) through one fusion
 * buffer allocated here; the first message is small (1 MiB at most) so that
 * communication can start early.
 * \param[out] b allocated by the callee, free with weft_bucket_destroy(). */
WEFT_EXPORT int weft_bucket_create(weft_group *g, weft_dtype dt, size_t capacity_bytes,
                                   weft_bucket **b);
/** \brief Register \p count elements at \p tensor (caller-owned, must stay
 * valid). All tensors of a bucket live in the same kind of memory. */
WEFT_EXPORT int weft_bucket_add(weft_bucket *b, void *tensor, size_t count);
/** \brief All-reduce every registered tensor in place. No allocation. */
WEFT_EXPORT int weft_bucket_allreduce(weft_bucket *b, weft_op op, void *stream);
WEFT_EXPORT void weft_bucket_destroy(weft_bucket *b);

WEFT_END_DECLS

#endif /* WEFT_RT_H */
