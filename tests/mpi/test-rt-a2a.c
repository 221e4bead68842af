/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-all and batches of sends and receives on host memory, against
 * references: weft_alltoall (every dtype; blocks of 0 to 300,000 elements, so
 * that within one host both the slot and the cross-memory attach ways run),
 * weft_alltoallv (uneven counts, some empty, displacements with gaps that
 * must stay untouched), weft_p2p_batch (a ring where every rank sends first,
 * with messages large enough that MPI cannot buffer them; two sends to one
 * peer matched in order; mixed types; a batch matched by weft_send/weft_recv
 * on the other side), weft_sendrecv along a pipeline (the ends with
 * WEFT_NO_PEER), and the refusals (overlapping buffers, a peer that is this
 * rank or out of range, NULL arrays). Run by test-rt-a2a.sh on 1 to 4 ranks,
 * with shared memory on and off, with deadlines, small MPI chunks and
 * pretend hosts. "mismatch": rank 0 expects one element too many from rank
 * 1; every rank must fail with WEFT_EINVAL naming both (within one host).
 */
#include "rt-common.h"

#include <stdint.h>

/* Byte b of the block rank `from` sends rank `to`: every byte tells where it
 * came from, so a block in the wrong place cannot pass. */
static unsigned char byte(int from, int to, size_t b)
{
  uint64_t x = ((uint64_t)from << 40) ^ ((uint64_t)to << 20) ^ b;

  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ULL;
  return (unsigned char)(x >> 56);
}

static void fill(char *p, int from, int to, size_t bytes)
{
  for (size_t b = 0; b < bytes; b++)
    p[b] = (char)byte(from, to, b);
}

static void expect(const char *p, int from, int to, size_t bytes, const char *what)
{
  for (size_t b = 0; b < bytes; b++)
    CHECK((unsigned char)p[b] == byte(from, to, b), "%s: byte %zu of the block from %d to %d", what,
          b, from, to);
}

static void untouched(const char *p, size_t bytes, const char *what)
{
  for (size_t b = 0; b < bytes; b++)
    CHECK((unsigned char)p[b] == 0xa5, "%s: byte %zu outside every block was written", what, b);
}

static size_t alltoall(weft_ctx *ctx, weft_group *w, weft_dtype dt, size_t n)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), k;
  size_t es = weft_dtype_size(dt), blk = n * es;
  char *s = malloc(blk * (size_t)p + 1), *r = malloc(blk * (size_t)p + 1);

  CHECK(s && r, "malloc");
  for (k = 0; k < p; k++)
    fill(s + (size_t)k * blk, rank, k, blk);
  memset(r, 0xa5, blk * (size_t)p + 1);
  CHECK(weft_alltoall(w, s, r, n, dt, NULL) == 0, "alltoall %s n=%zu: %s", weft_dtype_name(dt), n,
        weft_last_error(ctx));
  for (k = 0; k < p; k++)
    expect(r + (size_t)k * blk, k, rank, blk, "alltoall");
  untouched(r + blk * (size_t)p, 1, "alltoall");
  free(s);
  free(r);
  return 1;
}

/* Rank `from` sends rank `to` this many elements (some 0). */
static size_t vcount(int from, int to, size_t m)
{
  return (size_t)((from * 3 + to * 5 + 1) % 4) * m;
}

static size_t alltoallv(weft_ctx *ctx, weft_group *w, weft_dtype dt, size_t m)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), k;
  size_t es = weft_dtype_size(dt), sc[8], sd[8], rc[8], rd[8], stot = 0, rtot = 0;
  char *s, *r;

  CHECK(p <= 8, "at most 8 ranks");
  /* Send blocks in reverse order with a gap of 3 elements before each;
   * receive blocks in order with a gap of 5 after each. */
  for (k = p - 1; k >= 0; k--) {
    sc[k] = vcount(rank, k, m);
    sd[k] = stot + 3;
    stot = sd[k] + sc[k];
  }
  for (k = 0; k < p; k++) {
    rc[k] = vcount(k, rank, m);
    rd[k] = rtot;
    rtot += rc[k] + 5;
  }
  s = malloc(stot * es + 1);
  r = malloc(rtot * es + 1);
  CHECK(s && r, "malloc");
  memset(s, 0x11, stot * es + 1);
  for (k = 0; k < p; k++)
    fill(s + sd[k] * es, rank, k, sc[k] * es);
  memset(r, 0xa5, rtot * es + 1);
  CHECK(weft_alltoallv(w, s, sc, sd, r, rc, rd, dt, NULL) == 0, "alltoallv %s m=%zu: %s",
        weft_dtype_name(dt), m, weft_last_error(ctx));
  for (k = 0; k < p; k++) {
    expect(r + rd[k] * es, k, rank, rc[k] * es, "alltoallv");
    untouched(r + (rd[k] + rc[k]) * es, 5 * es, "alltoallv");
  }
  free(s);
  free(r);
  return 1;
}

/* Every rank sends first: two blocks to the next rank (matched in order),
 * one of another type to the previous; receives the same from the others. */
static size_t ring(weft_ctx *ctx, weft_group *w, size_t n)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), next = (rank + 1) % p,
      prev = (rank + p - 1) % p;
  char *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 8), *ra = malloc(n * 4),
       *rb = malloc(n * 4), *rcv = malloc(n * 8);
  weft_p2p ops[6] = {
    {WEFT_P2P_SEND, next, a, n, WEFT_FLOAT32}, {WEFT_P2P_SEND, next, b, n, WEFT_INT32},
    {WEFT_P2P_SEND, prev, c, n, WEFT_FLOAT64}, {WEFT_P2P_RECV, prev, ra, n, WEFT_FLOAT32},
    {WEFT_P2P_RECV, prev, rb, n, WEFT_INT32},  {WEFT_P2P_RECV, next, rcv, n, WEFT_FLOAT64},
  };

  CHECK(a && b && c && ra && rb && rcv, "malloc");
  fill(a, rank, 1000 + next, n * 4);
  fill(b, rank, 2000 + next, n * 4);
  fill(c, rank, 3000 + prev, n * 8);
  CHECK(weft_p2p_batch(w, ops, 6, NULL) == 0, "batch n=%zu: %s", n, weft_last_error(ctx));
  expect(ra, prev, 1000 + rank, n * 4, "batch, first send");
  expect(rb, prev, 2000 + rank, n * 4, "batch, second send");
  expect(rcv, next, 3000 + rank, n * 8, "batch, other way");
  free(a);
  free(b);
  free(c);
  free(ra);
  free(rb);
  free(rcv);
  return 1;
}

/* A pipeline: rank i sends to i + 1 and receives from i - 1 at once. */
static size_t pipeline(weft_ctx *ctx, weft_group *w, size_t n)
{
  int rank = weft_group_rank(w), p = weft_group_size(w);
  int next = rank + 1 < p ? rank + 1 : WEFT_NO_PEER, prev = rank > 0 ? rank - 1 : WEFT_NO_PEER;
  char *s = malloc(n * 2 + 1), *r = malloc(n * 2 + 1);

  CHECK(s && r, "malloc");
  fill(s, rank, rank + 1, n * 2);
  memset(r, 0xa5, n * 2 + 1);
  CHECK(weft_sendrecv(w, s, n, next, r, n, prev, WEFT_BFLOAT16, NULL) == 0, "sendrecv: %s",
        weft_last_error(ctx));
  if (prev != WEFT_NO_PEER)
    expect(r, prev, rank, n * 2, "sendrecv");
  else
    untouched(r, n * 2, "sendrecv without a source");
  free(s);
  free(r);
  return 1;
}

/* A batch on one side, weft_send/weft_recv on the other. */
static size_t mixed(weft_ctx *ctx, weft_group *w)
{
  int rank = weft_group_rank(w);
  char s[4000], r[4000];
  weft_p2p ops[2] = {{WEFT_P2P_RECV, 1, r, 1000, WEFT_INT32},
                     {WEFT_P2P_SEND, 1, s, 1000, WEFT_INT32}};

  if (weft_group_size(w) < 2 || rank > 1)
    return 0;
  fill(s, rank, 1 - rank, sizeof(s));
  if (rank == 0) {
    CHECK(weft_p2p_batch(w, ops, 2, NULL) == 0, "batch against send/recv: %s",
          weft_last_error(ctx));
  } else {
    CHECK(weft_send(w, s, 1000, WEFT_INT32, 0, NULL) == 0, "send: %s", weft_last_error(ctx));
    CHECK(weft_recv(w, r, 1000, WEFT_INT32, 0, NULL) == 0, "recv: %s", weft_last_error(ctx));
  }
  expect(r, 1 - rank, rank, sizeof(r), "batch against send/recv");
  return 1;
}

static size_t refusals(weft_ctx *ctx, weft_group *w)
{
  int rank = weft_group_rank(w), p = weft_group_size(w);
  float *b = calloc((size_t)p * 8, sizeof(float));
  size_t c[8] = {0}, d[8] = {0};
  weft_p2p op = {WEFT_P2P_SEND, rank, b, 4, WEFT_FLOAT32};
  int rc;

  CHECK(b, "calloc");
  rc = weft_alltoall(w, b, b, 4, WEFT_FLOAT32, NULL);
  CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(ctx), "in place is not supported"),
        "alltoall in place: %s (%s)", weft_err_name(rc), weft_last_error(ctx));
  rc = weft_alltoall(w, b, b + 1, 4, WEFT_FLOAT32, NULL);
  CHECK(rc == WEFT_EINVAL, "alltoall overlapping: %s", weft_err_name(rc));
  rc = weft_alltoallv(w, b, c, d, b, NULL, d, WEFT_FLOAT32, NULL);
  CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(ctx), "NULL recvcounts"),
        "alltoallv without recvcounts: %s (%s)", weft_err_name(rc), weft_last_error(ctx));
  rc = weft_p2p_batch(w, &op, 1, NULL);
  CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(ctx), "is this rank"),
        "batch to itself: %s (%s)", weft_err_name(rc), weft_last_error(ctx));
  op.peer = p;
  rc = weft_p2p_batch(w, &op, 1, NULL);
  CHECK(rc == WEFT_ERANGE, "batch to rank %d: %s", p, weft_err_name(rc));
  op.peer = (rank + 1) % p;
  op.kind = (weft_p2p_kind)7;
  rc = weft_p2p_batch(w, &op, 1, NULL);
  CHECK(rc == WEFT_EINVAL || p == 1, "batch of kind 7: %s", weft_err_name(rc));
  rc = weft_sendrecv(w, b, 8, (rank + 1) % p, b + 4, 8, (rank + 1) % p, WEFT_FLOAT32, NULL);
  CHECK(rc == WEFT_EINVAL, "sendrecv into overlapping buffers: %s", weft_err_name(rc));
  CHECK(weft_sendrecv(w, NULL, 0, WEFT_NO_PEER, NULL, 0, WEFT_NO_PEER, WEFT_FLOAT32, NULL) == 0,
        "sendrecv with no peer at all");
  free(b);
  return 7;
}

/* Rank 0 expects one element too many from rank 1. */
static int mismatch(weft_ctx *ctx, weft_group *w)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), k, rc;
  size_t sc[8], sd[8], rc_[8], rd[8];
  char s[64 * 8], r[64 * 8];
  char want[128];

  CHECK(p >= 2 && p <= 8, "mismatch needs 2 to 8 ranks");
  for (k = 0; k < p; k++) {
    sc[k] = rc_[k] = 4;
    sd[k] = rd[k] = (size_t)k * 8;
  }
  if (rank == 0)
    rc_[1] = 5;
  rc = weft_alltoallv(w, s, sc, sd, r, rc_, rd, WEFT_FLOAT32, NULL);
  snprintf(want, sizeof(want), "world rank %d sends 4 elements to world rank %d, which expects 5",
           weft_group_world_rank(w, 1), weft_group_world_rank(w, 0));
  CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(ctx), want), "mismatched counts: %s (%s)",
        weft_err_name(rc), weft_last_error(ctx));
  printf("MISMATCH-OK rank %d: %s\n", rank, weft_last_error(ctx));
  return 0;
}

int main(int argc, char **argv)
{
  static const size_t sizes[] = {0, 1, 7, 1021, 40000};
  weft_ctx *ctx;
  weft_group *w;
  size_t tests = 0, si;
  int dt, p;

  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  p = weft_group_size(w);
  if (argc > 1 && !strcmp(argv[1], "mismatch")) {
    mismatch(ctx, w);
    CHECK(weft_finalize(ctx) == 0, "finalize");
    return 0;
  }
  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
      tests += alltoall(ctx, w, (weft_dtype)dt, sizes[si]);
      tests += alltoallv(ctx, w, (weft_dtype)dt, sizes[si]);
    }
  /* Above a slot's worth per rank: read from the send buffers themselves. */
  tests += alltoall(ctx, w, WEFT_FLOAT32, 300000);
  tests += alltoallv(ctx, w, WEFT_FLOAT64, 100000);
  if (p > 1) {
    tests += ring(ctx, w, 3);
    tests += ring(ctx, w, 1 << 20); /* 4-8 MiB: no MPI buffers that much */
    tests += pipeline(ctx, w, 5);
    tests += pipeline(ctx, w, 1 << 20);
    tests += mixed(ctx, w);
  }
  tests += refusals(ctx, w);
  CHECK(weft_barrier(w) == 0, "barrier");
  if (weft_group_rank(w) == 0)
    printf("test-rt-a2a: %d rank(s), %zu checks passed\n", p, tests);
  CHECK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
