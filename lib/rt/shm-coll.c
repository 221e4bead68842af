/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host collectives through shared memory (the arena and waits are shm.c's).
 *
 * All-reduce: the n elements are cut into one slice per rank. The owner of a
 * slice reads it from every peer's input with process_vm_readv, a chunk at a
 * time into a buffer that stays in cache, reduces the chunk into its own
 * output in rank order (0, 1, ..., p-1, the same order for every element) and
 * divides for AVG; when its slice is final it says so (READY), and every rank
 * reads each finished slice straight from its owner's output into its own.
 * Each element is computed once, by one rank, so every rank ends with the
 * same bits; integers are exact, so they equal the MPI path's. Reduce-scatter
 * is the first half, all-gather the second, the hierarchical all-reduce has
 * MPI across hosts between the two, and a bucket is an all-reduce over its
 * tensors as they lie: the pieces of each chunk go to the kernel as lists of
 * iovecs, so nothing is packed. Only reads cross processes: every rank writes
 * its own memory alone.
 *
 * A call costs three meetings (shm.c): every rank has published its
 * addresses (begin), a slice is final (READY, waited for per owner), every
 * rank has finished with every other's memory (end). Small inputs take
 * another way, through the arena's slots, with one meeting, and all-reduces
 * and buckets of up to WEFT_HOST_SHM_STAGED bytes a third, through the slots
 * a round at a time (below).
 */
#include "shm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* A buffer as the algorithms see it: segments with the same element counts
 * at every member (one segment for a plain buffer; a bucket's tensors). */
struct view {
  size_t nseg;
  const size_t *start;             /* start[i]: first element of segment i; nseg + 1 */
  const struct weft__seg *s, *r;   /* this rank's input and output segments */
  const uint64_t *peer_s, *peer_r; /* [k * nseg + i]: segment i at member k */
  size_t rshift;                   /* one segment only: element x's output is at
                                     * r + (x - rshift) (reduce-scatter); else 0 */
  int inplace;                     /* each output piece is the input piece itself */
  int stream;                      /* copies into the output bypass the cache */
};

/* Member k's slice of n elements: the first n % p members get one more. */
static void slice(size_t n, int p, int k, size_t *lo, size_t *hi)
{
  size_t q = n / (size_t)p, r = n % (size_t)p, kk = (size_t)k;

  *lo = kk * q + (kk < r ? kk : r);
  *hi = *lo + q + (kk < r);
}

/* The segment holding element x (start is sorted). */
static size_t find(const struct view *v, size_t x)
{
  size_t lo = 0, hi = v->nseg;

  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (v->start[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* The pieces of elements [a, b), at most maxn elements and
 * WEFT__SHM_MAXPIECES pieces; returns the number of elements taken. */
static size_t pieces(const struct view *v, size_t a, size_t b, size_t maxn, struct weft__piece *pc,
                     size_t *npc)
{
  size_t i = find(v, a), taken = 0;

  *npc = 0;
  while (a + taken < b && taken < maxn && *npc < WEFT__SHM_MAXPIECES) {
    size_t x = a + taken, off = x - v->start[i], len = v->start[i + 1] - x;
    if (len > b - x)
      len = b - x;
    if (len > maxn - taken)
      len = maxn - taken;
    pc[*npc].seg = i;
    pc[*npc].off = off;
    pc[*npc].len = len;
    (*npc)++;
    taken += len;
    i++;
  }
  return taken;
}

static char *in_at(const struct view *v, const struct weft__piece *pc, size_t es)
{
  return v->s[pc->seg].p + pc->off * es;
}

static char *out_at(const struct view *v, const struct weft__piece *pc, size_t es)
{
  return v->r[pc->seg].p + (pc->off - v->rshift) * es;
}

/* Read the pieces from member k's input (from_out 0) or output (1) into
 * buf, contiguous, or (buf NULL) into our own output pieces. The kernel
 * pins the remote pages of each remote range on its own, which costs about
 * as much as copying a kilobyte: remote pieces less than WEFT__SHM_GAP bytes
 * apart (tensors one after another in a heap) are read as one range, and
 * the bytes between them land in a scratch buffer. Less than a page apart,
 * every page of the range holds bytes of a piece, so it is mapped. */
static int pull(struct weft__shm *sh, const struct view *v, int k, int from_out,
                const struct weft__piece *pc, size_t npc, size_t es, char *buf, const char *opname)
{
  const uint64_t *base = from_out ? v->peer_r : v->peer_s;
  char *scratch = sh->tmp + 3 * WEFT__SHM_CHUNK;
  size_t nl = 0, nr = 0, total = 0, at = 0, j;
  uint64_t end = 0;

  for (j = 0; j < npc; j++) {
    uint64_t a = base[(size_t)k * v->nseg + pc[j].seg] + pc[j].off * es;
    size_t len = pc[j].len * es;
    if (nr > 0 && a >= end && a - end < WEFT__SHM_GAP) {
      if (a > end) {
        sh->iov_l[nl].iov_base = scratch;
        sh->iov_l[nl++].iov_len = (size_t)(a - end);
      }
      sh->iov_r[nr - 1].iov_len += (size_t)(a - end) + len;
      total += (size_t)(a - end);
    } else {
      sh->iov_r[nr].iov_base = (void *)(uintptr_t)a;
      sh->iov_r[nr++].iov_len = len;
    }
    sh->iov_l[nl].iov_base = buf ? buf + at * es : out_at(v, &pc[j], es);
    sh->iov_l[nl++].iov_len = len;
    end = a + len;
    total += len;
    at += pc[j].len;
  }
  return weft__shm_xfer(sh, k, 0, sh->iov_l, nl, sh->iov_r, nr, total, opname);
}

/* Operand k of the fold for piece j: our own input, or what was read. */
static const char *operand(const struct view *v, const struct weft__piece *pc, size_t es, int own,
                           const char *buf, size_t at)
{
  return own ? in_at(v, pc, es) : buf + at * es;
}

/* Reduce elements [lo, hi) (our slice) of every member's input into our
 * output. */
static int reduce_slice(struct weft__shm *sh, const struct view *v, size_t lo, size_t hi,
                        weft_dtype dt, weft_op op, const char *opname)
{
  size_t es = weft_dtype_size(dt), max = WEFT__SHM_CHUNK / es, a = lo;
  char *t0 = sh->tmp, *t1 = t0 + WEFT__SHM_CHUNK, *saved = t1 + WEFT__SHM_CHUNK;
  struct weft__piece *pc = sh->pc;
  int me = sh->rank, p = sh->size, k, rc;
  /* In place, our input is overwritten by the fold before its turn when
   * that comes third or later: keep a copy. */
  int keep = v->inplace && me >= 2;

  while (a < hi) {
    size_t npc, n = pieces(v, a, hi, max, pc, &npc), j, at;
    if (keep)
      for (j = 0, at = 0; j < npc; at += pc[j].len, j++)
        memcpy(saved + at * es, in_at(v, &pc[j], es), pc[j].len * es);
    for (k = 0; k < p; k++) {
      char *buf = k == 1 ? t1 : t0;
      const char *own_buf = keep && k == me ? saved : NULL;
      if (k != me && (rc = pull(sh, v, k, 0, pc, npc, es, buf, opname)) != 0)
        return rc;
      if (k == 0)
        continue;
      for (j = 0, at = 0; j < npc; at += pc[j].len, j++) {
        char *d = out_at(v, &pc[j], es);
        const char *y = own_buf ? own_buf + at * es : operand(v, &pc[j], es, k == me, buf, at);
        const char *x = k == 1 ? operand(v, &pc[j], es, me == 0, t0, at) : d;
        weft__reduce(dt, op, d, x, y, pc[j].len);
      }
    }
    if (op == WEFT_AVG)
      for (j = 0; j < npc; j++)
        weft__divide(out_at(v, &pc[j], es), pc[j].len, dt, p);
    a += n;
  }
  return 0;
}

/* The next member whose slice of the result is final (READY) and not yet
 * ours, in the order they finish: first those already done, looking from
 * the member after ourselves on (so that members do not all read from
 * one); a wait only when none is, for the first not done. *k is -1 when
 * every slice is ours. Where ranks outnumber processors, a rank descheduled
 * before it finished its slice then holds nobody up while others' are
 * there to copy. Clear sh->got before the first. */
static int next_ready(struct weft__shm *sh, int *k, const char *opname)
{
  int i, j, first, rc;

  for (;;) {
    for (i = 1, first = -1; i < sh->size; i++) {
      j = (sh->rank + i) % sh->size;
      if (sh->got[j])
        continue;
      if (weft__shm_reached(sh, j, WEFT__SHM_READY)) {
        sh->got[j] = 1;
        *k = j;
        return 0;
      }
      if (first < 0)
        first = j;
    }
    *k = -1;
    if (first < 0)
      return 0;
    if ((rc = weft__shm_wait(sh, first, WEFT__SHM_READY, opname)) != 0)
      return rc;
  }
}

/* Every other member's slice of the result, read from its output into ours
 * as soon as it is final. */
static int gather(struct weft__shm *sh, const struct view *v, size_t n, size_t es,
                  const char *opname)
{
  int k, rc;

  memset(sh->got, 0, (size_t)sh->size);
  while ((rc = next_ready(sh, &k, opname)) == 0 && k >= 0) {
    size_t a, hi, npc, got;
    slice(n, sh->size, k, &a, &hi);
    for (; a < hi; a += got) {
      got = pieces(v, a, hi, (size_t)-1 / es, sh->pc, &npc);
      if ((rc = pull(sh, v, k, 1, sh->pc, npc, es, NULL, opname)) != 0)
        return rc;
    }
  }
  return rc;
}

/* ---- small messages ----
 * Inputs of up to WEFT__SHM_SMALL bytes go through the arena instead: every
 * rank copies its input into its slot, meets the others once, and reduces
 * what it needs from all the slots itself, in the same rank order as the
 * owner of a slice would, so the bits are those of the large path. The
 * slot alternates with the call's parity: a peer that entered call seq + 1
 * is done reading our slot of call seq, so one meeting per call is enough. */

/* Our input elements [a, b) into buf, contiguous (out 0), or buf into our
 * output elements [a, b) (out 1). A walk over the segments, copying as it
 * goes: a bucket's tensors cost one memcpy each and nothing more. */
static void copy_pieces(const struct view *v, size_t a, size_t b, size_t es, char *buf, int out)
{
  size_t i = find(v, a);

  for (; a < b; i++) {
    size_t off = a - v->start[i], len = v->start[i + 1] - a;
    if (len > b - a)
      len = b - a;
    if (out && v->stream)
      weft__copy_stream(v->r[i].p + (off - v->rshift) * es, buf, len * es);
    else if (out)
      memcpy(v->r[i].p + (off - v->rshift) * es, buf, len * es);
    else
      memcpy(buf, v->s[i].p + off * es, len * es);
    buf += len * es;
    a += len;
  }
}

static void copy_in(const struct view *v, size_t a, size_t b, size_t es, char *dst)
{
  copy_pieces(v, a, b, es, dst, 0);
}

/* Our output elements [a, b): the reduction of every slot, whose first
 * element is element 0 of the view. */
static void fold_slots(struct weft__shm *sh, const struct view *v, size_t a, size_t b,
                       weft_dtype dt, weft_op op)
{
  size_t es = weft_dtype_size(dt), npc, j, got;
  int k;

  for (; a < b; a += got) {
    got = pieces(v, a, b, (size_t)-1 / es, sh->pc, &npc);
    for (j = 0; j < npc; j++) {
      char *d = out_at(v, &sh->pc[j], es);
      size_t at = (v->start[sh->pc[j].seg] + sh->pc[j].off) * es;
      weft__reduce(dt, op, d, weft__shm_slot(sh, 0) + at, weft__shm_slot(sh, 1) + at,
                   sh->pc[j].len);
      for (k = 2; k < sh->size; k++)
        weft__reduce(dt, op, d, d, weft__shm_slot(sh, k) + at, sh->pc[j].len);
      if (op == WEFT_AVG)
        weft__divide(d, sh->pc[j].len, dt, sh->size);
    }
  }
}

/* All-reduce, reduce-scatter (our slice [lo, hi)) or a bucket, small. */
static int small_reduce(struct weft__shm *sh, const struct view *v, size_t n, size_t lo, size_t hi,
                        weft_dtype dt, weft_op op, const char *opname)
{
  int rc;

  if ((rc = weft__shm_next(sh, opname)) != 0)
    return rc;
  copy_in(v, 0, n, weft_dtype_size(dt), weft__shm_slot(sh, sh->rank));
  if ((rc = weft__shm_meet(sh, NULL, NULL, opname)) != 0)
    return rc;
  fold_slots(sh, v, lo, hi, dt, op);
  return 0;
}

/* ---- medium messages ----
 * All-reduces and buckets of up to WEFT__SHM_STAGED bytes are copied through
 * the slots too, a slot at a time (a round, one call number each), but each
 * rank copies in all of its input except its own slice (only the owner of a
 * slice reads that part of any slot) and folds only its slice: every slot's
 * part of it in rank order as above, its own input in its turn, the last
 * step into its own slot, from where it copies the result into its own
 * output at once, while it is in cache. READY says so, and every rank copies
 * each other finished slice from its owner's slot into its own output, in
 * the order they finish. No system call and no
 * page pinning: below a few MiB that costs more than the copy in (measured,
 * libweft(3)), and a bucket's tensors are copied once each way, with one
 * meeting per round instead of one per tensor. The slots alternate with the
 * call's parity, as for small messages, so no meeting at the end. */

#define STEP ((size_t)16 << 10) /* bytes folded at a time */

/* Our slice [lo, hi) of the round that starts at element a: every slot
 * folded in rank order, except that our own operand comes straight from
 * our input, piece by piece where it lies (a bucket's tensors are not
 * gathered first; in place too, since the output of a step is written
 * after its last fold); the last fold writes into our slot, where peers
 * read the result, and we copy it from there into our own output while
 * it is in cache. */
static void fold_slice(struct weft__shm *sh, const struct view *v, size_t a, size_t lo, size_t hi,
                       weft_dtype dt, weft_op op)
{
  size_t es = weft_dtype_size(dt), max = STEP / es, x, m;
  char *t = sh->tmp, *d = weft__shm_slot(sh, sh->rank);
  int k, me = sh->rank, p = sh->size;

  for (x = lo; x < hi; x += m) {
    size_t i = find(v, a + x), done, len;
    m = hi - x < max ? hi - x : max;
    for (done = 0; done < m; done += len, i++) {
      size_t e = a + x + done, y = x + done;
      const char *in = v->s[i].p + (e - v->start[i]) * es;
      len = v->start[i + 1] - e < m - done ? v->start[i + 1] - e : m - done;
#define OPERAND(k) ((k) == me ? in : weft__shm_slot(sh, (k)) + y * es)
      for (k = 1; k < p; k++)
        weft__reduce(dt, op, k == p - 1 ? d + y * es : t + done * es,
                     k == 1 ? OPERAND(0) : t + done * es, OPERAND(k), len);
#undef OPERAND
    }
    if (op == WEFT_AVG)
      weft__divide(d + x * es, m, dt, p);
    copy_pieces(v, a + x, a + x + m, es, d + x * es, 1);
  }
}

static int staged_reduce(struct weft__shm *sh, const struct view *v, size_t n, weft_dtype dt,
                         weft_op op, const char *opname)
{
  size_t es = weft_dtype_size(dt), per = WEFT__SHM_SLOT / es, a, m, lo, hi;
  int k, rc;
  struct view sv = *v;

  sv.stream = !v->inplace && n * es >= WEFT__SHM_STREAM;
  v = &sv;

  for (a = 0; a < n; a += m) {
    m = n - a < per ? n - a : per;
    if ((rc = weft__shm_next(sh, opname)) != 0)
      return rc;
    slice(m, sh->size, sh->rank, &lo, &hi);
    /* all but our own slice: fold_slice reads that from our input */
    copy_in(v, a, a + lo, es, weft__shm_slot(sh, sh->rank));
    copy_in(v, a + hi, a + m, es, weft__shm_slot(sh, sh->rank) + hi * es);
    if ((rc = weft__shm_meet(sh, NULL, NULL, opname)) != 0)
      return rc;
    fold_slice(sh, v, a, lo, hi, dt, op);
    weft__shm_ready(sh);
    memset(sh->got, 0, (size_t)sh->size);
    while ((rc = next_ready(sh, &k, opname)) == 0 && k >= 0) {
      slice(m, sh->size, k, &lo, &hi);
      copy_pieces(v, a + lo, a + hi, es, weft__shm_slot(sh, k) + lo * es, 1);
    }
    if (v->stream)
      weft__stream_fence();
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* The group's arena when this call should use it: NULL (and *rc 0) means
 * MPI. sized: the threshold applies to bytes. */
static struct weft__shm *usable(weft_group *g, int which, size_t bytes, int sized,
                                const char *opname, int *rc)
{
  struct weft__shm *sh = weft__shm_get(g, which, opname, rc);

  if (!sh || *rc != 0)
    return NULL;
  if (sh->state == -1 || (sh->state == 1 && sized && bytes < sh->threshold))
    return NULL;
  return sh; /* usable, or broken: then begin says so */
}

/* A plain buffer of n elements: one segment, peers' addresses from begin. */
static void plain(struct weft__shm *sh, struct view *v, size_t start[2], struct weft__seg seg[2],
                  const void *s, void *r, size_t n, size_t rn)
{
  start[0] = 0;
  start[1] = n;
  seg[0].p = (char *)s;
  seg[0].n = n;
  seg[1].p = r;
  seg[1].n = rn;
  v->nseg = 1;
  v->start = start;
  v->s = &seg[0];
  v->r = &seg[1];
  v->peer_s = sh->peer_s;
  v->peer_r = sh->peer_r;
  v->rshift = 0;
  v->inplace = s == r;
  v->stream = 0;
}

/* begin, the work, end; after a failure the peers are told (shm.c). */
static int finish(struct weft__shm *sh, int rc, const char *opname)
{
  if (rc != 0)
    return sh->state == -2 ? rc : weft__shm_fail(sh, rc);
  return weft__shm_end(sh, opname);
}

int weft__shm_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op)
{
  size_t es = weft_dtype_size(dt), start[2], lo, hi;
  struct weft__seg seg[2];
  struct weft__shm *sh;
  struct view v;
  int rc;

  if (n == 0 || !(sh = usable(g, 0, n * es, 1, "allreduce", &rc)))
    return n == 0 || rc == 0 ? WEFT__SHM_DECLINED : rc;
  plain(sh, &v, start, seg, s, r, n, n);
  if (n * es <= WEFT__SHM_SMALL)
    return small_reduce(sh, &v, n, 0, n, dt, op, "allreduce");
  if (n * es <= sh->staged)
    return staged_reduce(sh, &v, n, dt, op, "allreduce");
  if ((rc = weft__shm_begin(sh, s, r, "allreduce")) != 0)
    return rc;
  slice(n, sh->size, sh->rank, &lo, &hi);
  if ((rc = reduce_slice(sh, &v, lo, hi, dt, op, "allreduce")) == 0) {
    weft__shm_ready(sh);
    rc = gather(sh, &v, n, es, "allreduce");
  }
  return finish(sh, rc, "allreduce");
}

int weft__shm_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op)
{
  size_t es = weft_dtype_size(dt), start[2], lo;
  struct weft__seg seg[2];
  struct weft__shm *sh;
  struct view v;
  char *blk;
  int rc;

  /* Above INT_MAX the MPI path refuses (WEFT_EOVERFLOW), and so do we. */
  if (n == 0 || n > INT_MAX ||
      !(sh = usable(g, 0, n * (size_t)g->size * es, 1, "reduce_scatter", &rc)))
    return n == 0 || n > INT_MAX || rc == 0 ? WEFT__SHM_DECLINED : rc;
  lo = (size_t)sh->rank * n;
  blk = (char *)s + lo * es;
  if (n * (size_t)sh->size * es <= WEFT__SHM_SMALL) {
    /* The input is in the slots before anything is written: r may be s. */
    plain(sh, &v, start, seg, s, r, n * (size_t)sh->size, n);
    v.rshift = lo;
    return small_reduce(sh, &v, n * (size_t)sh->size, lo, lo + n, dt, op, "reduce_scatter");
  }
  if ((rc = weft__shm_begin(sh, s, NULL, "reduce_scatter")) != 0)
    return rc;
  /* In place (s == r), the result belongs at the start of s, which rank 0
   * reads until the end: it is made in our own block and moved after. */
  plain(sh, &v, start, seg, s, s == r ? blk : r, n * (size_t)sh->size, n);
  v.rshift = lo;
  v.inplace = seg[1].p == blk;
  rc = reduce_slice(sh, &v, lo, lo + n, dt, op, "reduce_scatter");
  if ((rc = finish(sh, rc, "reduce_scatter")) != 0)
    return rc;
  if (s == r && blk != (char *)r)
    memmove(r, blk, n * es);
  return 0;
}

int weft__shm_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt)
{
  size_t es = weft_dtype_size(dt), bytes = n * es, start[2];
  struct weft__seg seg[2];
  struct weft__shm *sh;
  struct view v;
  char *mine;
  int rc;

  if (n == 0 || n > INT_MAX || !(sh = usable(g, 0, n * (size_t)g->size * es, 1, "allgather", &rc)))
    return n == 0 || n > INT_MAX || rc == 0 ? WEFT__SHM_DECLINED : rc;
  /* Our block into its place (where peers read it) before we enter. */
  mine = (char *)r + (size_t)sh->rank * bytes;
  if (s != mine)
    memmove(mine, s, bytes);
  if (bytes <= WEFT__SHM_SMALL) {
    int k;
    if ((rc = weft__shm_next(sh, "allgather")) != 0)
      return rc;
    memcpy(weft__shm_slot(sh, sh->rank), mine, bytes);
    if ((rc = weft__shm_meet(sh, NULL, NULL, "allgather")) != 0)
      return rc;
    for (k = 0; k < sh->size; k++)
      if (k != sh->rank)
        memcpy((char *)r + (size_t)k * bytes, weft__shm_slot(sh, k), bytes);
    return 0;
  }
  if ((rc = weft__shm_begin(sh, NULL, r, "allgather")) != 0)
    return rc;
  weft__shm_ready(sh);
  plain(sh, &v, start, seg, r, r, n * (size_t)sh->size, n * (size_t)sh->size);
  rc = gather(sh, &v, n * (size_t)sh->size, es, "allgather");
  return finish(sh, rc, "allgather");
}

int weft__shm_hier_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                             weft_op op)
{
  size_t es = weft_dtype_size(dt), start[2], lo, hi;
  struct weft__seg seg[2];
  struct weft__shm *sh;
  struct view v;
  MPI_Datatype t;
  MPI_Op o;
  int rc;

  if (n == 0 || !(sh = usable(g, 1, n * es, 1, "allreduce", &rc)))
    return n == 0 || rc == 0 ? WEFT__SHM_DECLINED : rc;
  if ((rc = weft__mpi_type_op(dt, op, &t, &o)) != 0)
    return weft__rt_fail(g->ctx, rc, "allreduce: no MPI form for %s", weft_dtype_name(dt));
  if ((rc = weft__shm_begin(sh, s, r, "allreduce")) != 0)
    return rc;
  plain(sh, &v, start, seg, s, r, n, n);
  /* The slices are those of the MPI stages (hier.c): the inter-host
   * communicator joins the ranks with our index on every host. */
  slice(n, sh->size, sh->rank, &lo, &hi);
  rc = reduce_slice(sh, &v, lo, hi, dt, op == WEFT_AVG ? WEFT_SUM : op, "allreduce");
  if (rc == 0 && hi > lo) {
    char *p = (char *)r + lo * es;
    MPI_Request req;
    if (g->ctx->coll_timeout <= 0) {
      if ((rc = MPI_Allreduce(MPI_IN_PLACE, p, (int)(hi - lo), t, o, g->inter)) != MPI_SUCCESS)
        rc =
          weft__rt_fail(g->ctx, WEFT_EMPI, "allreduce on group %s: across hosts failed", g->name);
    } else if ((rc = MPI_Iallreduce(MPI_IN_PLACE, p, (int)(hi - lo), t, o, g->inter, &req)) !=
               MPI_SUCCESS) {
      rc = weft__rt_fail(g->ctx, WEFT_EMPI, "allreduce on group %s: across hosts failed", g->name);
    } else {
      rc = weft__wait(g, &req, "allreduce across hosts", -1);
    }
  }
  if (rc == 0) {
    weft__shm_ready(sh);
    rc = gather(sh, &v, n, es, "allreduce");
  }
  return finish(sh, rc, "allreduce");
}

/* ---- buckets ---- */

struct weft__shm_bucket {
  size_t nt;      /* tensors when the table was made */
  size_t *start;  /* nt + 1 */
  uint64_t *peer; /* [k * nt + i] */
};

void weft__shm_bucket_free(struct weft__shm_bucket *b)
{
  if (!b)
    return;
  free(b->start);
  free(b->peer);
  free(b);
}

/* A digest of the tensors' counts, to check that every rank has the same. */
static uint64_t digest(const struct weft__seg *t, size_t nt)
{
  uint64_t h = 1469598103934665603ull;
  size_t i;

  for (i = 0; i < nt; i++)
    h = (h ^ (uint64_t)t[i].n) * 1099511628211ull;
  return h;
}

static int collective(struct weft__shm *sh, int rc, MPI_Request *req, const char *opname)
{
  char buf[MPI_MAX_ERROR_STRING];

  if (rc != MPI_SUCCESS)
    return weft__rt_fail(sh->ctx, WEFT_EMPI, "%s on group %s: %s", opname, sh->g->name,
                         weft__mpi_strerror(rc, buf, sizeof(buf)));
  return weft__wait(sh->g, req, opname, -1);
}

/* Every rank's tensor addresses, once per bucket (again after adds). */
static int exchange(struct weft__shm *sh, struct weft__shm_bucket *b, const struct weft__seg *t,
                    size_t nt, size_t total)
{
  const char *fn = "bucket allreduce";
  uint64_t mine[3] = {nt, total, digest(t, nt)}, *all, *addr;
  MPI_Request req;
  size_t i;
  int k, rc;

  /* nt is the count of an MPI call below. */
  if (nt > (size_t)INT_MAX)
    return weft__rt_fail(sh->ctx, WEFT_EOVERFLOW, "%s: %zu tensors are more than MPI counts", fn,
                         nt);
  all = calloc((size_t)sh->size, sizeof(mine));
  if (!all)
    return weft__rt_fail(sh->ctx, WEFT_ENOMEM, "%s: out of memory", fn);
  if ((rc = weft__arrive(sh->g)) != 0) {
    free(all);
    return rc;
  }
  rc = MPI_Iallgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, sh->comm, &req);
  if ((rc = collective(sh, rc, &req, fn)) != 0) {
    free(all);
    return rc;
  }
  for (k = 0; k < sh->size; k++)
    if (memcmp(&all[3 * k], mine, sizeof(mine)) != 0) {
      rc = weft__rt_fail(sh->ctx, WEFT_EINVAL,
                         "%s on group %s: world rank %d's bucket has %llu tensors of %llu "
                         "elements in all, world rank %d's %zu of %zu, or their sizes differ; "
                         "every rank must add the same tensors in the same order",
                         fn, sh->g->name, sh->world[k], (unsigned long long)all[3 * k],
                         (unsigned long long)all[3 * k + 1], sh->world[sh->rank], nt, total);
      free(all);
      return rc;
    }
  free(all);
  free(b->start);
  free(b->peer);
  b->nt = 0;
  b->start = calloc(nt + 1, sizeof(*b->start));
  b->peer = calloc(nt * (size_t)sh->size, sizeof(*b->peer));
  addr = calloc(nt, sizeof(*addr));
  if (!b->start || !b->peer || !addr) {
    free(addr);
    return weft__rt_fail(sh->ctx, WEFT_ENOMEM, "%s: out of memory for %zu tensors", fn, nt);
  }
  for (i = 0; i < nt; i++) {
    b->start[i + 1] = b->start[i] + t[i].n;
    addr[i] = (uint64_t)(uintptr_t)t[i].p;
  }
  rc = MPI_Iallgather(addr, (int)nt, MPI_UINT64_T, b->peer, (int)nt, MPI_UINT64_T, sh->comm, &req);
  free(addr);
  if ((rc = collective(sh, rc, &req, fn)) != 0)
    return rc;
  b->nt = nt;
  WEFT__LOG(RT,
            "bucket on group %s: %zu tensors of %zu elements, reduced as one array without "
            "packing",
            sh->g->name, nt, total);
  return 0;
}

int weft__shm_bucket_allreduce(weft_group *g, struct weft__shm_bucket **state,
                               const struct weft__seg *t, size_t nt, size_t total, weft_dtype dt,
                               weft_op op)
{
  const char *fn = "bucket allreduce";
  struct weft__shm_bucket *b = *state;
  struct weft__shm *sh;
  struct view v;
  size_t lo, hi;
  int rc;

  if (total == 0 || !(sh = usable(g, 0, 0, 0, fn, &rc)))
    return total == 0 || rc == 0 ? WEFT__SHM_DECLINED : rc;
  if (!b) {
    if (!(b = calloc(1, sizeof(*b))))
      return weft__rt_fail(g->ctx, WEFT_ENOMEM, "%s: out of memory", fn);
    *state = b;
  }
  if (b->nt != nt && (rc = exchange(sh, b, t, nt, total)) != 0)
    return rc;
  v.nseg = nt;
  v.start = b->start;
  v.s = v.r = t;
  v.peer_s = v.peer_r = b->peer;
  v.rshift = 0;
  v.inplace = 1;
  v.stream = 0;
  if (total * weft_dtype_size(dt) <= WEFT__SHM_SMALL)
    return small_reduce(sh, &v, total, 0, total, dt, op, fn);
  if (total * weft_dtype_size(dt) <= sh->staged)
    return staged_reduce(sh, &v, total, dt, op, fn);
  if ((rc = weft__shm_begin(sh, NULL, NULL, fn)) != 0)
    return rc;
  slice(total, sh->size, sh->rank, &lo, &hi);
  if ((rc = reduce_slice(sh, &v, lo, hi, dt, op, fn)) == 0) {
    weft__shm_ready(sh);
    rc = gather(sh, &v, total, weft_dtype_size(dt), fn);
  }
  return finish(sh, rc, fn);
}
