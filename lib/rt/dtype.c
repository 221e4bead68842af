/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Element types: sizes and names, fp16/bf16 <-> float conversion (round to
 * nearest even, NaN and infinities kept), and the MPI datatype and operation
 * for each (dtype, op). MPI has no 16-bit floats, so fp16 and bf16 travel as
 * MPI_UINT16_T and are reduced by user-defined operations that compute in
 * float and round once per pair, with the NaN rule written down below. AVG
 * is a SUM followed by weft__divide().
 */
#include "rt_private.h"
#include "half.h"

static const size_t sizes[WEFT_DTYPE_COUNT] = {1, 1, 4, 8, 2, 2, 4, 8};
static const char *const dtype_names[WEFT_DTYPE_COUNT] = {
  "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"};
static const char *const op_names[WEFT_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

int weft__dtype_ok(weft_dtype dt) { return (int)dt >= 0 && dt < WEFT_DTYPE_COUNT; }
int weft__op_ok(weft_op op) { return (int)op >= 0 && op < WEFT_OP_COUNT; }

size_t weft_dtype_size(weft_dtype dt) { return weft__dtype_ok(dt) ? sizes[dt] : 0; }
const char *weft_dtype_name(weft_dtype dt) { return weft__dtype_ok(dt) ? dtype_names[dt] : "?"; }
const char *weft_op_name(weft_op op) { return weft__op_ok(op) ? op_names[op] : "?"; }

float weft_half_to_float(uint16_t h) { return weft__h2f(h); }
uint16_t weft_float_to_half(float f) { return weft__f2h(f); }
float weft_bf16_to_float(uint16_t b) { return weft__b2f(b); }
uint16_t weft_float_to_bf16(float f) { return weft__f2b(f); }

/* ---- user-defined MPI operations on 16-bit floats ----
 *
 * The rule, documented in libweft(3) (weft-bench's baseline follows it too,
 * and test-bench compares the two): each pair is computed in float, where it
 * is exact, and rounded once to nearest even; a NaN on either side gives NaN
 * for every operation, MIN and MAX included (C's fmin would drop it); MIN and
 * MAX order -0 below +0; and a NaN result is the type's canonical quiet NaN
 * (0x7e00, 0x7fc0). MPI takes these operations as commutative and may combine
 * the ranks in a different order on each rank, so every rank then holds the
 * same bits, which it would not with NaN payloads or with -0 and +0 taken
 * from whichever side came first. */

/* inout = in op inout, by the kernels of the shared-memory path (reduce.c),
 * which follow this rule (half.h). */
#define WEFT__OP16(NAME, DT, OP)                                                                   \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *type)                            \
  {                                                                                                \
    (void)type;                                                                                    \
    weft__reduce(DT, OP, inout, in, inout, (size_t)*len);                                          \
  }

WEFT__OP16(h_sum, WEFT_FLOAT16, WEFT_SUM)
WEFT__OP16(h_prod, WEFT_FLOAT16, WEFT_PROD)
WEFT__OP16(h_min, WEFT_FLOAT16, WEFT_MIN)
WEFT__OP16(h_max, WEFT_FLOAT16, WEFT_MAX)
WEFT__OP16(b_sum, WEFT_BFLOAT16, WEFT_SUM)
WEFT__OP16(b_prod, WEFT_BFLOAT16, WEFT_PROD)
WEFT__OP16(b_min, WEFT_BFLOAT16, WEFT_MIN)
WEFT__OP16(b_max, WEFT_BFLOAT16, WEFT_MAX)

static MPI_User_function *const fns16[2][4] = {{h_sum, h_prod, h_min, h_max},
                                               {b_sum, b_prod, b_min, b_max}};
static MPI_Op ops16[2][4];
static int ops16_made;

MPI_User_function *weft__op16_fn(weft_dtype dt, weft_op op)
{
  if ((dt != WEFT_FLOAT16 && dt != WEFT_BFLOAT16) || !weft__op_ok(op))
    return NULL;
  return fns16[dt == WEFT_BFLOAT16][op == WEFT_AVG ? WEFT_SUM : (int)op];
}

void weft__dtype_fini(void)
{
  int i, j, fin = 0;

  MPI_Finalized(&fin);
  if (!ops16_made || fin)
    return;
  for (i = 0; i < 2; i++)
    for (j = 0; j < 4; j++)
      MPI_Op_free(&ops16[i][j]);
  ops16_made = 0;
}

int weft__mpi_type_op(weft_dtype dt, weft_op op, MPI_Datatype *type, MPI_Op *mop)
{
  int k = op == WEFT_AVG ? WEFT_SUM : (int)op;

  switch (dt) {
  case WEFT_INT8: *type = MPI_INT8_T; break;
  case WEFT_UINT8: *type = MPI_UINT8_T; break;
  case WEFT_INT32: *type = MPI_INT32_T; break;
  case WEFT_INT64: *type = MPI_INT64_T; break;
  case WEFT_FLOAT32: *type = MPI_FLOAT; break;
  case WEFT_FLOAT64: *type = MPI_DOUBLE; break;
  case WEFT_FLOAT16:
  case WEFT_BFLOAT16:
    *type = MPI_UINT16_T;
    if (!mop)
      return 0;
    if (!weft__op_ok(op))
      return WEFT_EDTYPE;
    if (!ops16_made) {
      int i, j;
      for (i = 0; i < 2; i++)
        for (j = 0; j < 4; j++)
          if (MPI_Op_create(fns16[i][j], 1, &ops16[i][j]) != MPI_SUCCESS)
            return WEFT_EMPI;
      ops16_made = 1;
    }
    *mop = ops16[dt == WEFT_BFLOAT16][k];
    return 0;
  default: return WEFT_EDTYPE;
  }
  if (!mop)
    return 0;
  switch (k) {
  case WEFT_SUM: *mop = MPI_SUM; break;
  case WEFT_PROD: *mop = MPI_PROD; break;
  case WEFT_MIN: *mop = MPI_MIN; break;
  case WEFT_MAX: *mop = MPI_MAX; break;
  default: return WEFT_EDTYPE;
  }
  return 0;
}

void weft__divide(void *buf, size_t count, weft_dtype dt, int n)
{
  size_t i;

  switch (dt) {
#define WEFT__DIV(T, DT)                                                                           \
  case DT: {                                                                                       \
    T *p = buf;                                                                                    \
    for (i = 0; i < count; i++)                                                                    \
      p[i] = (T)(p[i] / n);                                                                        \
    break;                                                                                         \
  }
    WEFT__DIV(int8_t, WEFT_INT8)
    WEFT__DIV(uint8_t, WEFT_UINT8)
    WEFT__DIV(int32_t, WEFT_INT32)
    WEFT__DIV(int64_t, WEFT_INT64)
    WEFT__DIV(float, WEFT_FLOAT32)
    WEFT__DIV(double, WEFT_FLOAT64)
#undef WEFT__DIV
  case WEFT_FLOAT16: {
    uint16_t *p = buf;
    for (i = 0; i < count; i++) {
      float q = weft_half_to_float(p[i]) / (float)n;
      p[i] = isnan(q) ? (uint16_t)WEFT__F16_NAN : weft_float_to_half(q);
    }
    break;
  }
  case WEFT_BFLOAT16: {
    uint16_t *p = buf;
    for (i = 0; i < count; i++) {
      float q = weft_bf16_to_float(p[i]) / (float)n;
      p[i] = isnan(q) ? (uint16_t)WEFT__BF16_NAN : weft_float_to_bf16(q);
    }
    break;
  }
  default: break;
  }
}

void weftx_dtype_put(void *buf, weft_dtype dt, size_t i, double v)
{
  int64_t iv = (int64_t)v;

  switch (dt) {
  case WEFT_INT8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)(iv & 0xff); break;
  case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(iv & 0xff); break;
  case WEFT_INT32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)(iv & 0xffffffff); break;
  case WEFT_INT64: ((int64_t *)buf)[i] = iv; break;
  case WEFT_FLOAT16: ((uint16_t *)buf)[i] = weft_float_to_half((float)v); break;
  case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = weft_float_to_bf16((float)v); break;
  case WEFT_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case WEFT_FLOAT64: ((double *)buf)[i] = v; break;
  default: break;
  }
}

double weftx_dtype_get(const void *buf, weft_dtype dt, size_t i)
{
  switch (dt) {
  case WEFT_INT8: return ((const int8_t *)buf)[i];
  case WEFT_UINT8: return ((const uint8_t *)buf)[i];
  case WEFT_INT32: return ((const int32_t *)buf)[i];
  case WEFT_INT64: return (double)((const int64_t *)buf)[i];
  case WEFT_FLOAT16: return weft_half_to_float(((const uint16_t *)buf)[i]);
  case WEFT_BFLOAT16: return weft_bf16_to_float(((const uint16_t *)buf)[i]);
  case WEFT_FLOAT32: return ((const float *)buf)[i];
  case WEFT_FLOAT64: return ((const double *)buf)[i];
  default: return NAN;
  }
}
