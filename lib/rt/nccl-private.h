/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL side of the runtime, shared by its files, each above the next:
 *   backend-nccl.c the calls themselves (the backend's table), weft_group_wait
 *   nccl-split.c   mesh groups' communicators split from the world's
 *   nccl-comm.c    a group's communicator: bootstrap, failure, abort,
 *                  finalize; what is done about the calls in flight
 *                  (deadlines, a member's notice); the rank's device made
 *                  current and put back
 *   nccl-flight.c  the device calls in flight: their events, what has
 *                  finished, the watchdog's view of them
 *   nccl-dl.c      CUDA's runtime and NCCL, opened when first needed
 * Built only where configure found CUDA and NCCL.
 */
#ifndef WEFT_RT_NCCL_PRIVATE_H
#define WEFT_RT_NCCL_PRIVATE_H

#include "rt_private.h"
#include "nccl-dl.h"

/* MPI tags on the group's communicator (host send/recv and batches use 1,
 * host all-to-all 2); NONE is carried by no message (a probe that only makes
 * MPI progress). */
enum {
  WEFT__TAG_FLAG_UP = 7,
  WEFT__TAG_FLAG_DOWN = 8,
  WEFT__TAG_ABORTED = 12,
  WEFT__TAG_NONE = 13
};

struct weft__boot {
  int ok;
  ncclUniqueId id;
};

/* The peers of a batch of sends and receives, for its deadline to name those
 * that never posted their side: for each peer (group rank), the number of our
 * last send to it and receive from it in the batch, counted as deadline.c's
 * tokens (0: none). The first WEFT__FL_PEERS peers are kept, more counted. */
#define WEFT__FL_PEERS 8
#define WEFT__FL_BATCH (-2) /* weft__flight.peer of a batch */
struct weft__fl_batch {
  int n, more;
  struct {
    int peer;
    unsigned long send, recv;
  } p[WEFT__FL_PEERS];
};

/* One device call queued on a stream and not yet seen finished. */
struct weft__flight {
  cudaEvent_t start, done; /* around the call; start is recorded only with a deadline */
  int64_t seq;             /* the group's device call number, from 1 */
  unsigned long arrival;   /* the group's collective number (arrival tokens); 0 for p2p */
  int peer;                /* group rank of a send's or receive's peer; -1 collective;
                             * WEFT__FL_BATCH a batch (its peers in batch) */
  const char *fn;
  double started; /* when weft first saw the stream reach it; 0 not yet */
  struct weft__fl_batch batch;
};

struct weft__tell; /* an abort notice in flight (nccl-comm.c) */

/* The NCCL side of a group (g->nccl). */
struct weft__ncgroup {
  weft_group *g;
  ncclComm_t comm;  /* the group's communicator, once up */
  ncclComm_t child; /* where a non-blocking ncclCommSplit writes it, late: it
                             * must outlive the call, so it lives here */
  int blocking;     /* NCCL_COMM_BLOCKING=1 made comm blocking */
  int failed;       /* its code (WEFT_E*) once it failed: device calls refuse */
  char why[400];
  struct weft__boot *boot; /* unique-id broadcast; may outlive its request */
  MPI_Request boot_req;
  /* Calls in flight (nccl-flight.c): fl[head .. head + n) modulo cap, oldest
   * first; changed and read only under weft__flights_lock(). */
  struct weft__flight *fl;
  size_t head, n, cap;
  int64_t queued;    /* device calls queued on comm */
  int64_t completed; /* of them, those seen finished, in order */
  struct weft__tell *tell;
  int noticed;                /* a member's abort notice came (taken, not yet acted on) */
  int notice_from;            /* its world rank */
  int64_t notice_done;        /* the calls it had finished; -1 unknown */
  struct weft__ncgroup *next; /* the watchdog's list of every group with a device side */
};

/* ---- nccl-comm.c ---- */
/* g's NCCL side, made at first use; NULL without memory. */
struct weft__ncgroup *weft__nc_state(weft_group *g);
/* g's communicator, brought up at the group's first device call (collective
 * over the group: every member must come); checks that it is usable. */
int weft__nc_comm(weft_group *g, ncclComm_t *out, const char *fn);
/* Before a device call on g: fails at once when the group failed, a member
 * told us it aborted, or comm (NULL: none to ask) reported an error. */
int weft__nc_usable(weft_group *g, ncclComm_t comm, const char *fn);
/* Abort g's communicator, refuse device calls on g from now on with code and
 * why, and (tell) tell the other members to do the same. */
void weft__nc_abort(weft_group *g, int code, int tell, const char *why);
/* The asynchronous error comm reports, or ncclSuccess (also for none to ask,
 * a call still in progress, or a query that failed). */
ncclResult_t weft__nc_async_error(ncclComm_t comm);
/* The one wait for a non-blocking communicator: poll until the call in
 * progress (r) settles, or until time end. ncclSuccess, NCCL's error, or
 * ncclInProgress when the time ran out. */
ncclResult_t weft__nc_wait_comm(ncclComm_t comm, ncclResult_t r, double end);
/* After a call on comm returned r: wait (bounded) until NCCL took it. */
int weft__nc_settle(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn);
/* Look at g's calls in flight and act: one past its deadline fails the
 * group and fn (naming who had not joined it), as do our communicator's
 * asynchronous error and a member's abort notice (once the calls that member
 * had finished have finished here). With end > 0, keep looking until none is
 * left: with a deadline, end bounds only the wait for calls not reached yet;
 * without one, the whole wait. Also makes room when FLIGHTS_MAX are in
 * flight. 0, or the failure. */
int weft__nc_poll(weft_group *g, const char *fn, double end);
/* Make the rank's device current for weft's work; *saved keeps what the
 * thread had (its CUDA context, possibly none) for weft__nc_device_put_back. */
int weft__nc_device(weft_ctx *ctx, void **saved);
void weft__nc_device_put_back(void *saved);

/* ---- nccl-flight.c ---- */
/* The lock of every group's calls in flight (the watchdog reads them too). */
void weft__flights_lock(void);
void weft__flights_unlock(void);
/* Put g's NCCL side on the watchdog's list, and take it off. */
void weft__flights_register(struct weft__ncgroup *ns);
void weft__flights_unregister(struct weft__ncgroup *ns);
/* What weft__fl_see found. */
struct weft__fl_seen {
  size_t left;    /* calls still in flight */
  size_t waiting; /* of them, not reached by their stream yet (with a deadline) */
  int64_t oldest; /* the oldest one's seq, -1 for none */
  int over;       /* 1: late is one past its deadline */
  struct weft__flight late;
};
/* Retire ns's calls that have finished, in order, and say what is left
 * (limit: the deadline, 0 for none). */
void weft__fl_see(struct weft__ncgroup *ns, double limit, struct weft__fl_seen *seen);
/* Before a device call on g, queued on stream: record its start event when a
 * deadline is on. *watched is 0 when the call goes unwatched (the stream is
 * being captured into a CUDA graph). */
int weft__fl_begin(weft_group *g, void *stream, const char *fn, int *watched);
/* After NCCL took the call: it is in flight (its done event recorded). b:
 * a batch's peers (peer WEFT__FL_BATCH), else NULL. */
int weft__fl_end(weft_group *g, void *stream, const char *fn, int peer,
                 const struct weft__fl_batch *b, int watched);
/* Forget g's calls in flight (after an abort, or when the group goes). */
void weft__fl_clear(struct weft__ncgroup *ns);
/* Around an NCCL call that may block in the host (a blocking communicator's
 * init, split, finalize or first connection): the watchdog ends the rank when
 * it has not returned after limit seconds. */
void weft__fl_blocking_enter(const weft_group *g, const char *what, double limit);
void weft__fl_blocking_exit(void);

/* ---- nccl-split.c ---- */
/* (weft__nccl_split, in rt_private.h) */

#endif /* WEFT_RT_NCCL_PRIVATE_H */
