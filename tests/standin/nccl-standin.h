/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside libnccl.so.2 of the stand-in: communicators, their connections and
 * messages (nccl-net.c), the reductions (nccl-reduce.c) and the API
 * (nccl.c).
 *
 * A communicator is a full mesh of Unix stream sockets between its ranks.
 * The unique id carries the path of the socket of a bootstrap root that
 * ncclGetUniqueId starts (a thread in the caller), as NCCL's carries the
 * address of its bootstrap root; every rank tells the root its rank, host
 * (NCCL_HOSTID, else the host name), device and a socket of its own, and gets
 * back the whole table. A progress thread per communicator reads whatever
 * comes in; operations run in the stream workers and wait for the messages
 * they need.
 *
 * Each pair of ranks has a transport, as NCCL picks one: a network transport
 * between hosts (transport/net_socket.cc, driven by the proxy thread of
 * proxy.cc, which sees a closed connection and sets the communicator's
 * asynchronous error), P2P or SHM within a host (transport/p2p.cc, shm.cc:
 * the kernels poll memory and notice nothing when the peer dies).
 * WEFT_STANDIN_NCCL_TRANSPORT=auto|net|p2p chooses.
 */
#ifndef WEFT_STANDIN_NCCL_H
#define WEFT_STANDIN_NCCL_H

#include "standin.h"

#include <pthread.h>
/* nccl.h declares a few functions as f() (no prototype). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define WSN_MAGIC 0x57534e43u /* "WSNC" */
#define WSN_DEAD 0xdeadu
#define WSN_PATH 108

/* WSN_READY: a receive has started and waits for the send of the same
 * sequence number (the rendezvous of ncclSend). */
enum wsn_kind { WSN_COLL = 1, WSN_P2P, WSN_SPLIT, WSN_ABORT, WSN_FIN, WSN_READY };

/* What each rank tells the bootstrap root (and, for a split, its peers). */
struct wsn_hello {
  uint32_t magic;
  int32_t rank, nranks, physical, pid, error;
  char hostid[64];
  char path[WSN_PATH];
};

struct wsn_hdr {
  uint32_t magic, kind;
  uint64_t seq, bytes, count;
  int32_t from, coll, dtype, op, root, color, key, pad;
};

struct wsn_msg {
  struct wsn_msg *next;
  struct wsn_hdr h;
  char *data;
};

struct wsn_peer {
  int fd;
  pthread_mutex_t wmu; /* one writer at a time */
  struct wsn_msg *head, *tail;
  int closed, fin, aborted;
  int dead; /* closed without finalising or aborting */
  int net;  /* reached over a network transport */
  int pid;
  char hostid[64];
};

struct ncclComm {
  unsigned magic;
  char name[64];
  char parent[64]; /* the parent's name for a split's child, "" after init */
  int rank, nranks, ordinal, physical, blocking;
  ncclResult_t state; /* ncclInProgress while init, split or finalize runs */
  int settle;         /* polls until a non-blocking call has settled */
  ncclResult_t error; /* the asynchronous error, ncclSuccess if none */
  char why[256];
  int peer_aborted; /* a rank that called ncclCommAbort, or -1 */
  int local_abort, finalized, destroyed;
  int error_seen;              /* ncclCommGetAsyncError returned the error */
  int handed;                  /* the caller has its handle */
  int busy;                    /* an init, split or finalize thread runs */
  int split_busy;              /* a non-blocking split of this parent runs */
  int polled;                  /* ncclCommGetAsyncError said ncclInProgress during the
                                non-blocking init or split that runs */
  int split_failed;            /* a child whose split failed (NCCL hands it over) */
  struct ncclComm *abort_with; /* a child being split: its parent's abort ends it too */
  struct wsn_peer *peers;
  int wake[2];
  int progress_on;
  pthread_t progress;
  unsigned long long iter;
  uint64_t issued, done; /* operations queued on streams, and run */
  uint64_t exec_next;    /* the operation that may run next (1-based) */
  uint64_t coll_seq, split_seq;
  uint64_t *p2p_send, *p2p_recv;
  int listen_fd;
  char listen_path[WSN_PATH];
  struct ncclComm *all_next;
};

/* nccl.c */
/* The NCCL version the stand-in plays (WEFT_STANDIN_NCCL_VERSION), as
 * NCCL_VERSION_CODE. */
int wsn_version(void);
/* ncclGetLastError's text: one buffer for the process, as debug.cc's
 * ncclLastError, which every WARN overwrites from whatever thread. */
void wsn_last_error(const char *fmt, ...) WSI_PRINTF(1, 2);

/* nccl-net.c */
/* A listening socket with a fresh path; -1 on failure. */
int wsn_listen(char *path);
/* ncclGetUniqueId's bootstrap root: listening socket and thread. */
int wsn_root_start(char *path);
/* Tell the root at path who we are, get everyone's hello (table of nranks);
 * waits until c->local_abort. 0, or an NCCL error with c->why set. */
ncclResult_t wsn_root_join(struct ncclComm *c, const char *path, const struct wsn_hello *me,
                           struct wsn_hello *table);
/* Connect the full mesh from the table (indexed by rank), check that no two
 * ranks share a device, pick each pair's transport, start the progress
 * thread. */
ncclResult_t wsn_mesh(struct ncclComm *c, const struct wsn_hello *table);
/* Send to peer (to this rank itself too: it lands in its own queue). */
void wsn_send(struct ncclComm *c, int peer, struct wsn_hdr *h, const void *data, size_t bytes);
/* 1 when c's waits must end: this rank aborted c (or the parent it is split
 * from). Lock held. */
int wsn_aborted(const struct ncclComm *c);
/* The message of kind and seq from peer, if it is there; lock held. */
struct wsn_msg *wsn_try_take(struct ncclComm *c, int peer, int kind, uint64_t seq);
/* The bootstrap's receive (split): waits for the message of kind and seq
 * from peer. NULL, with *closed set, when the peer's connection closed first
 * (NCCL's bootstrap sockets report it: misc/socket.cc socketProgress), or
 * NULL when wsn_aborted(c). */
struct wsn_msg *wsn_take_bootstrap(struct ncclComm *c, int peer, int kind, uint64_t seq,
                                   int *closed);
void wsn_msg_free(struct wsn_msg *m);
/* Let the progress thread read what has already arrived. */
void wsn_flush(struct ncclComm *c);
/* Stop the progress thread; close (or, on abort, only shut) the sockets. */
void wsn_close(struct ncclComm *c, int abort);
void wsn_hostid(char *buf, size_t len);
/* The asynchronous error of a peer that died over a network transport, as
 * NCCL's proxy sets it; lock held. */
void wsn_remote_error(struct ncclComm *c, int peer);

/* nccl-reduce.c */
size_t wsn_type_size(ncclDataType_t dt);
const char *wsn_type_name(ncclDataType_t dt);
const char *wsn_op_name(ncclRedOp_t op);
/* The reductions in NCCL's ring order (one ring in rank order, one channel,
 * one loop). in[p] is rank p's buffer (for reduce-scatter: rank p's block
 * for this rank), each count elements. */
void wsn_ring_allreduce(void *out, const char *const *in, int nranks, size_t count,
                        ncclDataType_t dt, ncclRedOp_t op);
void wsn_ring_reduce(void *out, const char *const *in, int nranks, int root, size_t count,
                     ncclDataType_t dt, ncclRedOp_t op);
void wsn_ring_reduce_scatter(void *out, const char *const *in, int nranks, int rank, size_t count,
                             ncclDataType_t dt, ncclRedOp_t op);
/* What a one-rank communicator does for ncclAvg on a floating-point type
 * (device/onerank.cu oneRankReduce with FuncPreMulSum): out = in * (1/1). */
void wsn_premul_one(void *out, const void *in, size_t count, ncclDataType_t dt);

#endif /* WEFT_STANDIN_NCCL_H */
