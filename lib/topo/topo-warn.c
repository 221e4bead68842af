/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-line reasons of lib/topo and the warnings a topology carries:
 * below every other file of lib/topo, which all report through them.
 */
#include "topo_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void weft__topo_why(char *why, size_t whylen, const char *fmt, ...)
{
  va_list ap;

  if (!why || whylen == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

/* Read the whole file, NUL-terminated, after the checks hwloc does not make. */

int weft__topo_warn(weftx_topo *t, const char *fmt, ...)
{
  char buf[512];
  char **w;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  w = realloc(t->warnings, (size_t)(t->nwarnings + 1) * sizeof(*w));
  if (!w)
    return WEFT_ENOMEM;
  t->warnings = w;
  w[t->nwarnings] = strdup(buf);
  if (!w[t->nwarnings])
    return WEFT_ENOMEM;
  t->nwarnings++;
  WEFT__LOG(TOPO, "warning: %s", buf);
  return 0;
}
