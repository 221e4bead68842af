/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NCCL presets: the environment Google documents per machine family, kept in
 * data files (share/weft/presets/NAME.preset, format in their header).
 * Loading parses and checks a file; resolving fills the NIC placeholders for
 * this VM, takes the values of Google's own profile script when the family
 * names one and it is installed, and leaves out what the user set.
 */
#include "gcp_private.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_INCLUDE_DEPTH 4
#define SCRIPT_TIMEOUT_MS 10000
#define SCRIPT_MAX_OUTPUT (256 * 1024)

struct entry {
  char *key;
  char *value;
  int prepend;
};

struct weftx_preset {
  char *name;
  struct entry *ent;
  int nent;
  char *reserve_cpus;
  int mtu;
  int gvnic_all;            /* "gvnic all": GPU NICs must be gVNICs too */
  char **plugins;
  int nplugins;
  char *script;             /* profile-script PATH */
  char **script_env;        /* its NAME=VALUE arguments */
  int nscript_env;
  char **keep;              /* keys ours keep over the script's */
  int nkeep;
  /* The last resolve. */
  weftx_preset_var *vars;
  int nvars;
  char **pool;
  int npool;
};

static int grow(void *arrp, int n, size_t elem)
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

  if (grow(arr, *n, sizeof(char *)) != 0 || !(d = strdup(s)))
    return WEFT_ENOMEM;
  (*arr)[(*n)++] = d;
  return 0;
}

static void free_strs(char **arr, int n)
{
  for (int i = 0; i < n; i++)
    free(arr[i]);
  free(arr);
}

static struct entry *find_entry(weftx_preset *p, const char *key)
{
  for (int i = 0; i < p->nent; i++)
    if (!strcmp(p->ent[i].key, key))
      return &p->ent[i];
  return NULL;
}

/* Set (or replace, keeping its place) one entry. */
static int set_entry(weftx_preset *p, const char *key, const char *value, int prepend)
{
  struct entry *e = find_entry(p, key);
  char *v = strdup(value), *k;

  if (!v)
    return WEFT_ENOMEM;
  if (e) {
    free(e->value);
    e->value = v;
    e->prepend = prepend;
    return 0;
  }
  if (grow(&p->ent, p->nent, sizeof(*p->ent)) != 0 || !(k = strdup(key))) {
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

/* Every @word@ in v must be a placeholder that resolve knows. */
static int valid_placeholders(const char *v)
{
  for (const char *a = strchr(v, '@'); a; a = strchr(a, '@')) {
    const char *b = strchr(a + 1, '@');
    size_t len;
    if (!b)
      return 0;
    len = (size_t)(b - a - 1);
    if (!((len == 8 && !strncmp(a + 1, "host_nic", 8)) ||
          (len == 9 && !strncmp(a + 1, "host_nics", 9)) ||
          (len == 8 && !strncmp(a + 1, "gpu_nics", 8)) ||
          (len > 7 && !strncmp(a + 1, "gpu_nic", 7) &&
           strspn(a + 8, "0123456789") == len - 7)))
      return 0;
    a = b + 1;
  }
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
static int parse_line(weftx_preset *p, char *s, const char *file, int lineno, int depth,
                      char *why, size_t whylen)
{
  char *word = s, *arg, *eq;
  long v;
  int rc = 0;

  eq = strchr(s, '=');
  arg = s + strcspn(s, " \t");
  if (eq && eq < arg) {
    *eq = '\0';
    if (!valid_key(s) || !valid_placeholders(eq + 1)) {
      weft__snprintf(why, whylen, "%s:%d: bad variable line (KEY=VALUE, KEY in A-Z0-9_, "
                     "placeholders @host_nic@ @host_nics@ @gpu_nics@ @gpu_nicN@)", file, lineno);
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
    for (char *tok = strtok_r(arg, " \t", &save); tok && rc == 0; tok = strtok_r(NULL, " \t", &save))
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
  weft__snprintf(why, whylen, "%s:%d: unknown or malformed directive '%s' (see the file header "
                 "of share/weft/presets/a3-highgpu-8g.preset for the format)", file, lineno, word);
  return WEFT_EPARSE;
}

static int parse_file(weftx_preset *p, const char *name, int depth, char *why, size_t whylen)
{
  char path[4096], line[4096];
  int rc = 0, lineno = 0;
  FILE *f;

  rc = preset_path(name, path, sizeof(path));
  if (rc != 0) {
    weft__snprintf(why, whylen, "preset name '%s' is not valid: use a family name such as "
                   "a3-highgpu-8g, or a path", name);
    return WEFT_ENAME;
  }
  f = fopen(path, "r");
  if (!f) {
    weft__snprintf(why, whylen, "no NCCL preset '%s' (%s: %s); known presets are the files "
                   "in %s/presets", name, path, strerror(errno), weftx_datadir());
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

static void clear_resolved(weftx_preset *p)
{
  free_strs(p->pool, p->npool);
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
  clear_resolved(p);
  for (int i = 0; i < p->nent; i++) {
    free(p->ent[i].key);
    free(p->ent[i].value);
  }
  free(p->ent);
  free(p->name);
  free(p->reserve_cpus);
  free_strs(p->plugins, p->nplugins);
  free(p->script);
  free_strs(p->script_env, p->nscript_env);
  free_strs(p->keep, p->nkeep);
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

int weftx_preset_select(const char *arg, const weftx_gcp_info *info, int multi_vm,
                       weftx_preset **p, char *why, size_t whylen)
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
              !multi_vm ? "single-VM job" : !info || !info->on_gce ? "not on GCE"
              : "unknown machine family");
    return 0;
  }
  return weftx_preset_load(info->family, p, why, whylen);
}

const char *weftx_preset_name(const weftx_preset *p)
{
  return p->name;
}

const char *weftx_preset_reserved_cpus(const weftx_preset *p)
{
  return p ? p->reserve_cpus : NULL;
}

int weftx_preset_mtu(const weftx_preset *p)
{
  return p ? p->mtu : 0;
}

int weft__preset_nplugins(const weftx_preset *p)
{
  return p ? p->nplugins : 0;
}

const char *weft__preset_plugin(const weftx_preset *p, int i)
{
  return p->plugins[i];
}

int weft__preset_gvnic_all(const weftx_preset *p)
{
  return p ? p->gvnic_all : 0;
}

const char *weft__preset_script(const weftx_preset *p)
{
  return p ? p->script : NULL;
}

/* ---- The profile script ------------------------------------------------ */

static int in_list(char *const *list, int n, const char *key, size_t keylen)
{
  for (int i = 0; i < n; i++)
    if (strlen(list[i]) == keylen && !strncmp(list[i], key, keylen))
      return 1;
  return 0;
}

/* Run "source SCRIPT; env" in a clean environment and read what it exported.
 * Returns the output (allocated) or NULL on failure with why set. */
static char *run_script(const weftx_preset *p, const char *path, char *why, size_t whylen)
{
  char **envp, *out = NULL;
  size_t len = 0;
  int fds[2], status = 0, n = 0, done = 0;
  struct timespec t0, t;
  pid_t pid;

  envp = calloc((size_t)p->nscript_env + 3, sizeof(char *));
  if (!envp)
    return NULL;
  envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
  envp[n++] = "LD_LIBRARY_PATH=";
  for (int i = 0; i < p->nscript_env; i++)
    envp[n++] = p->script_env[i];
  if (pipe(fds) != 0) {
    free(envp);
    return NULL;
  }
  pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 2);
    }
    dup2(fds[1], 1);
    close(fds[0]);
    execle("/bin/bash", "bash", "-c", ". \"$0\" >/dev/null 2>&1; env", path, (char *)NULL, envp);
    _exit(127);
  }
  free(envp);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return NULL;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!done) {
    struct pollfd pfd = { fds[0], POLLIN, 0 };
    char buf[4096];
    long left;
    ssize_t r;
    int ready = 0;

    clock_gettime(CLOCK_MONOTONIC, &t);
    left = SCRIPT_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0 || (ready = poll(&pfd, 1, (int)left)) == 0) {
      weft__snprintf(why, whylen, "%s did not finish within %d s", path, SCRIPT_TIMEOUT_MS / 1000);
      kill(pid, SIGKILL);
      break;
    }
    if (ready < 0 && errno == EINTR)
      continue; /* a blocking read now would wait past the deadline */
    r = read(fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      done = 1;
    } else if (len + (size_t)r >= SCRIPT_MAX_OUTPUT) {
      /* Cut output would be merged as if whole. */
      weft__snprintf(why, whylen, "%s exported more than %d KiB of variables; export only "
                     "NCCL settings there", path, SCRIPT_MAX_OUTPUT / 1024);
      kill(pid, SIGKILL);
      break;
    } else {
      char *nb = realloc(out, len + (size_t)r + 1);
      if (!nb) {
        weft__snprintf(why, whylen, "out of memory reading the output of %s", path);
        kill(pid, SIGKILL);
        break;
      }
      out = nb;
      memcpy(out + len, buf, (size_t)r);
      len += (size_t)r;
      out[len] = '\0';
    }
  }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (done)
      weft__snprintf(why, whylen, "%s failed (bash exit status %d)", path,
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    free(out);
    return NULL;
  }
  return out ? out : strdup("");
}

static char *pool_str(weftx_preset *p, const char *s, size_t len)
{
  char *d = strndup(s, len);

  if (!d)
    return NULL;
  if (grow(&p->pool, p->npool, sizeof(char *)) != 0) {
    free(d);
    return NULL;
  }
  p->pool[p->npool++] = d;
  return d;
}

static int add_var(weftx_preset *p, const char *key, const char *value, int prepend,
                   const char *source)
{
  if (grow(&p->vars, p->nvars, sizeof(*p->vars)) != 0)
    return WEFT_ENOMEM;
  p->vars[p->nvars].key = key;
  p->vars[p->nvars].value = value;
  p->vars[p->nvars].prepend = prepend;
  p->vars[p->nvars].source = source;
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
  char *out = run_script(p, path, why, whylen), *save = NULL;
  int rc = 0;

  if (!out) {
    if (why && whylen && !why[0])
      weft__snprintf(why, whylen, "%s could not be run", path);
    return WEFT_ESYS;
  }
  for (char *line = strtok_r(out, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
    char *eq = strchr(line, '='), *key, *val;
    weftx_preset_var *v;
    size_t klen, vlen;
    int prepend = 0;

    if (!eq)
      continue;
    klen = (size_t)(eq - line);
    if (in_list(p->keep, p->nkeep, line, klen) ||
        (klen == 4 && !strncmp(line, "PATH", 4)) || (klen == 3 && !strncmp(line, "PWD", 3)) ||
        (klen == 5 && !strncmp(line, "SHLVL", 5)) || (klen == 1 && line[0] == '_'))
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
        if (!strncmp(p->script_env[i], line, klen + 1) && !strcmp(p->script_env[i] + klen + 1, eq + 1))
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

/* ---- Placeholders ------------------------------------------------------ */

static int nic_list(const weftx_gcp_info *info, int gpu, int max, char *buf, size_t len)
{
  size_t used = 0;
  int n = 0;

  buf[0] = '\0';
  for (int i = 0; info && i < info->nnics && n < max; i++) {
    const weftx_gcp_nic *nic = &info->nics[i];
    if (nic->gpu != gpu)
      continue;
    if (!nic->ifname[0])
      return WEFT_ENOENT;
    if (weft__snprintf(buf + used, len - used, "%s%s", n ? "," : "", nic->ifname) != 0)
      return WEFT_ERANGE;
    used += strlen(buf + used);
    n++;
  }
  return n ? 0 : WEFT_ENOENT;
}

static int gpu_nic(const weftx_gcp_info *info, long k, char *buf, size_t len)
{
  for (int i = 0; info && i < info->nnics; i++)
    if (info->nics[i].gpu && k-- == 0)
      return info->nics[i].ifname[0] ? weft__snprintf(buf, len, "%s", info->nics[i].ifname)
                                     : WEFT_ENOENT;
  return WEFT_ENOENT;
}

/* Expand the placeholders of v into a pooled string. */
static int expand(weftx_preset *p, const weftx_gcp_info *info, const char *key, const char *v,
                  const char **out, char *why, size_t whylen)
{
  char buf[4096], name[32], sub[1024];
  size_t used = 0;
  int rc;

  while (*v) {
    const char *a = strchr(v, '@'), *b;
    size_t lit = a ? (size_t)(a - v) : strlen(v);
    if (used + lit >= sizeof(buf))
      return WEFT_ERANGE;
    memcpy(buf + used, v, lit);
    used += lit;
    if (!a)
      break;
    b = strchr(a + 1, '@');
    if (!b || (size_t)(b - a - 1) >= sizeof(name))
      return WEFT_EPARSE;
    memcpy(name, a + 1, (size_t)(b - a - 1));
    name[b - a - 1] = '\0';
    if (!strcmp(name, "host_nic"))
      rc = nic_list(info, 0, 1, sub, sizeof(sub));
    else if (!strcmp(name, "host_nics"))
      rc = nic_list(info, 0, WEFTX_GCP_MAX_NICS, sub, sizeof(sub));
    else if (!strcmp(name, "gpu_nics"))
      rc = nic_list(info, 1, WEFTX_GCP_MAX_NICS, sub, sizeof(sub));
    else
      rc = gpu_nic(info, strtol(name + 7, NULL, 10), sub, sizeof(sub));
    if (rc != 0) {
      weft__snprintf(why, whylen, "preset %s: %s needs @%s@, but %s; set %s yourself "
                     "(weftrun -x %s=...) or use --nccl-preset none", p->name, key, name,
                     !info || !info->on_gce ? "this is not a GCE VM"
                     : "no local interface matched the metadata MACs", key, key);
      return WEFT_ENOENT;
    }
    if (used + strlen(sub) >= sizeof(buf))
      return WEFT_ERANGE;
    memcpy(buf + used, sub, strlen(sub));
    used += strlen(sub);
    v = b + 1;
  }
  buf[used] = '\0';
  *out = pool_str(p, buf, used);
  return *out ? 0 : WEFT_ENOMEM;
}

static int user_has(const char *const *user_set, const char *key)
{
  size_t klen = strlen(key);

  for (int i = 0; user_set && user_set[i]; i++)
    if (!strncmp(user_set[i], key, klen) && (user_set[i][klen] == '\0' || user_set[i][klen] == '='))
      return 1;
  return 0;
}

int weftx_preset_resolve(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                        const weftx_preset_var **vars, int *nvars, char *why, size_t whylen)
{
  char path[4096], src[4200];
  const char *source, *ssource = NULL;
  int rc = 0, w = 0;

  *vars = NULL;
  *nvars = 0;
  if (why && whylen)
    why[0] = '\0';
  clear_resolved(p);
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
    if (v.source == source)
      rc = expand(p, info, v.key, v.value, &v.value, why, whylen);
    p->vars[w++] = v;
  }
  p->nvars = w;
  if (rc != 0) {
    clear_resolved(p);
    return rc;
  }
  *vars = p->vars;
  *nvars = p->nvars;
  return 0;
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
