/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hydra engine: MPICH's mpiexec.hydra (Debian's mpich package) starts
 * the ranks of a program built with MPICH or another MPICH-family MPI (Intel
 * MPI, MVAPICH), which Open MPI's mpirun would start as so many singletons.
 * Ranks go to hosts exactly as planned: a hostfile of "host:count" lines, one
 * per run of consecutive ranks on one host, read in order; Hydra's own
 * binding is off (-bind-to none) and each agent places and binds its rank as
 * under srun (to the model of Open MPI's mappers, or weft's GPU rule). Hydra
 * hands weftrun's whole environment to every rank (-genvall, its default), so
 * -x VAR=VALUE becomes a variable of its environment and WEFT_TOPOLOGY (one
 * host's) is left out of it, as with srun. Hydra reaches other hosts by its
 * own launcher (ssh by default, fork for this host; HYDRA_LAUNCHER and
 * HYDRA_LAUNCHER_EXEC as the user set them). What Hydra cannot do (several
 * programs, Open MPI's own options and MCA parameters, stamped output) is refused
 * before anything starts; --tag-output is srun's label ("3: line").
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

int wr_hydra_check(const wr_opts *o, char *why, size_t len)
{
  const char *what = o->napps > 1          ? "several programs separated by ':'"
                     : o->mpirun_only      ? o->mpirun_only
                     : o->npass > 0        ? o->pass[0]
                     : o->timestamp_output ? "--timestamp-output"
                                           : NULL;
  if (!what && o->nmca > 0) {
    snprintf(why, len,
             "--mca %s: Open MPI's parameters mean nothing to an MPICH program under "
             "--engine hydra; drop it (MPICH reads MPIR_CVAR_* variables: -x MPIR_CVAR_NAME=VALUE)",
             o->mca[0].key);
    return -1;
  }
  if (!what)
    return 0;
  snprintf(why, len, "%s: --engine hydra (MPICH's mpiexec.hydra) does not run %s; drop it%s", what,
           o->napps > 1 ? "them" : "it",
           o->napps > 1 ? ", or start each program with weftrun of its own" : "");
  return -1;
}

/* 1 when every host's ranks are consecutive (by slot); 0 when they alternate (by node).
 * Hydra counts the local ranks per line of its hostfile, so a host must have one line:
 * alternating ranks go one per host in turn (-ppn 1, which Hydra deals out round robin),
 * and each agent checks that against the plan. */
static int runs(const wr_plan *p)
{
  for (int r = 1; r < p->np; r++)
    if (p->ranks[r].host != p->ranks[r - 1].host)
      for (int k = 0; k < r - 1; k++)
        if (p->ranks[k].host == p->ranks[r].host)
          return 0;
  return 1;
}

/* Hydra's hostfile: "host:count" per run of consecutive ranks on one host, so that the
 * ranks go where the plan put them, in its order; by node, each host's count in the
 * order of its first rank. */
int wr_hydra_hostfile(const wr_plan *p, FILE *out)
{
  if (!runs(p)) {
    for (int r = 0; r < p->np; r++) {
      int h = p->ranks[r].host, first = 1;
      for (int k = 0; k < r && first; k++)
        first = p->ranks[k].host != h;
      if (first)
        fprintf(out, "%s:%d\n", p->hosts[h].host->name, p->hosts[h].count);
    }
    return ferror(out) ? -1 : 0;
  }
  for (int r = 0, run = 0; r < p->np; r++) {
    run++;
    if (r + 1 == p->np || p->ranks[r + 1].host != p->ranks[r].host) {
      fprintf(out, "%s:%d\n", p->hosts[p->ranks[r].host].host->name, run);
      run = 0;
    }
  }
  return ferror(out) ? -1 : 0;
}

/* Hydra's options that both the job and the probe take. */
static int common(const wr_engine *e, int np, const char *hostfile, wr_argv *a)
{
  char n[32];
  snprintf(n, sizeof(n), "%d", np);
  return wr_argv_add(a, e->call) || wr_argv_add(a, "-f") || wr_argv_add(a, hostfile) ||
         wr_argv_add(a, "-np") || wr_argv_add(a, n) || wr_argv_add(a, "-bind-to") ||
         wr_argv_add(a, "none");
}

int wr_hydra_argv(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a, wr_argv *env)
{
  int rc = common(e, p->np, e->hostfile, a) || wr_argv_add(env, "WEFT_TOPOLOGY");
  if (!rc && !runs(p))
    rc = wr_argv_add(a, "-ppn") || wr_argv_add(a, "1");
  /* --tag-output as srun's --label does it ("3: line"), which the check reads too */
  if (!rc && o->tag_output)
    rc = wr_argv_add(a, "-prepend-pattern") || wr_argv_add(a, "%r: ");
  for (int i = 0; i < o->nxvars && !rc; i++)
    if (strchr(o->xvars[i], '='))
      rc = wr_argv_add(env, o->xvars[i]);
  return rc;
}

/* The probe: one process per line of \p hostfile (one slot each), its output labelled
 * with the rank as srun's --label does ("R: "). */
int wr_hydra_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                        wr_argv *a, wr_argv *env)
{
  (void)o;
  return common(e, n, hostfile, a) || wr_argv_add(a, "-prepend-pattern") ||
         wr_argv_add(a, "%r: ") || wr_argv_add(env, "WEFT_TOPOLOGY");
}
