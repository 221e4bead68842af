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
 *
 * It checkpoints and resumes the way a job under weftrun --restarts does:
 * after every epoch rank 0 writes the model and the epoch to the checkpoint
 * directory (--checkpoint-dir, else WEFT_CHECKPOINT_DIR from weft_restart_info),
 * atomically (a temporary file, fsync, rename); at start rank 0 reads the
 * last complete one, if any, and broadcasts it. The shuffle of every epoch is
 * a function of (seed, epoch) and SGD keeps no other state, so the model and
 * the epoch are all a run needs to go on exactly where it was: on the same
 * number of ranks the rest of the run is the same bit for bit, on another
 * number (the same global batch, cut into other shares) the same up to the
 * rounding of the gradient sums.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#include "args.h"

struct opts {
  long samples, batch, epochs, hidden, seed;
  double lr;
  int fused;            /* 1: one bucket all-reduce; 0: one per tensor */
  long stop_after;      /* leave after this epoch (0: run them all) */
  long epoch_delay;     /* milliseconds to wait after each epoch (tests) */
  const char *ckpt_dir; /* NULL: no checkpoints */
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
  "                [--seed N] [--no-fusion] [--checkpoint-dir DIR] [--stop-after N]\n"
  "                [--epoch-delay MS]\n"
  "Data-parallel SGD of a small MLP on synthetic data; prints the loss per epoch.\n"
  "The global batch (default 1024) is split across ranks, so the loss curve does\n"
  "not depend on the number of ranks.\n"
  "With a checkpoint directory (--checkpoint-dir, else WEFT_CHECKPOINT_DIR as\n"
  "weftrun --restarts sets it) rank 0 saves the model after every epoch, and a\n"
  "run that finds a checkpoint there goes on after its epoch, on any number of\n"
  "ranks. --stop-after N leaves after epoch N, as if the job had been lost;\n"
  "--epoch-delay MS waits MS milliseconds after each epoch (time for a test to\n"
  "kill a host in a given epoch).\n";

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
  o->stop_after = 0;
  o->epoch_delay = 0;
  o->ckpt_dir = NULL;
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
    if (!strcmp(a, "--checkpoint-dir")) {
      if (!v || !*v) {
        fprintf(stderr, "dp_train: option %s needs a directory\n", a);
        return -1;
      }
      o->ckpt_dir = v;
      i++;
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
    else if (!strcmp(a, "--stop-after"))
      dst = &o->stop_after;
    else if (!strcmp(a, "--epoch-delay")) {
      dst = &o->epoch_delay;
      max = 600000;
    } else if (strcmp(a, "--lr")) {
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
      if (dst)
        fprintf(stderr, "dp_train: bad value '%s' for %s: %s (a whole number from 1 to %ld)\n", v,
                a, weft_strerror(rc), max);
      else
        fprintf(stderr, "dp_train: bad value '%s' for %s: %s (a positive number)\n", v, a,
                weft_strerror(rc));
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

/* ---- Checkpoints ----------------------------------------------------------
 * One file, DIR/dp_train.ckpt: a header of int64 words (magic, format, the
 * epochs done, the options that decide the model's path, the world size that
 * wrote it, the number of parameters), the parameters as doubles, and an
 * FNV-1a sum of all that. It is written to a temporary file, flushed to disk
 * and renamed over the last one, so a reader sees the previous checkpoint or
 * the new one, never half of one, whenever the writer dies. */
#define CKPT_NAME "dp_train.ckpt"
#define CKPT_MAGIC 0x74706b6374667764LL /* "dwftckpt" */
enum {
  H_MAGIC,
  H_FORMAT,
  H_EPOCH,
  H_SAMPLES,
  H_BATCH,
  H_HIDDEN,
  H_SEED,
  H_LR,
  H_WORLD,
  H_NPARAM,
  H_N
};

static long nparams(const struct model *m) { return m->h * m->d + 2 * m->h + 1; }

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 0x100000001b3ULL;
  return h;
}

static void ckpt_header(const struct opts *o, const struct model *m, long epoch, int world,
                        int64_t *h)
{
  h[H_MAGIC] = CKPT_MAGIC;
  h[H_FORMAT] = 1;
  h[H_EPOCH] = epoch;
  h[H_SAMPLES] = o->samples;
  h[H_BATCH] = o->batch;
  h[H_HIDDEN] = o->hidden;
  h[H_SEED] = o->seed;
  memcpy(&h[H_LR], &o->lr, sizeof(double));
  h[H_WORLD] = world;
  h[H_NPARAM] = nparams(m);
}

/* Rank 0 after epoch `epoch`: 0, or -1 with why in err. */
static int ckpt_save(const struct opts *o, const struct model *m, long epoch, int world, char *err,
                     size_t errsz)
{
  char path[4096], tmp[4096];
  int64_t h[H_N];
  uint64_t sum;
  FILE *f;
  int fd, ok;

  if (snprintf(path, sizeof(path), "%s/%s", o->ckpt_dir, CKPT_NAME) >= (int)sizeof(path) ||
      snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
    snprintf(err, errsz, "checkpoint directory name too long: %s", o->ckpt_dir);
    return -1;
  }
  ckpt_header(o, m, epoch, world, h);
  sum = fnv1a(0xcbf29ce484222325ULL, h, sizeof(h));
  sum = fnv1a(sum, m->param, (size_t)nparams(m) * sizeof(double));
  f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, errsz, "cannot create %s: %s; is the checkpoint directory there and writable?",
             tmp, strerror(errno));
    return -1;
  }
  ok = fwrite(h, sizeof(h), 1, f) == 1 &&
       fwrite(m->param, sizeof(double), (size_t)nparams(m), f) == (size_t)nparams(m) &&
       fwrite(&sum, sizeof(sum), 1, f) == 1 && fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (fclose(f) != 0)
    ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    snprintf(err, errsz, "cannot write %s: %s", ok ? path : tmp, strerror(errno));
    unlink(tmp);
    return -1;
  }
  /* The rename itself must reach the disk before the epoch counts as saved. */
  fd = open(o->ckpt_dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ok = fsync(fd) == 0 || errno == EINVAL; /* some file systems cannot sync a directory */
    close(fd);
  }
  if (fd < 0 || !ok) {
    snprintf(err, errsz, "cannot sync the directory %s: %s", o->ckpt_dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Rank 0 at start: 1 with the model and *epoch, *world from the checkpoint,
 * 0 when there is none, -1 with why in err (unreadable, damaged, or written
 * by a run with other options: resuming it would be another run). */
static int ckpt_load(const struct opts *o, struct model *m, long *epoch, long *world, char *err,
                     size_t errsz)
{
  static const char *const names[H_N] = {NULL,       NULL,     NULL,   "--samples", "--batch",
                                         "--hidden", "--seed", "--lr", NULL,        NULL};
  char path[4096];
  int64_t h[H_N], want[H_N];
  uint64_t sum, stored;
  FILE *f;
  int ok;

  if (snprintf(path, sizeof(path), "%s/%s", o->ckpt_dir, CKPT_NAME) >= (int)sizeof(path)) {
    snprintf(err, errsz, "checkpoint directory name too long: %s", o->ckpt_dir);
    return -1;
  }
  f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT)
      return 0;
    snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  ckpt_header(o, m, 0, 0, want);
  ok = fread(h, sizeof(h), 1, f) == 1 && h[H_MAGIC] == CKPT_MAGIC && h[H_FORMAT] == 1;
  for (int k = H_SAMPLES; ok && k <= H_LR; k++)
    if (h[k] != want[k]) {
      snprintf(err, errsz,
               "%s was written by a run with another %s; resume with the options it was "
               "started with, or use another checkpoint directory",
               path, names[k]);
      fclose(f);
      return -1;
    }
  ok = ok && h[H_NPARAM] == nparams(m) &&
       fread(m->param, sizeof(double), (size_t)nparams(m), f) == (size_t)nparams(m) &&
       fread(&stored, sizeof(stored), 1, f) == 1 && fgetc(f) == EOF;
  fclose(f);
  if (ok) {
    sum = fnv1a(0xcbf29ce484222325ULL, h, sizeof(h));
    ok = fnv1a(sum, m->param, (size_t)nparams(m) * sizeof(double)) == stored;
  }
  if (!ok) {
    snprintf(err, errsz,
             "%s is not a dp_train checkpoint, or is damaged; move it away to start over", path);
    return -1;
  }
  *epoch = (long)h[H_EPOCH];
  *world = (long)h[H_WORLD];
  return 1;
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

/* Rank 0 reads the checkpoint, if any, and every rank takes its model:
 * *first is the epoch to start from. 0, or WEFT_EIO on every rank when rank
 * 0 could not read it (said on stderr). */
static int resume(weft_group *g, const struct opts *o, const weft_restart *ri, struct model *m,
                  long *first)
{
  int rank = weft_group_rank(g), rc;
  int64_t got[3] = {0, 0, 0}; /* ckpt_load's answer, epoch, world size */
  char err[4352];

  *first = 0;
  if (rank == 0) {
    long epoch = 0, world = 0;
    if (mkdir(o->ckpt_dir, 0777) != 0 && errno != EEXIST)
      fprintf(stderr, "dp_train: cannot make the checkpoint directory %s: %s\n", o->ckpt_dir,
              strerror(errno));
    got[0] = ckpt_load(o, m, &epoch, &world, err, sizeof(err));
    got[1] = epoch;
    got[2] = world;
    if (got[0] < 0)
      fprintf(stderr, "dp_train: %s\n", err);
  }
  rc = weft_broadcast(g, got, 3, WEFT_INT64, 0, NULL);
  if (rc == 0 && got[0] < 0)
    rc = WEFT_EIO;
  if (rc == 0 && got[0] == 1)
    rc = weft_broadcast(g, m->param, (size_t)nparams(m), WEFT_FLOAT64, 0, NULL);
  if (rc && rc != WEFT_EIO)
    fprintf(stderr, "dp_train: rank %d: broadcast of the checkpoint failed: %s\n", rank,
            weft_strerror(rc));
  if (rc)
    return rc;
  if (got[0] == 1)
    *first = (long)got[1];
  if (rank != 0)
    return 0;
  if (got[0] == 1)
    printf("dp_train: resuming after epoch %ld from %s/%s (written on %ld rank%s, now %d; "
           "the same global batch %ld)\n",
           *first, o->ckpt_dir, CKPT_NAME, (long)got[2], got[2] == 1 ? "" : "s", weft_group_size(g),
           o->batch);
  else if (ri->restarted)
    printf("dp_train: restart %d found no checkpoint in %s: starting from epoch 1\n", ri->count,
           o->ckpt_dir);
  return 0;
}

/* The training loop on group g; rank 0 prints one line per epoch. */
static int train(weft_group *g, const struct opts *o, const weft_restart *ri)
{
  int rank = weft_group_rank(g), size = weft_group_size(g), rc;
  long steps = o->samples / o->batch, allreduces = 0, first = 0;
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
  /* A checkpoint that cannot be read was named by rank 0; every rank stops. */
  if (o->ckpt_dir && (rc = resume(g, o, ri, &m, &first)) != 0)
    goto out;

  for (long e = first; e < o->epochs; e++) {
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
    if (o->ckpt_dir) {
      /* Every rank learns whether the epoch is saved, so that all stop together if not. */
      int64_t saved = 0;
      char err[4352];
      if (rank == 0 && ckpt_save(o, &m, e + 1, size, err, sizeof(err)) != 0) {
        fprintf(stderr, "dp_train: %s\n", err);
        saved = WEFT_EIO;
      }
      CHECK(weft_broadcast(g, &saved, 1, WEFT_INT64, 0, NULL));
      if (saved) { /* named by rank 0 */
        rc = (int)saved;
        goto out;
      }
    }
    if (o->epoch_delay > 0) {
      struct timespec d = {o->epoch_delay / 1000, (o->epoch_delay % 1000) * 1000000L};
      while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    }
    if (e + 1 == o->stop_after && e + 1 < o->epochs) {
      if (rank == 0)
        printf("dp_train: stopping after epoch %ld (--stop-after)\n", e + 1);
      break;
    }
  }
  /* The model's bits, for comparing runs: the same on every number of ranks
   * up to rounding, and bit for bit where the shares are the same. */
  if (rank == 0)
    printf("dp_train: done in %.2f s, %ld gradient all-reduce%s of %ld parameters, model "
           "checksum %016llx\n",
           now() - t0, allreduces, allreduces == 1 ? "" : "s", nparams(&m),
           (unsigned long long)fnv1a(0xcbf29ce484222325ULL, m.param,
                                     (size_t)nparams(&m) * sizeof(double)));
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
  weft_restart ri;
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
  if (rc == 0 && weft_restart_info(ctx, &ri) != 0) {
    fprintf(stderr, "dp_train: %s\n", weft_last_error(ctx));
    rc = -1;
  }
  if (rc == 0 && !o.ckpt_dir)
    o.ckpt_dir = ri.checkpoint_dir;
  /* After a failed collective the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && train(weft_world(ctx), &o, &ri) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : 0;
}
