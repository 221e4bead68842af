/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rank-to-host layout: the one rule weftrun and weft-rank must agree on.
 */
#include "config.h"

#include <stdlib.h>

#include "layout.h"

int
weft_layout_host(const int *counts, int nhosts, int by_node, int rank, int *local)
{
  if (rank < 0)
    return -1;
  if (!by_node) {
    for (int h = 0; h < nhosts; h++) {
      if (rank < counts[h]) {
        *local = rank;
        return h;
      }
      rank -= counts[h];
    }
    return -1;
  }
  int most = 0;
  for (int h = 0; h < nhosts; h++)
    if (counts[h] > most)
      most = counts[h];
  for (int round = 0, r = 0; round < most; round++)
    for (int h = 0; h < nhosts; h++) {
      if (round >= counts[h])
        continue;
      if (r++ == rank) {
        *local = round;
        return h;
      }
    }
  return -1;
}

int
weft_layout_parse(const char *s, int *counts, int max)
{
  int n = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v > 1000000 || n >= max)
      return -1;
    counts[n++] = (int)v;
    if (*end == ',')
      end++;
    else if (*end)
      return -1;
    s = end;
  }
  return n;
}
