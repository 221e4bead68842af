/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data weft-bench sends and the results it expects, for every dtype.
 *
 * Inputs are small integers chosen per operation so that every result is an
 * exact integer in every type (sums stay below 2 x ranks, products are 2,
 * minimum and maximum pick one of 0..10) and the expected value of element i
 * depends only on i modulo a short period, so checking costs one table look-up
 * per element whatever the number of ranks. Element access goes through
 * double, with float16 and bfloat16 converted here (round to nearest even).
 * The raw-MPI baseline needs MPI types and ops for each dtype, also here
 * (the 16-bit float ones in half.c).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "driver.h"

double bench_round(weft_dtype dt, double v)
{
  double slot[1];

  weftx_dtype_put(slot, dt, 0, v);
  return weftx_dtype_get(slot, dt, 0);
}

static int is_float(weft_dtype dt)
{
  return dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32 || dt == WEFT_FLOAT64;
}

int bench_same(weft_dtype dt, double got, double want, int nranks)
{
  double eps;

  if (!is_float(dt))
    return got == want;
  eps = dt == WEFT_FLOAT16    ? 9.8e-4
        : dt == WEFT_BFLOAT16 ? 7.9e-3
        : dt == WEFT_FLOAT32  ? 1.2e-7
                              : 2.3e-16;
  return fabs(got - want) <= eps * (nranks + 1) * fmax(1.0, fabs(want));
}

double bench_input(weft_op op, int rank, int nranks, size_t i)
{
  switch (op) {
  case WEFT_PROD: return (size_t)rank == i % (size_t)nranks ? 2 : 1;
  case WEFT_MIN:
  case WEFT_MAX: return (double)(((size_t)rank * 5 + i * 3) % 11);
  default: return (double)(((size_t)rank + i) % 3);
  }
}

/* Computed over the ranks in the type's own arithmetic: integers wrap as
 * the reduction in that type would, floats are exact until the last
 * rounding (all partial results are small integers). */
double bench_reduced(weft_op op, weft_dtype dt, int nranks, size_t i)
{
  double acc = bench_input(op, 0, nranks, i);

  for (int r = 1; r < nranks; r++) {
    double v = bench_input(op, r, nranks, i);

    switch (op) {
    case WEFT_PROD: acc = bench_round(dt, acc * v); break;
    case WEFT_MIN: acc = fmin(acc, v); break;
    case WEFT_MAX: acc = fmax(acc, v); break;
    default: acc = bench_round(dt, acc + v); break;
    }
  }
  if (op == WEFT_AVG)
    acc = is_float(dt) ? acc / nranks : trunc(acc / nranks);
  return bench_round(dt, acc);
}

double bench_value(int rank, size_t i) { return (double)(((size_t)rank * 3 + i) % 13 + 1); }

void bench_poison(void *buf, weft_dtype dt, size_t n)
{
  for (size_t i = 0; i < n; i++)
    weftx_dtype_put(buf, dt, i, -7);
}

/* weft's name, nccl-tests' (what the table prints: src/common.cu's
 * test_typenames) and other spellings; "char" and "int" are nccl-tests'
 * names before NCCL 2.0. */
static const struct {
  const char *name, *label, *alias;
} dtype_names[WEFT_DTYPE_COUNT] = {
  [WEFT_INT8] = {"int8", "int8", "char"},        [WEFT_UINT8] = {"uint8", "uint8", NULL},
  [WEFT_INT32] = {"int32", "int32", "int"},      [WEFT_INT64] = {"int64", "int64", NULL},
  [WEFT_FLOAT16] = {"float16", "half", "fp16"},  [WEFT_BFLOAT16] = {"bfloat16", "bfloat16", "bf16"},
  [WEFT_FLOAT32] = {"float32", "float", "fp32"}, [WEFT_FLOAT64] = {"float64", "double", "fp64"},
};

int bench_dtype_parse(const char *s, weft_dtype *dt)
{
  for (int i = 0; i < WEFT_DTYPE_COUNT; i++)
    if (!strcmp(s, dtype_names[i].name) || !strcmp(s, dtype_names[i].label) ||
        (dtype_names[i].alias && !strcmp(s, dtype_names[i].alias))) {
      *dt = (weft_dtype)i;
      return 0;
    }
  return WEFT_ENAME;
}

const char *bench_dtype_label(weft_dtype dt)
{
  return (int)dt >= 0 && dt < WEFT_DTYPE_COUNT ? dtype_names[dt].label : "?";
}

int bench_op_parse(const char *s, weft_op *op)
{
  static const char *const names[WEFT_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

  for (int i = 0; i < WEFT_OP_COUNT; i++)
    if (!strcmp(s, names[i])) {
      *op = (weft_op)i;
      return 0;
    }
  return WEFT_ENAME;
}

MPI_Datatype bench_mpi_dtype(weft_dtype dt)
{
  switch (dt) {
  case WEFT_INT8: return MPI_INT8_T;
  case WEFT_UINT8: return MPI_UINT8_T;
  case WEFT_INT32: return MPI_INT32_T;
  case WEFT_INT64: return MPI_INT64_T;
  case WEFT_FLOAT16:
  case WEFT_BFLOAT16: return MPI_UINT16_T; /* moved as bits; reduced by the ops below */
  case WEFT_FLOAT32: return MPI_FLOAT;
  case WEFT_FLOAT64: return MPI_DOUBLE;
  default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op bench_mpi_op(weft_op op, weft_dtype dt)
{
  static MPI_Op made[2][4];
  static int have[2][4];
  int o = op == WEFT_AVG ? 0 : (int)op; /* AVG: a sum, divided afterwards */

  if (o < 0 || o > 3)
    return MPI_OP_NULL;
  /* MPI has no 16-bit floats: the baseline reduces them with user ops (half.c). */
  if (dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16) {
    int t = dt == WEFT_BFLOAT16;

    if (!have[t][o]) {
      if (MPI_Op_create(bench_half_fn(dt, op), 1, &made[t][o]) != MPI_SUCCESS)
        return MPI_OP_NULL;
      have[t][o] = 1;
    }
    return made[t][o];
  }
  switch (o) {
  case 0: return MPI_SUM;
  case 1: return MPI_PROD;
  case 2: return MPI_MIN;
  default: return MPI_MAX;
  }
}

void bench_fill_reduction(const struct bench_args *a, void *buf, size_t n, size_t first)
{
  for (size_t i = 0; i < n; i++)
    weftx_dtype_put(buf, a->dtype, i, bench_input(a->op, a->rank, a->nranks, first + i));
}

/* The expected results repeat with period 33 (3 for sums, 11 for min/max;
 * products are always 2), so they are computed once per check. */
size_t bench_check_reduction(const struct bench_args *a, const void *buf, size_t n, size_t first)
{
  double want[33];
  size_t wrong = 0;

  for (size_t k = 0; k < 33; k++)
    want[k] = bench_reduced(a->op, a->dtype, a->nranks, k);
  for (size_t i = 0; i < n; i++)
    if (!bench_same(a->dtype, weftx_dtype_get(buf, a->dtype, i), want[(first + i) % 33], a->nranks))
      wrong++;
  return wrong;
}

void bench_avg_fixup(const struct bench_args *a, void *buf, size_t n)
{
  if (a->dtype == WEFT_FLOAT32) {
    float *f = buf;
    for (size_t i = 0; i < n; i++)
      f[i] /= (float)a->nranks;
  } else if (a->dtype == WEFT_FLOAT64) {
    double *d = buf;
    for (size_t i = 0; i < n; i++)
      d[i] /= a->nranks;
  } else if (a->dtype == WEFT_FLOAT16 || a->dtype == WEFT_BFLOAT16) {
    bench_half_divide(buf, n, a->dtype, a->nranks);
  } else {
    for (size_t i = 0; i < n; i++)
      weftx_dtype_put(buf, a->dtype, i, trunc(weftx_dtype_get(buf, a->dtype, i) / a->nranks));
  }
}
