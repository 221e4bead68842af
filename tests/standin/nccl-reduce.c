/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reductions of the NCCL stand-in, for every type and operation NCCL has
 * but fp8, in the order and with the roundings of NCCL's ring algorithm with
 * one channel and one loop:
 *  - all-reduce (device/all_reduce.h runRing): the buffer is cut in nranks
 *    contiguous chunks of alignUp(divUp(count, nranks), 16/sizeof(T))
 *    elements (the last ones shorter or empty); chunk c is reduced around the
 *    ring starting at rank c+1 and ending at rank c, which applies the
 *    post-operation and passes the result on;
 *  - reduce-scatter (device/reduce_scatter.h runRing): rank r's block is
 *    reduced from rank r+1 round to rank r;
 *  - reduce (device/reduce.h runRing): the whole buffer from rank root+1
 *    round to the root.
 * The ring is the ranks in order (NCCL's search may order it otherwise on a
 * real machine). Every step is one operation of device/reduce_kernel.h on
 * two values, rounded to the element type: integers as the GPU computes them
 * (sums and products wrap), float and double in their type, fp16 and bf16
 * correctly rounded to nearest even (__hadd, __hmul on sm_80+), min and max
 * as fminf/fmaxf and __hmin/__hmax (a NaN loses to a number). ncclAvg is
 * FuncPreMulSum for floating point (each rank's input times 1/nranks rounded
 * to the type, then summed: enqueue.cc hostToDevRedOp) and FuncSumPostDiv
 * for integers (the sum divided once, rounding towards zero).
 */
#include "nccl-standin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t wsn_type_size(ncclDataType_t dt)
{
  switch (dt) {
  case ncclInt8:
  case ncclUint8: return 1;
  case ncclFloat16:
  case ncclBfloat16: return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32: return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64: return 8;
  default: return 0;
  }
}

const char *wsn_type_name(ncclDataType_t dt)
{
  static const char *const names[] = {"int8",    "uint8",    "int32",      "uint32",
                                      "int64",   "uint64",   "float16",    "float32",
                                      "float64", "bfloat16", "float8e4m3", "float8e5m2"};

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

/* x rounded to nearest even with mant significant bits (the implicit one
 * included), emin the smallest normal exponent and max the largest finite
 * value of the target type: what a correctly rounded half or bfloat16
 * operation returns, computed from an exact double. */
static double round_to(double x, int mant, int emin, double max)
{
  double q, r;
  int e;

  if (x == 0 || isnan(x) || isinf(x))
    return x;
  frexp(x, &e);
  e -= 1; /* the exponent of the leading bit */
  if (e < emin)
    e = emin;
  q = ldexp(1.0, e - (mant - 1));
  r = nearbyint(x / q) * q;
  return fabs(r) > max ? copysign(INFINITY, x) : r;
}

static uint16_t to_half(double x) { return float_to_half((float)round_to(x, 11, -14, 65504.0)); }

static uint16_t to_bf16(double x)
{
  return float_to_bf16((float)round_to(x, 8, -126, ldexp(255.0, 120)));
}

/* One step of FuncSum, FuncProd or FuncMinMax in double (exact for the sums
 * and products of two halves or bfloat16s that matter), NaN losing in min
 * and max as with fmin/fmax. */
static double dop(double x, double y, ncclRedOp_t op)
{
  switch (op) {
  case ncclProd: return x * y;
  case ncclMax: return fmax(x, y);
  case ncclMin: return fmin(x, y);
  default: return x + y;
  }
}

static float fop(float x, float y, ncclRedOp_t op)
{
  switch (op) {
  case ncclProd: return x * y;
  case ncclMax: return fmaxf(x, y);
  case ncclMin: return fminf(x, y);
  default: return x + y;
  }
}

#define STEP_INT(T, U)                                                                             \
  do {                                                                                             \
    T *a = acc;                                                                                    \
    const T *b = in;                                                                               \
    for (i = 0; i < n; i++)                                                                        \
      switch (op) {                                                                                \
      case ncclProd: a[i] = (T)((U)a[i] * (U)b[i]); break;                                         \
      case ncclMax: a[i] = a[i] > b[i] ? a[i] : b[i]; break;                                       \
      case ncclMin: a[i] = a[i] < b[i] ? a[i] : b[i]; break;                                       \
      default: a[i] = (T)((U)a[i] + (U)b[i]); break;                                               \
      }                                                                                            \
  } while (0)

/* acc[i] = acc[i] op in[i], each result rounded to the type; ncclAvg sums
 * (its pre- and post-operations are apart). Signed integers go through their
 * unsigned type, so that sums wrap as on the GPU and never overflow in C. */
static void step(void *acc, const void *in, size_t n, ncclDataType_t dt, ncclRedOp_t op)
{
  size_t i;

  switch (dt) {
  case ncclInt8: STEP_INT(int8_t, uint8_t); break;
  case ncclUint8: STEP_INT(uint8_t, uint8_t); break;
  case ncclInt32: STEP_INT(int32_t, uint32_t); break;
  case ncclUint32: STEP_INT(uint32_t, uint32_t); break;
  case ncclInt64: STEP_INT(int64_t, uint64_t); break;
  case ncclUint64: STEP_INT(uint64_t, uint64_t); break;
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
      a[i] = op == ncclMax    ? fmax(a[i], b[i])
             : op == ncclMin  ? fmin(a[i], b[i])
             : op == ncclProd ? a[i] * b[i]
                              : a[i] + b[i];
    break;
  }
  case ncclFloat16: {
    uint16_t *a = acc;
    const uint16_t *b = in;
    for (i = 0; i < n; i++)
      a[i] = to_half(dop(half_to_float(a[i]), half_to_float(b[i]), op));
    break;
  }
  case ncclBfloat16: {
    uint16_t *a = acc;
    const uint16_t *b = in;
    for (i = 0; i < n; i++)
      a[i] = to_bf16(dop(bf16_to_float(a[i]), bf16_to_float(b[i]), op));
    break;
  }
  default: break;
  }
}

/* FuncPreMulSum's pre-operation for ncclAvg: x times 1/nranks, the scalar
 * made as enqueue.cc hostToDevRedOp makes it (__float2half(float(1.0/n)),
 * __float2bfloat16(float(1.0/n)), float(1.0/n), 1.0/n) and the product
 * rounded to the type. */
static void premul(void *acc, size_t n, ncclDataType_t dt, int nranks)
{
  size_t i;

  switch (dt) {
  case ncclFloat32: {
    float *a = acc, s = (float)(1.0 / nranks);
    for (i = 0; i < n; i++)
      a[i] = a[i] * s;
    break;
  }
  case ncclFloat64: {
    double *a = acc, s = 1.0 / nranks;
    for (i = 0; i < n; i++)
      a[i] = a[i] * s;
    break;
  }
  case ncclFloat16: {
    uint16_t *a = acc;
    double s = half_to_float(float_to_half((float)(1.0 / nranks)));
    for (i = 0; i < n; i++)
      a[i] = to_half(half_to_float(a[i]) * s);
    break;
  }
  case ncclBfloat16: {
    uint16_t *a = acc;
    double s = bf16_to_float(float_to_bf16((float)(1.0 / nranks)));
    for (i = 0; i < n; i++)
      a[i] = to_bf16(bf16_to_float(a[i]) * s);
    break;
  }
  default: break;
  }
}

/* FuncSumPostDiv (device/reduce_kernel.h divide): |x| / nranks with the sign
 * put back, for the integer types. */
#define POSTDIV(T, U)                                                                              \
  do {                                                                                             \
    T *a = acc;                                                                                    \
    for (i = 0; i < n; i++) {                                                                      \
      int neg = a[i] < 0;                                                                          \
      U q = (U)(neg ? (U)0 - (U)a[i] : (U)a[i]) / (U)by;                                           \
      a[i] = (T)(neg ? (U)0 - q : q);                                                              \
    }                                                                                              \
  } while (0)

#define POSTDIV_UNSIGNED(T)                                                                        \
  do {                                                                                             \
    T *a = acc;                                                                                    \
    for (i = 0; i < n; i++)                                                                        \
      a[i] = (T)(a[i] / (T)by);                                                                    \
  } while (0)

static void postdiv(void *acc, size_t n, ncclDataType_t dt, int by)
{
  size_t i;

  switch (dt) {
  case ncclInt8: POSTDIV(int8_t, uint8_t); break;
  case ncclUint8: POSTDIV_UNSIGNED(uint8_t); break;
  case ncclInt32: POSTDIV(int32_t, uint32_t); break;
  case ncclUint32: POSTDIV_UNSIGNED(uint32_t); break;
  case ncclInt64: POSTDIV(int64_t, uint64_t); break;
  case ncclUint64: POSTDIV_UNSIGNED(uint64_t); break;
  default: break;
  }
}

static int is_float(ncclDataType_t dt)
{
  return dt == ncclFloat16 || dt == ncclFloat32 || dt == ncclFloat64 || dt == ncclBfloat16;
}

/* Elements [off, off+n) reduced around the ring from rank first (the rank
 * after the owner) to the owner, into out[0, n): each rank's part loaded with
 * the pre-operation, the owner's step with the post-operation. */
static void chain(char *out, const char *const *in, int nranks, int first, size_t off, size_t n,
                  ncclDataType_t dt, ncclRedOp_t op)
{
  size_t es = wsn_type_size(dt), bytes = n * es;
  char *tmp;
  int k;

  if (n == 0)
    return;
  memcpy(out, in[first] + off * es, bytes);
  if (op == ncclAvg && is_float(dt))
    premul(out, n, dt, nranks);
  if (nranks == 1)
    return;
  tmp = malloc(bytes);
  if (!tmp)
    wsi_violation("out of memory", "a reduction of %zu bytes", bytes);
  for (k = 1; k < nranks; k++) {
    const char *x = in[(first + k) % nranks] + off * es;
    if (op == ncclAvg && is_float(dt)) {
      memcpy(tmp, x, bytes);
      premul(tmp, n, dt, nranks);
      x = tmp;
    }
    step(out, x, n, dt, op);
  }
  free(tmp);
  if (op == ncclAvg && !is_float(dt))
    postdiv(out, n, dt, nranks);
}

void wsn_ring_allreduce(void *out, const char *const *in, int nranks, size_t count,
                        ncclDataType_t dt, ncclRedOp_t op)
{
  size_t es = wsn_type_size(dt), pack = 16 / es;
  size_t chunk = (count + (size_t)nranks - 1) / (size_t)nranks;
  int c;

  chunk = (chunk + pack - 1) / pack * pack;
  for (c = 0; c < nranks; c++) {
    size_t off = (size_t)c * chunk, n;
    if (off >= count)
      break;
    n = count - off < chunk ? count - off : chunk;
    chain((char *)out + off * es, in, nranks, (c + 1) % nranks, off, n, dt, op);
  }
}

void wsn_ring_reduce(void *out, const char *const *in, int nranks, int root, size_t count,
                     ncclDataType_t dt, ncclRedOp_t op)
{
  chain(out, in, nranks, (root + 1) % nranks, 0, count, dt, op);
}

void wsn_ring_reduce_scatter(void *out, const char *const *in, int nranks, int rank, size_t count,
                             ncclDataType_t dt, ncclRedOp_t op)
{
  chain(out, in, nranks, (rank + 1) % nranks, 0, count, dt, op);
}

void wsn_premul_one(void *out, const void *in, size_t count, ncclDataType_t dt)
{
  memmove(out, in, count * wsn_type_size(dt));
  premul(out, count, dt, 1);
}
