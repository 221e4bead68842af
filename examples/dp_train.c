/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp_train: data-parallel SGD of a small multilayer perceptron (a binary
 * classifier, D inputs -> H tanh units -> 1 logit) on synthetic data: the
 * shape of a real training loop on libweft, small enough to read in one go.
 *
 * Every rank holds a full copy of the model. The data set is generated from a
 * seed sample by sample, so any rank can make any sample without a file. Each
 * global batch is cut into one contiguous share per rank; every rank computes
 * the gradient of its share and the shares are averaged with one fused
 * all-reduce (a weft bucket holding the four gradient tensors). The global
 * batch is the same whatever the number of ranks, so the loss curve is the
 * same on 1, 2 or 4 ranks up to rounding: that is what the tests check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "args.h"

struct opts {
  long samples, batch, epochs, hidden, seed;
  double lr;
  int fused; /* 1: one bucket all-reduce; 0: one per tensor */
};

struct model {
  long d, h;
  double *param, *grad;      /* one block each; the tensors are slices */
  double *w1, *b1, *w2, *b2; /* w1 is h x d, row-major */
  double *gw1, *gb1, *gw2, *gb2;
};

#define NFEAT 8 /* input features */

static const char usage_text[] =
  "usage: dp_train [--epochs N] [--samples N] [--batch N] [--hidden N] [--lr X]\n"
  "                [--seed N] [--no-fusion]\n"
  "Data-parallel SGD of a small MLP on synthetic data; prints the loss per epoch.\n"
  "The global batch (default 1024) is split across ranks, so the loss curve does\n"
  "not depend on the number of ranks.\n";

/* splitmix64: a good 64-bit mix, so sample i's features need no state. */
static uint64_t mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* A uniform double in [-1, 1) that depends only on (seed, stream, i). */
static double uniform(uint64_t seed, uint64_t stream, uint64_t i)
{
  uint64_t r = mix64(mix64(seed * 0x100000001b3ULL + stream) ^ i);
  return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Sample i: its features and its label from a fixed nonlinear "teacher". */
static void make_sample(uint64_t seed, long i, double *x, double *y)
{
  for (int j = 0; j < NFEAT; j++)
    x[j] = uniform(seed, 1, (uint64_t)i * NFEAT + (uint64_t)j);
  *y = (sin(3.0 * x[0]) + x[1] * x[2] - 0.5 * x[3] + 0.25 * x[4] > 0.0) ? 1.0 : 0.0;
}

static int model_init(struct model *m, long hidden, uint64_t seed)
{
  long d = NFEAT, h = hidden, n = h * d + h + h + 1;

  memset(m, 0, sizeof(*m));
  m->d = d;
  m->h = h;
  m->param = calloc((size_t)n, sizeof(double));
  m->grad = calloc((size_t)n, sizeof(double));
  if (!m->param || !m->grad)
    return WEFT_ENOMEM;
  m->w1 = m->param;
  m->b1 = m->w1 + h * d;
  m->w2 = m->b1 + h;
  m->b2 = m->w2 + h;
  m->gw1 = m->grad;
  m->gb1 = m->gw1 + h * d;
  m->gw2 = m->gb1 + h;
  m->gb2 = m->gw2 + h;
  for (long k = 0; k < h * d; k++)
    m->w1[k] = uniform(seed, 2, (uint64_t)k) / sqrt((double)d);
  for (long k = 0; k < h; k++)
    m->w2[k] = uniform(seed, 3, (uint64_t)k) / sqrt((double)h);
  return 0;
}

static void model_free(struct model *m)
{
  free(m->param);
  free(m->grad);
}

/* Forward and backward pass of one sample: adds its gradient (times scale) to
 * m->grad and returns its loss; *correct is 1 when the prediction is right. */
static double step_sample(struct model *m, const double *x, double y, double scale, int *correct)
{
  double hid[1024], z, p, dz;

  z = m->b2[0];
  for (long k = 0; k < m->h; k++) {
    double a = m->b1[k];
    for (long j = 0; j < m->d; j++)
      a += m->w1[k * m->d + j] * x[j];
    hid[k] = tanh(a);
    z += m->w2[k] * hid[k];
  }
  p = 1.0 / (1.0 + exp(-z));
  *correct = ((p > 0.5) == (y > 0.5));
  dz = (p - y) * scale;
  m->gb2[0] += dz;
  for (long k = 0; k < m->h; k++) {
    double dh = dz * m->w2[k] * (1.0 - hid[k] * hid[k]);
    m->gw2[k] += dz * hid[k];
    m->gb1[k] += dh;
    for (long j = 0; j < m->d; j++)
      m->gw1[k * m->d + j] += dh * x[j];
  }
  /* Binary cross-entropy from the logit, stable for large |z|. */
  return log1p(exp(-fabs(z))) + (z > 0 ? z : 0) - y * z;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
  o->samples = 8192;
  o->batch = 1024;
  o->epochs = 6;
  o->hidden = 32;
  o->seed = 42;
  o->lr = 4;
  o->fused = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long *dst = NULL, max = 1L << 30;
    int rc = 0;

    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage_text, stdout);
      return 1;
    }
    if (!strcmp(a, "--no-fusion")) {
      o->fused = 0;
      continue;
    }
    if (!strcmp(a, "--samples"))
      dst = &o->samples;
    else if (!strcmp(a, "--batch"))
      dst = &o->batch;
    else if (!strcmp(a, "--epochs"))
      dst = &o->epochs;
    else if (!strcmp(a, "--hidden")) {
      dst = &o->hidden;
      max = 1024;
    } else if (!strcmp(a, "--seed"))
      dst = &o->seed;
    else if (strcmp(a, "--lr")) {
      fprintf(stderr, "dp_train: unknown option '%s'; see dp_train --help\n", a);
      return -1;
    }
    if (!v) {
      fprintf(stderr, "dp_train: option %s needs a value\n", a);
      return -1;
    }
    if (dst) {
      rc = example_parse_long(v, 1, max, dst);
    } else {
      char *end;
      o->lr = strtod(v, &end);
      if (*end || !(o->lr > 0))
        rc = WEFT_EPARSE;
    }
    if (rc) {
      fprintf(stderr, "dp_train: bad value '%s' for %s: %s (a positive number%s)\n", v, a,
              weft_strerror(rc), max == 1024 ? " up to 1024" : "");
      return -1;
    }
    i++;
  }
  if (o->batch > o->samples) {
    fprintf(stderr, "dp_train: --batch %ld is larger than --samples %ld\n", o->batch, o->samples);
    return -1;
  }
  return 0;
}

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    rc = (call);                                                                                   \
    if (rc != 0) {                                                                                 \
      fprintf(stderr, "dp_train: rank %d: %s failed: %s (%s:%d)\n", rank, #call,                   \
              weft_strerror(rc), __FILE__, __LINE__);                                              \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* The training loop on group g; rank 0 prints one line per epoch. */
static int train(weft_group *g, const struct opts *o)
{
  int rank = weft_group_rank(g), size = weft_group_size(g), rc;
  long steps = o->samples / o->batch, allreduces = 0;
  struct model m;
  weft_bucket *bucket = NULL;
  long *perm = NULL;
  double t0 = now();

  CHECK(model_init(&m, o->hidden, (uint64_t)o->seed));
  perm = malloc((size_t)o->samples * sizeof(*perm));
  if (!perm)
    CHECK(WEFT_ENOMEM);
  if (o->fused) {
    CHECK(weft_bucket_create(g, WEFT_FLOAT64, 1 << 20, &bucket));
    CHECK(weft_bucket_add(bucket, m.gw1, (size_t)(m.h * m.d)));
    CHECK(weft_bucket_add(bucket, m.gb1, (size_t)m.h));
    CHECK(weft_bucket_add(bucket, m.gw2, (size_t)m.h));
    CHECK(weft_bucket_add(bucket, m.gb2, 1));
  }
  if (rank == 0)
    printf("dp_train: %d rank%s, MLP %d-%ld-1, %ld samples, global batch %ld, %ld epochs, "
           "lr %g, gradients averaged with %s\n",
           size, size == 1 ? "" : "s", NFEAT, o->hidden, o->samples, o->batch, o->epochs, o->lr,
           o->fused ? "one bucket all-reduce per step" : "one all-reduce per tensor");

  for (long e = 0; e < o->epochs; e++) {
    double stats[2] = {0, 0}; /* loss sum, correct predictions */

    /* The same shuffle on every rank: Fisher-Yates from (seed, epoch). */
    for (long i = 0; i < o->samples; i++)
      perm[i] = i;
    for (long i = o->samples - 1; i > 0; i--) {
      long j = (long)(mix64((uint64_t)o->seed ^ mix64((uint64_t)e * 7919 + (uint64_t)i)) %
                      (uint64_t)(i + 1));
      long t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    for (long s = 0; s < steps; s++) {
      /* This rank's share of the global batch: [lo, hi). Scaling its gradient
       * by size/batch makes the average over ranks the global batch's mean
       * gradient, also when the shares are not of equal size. */
      long lo = o->batch * rank / size, hi = o->batch * (rank + 1) / size;
      double scale = (double)size / (double)o->batch;

      memset(m.grad, 0, (size_t)(m.h * m.d + 2 * m.h + 1) * sizeof(double));
      for (long b = lo; b < hi; b++) {
        double x[NFEAT], y;
        int ok;

        make_sample((uint64_t)o->seed, perm[s * o->batch + b], x, &y);
        stats[0] += step_sample(&m, x, y, scale, &ok);
        stats[1] += ok;
      }
      if (bucket) {
        CHECK(weft_bucket_allreduce(bucket, WEFT_AVG, NULL));
        allreduces++;
      } else {
        CHECK(weft_allreduce(g, m.gw1, m.gw1, (size_t)(m.h * m.d), WEFT_FLOAT64, WEFT_AVG, NULL));
        CHECK(weft_allreduce(g, m.gb1, m.gb1, (size_t)m.h, WEFT_FLOAT64, WEFT_AVG, NULL));
        CHECK(weft_allreduce(g, m.gw2, m.gw2, (size_t)m.h, WEFT_FLOAT64, WEFT_AVG, NULL));
        CHECK(weft_allreduce(g, m.gb2, m.gb2, 1, WEFT_FLOAT64, WEFT_AVG, NULL));
        allreduces += 4;
      }
      for (long k = 0; k < m.h * m.d + 2 * m.h + 1; k++)
        m.param[k] -= o->lr * m.grad[k];
    }
    CHECK(weft_allreduce(g, stats, stats, 2, WEFT_FLOAT64, WEFT_SUM, NULL));
    if (rank == 0) {
      double n = (double)(steps * o->batch);
      printf("epoch %3ld  loss %.6f  accuracy %5.1f%%\n", e + 1, stats[0] / n,
             100.0 * stats[1] / n);
      fflush(stdout);
    }
  }
  if (rank == 0)
    printf("dp_train: done in %.2f s, %ld gradient all-reduce%s of %ld parameters\n", now() - t0,
           allreduces, allreduces == 1 ? "" : "s", m.h * m.d + 2 * m.h + 1);
out:
  if (bucket)
    weft_bucket_destroy(bucket);
  free(perm);
  model_free(&m);
  return rc;
}

int main(int argc, char **argv)
{
  struct opts o;
  weft_ctx *ctx = NULL;
  int rc;

  if (weft_check_version(stderr, argv[0]))
    return 1;
  rc = weft_init(&argc, &argv, &ctx);
  if (rc) {
    fprintf(stderr, "dp_train: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  /* After a failed collective the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && train(weft_world(ctx), &o) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : 0;
}
