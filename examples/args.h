/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the examples share beside libweft's public API: a strict number parser
 * for their options (libweft's own parser is internal to weft's tools), and
 * the loop that reads "--name VALUE" numbers and "--name" flags.
 */
#ifndef WEFT_EXAMPLE_ARGS_H
#define WEFT_EXAMPLE_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

/* A whole decimal number in [min, max]; 0, WEFT_EPARSE or WEFT_ERANGE. */
static inline int example_parse_long(const char *s, long min, long max, long *out)
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

/* One option: "--name VALUE" (num set: a number in [min, max]) or "--name"
 * (flag set to 1). A table ends with a NULL name. */
struct example_opt {
  const char *name;
  long *num;
  int *flag;
  long min, max;
};

/* Reads argv against the table: 0, 1 after --help (usage printed), or -1
 * after a bad option (said on stderr, prefixed with prog). */
static inline int example_options(const char *prog, const char *usage, int argc, char **argv,
                                  const struct example_opt *opts)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const struct example_opt *o = opts;
    int rc;

    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 1;
    }
    while (o->name && strcmp(a, o->name))
      o++;
    if (!o->name) {
      fprintf(stderr, "%s: unknown option '%s'; see %s --help\n", prog, a, prog);
      return -1;
    }
    if (o->flag) {
      *o->flag = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: option %s needs a value\n", prog, a);
      return -1;
    }
    rc = example_parse_long(argv[++i], o->min, o->max, o->num);
    if (rc) {
      fprintf(stderr, "%s: bad value '%s' for %s: %s (%ld to %ld)\n", prog, argv[i], a,
              weft_strerror(rc), o->min, o->max);
      return -1;
    }
  }
  return 0;
}

#endif /* WEFT_EXAMPLE_ARGS_H */
