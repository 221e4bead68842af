/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reductions of the NCCL stand-in, for every type and operation NCCL has
 * but fp8: integers as C computes them (sums wrap), floating point in the
 * type itself, fp16 and bf16 through float with one rounding to nearest even
 * per step. Ranks combine in rank order, so every rank gets the same bits.
 */
#include "nccl-standin.h"

#include <math.h>
#include <string.h>

size_t wsn_type_size(ncclDataType_t dt)
{
  switch (dt) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  default: return 0;
  }
}

const char *wsn_type_name(ncclDataType_t dt)
{
  static const char *const names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                      "float16", "float32", "float64", "bfloat16",
                                      "float8e4m3", "float8e5m2"};

  return (int)dt >= 0 && (int)dt < ncclNumTypes ? names[dt] : "?";
}

const char *wsn_op_name(ncclRedOp_t op)
{
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};

  return (int)op >= 0 && (int)op < ncclNumOps ? names[op] : "?";
}

static float half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  float f;

  if (exp == 0) {
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (man << 13);
  else
    bits = sign | ((exp + 112) << 23) | (man << 13);
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint16_t float_to_half(float f)
{
  uint32_t bits, sign, man;
  int exp;

  memcpy(&bits, &f, sizeof(bits));
  sign = (bits >> 16) & 0x8000;
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return (uint16_t)(sign | 0x7c00 | ((bits & 0x7fffff) ? 0x200 : 0));
  exp = (int)((bits >> 23) & 0xff) - 127 + 15;
  man = bits & 0x7fffff;
  if (exp >= 31)
    return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    /* Subnormal: shift in the implicit bit, round to nearest even. */
    uint32_t m = man | 0x800000, shift = (uint32_t)(14 - exp), half, rest, q;
    if (shift > 24)
      return (uint16_t)sign;
    q = m >> shift;
    half = 1u << (shift - 1);
    rest = m & ((1u << shift) - 1);
    if (rest > half || (rest == half && (q & 1)))
      q++;
    return (uint16_t)(sign | q);
  }
  {
    uint32_t q = ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (q & 1)))
      q++; /* may carry into the exponent, up to infinity: right */
    return (uint16_t)(sign | q);
  }
}

static float bf16_to_float(uint16_t h)
{
  uint32_t bits = (uint32_t)h << 16;
  float f;

  memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint16_t float_to_bf16(float f)
{
  uint32_t bits;

  memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffff))
    return (uint16_t)((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)(bits >> 16);
}

#define REDUCE_INT(T)                                                                      \
  do {                                                                                     \
    T *a = acc;                                                                            \
    const T *b = in;                                                                       \
    for (i = 0; i < n; i++)                                                                \
      switch (op) {                                                                        \
      case ncclProd: a[i] = (T)(a[i] * b[i]); break;                                       \
      case ncclMax: a[i] = a[i] > b[i] ? a[i] : b[i]; break;                               \
      case ncclMin: a[i] = a[i] < b[i] ? a[i] : b[i]; break;                               \
      default: a[i] = (T)(a[i] + b[i]); break;                                             \
      }                                                                                    \
  } while (0)

/* Unsigned arithmetic for the signed types, so that sums wrap as in C's
 * unsigned types (and as on the GPU), never overflow as signed ones. */
#define REDUCE_SIGNED(T, U)                                                                \
  do {                                                                                     \
    T *a = acc;                                                                            \
    const T *b = in;                                                                       \
    for (i = 0; i < n; i++)                                                                \
      switch (op) {                                                                        \
      case ncclProd: a[i] = (T)((U)a[i] * (U)b[i]); break;                                 \
      case ncclMax: a[i] = a[i] > b[i] ? a[i] : b[i]; break;                               \
      case ncclMin: a[i] = a[i] < b[i] ? a[i] : b[i]; break;                               \
      default: a[i] = (T)((U)a[i] + (U)b[i]); break;                                       \
      }                                                                                    \
  } while (0)

static float fop(float x, float y, ncclRedOp_t op)
{
  switch (op) {
  case ncclProd: return x * y;
  case ncclMax: return isnan(x) || isnan(y) ? NAN : (x > y ? x : y);
  case ncclMin: return isnan(x) || isnan(y) ? NAN : (x < y ? x : y);
  default: return x + y;
  }
}

static double dop(double x, double y, ncclRedOp_t op)
{
  switch (op) {
  case ncclProd: return x * y;
  case ncclMax: return isnan(x) || isnan(y) ? NAN : (x > y ? x : y);
  case ncclMin: return isnan(x) || isnan(y) ? NAN : (x < y ? x : y);
  default: return x + y;
  }
}

void wsn_reduce(void *acc, const void *in, size_t n, ncclDataType_t dt, ncclRedOp_t op)
{
  size_t i;

  switch (dt) {
  case ncclInt8: REDUCE_SIGNED(int8_t, uint8_t); break;
  case ncclUint8: REDUCE_INT(uint8_t); break;
  case ncclInt32: REDUCE_SIGNED(int32_t, uint32_t); break;
  case ncclUint32: REDUCE_INT(uint32_t); break;
  case ncclInt64: REDUCE_SIGNED(int64_t, uint64_t); break;
  case ncclUint64: REDUCE_INT(uint64_t); break;
  case ncclFloat32: {
    float *a = acc;
    const float *b = in;
    for (i = 0; i < n; i++)
      a[i] = fop(a[i], b[i], op);
    break;
  }
  case ncclFloat64: {
    double *a = acc;
    const double *b = in;
    for (i = 0; i < n; i++)
      a[i] = dop(a[i], b[i], op);
    break;
  }
  case ncclFloat16: {
    uint16_t *a = acc;
    const uint16_t *b = in;
    for (i = 0; i < n; i++)
      a[i] = float_to_half(fop(half_to_float(a[i]), half_to_float(b[i]), op));
    break;
  }
  case ncclBfloat16: {
    uint16_t *a = acc;
    const uint16_t *b = in;
    for (i = 0; i < n; i++)
      a[i] = float_to_bf16(fop(bf16_to_float(a[i]), bf16_to_float(b[i]), op));
    break;
  }
  default:
    break;
  }
}

#define DIVIDE_INT(T)                                                                      \
  do {                                                                                     \
    T *a = acc;                                                                            \
    for (i = 0; i < n; i++)                                                                \
      a[i] = (T)(a[i] / (T)by);                                                            \
  } while (0)

void wsn_divide(void *acc, size_t n, ncclDataType_t dt, int by)
{
  size_t i;

  switch (dt) {
  case ncclInt8: DIVIDE_INT(int8_t); break;
  case ncclUint8: DIVIDE_INT(uint8_t); break;
  case ncclInt32: DIVIDE_INT(int32_t); break;
  case ncclUint32: DIVIDE_INT(uint32_t); break;
  case ncclInt64: DIVIDE_INT(int64_t); break;
  case ncclUint64: DIVIDE_INT(uint64_t); break;
  case ncclFloat32: {
    float *a = acc;
    for (i = 0; i < n; i++)
      a[i] /= (float)by;
    break;
  }
  case ncclFloat64: {
    double *a = acc;
    for (i = 0; i < n; i++)
      a[i] /= by;
    break;
  }
  case ncclFloat16: {
    uint16_t *a = acc;
    for (i = 0; i < n; i++)
      a[i] = float_to_half(half_to_float(a[i]) / (float)by);
    break;
  }
  case ncclBfloat16: {
    uint16_t *a = acc;
    for (i = 0; i < n; i++)
      a[i] = float_to_bf16(bf16_to_float(a[i]) / (float)by);
    break;
  }
  default:
    break;
  }
}
