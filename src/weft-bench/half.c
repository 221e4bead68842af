/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw-MPI baseline's reductions of float16 and bfloat16. MPI has no
 * 16-bit floats, so a raw MPI program reduces them with user-defined
 * operations, and so does the baseline. They are written here a second time,
 * apart from libweft's, so that the baseline times what such a program
 * would run; but they follow the same rule (libweft(3), weft-bench(1)), and
 * test-bench compares the two for every operation:
 *
 *   - each pair is computed in float, where it is exact, and rounded once to
 *     nearest even;
 *   - a NaN on either side gives NaN, for MIN and MAX as for the others (C's
 *     fminf and fmaxf would return the other side);
 *   - MIN and MAX order -0 below +0;
 *   - a NaN result is the type's canonical quiet NaN, 0x7e00 or 0x7fc0,
 *     so that every rank holds the same bits whatever the order MPI
 *     combines the ranks in.
 */
#include <math.h>
#include <stdint.h>

#include "driver.h"

static uint16_t from_f16(float v) { return isnan(v) ? 0x7e00 : weft_float_to_half(v); }

static uint16_t from_bf16(float v) { return isnan(v) ? 0x7fc0 : weft_float_to_bf16(v); }

static float rule_sum(float x, float y) { return x + y; }

static float rule_prod(float x, float y) { return x * y; }

static float rule_min(float x, float y)
{
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == y) /* equal: only the sign of a zero can differ */
    return signbit(x) ? x : y;
  return x < y ? x : y;
}

static float rule_max(float x, float y)
{
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == y)
    return signbit(x) ? y : x;
  return x > y ? x : y;
}

/* MPI's signature has no room for the rule: one function per (type, op). */
#define HALF_OP(name, to, from, rule)                                                              \
  static void name(void *in, void *inout, int *len, MPI_Datatype *type)                            \
  {                                                                                                \
    const uint16_t *a = in;                                                                        \
    uint16_t *b = inout;                                                                           \
    (void)type;                                                                                    \
    for (int k = 0; k < *len; k++)                                                                 \
      b[k] = from(rule(to(a[k]), to(b[k])));                                                       \
  }
HALF_OP(f16_sum, weft_half_to_float, from_f16, rule_sum)
HALF_OP(f16_prod, weft_half_to_float, from_f16, rule_prod)
HALF_OP(f16_min, weft_half_to_float, from_f16, rule_min)
HALF_OP(f16_max, weft_half_to_float, from_f16, rule_max)
HALF_OP(bf16_sum, weft_bf16_to_float, from_bf16, rule_sum)
HALF_OP(bf16_prod, weft_bf16_to_float, from_bf16, rule_prod)
HALF_OP(bf16_min, weft_bf16_to_float, from_bf16, rule_min)
HALF_OP(bf16_max, weft_bf16_to_float, from_bf16, rule_max)

MPI_User_function *bench_half_fn(weft_dtype dt, weft_op op)
{
  static MPI_User_function *const fns[2][4] = {
    {f16_sum, f16_prod, f16_min, f16_max},
    {bf16_sum, bf16_prod, bf16_min, bf16_max},
  };
  int o = op == WEFT_AVG ? 0 : (int)op; /* AVG: a sum, divided afterwards */

  if ((dt != WEFT_FLOAT16 && dt != WEFT_BFLOAT16) || o < 0 || o > 3)
    return NULL;
  return fns[dt == WEFT_BFLOAT16][o];
}

void bench_half_divide(void *buf, size_t n, weft_dtype dt, int nranks)
{
  uint16_t *h = buf;

  for (size_t i = 0; i < n; i++)
    h[i] = dt == WEFT_FLOAT16 ? from_f16(weft_half_to_float(h[i]) / (float)nranks)
                              : from_bf16(weft_bf16_to_float(h[i]) / (float)nranks);
}
