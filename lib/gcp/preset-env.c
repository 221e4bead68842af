/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The environment merge of an NCCL preset: the file's variables, the values
 * of the family's profile script over them (except the keys the file keeps
 * and the script's own inputs), placeholders filled, the user's own
 * variables left out; then onto a job's weftx_env, with prepend-path lists
 * (LD_LIBRARY_PATH) put in front of a forwarded value.
 */
#include "preset_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int in_list(char *const *list, int n, const char *key, size_t keylen)
{
  for (int i = 0; i < n; i++)
    if (strlen(list[i]) == keylen && !strncmp(list[i], key, keylen))
      return 1;
  return 0;
}

static char *pool_str(weftx_preset *p, const char *s, size_t len)
{
  char *d = strndup(s, len);

  if (!d)
    return NULL;
  if (weft__preset_grow(&p->pool, p->npool, sizeof(char *)) != 0) {
    free(d);
    return NULL;
  }
  p->pool[p->npool++] = d;
  return d;
}

static int add_var(weftx_preset *p, const char *key, const char *value, int prepend,
                   const char *source)
{
  if (weft__preset_grow(&p->vars, p->nvars, sizeof(*p->vars)) != 0)
    return WEFT_ENOMEM;
  p->vars[p->nvars].key = key;
  p->vars[p->nvars].value = value;
  p->vars[p->nvars].prepend = prepend;
  p->vars[p->nvars].source = source;
  p->vars[p->nvars].unresolved = NULL;
  p->nvars++;
  return 0;
}

static weftx_preset_var *find_var(weftx_preset *p, const char *key)
{
  for (int i = 0; i < p->nvars; i++)
    if (!strcmp(p->vars[i].key, key))
      return &p->vars[i];
  return NULL;
}

/* Merge the script's variables over ours, except keys we keep and the script's own inputs. */
static int merge_script(weftx_preset *p, const char *path, const char *source, char *why,
                        size_t whylen)
{
  char *out = weft__preset_script_run(p, path, why, whylen), *save = NULL;
  int rc = 0;

  if (!out) {
    if (why && whylen && !why[0])
      weft__snprintf(why, whylen, "%s could not be run", path);
    return WEFT_ESYS;
  }
  for (char *line = strtok_r(out, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save)) {
    char *eq = strchr(line, '='), *key, *val;
    weftx_preset_var *v;
    size_t klen, vlen;
    int prepend = 0;

    if (!eq)
      continue;
    klen = (size_t)(eq - line);
    if (in_list(p->keep, p->nkeep, line, klen) || (klen == 4 && !strncmp(line, "PATH", 4)) ||
        (klen == 3 && !strncmp(line, "PWD", 3)) || (klen == 5 && !strncmp(line, "SHLVL", 5)) ||
        (klen == 1 && line[0] == '_'))
      continue;
    vlen = strlen(eq + 1);
    if (klen == 15 && !strncmp(line, "LD_LIBRARY_PATH", 15)) {
      /* "DIR:" from "DIR:$LD_LIBRARY_PATH" with it empty: prepend DIR. */
      while (vlen > 0 && eq[vlen] == ':')
        vlen--;
      if (vlen == 0)
        continue;
      prepend = 1;
    } else {
      int input = 0;
      for (int i = 0; i < p->nscript_env; i++)
        if (!strncmp(p->script_env[i], line, klen + 1) &&
            !strcmp(p->script_env[i] + klen + 1, eq + 1))
          input = 1;
      if (input)
        continue;
    }
    key = pool_str(p, line, klen);
    val = pool_str(p, eq + 1, vlen);
    if (!key || !val) {
      rc = WEFT_ENOMEM;
      break;
    }
    v = find_var(p, key);
    if (v) {
      v->value = val;
      v->prepend = prepend;
      v->source = source;
    } else {
      rc = add_var(p, key, val, prepend, source);
    }
  }
  free(out);
  return rc;
}

/* Fill the placeholders of v's value into a pooled string. */
static int expand(weftx_preset *p, const weftx_gcp_info *info, weftx_preset_var *v, char *why,
                  size_t whylen)
{
  char buf[4096];
  int rc = weft__preset_expand(p->name, info, v->key, v->value, buf, sizeof(buf), why, whylen);

  if (rc != 0)
    return rc;
  v->value = pool_str(p, buf, strlen(buf));
  return v->value ? 0 : WEFT_ENOMEM;
}

static int user_has(const char *const *user_set, const char *key)
{
  size_t klen = strlen(key);

  for (int i = 0; user_set && user_set[i]; i++)
    if (!strncmp(user_set[i], key, klen) && (user_set[i][klen] == '\0' || user_set[i][klen] == '='))
      return 1;
  return 0;
}

/* Resolve; with lenient, a placeholder this host cannot fill leaves the value as the
 * file has it and says why in the variable's unresolved, instead of failing. */
static int resolve(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                   int lenient, const weftx_preset_var **vars, int *nvars, char *why, size_t whylen)
{
  char path[4096], src[4200];
  const char *source, *ssource = NULL;
  int rc = 0, w = 0;

  *vars = NULL;
  *nvars = 0;
  if (why && whylen)
    why[0] = '\0';
  weft__preset_clear_resolved(p);
  weft__snprintf(src, sizeof(src), "preset %s", p->name);
  source = pool_str(p, src, strlen(src));
  if (!source)
    return WEFT_ENOMEM;
  for (int i = 0; i < p->nent && rc == 0; i++)
    rc = add_var(p, p->ent[i].key, p->ent[i].value, p->ent[i].prepend, source);
  if (rc == 0 && p->script && weft__gcp_path(path, sizeof(path), p->script) == 0 &&
      access(path, R_OK) == 0) {
    weft__snprintf(src, sizeof(src), "preset %s (%s)", p->name, p->script);
    ssource = pool_str(p, src, strlen(src));
    rc = ssource ? merge_script(p, path, ssource, why, whylen) : WEFT_ENOMEM;
  }
  /* Fill placeholders and drop what the user set, keeping the order. */
  for (int i = 0; i < p->nvars && rc == 0; i++) {
    weftx_preset_var v = p->vars[i];
    if (user_has(user_set, v.key))
      continue;
    v.unresolved = NULL;
    if (v.source == source) {
      char reason[512] = "";
      rc = expand(p, info, &v, lenient ? reason : why, lenient ? sizeof(reason) : whylen);
      if (rc == WEFT_ENOENT && lenient) {
        const char *r = !info || !info->on_gce ? "this is not a GCE VM"
                                               : "no local interface matched the metadata MACs";
        rc = (v.unresolved = pool_str(p, r, strlen(r))) ? 0 : WEFT_ENOMEM;
      }
    }
    p->vars[w++] = v;
  }
  p->nvars = w;
  if (rc != 0) {
    weft__preset_clear_resolved(p);
    return rc;
  }
  *vars = p->vars;
  *nvars = p->nvars;
  return 0;
}

int weftx_preset_resolve(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                         const weftx_preset_var **vars, int *nvars, char *why, size_t whylen)
{
  return resolve(p, info, user_set, 0, vars, nvars, why, whylen);
}

int weftx_preset_preview(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                         const weftx_preset_var **vars, int *nvars, char *why, size_t whylen)
{
  return resolve(p, info, user_set, 1, vars, nvars, why, whylen);
}

/* Is dir already the first entry of the ':' list? */
static int starts_with_dir(const char *list, const char *dir)
{
  size_t n = strlen(dir);

  return !strncmp(list, dir, n) && (list[n] == '\0' || list[n] == ':');
}

int weftx_preset_apply(weftx_preset *p, const weftx_gcp_info *info, weftx_env *env, char *why,
                       size_t whylen)
{
  const weftx_preset_var *v;
  const char **user;
  int n = weftx_env_count(env), nv, rc;

  user = calloc((size_t)n + 1, sizeof(*user));
  if (!user)
    return WEFT_ENOMEM;
  for (int i = 0; i < n; i++)
    weftx_env_entry(env, i, &user[i], NULL, NULL, NULL);
  /* Prepend-path keys stay in: they are merged below, not replaced. */
  for (int i = 0; i < p->nent; i++) {
    if (!p->ent[i].prepend)
      continue;
    for (int j = 0; j < n; j++)
      if (user[j] && !strcmp(user[j], p->ent[i].key))
        user[j] = "";
  }
  rc = weftx_preset_resolve(p, info, user, &v, &nv, why, whylen);
  free(user);
  for (int i = 0; rc == 0 && i < nv; i++) {
    const char *detail = v[i].source + strlen("preset ");
    weftx_env_origin origin;

    if (!v[i].prepend) {
      rc = weftx_env_set_default(env, v[i].key, v[i].value, WEFTX_ENV_PRESET, detail);
      rc = rc > 0 ? 0 : rc;
    } else if (!weftx_env_get(env, v[i].key) || !*weftx_env_get(env, v[i].key)) {
      rc = weftx_env_set(env, v[i].key, v[i].value, WEFTX_ENV_PRESET, detail);
    } else if (weftx_env_origin_of(env, v[i].key, &origin) == 0 && origin != WEFTX_ENV_XARG &&
               !starts_with_dir(weftx_env_get(env, v[i].key), v[i].value)) {
      const char *old = weftx_env_get(env, v[i].key);
      size_t len = strlen(v[i].value) + strlen(old) + 2;
      char *joined = malloc(len), d[256];
      if (!joined)
        return WEFT_ENOMEM;
      snprintf(joined, len, "%s:%s", v[i].value, old);
      weft__snprintf(d, sizeof(d), "%s, prepended to %s", detail, weftx_env_origin_name(origin));
      rc = weftx_env_set(env, v[i].key, joined, WEFTX_ENV_PRESET, d);
      free(joined);
    }
  }
  return rc;
}
