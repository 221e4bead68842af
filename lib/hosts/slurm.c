/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Slurm's compressed host lists ("gpu[01-04,07]", "a[1-2]-b[3-4]",
 * "n1,n[3-5],x") and per-node counts ("2(x3),1"), as SLURM_JOB_NODELIST,
 * SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE hold them. Brackets
 * expand as nested loops with the last bracket fastest; a range keeps the
 * width of its first number ("[08-10]" gives 08 09 10).
 */
#include "hosts-private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARTS_MAX 8 /* brackets in one entry */
#define NUM_DIGITS_MAX 9

struct range {
  long lo, hi;
  int width;
};

/* One bracket or one literal run of an entry. */
struct part {
  const char *lit; /* literal text (not terminated), or NULL for a bracket */
  size_t litlen;
  struct range r[64];
  int nr;
};

struct entry {
  struct part p[2 * PARTS_MAX + 1];
  int np;
};

#define slurm_error(list, why, whylen, ...)                                                        \
  weft__hosts_value_error("SLURM_JOB_NODELIST", list, why, whylen, __VA_ARGS__)

int weft__hosts_value_error(const char *name, const char *value, char *why, size_t whylen,
                            const char *fmt, ...)
{
  char msg[300];
  va_list ap;

  if (why) {
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    weft__snprintf(why, whylen, "%s '%.200s': %s", name, value, msg);
  }
  return WEFT_EPARSE;
}

static int parse_num(const char *s, size_t len, long *v)
{
  long x = 0;

  if (len == 0 || len > NUM_DIGITS_MAX)
    return WEFT_EPARSE;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return WEFT_EPARSE;
    x = 10 * x + (s[i] - '0');
  }
  *v = x;
  return 0;
}

/* "01-04" or "7" */
static int parse_range(const char *s, size_t len, struct range *r)
{
  const char *dash = memchr(s, '-', len);

  if (!dash) {
    if (parse_num(s, len, &r->lo))
      return WEFT_EPARSE;
    r->hi = r->lo;
  } else if (parse_num(s, (size_t)(dash - s), &r->lo) ||
             parse_num(dash + 1, len - (size_t)(dash - s) - 1, &r->hi) || r->hi < r->lo) {
    return WEFT_EPARSE;
  }
  r->width = (int)(dash ? (size_t)(dash - s) : len);
  return 0;
}

/* The inside of one bracket, "01-04,07", into \p p. */
static int parse_bracket(const char *list, const char *s, size_t len, struct part *p, char *why,
                         size_t whylen)
{
  char text[128];
  const char *end = s + len;

  weft__snprintf(text, sizeof(text), "[%.*s]", (int)(len > 100 ? 100 : len), s);
  p->lit = NULL;
  p->nr = 0;
  while (s <= end) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    size_t n = comma ? (size_t)(comma - s) : (size_t)(end - s);
    if (p->nr == (int)(sizeof(p->r) / sizeof(p->r[0])))
      return slurm_error(list, why, whylen, "%s has more than 64 ranges", text);
    if (parse_range(s, n, &p->r[p->nr]))
      return slurm_error(list, why, whylen,
                         "%s: a range is N or LO-HI with LO <= HI, up to 9 digits", text);
    p->nr++;
    if (!comma)
      break;
    s = comma + 1;
  }
  return 0;
}

/* One entry "a[1-2]-b[3-4]" (len characters at s) into \p e. */
static int parse_entry(const char *list, const char *s, size_t len, struct entry *e, char *why,
                       size_t whylen)
{
  const char *end = s + len;

  e->np = 0;
  if (len == 0)
    return slurm_error(list, why, whylen, "empty host name between commas");
  while (s < end) {
    const char *open = memchr(s, '[', (size_t)(end - s)), *close;
    if (e->np >= 2 * PARTS_MAX)
      return slurm_error(list, why, whylen, "more than 8 brackets in one name");
    if (open != s) {
      struct part *p = &e->p[e->np++];
      p->lit = s;
      p->litlen = open ? (size_t)(open - s) : (size_t)(end - s);
      if (memchr(s, ']', p->litlen))
        return slurm_error(list, why, whylen, "']' without '['");
      if (!open)
        break;
    }
    close = memchr(open, ']', (size_t)(end - open));
    if (!close)
      return slurm_error(list, why, whylen, "'[' without ']'");
    if (memchr(open + 1, '[', (size_t)(close - open - 1)))
      return slurm_error(list, why, whylen, "nested brackets");
    if (parse_bracket(list, open + 1, (size_t)(close - open - 1), &e->p[e->np++], why, whylen))
      return WEFT_EPARSE;
    s = close + 1;
  }
  return 0;
}

static long entry_count(const struct entry *e)
{
  long n = 1;

  for (int i = 0; i < e->np; i++) {
    long k = 0;
    if (e->p[i].lit)
      continue;
    for (int j = 0; j < e->p[i].nr; j++)
      k += e->p[i].r[j].hi - e->p[i].r[j].lo + 1;
    if (k > WEFTX_SLURM_HOSTS_MAX || n * k > WEFTX_SLURM_HOSTS_MAX)
      return WEFTX_SLURM_HOSTS_MAX + 1L;
    n *= k;
  }
  return n;
}

/* The \p k-th value (0-based) of bracket \p p, with its width. */
static void bracket_value(const struct part *p, long k, long *v, int *width)
{
  for (int j = 0; j < p->nr; j++) {
    long n = p->r[j].hi - p->r[j].lo + 1;
    if (k < n) {
      *v = p->r[j].lo + k;
      *width = p->r[j].width;
      return;
    }
    k -= n;
  }
}

static long bracket_size(const struct part *p)
{
  long n = 0;

  for (int j = 0; j < p->nr; j++)
    n += p->r[j].hi - p->r[j].lo + 1;
  return n;
}

/* Host number \p idx of \p e into \p buf; last bracket fastest. */
static int entry_name(const struct entry *e, long idx, char *buf, size_t len)
{
  char piece[WEFTX_HOSTNAME_MAX + 2];
  size_t used = 0;
  long stride[2 * PARTS_MAX + 1], s = 1;

  for (int i = e->np - 1; i >= 0; i--) {
    stride[i] = s;
    if (!e->p[i].lit)
      s *= bracket_size(&e->p[i]);
  }
  for (int i = 0; i < e->np; i++) {
    const struct part *p = &e->p[i];
    if (p->lit) {
      if (weft__snprintf(piece, sizeof(piece), "%.*s", (int)p->litlen, p->lit))
        return WEFT_ERANGE;
    } else {
      long v = 0;
      int w = 0;
      bracket_value(p, (idx / stride[i]) % bracket_size(p), &v, &w);
      weft__snprintf(piece, sizeof(piece), "%0*ld", w, v);
    }
    if (used + strlen(piece) >= len)
      return WEFT_ERANGE;
    memcpy(buf + used, piece, strlen(piece) + 1);
    used += strlen(piece);
  }
  return 0;
}

/* Split \p list at top-level commas and call \p fn on each entry. */
static int expand(weftx_hostlist *hl, const char *list, const int *counts, int ncounts,
                  long *nhosts, char *why, size_t whylen)
{
  struct entry *e = malloc(sizeof(*e));
  const char *s = list;
  char name[WEFTX_HOSTNAME_MAX + 2], reason[300];
  int rc = 0;

  if (!e)
    return WEFT_ENOMEM;
  *nhosts = 0;
  while (rc == 0) {
    const char *p = s;
    int depth = 0;
    long n;
    for (; *p && (*p != ',' || depth); p++)
      depth += (*p == '[') - (*p == ']');
    rc = parse_entry(list, s, (size_t)(p - s), e, why, whylen);
    if (rc)
      break;
    n = entry_count(e);
    if (*nhosts + n > WEFTX_SLURM_HOSTS_MAX) {
      rc = slurm_error(list, why, whylen, "expands to more than 100000 hosts");
      break;
    }
    for (long k = 0; k < n && rc == 0; k++, (*nhosts)++) {
      int slots = counts && *nhosts < ncounts ? counts[*nhosts] : 0;
      if (entry_name(e, k, name, sizeof(name))) {
        rc = slurm_error(list, why, whylen, "a host name would be longer than 253 characters");
        break;
      }
      rc = weftx_hostlist_add(hl, name, slots, 0, "SLURM_JOB_NODELIST", reason, sizeof(reason));
      if (rc && why)
        weft__snprintf(why, whylen, "SLURM_JOB_NODELIST: %s", reason);
    }
    if (!*p)
      break;
    s = p + 1;
  }
  free(e);
  return rc;
}

int weftx_slurm_tasks_per_node(const char *s, int *counts, int max, int *n, char *why,
                               size_t whylen)
{
  return weftx_slurm_per_node("SLURM_TASKS_PER_NODE", s, counts, max, n, why, whylen);
}

int weftx_slurm_per_node(const char *name, const char *s, int *counts, int max, int *n, char *why,
                         size_t whylen)
{
  const char *p = s;

  if (!name || !s || !counts || !n)
    return WEFT_EINVAL;
  *n = 0;
  for (;;) {
    char *end;
    long v = strtol(p, &end, 10), rep = 1;
    if (end == p || *p < '0' || *p > '9' || v < 1 || v > WEFTX_HOSTS_SLOTS_MAX)
      goto bad;
    p = end;
    if (*p == '(') {
      if (p[1] != 'x' || p[2] < '0' || p[2] > '9')
        goto bad;
      rep = strtol(p + 2, &end, 10);
      if (*end != ')' || rep < 1 || rep > WEFTX_SLURM_HOSTS_MAX)
        goto bad;
      p = end + 1;
    }
    if (*n + rep > max) {
      if (why)
        weft__snprintf(why, whylen, "%s '%.200s': more than %d counts", name, s, max);
      return WEFT_ERANGE;
    }
    while (rep-- > 0)
      counts[(*n)++] = (int)v;
    if (*p == '\0')
      return 0;
    if (*p != ',')
      goto bad;
    p++;
  }
bad:
  if (why)
    weft__snprintf(why, whylen, "%s '%.200s': expected counts like '2(x3),1'", name, s);
  return WEFT_EPARSE;
}

int weftx_hosts_parse_slurm(weftx_hostlist *hl, const char *nodelist, const char *tasks_per_node,
                            char *why, size_t whylen)
{
  int *counts = NULL, ncounts = 0, rc;
  long nhosts = 0;

  if (!hl || !nodelist)
    return WEFT_EINVAL;
  if (tasks_per_node) {
    counts = malloc(WEFTX_SLURM_HOSTS_MAX * sizeof(*counts));
    if (!counts)
      return WEFT_ENOMEM;
    rc = weftx_slurm_tasks_per_node(tasks_per_node, counts, WEFTX_SLURM_HOSTS_MAX, &ncounts, why,
                                    whylen);
    if (rc)
      goto out;
  }
  rc = expand(hl, nodelist, counts, ncounts, &nhosts, why, whylen);
  if (rc == 0 && counts && nhosts != ncounts) {
    if (why)
      weft__snprintf(why, whylen,
                     "SLURM_TASKS_PER_NODE '%.100s' gives %d counts for %ld hosts "
                     "of SLURM_JOB_NODELIST; unset one of them or fix them",
                     tasks_per_node, ncounts, nhosts);
    rc = WEFT_EPARSE;
  }
  if (rc == 0)
    weft__hostlist_set_origin(hl, WEFTX_HOSTS_SLURM);
out:
  free(counts);
  return rc;
}
