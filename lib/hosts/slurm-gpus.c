/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What Slurm says about a job's GPUs, as text: index lists ("0,1,4", or
 * "0-1,4" in scontrol's IDX:), the values of the --gpus* options ("h100:2")
 * GRES lists ("gres:gpu:2", "gpu:h100:2(IDX:0-1)", "gpu:8(S:0-1)"),
 * and the per-node detail lines of "scontrol show job -d". Pure parsing: which
 * variable or command holds which form, and what each means, is in
 * lib/weftx/hosts.h; reading them is the caller's business.
 */
#include "hosts-private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPUS_TOTAL_MAX 1000000L /* most GPUs a count or a sum of counts may give */

/* "NAME 'VALUE': message" in why; returns WEFT_EPARSE. */
#define gpus_error weft__hosts_value_error

static const char gres_form[] = "expected GRES like 'gpu:2' or 'gpu:h100:2(IDX:0-1)'";

/* A decimal number of at most 6 digits at *p; advances *p. -1 when none. */
static long number(const char **p)
{
  long v = 0;
  int digits = 0;

  while (**p >= '0' && **p <= '9') {
    if (++digits > 6)
      return -1;
    v = 10 * v + (**p - '0');
    (*p)++;
  }
  return digits ? v : -1;
}

/* Indices "0,1,4" or "0-1,4" from s up to end (not included). */
static int indices(const char *name, const char *all, const char *s, const char *end, int *idx,
                   int max, int *n, char *why, size_t whylen)
{
  unsigned char seen[WEFTX_SLURM_GPUS_MAX] = {0};
  const char *p = s;

  *n = 0;
  if (p == end)
    return 0;
  for (;;) {
    long lo = number(&p), hi = lo;
    if (lo >= 0 && p < end && *p == '-') {
      p++;
      hi = number(&p);
    }
    if (lo < 0 || hi < 0 || (p < end && *p != ','))
      return gpus_error(name, all, why, whylen, "expected GPU indices like '0,1,4' or '0-1,4'");
    if (hi < lo)
      return gpus_error(name, all, why, whylen, "range %ld-%ld goes backwards", lo, hi);
    if (hi >= WEFTX_SLURM_GPUS_MAX)
      return gpus_error(name, all, why, whylen, "GPU index %ld is %d or more", hi,
                        WEFTX_SLURM_GPUS_MAX);
    for (long i = lo; i <= hi; i++) {
      if (seen[i])
        return gpus_error(name, all, why, whylen, "GPU %ld is named twice", i);
      if (*n >= max) {
        if (why)
          weft__snprintf(why, whylen, "%s '%.200s': more than %d GPUs", name, all, max);
        return WEFT_ERANGE;
      }
      seen[i] = 1;
      idx[(*n)++] = (int)i;
    }
    if (p == end)
      return 0;
    p++;
    if (p == end)
      return gpus_error(name, all, why, whylen, "expected GPU indices like '0,1,4' or '0-1,4'");
  }
}

int weftx_slurm_gpu_indices(const char *name, const char *s, int *idx, int max, int *n, char *why,
                            size_t whylen)
{
  if (!name || !s || !idx || !n || max < 0)
    return WEFT_EINVAL;
  return indices(name, s, s, s + strlen(s), idx, max, n, why, whylen);
}

/* Whether c may be part of a GRES name or type ("gpu", "h100", "a100-80gb", "nvidia_h100"). */
static int word_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

int weftx_slurm_gpus_count(const char *name, const char *s, int *count, char *why, size_t whylen)
{
  const char *p = s;
  long total = 0;

  if (!name || !s || !count)
    return WEFT_EINVAL;
  *count = 0;
  for (;;) {
    /* [type:]count */
    const char *q = p;
    long v;
    while (word_char(*q))
      q++;
    if (*q == ':' && q > p)
      p = q + 1;
    v = number(&p);
    if (v < 0 || (*p != '\0' && *p != ','))
      return gpus_error(name, s, why, whylen, "expected a GPU count like '2' or 'h100:2'");
    total += v;
    if (total > GPUS_TOTAL_MAX)
      return gpus_error(name, s, why, whylen, "more than %ld GPUs", GPUS_TOTAL_MAX);
    if (*p == '\0')
      break;
    p++;
  }
  *count = (int)total;
  return 0;
}

/* The part of a GRES entry in parentheses, "(IDX:0-1)" or "(S:0-1)", from p
 * (after '(') to close (the ')'): adds the indices to out. */
static int gres_detail(const char *name, const char *s, const char *p, const char *close,
                       weftx_slurm_gres *out, char *why, size_t whylen)
{
  int n = 0, rc;

  if (close - p >= 2 && strncmp(p, "S:", 2) == 0)
    return 0; /* the sockets near the GPUs (sinfo) */
  if (close - p < 4 || strncmp(p, "IDX:", 4) != 0)
    return gpus_error(name, s, why, whylen, "'(%.*s)' is neither (IDX:...) nor (S:...)",
                      (int)(close - p), p);
  if (close == p + 4)
    return gpus_error(name, s, why, whylen, "no GPU index after 'IDX:'");
  if (out->nidx < 0)
    out->nidx = 0;
  rc = indices(name, s, p + 4, close, out->idx + out->nidx, WEFTX_SLURM_GPUS_MAX - out->nidx, &n,
               why, whylen);
  out->nidx += n;
  return rc;
}

int weftx_slurm_gres_gpus(const char *name, const char *s, weftx_slurm_gres *out, char *why,
                          size_t whylen)
{
  const char *p = s;
  int types = 0; /* 0 none yet, 1 one type so far, 2 several or untyped ones */

  if (!name || !s || !out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof(*out));
  out->nidx = -1;
  if (*s == '\0' || strcmp(s, "(null)") == 0 || strcmp(s, "N/A") == 0)
    return 0;
  for (;;) {
    /* [gres: | gres/]name[:type][:count][(detail)] */
    const char *f[3], *close = NULL;
    size_t flen[3];
    int nf = 0, had_idx = out->nidx < 0 ? 0 : out->nidx;
    long count = -1;

    if (strncmp(p, "gres:", 5) == 0 || strncmp(p, "gres/", 5) == 0)
      p += 5;
    for (;;) {
      const char *q = p;
      while (word_char(*q))
        q++;
      if (q == p || nf == 3)
        return gpus_error(name, s, why, whylen, "%s", gres_form);
      f[nf] = p;
      flen[nf++] = (size_t)(q - p);
      p = q;
      if (*p != ':')
        break;
      p++;
    }
    if (*p == '(') {
      close = strchr(p, ')');
      if (!close)
        return gpus_error(name, s, why, whylen, "'(' without ')'");
    }
    if (flen[0] == 3 && strncmp(f[0], "gpu", 3) == 0) {
      const char *type = NULL;
      size_t tlen = 0;
      if (nf >= 2) {
        const char *last = f[nf - 1];
        count = number(&last);
        if (last != f[nf - 1] + flen[nf - 1])
          count = -1;
        if (count < 0 && nf == 3)
          return gpus_error(name, s, why, whylen, "'%.*s' is not a GPU count", (int)flen[2], f[2]);
        if (count < 0 || nf == 3) {
          type = f[1];
          tlen = flen[1];
        }
      }
      if (close) {
        int rc = gres_detail(name, s, p + 1, close, out, why, whylen);
        if (rc)
          return rc;
      }
      if (count < 0)
        count = out->nidx > had_idx ? out->nidx - had_idx : 1;
      else if (out->nidx > had_idx && out->nidx - had_idx != count)
        return gpus_error(name, s, why, whylen, "%ld GPUs but %d indices", count,
                          out->nidx - had_idx);
      int same = types == 0 || (types == 1 && type && strlen(out->type) == tlen &&
                                strncmp(out->type, type, tlen) == 0);
      if (type && tlen < sizeof(out->type) && same) {
        memcpy(out->type, type, tlen);
        out->type[tlen] = '\0';
        types = 1;
      } else {
        out->type[0] = '\0';
        types = 2;
      }
      if (out->count + count > GPUS_TOTAL_MAX)
        return gpus_error(name, s, why, whylen, "more than %ld GPUs", GPUS_TOTAL_MAX);
      out->count += (int)count;
    }
    if (close)
      p = close + 1;
    if (*p == '\0')
      return 0;
    if (*p != ',')
      return gpus_error(name, s, why, whylen, "%s", gres_form);
    p++;
  }
}

int weftx_slurm_gpu_list(const int *idx, int n, char *buf, size_t len)
{
  size_t used = 0;

  if (!buf || len == 0 || n < 0 || (n > 0 && !idx))
    return WEFT_EINVAL;
  buf[0] = '\0';
  for (int i = 0; i < n;) {
    int j = i, rc;
    while (j + 1 < n && idx[j + 1] == idx[j] + 1)
      j++;
    if (j > i)
      rc = weft__snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", idx[i], idx[j]);
    else
      rc = weft__snprintf(buf + used, len - used, "%s%d", used ? "," : "", idx[i]);
    if (rc)
      return WEFT_ERANGE;
    used += strlen(buf + used);
    i = j + 1;
  }
  return 0;
}

/* "3-4,6" of n indices, allocated. */
static char *index_list(const int *idx, int n)
{
  size_t len = (size_t)n * 12 + 1;
  char *s = malloc(len);

  if (s && weftx_slurm_gpu_list(idx, n, s, len) != 0) {
    free(s);
    s = NULL;
  }
  return s;
}

/* The value of " KEY=" on a line (from p, which follows a character of it, to end), as a
 * pointer and a length; NULL when absent. */
static const char *field(const char *p, const char *end, const char *key, size_t *len)
{
  size_t k = strlen(key);

  for (; p + k <= end; p++)
    if ((p[-1] == ' ' || p[-1] == '\t') && !strncmp(p, key, k)) {
      const char *v = p + k;
      *len = 0;
      while (v + *len < end && v[*len] != ' ' && v[*len] != '\t')
        (*len)++;
      return v;
    }
  return NULL;
}

/* One detail line "Nodes=LIST ... GRES=..." (from line to end) into the entries. */
static int detail_line(const char *line, const char *end, int lineno, weftx_slurm_node_gpus **v,
                       int *n, char *why, size_t whylen)
{
  char nodes[4096], gres[1024], inner[400] = "";
  size_t nlen, glen = 0;
  const char *nv = line + 6, *gv;
  weftx_slurm_gres g;
  weftx_hostlist *hl = NULL;
  int rc, count, more;

  for (nlen = 0; nv + nlen < end && nv[nlen] != ' ' && nv[nlen] != '\t'; nlen++)
    ;
  gv = field(nv, end, "GRES=", &glen);
  if (nlen == 0 || nlen >= sizeof(nodes) || glen >= sizeof(gres)) {
    if (why)
      weft__snprintf(why, whylen,
                     "scontrol show job -d, line %d: '%.*s': expected "
                     "'Nodes=LIST ... GRES=...'",
                     lineno, (int)(end - line < 200 ? end - line : 200), line);
    return WEFT_EPARSE;
  }
  memcpy(nodes, nv, nlen);
  nodes[nlen] = '\0';
  memcpy(gres, gv ? gv : "", glen);
  gres[glen] = '\0';
  rc = weftx_slurm_gres_gpus("GRES", gres, &g, inner, sizeof(inner));
  if (rc == 0)
    rc = weftx_hostlist_create(&hl);
  if (rc == 0)
    rc = weftx_hosts_parse_slurm(hl, nodes, NULL, inner, sizeof(inner));
  if (rc) {
    if (why && rc != WEFT_ENOMEM)
      weft__snprintf(why, whylen, "scontrol show job -d, line %d: %s", lineno, inner);
    weftx_hostlist_destroy(hl);
    return rc == WEFT_ENOMEM ? rc : WEFT_EPARSE;
  }
  count = weftx_hostlist_count(hl);
  more = *n + count;
  weftx_slurm_node_gpus *grown = realloc(*v, (size_t)(more > 0 ? more : 1) * sizeof(*grown));
  if (!grown) {
    weftx_hostlist_destroy(hl);
    return WEFT_ENOMEM;
  }
  *v = grown;
  for (int i = 0; i < count; i++) {
    weftx_slurm_node_gpus *e = &grown[*n];
    e->count = g.count;
    e->name = strdup(weftx_hostlist_host(hl, i)->name);
    e->idx = g.nidx >= 0 || g.count == 0 ? index_list(g.idx, g.nidx > 0 ? g.nidx : 0) : NULL;
    if (!e->name || ((g.nidx >= 0 || g.count == 0) && !e->idx)) {
      free(e->name);
      free(e->idx);
      weftx_hostlist_destroy(hl);
      return WEFT_ENOMEM;
    }
    (*n)++;
  }
  weftx_hostlist_destroy(hl);
  return 0;
}

int weftx_slurm_job_gpus(const char *text, weftx_slurm_node_gpus **out, int *n, char *why,
                         size_t whylen)
{
  const char *p = text;
  int lineno = 0, rc = 0;

  if (!text || !out || !n)
    return WEFT_EINVAL;
  *out = NULL;
  *n = 0;
  while (*p && rc == 0) {
    const char *end = p + strcspn(p, "\n"), *q = p;
    lineno++;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    if (end - q > 6 && !strncmp(q, "Nodes=", 6))
      rc = detail_line(q, end, lineno, out, n, why, whylen);
    p = *end ? end + 1 : end;
  }
  if (rc) {
    weftx_slurm_job_gpus_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

void weftx_slurm_job_gpus_free(weftx_slurm_node_gpus *v, int n)
{
  for (int i = 0; v && i < n; i++) {
    free(v[i].name);
    free(v[i].idx);
  }
  free(v);
}
