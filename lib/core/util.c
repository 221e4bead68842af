/* SPDX-License-Identifier: BSD-3-Clause */
/* Small checked utilities: number and size parsing, bounded formatting, data directory,
 * the monotonic clock. */
#include "weft_private.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int weft__snprintf(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= size)
    return WEFT_ERANGE;
  return 0;
}

int weftx_parse_long(const char *s, long min, long max, long *out)
{
  char *end;
  long v;

  if (!s || !*s || isspace((unsigned char)*s))
    return WEFT_EPARSE;
  if (min >= 0 && (*s == '-' || *s == '+'))
    return WEFT_EPARSE;
  errno = 0;
  v = strtol(s, &end, 10);
  if (*end != '\0')
    return WEFT_EPARSE;
  if (errno == ERANGE || v < min || v > max)
    return WEFT_ERANGE;
  *out = v;
  return 0;
}

int weftx_parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v, mult = 1;

  if (!s || !isdigit((unsigned char)*s))
    return WEFT_EPARSE;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno == ERANGE)
    return WEFT_ERANGE;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    mult = 1ULL << 10;
    end++;
    break;
  case 'M':
    mult = 1ULL << 20;
    end++;
    break;
  case 'G':
    mult = 1ULL << 30;
    end++;
    break;
  case 'T':
    mult = 1ULL << 40;
    end++;
    break;
  default: break;
  }
  if (toupper((unsigned char)*end) == 'B')
    end++;
  if (*end != '\0')
    return WEFT_EPARSE;
  if (v > SIZE_MAX / mult)
    return WEFT_ERANGE;
  *out = (size_t)(v * mult);
  return 0;
}

const char *weftx_datadir(void)
{
  const char *d = getenv("WEFT_DATADIR");
  return (d && *d) ? d : WEFT_PKGDATADIR;
}

int weftx_edit_distance(const char *a, const char *b, int nocase)
{
  enum { MAXW = 64 };
  int row[MAXW];
  size_t la = strnlen(a, MAXW - 1), lb = strnlen(b, MAXW - 1);

  for (size_t j = 0; j <= lb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int ca = (unsigned char)a[i - 1], cb = (unsigned char)b[j - 1];
      int best = diag + (nocase ? tolower(ca) != tolower(cb) : ca != cb);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

int64_t weftx_monotonic_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double weftx_monotonic(void) { return (double)weftx_monotonic_ns() * 1e-9; }
