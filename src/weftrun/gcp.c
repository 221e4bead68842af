/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Facts of the launching VM on Google Cloud: its machine type and
 * physical_host, which family it is, its --nccl-preset's reserved cores (for
 * the plan, as every rank's agent will reserve them), the checks, and the
 * preset's variables as this VM resolves them, for --dry-run and the plan
 * JSON. The ranks resolve the preset again on their own hosts (weft-rank), so
 * what is shown here is this VM's view.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "weftrun.h"

struct wr_gcp {
  weftx_gcp_info info;
  weftx_preset *preset;
  weftx_env *env;               /* the preset's variables, as resolved here */
  weftx_env *over;              /* the user's variables that the preset would have set */
};

static void
warn(void *arg, const char *msg)
{
  (void)arg;
  fprintf(stderr, "weftrun: warning: %s\n", msg);
}

/* The variables the user gives the ranks: they win over the preset. */
static int
user_env(const wr_opts *o, weftx_env *env)
{
  extern char **environ;
  char why[512];
  int rc = weftx_env_forward(env, environ);
  for (int i = 0; i < o->nxvars && !rc; i++)
    if ((rc = weftx_env_add_x(env, o->xvars[i], environ, why, sizeof(why))) == WEFT_ENOENT)
      rc = 0;
  return rc;
}

int
wr_gcp_prepare(const wr_opts *o, int nhosts, wr_gcp **out)
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
    fprintf(stderr, "weftrun: --nccl-preset %s: %s\n", o->nccl_preset, why[0] ? why : weft_strerror(rc));
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
  /* what the user set in place of the preset's value, for --dry-run */
  const weftx_preset_var *vars;
  int nvars;
  char why2[512];
  if (!rc && weftx_env_create(&g->over) == 0 &&
      weftx_preset_resolve(g->preset, &g->info, NULL, &vars, &nvars, why2, sizeof(why2)) == 0)
    for (int i = 0; i < nvars && !rc; i++) {
      weftx_env_origin og;
      const char *v = weftx_env_get(user, vars[i].key);
      if (!vars[i].prepend && v && weftx_env_origin_of(user, vars[i].key, &og) == 0 &&
          og != WEFTX_ENV_PRESET)
        rc = weftx_env_set(g->over, vars[i].key, v, og, NULL);
    }
  weftx_env_destroy(user);
  if (rc == WEFT_ENOMEM)
    return WR_EXIT_ENGINE;
  if (rc) /* e.g. no GPU NIC here: each rank resolves it on its own host, and says so there */
    warn(NULL, why);
  return 0;
}

const char *
wr_gcp_reserved_cpus(const wr_gcp *g)
{
  return g ? weftx_preset_reserved_cpus(g->preset) : NULL;
}

int
wr_gcp_local(const wr_gcp *g, char *mt, size_t mtlen, char *ph, size_t phlen)
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

int
wr_gcp_env(const wr_gcp *g, char ***env, int *n)
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

void
wr_gcp_print(const wr_gcp *g, FILE *out)
{
  char desc[256];

  if (!g || !g->preset)
    return;
  fprintf(out, "# nccl preset %s (machine type %s)%s%s\n", weftx_preset_name(g->preset),
          g->info.machine_type[0] ? g->info.machine_type : "unknown",
          weftx_preset_reserved_cpus(g->preset) ? ", reserved cpus " : "",
          weftx_preset_reserved_cpus(g->preset) ? weftx_preset_reserved_cpus(g->preset) : "");
  for (int i = 0; g->env && i < weftx_env_count(g->env); i++) {
    const char *k, *v;
    weftx_env_entry(g->env, i, &k, &v, NULL, NULL);
    weftx_env_describe(g->env, i, desc, sizeof(desc));
    fprintf(out, "# env %s=%s  (%s)\n", k, v, desc);
  }
  for (int i = 0; g->over && i < weftx_env_count(g->over); i++) {
    const char *k, *v;
    weftx_env_origin og;
    weftx_env_entry(g->over, i, &k, &v, &og, NULL);
    fprintf(out, "# env %s=%s  (%s, overrides preset %s)\n", k, v, weftx_env_origin_name(og),
            weftx_preset_name(g->preset));
  }
}

void
wr_gcp_destroy(wr_gcp *g)
{
  if (!g)
    return;
  weftx_env_destroy(g->env);
  weftx_env_destroy(g->over);
  weftx_preset_free(g->preset);
  free(g);
}
