/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftx_env: a small ordered KEY=VALUE list that remembers where each value
 * came from (the user, -x, weft, a preset), so that --dry-run can say why a
 * rank sees what it sees. Lookups are linear: a rank's environment holds a
 * few hundred variables at most; each key's hash is kept, so that a lookup
 * compares strings about once (a --dry-run builds every rank's variables).
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 255

struct var {
  char *key, *value, *detail;
  weftx_env_origin origin;
  uint32_t hash;
};

struct weftx_env {
  struct var *v;
  int n, cap;
};

int weftx_env_create(weftx_env **out)
{
  *out = calloc(1, sizeof(**out));
  return *out ? 0 : WEFT_ENOMEM;
}

static void var_free(struct var *v)
{
  free(v->key);
  free(v->value);
  free(v->detail);
}

void weftx_env_destroy(weftx_env *e)
{
  if (!e)
    return;
  for (int i = 0; i < e->n; i++)
    var_free(&e->v[i]);
  free(e->v);
  free(e);
}

int weftx_env_key_valid(const char *key)
{
  size_t i;

  if (!key ||
      !(key[0] == '_' || (key[0] >= 'A' && key[0] <= 'Z') || (key[0] >= 'a' && key[0] <= 'z')))
    return 0;
  for (i = 1; key[i]; i++) {
    char c = key[i];
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return 0;
  }
  return i <= KEY_MAX;
}

/* FNV-1a */
static uint32_t key_hash(const char *key)
{
  uint32_t h = 2166136261u;

  for (; *key; key++)
    h = (h ^ (unsigned char)*key) * 16777619u;
  return h;
}

static int find(const weftx_env *e, const char *key)
{
  uint32_t h = key_hash(key);

  for (int i = 0; e && i < e->n; i++)
    if (e->v[i].hash == h && strcmp(e->v[i].key, key) == 0)
      return i;
  return -1;
}

/* Replace value, origin and detail of \p v; on failure \p v is unchanged. */
static int var_assign(struct var *v, const char *value, weftx_env_origin origin, const char *detail)
{
  char *nv = strdup(value), *nd = detail ? strdup(detail) : NULL;

  if (!nv || (detail && !nd)) {
    free(nv);
    free(nd);
    return WEFT_ENOMEM;
  }
  free(v->value);
  free(v->detail);
  v->value = nv;
  v->detail = nd;
  v->origin = origin;
  return 0;
}

static int append(weftx_env *e, const char *key, const char *value, weftx_env_origin origin,
                  const char *detail)
{
  struct var *v;

  if (e->n == e->cap) {
    int cap = e->cap ? 2 * e->cap : 32;
    v = realloc(e->v, (size_t)cap * sizeof(*v));
    if (!v)
      return WEFT_ENOMEM;
    e->v = v;
    e->cap = cap;
  }
  v = &e->v[e->n];
  memset(v, 0, sizeof(*v));
  v->key = strdup(key);
  v->hash = key_hash(key);
  if (!v->key || var_assign(v, value, origin, detail)) {
    var_free(v);
    return WEFT_ENOMEM;
  }
  e->n++;
  return 0;
}

int weftx_env_set(weftx_env *e, const char *key, const char *value, weftx_env_origin origin,
                  const char *detail)
{
  int i;

  if (!e || !value || !weftx_env_key_valid(key))
    return WEFT_EINVAL;
  i = find(e, key);
  if (i >= 0)
    return var_assign(&e->v[i], value, origin, detail);
  return append(e, key, value, origin, detail);
}

int weftx_env_set_default(weftx_env *e, const char *key, const char *value, weftx_env_origin origin,
                          const char *detail)
{
  if (!e || !value || !weftx_env_key_valid(key))
    return WEFT_EINVAL;
  if (find(e, key) >= 0)
    return 1;
  return append(e, key, value, origin, detail);
}

int weftx_env_put(weftx_env *e, const char *kv, weftx_env_origin origin, const char *detail)
{
  char key[KEY_MAX + 1];
  const char *eq = kv ? strchr(kv, '=') : NULL;
  size_t len;

  if (!e || !eq)
    return WEFT_EPARSE;
  len = (size_t)(eq - kv);
  if (len == 0 || len > KEY_MAX)
    return WEFT_EPARSE;
  memcpy(key, kv, len);
  key[len] = '\0';
  if (!weftx_env_key_valid(key))
    return WEFT_EPARSE;
  return weftx_env_set(e, key, eq + 1, origin, detail);
}

const char *weftx_env_get(const weftx_env *e, const char *key)
{
  int i = key ? find(e, key) : -1;
  return i >= 0 ? e->v[i].value : NULL;
}

int weftx_env_unset(weftx_env *e, const char *key)
{
  int i = key ? find(e, key) : -1;

  if (i < 0)
    return 1;
  var_free(&e->v[i]);
  memmove(&e->v[i], &e->v[i + 1], (size_t)(e->n - i - 1) * sizeof(e->v[0]));
  e->n--;
  return 0;
}

int weftx_env_count(const weftx_env *e) { return e ? e->n : 0; }

int weftx_env_index(const weftx_env *e, const char *key) { return key ? find(e, key) : -1; }

void weftx_env_truncate(weftx_env *e, int n)
{
  while (e && n >= 0 && e->n > n)
    var_free(&e->v[--e->n]);
}

int weftx_env_entry(const weftx_env *e, int i, const char **key, const char **value,
                    weftx_env_origin *origin, const char **detail)
{
  if (!e || i < 0 || i >= e->n)
    return WEFT_EINVAL;
  if (key)
    *key = e->v[i].key;
  if (value)
    *value = e->v[i].value;
  if (origin)
    *origin = e->v[i].origin;
  if (detail)
    *detail = e->v[i].detail;
  return 0;
}

int weftx_env_origin_of(const weftx_env *e, const char *key, weftx_env_origin *origin)
{
  int i = key ? find(e, key) : -1;

  if (i < 0)
    return WEFT_EINVAL;
  *origin = e->v[i].origin;
  return 0;
}

const char *weftx_env_origin_name(weftx_env_origin o)
{
  switch (o) {
  case WEFTX_ENV_USER: return "user";
  case WEFTX_ENV_XARG: return "-x";
  case WEFTX_ENV_WEFT: return "weft";
  case WEFTX_ENV_PRESET: return "preset";
  case WEFTX_ENV_MCA: return "mca";
  default: return "unknown";
  }
}

int weftx_env_describe(const weftx_env *e, int i, char *buf, size_t len)
{
  if (!e || i < 0 || i >= e->n)
    return WEFT_EINVAL;
  if (e->v[i].detail && *e->v[i].detail)
    return weft__snprintf(buf, len, "%s %s", weftx_env_origin_name(e->v[i].origin), e->v[i].detail);
  return weft__snprintf(buf, len, "%s", weftx_env_origin_name(e->v[i].origin));
}

int weftx_env_import(weftx_env *e, char *const *envp, weftx_env_origin origin)
{
  for (; envp && *envp; envp++) {
    int rc = weftx_env_put(e, *envp, origin, NULL);
    if (rc == WEFT_ENOMEM)
      return rc;
  }
  return 0;
}

int weftx_env_to_envp(const weftx_env *e, char ***envp)
{
  size_t bytes = 0, ptrs;
  char **arr, *p;

  if (!e || !envp)
    return WEFT_EINVAL;
  ptrs = (size_t)(e->n + 1) * sizeof(char *);
  for (int i = 0; i < e->n; i++)
    bytes += strlen(e->v[i].key) + strlen(e->v[i].value) + 2;
  arr = malloc(ptrs + bytes);
  if (!arr)
    return WEFT_ENOMEM;
  p = (char *)arr + ptrs;
  for (int i = 0; i < e->n; i++) {
    size_t kl = strlen(e->v[i].key), vl = strlen(e->v[i].value);
    arr[i] = p;
    memcpy(p, e->v[i].key, kl);
    p[kl] = '=';
    memcpy(p + kl + 1, e->v[i].value, vl + 1);
    p += kl + vl + 2;
  }
  arr[e->n] = NULL;
  *envp = arr;
  return 0;
}

/* One array for the whole list, not a setenv() each: glibc's setenv() searches
 * environ and a tree of the strings it allocated on every call, O(n^2) over a
 * rank's hundred-odd variables, on every agent's way to exec. The array lives
 * as long as the process (environ points into it). */
int weftx_env_apply(const weftx_env *e)
{
  extern char **environ;
  char **envp;
  int rc;

  if (!e)
    return 0;
  if ((rc = weftx_env_to_envp(e, &envp)))
    return rc;
  environ = envp;
  return 0;
}
