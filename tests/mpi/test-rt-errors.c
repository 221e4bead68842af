/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Errors that every rank detects alike: bad layouts, unknown or repeated
 * dimensions, counts that overflow, a dtype/op pair that is not allowed,
 * roots and peers out of range, NULL buffers. Each returns its code and
 * leaves a message in weft_last_error(); the runtime stays usable after.
 */
#include "rt-common.h"

#include <stdint.h>

#define EXPECT(call, code)                                                                         \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    CHECK(rc_ == (code), "%s gave %s, want %s", #call, weft_err_name(rc_), weft_err_name(code));   \
    CHECK(*weft_last_error(ctx), "%s left no message", #call);                                     \
    checks++;                                                                                      \
  } while (0)

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  weft_group *w;
  weft_mesh *m = NULL;
  weft_bucket *b = NULL;
  int x = 1, y = 0, checks = 0, p;

  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  p = weft_size(ctx);

  EXPECT(weft_mesh_create(ctx, "", &m), WEFT_EPARSE);
  EXPECT(weft_mesh_create(ctx, "tp", &m), WEFT_EPARSE);
  EXPECT(weft_mesh_create(ctx, "tp=2,", &m), WEFT_EPARSE);
  EXPECT(weft_mesh_create(ctx, "tp=x", &m), WEFT_EPARSE);
  EXPECT(weft_mesh_create(ctx, "tp=*,dp=*", &m), WEFT_EPARSE);
  EXPECT(weft_mesh_create(ctx, "tp=0,dp=*", &m), WEFT_ERANGE);
  EXPECT(weft_mesh_create(ctx, "tp=2,tp=*", &m), WEFT_ENAME);
  EXPECT(weft_mesh_create(ctx, "tp=1000,dp=*", &m), WEFT_ERANGE); /* does not divide */
  EXPECT(weft_mesh_create(ctx, "dp=1000", &m), WEFT_ERANGE);      /* not the world size */
  CHECK(m == NULL, "no mesh on error");
  CHECK(weft_mesh_create(ctx, "dp=*", &m) == 0, "dp=*");
  CHECK(weft_mesh_group(m, "tp") == NULL && *weft_last_error(ctx), "unknown dim");
  CHECK(weft_mesh_group(m, "dp,dp") == NULL && *weft_last_error(ctx), "repeated dim");
  CHECK(weft_mesh_group(m, "dp,") == NULL, "trailing comma");

  EXPECT(weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_AVG, NULL), WEFT_EDTYPE);
  EXPECT(weft_allreduce(w, &x, &y, 1, (weft_dtype)99, WEFT_SUM, NULL), WEFT_EINVAL);
  EXPECT(weft_allreduce(w, &x, &y, 1, WEFT_INT32, (weft_op)99, NULL), WEFT_EINVAL);
  EXPECT(weft_allreduce(w, &x, &y, SIZE_MAX / 2, WEFT_INT32, WEFT_SUM, NULL), WEFT_EOVERFLOW);
  EXPECT(weft_allgather(w, &x, &y, SIZE_MAX / 4, WEFT_INT8, NULL),
         p > 3 ? WEFT_EOVERFLOW : WEFT_EOVERFLOW);
  EXPECT(weft_reduce_scatter(w, &x, &y, SIZE_MAX / 2, WEFT_INT64, WEFT_SUM, NULL), WEFT_EOVERFLOW);
  EXPECT(weft_allreduce(w, NULL, &y, 1, WEFT_INT32, WEFT_SUM, NULL), WEFT_EINVAL);
  EXPECT(weft_broadcast(w, &x, 1, WEFT_INT32, p, NULL), WEFT_ERANGE);
  EXPECT(weft_broadcast(w, &x, 1, WEFT_INT32, -1, NULL), WEFT_ERANGE);
  EXPECT(weft_send(w, &x, 1, WEFT_INT32, p, NULL), WEFT_ERANGE);
  EXPECT(weft_recv(w, &x, 1, WEFT_INT32, -2, NULL), WEFT_ERANGE);
  EXPECT(weft_send(w, &x, 1, WEFT_INT32, weft_rank(ctx), NULL), WEFT_EINVAL);
  EXPECT(weft_bucket_create(w, WEFT_FLOAT32, 2, &b), WEFT_EINVAL);
  CHECK(weft_bucket_create(w, WEFT_FLOAT32, 0, &b) == 0, "bucket");
  EXPECT(weft_bucket_add(b, NULL, 3), WEFT_EINVAL);
  EXPECT(weft_bucket_allreduce(b, (weft_op)7, NULL), WEFT_EINVAL);
  weft_bucket_destroy(b);
  CHECK(weft_allreduce(NULL, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == WEFT_EINVAL, "NULL group");
  CHECK(weft_group_world_rank(w, p) == WEFT_ERANGE, "world rank out of range");
  CHECK(weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0 && y == p, "still usable: %s",
        weft_last_error(ctx));
  if (weft_rank(ctx) == 0)
    printf("test-rt-errors: %d rank(s), %d errors checked; last: %s\n", p, checks,
           weft_last_error(ctx));
  CHECK(weft_finalize(ctx) == 0, "finalize");
  return 0;
}
