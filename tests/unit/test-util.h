/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the cmocka unit tests; include after <cmocka.h>. */
#ifndef WEFT_TEST_UTIL_H
#define WEFT_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

/* The whole of a (non-empty) file, NUL-terminated; the caller frees it. */
static inline char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  n = ftell(f);
  assert_true(n > 0);
  rewind(f);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

#endif /* WEFT_TEST_UTIL_H */
