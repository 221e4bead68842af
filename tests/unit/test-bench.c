/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of weft-bench's pure parts: the analysis of weft-bench scale
 * (src/weft-bench/scale-analysis.c: median and spread of the repeats,
 * alpha-beta fit and whether it is a model, prediction, efficiency, links or
 * hosts that stand out either way, which runs a machine family's range may
 * judge, exit status) on exact synthetic data; and the raw-MPI
 * baseline's float16/bfloat16 reductions (src/weft-bench/half.c) against
 * libweft's (lib/rt/dtype.c), bit for bit, for every operation, on NaNs,
 * infinities, signed zeros, subnormals and rounding ties, and against the
 * documented rule itself so that both cannot drift together.
 */
#include "rt_private.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scale.h"

/* ---- scale analysis -------------------------------------------------- */

static double ring(int n) { return 2.0 * (n - 1) / n; }

/* A job whose times are exactly alpha + bytes * beta. */
static void make_job(struct scale_job *j, int nodes, int ranks, double alpha, double beta)
{
  static const size_t sizes[] = {1 << 10, 1 << 16, 1 << 20, 1 << 24};

  memset(j, 0, sizeof(*j));
  j->nodes = nodes;
  j->ranks = ranks;
  j->npts = 4;
  for (int i = 0; i < 4; i++) {
    j->pts[i].bytes = sizes[i];
    j->pts[i].times[0] = alpha + (double)sizes[i] * beta;
    j->pts[i].nrep = 1;
  }
}

#define assert_near(got, want, tol)                                                                \
  do {                                                                                             \
    double g_ = (got), w_ = (want);                                                                \
    if (!(fabs(g_ - w_) <= (tol)*fmax(1.0, fabs(w_))))                                             \
      fail_msg("%s = %.9g, expected %.9g", #got, g_, w_);                                          \
  } while (0)

/* busbw 10 GB/s = 1e4 bytes/us at every size on 2, 4 and 8 ranks, with
 * alpha = 10 us per ring step. */
static void three_jobs(struct scale_job *jobs)
{
  for (int i = 0; i < 3; i++) {
    int n = 2 << i;

    make_job(&jobs[i], n, n, 10.0 * (n - 1), ring(n) / 1e4);
    scale_job_finish(&jobs[i], ring);
  }
}

static void test_fit(void **state)
{
  struct scale_job jobs[3];

  (void)state;
  three_jobs(jobs);
  for (int i = 0; i < 3; i++) {
    int n = 2 << i;

    assert_near(jobs[i].alpha_us, 10.0 * (n - 1), 1e-6);
    assert_near(jobs[i].beta_us_per_byte, ring(n) / 1e4, 1e-9);
    /* scale_job_finish recomputed the bandwidths from the times. */
    assert_near(jobs[i].pts[3].algbw, (double)(1 << 24) / jobs[i].pts[3].time_us / 1e3, 1e-12);
    assert_near(jobs[i].pts[3].busbw, jobs[i].pts[3].algbw * ring(n), 1e-12);
  }
  /* One point: no fit. */
  jobs[0].npts = 1;
  scale_fit(&jobs[0]);
  assert_true(isnan(jobs[0].alpha_us) && isnan(jobs[0].beta_us_per_byte));
  /* Times that fall with size fit a beta <= 0, which the output calls noise. */
  make_job(&jobs[1], 2, 2, 50, -1e-6);
  scale_fit(&jobs[1]);
  assert_false(jobs[1].beta_us_per_byte > 0);
  assert_false(scale_fit_valid(&jobs[1]));
  /* A negative latency is no model either, and predicts nothing. */
  make_job(&jobs[2], 1, 2, -5, 1e-4);
  scale_job_finish(&jobs[2], ring);
  assert_true(jobs[2].alpha_us < 0 && jobs[2].beta_us_per_byte > 0);
  assert_false(scale_fit_valid(&jobs[2]));
  assert_true(isnan(scale_predict(&jobs[2], 1, 4, ring, 1 << 20)));
  three_jobs(jobs);
  assert_true(scale_fit_valid(&jobs[0]));
  jobs[0].status = 5;
  assert_false(scale_fit_valid(&jobs[0]));
}

/* The repeats: the median time, busbw at the slowest and the fastest, the spread. */
static void test_repeats(void **state)
{
  struct scale_job j;
  struct scale_point *p = &j.pts[0];

  (void)state;
  memset(&j, 0, sizeof(j));
  j.nodes = 2;
  j.ranks = 2;
  j.npts = 1;
  p->bytes = 1000000;
  p->times[0] = 200; /* busbw 1e6 / 200 / 1e3 x ring(2) = 5 GB/s */
  p->times[1] = 100; /* 10 */
  p->times[2] = 400; /* 2.5 */
  p->nrep = 3;
  scale_job_finish(&j, ring);
  assert_near(p->time_us, 200, 0);
  assert_near(p->busbw, 5, 1e-12);
  assert_near(p->busbw_lo, 2.5, 1e-12);
  assert_near(p->busbw_hi, 10, 1e-12);
  assert_near(scale_spread(p), 1.5, 1e-12);
  /* The times stay as measured, in their order. */
  assert_near(p->times[1], 100, 0);
  p->nrep = 1;
  scale_job_finish(&j, ring);
  assert_near(p->busbw, 5, 1e-12);
  assert_true(isnan(scale_spread(p)));
}

static void test_predict(void **state)
{
  struct scale_job jobs[3];
  struct scale_prediction pred[SCALE_PREDICT_N * 2];
  size_t sizes[2] = {1 << 20, 1 << 24};
  int n;

  (void)state;
  three_jobs(jobs);
  /* 16 ranks: alpha = 10 x 15 us, busbw stays 1e4 bytes/us. */
  assert_near(scale_predict(jobs, 3, 16, ring, 1 << 24), 150 + (double)(1 << 24) * ring(16) / 1e4,
              1e-6);
  /* 2, 4 and 8 times 8 nodes of 2 ranks, by node count then size. */
  n = scale_predictions(jobs, 3, 8, 2, ring, sizes, 2, pred);
  assert_int_equal(n, 6);
  assert_int_equal(pred[0].nodes, 16);
  assert_int_equal(pred[0].ranks, 32);
  assert_int_equal(pred[1].bytes, 1 << 24);
  assert_int_equal(pred[5].nodes, 64);
  /* 128 ranks: alpha = 10 x 127 us; busbw approaches 10 GB/s from below. */
  assert_near(pred[5].time_us, 1270 + (double)(1 << 24) * ring(128) / 1e4, 1e-9);
  assert_near(pred[5].busbw, (double)(1 << 24) / pred[5].time_us / 1e3 * ring(128), 1e-12);
  assert_near(pred[5].algbw * ring(128), pred[5].busbw, 1e-12);
  /* A failed run is left out; one run alone predicts alpha proportional to n - 1. */
  jobs[1].status = 1;
  jobs[2].status = 1;
  assert_near(scale_predict(jobs, 3, 5, ring, 0), 40, 1e-9);
  /* No run with 2 ranks or more: nothing to predict. */
  jobs[0].status = 124;
  assert_true(isnan(scale_predict(jobs, 3, 5, ring, 0)));
  assert_int_equal(scale_predictions(jobs, 3, 8, 2, ring, sizes, 2, pred), 0);
}

static void test_median(void **state)
{
  double v[] = {5, 1, 4, 2, 3}, w[] = {4, 1, 3, 2}, one[] = {7};

  (void)state;
  assert_near(scale_median(v, 5), 3, 0);
  assert_near(scale_median(w, 4), 2.5, 0);
  assert_near(scale_median(one, 1), 7, 0);
}

/* A job with one point of the given busbw at 1 MiB. */
static void bw_job(struct scale_job *j, int nodes, int ranks, double busbw, int status)
{
  memset(j, 0, sizeof(*j));
  j->nodes = nodes;
  j->ranks = ranks;
  j->status = status;
  j->npts = 1;
  j->pts[0].bytes = 1 << 20;
  j->pts[0].time_us = 100;
  j->pts[0].busbw = busbw;
}

static void test_efficiency(void **state)
{
  struct scale_job jobs[4];

  (void)state;
  bw_job(&jobs[0], 1, 4, 80, 0); /* intra-node: no reference, no efficiency */
  bw_job(&jobs[1], 2, 8, 20, 0); /* the reference */
  bw_job(&jobs[2], 4, 16, 15, 0);
  bw_job(&jobs[3], 8, 32, 10, 1); /* failed */
  assert_true(isnan(scale_efficiency(jobs, 4, &jobs[0], 1 << 20)));
  assert_near(scale_efficiency(jobs, 4, &jobs[1], 1 << 20), 1, 0);
  assert_near(scale_efficiency(jobs, 4, &jobs[2], 1 << 20), 0.75, 1e-12);
  assert_true(isnan(scale_efficiency(jobs, 4, &jobs[3], 1 << 20)));
  assert_true(isnan(scale_efficiency(jobs, 4, &jobs[2], 1 << 10))); /* no such size */
  assert_near(scale_busbw_at(&jobs[3], 1 << 20), -1, 0);
  /* The reference run failed: the next multi-node one takes its place. */
  jobs[1].status = 5;
  assert_near(scale_efficiency(jobs, 4, &jobs[2], 1 << 20), 1, 0);
  /* No multi-node run: the first with more than one rank. */
  jobs[2].status = 5;
  assert_near(scale_efficiency(jobs, 1, &jobs[0], 1 << 20), 1, 0);
  /* One rank: busbw 0 says nothing. */
  bw_job(&jobs[0], 1, 1, 0, 0);
  assert_true(isnan(scale_efficiency(jobs, 1, &jobs[0], 1 << 20)));
}

/* A ring of pairs h0-h1, h1-h2, ..., with the given busbw (< 0: failed). */
static void ring_of_pairs(struct scale_job *pairs, const double *bw, int n)
{
  static const char *const hosts[] = {"h0", "h1", "h2", "h3", "h4", "h5"};

  for (int i = 0; i < n; i++) {
    bw_job(&pairs[i], 2, 2, bw[i] < 0 ? 0 : bw[i], bw[i] < 0);
    pairs[i].host_a = hosts[i];
    pairs[i].host_b = hosts[(i + 1) % n];
  }
}

static void test_links(void **state)
{
  struct scale_job pairs[6];
  struct scale_links v;
  const double even[] = {10, 10.5, 9.5, 10, 9}, link[] = {10, 10, 5, 10, 10},
               host_b[] = {10, 4, 5, 10, 10}, host_a[] = {5, 10, 10, 10, 4},
               two[] = {10, -1, -1, 2}, fast[] = {10, 36, 10, 10},
               fast_host[] = {10, 10, 30, 30, 10}, both[] = {10, 3, 10, 10, 20, 10};

  (void)state;
  ring_of_pairs(pairs, even, 5);
  scale_judge_links(pairs, 5, 1 << 20, &v);
  assert_int_equal(v.measured, 5);
  assert_int_equal(v.nout, 0);
  assert_near(v.median, 10, 0);

  ring_of_pairs(pairs, link, 5);
  scale_judge_links(pairs, 5, 1 << 20, &v);
  assert_int_equal(v.nout, 1);
  assert_int_equal(v.out[0].link, 2);
  assert_null(v.out[0].host);
  assert_false(v.out[0].faster);
  assert_near(v.out[0].busbw, 5, 0);
  assert_near(v.out[0].ratio, 0.5, 1e-12);

  /* Links h1-h2 (4) and h2-h3 (5): host h2, as far off as its better link. */
  ring_of_pairs(pairs, host_b, 5);
  scale_judge_links(pairs, 5, 1 << 20, &v);
  assert_int_equal(v.nout, 1);
  assert_string_equal(v.out[0].host, "h2");
  assert_near(v.out[0].busbw, 5, 0);

  /* Links h4-h0 (4) and h0-h1 (5): host h0, across the end of the ring. */
  ring_of_pairs(pairs, host_a, 5);
  scale_judge_links(pairs, 5, 1 << 20, &v);
  assert_int_equal(v.nout, 1);
  assert_string_equal(v.out[0].host, "h0");

  /* A link 3.6 x faster than the median stands out too, the other way. */
  ring_of_pairs(pairs, fast, 4);
  scale_judge_links(pairs, 4, 1 << 20, &v);
  assert_near(v.median, 10, 0);
  assert_int_equal(v.nout, 1);
  assert_int_equal(v.out[0].link, 1);
  assert_true(v.out[0].faster);
  assert_near(v.out[0].ratio, 3.6, 1e-12);

  /* Links h2-h3 and h3-h4 both fast: host h3. */
  ring_of_pairs(pairs, fast_host, 5);
  scale_judge_links(pairs, 5, 1 << 20, &v);
  assert_int_equal(v.nout, 1);
  assert_string_equal(v.out[0].host, "h3");
  assert_true(v.out[0].faster);

  /* One slower and one faster: both, the farther from the median first. */
  ring_of_pairs(pairs, both, 6);
  scale_judge_links(pairs, 6, 1 << 20, &v);
  assert_int_equal(v.nout, 2);
  assert_int_equal(v.out[0].link, 1);
  assert_false(v.out[0].faster);
  assert_int_equal(v.out[1].link, 4);
  assert_true(v.out[1].faster);

  /* Failed links are not measured; two are too few to compare. */
  ring_of_pairs(pairs, two, 4);
  scale_judge_links(pairs, 4, 1 << 20, &v);
  assert_int_equal(v.measured, 2);
  assert_int_equal(v.nout, 0);
}

/* Only multi-node runs on GPU memory are held against a family's range. */
static void test_comparable(void **state)
{
  struct scale_job j;
  char why[256];

  (void)state;
  bw_job(&j, 1, 8, 300, 0);
  j.device = 1;
  assert_false(scale_comparable(&j, why, sizeof(why)));
  assert_non_null(strstr(why, "1 node"));
  bw_job(&j, 2, 16, 150, 0);
  assert_false(scale_comparable(&j, why, sizeof(why)));
  assert_non_null(strstr(why, "host memory"));
  j.device = 1;
  assert_true(scale_comparable(&j, why, sizeof(why)));
}

/* A3 Mega's range 150-189 GB/s; A4's has no upper bound; A2 has none. */
static void test_health(void **state)
{
  struct bench_expect e;

  (void)state;
  memset(&e, 0, sizeof(e));
  e.healthy_lo = 150;
  e.healthy_hi = 189;
  assert_int_equal(scale_health(&e, 149.9), SCALE_HEALTH_BELOW);
  assert_int_equal(scale_health(&e, 150), SCALE_HEALTH_INSIDE);
  assert_int_equal(scale_health(&e, 189), SCALE_HEALTH_INSIDE);
  assert_int_equal(scale_health(&e, 200), SCALE_HEALTH_ABOVE);
  e.healthy_lo = 250;
  e.healthy_hi = 0;
  assert_int_equal(scale_health(&e, 1000), SCALE_HEALTH_INSIDE);
  assert_int_equal(scale_health(&e, 249), SCALE_HEALTH_BELOW);
  e.healthy_lo = 0;
  assert_int_equal(scale_health(&e, 10), SCALE_HEALTH_UNKNOWN);
}

static void test_status(void **state)
{
  struct scale_job jobs[2], pairs[1];

  (void)state;
  bw_job(&jobs[0], 1, 2, 10, 0);
  bw_job(&jobs[1], 2, 4, 10, 0);
  bw_job(&pairs[0], 2, 2, 10, 0);
  assert_int_equal(scale_status(jobs, 2, pairs, 1), BENCH_EXIT_OK);
  pairs[0].status = 124;
  assert_int_equal(scale_status(jobs, 2, pairs, 1), BENCH_EXIT_RUNTIME);
  jobs[1].pts[0].wrong = 3; /* wrong data outranks a failed run */
  assert_int_equal(scale_status(jobs, 2, pairs, 1), BENCH_EXIT_WRONG);
  jobs[1].pts[0].wrong = -1; /* not checked */
  pairs[0].status = 0;
  assert_int_equal(scale_status(jobs, 2, pairs, 1), BENCH_EXIT_OK);
}

/* ---- 16-bit float reductions: weft-bench's baseline against libweft ---- */

/* Interesting bits for both types: zeros, subnormals, the extremes, values
 * whose sums and products round on a tie, infinities and NaNs of both signs
 * with payloads. */
static const uint16_t specials16[] = {
  0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x0003, 0x03ff, 0x83ff, 0x0400, 0x0401, 0x3800, 0x3c00,
  0xbc00, 0x3c01, 0x3c02, 0x3e00, 0x3e01, 0x1000, 0x1400, 0x4000, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
  0x7e00, 0xfe00, 0x7c01, 0x7d55, 0xffff, 0x5140, 0x3f00, 0x3f80, 0xbf80, 0x3f81, 0x0080, 0x007f,
  0x8080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x3b80, 0x4b80, 0x2000, 0x0040,
};
#define NSPECIALS (sizeof(specials16) / sizeof(specials16[0]))

static const weft_op ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};

/* Apply one MPI user function to n pairs: out[i] = x[i] op y[i]. */
static void reduce(MPI_User_function *fn, const uint16_t *x, const uint16_t *y, uint16_t *out,
                   int n)
{
  MPI_Datatype type = MPI_UINT16_T;

  memcpy(out, y, (size_t)n * sizeof(*out));
  fn((void *)x, out, &n, &type);
}

/* Both implementations on the same pairs, then AVG's division by several
 * rank counts; the first difference fails the test with its operands. */
static void compare(weft_dtype dt, weft_op op, const uint16_t *x, const uint16_t *y, int n)
{
  static const int nranks[] = {1, 2, 3, 4, 7, 8};
  MPI_User_function *lib = weft__op16_fn(dt, op), *bench = bench_half_fn(dt, op);
  uint16_t *a = calloc((size_t)n, sizeof(*a)), *b = calloc((size_t)n, sizeof(*b));

  assert_non_null(lib);
  assert_non_null(bench);
  assert_non_null(a);
  assert_non_null(b);
  reduce(lib, x, y, a, n);
  reduce(bench, x, y, b, n);
  for (int i = 0; i < n; i++)
    if (a[i] != b[i])
      fail_msg("%s %s of 0x%04x and 0x%04x: libweft 0x%04x, weft-bench 0x%04x", weft_dtype_name(dt),
               weft_op_name(op), x[i], y[i], a[i], b[i]);
  for (size_t k = 0; op == WEFT_AVG && k < sizeof(nranks) / sizeof(nranks[0]); k++) {
    uint16_t *sum = calloc((size_t)n, sizeof(*sum));

    assert_non_null(sum);
    memcpy(sum, a, (size_t)n * sizeof(*a));
    weft__divide(a, (size_t)n, dt, nranks[k]);
    bench_half_divide(b, (size_t)n, dt, nranks[k]);
    for (int i = 0; i < n; i++)
      if (a[i] != b[i])
        fail_msg("%s avg of 0x%04x over %d ranks: libweft 0x%04x, weft-bench 0x%04x",
                 weft_dtype_name(dt), sum[i], nranks[k], a[i], b[i]);
    memcpy(a, sum, (size_t)n * sizeof(*a));
    memcpy(b, sum, (size_t)n * sizeof(*b));
    free(sum);
  }
  free(a);
  free(b);
}

/* Every value of the type against every special, both ways round, and a
 * quarter of a million random pairs (fixed seed). */
static void compare_all(weft_dtype dt)
{
  int n = 65536 * (int)NSPECIALS;
  uint16_t *x = malloc((size_t)n * sizeof(*x)), *y = malloc((size_t)n * sizeof(*y));
  uint32_t seed = 0x2545f491u;

  assert_non_null(x);
  assert_non_null(y);
  for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
    int k = 0;

    for (uint32_t v = 0; v < 65536; v++)
      for (size_t s = 0; s < NSPECIALS; s++, k++) {
        x[k] = (uint16_t)v;
        y[k] = specials16[s];
      }
    compare(dt, ops[o], x, y, n);
    compare(dt, ops[o], y, x, n);
    for (int r = 0; r < 1 << 18 && r < n; r++) {
      seed ^= seed << 13;
      seed ^= seed >> 17;
      seed ^= seed << 5;
      x[r] = (uint16_t)seed;
      y[r] = (uint16_t)(seed >> 16);
    }
    compare(dt, ops[o], x, y, 1 << 18);
  }
  free(x);
  free(y);
}

static void test_half_same_as_libweft(void **state)
{
  (void)state;
  compare_all(WEFT_FLOAT16);
}

static void test_bf16_same_as_libweft(void **state)
{
  (void)state;
  compare_all(WEFT_BFLOAT16);
}

/* x op y by the baseline, for one pair. */
static uint16_t one(weft_dtype dt, weft_op op, uint16_t x, uint16_t y)
{
  uint16_t out;

  reduce(bench_half_fn(dt, op), &x, &y, &out, 1);
  return out;
}

/* The rule itself (libweft(3)), so that the two cannot drift together. */
static void test_nan_rule(void **state)
{
  (void)state;
  for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
    /* A NaN, whatever its sign and payload, gives the canonical NaN. */
    assert_int_equal(one(WEFT_FLOAT16, ops[o], 0xfd55, 0x3c00), 0x7e00);
    assert_int_equal(one(WEFT_FLOAT16, ops[o], 0x3c00, 0x7c01), 0x7e00);
    assert_int_equal(one(WEFT_BFLOAT16, ops[o], 0xff81, 0x3f80), 0x7fc0);
    assert_int_equal(one(WEFT_BFLOAT16, ops[o], 0x3f80, 0x7fc1), 0x7fc0);
  }
  /* Infinities: kept, and NaN where IEEE arithmetic makes one. */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_SUM, 0x7c00, 0xfc00), 0x7e00);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_PROD, 0x7c00, 0x0000), 0x7e00);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MIN, 0x7c00, 0xfc00), 0xfc00);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MAX, 0x7c00, 0xfc00), 0x7c00);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_SUM, 0x7bff, 0x7bff), 0x7c00); /* overflow */
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_SUM, 0x7f80, 0xff80), 0x7fc0);
  /* Signed zeros: min takes -0, max +0, in either order. */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MIN, 0x0000, 0x8000), 0x8000);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MIN, 0x8000, 0x0000), 0x8000);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MAX, 0x0000, 0x8000), 0x0000);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MAX, 0x8000, 0x0000), 0x0000);
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_MIN, 0x0000, 0x8000), 0x8000);
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_MAX, 0x8000, 0x0000), 0x0000);
  /* Ties round to even: 1 + 2^-11 to 1, 1 + 3 x 2^-11 to 1 + 2^-9,
   * 1.5 x (1 + 2^-10) = 1.5 + 1.5 ulp to 1.5 + 2 ulp. */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_SUM, 0x3c00, 0x1000), 0x3c00);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_SUM, 0x3c01, 0x1000), 0x3c02);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_PROD, 0x3e00, 0x3c01), 0x3e02);
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_SUM, 0x3f80, 0x3b80), 0x3f80); /* 1 + 2^-8 */
  /* Subnormals: exact sums, and products that round on a tie. */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_SUM, 0x0001, 0x0001), 0x0002);
  assert_int_equal(one(WEFT_FLOAT16, WEFT_PROD, 0x0001, 0x3800), 0x0000); /* 2^-25: to 0 */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_PROD, 0x0003, 0x3800), 0x0002); /* 1.5 x 2^-24 */
  assert_int_equal(one(WEFT_FLOAT16, WEFT_MIN, 0x8001, 0x0001), 0x8001);
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_PROD, 0x0001, 0x3f00), 0x0000);
  assert_int_equal(one(WEFT_BFLOAT16, WEFT_SUM, 0x0001, 0x0001), 0x0002);
  /* Other types have no user function. */
  assert_null(bench_half_fn(WEFT_FLOAT32, WEFT_SUM));
  assert_null(weft__op16_fn(WEFT_FLOAT32, WEFT_SUM));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fit),
    cmocka_unit_test(test_predict),
    cmocka_unit_test(test_median),
    cmocka_unit_test(test_efficiency),
    cmocka_unit_test(test_repeats),
    cmocka_unit_test(test_links),
    cmocka_unit_test(test_comparable),
    cmocka_unit_test(test_health),
    cmocka_unit_test(test_status),
    cmocka_unit_test(test_nan_rule),
    cmocka_unit_test(test_half_same_as_libweft),
    cmocka_unit_test(test_bf16_same_as_libweft),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
