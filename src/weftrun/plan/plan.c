/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plan, a pure function of the options, the hosts and their facts. It
 * first decides which rule places the ranks: weft's GPU rule (one rank per
 * GPU, bound next to it: on GPU hosts by default, or with --map-by gpu) or
 * Open MPI's layout of the user's own options (hosts without GPUs, a CPU
 * mapping asked for, several programs), whichever engine starts them. Then
 * gpu.c or ompi.c places them (among the GPUs each host's ranks may have: a
 * Slurm job's); this file adds the environment the plan shows. No I/O.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan.h"

static int nomem(char *why, size_t len)
{
  snprintf(why, len, "out of memory");
  return WR_EXIT_ENGINE;
}

static int add_env(wr_plan *p, const char *key, size_t keylen, const char *value)
{
  char **v = realloc(p->env, (size_t)(p->nenv + 1) * sizeof(*v));
  size_t n = keylen + strlen(value) + 2;
  if (!v)
    return -1;
  p->env = v;
  if (!(v[p->nenv] = malloc(n)))
    return -1;
  snprintf(v[p->nenv++], n, "%.*s=%s", (int)keylen, key, value);
  return 0;
}

static const char *lookup(char *const *env, const char *key, size_t n)
{
  for (; env && *env; env++)
    if (!strncmp(*env, key, n) && (*env)[n] == '=')
      return *env + n + 1;
  return NULL;
}

/* The -x variables with a value, as every rank will see them, then the preset's. */
static int environment(wr_plan *p, const wr_opts *o, const wr_plan_here *here)
{
  for (int i = 0; i < o->nxvars; i++) {
    const char *x = o->xvars[i], *eq = strchr(x, '=');
    size_t n = eq ? (size_t)(eq - x) : strlen(x);
    const char *v = eq ? eq + 1 : lookup(here->environ, x, n);
    if (v && add_env(p, x, n, v))
      return -1;
  }
  for (int i = 0; i < here->npreset_env; i++)
    if (add_env(p, here->preset_env[i], strcspn(here->preset_env[i], "="),
                here->preset_env[i] + strcspn(here->preset_env[i], "=") + 1))
      return -1;
  return 0;
}

/* The GPU rule when asked (--map-by gpu), or by default when every host has GPUs and
 * nothing asks for Open MPI's placement; Open MPI's layout otherwise. */
static wr_mode choose(const wr_opts *o, const wr_inventory *inv, char *why, size_t len)
{
  const char *cpu = wr_opts_cpu_mapping(o);
  int gpus = 0;

  if (o->map_by && !cpu) {
    snprintf(why, len, "--map-by %s", o->map_by);
    return WR_MODE_GPU;
  }
  if (cpu) {
    snprintf(why, len, "%s", cpu);
    return WR_MODE_OMPI;
  }
  if (o->napps > 1) {
    snprintf(why, len, "%d programs", o->napps);
    return WR_MODE_OMPI;
  }
  for (int h = 0; h < inv->nhosts; h++)
    gpus += inv->hosts[h].gpus > 0;
  if (gpus == inv->nhosts) {
    snprintf(why, len, "every host has GPUs");
    return WR_MODE_GPU;
  }
  if (gpus == 0)
    snprintf(why, len, "no host has a GPU");
  else
    snprintf(why, len, "%d of %d hosts have no GPU", inv->nhosts - gpus, inv->nhosts);
  return WR_MODE_OMPI;
}

/* When weft places the ranks: how that differs from what mpirun alone would do, in one
 * sentence (the Open MPI model's plan of the same command). */
static void departure(wr_plan *p, const wr_opts *o, const wr_inventory *inv)
{
  wr_plan *m = calloc(1, sizeof(*m));
  char why[512] = "", counts[256] = "", bind[64] = "";
  int same = 0, rc = m ? 0 : -1;
  size_t off = 0;

  if (!rc && !(m->hosts = calloc((size_t)inv->nhosts, sizeof(*m->hosts))))
    rc = -1;
  if (!rc) {
    m->nhosts = inv->nhosts;
    m->napps = 1;
    rc = wr_plan_ompi(m, o, inv, why, sizeof(why));
  }
  if (rc == 0) {
    same = m->np == p->np;
    for (int h = 0; same && h < p->nhosts; h++)
      same = m->hosts[h].host == p->hosts[h].host && m->hosts[h].count == p->hosts[h].count;
    for (int h = 0; h < m->nhosts && m->hosts[h].count && off < sizeof(counts) - 1; h++)
      off += (size_t)snprintf(counts + off, sizeof(counts) - off, "%s%s %d", h ? ", " : "",
                              m->hosts[h].host->name, m->hosts[h].count);
    unsigned b = WEFTX_OMPI_POLICY(m->ompi.binding);
    snprintf(bind, sizeof(bind), "%s",
             b == WEFTX_OMPI_BIND_NONE     ? "none"
             : b == WEFTX_OMPI_BIND_CPUSET ? "cpu-list"
                                           : weftx_ompi_level_name((int)b));
  }
  if (rc > 0)
    snprintf(p->departure, sizeof(p->departure),
             "departs from mpirun (weftrun(1), DIFFERENCES "
             "FROM MPIRUN): one rank per GPU, bound next to it; mpirun alone would refuse "
             "this command line: %s",
             why);
  else if (rc == 0)
    snprintf(p->departure, sizeof(p->departure),
             "departs from mpirun (weftrun(1), DIFFERENCES "
             "FROM MPIRUN): one rank per GPU, bound next to it; mpirun alone would start %s%d "
             "ranks (%s) bound to %s%s",
             same ? "the same " : "", m->np, counts, bind,
             same ? "" : "; --map-by core (or another CPU mapping) gives mpirun's placement");
  wr_plan_destroy(m);
}

int wr_plan_make(const wr_opts *o, const wr_inventory *inv, const wr_plan_here *here, wr_plan **out,
                 char *why, size_t whylen)
{
  wr_plan *p = calloc(1, sizeof(*p));
  int rc;
  *out = p;
  why[0] = '\0';
  if (!p || !(p->hosts = calloc((size_t)inv->nhosts, sizeof(*p->hosts))))
    return nomem(why, whylen);
  p->nhosts = inv->nhosts;
  p->napps = o->napps > 0 ? o->napps : 1;
  if (o->v5_only && inv->ompi_version > 0 && inv->ompi_version < 500) {
    snprintf(why, whylen,
             "%s is Open MPI 5's option, and this mpirun is Open MPI %d.%d; its words are "
             "--report-bindings, --display-map, --display-allocation (reports) and --mca "
             "(run-time options)",
             o->v5_only, inv->ompi_version / 100, inv->ompi_version % 100);
    return WR_EXIT_USAGE;
  }
  const char *merge = NULL;
  for (int i = 0; i < o->npass; i++)
    if (strstr(o->pass[i], "merge-stderr-to-stdout"))
      merge = o->pass[i];
  if (inv->ompi_version >= 500 && merge) {
    snprintf(why, whylen,
             "'%s' under Open MPI 5: Open MPI has it, weftrun does not (weft-rank keeps each "
             "rank's two streams apart); use 2>&1 in the program's command",
             merge);
    return WR_EXIT_USAGE;
  }
  if (inv->ompi_version >= 500 && (o->output_filename || o->path_word || o->np_twice)) {
    /* what Open MPI 5's mpirun does otherwise than 4.1's, which weft-rank follows */
    snprintf(why, whylen, "'%s' under Open MPI 5: Open MPI has it, weftrun does not (%s)",
             o->output_filename ? "--output-filename"
             : o->path_word     ? o->path_word
                                : o->np_twice,
             o->output_filename
               ? "it writes Open MPI 4.1's DIR/1/rank.N/stdout; use --output tag and redirect"
             : o->path_word
               ? "Open MPI 5 looks for weft-rank there; add DIRS to PATH instead"
               : "given twice, Open MPI 5 takes the first, 4.1 the last; give it once");
    return WR_EXIT_USAGE;
  }
  p->mode = choose(o, inv, p->mode_why, sizeof(p->mode_why));
  p->mpirun_binds = p->mode == WR_MODE_OMPI && !inv->no_mapper;
  if (p->mode == WR_MODE_GPU && o->napps > 1) {
    snprintf(why, whylen,
             "several programs (':') under --map-by gpu: weft places one program; "
             "leave --map-by out (Open MPI then places them) or give --map-by core");
    return WR_EXIT_USAGE;
  }
  if (p->mode == WR_MODE_GPU)
    rc = wr_plan_gpu(p, o, inv->hosts, inv->nhosts, here, why, whylen);
  else
    rc = wr_plan_ompi(p, o, inv, why, whylen);
  if (rc)
    return rc;
  if (p->mode == WR_MODE_GPU)
    departure(p, o, inv);
  if (environment(p, o, here))
    return nomem(why, whylen);
  return 0;
}

void wr_plan_destroy(wr_plan *p)
{
  if (!p)
    return;
  if (p->ranks)
    for (int r = 0; r < p->np; r++)
      weftx_place_clear(&p->ranks[r].place);
  free(p->ranks);
  free(p->rank_app);
  for (int i = 0; i < p->nenv; i++)
    free(p->env[i]);
  free(p->env);
  for (int h = 0; p->hosts && h < p->nhosts; h++)
    free(p->hosts[h].per_app);
  free(p->hosts);
  free(p);
}

int wr_plan_host_of(const wr_plan *p, const char *name)
{
  for (int h = 0; h < p->nhosts; h++)
    if (!strcmp(p->hosts[h].host->name, name))
      return h;
  return -1;
}
