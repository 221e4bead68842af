/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Facts of the launching VM on Google Cloud: its machine type and
 * physical_host, which family it is, its --nccl-preset's reserved cores (for
 * the plan, as every rank's agent will reserve them), the checks, and the
 * preset's variables as this VM resolves them, for --dry-run and the plan
 * JSON. The ranks resolve the preset again on their own hosts (weft-rank), so
 * what is shown here is this VM's view; a placeholder this VM cannot fill (off
 * GCE, say) is shown as the preset has it, with the reason, never dropped.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hosts.h"

struct wr_gcp {
  weftx_gcp_info info;
  weftx_preset *preset;
  weftx_env *env;        /* the preset's variables, as resolved here */
  weftx_env *over;       /* the user's variables that the preset would have set */
  weftx_env *unresolved; /* KEY -> why its value in env still holds a placeholder */
};

static void warn(void *arg, const char *msg)
{
  (void)arg;
  fprintf(stderr, "weftrun: warning: %s\n", msg);
}

/* The variables the user gives the ranks: they win over the preset. */
static int user_env(const wr_opts *o, weftx_env *env)
{
  extern char **environ;
  char why[512];
  int rc = weftx_env_forward(env, environ);
  for (int i = 0; i < o->nxvars && !rc; i++)
    if ((rc = weftx_env_add_x(env, o->xvars[i], environ, why, sizeof(why))) == WEFT_ENOENT)
      rc = 0;
  return rc;
}

/* Every variable of the preset as the file has it where this VM cannot fill a
 * placeholder, with the reason in g->unresolved, after the user's own. */
static int preview(wr_gcp *g, const weftx_env *user)
{
  const weftx_preset_var *vars;
  char why[512];
  int nvars, rc;
  if (weftx_env_create(&g->unresolved))
    return WEFT_ENOMEM;
  rc = weftx_preset_preview(g->preset, &g->info, NULL, &vars, &nvars, why, sizeof(why));
  for (int i = 0; !rc && i < nvars; i++) {
    const char *mine = weftx_env_get(user, vars[i].key),
               *detail = vars[i].source + strlen("preset ");
    if (mine && !vars[i].prepend)
      continue;          /* the user's value wins */
    if (mine && *mine) { /* a path list: the preset's directory in front of the user's */
      size_t n = strlen(vars[i].value) + strlen(mine) + 2;
      char *v = malloc(n);
      if (!v)
        return WEFT_ENOMEM;
      snprintf(v, n, "%s:%s", vars[i].value, mine);
      rc = weftx_env_set(g->env, vars[i].key, v, WEFTX_ENV_PRESET, detail);
      free(v);
    } else {
      rc = weftx_env_set(g->env, vars[i].key, vars[i].value, WEFTX_ENV_PRESET, detail);
    }
    if (!rc && vars[i].unresolved)
      rc = weftx_env_set(g->unresolved, vars[i].key, vars[i].unresolved, WEFTX_ENV_WEFT, NULL);
  }
  if (rc && rc != WEFT_ENOMEM)
    warn(NULL, why[0] ? why : weft_strerror(rc));
  return rc == WEFT_ENOMEM ? rc : 0;
}

int wr_gcp_prepare(const wr_opts *o, int nhosts, wr_gcp **out)
{
  char why[1024];
  weftx_env *user = NULL;
  wr_gcp *g = calloc(1, sizeof(*g));
  int rc;

  *out = g;
  if (!g)
    return WR_EXIT_ENGINE;
  rc = weftx_gcp_job_preset(o->nccl_preset, nhosts > 1, &g->info, &g->preset, why, sizeof(why));
  if (rc) {
    /* why names the preset (or its file) */
    fprintf(stderr, "weftrun: --nccl-preset: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : WR_EXIT_USAGE;
  }
  if (why[0])
    warn(NULL, why);
  if (!g->preset)
    return 0;
  weftx_gcp_check(&g->info, g->preset, nhosts > 1, warn, NULL);
  if (weftx_env_create(&g->env) || weftx_env_create(&user) || user_env(o, user)) {
    weftx_env_destroy(user);
    return WR_EXIT_ENGINE;
  }
  /* Resolve over the user's variables (so that theirs are left out), keep only the preset's. */
  rc = weftx_preset_apply(g->preset, &g->info, user, why, sizeof(why));
  for (int i = 0; !rc && i < weftx_env_count(user); i++) {
    const char *k, *v, *d;
    weftx_env_origin og;
    weftx_env_entry(user, i, &k, &v, &og, &d);
    if (og == WEFTX_ENV_PRESET)
      rc = weftx_env_set(g->env, k, v, og, d);
  }
  if (rc && rc != WEFT_ENOMEM) {
    /* e.g. no GPU NIC here: each rank resolves it on its own host, and says so there */
    warn(NULL, why);
    rc = preview(g, user);
  }
  /* what the user set in place of the preset's value, for --dry-run */
  const weftx_preset_var *vars;
  int nvars;
  char why2[512];
  if (!rc && !(rc = weftx_env_create(&g->over)) &&
      weftx_preset_preview(g->preset, &g->info, NULL, &vars, &nvars, why2, sizeof(why2)) == 0)
    for (int i = 0; i < nvars && !rc; i++) {
      weftx_env_origin og;
      const char *v = weftx_env_get(user, vars[i].key);
      if (!vars[i].prepend && v && weftx_env_origin_of(user, vars[i].key, &og) == 0 &&
          og != WEFTX_ENV_PRESET)
        rc = weftx_env_set(g->over, vars[i].key, v, og, NULL);
    }
  weftx_env_destroy(user);
  return rc == WEFT_ENOMEM ? WR_EXIT_ENGINE : 0;
}

const weftx_env *wr_gcp_preset_env(const wr_gcp *g) { return g ? g->env : NULL; }

const char *wr_gcp_unresolved(const wr_gcp *g, const char *key)
{
  return g && g->unresolved ? weftx_env_get(g->unresolved, key) : NULL;
}

const char *wr_gcp_reserved_cpus(const wr_gcp *g)
{
  return g ? weftx_preset_reserved_cpus(g->preset) : NULL;
}

int wr_gcp_local(const wr_gcp *g, char *mt, size_t mtlen, char *ph, size_t phlen)
{
  weftx_gcp_info info;
  char why[512];
  const weftx_gcp_info *i = g && g->info.on_gce ? &g->info : &info;

  if (i == &info) {
    int rc = weftx_gcp_identify(&info, why, sizeof(why)); /* no request off GCE */
    if (rc)
      warn(NULL, why[0] ? why : weft_strerror(rc));
    if (rc || !info.on_gce)
      return 0;
  }
  snprintf(mt, mtlen, "%s", i->machine_type);
  snprintf(ph, phlen, "%s", i->physical_host);
  return 1;
}

int wr_gcp_env(const wr_gcp *g, char ***env, int *n)
{
  int count = g && g->env ? weftx_env_count(g->env) : 0;
  *env = NULL;
  *n = 0;
  if (!count)
    return 0;
  if (!(*env = calloc((size_t)count, sizeof(**env))))
    return WEFT_ENOMEM;
  for (int i = 0; i < count; i++) {
    const char *k, *v;
    weftx_env_entry(g->env, i, &k, &v, NULL, NULL);
    size_t len = strlen(k) + strlen(v) + 2;
    if (!((*env)[i] = malloc(len)))
      return WEFT_ENOMEM;
    snprintf((*env)[i], len, "%s=%s", k, v);
    (*n)++;
  }
  return 0;
}

void wr_gcp_print(const wr_gcp *g, FILE *out)
{
  if (!g || !g->preset)
    return;
  fprintf(out, "# nccl preset %s (machine type %s)%s%s\n", weftx_preset_name(g->preset),
          g->info.machine_type[0] ? g->info.machine_type : "unknown",
          weftx_preset_reserved_cpus(g->preset) ? ", reserved cpus " : "",
          weftx_preset_reserved_cpus(g->preset) ? weftx_preset_reserved_cpus(g->preset) : "");
}

const char *wr_gcp_overrides(const wr_gcp *g, const char *key)
{
  return g && g->over && weftx_env_get(g->over, key) ? weftx_preset_name(g->preset) : NULL;
}

void wr_gcp_destroy(wr_gcp *g)
{
  if (!g)
    return;
  weftx_env_destroy(g->env);
  weftx_env_destroy(g->over);
  weftx_env_destroy(g->unresolved);
  weftx_preset_free(g->preset);
  free(g);
}
