/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one check of weft-rank --check found: "KEY VALUE" strings, kept until
 * the check is done and then printed as records (check.c), so that a check
 * that misses its deadline prints nothing half-made.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void wk_fact(wk_facts *f, const char *key, const char *fmt, ...)
{
  char value[1024], *line = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(value, sizeof(value), fmt, ap);
  va_end(ap);
  if (f->n == f->cap) {
    int cap = f->cap ? 2 * f->cap : 16;
    char **v = realloc(f->v, (size_t)cap * sizeof(*v));
    if (!v)
      return; /* out of memory: the fact is lost, and its column shows nothing */
    f->v = v;
    f->cap = cap;
  }
  size_t n = strlen(key) + strlen(value) + 2;
  if ((line = malloc(n))) {
    snprintf(line, n, "%s %s", key, value);
    f->v[f->n++] = line;
  }
}

void wk_fact_raw(wk_facts *f, const char *key, const char *data, size_t len)
{
  wk_fact(f, key, "%s", "");
  if (f->n == 0 || strncmp(f->v[f->n - 1], key, strlen(key)))
    return;
  size_t k = strlen(key) + 1;
  char *line = realloc(f->v[f->n - 1], k + len + 1);
  if (!line)
    return;
  memcpy(line + k, data, len);
  line[k + len] = '\0';
  f->v[f->n - 1] = line;
}
