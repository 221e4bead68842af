/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every collective x dtype x op x in place / out of place, on sizes 0, 1,
 * 7 and 1021, against a reference computed locally from every rank's
 * inputs. Values are small integers, so every type holds the exact result
 * and any reduction order gives the same bits. Run by test-rt-coll.sh on
 * 1 to 4 ranks (and with the hierarchical all-reduce forced).
 */
#include "rt-common.h"

static const size_t sizes[] = {0, 1, 7, 1021};

/* Input of rank r at element i: within [-2, 2] ([0, 3] for uint8). */
static double val(int r, size_t i, weft_dtype dt)
{
  int v = (int)((r * 7 + i * 3 + (size_t)dt) % 5);
  return dt == WEFT_UINT8 ? v % 4 : v - 2;
}

/* The reduction of element i over p ranks, rounded as weft rounds. */
static void reference(void *out, size_t oi, size_t i, int p, weft_dtype dt, weft_op op)
{
  double acc = val(0, i, dt);
  int r;

  for (r = 1; r < p; r++) {
    double v = val(r, i, dt);
    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG: acc += v; break;
    case WEFT_PROD: acc *= v; break;
    case WEFT_MIN: acc = v < acc ? v : acc; break;
    case WEFT_MAX: acc = v > acc ? v : acc; break;
    default: break;
    }
  }
  put(out, oi, dt, acc);
  if (op == WEFT_AVG)
    weft__divide((char *)out + oi * weft_dtype_size(dt), 1, dt, p);
}

static int is_int(weft_dtype dt) { return dt <= WEFT_INT64; }

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  weft_group *w;
  int rank, p, dt, op, ip, root;
  size_t si, i, tests = 0;

  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  rank = weft_group_rank(w);
  p = weft_group_size(w);
  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
      size_t n = sizes[si], es = weft_dtype_size((weft_dtype)dt), big = n * (size_t)p;
      char *s = calloc(big + 1, es), *r = calloc(big + 1, es), *ref = calloc(big + 1, es);
      CHECK(s && r && ref, "calloc");
      for (op = 0; op < WEFT_OP_COUNT; op++)
        for (ip = 0; ip < 2; ip++) {
          char *rb = ip ? s : r;
          int rc;
          /* all-reduce */
          for (i = 0; i < n; i++)
            put(s, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
          rc = weft_allreduce(w, s, rb, n, (weft_dtype)dt, (weft_op)op, NULL);
          if (op == WEFT_AVG && is_int((weft_dtype)dt)) {
            CHECK(rc == WEFT_EDTYPE, "avg of %s gave %d", weft_dtype_name(dt), rc);
            continue;
          }
          CHECK(rc == 0, "allreduce %s %s n=%zu: %s", weft_dtype_name(dt), weft_op_name(op), n,
                weft_last_error(ctx));
          for (i = 0; i < n; i++) {
            reference(ref, i, i, p, (weft_dtype)dt, (weft_op)op);
            CHECK(!memcmp(ref + i * es, rb + i * es, es),
                  "allreduce %s %s n=%zu inplace=%d [%zu]: %g, want %g", weft_dtype_name(dt),
                  weft_op_name(op), n, ip, i, get(rb, i, dt), get(ref, i, dt));
          }
          /* reduce-scatter: our block of the n*p inputs */
          for (i = 0; i < big; i++)
            put(s, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
          rc = weft_reduce_scatter(w, s, rb, n, (weft_dtype)dt, (weft_op)op, NULL);
          CHECK(rc == 0, "reduce_scatter: %s", weft_last_error(ctx));
          for (i = 0; i < n; i++) {
            reference(ref, i, (size_t)rank * n + i, p, (weft_dtype)dt, (weft_op)op);
            CHECK(!memcmp(ref + i * es, rb + i * es, es),
                  "reduce_scatter %s %s n=%zu inplace=%d [%zu]: %g, want %g", weft_dtype_name(dt),
                  weft_op_name(op), n, ip, i, get(rb, i, dt), get(ref, i, dt));
          }
          tests += 2;
        }
      /* all-gather, in place (input at the start of r) and not */
      for (ip = 0; ip < 2; ip++) {
        char *sb = ip ? r : s;
        memset(r, 0x5a, big * es);
        for (i = 0; i < n; i++)
          put(sb, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
        CHECK(weft_allgather(w, sb, r, n, (weft_dtype)dt, NULL) == 0, "allgather: %s",
              weft_last_error(ctx));
        for (i = 0; i < big; i++) {
          put(ref, 0, (weft_dtype)dt, val((int)(i / n), i % n, (weft_dtype)dt));
          CHECK(!memcmp(ref, r + i * es, es), "allgather %s n=%zu inplace=%d [%zu]",
                weft_dtype_name(dt), n, ip, i);
        }
        tests++;
      }
      /* broadcast from every root */
      for (root = 0; root < p; root++) {
        for (i = 0; i < n; i++)
          put(s, i, (weft_dtype)dt, rank == root ? val(root, i, (weft_dtype)dt) : 99);
        CHECK(weft_broadcast(w, s, n, (weft_dtype)dt, root, NULL) == 0, "broadcast: %s",
              weft_last_error(ctx));
        for (i = 0; i < n; i++) {
          put(ref, 0, (weft_dtype)dt, val(root, i, (weft_dtype)dt));
          CHECK(!memcmp(ref, s + i * es, es), "broadcast %s n=%zu root=%d [%zu]",
                weft_dtype_name(dt), n, root, i);
        }
        tests++;
      }
      /* a ring of send/recv */
      if (p > 1) {
        int next = (rank + 1) % p, prev = (rank + p - 1) % p;
        for (i = 0; i < n; i++)
          put(s, i, (weft_dtype)dt, val(rank, i, (weft_dtype)dt));
        if (rank % 2 == 0) {
          CHECK(weft_send(w, s, n, (weft_dtype)dt, next, NULL) == 0, "send");
          CHECK(weft_recv(w, r, n, (weft_dtype)dt, prev, NULL) == 0, "recv");
        } else {
          CHECK(weft_recv(w, r, n, (weft_dtype)dt, prev, NULL) == 0, "recv");
          CHECK(weft_send(w, s, n, (weft_dtype)dt, next, NULL) == 0, "send");
        }
        for (i = 0; i < n; i++) {
          put(ref, 0, (weft_dtype)dt, val(prev, i, (weft_dtype)dt));
          CHECK(!memcmp(ref, r + i * es, es), "send/recv %s n=%zu [%zu]", weft_dtype_name(dt), n,
                i);
        }
        tests++;
      }
      free(s);
      free(r);
      free(ref);
    }
  CHECK(weft_barrier(w) == 0, "barrier");
  if (rank == 0)
    printf("test-rt-coll: %d rank(s), %zu checks passed\n", p, tests);
  CHECK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
