/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host shared-memory collectives against the MPI path, on the same
 * inputs: every dtype and op, counts that the rank count does not divide
 * (odd, prime, larger than a chunk), in place and not, all-reduce,
 * reduce-scatter and all-gather; buckets of tensors that lie apart in memory
 * (and one that grows after its first call, and one whose ranks disagree).
 * Integers must equal the MPI path's bits, floating point must agree within
 * the rounding of p terms, and every rank must hold the same bits. The path
 * is switched by the arena's agreed threshold: 0 for shared memory, the
 * largest size_t for MPI.
 *   test-rt-shm            the checks above (shared memory must be on)
 *   test-rt-shm hier       all-reduce only (a group over pretend hosts: the
 *                          host stages of the hierarchical one)
 *   test-rt-shm off        shared memory must be off (WEFT_HOST_SHM=0, hosts);
 *                          a few types and ops are checked all the same
 *   test-rt-shm seccomp    forbid process_vm_readv/writev first, as container
 *                          profiles do; then as off
 */
#include "rt-common.h"
#include "shm.h"

#include <errno.h>
#include <float.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <math.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Up to 64 KiB per rank go through the arena's slots (every rank folds
 * all), more through the slots a slot at a time (all-reduces and buckets up
 * to WEFT_HOST_SHM_STAGED) or through cross-memory attach: 100003 elements
 * take one of the last two in every type. rounds() checks which. */
static const size_t sizes[] = {7, 1021, 100003};

/* 1 to send g's host collectives through shared memory, 0 through MPI. */
static void path(weft_group *g, int shm)
{
  if (g->shm && g->shm->state == 1)
    g->shm->threshold = shm ? 0 : (size_t)-1;
  if (g->intra_shm && g->intra_shm->state == 1)
    g->intra_shm->threshold = shm ? 0 : (size_t)-1;
}

static int is_int(weft_dtype dt) { return dt <= WEFT_INT64; }

/* Input of rank r at element i: integers over their whole range (so that
 * sums and products wrap), floats with fractions in [-8, 8] (products of
 * values near 1, so that they stay finite). */
static double val(int r, size_t i, weft_dtype dt, weft_op op)
{
  uint64_t h = ((uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 29;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 32;
  if (is_int(dt)) {
    if (dt == WEFT_UINT8)
      return (double)(h % 256);
    if (dt == WEFT_INT8)
      return (double)(int)(h % 256) - 128;
    return (double)(int64_t)(h % 2000001) - 1000000;
  }
  if (op == WEFT_PROD)
    return 0.75 + (double)(h % 1001) / 2000.0;
  return ((double)(h % 16001) - 8000) / 1000.0;
}

static double eps(weft_dtype dt)
{
  switch (dt) {
  case WEFT_FLOAT16: return 0x1p-11;
  case WEFT_BFLOAT16: return 0x1p-8;
  case WEFT_FLOAT32: return 0x1p-24;
  case WEFT_FLOAT64: return 0x1p-53;
  default: return 0;
  }
}

/* Two results of element i (of n) from the two paths: equal bits for
 * integers, MIN and MAX; for sums and products of p terms, within p
 * roundings of the largest magnitude involved. */
static void same(const char *what, weft_dtype dt, weft_op op, int p, const char *a, const char *b,
                 size_t n, int inplace)
{
  size_t es = weft_dtype_size(dt), i;

  if (is_int(dt) || op == WEFT_MIN || op == WEFT_MAX) {
    for (i = 0; i < n; i++)
      CHECK(!memcmp(a + i * es, b + i * es, es), "%s %s %s p=%d n=%zu inplace=%d [%zu]: %g, MPI %g",
            what, weft_dtype_name(dt), weft_op_name(op), p, n, inplace, i, get(a, i, dt),
            get(b, i, dt));
    return;
  }
  for (i = 0; i < n; i++) {
    double x = get(a, i, dt), y = get(b, i, dt);
    double mag = op == WEFT_PROD ? fabs(y) + 1 : 8.0 * p;
    CHECK(fabs(x - y) <= 2.0 * p * eps(dt) * mag,
          "%s %s %s p=%d n=%zu inplace=%d [%zu]: %.9g, MPI %.9g", what, weft_dtype_name(dt),
          weft_op_name(op), p, n, inplace, i, x, y);
  }
}

/* Every rank holds the same bytes as rank 0. */
static void everywhere(weft_group *w, const char *what, const char *buf, size_t bytes)
{
  char *r0;

  if (!buf)
    return;
  r0 = malloc(bytes ? bytes : 1);

  CHECK(r0, "malloc");
  memcpy(r0, buf, bytes);
  CHECK(MPI_Bcast(r0, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast");
  CHECK(!memcmp(r0, buf, bytes), "%s: this rank's result differs from rank 0's", what);
  free(r0);
}

static void fill(char *buf, size_t n, int rank, weft_dtype dt, weft_op op)
{
  size_t i;

  for (i = 0; i < n; i++)
    put(buf, i, dt, val(rank, i, dt, op));
}

/* One collective on both paths; returns the number of checks. */
static int compare(weft_group *w, int which, weft_dtype dt, weft_op op, size_t n, int inplace)
{
  static const char *names[] = {"allreduce", "reduce_scatter", "allgather"};
  int rank = weft_group_rank(w), p = weft_group_size(w), k, rc;
  size_t es = weft_dtype_size(dt), in = which == 0 ? n : which == 1 ? n * (size_t)p : n;
  size_t out = which == 2 ? n * (size_t)p : n, big = n * (size_t)p;
  char *s[2], *r[2], *res[2];

  for (k = 0; k < 2; k++) {
    s[k] = malloc(big * es);
    r[k] = malloc(big * es);
    CHECK(s[k] && r[k], "malloc");
    memset(r[k], 0x5a, big * es);
    path(w, k == 0);
    if (which == 2 && inplace) {
      fill(r[k], n, rank, dt, op); /* the input at the start of the output */
      rc = weft_allgather(w, r[k], r[k], n, dt, NULL);
      res[k] = r[k];
    } else {
      fill(s[k], in, rank, dt, op);
      res[k] = inplace ? s[k] : r[k];
      if (which == 0)
        rc = weft_allreduce(w, s[k], res[k], n, dt, op, NULL);
      else if (which == 1)
        rc = weft_reduce_scatter(w, s[k], res[k], n, dt, op, NULL);
      else
        rc = weft_allgather(w, s[k], res[k], n, dt, NULL);
    }
    CHECK(rc == 0, "%s %s %s n=%zu (%s): %s", names[which], weft_dtype_name(dt), weft_op_name(op),
          n, k ? "MPI" : "shm", weft_last_error(weft_group_ctx(w)));
  }
  same(names[which], dt, op, p, res[0], res[1], out, inplace);
  everywhere(w, names[which], which == 1 ? NULL : res[0], which == 1 ? 0 : out * es);
  for (k = 0; k < 2; k++) {
    free(s[k]);
    free(r[k]);
  }
  path(w, 1);
  return 1;
}

/* A bucket of NT tensors (and one more after the first call) of up to maxn
 * elements, each its own allocation, against one MPI all-reduce of the same
 * elements laid end to end. */
static int buckets(weft_group *w, weft_dtype dt, weft_op op, size_t NT, size_t maxn)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), checks = 0, round;
  size_t es = weft_dtype_size(dt), n[151], t, i, total = 0, nt, at;
  char *a[151], *flat;
  weft_bucket *bk;

  CHECK(weft_bucket_create(w, dt, 0, &bk) == 0, "bucket_create");
  for (t = 0; t <= NT; t++) {
    n[t] = (t * 7919) % maxn + 1;
    total += n[t];
    a[t] = malloc(n[t] * es);
    CHECK(a[t], "malloc");
    if (t < NT)
      CHECK(weft_bucket_add(bk, a[t], n[t]) == 0, "bucket_add");
  }
  flat = malloc(total * es);
  CHECK(flat, "malloc");
  for (round = 0; round < 2; round++) {
    nt = round ? NT + 1 : NT;
    if (round) /* one more tensor after the first call: the table is made again */
      CHECK(weft_bucket_add(bk, a[NT], n[NT]) == 0, "bucket_add");
    for (t = 0, at = 0; t < nt; at += n[t], t++)
      for (i = 0; i < n[t]; i++) {
        put(a[t], i, dt, val(rank, at + i, dt, op));
        put(flat, at + i, dt, val(rank, at + i, dt, op));
      }
    path(w, 1);
    CHECK(weft_bucket_allreduce(bk, op, NULL) == 0, "bucket %s %s: %s", weft_dtype_name(dt),
          weft_op_name(op), weft_last_error(weft_group_ctx(w)));
    path(w, 0);
    CHECK(weft_allreduce(w, flat, flat, at, dt, op, NULL) == 0, "allreduce");
    path(w, 1);
    for (t = 0, at = 0; t < nt; at += n[t], t++) {
      same("bucket", dt, op, p, a[t], flat + at * es, n[t], 1);
      everywhere(w, "bucket", a[t], n[t] * es);
    }
    checks++;
  }
  weft_bucket_destroy(bk);
  for (t = 0; t <= NT; t++)
    free(a[t]);
  free(flat);
  return checks;
}

/* Ranks that registered different tensors: refused alike on every rank. */
/* The call numbers an all-reduce of this many bytes takes: one per slot's
 * worth through the slots, one through cross-memory attach. */
static uint32_t calls(const struct weft__shm *sh, size_t bytes)
{
  if (bytes <= WEFT__SHM_SMALL || bytes > sh->staged)
    return 1;
  return (uint32_t)((bytes + WEFT__SHM_SLOT - 1) / WEFT__SHM_SLOT);
}

/* All-reduces and buckets of several slots' worth, against the MPI path,
 * having gone the way WEFT_HOST_SHM_STAGED says (counted in call numbers). */
static int rounds(weft_group *w)
{
  static const struct {
    weft_dtype dt;
    weft_op op;
  } cases[] = {{WEFT_FLOAT64, WEFT_SUM},
               {WEFT_INT32, WEFT_PROD},
               {WEFT_BFLOAT16, WEFT_AVG},
               {WEFT_INT8, WEFT_SUM}};
  struct weft__shm *sh = w->shm;
  size_t n = 300007, es, c, t, total;
  uint32_t seq0, want;
  int ip, checks = 0;

  for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    es = weft_dtype_size(cases[c].dt);
    for (ip = 0; ip < 2; ip++) {
      seq0 = sh->seq;
      checks += compare(w, 0, cases[c].dt, cases[c].op, n, ip);
      CHECK(sh->seq - seq0 == calls(sh, n * es),
            "allreduce of %zu bytes took %u call numbers, not %u (staged up to %zu bytes)", n * es,
            sh->seq - seq0, calls(sh, n * es), sh->staged);
    }
  }
  /* Outputs apart from the input from WEFT__SHM_STREAM on are written
   * around the cache: a count past it that no rank count divides. */
  n = WEFT__SHM_STREAM / 4 + 7;
  for (c = 0; c < 2; c++) {
    seq0 = sh->seq;
    checks += compare(w, 0, c ? WEFT_INT32 : WEFT_FLOAT32, c ? WEFT_MAX : WEFT_SUM, n, 0);
    CHECK(sh->seq - seq0 == calls(sh, n * 4), "allreduce of %zu bytes took %u call numbers, not %u",
          n * 4, sh->seq - seq0, calls(sh, n * 4));
  }
  /* Tensors of up to 32 KB across the slots' edges: as buckets() makes them. */
  seq0 = sh->seq;
  checks += buckets(w, WEFT_FLOAT64, WEFT_SUM, 150, 4001);
  for (t = 0, total = 0, want = 0; t <= 150; t++) {
    total += (t * 7919) % 4001 + 1;
    if (t >= 149)
      want += calls(sh, total * 8);
  }
  CHECK(sh->seq - seq0 == want, "two buckets of about %zu bytes took %u call numbers, not %u",
        total * 8, sh->seq - seq0, want);
  return checks;
}

static int disagree(weft_group *w)
{
  float x[8], y[8];
  weft_bucket *bk;
  int rc;

  CHECK(weft_bucket_create(w, WEFT_FLOAT32, 0, &bk) == 0, "bucket_create");
  CHECK(weft_bucket_add(bk, x, 8) == 0 && weft_bucket_add(bk, y, weft_group_rank(w) ? 8 : 7) == 0,
        "bucket_add");
  rc = weft_bucket_allreduce(bk, WEFT_SUM, NULL);
  CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(weft_group_ctx(w)), "same tensors"),
        "a bucket whose ranks differ gave %s: %s", weft_err_name(rc),
        weft_last_error(weft_group_ctx(w)));
  weft_bucket_destroy(bk);
  return 1;
}

/* What container profiles do: process_vm_readv/writev fail with EPERM. */
static void forbid_cma(void)
{
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};

  CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
          prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0,
        "seccomp: %s", strerror(errno));
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "on";
  int on = !strcmp(mode, "on"), hier = !strcmp(mode, "hier");
  weft_ctx *ctx;
  weft_group *w;
  int dt, op, ip, which, checks = 0, x = 1, y = 0;
  size_t si;

  if (!strcmp(mode, "seccomp"))
    forbid_cma();
  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  /* The first collective sets the arena up (or decides against it). */
  CHECK(weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0, "warm-up: %s",
        weft_last_error(ctx));
  if (weft__hier_wanted(w, 1 << 20, WEFT_FLOAT32)) {
    float z[4096] = {0};
    CHECK(weft_allreduce(w, z, z, 4096, WEFT_FLOAT32, WEFT_SUM, NULL) == 0, "hier warm-up");
  }
  if (on || hier) {
    struct weft__shm *sh = hier ? w->intra_shm : w->shm;
    CHECK(sh && sh->state == 1, "host shared memory is off: %s", sh ? sh->why : "no arena");
  } else {
    CHECK(w->shm && w->shm->state == -1, "host shared memory is on");
  }
  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
    for (op = 0; op < WEFT_OP_COUNT; op++) {
      if ((op == WEFT_AVG && is_int((weft_dtype)dt)) ||
          (!on && !hier && ((dt != WEFT_INT32 && dt != WEFT_FLOAT32) || op > WEFT_PROD)))
        continue;
      for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (which = 0; which < (hier ? 1 : 3); which++)
          for (ip = 0; ip < 2; ip++)
            if (which != 2 || op == WEFT_SUM)
              checks += compare(w, which, (weft_dtype)dt, (weft_op)op, sizes[si], ip);
      /* Buckets: every type with SUM, every op with a few types. */
      if (on && (op == WEFT_SUM || dt == WEFT_INT8 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32)) {
        checks += buckets(w, (weft_dtype)dt, (weft_op)op, 150, 3001); /* large */
        checks += buckets(w, (weft_dtype)dt, (weft_op)op, 20, 97);    /* through the slots */
      }
    }
  if (on)
    checks += rounds(w);
  if (w->shm && w->shm->state == 1)
    checks += disagree(w);
  CHECK(weft_barrier(w) == 0, "barrier");
  if (weft_rank(ctx) == 0)
    printf("test-rt-shm %s: %d rank(s), %d comparisons with the MPI path passed\n", mode,
           weft_size(ctx), checks);
  CHECK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
