/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Element-wise reduction kernels, for the shared-memory collectives and for
 * the MPI operations on 16-bit floats (dtype.c): dst = a op b over n elements, for every weft type and operation, with the
 * semantics of the MPI path: integers wrap around (computed unsigned, so
 * that overflow is defined), fp16 and bf16 by weft's rule (half.h, dtype.c:
 * each pair in float, rounded once to nearest even, NaN on either side gives
 * the canonical NaN, -0 below +0), MIN and MAX of float32 and float64 as Open
 * MPI's.
 *
 * The loops are simple on purpose: they are memory-bound only once the
 * compiler vectorises them, which GCC 12 does not do at -O2 for loops that
 * need a run-time alias check (dst may be a or b) or a scalar tail; hence
 * the pragma, for this file only.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "shm.h"
#include "half.h"

#include <stdint.h>
#include <string.h>

/* Sum and product are computed in U: for integers the unsigned type of the
 * same width (wrapping is defined there), for floats the type itself. */
#define KERNELS(T, U)                                                                              \
  static void T##_sum(T *d, const T *a, const T *b, size_t n)                                      \
  {                                                                                                \
    for (size_t i = 0; i < n; i++)                                                                 \
      d[i] = (T)(U)((U)a[i] + (U)b[i]);                                                            \
  }                                                                                                \
  static void T##_prod(T *d, const T *a, const T *b, size_t n)                                     \
  {                                                                                                \
    for (size_t i = 0; i < n; i++)                                                                 \
      d[i] = (T)(U)((U)a[i] * (U)b[i]);                                                            \
  }                                                                                                \
  static void T##_min(T *d, const T *a, const T *b, size_t n)                                      \
  {                                                                                                \
    for (size_t i = 0; i < n; i++)                                                                 \
      d[i] = a[i] < b[i] ? a[i] : b[i];                                                            \
  }                                                                                                \
  static void T##_max(T *d, const T *a, const T *b, size_t n)                                      \
  {                                                                                                \
    for (size_t i = 0; i < n; i++)                                                                 \
      d[i] = a[i] > b[i] ? a[i] : b[i];                                                            \
  }

/* uint8 * uint8 would be computed in int; unsigned int keeps it unsigned. */
KERNELS(int8_t, uint8_t)
KERNELS(uint8_t, unsigned)
KERNELS(int32_t, uint32_t)
KERNELS(int64_t, uint64_t)
KERNELS(float, float)
KERNELS(double, double)

#define HALF_KERNEL(NAME, TO_F, FROM_F, QNAN, EXPR)                                                \
  static void NAME(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n)                    \
  {                                                                                                \
    for (size_t i = 0; i < n; i++) {                                                               \
      float x = TO_F(a[i]), y = TO_F(b[i]), r = (EXPR);                                            \
      d[i] = isnan(r) ? (uint16_t)(QNAN) : FROM_F(r);                                              \
    }                                                                                              \
  }

HALF_KERNEL(h_sum, weft__h2f, weft__f2h, WEFT__F16_NAN, x + y)
HALF_KERNEL(h_prod, weft__h2f, weft__f2h, WEFT__F16_NAN, x *y)
HALF_KERNEL(h_min, weft__h2f, weft__f2h, WEFT__F16_NAN, weft__min16(x, y))
HALF_KERNEL(h_max, weft__h2f, weft__f2h, WEFT__F16_NAN, weft__max16(x, y))
HALF_KERNEL(b_sum, weft__b2f, weft__f2b, WEFT__BF16_NAN, x + y)
HALF_KERNEL(b_prod, weft__b2f, weft__f2b, WEFT__BF16_NAN, x *y)
HALF_KERNEL(b_min, weft__b2f, weft__f2b, WEFT__BF16_NAN, weft__min16(x, y))
HALF_KERNEL(b_max, weft__b2f, weft__f2b, WEFT__BF16_NAN, weft__max16(x, y))

#define CASE(DT, PFX)                                                                              \
  case DT:                                                                                         \
    switch (op) {                                                                                  \
    case WEFT_SUM:                                                                                 \
    case WEFT_AVG: PFX##_sum(dst, a, b, n); return;                                                \
    case WEFT_PROD: PFX##_prod(dst, a, b, n); return;                                              \
    case WEFT_MIN: PFX##_min(dst, a, b, n); return;                                                \
    case WEFT_MAX: PFX##_max(dst, a, b, n); return;                                                \
    default: return;                                                                               \
    }

void weft__reduce(weft_dtype dt, weft_op op, void *dst, const void *a, const void *b, size_t n)
{
  switch (dt) {
    CASE(WEFT_INT8, int8_t)
    CASE(WEFT_UINT8, uint8_t)
    CASE(WEFT_INT32, int32_t)
    CASE(WEFT_INT64, int64_t)
    CASE(WEFT_FLOAT16, h)
    CASE(WEFT_BFLOAT16, b)
    CASE(WEFT_FLOAT32, float)
    CASE(WEFT_FLOAT64, double)
  default: return;
  }
}

/* Streaming copies: an output written with ordinary stores is first read
 * into the cache (the write allocates the line), which for a buffer larger
 * than the cache is one more pass over memory than the copy itself. */
#if defined(__SSE2__)
#include <emmintrin.h>

void weft__copy_stream(void *dst, const void *src, size_t n)
{
  char *d = dst;
  const char *s = src;
  size_t head = (64 - ((uintptr_t)d & 63)) & 63;

  if (n < 4 * 64) {
    memcpy(d, s, n);
    return;
  }
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i x0 = _mm_loadu_si128((const __m128i *)s);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, x0);
    _mm_stream_si128((__m128i *)(d + 16), x1);
    _mm_stream_si128((__m128i *)(d + 32), x2);
    _mm_stream_si128((__m128i *)(d + 48), x3);
  }
  memcpy(d, s, n);
}

void weft__stream_fence(void) { _mm_sfence(); }
#else
void weft__copy_stream(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

void weft__stream_fence(void) {}
#endif
