/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The srun engine: Slurm starts every rank itself, inside the allocation
 * weftrun runs in, as "srun --mpi=pmix" (Debian's Open MPI programs find
 * their peers through Slurm's PMIx plugin; there is no mpirun and no ssh).
 * Ranks go to hosts exactly as planned: --distribution=arbitrary with
 * SLURM_HOSTFILE naming the host of every rank; a CPU layout is the model of
 * Open MPI's mappers, to which each agent binds its rank. Slurm's own binding
 * is off (--cpu-bind=none) unless SLURM_CPU_BIND asks for it, and then weft
 * binds nothing (--bind-to none) or refuses. --kill-on-bad-exit ends the whole
 * step when a rank fails; --quit-on-interrupt lets one SIGINT end it, as with
 * mpirun. srun hands weftrun's whole environment to every rank, so -x VAR=VALUE
 * and --mca KEY VALUE become variables of srun's environment (OMPI_MCA_KEY),
 * and WEFT_TOPOLOGY (one host's) is left out of it. What srun cannot do
 * (--timestamp-output, Open MPI's own options, hosts outside the allocation)
 * is refused before anything starts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

extern char **environ;

/* Every host of the job in the allocation (SLURM_JOB_NODELIST). */
static int in_allocation(const wr_inventory *inv, char *why, size_t len)
{
  const char *nodes = getenv("SLURM_JOB_NODELIST");
  weftx_hostlist *hl = NULL;
  char inner[400] = "";
  int rc = 0;
  if (inv->origin == WEFTX_HOSTS_SLURM)
    return 0;
  if (!nodes || weftx_hostlist_create(&hl) ||
      weftx_hosts_parse_slurm(hl, nodes, NULL, inner, sizeof(inner))) {
    snprintf(why, len, "--engine srun: cannot read the allocation's nodes: %s",
             inner[0] ? inner : "SLURM_JOB_NODELIST is not set");
    weftx_hostlist_destroy(hl);
    return -1;
  }
  for (int h = 0; h < inv->nhosts && !rc; h++)
    if (weftx_hostlist_find(hl, inv->hosts[h].name) < 0) {
      snprintf(why, len,
               "--engine srun starts ranks only on the nodes of Slurm job %s "
               "(SLURM_JOB_NODELIST=%.200s), and host '%s' (from %s) is not one of them; drop "
               "it, or use --engine mpirun",
               inv->slurm_job, nodes, inv->hosts[h].name, weftx_hosts_origin_name(inv->origin));
      rc = -1;
    }
  weftx_hostlist_destroy(hl);
  return rc;
}

int wr_srun_check(const wr_opts *o, const wr_inventory *inv, char *why, size_t len)
{
  const char *bind = getenv("SLURM_CPU_BIND");
  if (!inv->slurm_job) {
    snprintf(why, len,
             "--engine srun starts the ranks inside a Slurm allocation, and there is "
             "none here (SLURM_JOB_ID is not set); run weftrun under salloc or sbatch, or use "
             "--engine mpirun");
    return -1;
  }
  if (o->napps > 1) {
    snprintf(why, len,
             "%d programs separated by ':': --engine srun runs one program; use "
             "--engine mpirun",
             o->napps);
    return -1;
  }
  if (o->mpirun_only) {
    snprintf(why, len,
             "%s is an option of Open MPI's mpirun, which --engine srun does not run; "
             "drop it, or use --engine mpirun",
             o->mpirun_only);
    return -1;
  }
  if (o->timestamp_output) {
    snprintf(why, len,
             "--timestamp-output: srun cannot stamp the ranks' output lines; drop it, "
             "or use --engine mpirun");
    return -1;
  }
  if (o->npass > 0) {
    snprintf(why, len,
             "%s is an option of Open MPI's mpirun, which --engine srun does not run; "
             "drop it, or use --engine mpirun",
             o->pass[0]);
    return -1;
  }
  if (bind && *bind && strcmp(bind, "none") && (!o->bind_to || strcmp(o->bind_to, "none"))) {
    snprintf(why, len,
             "SLURM_CPU_BIND=%s asks Slurm to bind the ranks, and weft binds them too; "
             "add --bind-to none to keep Slurm's binding, or unset SLURM_CPU_BIND",
             bind);
    return -1;
  }
  return in_allocation(inv, why, len);
}

int wr_srun_hostfile(const wr_plan *p, FILE *out)
{
  for (int r = 0; r < p->np; r++)
    fprintf(out, "%s\n", p->hosts[p->ranks[r].host].host->name);
  return ferror(out) ? -1 : 0;
}

/* An MCA parameter the user set, with --mca or as OMPI_MCA_KEY. */
static int has_mca(const wr_opts *o, const char *key)
{
  char name[256];
  snprintf(name, sizeof(name), "OMPI_MCA_%s", key);
  for (int i = 0; i < o->nmca; i++)
    if (!strcmp(o->mca[i].key, key))
      return 1;
  return getenv(name) != NULL;
}

/* srun's options that both the job and the probe take. */
static int common(const wr_engine *e, int np, int nnodes, wr_argv *a)
{
  char n[32], nodes[32];
  const char *bind = getenv("SLURM_CPU_BIND");
  snprintf(n, sizeof(n), "--ntasks=%d", np);
  snprintf(nodes, sizeof(nodes), "--nodes=%d", nnodes);
  int rc = wr_argv_add(a, e->call) || wr_argv_add(a, n) || wr_argv_add(a, nodes) ||
           wr_argv_add(a, "--distribution=arbitrary") || wr_argv_add(a, "--kill-on-bad-exit=1") ||
           wr_argv_add(a, "--quit-on-interrupt");
  if (!rc && !(bind && *bind && strcmp(bind, "none")))
    rc = wr_argv_add(a, "--cpu-bind=none");
  return rc;
}

/* The variables srun's environment gets or loses (a word without '=': unset). */
static int common_env(const char *hostfile, wr_argv *env)
{
  /* the layout is the hostfile's; an salloc --ntasks-per-node would contradict it */
  return wr_argv_put(env, "SLURM_HOSTFILE", hostfile) ||
         wr_argv_add(env, "SLURM_NTASKS_PER_NODE") || wr_argv_add(env, "WEFT_TOPOLOGY");
}

int wr_srun_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                 wr_argv *a, wr_argv *env)
{
  int nnodes = 0, rc;
  for (int h = 0; h < p->nhosts; h++)
    nnodes += p->hosts[h].count > 0;
  rc = common(e, p->np, nnodes, a) || wr_argv_add(a, "--mpi=pmix");
  if (!rc && o->tag_output)
    rc = wr_argv_add(a, "--label");
  if (!rc && p->oversub)
    rc = wr_argv_add(a, "--overcommit");
  rc = rc || common_env(e->hostfile, env);
  for (int i = 0; i < o->nxvars && !rc; i++)
    if (strchr(o->xvars[i], '='))
      rc = wr_argv_add(env, o->xvars[i]);
  for (int i = 0; i < o->nmca && !rc; i++) {
    char key[300];
    snprintf(key, sizeof(key), "OMPI_MCA_%s", o->mca[i].key);
    rc = wr_argv_put(env, key, o->mca[i].value);
  }
  const char *ifname = net && net->ifname[0] ? net->ifname : NULL;
  if (!rc && ifname && !has_mca(o, "btl_tcp_if_include") && !has_mca(o, "btl_tcp_if_exclude"))
    rc = wr_argv_put(env, "OMPI_MCA_btl_tcp_if_include", ifname);
  if (!rc && p->oversub && !has_mca(o, "mpi_yield_when_idle"))
    rc = wr_argv_put(env, "OMPI_MCA_mpi_yield_when_idle", "1");
  return rc;
}

/* The probe: one task per line of \p hostfile, its output labelled with the task. */
int wr_srun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                       wr_argv *a, wr_argv *env)
{
  (void)o;
  return common(e, n, n, a) || wr_argv_add(a, "--mpi=none") || wr_argv_add(a, "--label") ||
         common_env(hostfile, env);
}
