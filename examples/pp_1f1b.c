/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_1f1b: pipeline parallelism with the 1F1B schedule of Megatron-LM
 * (PipeDream-Flush): a stack of P layers, one per stage of the "pp" group of
 * a "pp=P,dp=*" mesh, trained one step on a batch cut into M micro-batches,
 * checked against the same model computed on one rank without a pipeline.
 *
 *   h_{l+1} = tanh(h_l W_l + b_l) for l < P-1, y = h_{P-1} W_{P-1} + b_{P-1},
 *   loss = sum((y - T)^2) / (2 B)
 *
 * Stage s runs min(P-s-1, M) forwards first (warm-up), then alternates one
 * forward and one backward (steady state), then the backwards left
 * (cool-down); so at most P-s micro-batches' activations are held at once.
 * In the steady state a stage sends its output to the next stage while it
 * receives a gradient from it, and sends a gradient to the previous stage
 * while it receives that stage's next output: each pair is one weft_sendrecv
 * (a batch of a send and a receive issued together). With weft_send and
 * weft_recv one at a time, two neighbours that both send first would wait
 * for each other forever on a GPU (NCCL's send finishes only once the
 * receive has started). The first stage reads its micro-batches itself, the
 * last one computes the loss and the first gradient: WEFT_NO_PEER on their
 * open side. Each stage's weight gradients are summed over the micro-batches;
 * they and the loss equal the unpipelined model's to within float rounding.
 * With --device the activations and gradients travel through the GPU's
 * memory (NCCL), the math stays on the host.
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
  long pp, micro, mbatch, dmodel;
  int device, unbatched;
};

static const char usage_text[] =
  "usage: pp_1f1b [--pp P] [--micro M] [--mbatch N] [--dmodel D] [--device] [--unbatched]\n"
  "A P-layer model (default P: all ranks; the rest is dp), one layer per pipeline\n"
  "stage, one training step of M micro-batches of N samples (default 8 of 4) with\n"
  "the 1F1B schedule, activations and gradients passed with weft_sendrecv;\n"
  "checked against the same model on one rank without a pipeline. --device:\n"
  "through the rank's GPU (weft_device()). --unbatched: each exchange as a\n"
  "weft_send then a weft_recv, to see why not: on a GPU the steady state hangs.\n";

static int parse_opts(int argc, char **argv, struct opts *o)
{
  const struct example_opt opts[] = {
    {"--pp", &o->pp, NULL, 1, 1024},
    {"--micro", &o->micro, NULL, 1, 1024},
    {"--mbatch", &o->mbatch, NULL, 1, 1024},
    {"--dmodel", &o->dmodel, NULL, 1, 1024},
    {"--device", NULL, &o->device, 0, 0},
    {"--unbatched", NULL, &o->unbatched, 0, 0},
    {NULL, NULL, NULL, 0, 0},
  };

  o->pp = 0;
  o->micro = 8;
  o->mbatch = 4;
  o->dmodel = 16;
  o->device = o->unbatched = 0;
  return example_options("pp_1f1b", usage_text, argc, argv, opts);
}

/* One layer: its parameters, their gradients, and per micro-batch what the
 * backward pass needs (its input and output). */
struct layer {
  long d, n; /* width, samples per micro-batch */
  int last;  /* linear, no tanh */
  float *w, *b, *dw, *db;
  float *in, *out; /* [micro][n x d] */
};

static void layer_free(struct layer *l)
{
  free(l->w);
  free(l->b);
  free(l->dw);
  free(l->db);
  free(l->in);
  free(l->out);
  memset(l, 0, sizeof(*l));
}

static int layer_init(struct layer *l, int index, int last, long d, long n, long micro)
{
  memset(l, 0, sizeof(*l));
  l->d = d;
  l->n = n;
  l->last = last;
  l->w = malloc((size_t)(d * d) * sizeof(float));
  l->b = malloc((size_t)d * sizeof(float));
  l->dw = calloc((size_t)(d * d), sizeof(float));
  l->db = calloc((size_t)d, sizeof(float));
  l->in = calloc((size_t)(micro * n * d), sizeof(float));
  l->out = calloc((size_t)(micro * n * d), sizeof(float));
  if (!l->w || !l->b || !l->dw || !l->db || !l->in || !l->out)
    return WEFT_ENOMEM;
  ex_fill(l->w, (size_t)(d * d), 100 + (uint64_t)index, 1.5f / sqrtf((float)d));
  ex_fill(l->b, (size_t)d, 200 + (uint64_t)index, 0.1f);
  return 0;
}

/* Micro-batch i (n samples) through the layer: x in, the output into y. */
static void forward(struct layer *l, long i, const float *x, float *y)
{
  long n = l->n, d = l->d;
  float *in = l->in + i * n * d, *out = l->out + i * n * d;

  memcpy(in, x, (size_t)(n * d) * sizeof(float));
  ex_mm(in, l->w, out, n, d, d);
  for (long r = 0; r < n; r++)
    for (long c = 0; c < d; c++) {
      float v = out[r * d + c] + l->b[c];
      out[r * d + c] = l->last ? v : tanhf(v);
    }
  memcpy(y, out, (size_t)(n * d) * sizeof(float));
}

/* The gradient dy of micro-batch i's output back through the layer: the
 * weights' gradients summed, the input's into dx. dy is overwritten. */
static void backward(struct layer *l, long i, float *dy, float *dx)
{
  long n = l->n, d = l->d;
  const float *in = l->in + i * n * d, *out = l->out + i * n * d;

  if (!l->last)
    for (long k = 0; k < n * d; k++)
      dy[k] *= 1.0f - out[k] * out[k];
  ex_mm_tn_acc(in, dy, l->dw, n, d, d);
  for (long r = 0; r < n; r++)
    for (long c = 0; c < d; c++)
      l->db[c] += dy[r * d + c];
  ex_mm_nt(dy, l->w, dx, n, d, d);
}

/* The loss of micro-batch i's output y against its targets t, and its
 * gradient into dy (batch: all micro-batches' samples). */
static float loss_grad(const float *y, const float *t, float *dy, long nd, long batch)
{
  float loss = 0;

  for (long k = 0; k < nd; k++) {
    float e = y[k] - t[k];
    loss += e * e / (2.0f * (float)batch);
    dy[k] = e / (float)batch;
  }
  return loss;
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    rc = (call);                                                                                   \
    if (rc != 0) {                                                                                 \
      fprintf(stderr, "pp_1f1b: rank %d: %s failed: %s (%s:%d)\n", wrank, #call,                   \
              weft_strerror(rc), __FILE__, __LINE__);                                              \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* The pipeline's links: send n floats from src to dest and receive n into
 * dst from source, together (either peer WEFT_NO_PEER), through sb and rb. */
struct link {
  weft_group *pp;
  struct exbuf sb, rb;
  long n;
  int unbatched; /* a send, then a receive (hangs on a GPU) */
};

static int exchange(struct link *k, const float *src, int dest, float *dst, int source)
{
  size_t bytes = (size_t)k->n * sizeof(float);
  int rc;

  if (dest != WEFT_NO_PEER) {
    memcpy(k->sb.h, src, bytes);
    if ((rc = exbuf_put(&k->sb, bytes)) != 0)
      return rc;
  }
  if (!k->unbatched) {
    rc = weft_sendrecv(k->pp, exbuf_at(&k->sb), (size_t)k->n, dest, exbuf_at(&k->rb), (size_t)k->n,
                       source, WEFT_FLOAT32, NULL);
  } else {
    rc = dest == WEFT_NO_PEER
           ? 0
           : weft_send(k->pp, exbuf_at(&k->sb), (size_t)k->n, WEFT_FLOAT32, dest, NULL);
    if (rc == 0 && source != WEFT_NO_PEER)
      rc = weft_recv(k->pp, exbuf_at(&k->rb), (size_t)k->n, WEFT_FLOAT32, source, NULL);
  }
  if (rc == 0 && source != WEFT_NO_PEER && (rc = exbuf_get(&k->rb, bytes)) == 0)
    memcpy(dst, k->rb.h, bytes);
  return rc;
}

static int run(weft_ctx *ctx, const struct opts *o, int *ok)
{
  int wrank = weft_rank(ctx), world = weft_size(ctx), rc = 0, p, s, dp, prev, next;
  long m = o->micro, n = o->mbatch, d = o->dmodel, batch = m * n, nd = n * d;
  long warm, rem, fi = 0, bi = 0;
  char layout[48];
  weft_mesh *mesh = NULL;
  weft_group *pp;
  struct layer *ref = NULL, mine;
  struct link k;
  float *x = NULL, *t = NULL, *h = NULL, *g = NULL, *act = NULL, *grad = NULL, *tmp = NULL;
  float loss = 0, ref_loss = 0;
  double err[3] = {0, 0, 0};

  memset(&mine, 0, sizeof(mine));
  memset(&k, 0, sizeof(k));
  *ok = 0;
  p = o->pp ? (int)o->pp : world;
  if (world % p) {
    if (wrank == 0)
      fprintf(stderr, "pp_1f1b: --pp %d must divide the %d ranks\n", p, world);
    return 0;
  }
  snprintf(layout, sizeof(layout), "pp=%d,dp=*", p);
  CHECK(weft_mesh_create(ctx, layout, &mesh));
  pp = weft_mesh_group(mesh, "pp");
  if (!pp)
    CHECK(WEFT_ENAME);
  s = weft_group_rank(pp);
  dp = weft_mesh_coord(mesh, "dp");
  prev = s > 0 ? s - 1 : WEFT_NO_PEER;
  next = s < p - 1 ? s + 1 : WEFT_NO_PEER;

  /* This dp replica's batch, and the whole model without a pipeline. */
  x = malloc((size_t)(batch * d) * sizeof(float));
  t = malloc((size_t)(batch * d) * sizeof(float));
  h = malloc((size_t)(batch * d) * sizeof(float));
  g = malloc((size_t)(batch * d) * sizeof(float));
  ref = calloc((size_t)p, sizeof(*ref));
  act = malloc((size_t)nd * sizeof(float));
  grad = malloc((size_t)nd * sizeof(float));
  tmp = malloc((size_t)nd * sizeof(float));
  if (!x || !t || !h || !g || !ref || !act || !grad || !tmp)
    CHECK(WEFT_ENOMEM);
  ex_fill(x, (size_t)(batch * d), 10 + (uint64_t)dp, 1.0f);
  ex_fill(t, (size_t)(batch * d), 20 + (uint64_t)dp, 0.5f);
  for (int l = 0; l < p; l++)
    CHECK(layer_init(&ref[l], l, l == p - 1, d, batch, 1));
  memcpy(h, x, (size_t)(batch * d) * sizeof(float));
  for (int l = 0; l < p; l++)
    forward(&ref[l], 0, h, h);
  ref_loss = loss_grad(h, t, g, batch * d, batch);
  for (int l = p - 1; l >= 0; l--) {
    float *swap = g;
    backward(&ref[l], 0, g, h);
    g = h;
    h = swap;
  }

  /* This stage's layer, and its links to its neighbours. */
  CHECK(layer_init(&mine, s, s == p - 1, d, n, m));
  k.pp = pp;
  k.n = nd;
  k.unbatched = o->unbatched;
  CHECK(exbuf_alloc(&k.sb, (size_t)nd * sizeof(float)));
  CHECK(exbuf_alloc(&k.rb, (size_t)nd * sizeof(float)));

  /* recv_forward: the previous stage's output, or (first stage) our input;
   * send_forward_recv_backward: our output on, the next stage's gradient
   * back, or (last stage) the loss's gradient; and the other way round. */
#define RECV_FORWARD()                                                                             \
  do {                                                                                             \
    if (prev == WEFT_NO_PEER)                                                                      \
      memcpy(act, x + fi * nd, (size_t)nd * sizeof(float));                                        \
    else                                                                                           \
      CHECK(exchange(&k, NULL, WEFT_NO_PEER, act, prev));                                          \
  } while (0)
#define FORWARD_EXCHANGE(recv_back)                                                                \
  do {                                                                                             \
    forward(&mine, fi, act, tmp);                                                                  \
    if (next == WEFT_NO_PEER)                                                                      \
      loss += loss_grad(tmp, t + fi * nd, grad, nd, batch);                                        \
    else                                                                                           \
      CHECK(exchange(&k, tmp, next, grad, (recv_back) ? next : WEFT_NO_PEER));                     \
    fi++;                                                                                          \
  } while (0)

  warm = p - s - 1 < m ? p - s - 1 : m;
  rem = m - warm;
  /* warm-up: forwards only */
  for (long i = 0; i < warm; i++) {
    RECV_FORWARD();
    FORWARD_EXCHANGE(0);
  }
  if (rem > 0)
    RECV_FORWARD();
  /* steady state: one forward, one backward */
  for (long i = 0; i < rem; i++) {
    FORWARD_EXCHANGE(1);
    backward(&mine, bi++, grad, tmp);
    if (i == rem - 1) {
      if (prev != WEFT_NO_PEER)
        CHECK(exchange(&k, tmp, prev, NULL, WEFT_NO_PEER));
    } else if (prev == WEFT_NO_PEER) {
      memcpy(act, x + fi * nd, (size_t)nd * sizeof(float));
    } else {
      CHECK(exchange(&k, tmp, prev, act, prev));
    }
  }
  /* cool-down: the backwards left */
  for (long i = 0; i < warm; i++) {
    CHECK(exchange(&k, NULL, WEFT_NO_PEER, grad, next));
    backward(&mine, bi++, grad, tmp);
    if (prev != WEFT_NO_PEER)
      CHECK(exchange(&k, tmp, prev, NULL, WEFT_NO_PEER));
  }
#undef RECV_FORWARD
#undef FORWARD_EXCHANGE

  /* The loss, from the last stage to all (host memory: one number). */
  CHECK(weft_allreduce(pp, &loss, &loss, 1, WEFT_FLOAT32, WEFT_SUM, NULL));
  err[0] = fabs((double)loss - ref_loss) / fmax(1e-3, fabs((double)ref_loss));
  err[1] = ex_error(mine.dw, ref[s].dw, d * d);
  err[2] = ex_error(mine.db, ref[s].db, d);
  CHECK(weft_allreduce(weft_world(ctx), err, err, 3, WEFT_FLOAT64, WEFT_MAX, NULL));
  *ok = fi == m && bi == m && err[0] <= 1e-5 && err[1] <= 1e-5 && err[2] <= 1e-5;
  if (wrank == 0) {
    printf("pp_1f1b: %d rank%s (%s, %s memory), %d stages, %ld micro-batches of %ld, D=%ld\n",
           world, world == 1 ? "" : "s", layout, o->device ? "device" : "host", p, m, n, d);
    printf("loss %.6f (unpipelined %.6f), relative error loss %.1e, dW %.1e, db %.1e\n",
           (double)loss, (double)ref_loss, err[0], err[1], err[2]);
    printf("pp_1f1b: %s\n", *ok ? "OK" : "FAILED (error above 1e-5)");
  }
out:
  free(x);
  free(t);
  free(h);
  free(g);
  free(act);
  free(grad);
  free(tmp);
  for (int l = 0; ref && l < p; l++)
    layer_free(&ref[l]);
  free(ref);
  layer_free(&mine);
  exbuf_free(&k.sb);
  exbuf_free(&k.rb);
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
    fprintf(stderr, "pp_1f1b: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  if (rc == 0 && o.device && exmem_device("pp_1f1b", weft_device(ctx)) != 0)
    rc = -1;
  /* After a failed call the other ranks may never reach finalize, so leave
   * without it and let the launcher end the job. */
  if (rc == 0 && run(ctx, &o, &ok) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : rc == 1 || ok ? 0 : 1;
}
