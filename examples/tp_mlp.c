/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_mlp: a tensor-parallel two-layer MLP, forward and backward, in the layout
 * of Megatron-LM with sequence parallelism, on the "tp" group of a
 * "tp=N,dp=*" mesh, checked against the same MLP computed on one rank.
 *
 *   Y = tanh(X W1 + b1) W2 + b2,   loss = sum((Y - T)^2) / (2 B)
 *
 * X (B tokens x D) is cut by rows across the tp group (sequence parallel):
 * rank r holds B/N tokens. W1 (D x H) and b1 are cut by columns
 * (column-parallel: rank r has H/N hidden units), W2 (H x D) by rows to match
 * (row-parallel); b2 is whole on every rank.
 *   forward:  all-gather X's rows; Z_r = tanh(X W1_r + b1_r), no
 *             communication; Z_r W2_r is a partial sum of Y: reduce-scatter
 *             sums it and leaves each rank its B/N rows; + b2; the loss is an
 *             all-reduce of each rank's part
 *   backward: dY_r = (Y_r - T_r) / B; all-gather dY; dW2_r = Z_r^T dY;
 *             db2 = all-reduce of each rank's column sums (b2 is replicated);
 *             dZ_r = dY W2_r^T, dA_r = dZ_r (1 - Z_r^2); dW1_r = X^T dA_r,
 *             db1_r = column sums of dA_r; dA_r W1_r^T is a partial sum of
 *             dX: reduce-scatter leaves each rank dX of its own rows
 * Each dp replica has its own data. Every rank also computes the MLP whole,
 * serially, and compares its shard of Y, the loss and every gradient with it:
 * they agree to within float rounding (the sums are taken in another order).
 * With --device the collectives run on the GPU's memory (NCCL), the math
 * stays on the host.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "args.h"
#include "exmath.h"
#include "exmem.h"

struct opts {
  long tp, batch, dmodel, hidden;
  int device;
};

static const char usage_text[] =
  "usage: tp_mlp [--tp N] [--batch B] [--dmodel D] [--hidden H] [--device]\n"
  "A two-layer MLP, Y = tanh(X W1 + b1) W2 + b2, forward and backward, tensor\n"
  "parallel on a tp group of N ranks (default: all; the rest is dp): W1 by\n"
  "columns, W2 by rows, tokens by rows (sequence parallel), put together with\n"
  "all-gather, reduce-scatter and all-reduce; checked against the MLP on one\n"
  "rank. B and H must be multiples of N. --device: the collectives on the\n"
  "rank's GPU (weft_device()).\n";

static int parse_opts(int argc, char **argv, struct opts *o)
{
  const struct example_opt opts[] = {
    {"--tp", &o->tp, NULL, 1, 4096},         {"--batch", &o->batch, NULL, 1, 4096},
    {"--dmodel", &o->dmodel, NULL, 1, 4096}, {"--hidden", &o->hidden, NULL, 1, 4096},
    {"--device", NULL, &o->device, 0, 0},    {NULL, NULL, NULL, 0, 0},
  };

  o->tp = 0;
  o->batch = 32;
  o->dmodel = 24;
  o->hidden = 64;
  o->device = 0;
  return example_options("tp_mlp", usage_text, argc, argv, opts);
}

/* The whole MLP and its gradients (the serial reference), or one rank's
 * shards of them. */
struct mlp {
  float *w1, *b1, *w2, *b2; /* d x h, h, h x d, d */
  float *dw1, *db1, *dw2, *db2;
  float *a, *z, *y, *dy, *dz, *dx;
  float loss;
};

static void mlp_free(struct mlp *m)
{
  float *all[] = {m->w1,  m->b1, m->w2, m->b2, m->dw1, m->db1, m->dw2,
                  m->db2, m->a,  m->z,  m->y,  m->dy,  m->dz,  m->dx};

  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    free(all[i]);
  memset(m, 0, sizeof(*m));
}

/* Room for an MLP of d x h on b tokens (h: this rank's hidden units). */
static int mlp_alloc(struct mlp *m, long b, long d, long h)
{
  memset(m, 0, sizeof(*m));
#define ALLOC(p, n)                                                                                \
  if (!((p) = calloc((size_t)(n), sizeof(float))))                                                 \
  return WEFT_ENOMEM
  ALLOC(m->w1, d * h);
  ALLOC(m->b1, h);
  ALLOC(m->w2, h * d);
  ALLOC(m->b2, d);
  ALLOC(m->dw1, d * h);
  ALLOC(m->db1, h);
  ALLOC(m->dw2, h * d);
  ALLOC(m->db2, d);
  ALLOC(m->a, b * h);
  ALLOC(m->z, b * h);
  ALLOC(m->y, b * d);
  ALLOC(m->dy, b * d);
  ALLOC(m->dz, b * h);
  ALLOC(m->dx, b * d);
#undef ALLOC
  return 0;
}

/* The serial MLP on x (b x d) against t: forward, loss, backward. */
static void serial(struct mlp *m, const float *x, const float *t, long b, long d, long h)
{
  ex_mm(x, m->w1, m->a, b, d, h);
  for (long i = 0; i < b; i++)
    for (long j = 0; j < h; j++)
      m->z[i * h + j] = tanhf(m->a[i * h + j] + m->b1[j]);
  ex_mm(m->z, m->w2, m->y, b, h, d);
  m->loss = 0;
  for (long i = 0; i < b; i++)
    for (long j = 0; j < d; j++) {
      float e = (m->y[i * d + j] += m->b2[j]) - t[i * d + j];
      m->loss += e * e / (2.0f * (float)b);
      m->dy[i * d + j] = e / (float)b;
    }
  ex_mm_tn_acc(m->z, m->dy, m->dw2, b, h, d);
  for (long i = 0; i < b; i++)
    for (long j = 0; j < d; j++)
      m->db2[j] += m->dy[i * d + j];
  ex_mm_nt(m->dy, m->w2, m->dz, b, d, h);
  for (long k = 0; k < b * h; k++)
    m->dz[k] *= 1.0f - m->z[k] * m->z[k];
  ex_mm_tn_acc(x, m->dz, m->dw1, b, d, h);
  for (long i = 0; i < b; i++)
    for (long j = 0; j < h; j++)
      m->db1[j] += m->dz[i * h + j];
  ex_mm_nt(m->dz, m->w1, m->dx, b, h, d);
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    rc = (call);                                                                                   \
    if (rc != 0) {                                                                                 \
      fprintf(stderr, "tp_mlp: rank %d: %s failed: %s (%s:%d)\n", wrank, #call, weft_strerror(rc), \
              __FILE__, __LINE__);                                                                 \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* One collective through a send and a receive buffer in the chosen memory:
 * n floats of the send buffer to it, the call, rn floats back. */
#define THROUGH(sb, n, call, rb, rn)                                                               \
  do {                                                                                             \
    CHECK(exbuf_put(&(sb), (size_t)(n) * sizeof(float)));                                          \
    CHECK(call);                                                                                   \
    CHECK(exbuf_get(&(rb), (size_t)(rn) * sizeof(float)));                                         \
  } while (0)

static int run(weft_ctx *ctx, const struct opts *o, int *ok)
{
  int wrank = weft_rank(ctx), world = weft_size(ctx), rc = 0, n, r, dp;
  long b, d, h, hn, bn;
  char layout[48];
  weft_mesh *mesh = NULL;
  weft_group *tp;
  struct mlp ref, mine;
  float *x = NULL, *t = NULL, *xr, *xfull = NULL, *hx, *hy, *h1;
  struct exbuf sx = {0}, sy = {0}, s1 = {0};
  double err[8], worst;
  static const char *const what[8] = {"Y", "loss", "dW1", "db1", "dW2", "db2", "dX", "Z"};

  memset(&ref, 0, sizeof(ref));
  memset(&mine, 0, sizeof(mine));
  *ok = 0;
  n = o->tp ? (int)o->tp : world;
  if (world % n || o->batch % n || o->hidden % n) {
    if (wrank == 0)
      fprintf(stderr,
              "tp_mlp: --tp %d must divide the %d ranks, and --batch %ld and --hidden "
              "%ld must be multiples of it\n",
              n, world, o->batch, o->hidden);
    return 0;
  }
  snprintf(layout, sizeof(layout), "tp=%d,dp=*", n);
  CHECK(weft_mesh_create(ctx, layout, &mesh));
  tp = weft_mesh_group(mesh, "tp");
  if (!tp)
    CHECK(WEFT_ENAME);
  r = weft_group_rank(tp);
  dp = weft_mesh_coord(mesh, "dp");
  b = o->batch, d = o->dmodel, h = o->hidden, hn = h / n, bn = b / n;

  /* The data of this dp replica and the whole model, on every rank. */
  x = malloc((size_t)(b * d) * sizeof(float));
  t = malloc((size_t)(b * d) * sizeof(float));
  if (!x || !t)
    CHECK(WEFT_ENOMEM);
  ex_fill(x, (size_t)(b * d), 10 + (uint64_t)dp, 1.0f);
  ex_fill(t, (size_t)(b * d), 20 + (uint64_t)dp, 0.5f);
  CHECK(mlp_alloc(&ref, b, d, h));
  ex_fill(ref.w1, (size_t)(d * h), 1, 1.0f / sqrtf((float)d));
  ex_fill(ref.b1, (size_t)h, 2, 0.1f);
  ex_fill(ref.w2, (size_t)(h * d), 3, 1.0f / sqrtf((float)h));
  ex_fill(ref.b2, (size_t)d, 4, 0.1f);
  serial(&ref, x, t, b, d, h);

  /* This rank's shards: columns [r hn, (r+1) hn) of W1 and b1, the same rows
   * of W2, b2 whole. */
  CHECK(mlp_alloc(&mine, b, d, hn));
  for (long i = 0; i < d; i++)
    memcpy(mine.w1 + i * hn, ref.w1 + i * h + r * hn, (size_t)hn * sizeof(float));
  memcpy(mine.b1, ref.b1 + r * hn, (size_t)hn * sizeof(float));
  memcpy(mine.w2, ref.w2 + r * hn * d, (size_t)(hn * d) * sizeof(float));
  memcpy(mine.b2, ref.b2, (size_t)d * sizeof(float));
  xr = x + r * bn * d;

  /* Communication buffers: sx, sy of b x d floats, s1 of d + 1. */
  CHECK(exbuf_alloc(&sx, (size_t)(b * d) * sizeof(float)));
  CHECK(exbuf_alloc(&sy, (size_t)(b * d) * sizeof(float)));
  CHECK(exbuf_alloc(&s1, (size_t)(d + 1) * sizeof(float)));
  hx = sx.h, hy = sy.h, h1 = s1.h;

  /* ---- forward ---- */
  /* all-gather the tokens: X whole in sy */
  memcpy(hx, xr, (size_t)(bn * d) * sizeof(float));
  THROUGH(sx, bn * d,
          weft_allgather(tp, exbuf_at(&sx), exbuf_at(&sy), (size_t)(bn * d), WEFT_FLOAT32, NULL),
          sy, b * d);
  xfull = malloc((size_t)(b * d) * sizeof(float));
  if (!xfull)
    CHECK(WEFT_ENOMEM);
  memcpy(xfull, hy, (size_t)(b * d) * sizeof(float));
  /* column-parallel: Z_r = tanh(X W1_r + b1_r) */
  ex_mm(xfull, mine.w1, mine.a, b, d, hn);
  for (long i = 0; i < b; i++)
    for (long j = 0; j < hn; j++)
      mine.z[i * hn + j] = tanhf(mine.a[i * hn + j] + mine.b1[j]);
  /* row-parallel: reduce-scatter the partial sums Z_r W2_r, + b2 */
  ex_mm(mine.z, mine.w2, hx, b, hn, d);
  THROUGH(sx, b * d,
          weft_reduce_scatter(tp, exbuf_at(&sx), exbuf_at(&sy), (size_t)(bn * d), WEFT_FLOAT32,
                              WEFT_SUM, NULL),
          sy, bn * d);
  h1[0] = 0;
  for (long i = 0; i < bn; i++)
    for (long j = 0; j < d; j++) {
      float e = (mine.y[i * d + j] = hy[i * d + j] + mine.b2[j]) - t[(r * bn + i) * d + j];
      h1[0] += e * e / (2.0f * (float)b);
      mine.dy[i * d + j] = e / (float)b;
    }
  THROUGH(s1, 1, weft_allreduce(tp, exbuf_at(&s1), exbuf_at(&s1), 1, WEFT_FLOAT32, WEFT_SUM, NULL),
          s1, 1);
  mine.loss = h1[0];

  /* ---- backward ---- */
  /* db2: each rank's column sums of its rows of dY, all-reduced */
  for (long j = 0; j < d; j++)
    for (long i = 0; i < bn; i++)
      mine.db2[j] += mine.dy[i * d + j];
  memcpy(h1, mine.db2, (size_t)d * sizeof(float));
  THROUGH(s1, d,
          weft_allreduce(tp, exbuf_at(&s1), exbuf_at(&s1), (size_t)d, WEFT_FLOAT32, WEFT_SUM, NULL),
          s1, d);
  memcpy(mine.db2, h1, (size_t)d * sizeof(float));
  /* all-gather dY; dW2_r = Z_r^T dY */
  memcpy(hx, mine.dy, (size_t)(bn * d) * sizeof(float));
  THROUGH(sx, bn * d,
          weft_allgather(tp, exbuf_at(&sx), exbuf_at(&sy), (size_t)(bn * d), WEFT_FLOAT32, NULL),
          sy, b * d);
  ex_mm_tn_acc(mine.z, hy, mine.dw2, b, hn, d);
  /* dA_r = dY W2_r^T (1 - Z_r^2); dW1_r = X^T dA_r; db1_r */
  ex_mm_nt(hy, mine.w2, mine.dz, b, d, hn);
  for (long k = 0; k < b * hn; k++)
    mine.dz[k] *= 1.0f - mine.z[k] * mine.z[k];
  ex_mm_tn_acc(xfull, mine.dz, mine.dw1, b, d, hn);
  for (long i = 0; i < b; i++)
    for (long j = 0; j < hn; j++)
      mine.db1[j] += mine.dz[i * hn + j];
  /* dX: reduce-scatter the partial sums dA_r W1_r^T */
  ex_mm_nt(mine.dz, mine.w1, hx, b, hn, d);
  THROUGH(sx, b * d,
          weft_reduce_scatter(tp, exbuf_at(&sx), exbuf_at(&sy), (size_t)(bn * d), WEFT_FLOAT32,
                              WEFT_SUM, NULL),
          sy, bn * d);
  memcpy(mine.dx, hy, (size_t)(bn * d) * sizeof(float));

  /* ---- against the serial MLP ---- */
  {
    float *col = malloc((size_t)(d > b ? d : b) * (size_t)h * sizeof(float));
    if (!col)
      CHECK(WEFT_ENOMEM);
    err[0] = ex_error(mine.y, ref.y + r * bn * d, bn * d);
    err[1] = fabs((double)mine.loss - ref.loss) / fmax(1e-3, fabs((double)ref.loss));
    for (long i = 0; i < d; i++)
      memcpy(col + i * hn, ref.dw1 + i * h + r * hn, (size_t)hn * sizeof(float));
    err[2] = ex_error(mine.dw1, col, d * hn);
    err[3] = ex_error(mine.db1, ref.db1 + r * hn, hn);
    err[4] = ex_error(mine.dw2, ref.dw2 + r * hn * d, hn * d);
    err[5] = ex_error(mine.db2, ref.db2, d);
    err[6] = ex_error(mine.dx, ref.dx + r * bn * d, bn * d);
    for (long i = 0; i < b; i++)
      memcpy(col + i * hn, ref.z + i * h + r * hn, (size_t)hn * sizeof(float));
    err[7] = ex_error(mine.z, col, b * hn);
    free(col);
  }
  /* the worst over every rank (host memory: a few numbers) */
  CHECK(weft_allreduce(weft_world(ctx), err, err, 8, WEFT_FLOAT64, WEFT_MAX, NULL));
  worst = 0;
  for (int k = 0; k < 8; k++)
    worst = fmax(worst, err[k]);
  *ok = worst <= 1e-5;
  if (wrank == 0) {
    printf("tp_mlp: %d rank%s (%s, %s memory), B=%ld tokens, D=%ld, H=%ld, loss %.6f\n", world,
           world == 1 ? "" : "s", layout, o->device ? "device" : "host", b, d, h,
           (double)mine.loss);
    printf("forward:  all-gather X, column-parallel Z, reduce-scatter Y; relative error Y %.1e, "
           "Z %.1e, loss %.1e\n",
           err[0], err[7], err[1]);
    printf("backward: all-gather dY, reduce-scatter dX, all-reduce db2; relative error dW1 %.1e, "
           "db1 %.1e, dW2 %.1e, db2 %.1e, dX %.1e\n",
           err[2], err[3], err[4], err[5], err[6]);
    for (int k = 0; k < 8; k++)
      if (err[k] > 1e-5)
        printf("  %s differs from the serial MLP by %.1e (more than float rounding, 1e-5)\n",
               what[k], err[k]);
    printf("tp_mlp: %s\n", *ok ? "OK" : "FAILED");
  }
out:
  free(x);
  free(t);
  free(xfull);
  mlp_free(&ref);
  mlp_free(&mine);
  exbuf_free(&sx);
  exbuf_free(&sy);
  exbuf_free(&s1);
  if (mesh)
    weft_mesh_destroy(mesh);
  return rc;
}

int main(int argc, char **argv)
{
  struct opts o;
  weft_ctx *ctx = NULL;
  int rc, ok = 0;

  if (weft_check_version(stderr, argv[0]))
    return 1;
  rc = weft_init(&argc, &argv, &ctx);
  if (rc) {
    fprintf(stderr, "tp_mlp: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  if (rc == 0 && o.device && exmem_device("tp_mlp", weft_device(ctx)) != 0)
    rc = -1;
  /* After a failed collective the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && run(ctx, &o, &ok) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : rc == 1 || ok ? 0 : 1;
}
