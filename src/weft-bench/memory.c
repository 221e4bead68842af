/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host memory for weft-bench's buffers: page-aligned, copies are memcpy and
 * there is nothing to wait for. Device memory is in mem-cuda.c.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static int host_alloc(void **p, size_t bytes)
{
  *p = NULL;
  if (posix_memalign(p, 4096, bytes ? bytes : 1) != 0)
    return WEFT_ENOMEM;
  memset(*p, 0, bytes ? bytes : 1);
  return 0;
}

static void host_release(void *p) { free(p); }

static int host_copy(void *dst, const void *src, size_t bytes)
{
  if (dst != src && bytes)
    memcpy(dst, src, bytes);
  return 0;
}

static int host_sync(void *stream)
{
  (void)stream;
  return 0;
}

const struct bench_mem bench_mem_host = {
  .name = "host",
  .alloc = host_alloc,
  .release = host_release,
  .upload = host_copy,
  .download = host_copy,
  .sync = host_sync,
};
