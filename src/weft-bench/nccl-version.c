/* SPDX-License-Identifier: BSD-3-Clause */
/* The NCCL library's version for weft-bench's header, "none" without NCCL. */
#include <config.h>

#include <stdio.h>

#ifdef WEFT_HAVE_NCCL
/* nccl.h declares a few functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

#include "driver.h"

void bench_nccl_version(char *buf, size_t len)
{
#ifdef WEFT_HAVE_NCCL
  int v = 0;

  if (ncclGetVersion(&v) == ncclSuccess && v >= 10000)
    snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  else if (ncclGetVersion(&v) == ncclSuccess)
    snprintf(buf, len, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
  else
    snprintf(buf, len, "unknown");
#else
  snprintf(buf, len, "none");
#endif
}
