/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic of weft-bench scale (src/weft-bench/scale-fit.c) on exact
 * synthetic data: the alpha-beta fit recovers alpha and beta, the ring-model
 * prediction follows from them, the median is the median.
 */
#include <stdio.h>

/* The file under test is compiled into this program, so that no object of
 * weft-bench's directory is shared with this one's. */
#include "../../src/weft-bench/scale-fit.c"

static int failures;

#define EXPECT_NEAR(got, want, tol)                                                  \
  do {                                                                               \
    double g_ = (got), w_ = (want);                                                  \
    if (!(fabs(g_ - w_) <= (tol) * fmax(1.0, fabs(w_)))) {                           \
      printf("FAIL %s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__, #got, g_, w_); \
      failures++;                                                                    \
    }                                                                                \
  } while (0)

static double ring(int n)
{
  return 2.0 * (n - 1) / n;
}

/* A job whose times are exactly alpha + bytes * beta. */
static void make_job(struct scale_job *j, int ranks, double alpha, double beta)
{
  static const size_t sizes[] = { 1 << 10, 1 << 16, 1 << 20, 1 << 24 };

  j->nodes = j->ranks = ranks;
  j->status = 0;
  j->npts = 4;
  for (int i = 0; i < 4; i++) {
    j->pts[i].bytes = sizes[i];
    j->pts[i].time_us = alpha + (double)sizes[i] * beta;
    j->pts[i].wrong = 0;
  }
}

int main(void)
{
  struct scale_job jobs[3];
  double v[] = { 5, 1, 4, 2, 3 }, w[] = { 4, 1, 3, 2 };
  /* busbw 10 GB/s = 1e4 bytes/us at every size; algbw = busbw / factor. */
  double busbw = 1e4;

  for (int i = 0; i < 3; i++) {
    int n = 2 << i;                                   /* 2, 4, 8 ranks */
    make_job(&jobs[i], n, 10.0 * (n - 1), ring(n) / busbw);
    scale_fit(&jobs[i]);
    EXPECT_NEAR(jobs[i].alpha_us, 10.0 * (n - 1), 1e-6);
    EXPECT_NEAR(jobs[i].beta_us_per_byte, ring(n) / busbw, 1e-9);
  }
  /* 16 ranks: alpha = 10 x 15 us, busbw stays 1e4 bytes/us. */
  EXPECT_NEAR(scale_predict(jobs, 3, 16, ring, 1 << 24), 150 + (double)(1 << 24) * ring(16) / busbw,
              1e-6);
  /* A failed run is left out; one run alone predicts alpha proportional to n - 1. */
  jobs[1].status = 1;
  jobs[2].status = 1;
  EXPECT_NEAR(scale_predict(jobs, 3, 5, ring, 0), 40, 1e-9);
  /* Too few points: no fit. */
  jobs[0].npts = 1;
  scale_fit(&jobs[0]);
  if (!isnan(jobs[0].alpha_us)) {
    printf("FAIL: a fit from one point\n");
    failures++;
  }
  EXPECT_NEAR(scale_median(v, 5), 3, 0);
  EXPECT_NEAR(scale_median(w, 4), 2.5, 0);
  if (failures)
    return 1;
  printf("PASS: scale fit, prediction, median\n");
  return 0;
}
