/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL side of the runtime, shared by its three files:
 *   nccl-comm.c    a group's communicator: bootstrap, split, failure, abort,
 *                  finalize; the rank's device made current and put back
 *   nccl-flight.c  the device calls in flight: their events, deadlines, the
 *                  watchdog's view of them, weft_group_wait()
 *   backend-nccl.c the calls themselves (the backend's table)
 * Built only where configure found CUDA and NCCL.
 */
#ifndef WEFT_RT_NCCL_PRIVATE_H
#define WEFT_RT_NCCL_PRIVATE_H

#include "rt_private.h"
#include "nccl-dl.h"

/* MPI tags on the group's communicator (host send/recv use 1). */
enum { WEFT__TAG_FLAG_UP = 7, WEFT__TAG_FLAG_DOWN = 8, WEFT__TAG_ABORTED = 12 };

struct weft__boot {
  int ok;
  ncclUniqueId id;
};

/* One device call queued on a stream and not yet seen finished. */
struct weft__flight {
  cudaEvent_t start, done;  /* around the call; start is recorded only with a deadline */
  int64_t seq;              /* the group's device call number, from 1 */
  unsigned long arrival;    /* the group's collective number (arrival tokens); 0 for p2p */
  int peer;                 /* group rank of a send's or receive's peer; -1 collective */
  const char *fn;
  double started;           /* when weft first saw the stream reach it; 0 not yet */
};

struct weft__tell;          /* an abort notice in flight (nccl-comm.c) */

/* The NCCL side of a group (g->nccl). */
struct weft__ncgroup {
  weft_group *g;
  ncclComm_t comm;          /* the group's communicator, once up */
  ncclComm_t child;         /* where a non-blocking ncclCommSplit writes it, late: it
                             * must outlive the call, so it lives here */
  int blocking;             /* NCCL_COMM_BLOCKING=1 made comm blocking */
  int failed;               /* its code (WEFT_E*) once it failed: device calls refuse */
  char why[400];
  struct weft__boot *boot;  /* unique-id broadcast; may outlive its request */
  MPI_Request boot_req;
  /* Calls in flight (nccl-flight.c): fl[head .. head + n) modulo cap, oldest
   * first; changed and read only under weft__flights_lock(). */
  struct weft__flight *fl;
  size_t head, n, cap;
  int64_t queued;           /* device calls queued on comm */
  int64_t completed;        /* of them, those seen finished, in order */
  struct weft__tell *tell;
  int noticed;              /* a member's abort notice came (taken, not yet acted on) */
  int notice_from;          /* its world rank */
  int64_t notice_done;      /* the calls it had finished; -1 unknown */
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
/* 1 when a member's abort notice has come (taken into ns->noticed...). */
int weft__nc_notice(weft_group *g);
/* Act on a member's notice: abort ours. 1 if there was one. */
int weft__nc_told(weft_group *g);
/* The asynchronous error comm reports, or ncclSuccess (also for none to ask,
 * a call still in progress, or a query that failed). */
ncclResult_t weft__nc_async_error(ncclComm_t comm);
/* After a call on comm returned r: wait (bounded) until NCCL took it. */
int weft__nc_settle(weft_group *g, ncclComm_t comm, ncclResult_t r, const char *fn);
/* A CUDA error as the call's failure. */
int weft__nc_cuda_fail(weft_ctx *ctx, const char *what, cudaError_t e);
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
/* Before a device call on g, queued on stream: look at the calls in flight
 * (those past their deadline fail the group and this call), then record the
 * start event of this one when a deadline is on. *watched is 0 when the call
 * goes unwatched (the stream is being captured into a CUDA graph). */
int weft__fl_begin(weft_group *g, void *stream, const char *fn, int *watched);
/* After NCCL took the call: it is in flight (its done event recorded). */
int weft__fl_end(weft_group *g, void *stream, const char *fn, int peer, int watched);
/* Wait until every call in flight on g has finished, at most until time end
 * (weftx_monotonic()); deadlines and notices act meanwhile. 0, or the failure. */
int weft__fl_wait(weft_group *g, double end, const char *fn);
/* Forget g's calls in flight (after an abort, or when the group goes). */
void weft__fl_clear(struct weft__ncgroup *ns);
/* Around an NCCL call that may block in the host (a blocking communicator's
 * init, split, finalize or first connection): the watchdog ends the rank when
 * it has not returned after limit seconds. */
void weft__nc_blocking_enter(const weft_group *g, const char *what, double limit);
void weft__nc_blocking_exit(void);

#endif /* WEFT_RT_NCCL_PRIVATE_H */
