/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the shared-memory collectives' reduction kernels (reduce.c):
 * every type and operation against a scalar reference written from the
 * documented rules (integers wrap around, fp16/bf16 computed in float and
 * rounded once per pair, MIN/MAX of float32/float64 as Open MPI's, of 16-bit
 * floats NaN when either side is), on lengths that leave a vector tail, with
 * extreme values, NaN, infinities and signed zeros, and with the output being
 * either input (the in-place calls).
 */
#include "shm.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define N 1003

/* Deterministic pseudo-random bytes. */
static uint64_t next(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Inputs with the type's edge values among random ones. */
static void fill(void *buf, weft_dtype dt, uint64_t seed)
{
  static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 65504.0f,
                                   -65520.0f, 3.0e38f, 1.0f, -1.0f};
  size_t es = weft_dtype_size(dt), i;
  uint64_t s = seed;

  for (i = 0; i < N; i++) {
    uint64_t r = next(&s);
    float f = (float)((int64_t)(r % 20001) - 10000) / 64.0f;
    if (i % 17 == 3)
      f = specials[(i / 17) % (sizeof(specials) / sizeof(specials[0]))];
    switch (dt) {
    case WEFT_FLOAT16: ((uint16_t *)buf)[i] = i % 5 ? weft_float_to_half(f) : (uint16_t)r; break;
    case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = i % 5 ? weft_float_to_bf16(f) : (uint16_t)r; break;
    case WEFT_FLOAT32: ((float *)buf)[i] = f; break;
    case WEFT_FLOAT64: ((double *)buf)[i] = (double)f * (i % 7 ? 1 : 1e300); break;
    default: memcpy((char *)buf + i * es, &r, es); break; /* integers: any bits */
    }
  }
}

static float ref16(float x, float y, weft_op op)
{
  switch (op) {
  case WEFT_PROD: return x * y;
  case WEFT_MIN: return isnan(x) || isnan(y) ? x + y : (x < y ? x : y);
  case WEFT_MAX: return isnan(x) || isnan(y) ? x + y : (x > y ? x : y);
  default: return x + y;
  }
}

#define REF(T, U)                                                                              \
  do {                                                                                       \
    T x = ((const T *)a)[i], y = ((const T *)b)[i];                                          \
    ((T *)d)[i] = op == WEFT_PROD  ? (T)(U)((U)x * (U)y)                                     \
                  : op == WEFT_MIN ? (x < y ? x : y)                                         \
                  : op == WEFT_MAX ? (x > y ? x : y)                                         \
                                   : (T)(U)((U)x + (U)y);                                    \
  } while (0)

#define REFF(T)                                                                                \
  do {                                                                                       \
    T x = ((const T *)a)[i], y = ((const T *)b)[i];                                          \
    ((T *)d)[i] = op == WEFT_PROD  ? x * y                                                   \
                  : op == WEFT_MIN ? (x < y ? x : y)                                         \
                  : op == WEFT_MAX ? (x > y ? x : y)                                         \
                                   : x + y;                                                  \
  } while (0)

static void reference(weft_dtype dt, weft_op op, void *d, const void *a, const void *b)
{
  size_t i;

  for (i = 0; i < N; i++)
    switch (dt) {
    case WEFT_INT8: REF(int8_t, uint8_t); break;
    case WEFT_UINT8: REF(uint8_t, unsigned); break;
    case WEFT_INT32: REF(int32_t, uint32_t); break;
    case WEFT_INT64: REF(int64_t, uint64_t); break;
    case WEFT_FLOAT32: REFF(float); break;
    case WEFT_FLOAT64: REFF(double); break;
    case WEFT_FLOAT16:
      ((uint16_t *)d)[i] = weft_float_to_half(ref16(weft_half_to_float(((const uint16_t *)a)[i]),
                                                    weft_half_to_float(((const uint16_t *)b)[i]),
                                                    op));
      break;
    case WEFT_BFLOAT16:
      ((uint16_t *)d)[i] = weft_float_to_bf16(ref16(weft_bf16_to_float(((const uint16_t *)a)[i]),
                                                    weft_bf16_to_float(((const uint16_t *)b)[i]),
                                                    op));
      break;
    default: break;
    }
}

static void test_kernels(void **state)
{
  size_t es, n;
  int dt, op;
  (void)state;

  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
    for (op = 0; op < WEFT_OP_COUNT; op++) {
      char a[N * 8], b[N * 8], d[N * 8], want[N * 8], x[N * 8];
      es = weft_dtype_size((weft_dtype)dt);
      fill(a, (weft_dtype)dt, 0x9e3779b97f4a7c15ull + (uint64_t)dt);
      fill(b, (weft_dtype)dt, 0xbf58476d1ce4e5b9ull + (uint64_t)op);
      reference((weft_dtype)dt, (weft_op)op, want, a, b);
      /* Every length up to 40 (vector tails), then all of it. */
      for (n = 0; n <= N; n = n < 40 ? n + 1 : N) {
        memset(d, 0x5a, sizeof(d));
        weft__reduce((weft_dtype)dt, (weft_op)op, d, a, b, n);
        if (memcmp(d, want, n * es) != 0)
          fail_msg("%s %s n=%zu: differs from the reference", weft_dtype_name(dt),
                   weft_op_name(op), n);
        if (n == N)
          break;
      }
      memcpy(x, a, sizeof(x)); /* out = a */
      weft__reduce((weft_dtype)dt, (weft_op)op, x, x, b, N);
      if (memcmp(x, want, N * es) != 0)
        fail_msg("%s %s: in place on the first input differs", weft_dtype_name(dt),
                 weft_op_name(op));
      memcpy(x, b, sizeof(x)); /* out = b */
      weft__reduce((weft_dtype)dt, (weft_op)op, x, a, x, N);
      if (memcmp(x, want, N * es) != 0)
        fail_msg("%s %s: in place on the second input differs", weft_dtype_name(dt),
                 weft_op_name(op));
    }
}

/* The rules themselves, on values worked out by hand. */
static void test_rules(void **state)
{
  int8_t i8a = 100, i8b = 100, i8d;
  int32_t i32a = INT32_MAX, i32b = 2, i32d;
  uint8_t u8a = 200, u8b = 200, u8d;
  float fa = NAN, fb = 1.0f, fd;
  uint16_t ha = weft_float_to_bf16(1.0f), hb = weft_float_to_bf16(0x1p-8f), hd;
  (void)state;

  weft__reduce(WEFT_INT8, WEFT_SUM, &i8d, &i8a, &i8b, 1);
  assert_int_equal(i8d, -56); /* wraps; Open MPI 4.1's AVX sum would give 127 */
  weft__reduce(WEFT_INT32, WEFT_SUM, &i32d, &i32a, &i32b, 1);
  assert_int_equal(i32d, INT32_MIN + 1);
  weft__reduce(WEFT_UINT8, WEFT_PROD, &u8d, &u8a, &u8b, 1);
  assert_int_equal(u8d, (200 * 200) % 256);
  weft__reduce(WEFT_FLOAT32, WEFT_MIN, &fd, &fa, &fb, 1);
  assert_true(fd == 1.0f); /* Open MPI's: the second side when the two do not compare */
  weft__reduce(WEFT_FLOAT32, WEFT_MIN, &fd, &fb, &fa, 1);
  assert_true(isnan(fd));
  weft__reduce(WEFT_BFLOAT16, WEFT_SUM, &hd, &ha, &hb, 1);
  assert_int_equal(hd, weft_float_to_bf16(1.0f)); /* 1 + 2^-8: a tie, to even */
  ha = weft_float_to_bf16(NAN);
  weft__reduce(WEFT_BFLOAT16, WEFT_MAX, &hd, &ha, &hb, 1);
  assert_true(isnan(weft_bf16_to_float(hd)));
  weft__reduce(WEFT_BFLOAT16, WEFT_MAX, &hd, &hb, &ha, 1);
  assert_true(isnan(weft_bf16_to_float(hd)));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kernels),
    cmocka_unit_test(test_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
