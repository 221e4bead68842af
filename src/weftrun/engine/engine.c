/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine stage: which engine starts the ranks, and what the engines
 * share. Open MPI's mpirun (mpirun.c) is the default: it reaches hosts
 * by ssh, or inside a Slurm allocation through Slurm's own srun, and has the
 * options Open MPI users know. Slurm's srun --mpi=pmix (srun.c)
 * starts every rank itself, as Slurm sites often want; "--engine auto" takes
 * it only inside an allocation where mpirun is missing. MPICH's mpiexec.hydra
 * (hydra.c) starts a program built with an MPICH-family MPI, which mpirun
 * would start as so many singletons of one rank each: "--engine auto" takes
 * it for such a program, as the program's own file says (weftx_mpi_of_command),
 * and a program and an engine of two MPIs are refused. The engine is chosen
 * right after the hosts, since the remote probe runs through it, and what it
 * cannot do is refused then, in one line. Every program starts as weft-rank
 * with the contract's arguments (agent.h), whatever the engine: when Open MPI
 * places the ranks (WR_MODE_OMPI) they carry its policy and every host's
 * slots, so that each agent can check the placement it was given; when weft
 * does, weft's policy. Neither command line grows with the number of hosts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "layout.h"

static int engine_of(const char *name, wr_engine *e)
{
  if (!strcmp(name, "mpirun")) {
    e->kind = WR_ENGINE_MPIRUN;
    e->name = "mpirun";
    e->found = wr_find_mpirun(e->path, sizeof(e->path)) != NULL;
  } else if (!strcmp(name, "hydra")) {
    e->kind = WR_ENGINE_HYDRA;
    e->name = "mpiexec.hydra";
    e->found = wr_find_hydra(e->path, sizeof(e->path)) != NULL;
  } else {
    e->kind = WR_ENGINE_SRUN;
    e->name = "srun";
    e->found = wr_find_srun(e->path, sizeof(e->path)) != NULL;
  }
  if (!e->found)
    snprintf(e->path, sizeof(e->path), "%s", e->name);
  snprintf(e->call, sizeof(e->call), "%s", wr_engine_given(e->kind));
  return 0;
}

/* 1 for the MPIs whose programs Hydra starts. */
static int mpich_like(weftx_mpi m)
{
  return m == WEFTX_MPI_MPICH || m == WEFTX_MPI_MPICH_FAMILY || m == WEFTX_MPI_INTEL;
}

/* The MPI the job's programs were built with (the first that says one), into \p info;
 * WR_EXIT_USAGE with a line said when two programs name two MPIs. */
static int job_mpi(const wr_opts *o, weftx_mpi_info *info)
{
  weftx_mpi_info one;
  memset(info, 0, sizeof(*info));
  for (int a = 0; a < o->napps; a++) {
    if (!o->apps[a].nprogram)
      continue;
    weftx_mpi_of_command(o->apps[a].program, WR_MPI_DETECT_S, &one);
    if (one.kind <= WEFTX_MPI_NONE)
      continue;
    if (info->kind > WEFTX_MPI_NONE && mpich_like(info->kind) != mpich_like(one.kind)) {
      fprintf(stderr,
              "weftrun: %s was built with %s (%s) and %s with %s (%s): no one launcher starts "
              "both as one job; run them apart\n",
              info->program, weftx_mpi_name(info->kind), info->lib, one.program,
              weftx_mpi_name(one.kind), one.lib);
      return WR_EXIT_USAGE;
    }
    if (info->kind <= WEFTX_MPI_NONE)
      *info = one;
  }
  return 0;
}

/* A program and an engine of two MPIs: one line, WR_EXIT_USAGE; else 0. */
static int mismatch(const wr_engine *e, const weftx_mpi_info *m)
{
  const char *what = m->mpi4py ? "imports an mpi4py built" : "was built";
  if (e->kind == WR_ENGINE_HYDRA && m->kind == WEFTX_MPI_OPENMPI) {
    fprintf(stderr,
            "weftrun: %s %s with Open MPI (%s), and MPICH's mpiexec.hydra would start it as "
            "singletons of one rank each; use --engine mpirun (or auto)\n",
            m->program, what, m->lib);
    return WR_EXIT_USAGE;
  }
  if (e->kind != WR_ENGINE_HYDRA && mpich_like(m->kind)) {
    fprintf(stderr,
            "weftrun: %s %s with %s (%s), and %s would start it as singletons of one rank "
            "each; use --engine hydra (or auto), which runs MPICH's mpiexec.hydra\n",
            m->program, what, weftx_mpi_name(m->kind), m->lib,
            e->kind == WR_ENGINE_SRUN ? "srun --mpi=pmix" : "Open MPI's mpirun");
    return WR_EXIT_USAGE;
  }
  return 0;
}

int wr_engine_choose(const wr_opts *o, const wr_inventory *inv, wr_engine *e)
{
  char why[600];
  weftx_mpi_info m;
  int rc;
  memset(e, 0, sizeof(*e));
  if ((rc = job_mpi(o, &m)))
    return rc;
  if (o->engine && strcmp(o->engine, "auto")) {
    engine_of(o->engine, e);
    snprintf(e->why, sizeof(e->why), "--engine %s", o->engine);
    /* --check says it host by host (its program column) */
    if (!o->check && (rc = mismatch(e, &m)))
      return rc;
    /* before the probe of other hosts, which would run through it */
    if (e->kind == WR_ENGINE_HYDRA && !e->found && !o->dry_run)
      return wr_engine_ready(o, e);
  } else if (mpich_like(m.kind)) {
    engine_of("hydra", e);
    if (snprintf(e->why, sizeof(e->why), "auto: the program %s with %s (%s)",
                 m.mpi4py ? "imports an mpi4py built" : "was built", weftx_mpi_name(m.kind),
                 m.lib) >= (int)sizeof(e->why))
      e->why[sizeof(e->why) - 1] = '\0'; /* cut: it is only said */
    if (!e->found && !o->dry_run) {
      /* never N singletons: the MPI it needs, and where to get its launcher */
      const char *set = getenv("WEFT_HYDRA");
      fprintf(stderr,
              "weftrun: %s %s with %s (%s) and needs MPICH's mpiexec.hydra, %s%s%s; install it "
              "(apt-get install mpich) or set WEFT_HYDRA to it\n",
              m.program, m.mpi4py ? "imports an mpi4py built" : "was built", weftx_mpi_name(m.kind),
              m.lib, set && *set ? "and WEFT_HYDRA=" : "which is not on PATH",
              set && *set ? set : "", set && *set ? " is not executable" : "");
      return WR_EXIT_ENGINE;
    }
  } else {
    engine_of("mpirun", e);
    snprintf(e->why, sizeof(e->why), "auto: Open MPI's mpirun%s",
             inv->slurm_job ? ", which starts its daemons with srun in this Slurm job" : "");
    if (!e->found && inv->slurm_job) {
      engine_of("srun", e);
      snprintf(e->why, sizeof(e->why), "auto: no mpirun on PATH, and this is Slurm job %s",
               inv->slurm_job);
    }
  }
  if (!wr_find_rank_agent(e->agent, sizeof(e->agent)))
    snprintf(e->agent, sizeof(e->agent), "%s/weft-rank", WEFT_LIBEXECDIR);
  if ((e->kind == WR_ENGINE_SRUN && wr_srun_check(o, inv, why, sizeof(why))) ||
      (e->kind == WR_ENGINE_HYDRA && wr_hydra_check(o, why, sizeof(why)))) {
    fprintf(stderr, "weftrun: %s\n", why);
    return WR_EXIT_USAGE;
  }
  return 0;
}

/* A topology file as the agents get it: absolute, so that it reads the same from any
 * working directory. */
static char *absolute(const char *f, int index)
{
  char *real = realpath(f, NULL), *out = NULL;
  const char *path = real ? real : f;
  size_t n = strlen(path) + 16;
  if ((out = malloc(n))) {
    if (index >= 0)
      snprintf(out, n, "%d=%s", index, path);
    else
      snprintf(out, n, "%s", path);
  }
  free(real);
  return out;
}

/* The layout weft-rank gets: each program's ranks per host in plan order, run-length
 * coded, ';' between programs (layout.h). Allocated. */
static char *agent_layout(const wr_plan *p)
{
  int *counts = calloc((size_t)p->nhosts, sizeof(*counts));
  char *all = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&all, &len);

  for (int a = 0; f && counts && a < p->napps; a++) {
    char *one;
    for (int h = 0; h < p->nhosts; h++)
      counts[h] = p->hosts[h].per_app ? p->hosts[h].per_app[a] : p->hosts[h].count;
    if (!(one = wt_layout_encode(counts, p->nhosts)))
      break;
    fprintf(f, "%s%s", a ? ";" : "", one);
    free(one);
  }
  free(counts);
  if (!f || fclose(f)) {
    free(all);
    return NULL;
  }
  return all;
}

/* The GPUs each host's ranks may have, when some host has a limit. */
static char *gpu_sets(const wr_plan *p, int *none)
{
  const char **sets = calloc((size_t)(p->nhosts > 0 ? p->nhosts : 1), sizeof(*sets));
  char *enc = NULL;
  *none = 1;
  if (!sets)
    return NULL;
  for (int h = 0; h < p->nhosts; h++)
    if ((sets[h] = p->hosts[h].host->gpus_allowed))
      *none = 0;
  if (!*none)
    enc = wt_gpusets_encode(sets, p->nhosts);
  free(sets);
  return enc;
}

/* weft-rank, its arguments for a plan, "--" and program \p app's words (for both
 * engines). */
static int agent(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                 const char *output_filename, int app, wr_argv *a, char *why, size_t whylen)
{
  wt_agent_args ag;
  int *slots = calloc((size_t)p->nhosts, sizeof(*slots));
  char *layout = NULL, *topo = NULL, *gpus = NULL, *host_topo[WT_AGENT_MAX_TOPOLOGY];
  char *slotlist = NULL, policy[512];
  int nhost_topo = 0, rc = WR_EXIT_ENGINE, no_gpus = 1;
  const char *here = e->kind != WR_ENGINE_MPIRUN ? getenv("WEFT_TOPOLOGY") : NULL;

  snprintf(why, whylen, "out of memory");
  wt_agent_args_init(&ag);
  if (e->agent_args)
    ag = *e->agent_args; /* the check's job: weft-rank --check and its options */
  if (!slots || !(layout = agent_layout(p)))
    goto out;
  if (strlen(layout) >= WT_AGENT_ARG_MAX) {
    snprintf(why, whylen,
             "the ranks per host of %d hosts take %zu bytes as weft-rank's --layout, "
             "more than the %d one argument may have; give the hosts equal slots",
             p->nhosts, strlen(layout), WT_AGENT_ARG_MAX - 1);
    goto out;
  }
  ag.layout = layout;
  ag.by_node = p->by_node;
  if (p->mode == WR_MODE_OMPI) {
    /* Open MPI's layout: the policy and every host's slots let each agent predict its
     * host's bindings, to check mpirun's (the GPUs go by them) or, under srun, to bind */
    for (int h = 0; h < p->nhosts; h++)
      slots[h] = p->hosts[h].ompi_slots;
    if (!(slotlist = wt_layout_encode(slots, p->nhosts)) ||
        weftx_ompi_policy_format(&p->ompi, policy, sizeof(policy)))
      goto out;
    ag.ompi = policy;
    ag.slots = slotlist;
  } else {
    ag.map_by = o->map_by;
    ag.bind_to = o->bind_to;
    ag.oversubscribe = o->oversubscribe || p->oversub;
  }
  ag.gpu_visibility = o->gpu_visibility;
  ag.nccl_preset = o->nccl_preset;
  ag.preempt_grace = o->preempt_grace;
  ag.report_bindings = o->report_bindings;
  ag.output_filename = output_filename;
  if (wr_engine_lines(e)) {
    /* mpirun's reads cut lines anywhere: the agents make them whole, tag and stamp them,
     * write the files (its --output-filename would hold the records) */
    ag.lines = 1;
    ag.tag_output = o->tag_output;
    ag.timestamp_output = o->timestamp_output;
    ag.output_filename = o->output_filename;
  }
  if (net && net->addr[0]) {
    ag.master_addr = net->addr;
    ag.master_port = net->port;
  }
  if (net && net->ifname[0])
    ag.ifname = net->ifname;
  /* --topology FILE once; I=FILE for each host named in a --topology HOST=FILE, and
   * (srun, which hands weftrun's environment to every host) this host's WEFT_TOPOLOGY */
  if (o->topology && !(ag.topology = topo = absolute(o->topology, -1)))
    goto out;
  for (int h = 0; h < p->nhosts; h++) {
    const wr_host *w = p->hosts[h].host;
    const char *f = w->file && w->file != o->topology       ? w->file
                    : !w->file && w->local && here && *here ? here
                                                            : NULL;
    if (!f)
      continue;
    if (nhost_topo >= WT_AGENT_MAX_TOPOLOGY) {
      snprintf(why, whylen, "more than %d hosts with a --topology HOST=FILE of their own",
               WT_AGENT_MAX_TOPOLOGY);
      goto out;
    }
    if (!(host_topo[nhost_topo] = absolute(f, h)))
      goto out;
    ag.host_topology[nhost_topo] = host_topo[nhost_topo];
    ag.nhost_topology = ++nhost_topo;
  }
  ag.host_xml = e->host_xml;
  if (!(gpus = gpu_sets(p, &no_gpus)) && !no_gpus)
    goto out;
  if (gpus && strlen(gpus) >= WT_AGENT_ARG_MAX) {
    snprintf(why, whylen,
             "the GPUs of %d hosts take %zu bytes as weft-rank's --gpus, more than "
             "one argument may have",
             p->nhosts, strlen(gpus));
    goto out;
  }
  ag.gpus = gpus;
  ag.control = e->control;
  ag.monitor_ms = o->monitor > 0 && e->control ? (long)(o->monitor * 1000 + 0.5) : 0;
  if (ag.monitor_ms) {
    ag.monitor_prom = o->monitor_prom;
    ag.job = o->monitor_prom ? o->job : NULL;
  }
  if (wr_argv_add(a, e->agent) || wt_agent_args_write(&ag, wr_argv_add_cb, a) ||
      wr_argv_add(a, "--"))
    goto out;
  for (int i = 0; i < o->apps[app].nprogram; i++)
    if (wr_argv_add(a, o->apps[app].program[i]))
      goto out;
  why[0] = '\0';
  rc = 0;
out:
  for (int i = 0; i < nhost_topo; i++)
    free(host_topo[i]);
  free(gpus);
  free(topo);
  free(layout);
  free(slotlist);
  free(slots);
  return rc;
}

int wr_engine_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                   wr_argv *a, wr_argv *env, char *why, size_t whylen)
{
  if (e->kind == WR_ENGINE_SRUN) {
    /* srun has no --output-filename: each agent writes its rank's files itself; it
     * runs one program (wr_srun_check()) */
    if (wr_srun_argv(p, o, net, e, a, env)) {
      snprintf(why, whylen, "out of memory");
      return WR_EXIT_ENGINE;
    }
    return agent(p, o, net, e, o->output_filename, 0, a, why, whylen);
  }
  if (e->kind == WR_ENGINE_HYDRA) {
    /* the same: the agents write the files; one program (wr_hydra_check()) */
    if (wr_hydra_argv(p, o, e, a, env)) {
      snprintf(why, whylen, "out of memory");
      return WR_EXIT_ENGINE;
    }
    return agent(p, o, net, e, o->output_filename, 0, a, why, whylen);
  }
  /* mpirun: its own options, then each program's (Open MPI's colon syntax) */
  if (wr_mpirun_argv(p, o, e, a) || wr_mpirun_env(p, o, e, env)) {
    snprintf(why, whylen, "out of memory");
    return WR_EXIT_ENGINE;
  }
  for (int app = 0; app < p->napps; app++) {
    int rc;
    if ((app > 0 && wr_argv_add(a, ":")) || wr_mpirun_app_argv(p, o, net, app, a)) {
      snprintf(why, whylen, "out of memory");
      return WR_EXIT_ENGINE;
    }
    if ((rc = agent(p, o, net, e, NULL, app, a, why, whylen)))
      return rc;
  }
  return 0;
}

int wr_engine_lines(const wr_engine *e) { return e->kind == WR_ENGINE_MPIRUN && !e->agent_args; }

int wr_engine_hostfile(const wr_plan *p, const wr_engine *e, FILE *out)
{
  return e->kind == WR_ENGINE_SRUN    ? wr_srun_hostfile(p, out)
         : e->kind == WR_ENGINE_HYDRA ? wr_hydra_hostfile(p, out)
                                      : wr_mpirun_hostfile(p, out);
}

int wr_engine_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                         wr_argv *a, wr_argv *env)
{
  return e->kind == WR_ENGINE_SRUN    ? wr_srun_probe_argv(o, e, n, hostfile, a, env)
         : e->kind == WR_ENGINE_HYDRA ? wr_hydra_probe_argv(o, e, n, hostfile, a, env)
                                      : wr_mpirun_probe_argv(o, e, n, hostfile, a);
}

const weftx_topo *wr_engine_local_topo(const wr_plan *p)
{
  for (int h = 0; h < p->nhosts; h++) {
    const wr_host *w = p->hosts[h].host;
    if (p->hosts[h].count > 0 && w->local && !w->file && weftx_topo_is_live(w->topo))
      return w->topo;
  }
  return NULL;
}
