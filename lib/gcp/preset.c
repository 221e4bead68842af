/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NCCL presets: the environment Google documents per machine family, kept in
 * data files (share/weft/presets/NAME.preset, format in their header). This
 * file reads that grammar: it parses and checks a file and its includes into
 * a weftx_preset, and answers what a loaded preset says. Filling it in for a
 * VM is preset-env.c's job (with preset-expand.c and preset-script.c).
 */
#include "preset_private.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INCLUDE_DEPTH 4

int weft__preset_grow(void *arrp, int n, size_t elem)
{
  void **arr = arrp;
  void *nb;

  if (n % 8)
    return 0;
  nb = realloc(*arr, (size_t)(n + 8) * elem);
  if (!nb)
    return WEFT_ENOMEM;
  *arr = nb;
  return 0;
}

static int push_str(char ***arr, int *n, const char *s)
{
  char *d;

  if (weft__preset_grow(arr, *n, sizeof(char *)) != 0 || !(d = strdup(s)))
    return WEFT_ENOMEM;
  (*arr)[(*n)++] = d;
  return 0;
}

void weft__preset_free_strs(char **arr, int n)
{
  for (int i = 0; i < n; i++)
    free(arr[i]);
  free(arr);
}

static struct weft__preset_entry *find_entry(weftx_preset *p, const char *key)
{
  for (int i = 0; i < p->nent; i++)
    if (!strcmp(p->ent[i].key, key))
      return &p->ent[i];
  return NULL;
}

/* Set (or replace, keeping its place) one entry. */
static int set_entry(weftx_preset *p, const char *key, const char *value, int prepend)
{
  struct weft__preset_entry *e = find_entry(p, key);
  char *v = strdup(value), *k;

  if (!v)
    return WEFT_ENOMEM;
  if (e) {
    free(e->value);
    e->value = v;
    e->prepend = prepend;
    return 0;
  }
  if (weft__preset_grow(&p->ent, p->nent, sizeof(*p->ent)) != 0 || !(k = strdup(key))) {
    free(v);
    return WEFT_ENOMEM;
  }
  p->ent[p->nent].key = k;
  p->ent[p->nent].value = v;
  p->ent[p->nent].prepend = prepend;
  p->nent++;
  return 0;
}

static int valid_key(const char *k)
{
  if (!isupper((unsigned char)*k) && *k != '_')
    return 0;
  for (; *k; k++)
    if (!isupper((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '_')
      return 0;
  return 1;
}

static int preset_path(const char *name, char *buf, size_t len)
{
  if (strchr(name, '/'))
    return weft__snprintf(buf, len, "%s", name);
  for (const char *c = name; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
      return WEFT_ENAME;
  return weft__snprintf(buf, len, "%s/presets/%s.preset", weftx_datadir(), name);
}

static char *trim(char *s)
{
  char *e;

  while (isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

static int parse_file(weftx_preset *p, const char *name, int depth, char *why, size_t whylen);

/* One directive or KEY=VALUE line. Returns 0 or a code with why set. */
static int parse_line(weftx_preset *p, char *s, const char *file, int lineno, int depth, char *why,
                      size_t whylen)
{
  char *word = s, *arg, *eq;
  long v;
  int rc = 0;

  eq = strchr(s, '=');
  arg = s + strcspn(s, " \t");
  if (eq && eq < arg) {
    *eq = '\0';
    if (!valid_key(s) || !weft__preset_placeholders_ok(eq + 1)) {
      weft__snprintf(why, whylen,
                     "%s:%d: bad variable line (KEY=VALUE, KEY in A-Z0-9_, "
                     "placeholders @host_nic@ @host_nics@ @gpu_nics@ @gpu_nicN@)",
                     file, lineno);
      return WEFT_EPARSE;
    }
    return set_entry(p, s, eq + 1, 0);
  }
  if (*arg)
    *arg++ = '\0';
  arg = trim(arg);
  if (!strcmp(word, "reserve-cpus") && *arg && strspn(arg, "0123456789,-") == strlen(arg)) {
    free(p->reserve_cpus);
    rc = (p->reserve_cpus = strdup(arg)) ? 0 : WEFT_ENOMEM;
  } else if (!strcmp(word, "mtu") && weftx_parse_long(arg, 576, 65536, &v) == 0) {
    p->mtu = (int)v;
  } else if (!strcmp(word, "gvnic") && (!strcmp(arg, "all") || !strcmp(arg, "host"))) {
    p->gvnic_all = !strcmp(arg, "all");
  } else if (!strcmp(word, "requires-plugin") && *arg == '/') {
    rc = push_str(&p->plugins, &p->nplugins, arg);
  } else if (!strcmp(word, "prepend-path") && *arg) {
    char *dir = arg + strcspn(arg, " \t");
    if (!*dir)
      goto bad;
    *dir++ = '\0';
    dir = trim(dir);
    if (!valid_key(arg) || *dir != '/')
      goto bad;
    rc = set_entry(p, arg, dir, 1);
  } else if (!strcmp(word, "profile-script") && *arg == '/') {
    char *save = NULL, *tok = strtok_r(arg, " \t", &save);
    free(p->script);
    if (!(p->script = strdup(tok)))
      return WEFT_ENOMEM;
    while (rc == 0 && (tok = strtok_r(NULL, " \t", &save)) != NULL) {
      if (!strchr(tok, '='))
        goto bad;
      rc = push_str(&p->script_env, &p->nscript_env, tok);
    }
  } else if (!strcmp(word, "keep") && *arg) {
    char *save = NULL;
    for (char *tok = strtok_r(arg, " \t", &save); tok && rc == 0;
         tok = strtok_r(NULL, " \t", &save))
      rc = push_str(&p->keep, &p->nkeep, tok);
  } else if (!strcmp(word, "include") && *arg && !strchr(arg, '/')) {
    if (depth >= MAX_INCLUDE_DEPTH) {
      weft__snprintf(why, whylen, "%s:%d: includes nest deeper than %d", file, lineno,
                     MAX_INCLUDE_DEPTH);
      return WEFT_EPARSE;
    }
    rc = parse_file(p, arg, depth + 1, why, whylen);
  } else {
    goto bad;
  }
  return rc;
bad:
  weft__snprintf(why, whylen,
                 "%s:%d: unknown or malformed directive '%s' (see the file header "
                 "of share/weft/presets/a3-highgpu-8g.preset for the format)",
                 file, lineno, word);
  return WEFT_EPARSE;
}

static int parse_file(weftx_preset *p, const char *name, int depth, char *why, size_t whylen)
{
  char path[4096], line[4096];
  int rc = 0, lineno = 0;
  FILE *f;

  rc = preset_path(name, path, sizeof(path));
  if (rc != 0) {
    weft__snprintf(why, whylen,
                   "preset name '%.200s' is not valid: use a family name such as "
                   "a3-highgpu-8g, or a path",
                   name);
    return WEFT_ENAME;
  }
  f = fopen(path, "r");
  if (!f) {
    weft__snprintf(why, whylen,
                   "no NCCL preset '%.200s' (%.200s: %s); known presets are the files "
                   "in %s/presets",
                   name, path, strerror(errno), weftx_datadir());
    return WEFT_ENAME;
  }
  while (rc == 0 && fgets(line, sizeof(line), f)) {
    char *s;
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      weft__snprintf(why, whylen, "%s:%d: line too long", path, lineno);
      rc = WEFT_EPARSE;
      break;
    }
    s = trim(line);
    if (*s && *s != '#')
      rc = parse_line(p, s, path, lineno, depth, why, whylen);
  }
  fclose(f);
  return rc;
}

void weft__preset_clear_resolved(weftx_preset *p)
{
  weft__preset_free_strs(p->pool, p->npool);
  free(p->vars);
  p->pool = NULL;
  p->npool = 0;
  p->vars = NULL;
  p->nvars = 0;
}

void weftx_preset_free(weftx_preset *p)
{
  if (!p)
    return;
  weft__preset_clear_resolved(p);
  for (int i = 0; i < p->nent; i++) {
    free(p->ent[i].key);
    free(p->ent[i].value);
  }
  free(p->ent);
  free(p->name);
  free(p->reserve_cpus);
  weft__preset_free_strs(p->plugins, p->nplugins);
  free(p->script);
  weft__preset_free_strs(p->script_env, p->nscript_env);
  weft__preset_free_strs(p->keep, p->nkeep);
  free(p);
}

int weftx_preset_load(const char *name, weftx_preset **out, char *why, size_t whylen)
{
  weftx_preset *p;
  const char *base;
  int rc;

  *out = NULL;
  if (why && whylen)
    why[0] = '\0';
  if (!name || !*name)
    return WEFT_EINVAL;
  p = calloc(1, sizeof(*p));
  if (!p)
    return WEFT_ENOMEM;
  base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
  p->name = strndup(base, strcspn(base, "."));
  rc = p->name ? parse_file(p, name, 0, why, whylen) : WEFT_ENOMEM;
  if (rc != 0) {
    weftx_preset_free(p);
    return rc;
  }
  WEFT__LOG(GCP, "preset %s: %d variables, reserve-cpus %s", p->name, p->nent,
            p->reserve_cpus ? p->reserve_cpus : "none");
  *out = p;
  return 0;
}

int weftx_preset_select(const char *arg, const weftx_gcp_info *info, int multi_vm, weftx_preset **p,
                        char *why, size_t whylen)
{
  *p = NULL;
  if (why && whylen)
    why[0] = '\0';
  if (!arg || !strcmp(arg, "none"))
    return 0;
  if (strcmp(arg, "auto") != 0)
    return weftx_preset_load(arg, p, why, whylen);
  if (!multi_vm || !info || !info->on_gce || !info->family) {
    WEFT__LOG(GCP, "--nccl-preset auto: none (%s)",
              !multi_vm                ? "single-VM job"
              : !info || !info->on_gce ? "not on GCE"
                                       : "unknown machine family");
    return 0;
  }
  return weftx_preset_load(info->family, p, why, whylen);
}

const char *weftx_preset_name(const weftx_preset *p) { return p->name; }

const char *weftx_preset_reserved_cpus(const weftx_preset *p) { return p ? p->reserve_cpus : NULL; }

int weftx_preset_mtu(const weftx_preset *p) { return p ? p->mtu : 0; }

int weft__preset_nplugins(const weftx_preset *p) { return p ? p->nplugins : 0; }

const char *weft__preset_plugin(const weftx_preset *p, int i) { return p->plugins[i]; }

int weft__preset_gvnic_all(const weftx_preset *p) { return p ? p->gvnic_all : 0; }
