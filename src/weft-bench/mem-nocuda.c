/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory in a build without the CUDA runtime: there is none, and
 * weft-bench says so (--memory device exits with BENCH_EXIT_NODEVICE).
 */
#include <stdio.h>

#include "driver.h"

const struct bench_mem *bench_mem_device(int device, char *why, size_t whylen)
{
  (void)device;
  snprintf(why, whylen,
           "this weft-bench was built without CUDA (configure found no CUDA "
           "runtime; see --with-cuda)");
  return NULL;
}

void bench_gpu_describe(int device, int probe, char *buf, size_t len)
{
  (void)device;
  (void)probe;
  snprintf(buf, len, "none");
}

void *bench_stream_create(void) { return NULL; }

void bench_stream_destroy(void *stream) { (void)stream; }
