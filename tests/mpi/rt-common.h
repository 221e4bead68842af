/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the MPI tests of the runtime: a failure macro that
 * names the rank and the line, and element access for every dtype through
 * double (the test values are small integers, exact in every type).
 */
#ifndef WEFT_TEST_RT_COMMON_H
#define WEFT_TEST_RT_COMMON_H

#include "rt_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      int r_ = 0;                                                                            \
      MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                                    \
      fprintf(stderr, "FAIL rank %d %s:%d: ", r_, __FILE__, __LINE__);                       \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n");                                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)

static inline void put(void *buf, size_t i, weft_dtype dt, double v)
{
  switch (dt) {
  case WEFT_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case WEFT_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case WEFT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case WEFT_FLOAT16: ((uint16_t *)buf)[i] = weft_float_to_half((float)v); break;
  case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = weft_float_to_bf16((float)v); break;
  case WEFT_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case WEFT_FLOAT64: ((double *)buf)[i] = v; break;
  default: break;
  }
}

static inline double get(const void *buf, size_t i, weft_dtype dt)
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
  default: return 0;
  }
}

#endif /* WEFT_TEST_RT_COMMON_H */
