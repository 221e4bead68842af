/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which rank is a straggler (weftrun --monitor): one whose CPU use stays
 * well below its peers' for several samples in a row. The rule, pure and
 * unit-tested: a sample counts as low when the rank's use is below
 * WR_STRAGGLE_RATIO of the median of every rank's latest use, and that
 * median is at least WR_STRAGGLE_FLOOR_PM (an idle job has no stragglers);
 * WR_STRAGGLE_SAMPLES low samples in a row make the rank a straggler, named
 * once. A rank that ran alone has no peers and is never one. The timeline's
 * picture marks the ranks this rule named while the job ran (monitor.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "monitor.h"

int wr_straggle_init(wr_straggle *st, int n)
{
  memset(st, 0, sizeof(*st));
  st->n = n;
  st->low = calloc((size_t)(n > 0 ? n : 1), sizeof(*st->low));
  st->flagged = calloc((size_t)(n > 0 ? n : 1), sizeof(*st->flagged));
  if (!st->low || !st->flagged) {
    wr_straggle_free(st);
    return -1;
  }
  return 0;
}

void wr_straggle_free(wr_straggle *st)
{
  free(st->low);
  free(st->flagged);
  st->low = NULL;
  st->flagged = NULL;
}

static int cmp64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int64_t wr_median(const int64_t *v, int n, int64_t *scratch)
{
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] >= 0)
      scratch[k++] = v[i];
  if (k < 2)
    return -1;
  qsort(scratch, (size_t)k, sizeof(*scratch), cmp64);
  return k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2;
}

/* Is \p use low against \p median (of its peers' uses)? */
static int low(int64_t use, int64_t median)
{
  return use >= 0 && median >= WR_STRAGGLE_FLOOR_PM &&
         (double)use < WR_STRAGGLE_RATIO * (double)median;
}

int wr_straggle_step(wr_straggle *st, int rank, int64_t use, int64_t median)
{
  if (rank < 0 || rank >= st->n || use < 0)
    return 0;
  if (!low(use, median)) {
    st->low[rank] = 0;
    return 0;
  }
  if (++st->low[rank] < WR_STRAGGLE_SAMPLES || st->flagged[rank])
    return 0;
  st->flagged[rank] = 1;
  return 1;
}
