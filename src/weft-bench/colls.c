/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry of weft-bench's collectives. Adding one is: its coll-NAME.c
 * (a struct bench_coll named bench_NAME), one line of BENCH_COLLS below, its
 * source in Makefile.am and its entry in weft-bench(1). The command words,
 * --help, the messages, scale and the report take everything else from the
 * struct, so no other file names a collective.
 */
#include <stdio.h>
#include <string.h>

#include "driver.h"

/* In --help's order; the first is the default of scale --coll. */
#define BENCH_COLLS(X)                                                                             \
  X(allreduce)                                                                                     \
  X(allgather)                                                                                     \
  X(reduce_scatter)                                                                                \
  X(broadcast)                                                                                     \
  X(alltoall)                                                                                      \
  X(sendrecv)                                                                                      \
  X(bucket)

#define DECLARE(name) extern const struct bench_coll bench_##name;
#define ENTRY(name) &bench_##name,
BENCH_COLLS(DECLARE)
const struct bench_coll *const bench_colls[] = {BENCH_COLLS(ENTRY) NULL};

const struct bench_coll *bench_coll_find(const char *name)
{
  for (int i = 0; bench_colls[i]; i++)
    if (!strcmp(name, bench_colls[i]->name) || !strcmp(name, bench_colls[i]->alias))
      return bench_colls[i];
  return NULL;
}

const struct bench_coll *bench_coll_pairwise(void)
{
  for (int i = 0; bench_colls[i]; i++)
    if (bench_colls[i]->pairwise)
      return bench_colls[i];
  return NULL;
}

void bench_coll_names(char *buf, size_t len)
{
  size_t used = 0;

  buf[0] = '\0';
  for (int i = 0; bench_colls[i] && used < len; i++) {
    int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", bench_colls[i]->name);

    if (n < 0)
      break;
    used += (size_t)n;
  }
}

void bench_coll_unknown(const char *name, const char *more, char *why, size_t whylen)
{
  char names[256];
  const char *best = NULL;
  int bestd = 3; /* two edits at most: "allreduse", "reduce-scatter" */

  for (int i = 0; bench_colls[i]; i++) {
    const char *words[2] = {bench_colls[i]->name, bench_colls[i]->alias};

    for (int k = 0; k < 2; k++) {
      int d = weftx_edit_distance(name, words[k], 0);

      if (d < bestd) {
        bestd = d;
        best = bench_colls[i]->name;
      }
    }
  }
  bench_coll_names(names, sizeof(names));
  if (best)
    snprintf(why, whylen,
             "unknown collective '%s'; did you mean '%s'? (weft-bench --help "
             "lists them all)",
             name, best);
  else
    snprintf(why, whylen, "unknown collective '%s': use %s%s%s", name, names, more ? ", " : "",
             more ? more : "");
}
