/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * moe: an expert-parallel mixture-of-experts layer (Switch Transformer's:
 * top-1 router, capacity factor), its experts spread over the "ep" group of
 * an "ep=N,dp=*" mesh, checked against the same layer computed densely on
 * one rank, dropped tokens included.
 *
 * Every rank has T tokens of width D. The router gives each token one
 * expert, e = argmax softmax(x Wr + br), with its probability p as the gate.
 * An expert takes at most C = ceil(capacity * T / X) tokens from each rank
 * (X experts in all), in token order; tokens past that are dropped and pass
 * through the residual alone. Expert e, a two-layer MLP tanh(x W1_e) W2_e, lives
 * on ep rank e / (X / N). The layer's output is y = x + p f_e(x), or x for a
 * dropped token.
 *   dispatch: how many tokens go to each expert of each rank, with
 *             weft_alltoall (one count per expert), then the tokens
 *             themselves, grouped by expert, with weft_alltoallv (per-peer
 *             counts and displacements)
 *   experts:  each rank runs its experts on the tokens it received
 *   combine:  weft_alltoallv sends the outputs back the way they came
 * Every rank also computes its tokens' outputs densely (all experts' weights
 * on every rank, no communication) and compares: the same within float
 * rounding (here the same operations in the same order, so the same bits).
 * dp replicas have their own tokens and the same experts. With --device the
 * counts, tokens and outputs travel through the GPU's memory (NCCL), the
 * math stays on the host.
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
  long ep, experts, tokens, dmodel, hidden, capacity;
  int device;
};

static const char usage_text[] =
  "usage: moe [--ep N] [--experts E] [--tokens T] [--dmodel D] [--hidden F]\n"
  "           [--capacity PERCENT] [--device]\n"
  "A mixture-of-experts layer, top-1 router, E experts per rank of the ep group\n"
  "(default N=2, the rest is dp; E=2), T tokens per rank (default 24), each\n"
  "expert taking at most capacity% x T / experts tokens per rank (default 100):\n"
  "tokens dispatched and combined with weft_alltoall and weft_alltoallv, checked\n"
  "against the layer computed densely, dropped tokens included. --device: through\n"
  "the rank's GPU (weft_device()).\n";

static int parse_opts(int argc, char **argv, struct opts *o)
{
  const struct example_opt opts[] = {
    {"--ep", &o->ep, NULL, 1, 4096},         {"--experts", &o->experts, NULL, 1, 4096},
    {"--tokens", &o->tokens, NULL, 1, 4096}, {"--dmodel", &o->dmodel, NULL, 1, 4096},
    {"--hidden", &o->hidden, NULL, 1, 4096}, {"--capacity", &o->capacity, NULL, 1, 4096},
    {"--device", NULL, &o->device, 0, 0},    {NULL, NULL, NULL, 0, 0},
  };

  o->ep = 2;
  o->experts = 2;
  o->tokens = 24;
  o->dmodel = 16;
  o->hidden = 32;
  o->capacity = 100;
  o->device = 0;
  return example_options("moe", usage_text, argc, argv, opts);
}

/* Expert e's weights, the same on every rank: W1 (d x f), W2 (f x d). */
static void expert_weights(int e, long d, long f, float *w1, float *w2)
{
  ex_fill(w1, (size_t)(d * f), 300 + 2 * (uint64_t)e, 1.0f / sqrtf((float)d));
  ex_fill(w2, (size_t)(f * d), 301 + 2 * (uint64_t)e, 1.0f / sqrtf((float)f));
}

/* One token through an expert: out = tanh(x W1) W2 (tmp: f floats). */
static void expert(const float *x, const float *w1, const float *w2, float *out, float *tmp, long d,
                   long f)
{
  ex_mm(x, w1, tmp, 1, d, f);
  for (long j = 0; j < f; j++)
    tmp[j] = tanhf(tmp[j]);
  ex_mm(tmp, w2, out, 1, f, d);
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    rc = (call);                                                                                   \
    if (rc != 0) {                                                                                 \
      fprintf(stderr, "moe: rank %d: %s failed: %s (%s:%d)\n", wrank, #call, weft_strerror(rc),    \
              __FILE__, __LINE__);                                                                 \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

static int run(weft_ctx *ctx, const struct opts *o, int *ok)
{
  int wrank = weft_rank(ctx), world = weft_size(ctx), rc = 0, n, r, nx;
  long per = o->experts, t = o->tokens, d = o->dmodel, f = o->hidden, cap;
  char layout[48];
  weft_mesh *mesh = NULL;
  weft_group *ep;
  float *x = NULL, *wr = NULL, *br = NULL, *gate = NULL, *w1 = NULL, *w2 = NULL, *y = NULL,
        *yref = NULL, *tmp = NULL, *o1 = NULL;
  int *pick = NULL, *slot = NULL, *order = NULL;
  int64_t *cnt_to = NULL, *cnt_from = NULL, *used = NULL;
  size_t *sc = NULL, *sd = NULL, *rcn = NULL, *rd = NULL;
  struct exbuf bcnt = {0}, bcnt2 = {0}, bsend = {0}, brecv = {0};
  long kept = 0;
  int64_t stats[3];
  double err;

  *ok = 0;
  n = (int)o->ep;
  if (world % n) {
    if (wrank == 0)
      fprintf(stderr, "moe: --ep %d must divide the %d ranks\n", n, world);
    return 0;
  }
  nx = n * (int)per;
  cap = (o->capacity * t + 100L * nx - 1) / (100L * nx);
  snprintf(layout, sizeof(layout), "ep=%d,dp=*", n);
  CHECK(weft_mesh_create(ctx, layout, &mesh));
  ep = weft_mesh_group(mesh, "ep");
  if (!ep)
    CHECK(WEFT_ENAME);
  r = weft_group_rank(ep);

#define ALLOC(p, count)                                                                            \
  if (!((p) = calloc((size_t)(count), sizeof(*(p)))))                                              \
  CHECK(WEFT_ENOMEM)
  ALLOC(x, t * d);
  ALLOC(wr, d * nx);
  ALLOC(br, nx);
  ALLOC(gate, t);
  ALLOC(pick, t);
  ALLOC(slot, t);
  ALLOC(order, t);
  ALLOC(w1, (long)nx * d * f);
  ALLOC(w2, (long)nx * f * d);
  ALLOC(y, t * d);
  ALLOC(yref, t * d);
  ALLOC(tmp, f);
  ALLOC(o1, d);
  ALLOC(cnt_to, nx);
  ALLOC(cnt_from, nx);
  ALLOC(used, nx);
  ALLOC(sc, n);
  ALLOC(sd, n);
  ALLOC(rcn, n);
  ALLOC(rd, n);
#undef ALLOC
  /* This rank's tokens; the router and every expert, the same everywhere.
   * br leans towards expert 0, so that it gets more than it can take. */
  ex_fill(x, (size_t)(t * d), 1000 + (uint64_t)wrank, 1.0f);
  ex_fill(wr, (size_t)(d * nx), 5, 1.0f / sqrtf((float)d));
  br[0] = 0.3f;
  for (int e = 0; e < nx; e++)
    expert_weights(e, d, f, w1 + (long)e * d * f, w2 + (long)e * f * d);

  /* ---- router: top-1, then the capacity, in token order ---- */
  for (long j = 0; j < t; j++) {
    float logit[256], mx = -INFINITY, sum = 0;
    int best = 0;
    for (int e = 0; e < nx && e < 256; e++) {
      logit[e] = br[e];
      for (long c = 0; c < d; c++)
        logit[e] += x[j * d + c] * wr[c * nx + e];
      if (logit[e] > mx) {
        mx = logit[e];
        best = e;
      }
    }
    for (int e = 0; e < nx && e < 256; e++)
      sum += expf(logit[e] - mx);
    pick[j] = best;
    gate[j] = 1.0f / sum;
    slot[j] = used[best] < cap ? (int)used[best]++ : -1; /* -1: dropped */
    kept += slot[j] >= 0;
  }

  /* ---- the dense reference: every expert here, no communication ---- */
  for (long j = 0; j < t; j++) {
    memcpy(yref + j * d, x + j * d, (size_t)d * sizeof(float));
    if (slot[j] < 0)
      continue;
    expert(x + j * d, w1 + (long)pick[j] * d * f, w2 + (long)pick[j] * f * d, o1, tmp, d, f);
    for (long c = 0; c < d; c++)
      yref[j * d + c] += gate[j] * o1[c];
  }

  /* ---- dispatch: the counts per expert, then the tokens grouped by expert
   * (expert e's are on ep rank e / per, in the order of e) ---- */
  for (long j = 0; j < t; j++)
    if (slot[j] >= 0)
      cnt_to[pick[j]]++;
  CHECK(exbuf_alloc(&bcnt, (size_t)nx * sizeof(int64_t)));
  CHECK(exbuf_alloc(&bcnt2, (size_t)nx * sizeof(int64_t)));
  memcpy(bcnt.h, cnt_to, (size_t)nx * sizeof(int64_t));
  CHECK(exbuf_put(&bcnt, (size_t)nx * sizeof(int64_t)));
  CHECK(weft_alltoall(ep, exbuf_at(&bcnt), exbuf_at(&bcnt2), (size_t)per, WEFT_INT64, NULL));
  CHECK(exbuf_get(&bcnt2, (size_t)nx * sizeof(int64_t)));
  memcpy(cnt_from, bcnt2.h, (size_t)nx * sizeof(int64_t));
  /* cnt_from[k * per + e]: tokens rank k sends our expert e. In floats: */
  for (int k = 0; k < n; k++) {
    sc[k] = rcn[k] = 0;
    for (long e = 0; e < per; e++) {
      sc[k] += (size_t)cnt_to[k * per + e] * (size_t)d;
      rcn[k] += (size_t)cnt_from[k * per + e] * (size_t)d;
    }
    sd[k] = k ? sd[k - 1] + sc[k - 1] : 0;
    rd[k] = k ? rd[k - 1] + rcn[k - 1] : 0;
  }
  {
    size_t stot = sd[n - 1] + sc[n - 1], rtot = rd[n - 1] + rcn[n - 1], at = 0;
    size_t big = (stot > rtot ? stot : rtot) + 1;
    CHECK(exbuf_alloc(&bsend, big * sizeof(float)));
    CHECK(exbuf_alloc(&brecv, big * sizeof(float)));
    /* kept tokens by expert, then token order; order[] remembers where */
    for (int e = 0; e < nx; e++)
      for (long j = 0; j < t; j++)
        if (slot[j] >= 0 && pick[j] == e) {
          memcpy((float *)bsend.h + at * (size_t)d, x + j * d, (size_t)d * sizeof(float));
          order[at++] = (int)j;
        }
    CHECK(exbuf_put(&bsend, stot * sizeof(float)));
    CHECK(
      weft_alltoallv(ep, exbuf_at(&bsend), sc, sd, exbuf_at(&brecv), rcn, rd, WEFT_FLOAT32, NULL));
    CHECK(exbuf_get(&brecv, rtot * sizeof(float)));

    /* ---- our experts, on what came: from each rank, by expert ---- */
    {
      float *in = brecv.h, *res = bsend.h;
      size_t row = 0;
      for (int k = 0; k < n; k++)
        for (long e = 0; e < per; e++) {
          long ge = (long)r * per + e;
          for (int64_t q = 0; q < cnt_from[k * per + e]; q++, row++)
            expert(in + row * (size_t)d, w1 + ge * d * f, w2 + ge * f * d, res + row * (size_t)d,
                   tmp, d, f);
        }
    }

    /* ---- combine: the outputs back the way they came ---- */
    CHECK(exbuf_put(&bsend, rtot * sizeof(float)));
    CHECK(
      weft_alltoallv(ep, exbuf_at(&bsend), rcn, rd, exbuf_at(&brecv), sc, sd, WEFT_FLOAT32, NULL));
    CHECK(exbuf_get(&brecv, stot * sizeof(float)));
    memcpy(y, x, (size_t)(t * d) * sizeof(float));
    for (size_t q = 0; q < at; q++) {
      long j = order[q];
      for (long c = 0; c < d; c++)
        y[j * d + c] += gate[j] * ((float *)brecv.h)[q * (size_t)d + (size_t)c];
    }
  }

  /* ---- against the dense layer, over every rank ---- */
  err = ex_error(y, yref, t * d);
  stats[0] = kept;
  stats[1] = t - kept;
  stats[2] = memcmp(y, yref, (size_t)(t * d) * sizeof(float)) != 0;
  CHECK(weft_allreduce(weft_world(ctx), &err, &err, 1, WEFT_FLOAT64, WEFT_MAX, NULL));
  CHECK(weft_allreduce(weft_world(ctx), stats, stats, 3, WEFT_INT64, WEFT_SUM, NULL));
  *ok = err <= 1e-5;
  if (wrank == 0) {
    printf("moe: %d rank%s (%s, %s memory), %d experts (%ld per ep rank), top-1, %ld tokens per "
           "rank, capacity %ld per expert and rank (factor %.2f)\n",
           world, world == 1 ? "" : "s", layout, o->device ? "device" : "host", nx, per, t, cap,
           (double)o->capacity / 100);
    printf("dispatch and combine: weft_alltoall of counts, weft_alltoallv of tokens; %lld tokens "
           "kept, %lld dropped past capacity\n",
           (long long)stats[0], (long long)stats[1]);
    printf("against the dense layer: relative error %.1e (%s)\n", err,
           stats[2] ? "some bits differ" : "the same bits");
    printf("moe: %s\n", *ok ? "OK" : "FAILED (error above 1e-5)");
  }
out:
  free(x);
  free(wr);
  free(br);
  free(gate);
  free(pick);
  free(slot);
  free(order);
  free(w1);
  free(w2);
  free(y);
  free(yref);
  free(tmp);
  free(o1);
  free(cnt_to);
  free(cnt_from);
  free(used);
  free(sc);
  free(sd);
  free(rcn);
  free(rd);
  exbuf_free(&bcnt);
  exbuf_free(&bcnt2);
  exbuf_free(&bsend);
  exbuf_free(&brecv);
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
    fprintf(stderr, "moe: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  if (rc == 0 && o.ep * o.experts > 256) {
    fprintf(stderr, "moe: --ep %ld x --experts %ld: at most 256 experts in all\n", o.ep, o.experts);
    rc = -1;
  }
  if (rc == 0 && o.device && exmem_device("moe", weft_device(ctx)) != 0)
    rc = -1;
  /* After a failed collective the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && run(ctx, &o, &ok) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : rc == 1 || ok ? 0 : 1;
}
