/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every variable each rank will get, for --dry-run and the plan JSON, built
 * the way the rank's agent (weft-rank) builds it on its host: the variables
 * weftrun forwards (its default patterns and -x), then the NCCL preset's as
 * this VM resolves them, then weft's own per-rank ones (weftx_rank_env()) only
 * where unset. What every rank shares is shown once; what differs between
 * ranks is shown per rank. Two passes over the ranks, so that memory stays
 * that of the differing variables whatever the job's size.
 *
 * Open MPI's own variables (OMPI_COMM_WORLD_*, PMIX_*) come from mpirun and
 * are not shown; a Slurm step's renumbering of its GPUs happens on the host.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "hosts/hosts.h"
#include "plan.h"

extern char **environ;

/* What every rank gets before its own variables, as weft-rank builds it: the variables
 * weftrun forwards (its patterns and -x), then the NCCL preset's. */
static int shared_env(const wr_plan *p, const wr_inventory *inv, const wr_opts *o, weftx_env **out,
                      char *why, size_t len)
{
  const weftx_env *preset = wr_gcp_preset_env(inv->gcp);
  weftx_env *e;
  int rc;

  if ((rc = weftx_env_create(&e)))
    return rc;
  *out = e;
  /* when Open MPI places the ranks, they get the environment mpirun passes (all of it
   * to the ranks on this host, -x variables to others), as with mpirun alone, and
   * weft's own WEFT_* variables (the engine's -x) */
  if (!p->mpirun_binds && (rc = weftx_env_forward(e, environ)))
    return rc;
  for (char **v = environ; p->mpirun_binds && *v; v++) {
    size_t n = strcspn(*v, "=");
    if ((*v)[n] == '=' && wr_engine_forwards(p, *v, n) &&
        (rc = weftx_env_put(e, *v, WEFTX_ENV_USER, NULL)) == WEFT_ENOMEM)
      return rc;
  }
  for (int i = 0; i < o->nxvars; i++)
    if ((rc = weftx_env_add_x(e, o->xvars[i], environ, why, len)) && rc != WEFT_ENOENT)
      return rc;
  for (int i = 0; preset && i < weftx_env_count(preset); i++) {
    const char *k, *v, *d;
    weftx_env_origin og;
    weftx_env_entry(preset, i, &k, &v, NULL, &d);
    if (weftx_env_origin_of(e, k, &og) == 0 && og == WEFTX_ENV_XARG)
      continue;
    if ((rc = weftx_env_set(e, k, v, WEFTX_ENV_PRESET, d)))
      return rc;
  }
  return 0;
}

/* Rank r's own variables (weftx_rank_env()) after the shared ones in \p e. They only
 * fill what is unset, so the shared entries stay as they are, and what rank r adds is
 * the entries from the shared count on (weftx_env_truncate() takes them away). */
static int rank_vars(const wr_plan *p, const wr_net *net, const wr_opts *o, int r, weftx_env *e,
                     char *why, size_t len)
{
  const weftx_plan_rank *pr = &p->ranks[r];
  const wr_plan_host *ph = &p->hosts[pr->host];
  int devices[WEFTX_SLURM_GPUS_MAX], rc;
  weftx_rank_info ri;

  weftx_rank_info_init(&ri);
  ri.rank = r;
  ri.size = p->np;
  ri.local_rank = pr->local_rank;
  ri.local_size = ph->count;
  ri.node_rank = pr->node_rank;
  ri.nnodes = p->nhosts;
  ri.master_addr = net && net->addr[0] ? net->addr : NULL;
  ri.master_port = net ? net->port : 0;
  /* a real run's is its own weftrun's HOST:PID, not this one's */
  ri.run_id = "HOST:PID";
  ri.ifname = net && net->ifname[0] ? net->ifname : NULL;
  if (o->gpu_visibility)
    weftx_gpu_visibility_parse(o->gpu_visibility, &ri.gpu_visibility);
  if ((rc = weftx_rank_info_set_place(&ri, ph->host->topo, &pr->place)))
    return rc;
  if (ph->host->gpus_allowed &&
      weftx_slurm_gpu_indices("--gpus", ph->host->gpus_allowed, devices, WEFTX_SLURM_GPUS_MAX,
                              &ri.ndevices, NULL, 0) == 0)
    ri.devices = devices;
  return weftx_rank_env(e, &ri, why, len);
}

static char *kv_dup(const char *k, const char *v)
{
  size_t n = strlen(k) + strlen(v) + 2;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s=%s", k, v);
  return s;
}

/* "weft", "-x, overrides preset a3-highgpu-8g", "weft; chosen again at launch: ..." */
static char *source_dup(const weftx_env *e, int i, const char *over, const char *again)
{
  char desc[320];
  weftx_env_describe(e, i, desc, sizeof(desc));
  size_t n = strlen(desc) + (over ? strlen(over) + 24 : 0) + (again ? strlen(again) + 32 : 0) + 1;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s%s%s%s%s", desc, over ? ", overrides preset " : "", over ? over : "",
             again ? "; chosen again at launch: " : "", again ? again : "");
  return s;
}

int wr_preview_make(const wr_plan *p, const wr_inventory *inv, const wr_net *net, const wr_opts *o,
                    wr_preview *pv, char *why, size_t len)
{
  weftx_env *e = NULL, *ref = NULL;
  char *differs = NULL;
  int rc, nb, n;

  memset(pv, 0, sizeof(*pv));
  why[0] = '\0';
  if (p->np < 1)
    return 0;
  /* the shared entries once; each rank's own after them, taken away again: rank 0's
   * kept in ref (entry nb + j of rank 0's environment is entry j of ref) */
  if ((rc = shared_env(p, inv, o, &e, why, len)) || (rc = weftx_env_create(&ref)))
    goto out;
  nb = weftx_env_count(e);
  if ((rc = rank_vars(p, net, o, 0, e, why, len)))
    goto out;
  n = weftx_env_count(e);
  for (int i = nb; i < n; i++) {
    const char *k, *v, *d;
    weftx_env_origin og;
    weftx_env_entry(e, i, &k, &v, &og, &d);
    if ((rc = weftx_env_set(ref, k, v, og, d)))
      goto out;
  }
  weftx_env_truncate(e, nb);
  if (!(differs = calloc((size_t)n + 1, 1)))
    goto nomem;
  /* a variable of rank 0's own that another rank has otherwise, or lacks; one rank 0
   * lacks differs too: found in pass 2, kept per rank */
  for (int r = 1; r < p->np; r++) {
    if ((rc = rank_vars(p, net, o, r, e, why, len)))
      goto out;
    /* rank 0's own keys are not among the shared ones: found in e, they are rank r's */
    for (int j = 0; j < n - nb; j++) {
      const char *k, *v, *x;
      if (differs[nb + j])
        continue;
      weftx_env_entry(ref, j, &k, &v, NULL, NULL);
      if (!(x = weftx_env_get(e, k)) || strcmp(x, v))
        differs[nb + j] = 1;
    }
    weftx_env_truncate(e, nb);
  }
  /* what every rank shares, in rank 0's order */
  if (!(pv->all = calloc((size_t)n, sizeof(*pv->all))) ||
      !(pv->source = calloc((size_t)n, sizeof(*pv->source))) ||
      !(pv->unresolved = calloc((size_t)n, sizeof(*pv->unresolved))) ||
      !(pv->origin = calloc((size_t)n, sizeof(*pv->origin))) ||
      !(pv->forwarded = calloc((size_t)n, sizeof(*pv->forwarded))))
    goto nomem;
  for (int i = 0; i < n; i++) {
    const weftx_env *src = i < nb ? e : ref;
    int at = i < nb ? i : i - nb;
    const char *k, *v;
    weftx_env_origin og;
    if (differs[i])
      continue;
    weftx_env_entry(src, at, &k, &v, &og, NULL);
    if (og == WEFTX_ENV_USER && !wr_gcp_overrides(inv->gcp, k)) {
      if (!(pv->forwarded[pv->nforwarded++] = strdup(k)))
        goto nomem;
      continue;
    }
    /* gloo's interface is NCCL's, placeholder and all */
    const char *unres = og == WEFTX_ENV_PRESET ? wr_gcp_unresolved(inv->gcp, k)
                        : og == WEFTX_ENV_WEFT && !strcmp(k, "GLOO_SOCKET_IFNAME")
                          ? wr_gcp_unresolved(inv->gcp, "NCCL_SOCKET_IFNAME")
                          : NULL;
    const char *again = o->dry_run && og == WEFTX_ENV_WEFT && !strcmp(k, "MASTER_PORT")
                          ? "a free port on the first host"
                          : NULL;
    pv->origin[pv->nall] = og;
    if (!(pv->all[pv->nall] = kv_dup(k, v)) ||
        !(pv->source[pv->nall] = source_dup(src, at, wr_gcp_overrides(inv->gcp, k), again)) ||
        (unres && !(pv->unresolved[pv->nall] = strdup(unres))))
      goto nomem;
    pv->nall++;
  }
  /* what differs, per rank: of its own variables, those not shared by all */
  if (!(pv->rank = calloc((size_t)p->np, sizeof(*pv->rank))) ||
      !(pv->nrank = calloc((size_t)p->np, sizeof(*pv->nrank))))
    goto nomem;
  for (int r = 0; r < p->np; r++) {
    if ((rc = rank_vars(p, net, o, r, e, why, len)))
      goto out;
    int m = weftx_env_count(e), k = 0;
    if (!(pv->rank[r] = calloc((size_t)(m - nb) + 1, sizeof(**pv->rank))))
      goto nomem;
    for (int i = nb; i < m; i++) {
      const char *key, *v;
      weftx_env_entry(e, i, &key, &v, NULL, NULL);
      int j = weftx_env_index(ref, key);
      if (j >= 0 && !differs[nb + j])
        continue;
      if (!(pv->rank[r][k++] = kv_dup(key, v)))
        goto nomem;
      pv->nrank[r] = k;
    }
    weftx_env_truncate(e, nb);
  }
  rc = 0;
  goto out;
nomem:
  rc = WEFT_ENOMEM;
out:
  if (rc && !why[0])
    snprintf(why, len, "%s", weft_strerror(rc));
  free(differs);
  weftx_env_destroy(ref);
  weftx_env_destroy(e);
  return rc;
}

void wr_preview_free(wr_preview *pv, int np)
{
  for (int i = 0; i < pv->nforwarded; i++)
    free(pv->forwarded[i]);
  free(pv->forwarded);
  for (int i = 0; i < pv->nall; i++) {
    free(pv->all[i]);
    free(pv->source[i]);
    free(pv->unresolved[i]);
  }
  for (int r = 0; pv->rank && r < np; r++) {
    for (int i = 0; pv->rank[r] && pv->rank[r][i]; i++)
      free(pv->rank[r][i]);
    free(pv->rank[r]);
  }
  free(pv->all);
  free(pv->source);
  free(pv->unresolved);
  free(pv->origin);
  free(pv->rank);
  free(pv->nrank);
  memset(pv, 0, sizeof(*pv));
}

void wr_preview_print(const wr_preview *pv, const wr_plan *p, FILE *out)
{
  for (int i = 0; i < pv->nall; i++)
    fprintf(out, "# env %s  (%s%s%s%s)\n", pv->all[i], pv->source[i],
            pv->unresolved[i] ? "; unresolved here: " : "",
            pv->unresolved[i] ? pv->unresolved[i] : "",
            pv->unresolved[i] ? ", each host fills it in" : "");
  if (p->mpirun_binds)
    fprintf(out, "# env and mpirun's environment, as mpirun passes it: all of it to the ranks on "
                 "this host, the -x variables and weftrun's WEFT_* ones to the others\n");
  if (pv->nforwarded) {
    fprintf(out, "# env forwarded as you have them:");
    for (int i = 0; i < pv->nforwarded; i++)
      fprintf(out, " %s", pv->forwarded[i]);
    fputc('\n', out);
  }
  for (int r = 0; pv->rank && r < p->np; r++) {
    if (!pv->nrank[r])
      continue;
    fprintf(out, "# env rank %d:", r);
    for (int i = 0; i < pv->nrank[r]; i++)
      fprintf(out, " %s", pv->rank[r][i]);
    fputc('\n', out);
  }
}
