/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the runtime's calls fail: the context's one-line "last error" (also on
 * stderr for failures of the job), and MPI's words for an MPI error code.
 * Every file of lib/rt reports through here.
 */
#include "rt_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int weft__rt_fail(weft_ctx *ctx, int code, const char *fmt, ...)
{
  char line[sizeof(ctx->err)];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (ctx) {
    memcpy(ctx->err, line, sizeof(line));
    /* Bad arguments are the caller's to report; failures of the job (MPI,
     * NCCL, CUDA, timeouts, peers) also go to stderr, as they may come
     * right before an abort. */
    if (code == WEFT_EINVAL || code == WEFT_EDTYPE || code == WEFT_ERANGE ||
        code == WEFT_EOVERFLOW || code == WEFT_EPARSE || code == WEFT_ENAME)
      WEFT__LOG(RT, "rank %d: %s (%s)", ctx->rank, line, weft_err_name(code));
    else
      fprintf(stderr, "weft: rank %d: %s (%s)\n", ctx->rank, line, weft_err_name(code));
  } else {
    fprintf(stderr, "weft: %s (%s)\n", line, weft_err_name(code));
  }
  return code;
}

const char *weft__mpi_strerror(int rc, char *buf, size_t size)
{
  int len = 0;
  char s[MPI_MAX_ERROR_STRING];

  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
    weft__snprintf(buf, size, "MPI error %d", rc);
  else
    weft__snprintf(buf, size, "%s", s);
  return buf;
}
