/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buckets against per-tensor all-reduces: many tensors of odd sizes (some
 * larger than a message, so that they are cut and reduced in place), small
 * capacities, every op, float32 / float16 / int32 / float64. The results must
 * have the same bits as weft_allreduce on each tensor.
 */
#include "rt-common.h"

#define NT 57

int main(int argc, char **argv)
{
  static const size_t caps[] = {64, 4096, 1 << 20, 0};
  static const weft_dtype dts[] = {WEFT_FLOAT32, WEFT_FLOAT16, WEFT_INT32, WEFT_FLOAT64};
  weft_ctx *ctx;
  weft_group *w;
  int rank, ci, di, op, rep, checks = 0;

  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  for (di = 0; di < 4; di++)
    for (ci = 0; ci < 4; ci++) {
      weft_dtype dt = dts[di];
      size_t es = weft_dtype_size(dt), n[NT], i, t;
      char *a[NT], *b[NT];
      weft_bucket *bk;
      CHECK(weft_bucket_create(w, dt, caps[ci], &bk) == 0, "bucket_create: %s",
            weft_last_error(ctx));
      for (t = 0; t < NT; t++) {
        n[t] = (t * 37 + 5) % 211 + (t == 7 ? 5000 : 0) + (t == 30 ? 0 : 0);
        if (t == 3)
          n[t] = 0;
        a[t] = malloc(n[t] * es + 1);
        b[t] = malloc(n[t] * es + 1);
        CHECK(a[t] && b[t], "malloc");
        CHECK(weft_bucket_add(bk, a[t], n[t]) == 0, "bucket_add");
      }
      for (op = 0; op < WEFT_OP_COUNT; op++) {
        if (op == WEFT_AVG && dt == WEFT_INT32) {
          CHECK(weft_bucket_allreduce(bk, (weft_op)op, NULL) == WEFT_EDTYPE, "int avg");
          continue;
        }
        for (rep = 0; rep < 2; rep++) { /* twice: the second reuses the fusion buffer */
          for (t = 0; t < NT; t++)
            for (i = 0; i < n[t]; i++) {
              double v = (double)((rank * 5 + (int)t * 3 + (int)i) % 7) - 3;
              if (op == WEFT_PROD)
                v = v > 0 ? 2 : (v < 0 ? -1 : 1);
              put(a[t], i, dt, v);
              put(b[t], i, dt, v);
            }
          for (t = 0; t < NT; t++)
            CHECK(weft_allreduce(w, b[t], b[t], n[t], dt, (weft_op)op, NULL) == 0, "allreduce");
          CHECK(weft_bucket_allreduce(bk, (weft_op)op, NULL) == 0, "bucket_allreduce: %s",
                weft_last_error(ctx));
          for (t = 0; t < NT; t++)
            CHECK(!memcmp(a[t], b[t], n[t] * es), "%s cap %zu op %s: tensor %zu differs",
                  weft_dtype_name(dt), caps[ci], weft_op_name(op), t);
          checks++;
        }
      }
      weft_bucket_destroy(bk);
      for (t = 0; t < NT; t++) {
        free(a[t]);
        free(b[t]);
      }
    }
  /* Views into one flat buffer (laid end to end: reduced without copies),
   * with one separate tensor in the middle. */
  {
    float flat[10000], ref[10000], lone[300], lref[300];
    size_t i, t;
    weft_bucket *bk;
    CHECK(weft_bucket_create(w, WEFT_FLOAT32, 4096, &bk) == 0, "bucket_create");
    for (i = 0; i < 10000; i++)
      flat[i] = ref[i] = (float)((rank + (int)i) % 11) * 0.25f;
    for (i = 0; i < 300; i++)
      lone[i] = lref[i] = (float)(rank - (int)i % 3);
    for (t = 0; t < 40; t++) {
      CHECK(weft_bucket_add(bk, flat + t * 250, 250) == 0, "add");
      if (t == 20)
        CHECK(weft_bucket_add(bk, lone, 300) == 0, "add");
    }
    CHECK(weft_bucket_allreduce(bk, WEFT_SUM, NULL) == 0, "bucket: %s", weft_last_error(ctx));
    for (t = 0; t < 40; t++)
      CHECK(weft_allreduce(w, ref + t * 250, ref + t * 250, 250, WEFT_FLOAT32, WEFT_SUM, NULL) == 0,
            "allreduce");
    CHECK(weft_allreduce(w, lref, lref, 300, WEFT_FLOAT32, WEFT_SUM, NULL) == 0, "allreduce");
    CHECK(!memcmp(flat, ref, sizeof(flat)) && !memcmp(lone, lref, sizeof(lone)),
          "views into one buffer differ");
    weft_bucket_destroy(bk);
    checks++;
  }
  if (rank == 0)
    printf("test-rt-bucket: %d rank(s), %d bucket all-reduces match\n", weft_size(ctx), checks);
  CHECK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
