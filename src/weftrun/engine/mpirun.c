/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mpirun engine: Open MPI 4.1's mpirun runs a plan. When Open MPI places
 * the ranks (WR_MODE_OMPI), mpirun gets the user's own options word for word,
 * program by program, and every program becomes "weft-rank AGENT-ARGS --
 * PROGRAM ARGS" (engine.c): mpirun maps, ranks and binds as it would have,
 * and weft-rank checks that against the plan and adds weft's environment.
 * When weft places them (WR_MODE_GPU), the ranks go to hosts as planned (a
 * hostfile of "host slots=COUNT" lines with --map-by slot or node, or one line
 * per rank for Open MPI's sequential mapper), Open MPI's own binding is off
 * (--bind-to none), the user's options that do not place ranks follow as
 * typed, and weft-rank places and binds each rank. Inside a Slurm allocation
 * mpirun starts its daemons with srun by itself. When every rank is here,
 * mpirun reads weftrun's probe of this machine instead of probing it again
 * (wr_mpirun_env). Arguments go to mpirun as an
 * argv (execve): no shell sees them. Open MPI 5.x spells a few of these
 * differently (--display bind, plm_ssh_*); only 4.1's spelling is produced
 * here. The probe of remote hosts runs through mpirun too, one weft-rank
 * --probe per host, with --tag-output.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

extern char **environ;

/* -x for the variables weft forwards to every host that the user did not name. */
static int add_env(const wr_plan *p, const wr_opts *o, wr_argv *a)
{
  int rc = 0;
  for (char **e = environ; *e && !rc; e++) {
    size_t n = strcspn(*e, "=");
    if (n == 0 || (*e)[n] != '=' || !wr_engine_forwards(p, *e, n))
      continue;
    int explicit = 0;
    for (int i = 0; i < o->nxvars; i++)
      if (!strncmp(o->xvars[i], *e, n) && (o->xvars[i][n] == '\0' || o->xvars[i][n] == '='))
        explicit = 1;
    if (!explicit) {
      char *name = strndup(*e, n);
      rc = !name || wr_argv_add(a, "-x") || wr_argv_add(a, name);
      free(name);
    }
  }
  return rc;
}

/* The user's option words of program \p app that mpirun gets in this mode. */
static int user_words(const wr_plan *p, const wr_opts *o, int app, wr_argv *a)
{
  const wr_app *ap = &o->apps[app];
  int rc = 0;
  for (int i = 0; i < ap->nwords && !rc; i++) {
    int w = ap->place[i];
    if (w == WR_WORD_ANY || (w == WR_WORD_PLACE && p->mode == WR_MODE_OMPI) ||
        (w == WR_WORD_TIMEOUT && o->timeout_report))
      rc = wr_argv_add(a, ap->words[i]);
  }
  return rc;
}

/* The value of an MCA parameter the user set, on the command line (the last one) or as
 * OMPI_MCA_KEY; NULL when neither sets it. */
static const char *mca_value(const wr_opts *o, const char *key)
{
  static const char pre[] = "OMPI_MCA_";
  size_t n = strlen(key);
  for (int i = o->nmca - 1; i >= 0; i--)
    if (!strcmp(o->mca[i].key, key))
      return o->mca[i].value;
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, pre, sizeof(pre) - 1) && !strncmp(*e + sizeof(pre) - 1, key, n) &&
        (*e)[sizeof(pre) - 1 + n] == '=')
      return *e + sizeof(pre) - 1 + n + 1;
  return NULL;
}

/* An MCA parameter the user set, on the command line or as OMPI_MCA_KEY. */
static int has_mca(const wr_opts *o, const char *key) { return mca_value(o, key) != NULL; }

/* 1 when a line of the parameter file \p path sets one of \p keys. */
static int file_sets(const char *path, const char *const *keys)
{
  char line[1024];
  int yes = 0;
  FILE *f = fopen(path, "r");
  while (f && !yes && fgets(line, sizeof(line), f)) {
    const char *k = line + strspn(line, " \t");
    for (int i = 0; keys[i] && !yes; i++) {
      size_t n = strlen(keys[i]);
      yes = !strncmp(k, keys[i], n) && (k[n] == '=' || k[n] == ' ' || k[n] == '\t');
    }
  }
  if (f)
    fclose(f);
  return yes;
}

/* 1 when one of Open MPI's parameter files sets one of \p keys: the files of
 * $OMPI_MCA_mca_base_param_files, else ~/.openmpi/mca-params.conf and the system's,
 * and the system's override file (Debian's /etc/openmpi, or PREFIX/etc next to
 * mpirun's PREFIX/bin). */
static int param_files_set(const char *mpirun, const char *const *keys)
{
  static const char *const sys[] = {"openmpi-mca-params.conf", "openmpi-mca-params-override.conf"};
  const char *list = getenv("OMPI_MCA_mca_base_param_files"), *home = getenv("HOME");
  const char *slash = strrchr(mpirun, '/');
  size_t n = slash ? (size_t)(slash - mpirun) : 0;
  char path[4200];
  while (n > 0 && mpirun[n - 1] != '/')
    n--; /* PREFIX/ of PREFIX/bin/mpirun */
  for (size_t at = 0, k; list && list[at]; at += k + (list[at + k] == ',')) {
    k = strcspn(list + at, ",");
    if (k > 0 && k < sizeof(path)) {
      memcpy(path, list + at, k);
      path[k] = '\0';
      if (file_sets(path, keys))
        return 1;
    }
  }
  if (!list && home &&
      snprintf(path, sizeof(path), "%s/.openmpi/mca-params.conf", home) < (int)sizeof(path) &&
      file_sets(path, keys))
    return 1;
  for (int i = list ? 1 : 0; i < 2; i++) {
    if (snprintf(path, sizeof(path), "/etc/openmpi/%s", sys[i]) < (int)sizeof(path) &&
        file_sets(path, keys))
      return 1;
    if (n > 0 &&
        snprintf(path, sizeof(path), "%.*setc/%s", (int)n, mpirun, sys[i]) < (int)sizeof(path) &&
        file_sets(path, keys))
      return 1;
  }
  return 0;
}

/* 1 when Open MPI starts its daemons on the other hosts with a fresh environment, so
 * that none of them can read mpirun's HWLOC_XMLFILE and take this machine for its own:
 * its rsh launcher (which it picks outside a resource manager's job, or when told to)
 * through an agent called ssh or rsh (weft-vcluster's rsh clears the environment as
 * ssh does). srun, PBS's tm, LSF and Grid Engine's qrsh pass mpirun's environment on,
 * and so may an agent of another name. A daemon that read it all the same is caught by
 * weft-rank there, which fails the job (load_topology()). */
static int fresh_remote_env(const wr_opts *o, const wr_engine *e)
{
  static const char *const rm[] = {"SLURM_JOB_ID",    "SLURM_JOBID", "PBS_JOBID",
                                   "PBS_ENVIRONMENT", "LSB_JOBID",   "PE_HOSTFILE",
                                   "SGE_ROOT",        "FLUX_URI",    NULL};
  static const char *const agents[] = {"plm_rsh_agent", "orte_rsh_agent", "plm_ssh_agent", NULL};
  static const char *const plm[] = {"plm", NULL};
  const char *v = mca_value(o, "plm");
  for (int i = 0; rm[i]; i++)
    if (getenv(rm[i]))
      return 0;
  if ((v && strcmp(v, "rsh") && strcmp(v, "ssh")) || (!v && param_files_set(e->path, plm)) ||
      param_files_set(e->path, agents))
    return 0;
  for (int i = 0; agents[i]; i++) {
    const char *a = mca_value(o, agents[i]);
    if (!a)
      continue;
    size_t n = strcspn(a, " \t:");
    const char *base = a + n;
    while (base > a && base[-1] != '/')
      base--;
    if (a + n - base != 3 || (strncmp(base, "ssh", 3) && strncmp(base, "rsh", 3)))
      return 0;
  }
  return 1;
}

/* 1 when mpirun may read weftrun's XML of this machine instead of probing it again.
 * A rank on another host needs daemons there that start with a fresh environment
 * (fresh_remote_env()): each probes its own machine. The user must have set none of
 * hwloc's variables (they are how this is done, and they choose what a probe sees)
 * and no topology file of Open MPI's own: on the command line, in the environment, or
 * in Open MPI's parameter files (-am and --tune, which name more, are refused). */
static int reuse_topology(const wr_plan *p, const wr_opts *o, const wr_engine *e)
{
  static const char *const keys[] = {"hwloc_base_topo_file", NULL};
  int remote = 0;
  if (!e->host_xml)
    return 0;
  for (int h = 0; h < p->nhosts; h++)
    if ((p->hosts[h].count > 0 || p->mode != WR_MODE_GPU) && !p->hosts[h].host->local)
      remote = 1;
  if (remote && !fresh_remote_env(o, e))
    return 0;
  for (char **v = environ; *v; v++)
    if (!strncmp(*v, "HWLOC_", 6))
      return 0;
  /* -gmca is an --mca (has_mca) */
  return !has_mca(o, keys[0]) && !param_files_set(e->path, keys);
}

/* mpirun's environment: this machine's topology from weftrun's XML, through hwloc's
 * own variables rather than Open MPI's hwloc_base_topo_file. Open MPI 4.1 then takes
 * its usual path (its probe's "available" processors, which --cpu-set and
 * --report-bindings need, are computed; from hwloc_base_topo_file they are not, and
 * its binding report came out empty), and so does the PMIx server inside mpirun,
 * which probes again on its own. weft-rank removes both variables before anything
 * else, so the program sees the environment plain mpirun gives it. */
int wr_mpirun_env(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *env)
{
  if (!reuse_topology(p, o, e))
    return 0;
  return wr_argv_put(env, WT_HWLOC_XMLFILE, e->host_xml) ||
         wr_argv_add(env, WT_HWLOC_THISSYSTEM "=1");
}

/* 1 when mpirun must be told the host of every rank (its sequential mapper):
 * Open MPI 4.1 maps the ranks of its own host first whatever the hostfile's
 * order, so a plan whose first host is not this one, while this one has ranks
 * too, would be launched in another order than planned (and each rank would
 * place itself as another host's rank). The same holds for hosts ordered by
 * physical_host. */
static int need_seq(const wr_plan *p)
{
  const wr_host *first = NULL;
  if (p->ordered)
    return 1;
  for (int h = 0; h < p->nhosts; h++) {
    if (p->hosts[h].count <= 0)
      continue;
    if (!first)
      first = p->hosts[h].host;
    else if (p->hosts[h].host->local && !first->local)
      return 1;
  }
  return 0;
}

int wr_mpirun_hostfile(const wr_plan *p, FILE *out)
{
  if (need_seq(p)) {
    for (int r = 0; r < p->np; r++)
      fprintf(out, "%s\n", p->hosts[p->ranks[r].host].host->name);
  } else {
    for (int h = 0; h < p->nhosts; h++)
      if (p->hosts[h].count > 0)
        fprintf(out, "%s slots=%d\n", p->hosts[h].host->name, p->hosts[h].count);
  }
  return ferror(out) ? -1 : 0;
}

/* mpirun; when weft places the ranks, where they go and this machine's topology when
 * mpirun may read it. */
int wr_mpirun_argv(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a)
{
  char np[16];
  snprintf(np, sizeof(np), "%d", p->np);
  int rc = wr_argv_add(a, e->call);
  if (rc || p->mode != WR_MODE_GPU)
    return rc;
  rc = wr_argv_add(a, "-np") || wr_argv_add(a, np) || wr_argv_add(a, "--hostfile") ||
       wr_argv_add(a, e->hostfile);
  if (!rc && need_seq(p))
    rc = wr_argv_add(a, "--map-by") || wr_argv_add(a, "seq"); /* 4.1's and 5's spelling */
  else if (!rc)
    rc = wr_argv_add(a, "--map-by") || wr_argv_add(a, p->by_node ? "node" : "slot");
  if (!rc)
    rc = wr_argv_add(a, "--bind-to") || wr_argv_add(a, "none");
  return rc;
}

/* Program \p app's options: the user's words, the variables weft forwards (when it
 * places the ranks, its default patterns; when Open MPI does, the ranks get the
 * environment mpirun gives them, -x as the user wrote it, and weft's own WEFT_*: mpirun
 * gives other hosts only -x variables, and libweft's ranks must agree on those, while
 * the control channel's secret must reach every agent, which unsets it for the
 * program), the network weft chose. */
int wr_mpirun_app_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, int app, wr_argv *a)
{
  int rc = user_words(p, o, app, a) || add_env(p, o, a);
  const char *ifname = net && net->ifname[0] ? net->ifname : NULL;
  if (!rc && ifname && !has_mca(o, "btl_tcp_if_include") && !has_mca(o, "btl_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "btl_tcp_if_include") || wr_argv_add(a, ifname);
  if (!rc && ifname && !has_mca(o, "oob_tcp_if_include") && !has_mca(o, "oob_tcp_if_exclude"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "oob_tcp_if_include") || wr_argv_add(a, ifname);
  /* weft gives mpirun exact counts, so it cannot see an oversubscribed host: tell the
   * ranks to yield the cores while they wait, as it would */
  if (!rc && p->mode == WR_MODE_GPU && p->oversub && !has_mca(o, "mpi_yield_when_idle"))
    rc = wr_argv_add(a, "--mca") || wr_argv_add(a, "mpi_yield_when_idle") || wr_argv_add(a, "1");
  return rc;
}

/* The probe: n ranks by the sequential mapper, one per line of \p hostfile, each output
 * tagged with its rank. */
int wr_mpirun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                         wr_argv *a)
{
  char np[16];
  snprintf(np, sizeof(np), "%d", n);
  int rc = wr_argv_add(a, e->call);
  if (!rc && o->allow_run_as_root)
    rc = wr_argv_add(a, "--allow-run-as-root");
  /* --map-by seq: Open MPI 5 has no "--mca rmaps seq" (its mappers are PRRTE's) */
  const char *const fixed[] = {"-np", np,          "--hostfile", hostfile,       "--map-by",
                               "seq", "--bind-to", "none",       "--tag-output", NULL};
  for (int i = 0; !rc && fixed[i]; i++)
    rc = wr_argv_add(a, fixed[i]);
  for (int i = 0; !rc && i < o->nmca; i++)
    rc =
      wr_argv_add(a, "--mca") || wr_argv_add(a, o->mca[i].key) || wr_argv_add(a, o->mca[i].value);
  for (int i = 0; !rc && i < o->npass; i++)
    rc = wr_argv_add(a, o->pass[i]);
  /* a metadata server named for the job (off GCE: tests) is asked on every host */
  const char *md = getenv("GCE_METADATA_HOST");
  if (!rc && md && *md)
    rc = wr_argv_add(a, "-x") || wr_argv_add(a, "GCE_METADATA_HOST");
  return rc;
}
