/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fusion buckets. The registered tensors are read as one long array cut
 * into messages: a first one of at most 1 MiB (so that the first transfer
 * starts early), then messages of the bucket's capacity. A message that
 * lies in one stretch of memory (one tensor, or tensors laid end to end) is
 * reduced in place; the others are packed into
 * the fusion buffer, reduced, and unpacked. The fusion buffer is allocated
 * once (again only if tensors were added since), never per call. Each
 * element meets the same reduction as in a per-tensor all-reduce, so results
 * are identical whenever MPI reduces in the same order. Host tensors of a
 * group within one host skip all this: the shared-memory path reduces them
 * as one array, copied once each way through the shared window or, above
 * WEFT_HOST_SHM_STAGED, read where they lie (shm-coll.c).
 */
#include "rt_private.h"
#include "shm.h"

#include <weftx/page.h>

#include <stdlib.h>
#include <string.h>

#define FIRST_BYTES ((size_t)1 << 20)
#define DEFAULT_CAPACITY ((size_t)25 << 20)

struct weft_bucket {
  weft_group *g;
  weft_dtype dt;
  size_t es;
  size_t cap;          /* elements per message */
  size_t first;        /* elements of the first message */
  struct weft__seg *t; /* the tensors */
  size_t nt, tcap;
  size_t total; /* elements, all tensors */
  int device;   /* tensors live in device memory */
  const struct weft__backend *be;
  void **dst; /* one message's copies (tcap of each), for packing */
  const void **src;
  size_t *bytes;
  void *fusion;
  size_t fusion_n;              /* elements the fusion buffer holds */
  struct weft__shm_bucket *shm; /* host tensors on one host: shm-coll.c */
};

int weft_bucket_create(weft_group *g, weft_dtype dt, size_t capacity, weft_bucket **out)
{
  weft_bucket *b;
  size_t es = weft_dtype_size(dt);

  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  if (!g)
    return WEFT_EINVAL;
  if (!es)
    return weft__rt_fail(g->ctx, WEFT_EINVAL, "weft_bucket_create: unknown data type %d", (int)dt);
  if (capacity == 0)
    capacity = DEFAULT_CAPACITY;
  if (capacity < es)
    return weft__rt_fail(g->ctx, WEFT_EINVAL,
                         "weft_bucket_create: capacity %zu bytes is less than one %s", capacity,
                         weft_dtype_name(dt));
  b = calloc(1, sizeof(*b));
  if (!b)
    return weft__rt_fail(g->ctx, WEFT_ENOMEM, "weft_bucket_create: out of memory");
  b->g = g;
  b->dt = dt;
  b->es = es;
  b->cap = capacity / es;
  b->first = (capacity < FIRST_BYTES ? capacity : FIRST_BYTES) / es;
  b->be = &weft__backend_mpi;
  *out = b;
  return 0;
}

int weft_bucket_add(weft_bucket *b, void *tensor, size_t count)
{
  int dev;

  if (!b)
    return WEFT_EINVAL;
  if (count == 0)
    return 0;
  if (!tensor)
    return weft__rt_fail(b->g->ctx, WEFT_EINVAL, "weft_bucket_add: NULL tensor");
  if (count > ((size_t)-1) / b->es - b->total)
    return weft__rt_fail(b->g->ctx, WEFT_EOVERFLOW, "weft_bucket_add: bucket too large");
  dev = b->g->ctx->backend != WEFT__BACKEND_MPI && weft__is_device_ptr(b->g->ctx, tensor);
  if (b->nt > 0 && dev != b->device)
    return weft__rt_fail(b->g->ctx, WEFT_EINVAL,
                         "weft_bucket_add: tensor %zu is in %s memory, the bucket's are in %s "
                         "memory; use one bucket per kind",
                         b->nt, dev ? "device" : "host", b->device ? "device" : "host");
  if (b->nt == b->tcap) {
    size_t ncap = b->tcap ? 2 * b->tcap : 64;
    struct weft__seg *nt = realloc(b->t, ncap * sizeof(*nt));
    void **dst;
    const void **src;
    size_t *bytes;
    if (nt)
      b->t = nt;
    dst = nt ? realloc(b->dst, ncap * sizeof(*dst)) : NULL;
    if (dst)
      b->dst = dst;
    src = dst ? realloc(b->src, ncap * sizeof(*src)) : NULL;
    if (src)
      b->src = src;
    bytes = src ? realloc(b->bytes, ncap * sizeof(*bytes)) : NULL;
    if (!bytes)
      return weft__rt_fail(b->g->ctx, WEFT_ENOMEM, "weft_bucket_add: out of memory");
    b->bytes = bytes;
    b->tcap = ncap;
  }
  b->device = dev;
  b->be = dev ? &weft__backend_nccl : &weft__backend_mpi;
  b->t[b->nt].p = tensor;
  b->t[b->nt].n = count;
  b->nt++;
  b->total += count;
  return 0;
}

/* Copy message elements [off, off+len) between the tensors and the fusion
 * buffer; *ti and *to hold the tensor and offset where off starts. Device
 * tensors go in one batch of copies (weft__nccl_pack), not one call each. */
static int pack(weft_bucket *b, size_t ti, size_t to, size_t len, int in, void *stream)
{
  char *f = b->fusion;
  size_t n = 0, i;
  int rc;

  while (len > 0) {
    size_t k = b->t[ti].n - to;
    char *t = b->t[ti].p + to * b->es;
    if (k > len)
      k = len;
    b->dst[n] = in ? f : t;
    b->src[n] = in ? t : f;
    b->bytes[n] = k * b->es;
    n++;
    f += k * b->es;
    len -= k;
    ti++;
    to = 0;
  }
  if (b->device)
    return weft__nccl_pack(b->g->ctx, n, b->dst, b->src, b->bytes, stream);
  for (i = 0; i < n; i++)
    if ((rc = b->be->copy(b->g->ctx, b->dst[i], b->src[i], b->bytes[i], stream)) != 0)
      return rc;
  return 0;
}

/* 1 when message elements [off, off+len), starting at tensor ti offset to,
 * lie in one stretch of memory. */
static int contiguous(const weft_bucket *b, size_t ti, size_t to, size_t len)
{
  size_t left = b->t[ti].n - to;

  while (left < len) {
    if (b->t[ti + 1].p != b->t[ti].p + b->t[ti].n * b->es)
      return 0;
    ti++;
    left += b->t[ti].n;
  }
  return 1;
}

static int fused(weft_bucket *b, weft_op op, void *stream);

int weft_bucket_allreduce(weft_bucket *b, weft_op op, void *stream)
{
  int rc;

  if (!b)
    return WEFT_EINVAL;
  if (!weft__op_ok(op))
    return weft__rt_fail(b->g->ctx, WEFT_EINVAL, "weft_bucket_allreduce: unknown operation %d",
                         (int)op);
  if (op == WEFT_AVG && b->dt != WEFT_FLOAT16 && b->dt != WEFT_BFLOAT16 && b->dt != WEFT_FLOAT32 &&
      b->dt != WEFT_FLOAT64)
    return weft__rt_fail(b->g->ctx, WEFT_EDTYPE,
                         "weft_bucket_allreduce: avg of %s would truncate; use sum and divide",
                         weft_dtype_name(b->dt));
  if (b->total == 0)
    return 0;
  weft__call_enter(b->g, WEFTX_OP_BUCKET, b->total * b->es);
  rc = fused(b, op, stream);
  weft__call_exit();
  return rc;
}

/* weft_bucket_allreduce's work: on one host through shared memory, else its messages,
 * each one weft_allreduce. */
static int fused(weft_bucket *b, weft_op op, void *stream)
{
  size_t off = 0, ti = 0, to = 0, want;
  int rc;

  if (!b->device && (rc = weft__shm_bucket_allreduce(b->g, &b->shm, b->t, b->nt, b->total, b->dt,
                                                     op)) != WEFT__SHM_DECLINED)
    return rc;
  want = b->total < b->cap ? b->total : b->cap;
  if (b->fusion_n < want) {
    if (b->fusion)
      b->be->free(b->g->ctx, b->fusion);
    b->fusion = NULL;
    b->fusion_n = 0;
    if ((rc = b->be->alloc(b->g->ctx, &b->fusion, want * b->es)) != 0)
      return rc;
    b->fusion_n = want;
  }
  while (off < b->total) {
    size_t len = off == 0 ? b->first : b->cap, k;
    if (len > b->total - off)
      len = b->total - off;
    if (contiguous(b, ti, to, len)) {
      /* One stretch of memory (one tensor, or neighbours laid end to end
       * as views of one gradient buffer are): reduce it where it is. */
      char *p = b->t[ti].p + to * b->es;
      rc = weft_allreduce(b->g, p, p, len, b->dt, op, stream);
    } else {
      rc = pack(b, ti, to, len, 1, stream);
      if (rc == 0)
        rc = weft_allreduce(b->g, b->fusion, b->fusion, len, b->dt, op, stream);
      if (rc == 0)
        rc = pack(b, ti, to, len, 0, stream);
    }
    if (rc != 0)
      return rc;
    off += len;
    /* Advance the cursor by len elements. */
    for (k = len; k > 0;) {
      size_t left = b->t[ti].n - to;
      if (k < left) {
        to += k;
        k = 0;
      } else {
        k -= left;
        ti++;
        to = 0;
      }
    }
  }
  return 0;
}

void weft_bucket_destroy(weft_bucket *b)
{
  if (!b)
    return;
  if (b->fusion)
    b->be->free(b->g->ctx, b->fusion);
  weft__shm_bucket_free(b->shm);
  free(b->t);
  free(b->dst);
  free(b->src);
  free(b->bytes);
  free(b);
}
