/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's call page: how libweft tells its agent (weft-rank) in which weft
 * call the rank is, without a system call on the hot path. The agent makes
 * a shared memory file (memfd), names it in the rank's environment
 * (WEFT_RANK_PAGE=/proc/AGENT/fd/N), and libweft maps it at weft_init; at the
 * entry and exit of every collective libweft stores the call, its group, its
 * bytes and the time (CLOCK_MONOTONIC, the same clock on the agent's side of
 * the host), between two increments of seq (a sequence lock: odd while it
 * writes). The agent copies it into its heartbeats. A rank without an agent
 * gets a page of its own in process memory, so the watchdog works the same.
 * Internal tier: not installed, no ABI promise (see weftx.h); magic and
 * version guard against a page of another weft.
 */
#ifndef WEFTX_PAGE_H
#define WEFTX_PAGE_H

#include <stdint.h>

#define WEFTX_PAGE_ENV "WEFT_RANK_PAGE"
#define WEFTX_PAGE_MAGIC 0x74666577u /* "weft" */
#define WEFTX_PAGE_VERSION 1
#define WEFTX_PAGE_SIZE 8192
/* Exit status of a rank that libweft ends at a deadline (WEFT_INIT_TIMEOUT, the
 * collective watchdog), as timeout(1) and weftrun --timeout say it. */
#define WEFTX_PAGE_DEADLINE_EXIT 124

typedef enum weftx_page_state {
  WEFTX_PAGE_NONE = 0,  /* libweft not started (or not a libweft program) */
  WEFTX_PAGE_INIT,      /* in weft_init: waiting for every rank */
  WEFTX_PAGE_RUNNING,   /* between weft_init and weft_finalize */
  WEFTX_PAGE_FINALIZED, /* weft_finalize returned */
  WEFTX_PAGE_DEADLINE,  /* a weft deadline expired in the call shown */
} weftx_page_state;

/* clang-format cannot keep an X-macro list as written: */
/* clang-format off */
#define WEFTX_PAGE_OPS(X)                                                             \
  X(NONE, "none") X(INIT, "weft_init") X(ALLREDUCE, "allreduce") X(BROADCAST, "broadcast") \
  X(ALLGATHER, "allgather") X(REDUCE_SCATTER, "reduce_scatter") X(SEND, "send")      \
  X(RECV, "recv") X(BARRIER, "barrier") X(BUCKET, "bucket allreduce")                \
  X(FINALIZE, "weft_finalize") X(WAIT, "weft_group_wait")
/* clang-format on */

#define WEFTX_PAGE_OP_ENUM(name, text) WEFTX_OP_##name,
typedef enum weftx_page_op { WEFTX_PAGE_OPS(WEFTX_PAGE_OP_ENUM) WEFTX_OP_COUNT } weftx_page_op;
#undef WEFTX_PAGE_OP_ENUM

typedef struct weftx_page {
  uint32_t magic, version;
  uint32_t seq;  /* odd while being written (atomic stores) */
  int32_t state; /* weftx_page_state */
  int32_t op;    /* weftx_page_op of the current call, NONE between calls */
  int32_t world_rank;
  int32_t group_first; /* world rank of the group's rank 0 */
  int32_t group_size;
  uint64_t bytes;     /* of the current call */
  int64_t since_ns;   /* CLOCK_MONOTONIC: entry of the call, or end of the last one */
  uint64_t calls;     /* calls completed */
  double timeout_s;   /* DEADLINE: the deadline that expired */
  char group[32];     /* the call's group name */
  char why[512];      /* DEADLINE: libweft's line */
  char members[4096]; /* DEADLINE: the group's world ranks, "0-3,8" */
} weftx_page;

/* The call's name ("allreduce"), "?" for a value out of range. */
static inline const char *weftx_page_op_name(int op)
{
#define WEFTX_PAGE_OP_NAME(name, text) text,
  static const char *const names[] = {WEFTX_PAGE_OPS(WEFTX_PAGE_OP_NAME)};
#undef WEFTX_PAGE_OP_NAME
  return op >= 0 && op < WEFTX_OP_COUNT ? names[op] : "?";
}

#endif /* WEFTX_PAGE_H */
