/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The small dense algebra the model examples share (row-major float
 * matrices, plain loops in a fixed order) and their deterministic data.
 */
#ifndef WEFT_EXAMPLE_EXMATH_H
#define WEFT_EXAMPLE_EXMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Entry i of stream s, in [-1, 1): the same on every rank (tp_matmul's
 * double-precision data). */
static inline double ex_entry_d(uint64_t s, uint64_t i)
{
  uint64_t x = (s << 40) + i + 0x9e3779b97f4a7c15ULL;

  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return (double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* The same entry as a float (the model examples' data). */
static inline float ex_entry(uint64_t s, uint64_t i) { return (float)ex_entry_d(s, i); }

/* n entries of stream s, scaled. */
static inline void ex_fill(float *p, size_t n, uint64_t s, float scale)
{
  for (size_t i = 0; i < n; i++)
    p[i] = ex_entry(s, i) * scale;
}

/* c (m x n) = a (m x k) b (k x n). */
static inline void ex_mm(const float *a, const float *b, float *c, long m, long k, long n)
{
  for (long i = 0; i < m; i++)
    for (long j = 0; j < n; j++) {
      float s = 0;
      for (long p = 0; p < k; p++)
        s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}

/* c (k x n) += a^T b, a (m x k), b (m x n): a weight's gradient. */
static inline void ex_mm_tn_acc(const float *a, const float *b, float *c, long m, long k, long n)
{
  for (long p = 0; p < k; p++)
    for (long j = 0; j < n; j++) {
      float s = 0;
      for (long i = 0; i < m; i++)
        s += a[i * k + p] * b[i * n + j];
      c[p * n + j] += s;
    }
}

/* c (m x k) = a b^T, a (m x n), b (k x n): a gradient back through a weight. */
static inline void ex_mm_nt(const float *a, const float *b, float *c, long m, long n, long k)
{
  for (long i = 0; i < m; i++)
    for (long p = 0; p < k; p++) {
      float s = 0;
      for (long j = 0; j < n; j++)
        s += a[i * n + j] * b[p * n + j];
      c[i * k + p] = s;
    }
}

/* The largest |a - b| over n entries, relative to the largest |b| (at
 * least 1e-3, so that a tensor of zeros compares absolutely). */
static inline double ex_error(const float *a, const float *b, long n)
{
  double e = 0, scale = 1e-3;

  for (long i = 0; i < n; i++)
    scale = fmax(scale, fabs((double)b[i]));
  for (long i = 0; i < n; i++)
    e = fmax(e, fabs((double)a[i] - (double)b[i]));
  return e / scale;
}

#endif /* WEFT_EXAMPLE_EXMATH_H */
