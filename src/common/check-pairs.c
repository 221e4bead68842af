/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pair rule of weftrun --check (agent.h): which hosts one host opens a
 * TCP connection to. Every agent evaluates it for itself from its index and
 * the number of hosts, and weftrun's man page states it; nothing ships a
 * list of pairs.
 */
#include "config.h"

#include "agent.h"

static void add(int *out, int *k, int max, int me, int n, long j)
{
  int t = (int)(((j % n) + n) % n);
  if (t == me || *k >= max)
    return;
  for (int i = 0; i < *k; i++)
    if (out[i] == t)
      return;
  out[(*k)++] = t;
}

int wt_check_targets(int me, int n, int *out, int max)
{
  int k = 0;
  if (n < 2 || me < 0 || me >= n || max <= 0)
    return 0;
  if (n <= WT_CHECK_ALL_PAIRS) {
    for (int j = 0; j < n && k < max; j++)
      if (j != me)
        out[k++] = j;
    return k;
  }
  add(out, &k, max, me, n, (long)me - 1);
  add(out, &k, max, me, n, (long)me + 1);
  add(out, &k, max, me, n, 0);
  add(out, &k, max, me, n, (long)me + n / 4);
  add(out, &k, max, me, n, (long)me + n / 2);
  add(out, &k, max, me, n, (long)me + 3L * n / 4);
  /* one more, spread by a multiplicative hash of the index (Knuth's constant) */
  unsigned long h = (unsigned long)me * 2654435761UL;
  add(out, &k, max, me, n, (long)me + 1 + (long)((h >> 7) % (unsigned long)(n - 1)));
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return k;
}
