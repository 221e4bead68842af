/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_matmul: the tensor-parallel MLP block of Megatron-LM, Y = tanh(X W1) W2,
 * on a "tp" group of libweft's mesh, checked against a serial product.
 *
 * X (B x D) is the same on every rank. W1 (D x H) is split by columns: rank r
 * holds H/n of them and computes its block of Z = tanh(X W1) with no
 * communication (column-parallel; tanh works element by element). W2 (H x D) is
 * split by rows to match, so Z_r W2_r is a partial sum of Y: a reduce-scatter
 * adds the partial sums and leaves each rank B/n rows of Y (row-parallel), and
 * an all-gather puts Y back together. Z's blocks are all-gathered too, only to
 * check them. Every rank also computes the serial result; the largest
 * difference over all ranks is printed and must stay within rounding.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "args.h"
#include "exmath.h"

struct opts {
  long batch, dmodel, hidden;
};

struct mats {
  long b, d, h, hn;    /* hn = h / ranks */
  double *x, *w1, *w2; /* whole: b x d, d x h, h x d */
  double *z, *y;       /* serial results: b x h, b x d */
  double *w1c, *w2r;   /* this rank's column block (d x hn), row block (hn x d) */
  double *zl, *zall, *ypart, *yrows, *yall;
};

static const char usage_text[] =
  "usage: tp_matmul [--batch B] [--dmodel D] [--hidden H]\n"
  "Tensor-parallel Y = tanh(X W1) W2: W1 split by columns, W2 by rows, put\n"
  "together with reduce-scatter and all-gather, checked against the serial\n"
  "product. B and H must be multiples of the number of ranks.\n";

static int parse_opts(int argc, char **argv, struct opts *o)
{
  const struct example_opt opts[] = {
    {"--batch", &o->batch, NULL, 1, 4096},
    {"--dmodel", &o->dmodel, NULL, 1, 4096},
    {"--hidden", &o->hidden, NULL, 1, 4096},
    {NULL, NULL, NULL, 0, 0},
  };

  o->batch = 64;
  o->dmodel = 32;
  o->hidden = 128;
  return example_options("tp_matmul", usage_text, argc, argv, opts);
}

/* c (m x n) = a (m x k) b (k x n), all row-major. */
static void matmul(const double *a, const double *b, double *c, long m, long k, long n)
{
  for (long i = 0; i < m; i++)
    for (long j = 0; j < n; j++) {
      double s = 0;
      for (long p = 0; p < k; p++)
        s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}

static void mats_free(struct mats *m)
{
  double *all[] = {m->x,   m->w1, m->w2,   m->z,     m->y,     m->w1c,
                   m->w2r, m->zl, m->zall, m->ypart, m->yrows, m->yall};

  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    free(all[i]);
}

static int mats_init(struct mats *m, const struct opts *o, int rank, int n)
{
  long b = o->batch, d = o->dmodel, h = o->hidden, hn = h / n;

  memset(m, 0, sizeof(*m));
  m->b = b;
  m->d = d;
  m->h = h;
  m->hn = hn;
#define ALLOC(p, count)                                                                            \
  if (!((p) = malloc((size_t)(count) * sizeof(double))))                                           \
  return WEFT_ENOMEM
  ALLOC(m->x, b * d);
  ALLOC(m->w1, d * h);
  ALLOC(m->w2, h * d);
  ALLOC(m->z, b * h);
  ALLOC(m->y, b * d);
  ALLOC(m->w1c, d * hn);
  ALLOC(m->w2r, hn * d);
  ALLOC(m->zl, b * hn);
  ALLOC(m->zall, b * h);
  ALLOC(m->ypart, b * d);
  ALLOC(m->yrows, b / n * d);
  ALLOC(m->yall, b * d);
#undef ALLOC
  for (long k = 0; k < b * d; k++)
    m->x[k] = ex_entry_d(1, (uint64_t)k);
  for (long k = 0; k < d * h; k++)
    m->w1[k] = ex_entry_d(2, (uint64_t)k) / sqrt((double)d);
  for (long k = 0; k < h * d; k++)
    m->w2[k] = ex_entry_d(3, (uint64_t)k) / sqrt((double)h);
  /* This rank's shards: columns [r hn, (r+1) hn) of W1, the same rows of W2. */
  for (long i = 0; i < d; i++)
    memcpy(m->w1c + i * hn, m->w1 + i * h + rank * hn, (size_t)hn * sizeof(double));
  memcpy(m->w2r, m->w2 + rank * hn * d, (size_t)(hn * d) * sizeof(double));
  return 0;
}

/* Largest |a - b| relative to max(1, |b|). */
static double max_error(const double *a, const double *b, long n)
{
  double e = 0;

  for (long k = 0; k < n; k++) {
    double t = fabs(a[k] - b[k]) / fmax(1.0, fabs(b[k]));
    e = fmax(e, t);
  }
  return e;
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    rc = (call);                                                                                   \
    if (rc != 0) {                                                                                 \
      fprintf(stderr, "tp_matmul: rank %d: %s failed: %s (%s:%d)\n", rank, #call,                  \
              weft_strerror(rc), __FILE__, __LINE__);                                              \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* Returns 0 and sets *ok, or a WEFT_E* code after a failed call. */
static int run(weft_ctx *ctx, const struct opts *o, int *ok)
{
  int rank = weft_rank(ctx), n = weft_size(ctx), rc;
  char layout[32];
  weft_mesh *mesh = NULL;
  weft_group *tp;
  struct mats m;
  double err[2];

  memset(&m, 0, sizeof(m));
  *ok = 0;
  if (o->batch % n || o->hidden % n) {
    if (rank == 0)
      fprintf(stderr,
              "tp_matmul: --batch %ld and --hidden %ld must be multiples of the %d "
              "ranks\n",
              o->batch, o->hidden, n);
    return 0;
  }
  snprintf(layout, sizeof(layout), "tp=%d", n);
  CHECK(weft_mesh_create(ctx, layout, &mesh));
  tp = weft_mesh_group(mesh, "tp");
  if (!tp)
    CHECK(WEFT_ENAME);
  rank = weft_group_rank(tp);
  CHECK(mats_init(&m, o, rank, n));

  /* Serial reference. */
  matmul(m.x, m.w1, m.z, m.b, m.d, m.h);
  for (long k = 0; k < m.b * m.h; k++)
    m.z[k] = tanh(m.z[k]);
  matmul(m.z, m.w2, m.y, m.b, m.h, m.d);

  /* Column-parallel: Z_r = tanh(X W1_r); gather the blocks ([rank][b][hn])
   * and interleave them into Z's columns, to check them. */
  matmul(m.x, m.w1c, m.zl, m.b, m.d, m.hn);
  for (long k = 0; k < m.b * m.hn; k++)
    m.zl[k] = tanh(m.zl[k]);
  CHECK(weft_allgather(tp, m.zl, m.zall, (size_t)(m.b * m.hn), WEFT_FLOAT64, NULL));
  err[0] = 0;
  for (int r = 0; r < n; r++)
    for (long i = 0; i < m.b; i++)
      for (long k = 0; k < m.hn; k++) {
        double got = m.zall[(r * m.b + i) * m.hn + k], want = m.z[i * m.h + r * m.hn + k];
        err[0] = fmax(err[0], fabs(got - want) / fmax(1.0, fabs(want)));
      }

  /* Row-parallel: Z_r W2_r is this rank's partial sum of Y; reduce-scatter
   * leaves rank r rows [r b/n, (r+1) b/n) of the sum; all-gather joins them. */
  matmul(m.zl, m.w2r, m.ypart, m.b, m.hn, m.d);
  CHECK(weft_reduce_scatter(tp, m.ypart, m.yrows, (size_t)(m.b / n * m.d), WEFT_FLOAT64, WEFT_SUM,
                            NULL));
  CHECK(weft_allgather(tp, m.yrows, m.yall, (size_t)(m.b / n * m.d), WEFT_FLOAT64, NULL));
  err[1] = max_error(m.yall, m.y, m.b * m.d);

  CHECK(weft_allreduce(tp, err, err, 2, WEFT_FLOAT64, WEFT_MAX, NULL));
  *ok = err[0] <= 1e-12 && err[1] <= 1e-12;
  if (rank == 0) {
    printf("tp_matmul: %d rank%s (%s), Y = tanh(X W1) W2 with X %ldx%ld, W1 %ldx%ld, W2 %ldx%ld\n",
           n, n == 1 ? "" : "s", layout, m.b, m.d, m.d, m.h, m.h, m.d);
    printf("column-parallel tanh(X W1): all-gather of %d column block%s, max error %.1e\n", n,
           n == 1 ? "" : "s", err[0]);
    printf("row-parallel    Y: reduce-scatter + all-gather of %d row block%s, max error %.1e\n", n,
           n == 1 ? "" : "s", err[1]);
    printf("tp_matmul: %s\n", *ok ? "OK" : "FAILED (error above 1e-12)");
  }
out:
  mats_free(&m);
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
    fprintf(stderr, "tp_matmul: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  /* After a failed collective the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && run(ctx, &o, &ok) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : rc == 1 || ok ? 0 : 1;
}
