/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine: the mpirun command line that runs a planned job. Ranks go to
 * hosts as planned (-H host:COUNT with --map-by slot or node), Open MPI's own
 * binding is off (--bind-to none), and every rank starts as weft-rank, which
 * places, binds and sets up its rank from the same policy, then runs the
 * program. Arguments go to mpirun as an argv (execvp): no shell sees them.
 * Open MPI 5.x spells a few of these differently (--display bind,
 * plm_ssh_*); only 4.1's spelling is produced here.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weftrun.h"

extern char **environ;

int
wr_argv_add(wr_argv *a, const char *s)
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

static int addf(wr_argv *a, const char *fmt, ...) WEFT_PRINTF(2, 3);

static int
addf(wr_argv *a, const char *fmt, ...)
{
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(buf))
    return WEFT_ERANGE;
  return wr_argv_add(a, buf);
}

void
wr_argv_free(wr_argv *a)
{
  for (int i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof(*a));
}

static int
executable(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* weft-rank: $WEFT_RANK_PATH, the build tree next to this weftrun, the installed libexec. */
const char *
wr_find_rank_agent(char *buf, size_t len)
{
  const char *env = getenv("WEFT_RANK_PATH");
  if (env && *env) {
    if (!executable(env))
      return NULL;
    snprintf(buf, len, "%s", env);
    return buf;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      /* src/weftrun/ or src/weftrun/.libs/ of a build tree */
      static const char *const rel[] = { "/../weft-rank/weft-rank", "/../../weft-rank/weft-rank" };
      for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        if ((size_t)snprintf(buf, len, "%s%s", self, rel[i]) < len && executable(buf)) {
          char *real = realpath(buf, NULL);
          if (real) {
            snprintf(buf, len, "%s", real);
            free(real);
          }
          return buf;
        }
      }
    }
  }
  if ((size_t)snprintf(buf, len, "%s/weft-rank", WEFT_LIBEXECDIR) < len && executable(buf))
    return buf;
  return NULL;
}

/* mpirun: $WEFT_MPIRUN, else the first one on PATH. */
const char *
wr_find_mpirun(char *buf, size_t len)
{
  const char *env = getenv("WEFT_MPIRUN");
  if (env && *env) {
    snprintf(buf, len, "%s", env);
    return executable(buf) ? buf : NULL;
  }
  const char *path = getenv("PATH");
  if (!path)
    path = "/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n && (size_t)snprintf(buf, len, "%.*s/mpirun", (int)n, path) < len && executable(buf))
      return buf;
    path += n + (path[n] == ':');
  }
  return NULL;
}

/* Variables forwarded to every rank by default, beside -x (weftx_env_forward_default()).
 * WEFT_TOPOLOGY describes one host, so it stays with the host it was set on. */
static int
forwarded(const char *name)
{
  if (!strcmp(name, "WEFT_TOPOLOGY") || !strcmp(name, "WEFT_RANK_PATH") ||
      !strcmp(name, "WEFT_MPIRUN"))
    return 0;
  return weftx_env_forward_default(name);
}

static int
add_env(const wr_opts *o, wr_argv *a)
{
  int rc = 0;
  for (int i = 0; i < o->nxvars && !rc; i++)
    rc = addf(a, "-x") || addf(a, "%s", o->xvars[i]);
  for (char **e = environ; *e && !rc; e++) {
    char name[256];
    size_t n = strcspn(*e, "=");
    if (n == 0 || n >= sizeof(name) || (*e)[n] != '=')
      continue;
    memcpy(name, *e, n);
    name[n] = '\0';
    if (!forwarded(name))
      continue;
    int explicit = 0;
    for (int i = 0; i < o->nxvars; i++)
      if (!strncmp(o->xvars[i], name, n) && (o->xvars[i][n] == '\0' || o->xvars[i][n] == '='))
        explicit = 1;
    if (!explicit)
      rc = addf(a, "-x") || addf(a, "%s", name);
  }
  return rc;
}

static int
has_mca(const wr_opts *o, const char *key)
{
  for (int i = 0; i < o->nmca; i++)
    if (!strcmp(o->mca[i].key, key))
      return 1;
  char env[128];
  snprintf(env, sizeof(env), "OMPI_MCA_%s", key);
  return getenv(env) != NULL;
}

/* 1 when mpirun must be told the host of every rank (its sequential mapper):
 * Open MPI 4.1 maps the ranks of its own host first whatever the -H order, so
 * a plan whose first host is not this one, while this one has ranks too, would
 * be launched in another order than planned (and each rank would place itself
 * as another host's rank). The same holds for hosts ordered by physical_host. */
static int
need_seq(const wr_job *j)
{
  int first = -1;

  if (wr_job_ordered(j))
    return 1;
  for (int h = 0; h < wr_job_nhosts(j); h++) {
    if (wr_job_count(j, h) <= 0)
      continue;
    if (first < 0)
      first = h;
    else if (wr_job_host_is_local(j, h) && !wr_job_host_is_local(j, first))
      return 1;
  }
  return 0;
}

int
wr_engine_argv(const wr_job *j, const wr_opts *o, const char *mpirun, const char *agent,
               const wr_master *m, const char *host_xml, wr_argv *a)
{
  int nh = wr_job_nhosts(j), rc = 0;
  char *hosts = NULL, *counts = NULL, *names = NULL;
  size_t hl = 0, cl = 0, nl = 0;
  FILE *hf = open_memstream(&hosts, &hl);
  FILE *cf = open_memstream(&counts, &cl);
  FILE *nf = open_memstream(&names, &nl);
  if (!hf || !cf || !nf) {
    rc = WEFT_ENOMEM;
    goto out;
  }
  int first = 1;
  for (int h = 0; h < nh; h++) {
    if (wr_job_count(j, h) > 0) {
      fprintf(hf, "%s%s:%d", first ? "" : ",", wr_job_host(j, h), wr_job_count(j, h));
      first = 0;
    }
    fprintf(cf, "%s%d", h ? "," : "", wr_job_count(j, h));
    fprintf(nf, "%s%s", h ? "," : "", wr_job_host(j, h));
  }
  if (fclose(hf) | fclose(cf) | fclose(nf)) {
    hf = cf = nf = NULL;
    rc = WEFT_ENOMEM;
    goto out;
  }
  hf = cf = nf = NULL;

  rc = wr_argv_add(a, mpirun);
  if (!rc && o->allow_run_as_root)
    rc = addf(a, "--allow-run-as-root");
  if (!rc && need_seq(j)) {
    /* one -H entry per rank, in the plan's order */
    char *seq = NULL;
    size_t sl = 0;
    FILE *sf = open_memstream(&seq, &sl);
    if (!sf)
      rc = WEFT_ENOMEM;
    for (int r = 0; sf && r < wr_job_np(j); r++)
      fprintf(sf, "%s%s", r ? "," : "", wr_job_host(j, wr_job_rank_host(j, r)));
    if (sf && fclose(sf))
      rc = WEFT_ENOMEM;
    if (!rc)
      rc = addf(a, "-np") || addf(a, "%d", wr_job_np(j)) || addf(a, "-H") || wr_argv_add(a, seq) ||
           addf(a, "--mca") || addf(a, "rmaps") || addf(a, "seq") ||
           addf(a, "--bind-to") || addf(a, "none");
    free(seq);
  } else if (!rc)
    rc = addf(a, "-np") || addf(a, "%d", wr_job_np(j)) || addf(a, "-H") || addf(a, "%s", hosts) ||
         addf(a, "--map-by") || addf(a, "%s", wr_job_by_node(j) ? "node" : "slot") ||
         addf(a, "--bind-to") || addf(a, "none");
  if (!rc)
    rc = add_env(o, a);
  if (!rc && m->ifname[0] && !has_mca(o, "btl_tcp_if_include") && !has_mca(o, "btl_tcp_if_exclude"))
    rc = addf(a, "--mca") || addf(a, "btl_tcp_if_include") || addf(a, "%s", m->ifname);
  if (!rc && m->ifname[0] && !has_mca(o, "oob_tcp_if_include") && !has_mca(o, "oob_tcp_if_exclude"))
    rc = addf(a, "--mca") || addf(a, "oob_tcp_if_include") || addf(a, "%s", m->ifname);
  /* mpirun is given exact counts, so it cannot see an oversubscribed host: tell the
   * ranks to yield the cores while they wait, as it would */
  if (!rc && wr_job_oversubscribed(j) && !has_mca(o, "mpi_yield_when_idle"))
    rc = addf(a, "--mca") || addf(a, "mpi_yield_when_idle") || addf(a, "1");
  for (int i = 0; i < o->nmca && !rc; i++)
    rc = addf(a, "--mca") || addf(a, "%s", o->mca[i].key) || addf(a, "%s", o->mca[i].value);
  if (!rc && o->tag_output)
    rc = addf(a, "--tag-output");
  if (!rc && o->timestamp_output)
    rc = addf(a, "--timestamp-output");
  if (!rc && o->output_filename)
    rc = addf(a, "--output-filename") || addf(a, "%s", o->output_filename);
  for (int i = 0; i < o->npass && !rc; i++)
    rc = addf(a, "%s", o->pass[i]);

  /* the rank agent and what it needs to place its rank as planned */
  if (!rc)
    rc = wr_argv_add(a, agent) || addf(a, "--hosts") || addf(a, "%s", names) ||
         addf(a, "--counts") || addf(a, "%s", counts) ||
         addf(a, "--rank-by") || addf(a, "%s", wr_job_by_node(j) ? "node" : "slot");
  if (!rc && o->map_by)
    rc = addf(a, "--map-by") || addf(a, "%s", o->map_by);
  if (!rc && o->bind_to)
    rc = addf(a, "--bind-to") || addf(a, "%s", o->bind_to);
  if (!rc && (o->oversubscribe || wr_job_oversubscribed(j)))
    rc = addf(a, "--oversubscribe");
  if (!rc && o->gpus_per_node >= 0)
    rc = addf(a, "--gpus-per-node") || addf(a, "%ld", o->gpus_per_node);
  if (!rc && o->gpu_visibility)
    rc = addf(a, "--gpu-visibility") || addf(a, "%s", o->gpu_visibility);
  if (!rc && o->nccl_preset)
    rc = addf(a, "--nccl-preset") || addf(a, "%s", o->nccl_preset);
  if (!rc && o->preempt_grace >= 0)
    rc = addf(a, "--preempt-grace") || addf(a, "%ld", o->preempt_grace);
  if (!rc && o->report_bindings)
    rc = addf(a, "--report-bindings");
  if (!rc && m->addr[0])
    rc = addf(a, "--master-addr") || addf(a, "%s", m->addr) ||
         addf(a, "--master-port") || addf(a, "%d", m->port);
  if (!rc && m->ifname[0])
    rc = addf(a, "--ifname") || addf(a, "%s", m->ifname);
  for (int h = 0; h < nh && !rc; h++) {
    const char *f = wr_job_host_file(j, h);
    if (f) {
      char *real = realpath(f, NULL);
      rc = addf(a, "--topology") || addf(a, "%d=%s", h, real ? real : f);
      free(real);
    }
  }
  if (!rc && host_xml && host_xml[0])
    rc = addf(a, "--host-xml") || addf(a, "%s", host_xml);
  if (!rc)
    rc = addf(a, "--");
  for (int i = 0; i < o->nprogram && !rc; i++)
    rc = wr_argv_add(a, o->program[i]);
out:
  if (hf)
    fclose(hf);
  if (cf)
    fclose(cf);
  if (nf)
    fclose(nf);
  free(hosts);
  free(counts);
  free(names);
  return rc ? WEFT_ENOMEM : 0;
}
