/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-all within one host through shared memory (the arena and waits are
 * shm.c's; the all-reduce family is shm-coll.c's). Only the receiver of a
 * block writes it into its own buffer; nothing is packed on the way out but
 * into the arena.
 *
 * Equal blocks (weft_alltoall): every rank takes the same way and knows
 * where each block lies, so no header. Each round every sender copies the
 * next piece of each outgoing block into its slot of the arena, the ranks
 * meet, and every rank copies its pieces out of the senders' slots; the
 * slots alternate with the rounds (staged_blocks). Two ranks with medium
 * blocks read them from each other's send buffers instead (direct_blocks).
 *
 * Per-peer counts (weft_alltoallv): each rank writes a header into its slot:
 * for every peer, how many elements it sends it, how many it expects from it,
 * and where the block is. One meeting, after which every rank has every
 * header and reads its blocks itself, each straight into its place in its
 * receive buffer: from the sender's slot, where the sender copied its
 * outgoing blocks when they fit there (up to WEFT__A2A_SLOTTED bytes; one copy
 * in, one copy out, no system call), or else from the sender's send buffer
 * with cross-memory attach (process_vm_readv: one copy, one system call per
 * peer). Each sender decides from its own total and says which in its header,
 * so per-peer counts need no round to agree (rounds would: how many, every
 * rank's totals decide). A sender read from its send buffer waits until every
 * peer is done (DONE) before it returns; one that copied into its slot does
 * not: the slot alternates with the call's parity (shm.c), and a peer that
 * entered the next call has finished reading this one. Every rank checks
 * every pair's counts from the headers (each rank's sendcounts[j] against
 * rank j's recvcounts), so that a mismatch fails the call on every rank with
 * the same line instead of reading past a block; equal blocks check that the
 * count is the same everywhere.
 *
 * Ranks read from the next rank on, so that they do not all start on one,
 * and copy their own block while the others are busy (before a meeting, or
 * after their reads while the peers finish reading theirs).
 */
#include "shm.h"

#include <string.h>
#include <sys/uio.h>

/* How a sender's blocks are read. */
enum { MODE_SLOT = 1, MODE_DIRECT = 2 };

/* A header: the mode, then one entry per member. */
struct head {
  uint64_t mode;
  uint64_t pad[7];
};
struct entry {
  uint64_t at;     /* MODE_SLOT: offset in the slot's data; else the address */
  uint64_t sc, rc; /* elements sent to, expected from this member */
};

/* Outgoing bytes (our own block aside) up to which a sender of per-peer
 * counts copies them through its slot rather than let peers read its send
 * buffer. */
#define WEFT__A2A_SLOTTED WEFT__SHM_SLOT
/* Equal blocks go through the slots in rounds (three copies a byte: in, out,
 * and our own block; no system call), except blocks of [MIN, MAX) bytes
 * between two ranks, read from the sender's buffer (two copies, a system call
 * and every page pinned). Against Open MPI 4.1's MPI_Alltoall (whose 2-rank
 * form reads with cross-memory attach too) on a 2-core host, medians of runs
 * that alternate: with 2 ranks, rounds were 0.92-0.94 times MPI's speed from
 * 512 KiB to 2 MiB a rank, reading 0.99-1.07; rounds 1.06-1.26 from 16 MiB,
 * reading 0.93-1.00; with 4 ranks (on the 2 cores) rounds were as fast or
 * faster at every size, up to 1.3 times reading's speed at 512 KiB. */
#define WEFT__A2A_DIRECT_MIN ((size_t)256 << 10)
#define WEFT__A2A_DIRECT_MAX ((size_t)8 << 20)
/* One process_vm_readv moves at most this much (Linux stops short of 2 GiB). */
#define XFER_MAX ((size_t)1 << 30)

static size_t head_bytes(int p)
{
  return (sizeof(struct head) + (size_t)p * sizeof(struct entry) + 63) & ~(size_t)63;
}

static struct entry *entries(char *slot) { return (struct entry *)(slot + sizeof(struct head)); }

/* A mismatch anywhere: the first pair (sender, receiver) in rank order. */
static int counts_agree(struct weft__shm *sh, const char *fn)
{
  int a, b;

  for (a = 0; a < sh->size; a++) {
    const struct entry *ea = entries(weft__shm_slot(sh, a));
    for (b = 0; b < sh->size; b++) {
      const struct entry *eb = entries(weft__shm_slot(sh, b));
      if (ea[b].sc != eb[a].rc)
        return weft__shm_fail(
          sh, weft__rt_fail(sh->ctx, WEFT_EINVAL,
                            "%s on group %s: world rank %d sends %llu elements to world rank %d, "
                            "which expects %llu; recvcounts[i] on every rank must be rank i's "
                            "sendcounts[that rank]: fix the counts and abort the job (the "
                            "group's shared memory is closed)",
                            fn, sh->g->name, sh->world[a], (unsigned long long)ea[b].sc,
                            sh->world[b], (unsigned long long)eb[a].rc));
    }
  }
  return 0;
}

/* Read peer k's block for us: from its slot, or from its send buffer. */
static int fetch(struct weft__shm *sh, int k, char *dst, size_t bytes, size_t head, const char *fn)
{
  char *slot = weft__shm_slot(sh, k);
  const struct entry *e = &entries(slot)[sh->rank];
  size_t off;
  int rc;

  if (((const struct head *)slot)->mode == MODE_SLOT) {
    memcpy(dst, slot + head + e->at, bytes);
    return 0;
  }
  for (off = 0; off < bytes; off += XFER_MAX) {
    size_t m = bytes - off < XFER_MAX ? bytes - off : XFER_MAX;
    struct iovec l = {dst + off, m}, r = {(void *)(uintptr_t)(e->at + off), m};
    if ((rc = weft__shm_xfer(sh, k, 0, &l, 1, &r, 1, m, fn)) != 0)
      return rc;
  }
  return 0;
}

/* Equal blocks: every rank takes the same way and knows where each block
 * lies, so no header; only the count, which every rank checks is the same
 * everywhere. It travels where the meeting protects it: at the head of the
 * slot (rounds), or with the send buffer's address (two ranks reading each
 * other's buffer, who wait for each other at the end). A peer that returned
 * early may already be in its next call when we look, so not where its
 * control block holds addresses for the next call. */
#define COUNT_AT 64 /* the slot's bytes before the pieces */

static int same_count(struct weft__shm *sh, size_t n, int in_slot, const char *fn)
{
  int k;

  for (k = 0; k < sh->size; k++) {
    uint64_t theirs = in_slot ? *(const uint64_t *)weft__shm_slot(sh, k) : sh->peer_r[k];
    if (theirs != (uint64_t)n)
      return weft__shm_fail(
        sh, weft__rt_fail(sh->ctx, WEFT_EINVAL,
                          "%s on group %s: world rank %d gives a count of %llu, world rank %d "
                          "of %zu; every rank must give the same: fix the count and abort the "
                          "job (the group's shared memory is closed)",
                          fn, sh->g->name, sh->world[k], (unsigned long long)theirs,
                          sh->world[sh->rank], n));
  }
  return 0;
}

/* Through the slots, a round at a time: each round every sender copies the
 * next piece of each of its blocks into its slot (in rank order, its own left
 * out), the ranks meet, and each copies its pieces out of every sender's
 * slot, from the next rank on. The slots alternate with the rounds, so a
 * sender fills one while the others empty the other. Our own block goes
 * over in pieces too, before each meeting, while the others are still
 * coming. Ordinary stores: writing the pieces around the cache
 * (weft__copy_stream, as the all-reduce does from 4 MiB) was slower here,
 * 8 MiB on 2 ranks took 1.3 times as long. */
static int staged_blocks(struct weft__shm *sh, const char *s, char *r, size_t n, size_t es,
                         const char *fn)
{
  int p = sh->size, me = sh->rank, k, j, rc;
  size_t blk = n * es, c = ((WEFT__SHM_SLOT - COUNT_AT) / (size_t)(p - 1)) & ~(size_t)63, off, m;

  for (off = 0; off < blk; off += m) {
    char *mine;
    m = blk - off < c ? blk - off : c;
    if ((rc = weft__shm_next(sh, fn)) != 0)
      return rc;
    mine = weft__shm_slot(sh, me);
    *(uint64_t *)mine = (uint64_t)n;
    for (k = 0; k < p; k++)
      if (k != me)
        memcpy(mine + COUNT_AT + (size_t)(k - (k > me)) * c, s + (size_t)k * blk + off, m);
    memcpy(r + (size_t)me * blk + off, s + (size_t)me * blk + off, m);
    if ((rc = weft__shm_meet(sh, NULL, NULL, fn)) != 0 || (rc = same_count(sh, n, 1, fn)) != 0)
      return rc;
    for (j = 1; j < p; j++) {
      k = (me + j) % p;
      memcpy(r + (size_t)k * blk + off,
             weft__shm_slot(sh, k) + COUNT_AT + (size_t)(me - (me > k)) * c, m);
    }
  }
  return 0;
}

/* Two ranks with blocks of WEFT__A2A_DIRECT bytes: each reads its block
 * straight from the other's send buffer (the meeting publishes the
 * addresses), then copies its own while the other finishes with its buffer. */
static int direct_blocks(struct weft__shm *sh, const char *s, char *r, size_t n, size_t es,
                         const char *fn)
{
  size_t blk = n * es, off;
  int k, j, rc;

  if ((rc = weft__shm_begin(sh, s, (void *)(uintptr_t)n, fn)) != 0 ||
      (rc = same_count(sh, n, 0, fn)) != 0)
    return rc;
  for (j = 1; j < sh->size; j++) {
    k = (sh->rank + j) % sh->size;
    for (off = 0; off < blk; off += XFER_MAX) {
      size_t m = blk - off < XFER_MAX ? blk - off : XFER_MAX;
      struct iovec l = {r + (size_t)k * blk + off, m};
      struct iovec rv = {(void *)(uintptr_t)(sh->peer_s[k] + (uint64_t)sh->rank * blk + off), m};
      if ((rc = weft__shm_xfer(sh, k, 0, &l, 1, &rv, 1, m, fn)) != 0)
        return rc;
    }
  }
  weft__shm_done(sh);
  memcpy(r + (size_t)sh->rank * blk, s + (size_t)sh->rank * blk, blk);
  return weft__shm_end(sh, fn);
}

int weft__shm_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                       weft_dtype dt)
{
  const char *fn = a->sc ? "alltoallv" : "alltoall";
  size_t es = weft_dtype_size(dt), head = head_bytes(g->size), out = 0, at = 0;
  struct weft__shm *sh;
  struct entry *mine;
  char *slot;
  int k, j, mode, rc;

  /* Facts every member shares: the group, its size, and for equal blocks
   * the count (per-peer counts: the threshold cannot apply, as ranks do not
   * know each other's totals). */
  if (head > WEFT__SHM_SLOT / 2)
    return WEFT__SHM_DECLINED;
  sh = weft__shm_get(g, 0, fn, &rc);
  if (!sh || rc != 0)
    return rc != 0 ? rc : WEFT__SHM_DECLINED;
  if (sh->state == -1 || (sh->state == 1 && !a->sc && a->n * (size_t)g->size * es < sh->threshold))
    return WEFT__SHM_DECLINED;
  if (!a->sc && a->n == 0)
    return 0;
  if (!a->sc)
    return g->size == 2 && a->n * es >= WEFT__A2A_DIRECT_MIN && a->n * es < WEFT__A2A_DIRECT_MAX
             ? direct_blocks(sh, s, r, a->n, es, fn)
             : staged_blocks(sh, s, r, a->n, es, fn);
  if ((rc = weft__shm_next(sh, fn)) != 0)
    return rc;
  for (k = 0; k < sh->size; k++)
    if (k != sh->rank)
      out += weft__a2a_sc(a, k) * es;
  mode = out <= WEFT__A2A_SLOTTED && out <= WEFT__SHM_SLOT - head ? MODE_SLOT : MODE_DIRECT;
  slot = weft__shm_slot(sh, sh->rank);
  ((struct head *)slot)->mode = (uint64_t)mode;
  mine = entries(slot);
  for (k = 0; k < sh->size; k++) {
    size_t n = weft__a2a_sc(a, k) * es;
    const char *blk = (const char *)s + weft__a2a_sd(a, k) * es;
    mine[k].sc = weft__a2a_sc(a, k);
    mine[k].rc = weft__a2a_rc(a, k);
    if (mode == MODE_DIRECT || k == sh->rank) {
      mine[k].at = (uint64_t)(uintptr_t)blk;
      continue;
    }
    mine[k].at = at;
    memcpy(slot + head + at, blk, n);
    at += n;
  }
  if ((rc = weft__shm_meet(sh, NULL, NULL, fn)) != 0)
    return rc;
  if ((rc = counts_agree(sh, fn)) != 0)
    return rc;
  for (j = 1; j < sh->size; j++) {
    size_t n;
    k = (sh->rank + j) % sh->size;
    n = weft__a2a_rc(a, k) * es;
    if (n > 0 && (rc = fetch(sh, k, (char *)r + weft__a2a_rd(a, k) * es, n, head, fn)) != 0)
      return rc;
  }
  /* Done with the peers' memory (some may wait for it: those read from
   * their send buffers); our own block meanwhile. */
  weft__shm_done(sh);
  if (weft__a2a_rc(a, sh->rank) > 0)
    memcpy((char *)r + weft__a2a_rd(a, sh->rank) * es,
           (const char *)s + weft__a2a_sd(a, sh->rank) * es, weft__a2a_rc(a, sh->rank) * es);
  return mode == MODE_DIRECT ? weft__shm_end(sh, fn) : 0;
}
