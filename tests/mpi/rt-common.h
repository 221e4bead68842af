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

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      int r_ = 0;                                                                                  \
      MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                                          \
      fprintf(stderr, "FAIL rank %d %s:%d: ", r_, __FILE__, __LINE__);                             \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

/* Element i of buf as a double (weftx_dtype_put/get, weft-bench's too). */
static inline void put(void *buf, size_t i, weft_dtype dt, double v)
{
  weftx_dtype_put(buf, dt, i, v);
}

static inline double get(const void *buf, size_t i, weft_dtype dt)
{
  return weftx_dtype_get(buf, dt, i);
}

#endif /* WEFT_TEST_RT_COMMON_H */
