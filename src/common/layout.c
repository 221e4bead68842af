/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rank-to-host layout: the one rule weftrun and weft-rank must agree on, and
 * its run-length spelling on the agent's command line.
 */
#include "config.h"

#include <stdio.h>
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
weft_layout_assign(const int *counts, int nhosts, int by_node, int np, int *host, int *local)
{
  int r = 0;
  if (!by_node) {
    for (int h = 0; h < nhosts; h++)
      for (int i = 0; i < counts[h] && r < np; i++, r++) {
        host[r] = h;
        local[r] = i;
      }
    return 0;
  }
  /* round by round over the hosts that still have room, dropping the full ones */
  int *live = malloc((size_t)(nhosts ? nhosts : 1) * sizeof(*live)), n = 0;
  if (!live)
    return -1;
  for (int h = 0; h < nhosts; h++)
    if (counts[h] > 0)
      live[n++] = h;
  for (int round = 0; n > 0 && r < np; round++) {
    int kept = 0;
    for (int i = 0; i < n && r < np; i++, r++) {
      host[r] = live[i];
      local[r] = round;
      if (counts[live[i]] > round + 1)
        live[kept++] = live[i];
    }
    n = kept;
  }
  free(live);
  return 0;
}

int
weft_layout_parse(const char *s, int *counts, int max)
{
  int n = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10), times = 1;
    if (end == s || *s == '-' || *s == '+' || v < 0 || v > 1000000)
      return -1;
    if (*end == 'x') {
      const char *t = end + 1;
      times = strtol(t, &end, 10);
      if (end == t || *t == '-' || *t == '+' || times < 1 || times > max)
        return -1;
    }
    if (times > max - n)
      return -1;
    while (times-- > 0)
      counts[n++] = (int)v;
    if (*end == ',' && end[1])
      end++;
    else if (*end)
      return -1;
    s = end;
  }
  return n;
}

char *
weft_layout_encode(const int *counts, int n)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  for (int h = 0; h < n;) {
    int run = 1;
    while (h + run < n && counts[h + run] == counts[h])
      run++;
    if (run > 1)
      fprintf(f, "%s%dx%d", h ? "," : "", counts[h], run);
    else
      fprintf(f, "%s%d", h ? "," : "", counts[h]);
    h += run;
  }
  if (fclose(f)) {
    free(buf);
    return NULL;
  }
  return buf;
}
