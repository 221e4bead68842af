/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal structures of the runtime (lib/rt), shared by its files: the
 * context, groups, meshes, the backend vtable and the pure helpers (layout
 * parsing, mesh coordinates, fp16/bf16 conversion) that unit tests call.
 */
#ifndef WEFT_RT_PRIVATE_H
#define WEFT_RT_PRIVATE_H

#include "weft_private.h"

#include <mpi.h>
#include <stdint.h>

#define WEFT__MESH_MAXDIMS 8
#define WEFT__NAME_MAX 32

typedef enum weft__backend_pref {
  WEFT__BACKEND_AUTO = 0,
  WEFT__BACKEND_MPI,
  WEFT__BACKEND_NCCL
} weft__backend_pref;

typedef enum weft__allreduce_algo {
  WEFT__AR_AUTO = 0,
  WEFT__AR_FLAT,
  WEFT__AR_HIER
} weft__allreduce_algo;

struct weft_group {
  weft_ctx *ctx;
  char name[64];
  MPI_Comm comm; /* our own communicator (never the user's) */
  int rank, size;
  int *world_ranks; /* world rank of each group rank */
  /* Deadlines: a duplicate communicator for arrival tokens, and how many
   * collectives each member has entered (counted from its tokens). */
  MPI_Comm arrive;
  unsigned long seq;
  unsigned long *arrived;
  /* Point-to-point tokens (deadline.c), [4 * size]: the sends and receives
   * this rank posted with each member on device memory, and those each
   * member told us it posted with us (WEFT__P2P_*). */
  unsigned long *p2p;
  /* Scratch that grows and stays (host all-to-all and batches: requests). */
  void *scratch;
  size_t scratch_size;
  /* Hierarchy, built at the first hierarchical all-reduce. */
  int hier_state; /* 0 not looked at, 1 usable, -1 not applicable */
  MPI_Comm intra, inter;
  int intra_rank, intra_size, nhosts;
  int *hier_counts, *hier_displs;
  /* The NCCL side (backend-nccl.c): communicators, created lazily. */
  void *nccl;
  /* Host shared memory (shm.c), set up at the first host collective. */
  struct weft__shm *shm, *intra_shm;
  struct weft_group *next; /* in the owner's list */
};

/* A run of n elements at p: a bucket's tensor, a piece of a buffer. */
struct weft__seg {
  char *p;
  size_t n;
};

struct weft__dim {
  char name[WEFT__NAME_MAX];
  int size;
};

/* A parsed layout: pure data, resolved against a world size. */
struct weft__layout {
  int ndims;
  struct weft__dim dims[WEFT__MESH_MAXDIMS];
};

struct weft_mesh {
  weft_ctx *ctx;
  struct weft__layout layout;
  int coord[WEFT__MESH_MAXDIMS];
  weft_group *groups; /* cached groups, by name */
  struct weft_mesh *next;
};

struct weft_ctx {
  int rank, size;
  int local_rank, local_size;
  int node_rank, node_count;
  int *node_of; /* host index of each world rank */
  int device;
  int own_mpi; /* we called MPI_Init_thread, so we finalize */
  int backend; /* weft__backend_pref */
  int ar_algo; /* weft__allreduce_algo */
  size_t hier_threshold;
  double coll_timeout; /* seconds, 0 = none */
  double init_timeout;
  size_t chunk;          /* elements per MPI call (INT_MAX; WEFT_MPI_CHUNK in tests) */
  size_t ranks_per_node; /* WEFT_RANKS_PER_NODE (tests), 0 unset */
  int host_shm;          /* WEFT_HOST_SHM: 0 off */
  size_t shm_threshold;  /* WEFT_HOST_SHM_THRESHOLD, bytes */
  size_t shm_staged;     /* WEFT_HOST_SHM_STAGED, bytes */
  int cuda_state;        /* 1 once weft__nccl_check passed */
  void *nccl_world;      /* ncclComm_t of the world group */
  weft_group *world;
  weft_mesh *meshes;
  char err[1024];
};

/* Record a failure on ctx (and print it on stderr); returns code (fail.c). */
int weft__rt_fail(weft_ctx *ctx, int code, const char *fmt, ...) WEFT_PRINTF(3, 4);

/* ---- settings (settings.c): the WEFT_* variables, and that all ranks agree ---- */
#define WEFT__SETTINGS_MAX 32 /* slots of a record: "could not read", then the agreed */
/* Read every WEFT_* setting into ctx; WEFT_EINVAL naming the first bad one. */
int weft__settings_read(weft_ctx *ctx);
/* With every rank of comm: 0 when all read the same values; otherwise the same
 * code on every rank (WEFT_EDISAGREE, rank 0 printing the line, or WEFT_EINVAL
 * when a rank could not read its own, whose read_rc says why). */
int weft__settings_agree(weft_ctx *ctx, MPI_Comm comm, int read_rc);
/* The pure parts: slots in a record, the variable of a slot, the record of
 * ctx (slot 0: read_rc != 0), and the first slot from `from` whose values
 * differ (-1 for none) in red: each slot's maximum over the ranks, then the
 * maximum of its negation. */
int weft__settings_count(void);
const char *weft__settings_name(int slot);
void weft__settings_record(const weft_ctx *ctx, int read_rc, int64_t *v);
int weft__settings_differs(const int64_t *red, int n, int from);
/* What one rank read for the variable that differs: its value, what it was
 * set to ("" unset) and its host. */
struct weft__setting_seen {
  int64_t value;
  char raw[48];
  char host[64];
};
/* The line naming var's values on the n ranks of all, with their hosts;
 * also: other variables that differ ("" none). */
void weft__settings_line(const char *var, const struct weft__setting_seen *all, int n,
                         const char *also, char *buf, size_t size);

/* ---- groups (group.c) ---- */
/* A group over comm (taken over: freed with the group). */
int weft__group_new(weft_ctx *ctx, MPI_Comm comm, const char *name, weft_group **out);
void weft__group_free(weft_group *g);
/* MPI's words for rc (fail.c). */
const char *weft__mpi_strerror(int rc, char *buf, size_t size);

/* ---- mesh math (mesh.c, pure) ---- */
int weft__layout_parse(const char *layout, int world_size, struct weft__layout *out, char *why,
                       size_t whysize);
void weft__layout_coords(const struct weft__layout *l, int rank, int *coord);
/* Bit i set for dimension i of l named in dims ("tp,dp"); <0 on error. */
int weft__layout_mask(const struct weft__layout *l, const char *dims, unsigned *mask, char *why,
                      size_t whysize);
/* Color of rank's group for mask: the index over the dims not in mask. */
int weft__layout_color(const struct weft__layout *l, unsigned mask, int rank);
/* Members (world ranks, ascending) of rank's group for mask; returns count. */
int weft__layout_members(const struct weft__layout *l, unsigned mask, int rank, int *out);

/* ---- all-to-all and batches (exchange.c checks, the backends run them) ---- */
struct weft__backend;
/* An all-to-all: equal blocks of n elements (sc NULL), or MPI's counts and
 * displacements. */
struct weft__a2a {
  size_t n;
  const size_t *sc, *sd, *rc, *rd;
};
static inline size_t weft__a2a_sc(const struct weft__a2a *a, int k)
{
  return a->sc ? a->sc[k] : a->n;
}
static inline size_t weft__a2a_sd(const struct weft__a2a *a, int k)
{
  return a->sc ? a->sd[k] : (size_t)k * a->n;
}
static inline size_t weft__a2a_rc(const struct weft__a2a *a, int k)
{
  return a->sc ? a->rc[k] : a->n;
}
static inline size_t weft__a2a_rd(const struct weft__a2a *a, int k)
{
  return a->sc ? a->rd[k] : (size_t)k * a->n;
}
/* coll.c's checks, for exchange.c: group, type, op (-1 none) and count x
 * mult in bytes; which backend takes buffers a and b (b may be NULL). */
int weft__coll_check(weft_group *g, const char *fn, weft_dtype dt, int op, size_t count,
                     size_t mult);
int weft__coll_pick(weft_group *g, const char *fn, const void *a, const void *b,
                    const struct weft__backend **be);
/* g's scratch, at least bytes long (ENOMEM reported as fn's). */
void *weft__scratch(weft_group *g, size_t bytes, const char *fn);

/* ---- data types (dtype.c) ---- */
int weft__dtype_ok(weft_dtype dt);
int weft__op_ok(weft_op op);
/* MPI type and op for dt/op (AVG maps to SUM); WEFT_EDTYPE if not allowed. */
int weft__mpi_type_op(weft_dtype dt, weft_op op, MPI_Datatype *type, MPI_Op *mop);
/* buf[i] /= n for count elements (the second half of AVG). */
void weft__divide(void *buf, size_t count, weft_dtype dt, int n);
/* dst[i] = a[i] op b[i] for i < n (reduce.c; AVG is SUM here). dst may be a
 * or b, no other overlap. a is the lower ranks' side. MIN and MAX of float32
 * and float64 are Open MPI's (a < b ? a : b: b when either is NaN); 16-bit
 * floats follow weft's rule (dtype.c). */
void weft__reduce(weft_dtype dt, weft_op op, void *dst, const void *a, const void *b, size_t n);
/* memcpy, but the bytes go to memory without passing through the cache
 * (non-temporal stores) where the processor has them; call
 * weft__stream_fence() before anything that tells another process or
 * device that they are there. */
void weft__copy_stream(void *dst, const void *src, size_t n);
void weft__stream_fence(void);
void weft__dtype_fini(void);
/* The MPI user function that reduces float16 or bfloat16 with op (AVG: its
 * SUM); NULL for other types. Tests compare it with weft-bench's baseline. */
MPI_User_function *weft__op16_fn(weft_dtype dt, weft_op op);

/* ---- deadlines (deadline.c) ---- */
/* Post this rank's arrival token for a collective on g (deadline on only). */
int weft__arrive(weft_group *g);
/* Wait for req until the ctx deadline; WEFT_ETIMEDOUT names the absent ranks
 * (or peer, a group rank, for point-to-point; -1 for collectives). */
int weft__wait(weft_group *g, MPI_Request *req, const char *opname, int peer);
/* The WEFT_ETIMEDOUT failure of a collective on g, naming the absent ranks. */
int weft__timed_out(weft_group *g, const char *opname);
/* The same for g's collective number seq (an earlier one, still in flight
 * on the device): the absent are those whose arrival count is below it. */
int weft__timed_out_at(weft_group *g, const char *opname, unsigned long seq);
/* Point-to-point tokens on device memory (deadline on): this rank posts a
 * send to (send 1) or a receive from group rank peer; returns the number of
 * such operations with peer so far, this one included (0 without a
 * deadline). A batch overdue later names the peers whose own count is behind
 * (weft__p2p_behind). */
enum { WEFT__P2P_SENT = 0, WEFT__P2P_RECVD, WEFT__P2P_THEIR_SENDS, WEFT__P2P_THEIR_RECVS };
unsigned long weft__p2p_post(weft_group *g, int peer, int send, int *rc);
/* 1 when peer had not posted the operation that matches our n-th send to it
 * (send 1) or receive from it, as far as its tokens say. */
int weft__p2p_behind(weft_group *g, int peer, int send, unsigned long n);
/* Wait for n requests of a batch (req_op[i]: the operation of request i)
 * until the deadline; WEFT_ETIMEDOUT names the peers of the operations not
 * finished. */
int weft__wait_batch(weft_group *g, int n, MPI_Request *reqs, const int *req_op,
                     const weft_p2p *ops, const char *fn);

/* ---- the call page and the watchdog (watch.c) ---- */
#define WEFT__INIT_TIMEOUT_S 300.0  /* WEFT_INIT_TIMEOUT's default */
#define WEFT__COLL_WATCHDOG_S 600.0 /* the collective watchdog without WEFT_COLL_TIMEOUT */
/* At weft_init's start: map the agent's page, start the watchdog (state INIT). */
void weft__watch_start(void);
/* weft_init done: this rank runs (state RUNNING). */
void weft__watch_ready(int world_rank);
/* weft_finalize (finalized 1) or a failed weft_init (0): the watchdog stops. */
void weft__watch_stop(int finalized);
/* A call on g (NULL: none) begins and ends; nested calls count as the outer one.
 * The page has no word for some calls (all-to-all, batches): they show as the
 * nearest op there, and the watchdog's line says name (NULL: the op's). */
void weft__call_enter(const weft_group *g, int op, size_t bytes);
void weft__call_enter_named(const weft_group *g, int op, const char *name, size_t bytes);
void weft__call_exit(void);
/* A deadline expired in the current call: the page says why, with g's members (or
 * world rank peer, >= 0, for a send or recv). */
void weft__page_deadline(const weft_group *g, int peer, double limit, const char *why);

/* ---- backends ---- */
struct weft__backend {
  const char *name;
  int (*allreduce)(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                   void *stream);
  int (*broadcast)(weft_group *g, void *buf, size_t n, weft_dtype dt, int root, void *stream);
  int (*allgather)(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, void *stream);
  int (*reduce_scatter)(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                        void *stream);
  int (*send)(weft_group *g, const void *buf, size_t n, weft_dtype dt, int peer, void *stream);
  int (*recv)(weft_group *g, void *buf, size_t n, weft_dtype dt, int peer, void *stream);
  /* All-to-all (exchange.c has checked counts, overlap and memory). */
  int (*alltoall)(weft_group *g, const void *s, void *r, const struct weft__a2a *a, weft_dtype dt,
                  void *stream);
  /* A batch of sends and receives (fn: the caller's name, for messages). */
  int (*batch)(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *stream);
  /* Copy bytes between buffers of the backend's memory (buckets). */
  int (*copy)(weft_ctx *ctx, void *dst, const void *src, size_t bytes, void *stream);
  int (*alloc)(weft_ctx *ctx, void **p, size_t bytes);
  void (*free)(weft_ctx *ctx, void *p);
};

extern const struct weft__backend weft__backend_mpi;
extern const struct weft__backend weft__backend_nccl;

/* The MPI backend's all-to-all and batches (mpi-exchange.c). */
int weft__mpi_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                       weft_dtype dt, void *stream);
int weft__mpi_batch(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *stream);

/* MPI all-reduce, flat (no hierarchy), used by the hierarchical one too. */
int weft__mpi_allreduce_flat(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op);
/* Hierarchical all-reduce (hier.c); 1 = use it for n elements of dt. */
int weft__hier_wanted(weft_group *g, size_t n, weft_dtype dt);
int weft__hier_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                         weft_op op);

/* ---- device memory (device.c: the driver, without a context) ---- */
/* 1 when the NVIDIA driver is there and starts; *reason says why not. */
int weft__cuda_driver(const char **reason);
/* The device (ordinal) whose memory p is, or -1 for host memory. */
int weft__device_of(const void *p);
/* 1 when p is device memory. */
int weft__is_device_ptr(weft_ctx *ctx, const void *p);
/* What weft__cuda_ordinal_of_pci() found. */
enum weft__bus_found {
  WEFT__BUS_FOUND = 0, /* *ordinal is the device */
  WEFT__BUS_NODRIVER,  /* no usable driver (why: as weft__cuda_driver's reason) */
  WEFT__BUS_UNSEEN,    /* CUDA sees no device there (why: the devices it sees) */
  WEFT__BUS_ERROR      /* a driver call failed, or CUDA sees several devices there */
};
/* The CUDA ordinal of the device at PCI address pci ("0000:04:00.0"), asked of the
 * driver: cuDeviceGetByPCIBusId, which honours CUDA_VISIBLE_DEVICES and
 * CUDA_DEVICE_ORDER as the runtime does and makes no context. */
int weft__cuda_ordinal_of_pci(const char *pci, int *ordinal, char *why, size_t size);

/* ---- the rank's device (device-pick.c): the pure parts, for init.c and unit tests ---- */
/* Entries of CUDA_VISIBLE_DEVICES (0 when unset or empty). */
int weft__vis_count(const char *vis);
/* The first entry of a list ("a,b": "a") into buf; -1 when it does not fit. */
int weft__first_item(const char *s, char *buf, size_t size);
/* What an entry of CUDA_VISIBLE_DEVICES is. */
enum weft__vis_kind {
  WEFT__VIS_INDEX, /* a plain decimal index: "3" */
  WEFT__VIS_UUID,  /* a GPU's UUID, or the start of one: "GPU-8932f937-..." */
  WEFT__VIS_MIG,   /* a MIG instance: "MIG-..." */
  WEFT__VIS_OTHER  /* anything else ("-1", "", " 3"): where CUDA ends the list */
};
/* The kind of the len bytes at s; *index gets an index's value, else -1. */
enum weft__vis_kind weft__vis_entry(const char *s, size_t len, long *index);
/* 1 when WEFT_GPU, an index in PCI order, becomes the CUDA ordinal by its place in
 * CUDA_VISIBLE_DEVICES (vis; NULL when unset) without asking CUDA: CUDA_DEVICE_ORDER
 * (order; NULL when unset) is PCI_BUS_ID and every entry of vis a plain index. Else 0,
 * and why says what stands in the way ("CUDA_DEVICE_ORDER=FASTEST_FIRST"), for a line. */
int weft__gpu_index_trusted(const char *vis, const char *order, char *why, size_t size);
/* Where the index is trusted: the ordinal of GPU v, its place in vis (v itself where
 * vis is unset or empty); -1 when vis does not list it. */
int weft__gpu_ordinal(long v, const char *vis);
/* Parse the PCI address of len bytes at s, DOMAIN:BUS:DEVICE.FUNCTION in hexadecimal
 * of either case, as hwloc and CUDA write it ("0000:04:00.0", "00000000:3B:00.0"):
 * *key is the same for the same function. 0, or -1 when it is not one. */
int weft__pci_parse(const char *s, size_t len, uint64_t *key);

/* ---- NCCL (backend-nccl.c, or backend-nccl-none.c) ---- */
/* Check that NCCL can be used here (driver, CUDA, NCCL, a GPU for this
 * rank); 0 or WEFT_E*. Loads the CUDA runtime and NCCL the first time. */
int weft__nccl_check(weft_ctx *ctx);
/* n device-to-device copies on stream (bucket packing), batched if CUDA can. */
int weft__nccl_pack(weft_ctx *ctx, size_t n, void *const *dst, const void *const *src,
                    const size_t *bytes, void *stream);
void weft__nccl_group_free(weft_group *g);
/* weft_group_wait's work: every device call queued on g finished (bounded). */
int weft__nccl_wait(weft_group *g);
/* For the watchdog: 1 when a device call or a blocking NCCL call is past its
 * deadline (nccl-flight.c), with why, the group and the limit. */
int weft__nccl_overdue(char *why, size_t len, const weft_group **g, double *limit);
/* Give g an NCCL communicator split from the world's, if the world has one
 * (collective over the world, like weft_mesh_group); else it comes lazily. */
int weft__nccl_split(weft_group *g, int color, int key);
void weft__nccl_ctx_free(weft_ctx *ctx);

#endif /* WEFT_RT_PRIVATE_H */
