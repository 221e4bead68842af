/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The programs weftrun starts, mpirun or srun and weft-rank: where they are,
 * and the argument vectors and environments built for them (handed to
 * execve, so no shell sees them).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

int wr_argv_add(wr_argv *a, const char *s)
{
  if (a->n + 2 > a->cap) {
    int cap = a->cap ? a->cap * 2 : 64;
    char **v = realloc(a->v, (size_t)cap * sizeof(*v));
    if (!v)
      return WEFT_ENOMEM;
    a->v = v;
    a->cap = cap;
  }
  if (!(a->v[a->n] = strdup(s)))
    return WEFT_ENOMEM;
  a->v[++a->n] = NULL;
  return 0;
}

int wr_argv_put(wr_argv *a, const char *key, const char *value)
{
  size_t n = strlen(key) + strlen(value) + 2;
  char *kv = malloc(n);
  int rc = kv ? 0 : WEFT_ENOMEM;
  if (kv) {
    snprintf(kv, n, "%s=%s", key, value);
    rc = wr_argv_add(a, kv);
  }
  free(kv);
  return rc;
}

int wr_argv_add_cb(void *a, const char *s) { return wr_argv_add(a, s); }

void wr_argv_free(wr_argv *a)
{
  for (int i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof(*a));
}

void wr_argv_print(FILE *out, const char *prefix, const wr_argv *a)
{
  fputs(prefix, out);
  for (int i = 0; i < a->n; i++)
    fprintf(out, " %s", a->v[i]);
  fputc('\n', out);
}

/* weft-rank: $WEFT_RANK_PATH, the build tree next to this weftrun (src/weftrun/ or
 * src/weftrun/.libs/), the installed libexec. */
const char *wr_find_rank_agent(char *buf, size_t len)
{
  const char *env = getenv("WEFT_RANK_PATH");
  if (env && *env) {
    const char *look[] = {env, NULL};
    return weftx_find_exe(look, buf, len);
  }
  const char *look[] = {"$ORIGIN/../weft-rank/weft-rank", "$ORIGIN/../../weft-rank/weft-rank",
                        WEFT_LIBEXECDIR "/weft-rank", NULL};
  return weftx_find_exe(look, buf, len);
}

int wr_engine_ready(const wr_opts *o, const wr_engine *e)
{
  if (!e->found && e->kind == WR_ENGINE_MPIRUN) {
    fprintf(stderr, "weftrun: mpirun not found on PATH%s; install Open MPI or set WEFT_MPIRUN%s\n",
            getenv("WEFT_MPIRUN") ? " (WEFT_MPIRUN is not executable)" : "",
            getenv("SLURM_JOB_ID") ? ", or use --engine srun" : "");
    return WR_EXIT_ENGINE;
  }
  if (!e->found && e->kind == WR_ENGINE_HYDRA) {
    fprintf(stderr,
            "weftrun: mpiexec.hydra not found on PATH%s; install MPICH's (apt-get install "
            "mpich) or set WEFT_HYDRA\n",
            getenv("WEFT_HYDRA") ? " (WEFT_HYDRA is not executable)" : "");
    return WR_EXIT_ENGINE;
  }
  if (!e->found) {
    fprintf(stderr,
            "weftrun: srun not found on PATH%s; add Slurm's bin directory to PATH or set "
            "WEFT_SRUN\n",
            getenv("WEFT_SRUN") ? " (WEFT_SRUN is not executable)" : "");
    return WR_EXIT_ENGINE;
  }
  const char *r1 = getenv("OMPI_ALLOW_RUN_AS_ROOT"), *r2 = getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  if (e->kind == WR_ENGINE_MPIRUN && geteuid() == 0 && !o->allow_run_as_root &&
      !(r1 && !strcmp(r1, "1") && r2 && !strcmp(r2, "1"))) {
    fprintf(stderr,
            "weftrun: running as root, which mpirun refuses; add --allow-run-as-root (or set "
            "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1), or run as a user\n");
    return WR_EXIT_ENGINE;
  }
  if (access(e->agent, X_OK)) {
    fprintf(stderr,
            "weftrun: weft-rank not found (looked at $WEFT_RANK_PATH, the build tree and "
            "%s); reinstall weft or set WEFT_RANK_PATH\n",
            WEFT_LIBEXECDIR);
    return WR_EXIT_ENGINE;
  }
  return 0;
}

const char *wr_engine_given(wr_engine_kind kind)
{
  const char *env = getenv(kind == WR_ENGINE_MPIRUN  ? "WEFT_MPIRUN"
                           : kind == WR_ENGINE_HYDRA ? "WEFT_HYDRA"
                                                     : "WEFT_SRUN");
  return env && *env                ? env
         : kind == WR_ENGINE_MPIRUN ? "mpirun"
         : kind == WR_ENGINE_HYDRA  ? "mpiexec.hydra"
                                    : "srun";
}

/* mpirun: $WEFT_MPIRUN, else the first one on $PATH. */
const char *wr_find_mpirun(char *buf, size_t len)
{
  const char *look[] = {wr_engine_given(WR_ENGINE_MPIRUN), NULL};
  return weftx_find_exe(look, buf, len);
}

/* MPICH's mpiexec.hydra: $WEFT_HYDRA, else the first one on $PATH. */
const char *wr_find_hydra(char *buf, size_t len)
{
  const char *look[] = {wr_engine_given(WR_ENGINE_HYDRA), NULL};
  return weftx_find_exe(look, buf, len);
}

/* srun: $WEFT_SRUN, else the first one on $PATH. */
const char *wr_find_srun(char *buf, size_t len)
{
  const char *look[] = {wr_engine_given(WR_ENGINE_SRUN), NULL};
  return weftx_find_exe(look, buf, len);
}

extern char **environ;

/* Is environment entry \p e the variable named by change \p c ("KEY=VALUE" or "KEY")? */
static int same_key(const char *e, const char *c)
{
  size_t n = strcspn(c, "=");
  return !strncmp(e, c, n) && e[n] == '=';
}

char **wr_env_build(const wr_argv *changes)
{
  int n = 0;
  for (char **e = environ; *e; e++)
    n++;
  char **v = calloc((size_t)(n + (changes ? changes->n : 0) + 1), sizeof(*v));
  int k = 0;
  if (!v)
    return NULL;
  for (char **e = environ; *e; e++) {
    int changed = 0;
    for (int i = 0; changes && i < changes->n && !changed; i++)
      changed = same_key(*e, changes->v[i]);
    if (!changed)
      v[k++] = *e;
  }
  for (int i = 0; changes && i < changes->n; i++) {
    int later = 0; /* the last change of a variable wins */
    for (int j = i + 1; j < changes->n && !later; j++)
      later = strcspn(changes->v[j], "=") == strcspn(changes->v[i], "=") &&
              !strncmp(changes->v[j], changes->v[i], strcspn(changes->v[i], "="));
    if (!later && strchr(changes->v[i], '='))
      v[k++] = changes->v[i];
  }
  return v;
}
