/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host order from compact placement: physical_host is "/cluster/rack/host",
 * and sorting by it component by component puts hosts of one rack next to
 * each other, so that rings cross racks as few times as possible (what
 * Google's sort_nodes.py does for Slurm).
 */
#include "gcp_private.h"

#include <stdlib.h>
#include <string.h>

/* Compare a and b component by component; components compare as strings
 * (Google hashes them, so there are no numbers to compare as such). */
static int cmp_path(const char *a, const char *b)
{
  while (*a == '/')
    a++;
  while (*b == '/')
    b++;
  while (*a || *b) {
    size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
    int c = strncmp(a, b, la < lb ? la : lb);
    if (c == 0 && la != lb)
      c = la < lb ? -1 : 1;
    if (c != 0)
      return c;
    a += la;
    b += lb;
    while (*a == '/')
      a++;
    while (*b == '/')
      b++;
  }
  return 0;
}

struct item {
  const char *path;
  int index;
};

static int cmp_item(const void *x, const void *y)
{
  const struct item *a = x, *b = y;
  int c = cmp_path(a->path, b->path);

  return c ? c : a->index - b->index;
}

int weftx_gcp_order_hosts(const char *const *physical_host, int n, int *order)
{
  struct item *items;

  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = 0; i < n; i++)
    if (!physical_host[i] || !physical_host[i][0])
      return WEFT_ENOENT;
  if (n <= 1)
    return 0;
  items = malloc((size_t)n * sizeof(*items));
  if (!items)
    return WEFT_ENOMEM;
  for (int i = 0; i < n; i++) {
    items[i].path = physical_host[i];
    items[i].index = i;
  }
  qsort(items, (size_t)n, sizeof(*items), cmp_item);
  for (int i = 0; i < n; i++)
    order[i] = items[i].index;
  free(items);
  return 0;
}
