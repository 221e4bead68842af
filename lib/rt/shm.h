/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host collectives within one host through shared memory (shm.c, shm-coll.c,
 * reduce.c): the pieces the rest of lib/rt calls, and the structures the
 * three files share.
 *
 * Data moves by Linux cross-memory attach (process_vm_readv/writev): the
 * rank that owns a slice reads it straight from every peer's buffer, reduces
 * it and writes the result straight into every peer's buffer. Ranks meet
 * through counters in a small arena of shared memory (an MPI shared window,
 * one control block per rank), waiting by futex. See shm.c for the arena and
 * the waits, shm-coll.c for the algorithms.
 *
 * The hooks return WEFT__SHM_DECLINED when the call is not theirs (another
 * host in the group, too small, switched off, not permitted): the caller
 * then goes on with MPI. Every rank declines alike, from facts all ranks
 * share, so that they all take the same path.
 */
#ifndef WEFT_RT_SHM_H
#define WEFT_RT_SHM_H

#include "rt_private.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define WEFT__SHM_DECLINED 1

/* Default of WEFT_HOST_SHM_THRESHOLD (bytes): every size. Measured with
 * weft-bench --baseline against Open MPI 4.1 on 2 and 4 ranks, 8 B to 64 MiB,
 * the shared-memory path was not slower at any size (libweft(3)). */
#define WEFT__SHM_THRESHOLD_DEFAULT ((size_t)0)

/* ---- hooks (shm-coll.c) ---- */
int weft__shm_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op);
int weft__shm_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op);
int weft__shm_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt);
/* All-to-all, equal blocks or MPI's counts (shm-a2a.c). */
int weft__shm_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                       weft_dtype dt);
/* The hierarchical all-reduce with its host stages here: reduce-scatter on
 * the host, MPI all-reduce of each slice across hosts, all-gather on the
 * host. AVG is left to the caller (a sum here), as for the MPI stages. */
int weft__shm_hier_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op);
/* A bucket: its tensors (each rank's own, same counts in the same order)
 * reduced where they lie, without packing. *state caches the peers'
 * addresses between calls; free it with weft__shm_bucket_free(). */
struct weft__shm_bucket;
int weft__shm_bucket_allreduce(weft_group *g, struct weft__shm_bucket **state,
                               const struct weft__seg *t, size_t nt, size_t total, weft_dtype dt,
                               weft_op op);
void weft__shm_bucket_free(struct weft__shm_bucket *state);

/* ---- lifetime (shm.c; its settings are read in settings.c) ---- */
/* Free a group's arena (collective over the group's ranks, like MPI_Comm_free). */
void weft__shm_free(struct weft__shm *sh);

/* ---- shared by shm.c and shm-coll.c ---- */

/* The counters of a control block: call numbers. A rank sets ARRIVE when it
 * enters a call (its buffer addresses are then valid), READY when its own
 * part of the result is final, DONE when it has finished with every peer's
 * memory. */
enum { WEFT__SHM_ARRIVE = 0, WEFT__SHM_READY, WEFT__SHM_DONE, WEFT__SHM_NCOUNTERS };

/* One rank's control block in the arena: its counters; failed (not 0) when
 * it gave up, with blame and kind saying why, so that peers pass it on. */
struct weft__shm_ctl {
  _Atomic uint32_t count[WEFT__SHM_NCOUNTERS];
  _Atomic uint32_t failed;
  _Atomic uint32_t sleepers; /* ranks in FUTEX_WAIT on this block's counters */
  int32_t pid;
  uint32_t pad_;
  uint64_t s, r;            /* buffer addresses for call number arrive */
  uint64_t token_at, token; /* the cross-memory attach probe (shm.c) */
  int32_t blame;            /* when failed: the world rank found absent or dead, */
  uint32_t kind;            /* and how (WEFT__SHM_DIED, ...) */
  char pad[52];
};

/* Why a rank gave up (weft__shm_ctl.kind). */
enum { WEFT__SHM_FAILED = 1, WEFT__SHM_DIED, WEFT__SHM_ABSENT, WEFT__SHM_STUCK };

/* A run of elements within one segment of a buffer (shm-coll.c). */
struct weft__piece {
  size_t seg, off, len; /* segment, first element in it, elements */
};

struct weft__shm {
  weft_ctx *ctx;
  weft_group *g; /* names and MPI deadlines */
  MPI_Comm comm; /* borrowed: the group's, or its host communicator */
  int rank, size;
  int *world; /* world rank of each member */
  int *pid;
  int state; /* 1 usable, -1 not (why), -2 broken by a failed call */
  int spins; /* polls before yielding: 0 when ranks outnumber processors */
  char why[200];
  size_t threshold; /* bytes, the same on every member */
  size_t staged;    /* all-reduces of up to this many bytes through the slots, too */
  MPI_Win win;
  struct weft__shm_ctl **ctl;  /* every member's block */
  uint32_t seq;                /* number of the current or last call */
  char *tmp;                   /* 3 chunks, for peers' data on its way to the reduction,
                             * and WEFT__SHM_GAP bytes that gaps are read into */
  struct iovec *iov_l, *iov_r; /* WEFT__SHM_MAXIOV each */
  struct weft__piece *pc;      /* WEFT__SHM_MAXPIECES */
  uint64_t *peer_s, *peer_r;   /* peers' addresses for the current call */
  unsigned char *got;          /* members whose slice this rank has (shm-coll.c) */
  volatile uint64_t token;     /* what peers read in the probe */
};

/* Bytes per step of the reduction; the most pieces per step (a read takes
 * one local iovec per piece and one per gap between pieces: the kernel takes
 * at most 1024); gaps between remote pieces read through rather than split
 * (less than a page: see shm-coll.c). */
#define WEFT__SHM_CHUNK ((size_t)64 << 10)
/* Each rank's two slots in the arena (one per call parity). Inputs of up to
 * WEFT__SHM_SMALL bytes are copied through them and every rank folds all of
 * them; all-reduces and buckets of up to WEFT__SHM_STAGED bytes are copied
 * through them a slot at a time, each rank folding its slice (shm-coll.c).
 * 512 KiB: against 1 MiB, 4 ranks on 2 processors went from 2.2 to 2.7 times
 * MPI at 16 MiB and from 1.7-1.9 to 2.1 at 4 MiB (medians of 4 alternating
 * runs); 2 ranks and buckets of 1 KB tensors the same within the noise; 256
 * KiB no better; 4 MiB worse everywhere (the arena leaves the cache). */
#define WEFT__SHM_SLOT ((size_t)512 << 10)
#define WEFT__SHM_SMALL ((size_t)64 << 10)
/* Default of WEFT_HOST_SHM_STAGED (bytes): measured against cross-memory
 * attach (libweft(3)), copying through the slots won up to 16 MiB on 2 and 4
 * ranks (the extra copy stays in this host's 32 MiB of cache); since the owner
 * of a slice folds its own part from its input, also with 4 ranks on 2
 * processors (it lost from 4 MiB before, with a 1 MiB limit there). Since the
 * output is written around the cache (WEFT__SHM_STREAM), also at 64 MiB: on 2
 * ranks, medians of 5 alternating runs, 11.1 ms against 18.3 out of place
 * (2.6 times the copy floor against 4.2) and 10.4 against 15.4 in place, on a
 * busy machine; on a quiet one, 3 alternating runs, 10.2 against 11.6 ms and
 * 9.2 against 10.9;
 * cross-memory attach lost at 1, 4 and 16 MiB too (1.5-2 times as long). Only
 * the slots' 512 KiB need stay in the cache, not the message. */
#define WEFT__SHM_STAGED ((size_t)64 << 20)
/* From this size, an all-reduce through the slots writes an output apart
 * from its input around the cache (weft__copy_stream), so that the output's
 * lines are not read from memory first. Against ordinary stores, alternating
 * in one run (medians of 20-30): 1.10-1.37 times as fast from 1 to 16 MiB on
 * 2 ranks, 1.08-1.22 on 3 and 4. In place it lost (0.87-0.92: the input's
 * lines are in the cache already), so it is not used there. With the
 * program reading the whole result after each call, ordinary stores were
 * 0.86-1.02 times as fast at 4, 8 and 16 MiB: the next read does not pay
 * back what streaming saved. Not below 4 MiB, more than a core's own cache
 * (1 MiB there): a smaller result may still be in the cache when the
 * program reads it next. */
#define WEFT__SHM_STREAM ((size_t)4 << 20)
#define WEFT__SHM_MAXIOV 1024
#define WEFT__SHM_MAXPIECES 512
#define WEFT__SHM_GAP 4096

/* The arena of g (which == 0) or of its host communicator (which == 1),
 * set up at the first call: NULL when out of memory (reported); else
 * sh->state says whether it may be used. Collective. */
struct weft__shm *weft__shm_get(weft_group *g, int which, const char *opname, int *rc);

/* Start call number ++seq: publish s and r, wait until every peer has
 * entered it. Or in two steps: next (the number), then meet. */
int weft__shm_begin(struct weft__shm *sh, const void *s, const void *r, const char *opname);
int weft__shm_next(struct weft__shm *sh, const char *opname);
int weft__shm_meet(struct weft__shm *sh, const void *s, const void *r, const char *opname);
/* Member k's slot for this call: small messages are copied through it. */
char *weft__shm_slot(const struct weft__shm *sh, int k);
/* Our part of the result is final (READY). */
void weft__shm_ready(struct weft__shm *sh);
/* Wait until member k's counter (WEFT__SHM_READY, ...) reaches this call;
 * or only say whether it has (reached: 1 or 0, never waits). */
int weft__shm_wait(struct weft__shm *sh, int k, int counter, const char *opname);
int weft__shm_reached(const struct weft__shm *sh, int k, int counter);
/* Finish it: say so, and wait until every peer is done with our memory;
 * or only say so (done: peers read nothing of ours but the slot). */
int weft__shm_end(struct weft__shm *sh, const char *opname);
void weft__shm_done(struct weft__shm *sh);
/* Read (write == 0) or write a peer's memory: nl local and nr remote
 * pieces of bytes in all. */
int weft__shm_xfer(struct weft__shm *sh, int peer, int write, const struct iovec *l, size_t nl,
                   const struct iovec *r, size_t nr, size_t bytes, const char *opname);
/* Give up the current call after a local failure (rc), so that peers stop
 * waiting for us; returns rc. */
int weft__shm_fail(struct weft__shm *sh, int rc);

#endif /* WEFT_RT_SHM_H */
