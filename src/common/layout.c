/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rank-to-host layout: the one rule weftrun and weft-rank must agree on, and
 * its run-length spelling on the agent's command line; the GPUs of each host
 * spelled the same way.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

int wt_layout_host(const int *counts, int nhosts, int by_node, int rank, int *local)
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

int wt_layout_assign(const int *counts, int nhosts, int by_node, int np, int *host, int *local)
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

int wt_layout_parse(const char *s, int *counts, int max)
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

/* The i-th word of a list, into buf (or a string of the list's own). */
typedef const char *(*word_fn)(const void *items, int i, char *buf, size_t len);

/* The run-length spelling of n words, SEP between runs, a run of equal ones written
 * once with TIMES and its length; allocated, NULL when out of memory. */
static char *run_length(const void *items, int n, word_fn word, const char *sep, const char *times)
{
  char *buf = NULL, a[1100], b[1100];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  for (int h = 0; h < n;) {
    int run = 1;
    const char *w = word(items, h, a, sizeof(a));
    while (h + run < n && !strcmp(word(items, h + run, b, sizeof(b)), w))
      run++;
    fprintf(f, "%s%s", h ? sep : "", w);
    if (run > 1)
      fprintf(f, "%s%d", times, run);
    h += run;
  }
  if (fclose(f)) {
    free(buf);
    return NULL;
  }
  return buf;
}

static const char *count_word(const void *items, int i, char *buf, size_t len)
{
  snprintf(buf, len, "%d", ((const int *)items)[i]);
  return buf;
}

char *wt_layout_encode(const int *counts, int n)
{
  return run_length(counts, n, count_word, ",", "x");
}

static const char *set_word(const void *items, int i, char *buf, size_t len)
{
  const char *set = ((const char *const *)items)[i];
  (void)buf;
  (void)len;
  return !set ? "all" : !*set ? "none" : set;
}

char *wt_gpusets_encode(const char *const *sets, int n)
{
  return run_length(sets, n, set_word, ";", "*");
}

int wt_gpusets_host(const char *s, int h, char *buf, size_t len)
{
  if (h < 0 || !s)
    return -1;
  while (*s) {
    size_t n = strcspn(s, "*;");
    long times = 1;
    const char *end = s + n;
    if (*end == '*') {
      char *e;
      times = strtol(end + 1, &e, 10);
      if (e == end + 1 || end[1] == '-' || end[1] == '+' || times < 1)
        return -1;
      end = e;
    }
    if ((*end && *end != ';') || n == 0)
      return -1;
    int all = n == 3 && !strncmp(s, "all", 3), none = n == 4 && !strncmp(s, "none", 4);
    if (!all && !none && strspn(s, "0123456789,-") < n)
      return -1;
    if (h < times) {
      if (all)
        return 1;
      if ((none ? 0 : n) >= len)
        return -1;
      snprintf(buf, len, "%.*s", none ? 0 : (int)n, s);
      return 0;
    }
    h -= (int)times;
    s = *end ? end + 1 : end;
  }
  return -1;
}
