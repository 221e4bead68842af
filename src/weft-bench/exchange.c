/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --floor's exchange floor: every rank copies the row's bytes into shared
 * memory and its neighbour's (rank + 1) out of it into its own buffer,
 * 512 KiB at a time through two pieces of shared memory per rank, as weft's
 * host collectives move data (lib/rt/shm-coll.c). A shared-memory
 * collective that gives every rank data from another moves at least that
 * much between processors, so on a host whose processors pass data slowly
 * (a cloud VM's virtual processors on different cores) no algorithm comes
 * nearer the copy floor than this. Only when every rank is on this host.
 */
#include "driver.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE ((size_t)512 << 10)
#define DEADLINE_S 60.0

struct bench_xchg {
  MPI_Comm node;
  MPI_Win win;
  char *slot[2]; /* ours, then our neighbour's (two pieces each) */
  /* The last piece copied in: ours, our reader's (rank - 1), our neighbour's */
  _Atomic uint64_t *mine, *reader, *next;
  uint64_t piece; /* pieces so far, the same count on every rank */
};

/* One rank's part of the window: its counter on a line of its own, then
 * its two pieces. */
#define HEAD ((size_t)64)

int bench_xchg_open(MPI_Comm comm, struct bench_xchg **out, char *why, size_t whylen)
{
  struct bench_xchg *x;
  int size, nsize, me, rc, k, bad, worst;
  MPI_Aint len;
  int unit;
  char *base, *part[3];

  *out = NULL;
  if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2)
    return 0;
  if (!(x = calloc(1, sizeof(*x))))
    return WEFT_ENOMEM;
  rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &x->node);
  if (rc != MPI_SUCCESS) {
    free(x);
    return WEFT_EMPI;
  }
  MPI_Comm_size(x->node, &nsize);
  /* Every rank decides alike: the node communicator of each has all ranks. */
  if (nsize != size) {
    MPI_Comm_free(&x->node);
    free(x);
    return 0;
  }
  MPI_Comm_rank(x->node, &me);
  /* A window MPI cannot make (no shared-memory component, a full /dev/shm)
   * leaves the exchange out with a reason, not the run ended by MPI. */
  MPI_Comm_set_errhandler(x->node, MPI_ERRORS_RETURN);
  x->win = MPI_WIN_NULL;
  rc = MPI_Win_allocate_shared((MPI_Aint)(HEAD + 2 * PIECE), 1, MPI_INFO_NULL, x->node, &base,
                               &x->win);
  bad = rc != MPI_SUCCESS ? 2 : 0;
  if (!bad)
    MPI_Win_set_errhandler(x->win, MPI_ERRORS_RETURN);
  for (k = 0; k < 3 && !bad; k++) {
    int who = k == 0 ? me : k == 1 ? (me + size - 1) % size : (me + 1) % size;
    if ((rc = MPI_Win_shared_query(x->win, who, &len, &unit, &part[k])) != MPI_SUCCESS)
      bad = 1;
  }
  /* Every rank decides alike here too: 2, a rank has no window (the others'
   * cannot be freed, a collective it would not join); 1, every rank has one. */
  if (MPI_Allreduce(&bad, &worst, 1, MPI_INT, MPI_MAX, x->node) != MPI_SUCCESS)
    worst = 2;
  if (worst) {
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (bad && MPI_Error_string(rc, msg, &n) != MPI_SUCCESS)
      n = 0;
    msg[n] = '\0';
    snprintf(why, whylen, "MPI could not make a shared-memory window on this host (%s%s%s)",
             bad == 2 ? "MPI_Win_allocate_shared"
             : bad    ? "MPI_Win_shared_query"
                      : "on another rank",
             n ? ": " : "", msg);
    if (worst == 1)
      MPI_Win_free(&x->win);
    MPI_Comm_free(&x->node);
    free(x);
    return WEFT_EMPI;
  }
  x->mine = (_Atomic uint64_t *)part[0];
  x->reader = (_Atomic uint64_t *)part[1];
  x->next = (_Atomic uint64_t *)part[2];
  x->slot[0] = part[0] + HEAD;
  x->slot[1] = part[2] + HEAD;
  atomic_store(x->mine, 0);
  memset(x->slot[0], 0, 2 * PIECE); /* touched: the floor is not first faults */
  MPI_Barrier(x->node);
  *out = x;
  return 0;
}

/* Wait until *c reaches at least v; 0, or -1 after DEADLINE_S. Yields
 * while waiting: ranks may outnumber processors. */
static int await(_Atomic uint64_t *c, uint64_t v)
{
  double t0 = MPI_Wtime();
  unsigned polls = 0;

  while (atomic_load_explicit(c, memory_order_acquire) < v) {
    if (++polls % 256 == 0) {
      sched_yield();
      if (MPI_Wtime() - t0 > DEADLINE_S)
        return -1;
    }
  }
  return 0;
}

int bench_xchg_run(struct bench_xchg *x, char *dst, const char *src, size_t bytes)
{
  size_t at, len;

  for (at = 0; at < bytes; at += len) {
    uint64_t p = ++x->piece;
    size_t half = (size_t)(p & 1) * PIECE;
    len = bytes - at < PIECE ? bytes - at : PIECE;
    /* Our reader has copied out piece p - 2, which used this half, once
     * it has copied in piece p - 1. */
    if (p > 2 && await(x->reader, p - 1) != 0)
      return WEFT_ETIMEDOUT;
    memcpy(x->slot[0] + half, src + at, len);
    atomic_store_explicit(x->mine, p, memory_order_release);
    if (await(x->next, p) != 0)
      return WEFT_ETIMEDOUT;
    memcpy(dst + at, x->slot[1] + half, len);
  }
  return 0;
}

void bench_xchg_close(struct bench_xchg *x)
{
  if (!x)
    return;
  /* Nobody reads our pieces any more once all have passed here. */
  MPI_Barrier(x->node);
  MPI_Win_free(&x->win);
  MPI_Comm_free(&x->node);
  free(x);
}
