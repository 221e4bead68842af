/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the examples share beside libweft's public API: a strict number parser
 * for their options (libweft's own parser is internal to weft's tools).
 */
#ifndef WEFT_EXAMPLE_ARGS_H
#define WEFT_EXAMPLE_ARGS_H

#include <errno.h>
#include <stdlib.h>

#include <weft.h>

/* A whole decimal number in [min, max]; 0, WEFT_EPARSE or WEFT_ERANGE. */
static inline int
example_parse_long(const char *s, long min, long max, long *out)
{
  char *end;
  if (!s || !*s || *s == ' ' || (*s == '-' && min >= 0))
    return WEFT_EPARSE;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end)
    return WEFT_EPARSE;
  if (errno == ERANGE || v < min || v > max)
    return WEFT_ERANGE;
  *out = v;
  return 0;
}

#endif /* WEFT_EXAMPLE_ARGS_H */
