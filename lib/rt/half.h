/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fp16 and bf16 <-> float, inline: the one definition of how weft rounds
 * 16-bit floats (to nearest even; NaN stays a quiet NaN, infinities stay),
 * used by the exported converters (dtype.c) and by the reduction kernels
 * (reduce.c), which need them inlined to be vectorised; and the rule for
 * reducing them.
 */
#ifndef WEFT_RT_HALF_H
#define WEFT_RT_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float weft__h2f(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  float f;

  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); /* Inf or NaN (payload kept) */
  } else if (exp == 0) {
    /* Zero or subnormal: man * 2^-24, exact in float. */
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static inline uint16_t weft__f2h(float f)
{
  uint32_t bits, sign, exp, man;
  uint16_t out;

  memcpy(&bits, &f, sizeof(bits));
  sign = (bits >> 16) & 0x8000;
  exp = (bits >> 23) & 0xff;
  man = bits & 0x7fffff;
  if (exp == 0xff) /* Inf stays Inf; NaN stays a (quiet) NaN */
    return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  if (exp > 142) /* |f| >= 2^16: beyond fp16's range */
    return (uint16_t)(sign | 0x7c00);
  if (exp < 113) {
    /* Subnormal in fp16 (or zero): round man * 2^(exp-150) to a multiple of
     * 2^-24. */
    uint32_t m = man | 0x800000, shift;
    if (exp < 102) /* below half of the smallest subnormal */
      return (uint16_t)sign;
    shift = 126 - exp; /* 14..24 */
    out = (uint16_t)(m >> shift);
    {
      uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rem > half || (rem == half && (out & 1)))
        out++;
    }
    return (uint16_t)(sign | out);
  }
  /* Normal: keep 10 bits of mantissa, round to nearest even; a carry into
   * the exponent (and up to Inf) falls out of the addition. */
  out = (uint16_t)(((exp - 112) << 10) | (man >> 13));
  {
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (out & 1)))
      out++;
  }
  return (uint16_t)(sign | out);
}

static inline float weft__b2f(uint16_t b)
{
  uint32_t bits = (uint32_t)b << 16;
  float f;

  memcpy(&f, &bits, sizeof(f));
  return f;
}

/* Without branches, so that loops over it vectorise. */
static inline uint16_t weft__f2b(float f)
{
  uint32_t bits, nan, rounded;

  memcpy(&bits, &f, sizeof(bits));
  nan = (bits & 0x7fffffffu) > 0x7f800000u;
  rounded = (bits + 0x7fffu + ((bits >> 16) & 1)) >> 16;  /* to nearest even */
  return (uint16_t)(nan ? (bits >> 16) | 0x40 : rounded); /* NaN stays a quiet NaN */
}

/* The rule for reducing 16-bit floats (dtype.c says why): NaN on either
 * side gives NaN, MIN and MAX take -0 as below +0, and a NaN result is the
 * type's canonical quiet NaN. */
#define WEFT__F16_NAN 0x7e00
#define WEFT__BF16_NAN 0x7fc0

static inline float weft__min16(float a, float b)
{
  if (isnan(a) || isnan(b))
    return NAN;
  return a < b || (a == b && signbit(a)) ? a : b;
}

static inline float weft__max16(float a, float b)
{
  if (isnan(a) || isnan(b))
    return NAN;
  return a > b || (a == b && signbit(b)) ? a : b;
}

#endif /* WEFT_RT_HALF_H */
