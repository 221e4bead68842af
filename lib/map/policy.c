/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --map-by and --bind-to as users type them, in Open MPI's spelling, to a
 * weftx_policy and back. Words are case-insensitive; modifiers follow the
 * mapping after ':' or ',' ("core:PE=2,OVERSUBSCRIBE", "ppr:2:socket:pe=4").
 * An unknown word is an error that names the closest known one.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct name_value {
  const char *name;
  int value;
};

static const struct name_value map_names[] = {
  {"gpu", WEFTX_MAP_GPU},         {"core", WEFTX_MAP_CORE},
  {"numa", WEFTX_MAP_NUMA},       {"package", WEFTX_MAP_PACKAGE},
  {"socket", WEFTX_MAP_PACKAGE},  {"slot", WEFTX_MAP_SLOT},
  {"node", WEFTX_MAP_NODE},       {"ppr", WEFTX_MAP_PPR},
  {"hwthread", WEFTX_MAP_CORE},   {"auto", WEFTX_MAP_AUTO},
};

static const struct name_value bind_names[] = {
  {"gpu-local", WEFTX_BIND_GPU_LOCAL}, {"core", WEFTX_BIND_CORE},
  {"numa", WEFTX_BIND_NUMA},           {"package", WEFTX_BIND_PACKAGE},
  {"socket", WEFTX_BIND_PACKAGE},      {"none", WEFTX_BIND_NONE},
};

static const struct name_value obj_names[] = {
  {"core", WEFTX_OBJ_CORE},       {"numa", WEFTX_OBJ_NUMA},
  {"package", WEFTX_OBJ_PACKAGE}, {"socket", WEFTX_OBJ_PACKAGE},
  {"gpu", WEFTX_OBJ_GPU},         {"node", WEFTX_OBJ_NODE},
};

/* Map modifiers; "pe=" is handled apart because it carries a number. */
static const char *const map_mods[] = {
  "pe=", "oversubscribe", "nooversubscribe", "hwtcpus", "span", "nolocal",
};
/* Bind modifiers Open MPI accepts and weft has nothing to do for. */
static const char *const bind_mods[] = {
  "overload-allowed", "if-supported", "ordered", "report",
};

static const char *closest_d(const char *word, const char *const *names, size_t n, size_t *dist)
{
  const char *best = names[0];
  size_t bestd = (size_t)-1, i;

  for (i = 0; i < n; i++) {
    size_t d = (size_t)weftx_edit_distance(word, names[i], 1);
    if (d < bestd) {
      bestd = d;
      best = names[i];
    }
  }
  if (dist)
    *dist = bestd;
  return best;
}

static const char *closest(const char *word, const char *const *names, size_t n)
{
  return closest_d(word, names, n, NULL);
}

static int lookup(const struct name_value *t, size_t n, const char *word, int *value,
                  const char *what, char *why, size_t whylen)
{
  const char *names[16], *best;
  char known[160] = "";
  size_t i, d, used = 0;

  for (i = 0; i < n; i++) {
    if (strcasecmp(t[i].name, word) == 0) {
      *value = t[i].value;
      return 0;
    }
    names[i] = t[i].name;
  }
  best = closest_d(word, names, n, &d);
  if (d <= 2) {
    weft__snprintf(why, whylen, "unknown %s '%s'; did you mean '%s'?", what, word, best);
    return WEFT_ENAME;
  }
  /* Far from every name: list them, the closest first. */
  for (i = 0; i < n && used + 1 < sizeof(known); i++) {
    weft__snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                   strcmp(names[i], "ppr") == 0 ? "ppr:N:OBJ" : names[i]);
    used += strlen(known + used);
  }
  weft__snprintf(why, whylen, "unknown %s '%s' (closest: '%s'); use one of %s", what, word,
                 best, known);
  return WEFT_ENAME;
}

/* Split \p s at ':' and ',' into at most \p max words in \p buf. */
static int split(const char *s, char *buf, size_t buflen, char **words, int max)
{
  int n = 0;
  char *p;

  if (weft__snprintf(buf, buflen, "%s", s) != 0)
    return -1;
  p = buf;
  for (;;) {
    char *end = p + strcspn(p, ":,");
    int last = (*end == '\0');
    if (n == max)
      return -1;
    *end = '\0';
    words[n++] = p;
    if (last)
      break;
    p = end + 1;
  }
  return n;
}

#define COUNT_MAX (1 << 20)

static int parse_count(const char *s, const char *what, const char *all, int *out,
                       char *why, size_t whylen)
{
  long v;
  int rc = weftx_parse_long(s, 1, COUNT_MAX, &v);

  if (rc != 0) {
    weft__snprintf(why, whylen, "%s '%s' in '%s' is not a whole number from 1 to %d", what, s,
                   all, COUNT_MAX);
    return WEFT_EPARSE;
  }
  *out = (int)v;
  return 0;
}

static int parse_map_mod(weftx_policy *p, const char *mod, const char *all, char *why,
                         size_t whylen)
{
  if (strncasecmp(mod, "pe=", 3) == 0)
    return parse_count(mod + 3, "pe", all, &p->pe, why, whylen);
  if (strcasecmp(mod, "oversubscribe") == 0)
    p->oversubscribe = 1;
  else if (strcasecmp(mod, "nooversubscribe") == 0)
    p->oversubscribe = 0;
  else if (strcasecmp(mod, "hwtcpus") == 0)
    p->use_hwthreads = 1;
  else if (strcasecmp(mod, "span") != 0 && strcasecmp(mod, "nolocal") != 0) {
    weft__snprintf(why, whylen, "unknown --map-by modifier '%s' in '%s'; did you mean '%s'?",
                   mod, all, closest(mod, map_mods, WEFT__ARRAY_SIZE(map_mods)));
    return WEFT_ENAME;
  }
  return 0;
}

static int parse_map(weftx_policy *p, const char *s, char *why, size_t whylen)
{
  char buf[256], *w[16];
  int n, i = 1, v, rc;

  if (!*s) {
    weft__snprintf(why, whylen, "empty --map-by value; use gpu, core, numa, package or ppr:N:OBJ");
    return WEFT_EPARSE;
  }
  n = split(s, buf, sizeof(buf), w, 16);
  if (n < 0) {
    weft__snprintf(why, whylen, "--map-by value '%.40s...' is too long", s);
    return WEFT_EPARSE;
  }
  rc = lookup(map_names, WEFT__ARRAY_SIZE(map_names), w[0], &v, "--map-by value", why, whylen);
  if (rc != 0)
    return rc;
  p->map_by = (weftx_map_by)v;
  if (strcasecmp(w[0], "hwthread") == 0)
    p->use_hwthreads = 1;
  if (p->map_by == WEFTX_MAP_PPR) {
    if (n < 3) {
      weft__snprintf(why, whylen, "'%s' lacks its count and object; write ppr:N:OBJ, e.g. ppr:2:numa", s);
      return WEFT_EPARSE;
    }
    rc = parse_count(w[1], "ppr count", s, &p->ppr_n, why, whylen);
    if (rc != 0)
      return rc;
    rc = lookup(obj_names, WEFT__ARRAY_SIZE(obj_names), w[2], &v, "ppr object", why, whylen);
    if (rc != 0)
      return rc;
    p->ppr_obj = (weftx_obj)v;
    i = 3;
  }
  for (; i < n; i++) {
    if (!*w[i]) {
      weft__snprintf(why, whylen, "empty modifier in --map-by '%s'", s);
      return WEFT_EPARSE;
    }
    rc = parse_map_mod(p, w[i], s, why, whylen);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int parse_bind(weftx_policy *p, const char *s, char *why, size_t whylen)
{
  char buf[256], *w[8];
  int n, i, v, rc;

  if (!*s) {
    weft__snprintf(why, whylen, "empty --bind-to value; use gpu-local, core, numa, package or none");
    return WEFT_EPARSE;
  }
  n = split(s, buf, sizeof(buf), w, 8);
  if (n < 0) {
    weft__snprintf(why, whylen, "--bind-to value '%.40s...' is too long", s);
    return WEFT_EPARSE;
  }
  if (strcasecmp(w[0], "hwthread") == 0) {
    weft__snprintf(why, whylen, "--bind-to hwthread: use --bind-to core with --use-hwthread-cpus "
                   "(or --map-by ...:HWTCPUS), which counts each hardware thread as a core");
    return WEFT_ENAME;
  }
  rc = lookup(bind_names, WEFT__ARRAY_SIZE(bind_names), w[0], &v, "--bind-to value", why, whylen);
  if (rc != 0)
    return rc;
  p->bind_to = (weftx_bind_to)v;
  for (i = 1; i < n; i++) {
    size_t k;
    for (k = 0; k < WEFT__ARRAY_SIZE(bind_mods); k++)
      if (strcasecmp(w[i], bind_mods[k]) == 0)
        break;
    if (k == WEFT__ARRAY_SIZE(bind_mods)) {
      weft__snprintf(why, whylen, "unknown --bind-to modifier '%s' in '%s'; did you mean '%s'?",
                     w[i], s, closest(w[i], bind_mods, WEFT__ARRAY_SIZE(bind_mods)));
      return WEFT_ENAME;
    }
  }
  return 0;
}

int weftx_policy_parse(weftx_policy *p, const char *map_by, const char *bind_to, char *why,
                      size_t whylen)
{
  int rc;

  if (why && whylen)
    why[0] = '\0';
  if (!p)
    return WEFT_EINVAL;
  p->map_by = WEFTX_MAP_AUTO;
  p->bind_to = WEFTX_BIND_DEFAULT;
  p->ppr_n = 0;
  p->ppr_obj = WEFTX_OBJ_NONE;
  p->pe = 0;
  if (map_by && (rc = parse_map(p, map_by, why, whylen)) != 0)
    return rc;
  if (bind_to && (rc = parse_bind(p, bind_to, why, whylen)) != 0)
    return rc;
  if (p->bind_to == WEFTX_BIND_GPU_LOCAL && p->map_by != WEFTX_MAP_AUTO &&
      p->map_by != WEFTX_MAP_GPU && !(p->map_by == WEFTX_MAP_PPR && p->ppr_obj == WEFTX_OBJ_GPU)) {
    weft__snprintf(why, whylen,
                   "--bind-to gpu-local needs --map-by gpu (ranks of --map-by %s have no GPU); "
                   "use --bind-to core, numa or package", map_by);
    return WEFT_EINVAL;
  }
  WEFT__LOG(MAP, "policy map-by '%s' bind-to '%s': map %d bind %d ppr %d:%d pe %d",
            map_by ? map_by : "(default)", bind_to ? bind_to : "(default)", (int)p->map_by,
            (int)p->bind_to, p->ppr_n, (int)p->ppr_obj, p->pe);
  return 0;
}

const char *weft__map_name(weftx_map_by m)
{
  switch (m) {
  case WEFTX_MAP_AUTO: return "auto";
  case WEFTX_MAP_GPU: return "gpu";
  case WEFTX_MAP_CORE: return "core";
  case WEFTX_MAP_NUMA: return "numa";
  case WEFTX_MAP_PACKAGE: return "package";
  case WEFTX_MAP_PPR: return "ppr";
  case WEFTX_MAP_SLOT: return "slot";
  case WEFTX_MAP_NODE: return "node";
  }
  return "?";
}

const char *weft__bind_name(weftx_bind_to b)
{
  switch (b) {
  case WEFTX_BIND_DEFAULT: return "default";
  case WEFTX_BIND_GPU_LOCAL: return "gpu-local";
  case WEFTX_BIND_CORE: return "core";
  case WEFTX_BIND_NUMA: return "numa";
  case WEFTX_BIND_PACKAGE: return "package";
  case WEFTX_BIND_NONE: return "none";
  }
  return "?";
}

const char *weft__obj_name(weftx_obj o)
{
  switch (o) {
  case WEFTX_OBJ_NONE: return "none";
  case WEFTX_OBJ_CORE: return "core";
  case WEFTX_OBJ_NUMA: return "numa";
  case WEFTX_OBJ_PACKAGE: return "package";
  case WEFTX_OBJ_GPU: return "gpu";
  case WEFTX_OBJ_NODE: return "node";
  }
  return "?";
}

int weftx_policy_format(const weftx_policy *p, char *buf, size_t len)
{
  char map[64], pe[24] = "";
  int rc;

  if (!p || !buf || !len)
    return WEFT_EINVAL;
  if (p->pe > 0)
    weft__snprintf(pe, sizeof(pe), ":pe=%d", p->pe);
  if (p->map_by == WEFTX_MAP_PPR)
    rc = weft__snprintf(map, sizeof(map), "ppr:%d:%s%s", p->ppr_n, weft__obj_name(p->ppr_obj), pe);
  else
    rc = weft__snprintf(map, sizeof(map), "%s%s", weft__map_name(p->map_by), pe);
  if (rc != 0)
    return rc;
  return weft__snprintf(buf, len, "%s, bind %s%s%s%s%s", map,
                        weft__bind_name(weft__bind_effective(p, p->map_by)),
                        p->oversubscribe ? ", oversubscribe" : "",
                        p->use_hwthreads ? ", hwthreads" : "",
                        p->reserved_cpus && *p->reserved_cpus ? ", reserved " : "",
                        p->reserved_cpus && *p->reserved_cpus ? p->reserved_cpus : "");
}
