/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL backend of a build without NCCL: device buffers (device.c still
 * recognises them) and anything else that needs NCCL are refused with
 * WEFT_ENONCCL, never handed to MPI.
 */
#include "rt_private.h"

int weft__nccl_check(weft_ctx *ctx)
{
  return weft__rt_fail(ctx, WEFT_ENONCCL,
                       "device buffers or WEFT_BACKEND=nccl need NCCL, and this libweft was built "
                       "without it; rebuild with --with-nccl=DIR, or use host buffers "
                       "(WEFT_BACKEND=mpi)");
}

int weft__nccl_pack(weft_ctx *ctx, size_t n, void *const *dst, const void *const *src,
                    const size_t *bytes, void *stream)
{
  (void)n, (void)dst, (void)src, (void)bytes, (void)stream;
  return weft__nccl_check(ctx);
}

void weft__nccl_group_free(weft_group *g) { (void)g; }

int weft__nccl_split(weft_group *g, int color, int key)
{
  (void)g, (void)color, (void)key;
  return 0;
}
void weft__nccl_ctx_free(weft_ctx *ctx) { (void)ctx; }

int weft__nccl_wait(weft_group *g)
{
  (void)g;
  return 0;
}

int weft__nccl_overdue(char *why, size_t len, const weft_group **g, double *limit)
{
  (void)why, (void)len, (void)g, (void)limit;
  return 0;
}

static int none(weft_group *g) { return weft__nccl_check(g->ctx); }

static int n_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op,
                       void *st)
{
  (void)s, (void)r, (void)n, (void)dt, (void)op, (void)st;
  return none(g);
}

static int n_broadcast(weft_group *g, void *b, size_t n, weft_dtype dt, int root, void *st)
{
  (void)b, (void)n, (void)dt, (void)root, (void)st;
  return none(g);
}

static int n_allgather(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, void *st)
{
  (void)s, (void)r, (void)n, (void)dt, (void)st;
  return none(g);
}

static int n_reduce_scatter(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt,
                            weft_op op, void *st)
{
  (void)s, (void)r, (void)n, (void)dt, (void)op, (void)st;
  return none(g);
}

static int n_p2p(weft_group *g, const void *b, size_t n, weft_dtype dt, int peer, void *st)
{
  (void)b, (void)n, (void)dt, (void)peer, (void)st;
  return none(g);
}

static int n_recv(weft_group *g, void *b, size_t n, weft_dtype dt, int peer, void *st)
{
  return n_p2p(g, b, n, dt, peer, st);
}

static int n_alltoall(weft_group *g, const void *s, void *r, const struct weft__a2a *a,
                      weft_dtype dt, void *st)
{
  (void)s, (void)r, (void)a, (void)dt, (void)st;
  return none(g);
}

static int n_batch(weft_group *g, const weft_p2p *ops, size_t n, const char *fn, void *st)
{
  (void)ops, (void)n, (void)fn, (void)st;
  return none(g);
}

static int n_copy(weft_ctx *ctx, void *d, const void *s, size_t n, void *st)
{
  (void)d, (void)s, (void)n, (void)st;
  return weft__nccl_check(ctx);
}

static int n_alloc(weft_ctx *ctx, void **p, size_t n)
{
  (void)n;
  *p = NULL;
  return weft__nccl_check(ctx);
}

static void n_free(weft_ctx *ctx, void *p) { (void)ctx, (void)p; }

const struct weft__backend weft__backend_nccl = {
  "nccl", n_allreduce, n_broadcast, n_allgather, n_reduce_scatter, n_p2p,
  n_recv, n_alltoall,  n_batch,     n_copy,      n_alloc,          n_free,
};
