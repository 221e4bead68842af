/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun: the pipeline (weftrun.h), stage after stage: options, hosts, the
 * engine's choice, facts, plan, network, then either the plan printed
 * (--dry-run) or the engine's command run (mpirun or srun, and weft-rank);
 * with --check, the check job and its table (check/check.c) instead of plan and
 * launch. Signals are stop requests (signals.c), so that every way out
 * removes the job directory. The pipeline from the hosts on is one attempt
 * of the job; restart/ runs it again after a lost host (--restarts).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "engine/engine.h"
#include "help.h"
#include "hosts/hosts.h"
#include "plan/plan.h"
#include "restart/restart.h"
#include "weftrun.h"

extern char **environ;

#define VERSION_DEADLINE_S 30

static int version(int stop_fd)
{
  printf("weftrun (weft) %s\n", weft_version_string());
  char mpirun[4096], why[600];
  if (!wr_find_mpirun(mpirun, sizeof(mpirun))) {
    printf("mpirun: not found on PATH\n");
    return 0;
  }
  char *argv[] = {mpirun, (char *)"--version", NULL};
  weftx_proc_spec s;
  weftx_proc_result r;
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.out = WEFTX_PROC_PIPE;
  s.max_output = 1 << 16;
  s.timeout = VERSION_DEADLINE_S;
  s.grace = 1;
  s.stop_fd = stop_fd;
  if (weftx_proc_run(&s, &r, why, sizeof(why)) || r.status) {
    fprintf(stderr, "weftrun: %s --version: %s\n", mpirun,
            why[0]        ? why
            : r.timed_out ? "no answer"
                          : "failed");
    free(r.output);
    return WR_EXIT_ENGINE;
  }
  /* the engine's version lines, without its "Report bugs to" line: bugs in weftrun are weft's */
  char *save = NULL;
  for (char *line = strtok_r(r.output ? r.output : (char *)"", "\n", &save); line;
       line = strtok_r(NULL, "\n", &save))
    if (line[0] && strncmp(line, "Report bugs", 11))
      printf("%s\n", line);
  free(r.output);
  printf("\nReport bugs in weftrun to weft's maintainers (README.md, Reporting problems),\n"
         "with this output and 'weftrun --dry-run' of the job.\n");
  return 0;
}

/* --help [TOPIC], and the man page's generated sections. */
static int help(const wr_opts *o)
{
  static const char *const topics[] = {"placement", "environment", "exit-status", NULL};
  if (o->help_man)
    wt_opt_man(stdout, wr_options);
  else if (o->help_man_exit)
    wt_exit_man(stdout);
  else if (o->nprogram == 1 && !strcmp(o->program[0], "exit-status"))
    wt_exit_topic(stdout); /* made from the exit-status table (agent.h) */
  else if (o->nprogram == 1)
    return wt_help_topic(stdout, "weftrun", o->program[0], topics) ? WR_EXIT_USAGE : 0;
  else
    wr_usage(stdout);
  return 0;
}

/* A stop request that came between stages: nothing is running, so stop here. */
static int stopped(int stop_fd)
{
  int sig = wr_signals_pending(stop_fd);
  if (!sig)
    return 0;
  fprintf(stderr, "weftrun: got signal %d; nothing was started (exit %d)\n", sig, 128 + sig);
  return 128 + sig;
}

static int plan(const wr_opts *o, const wr_inventory *inv, wr_plan **out)
{
  char why[1024];
  wr_plan_here here = {wr_gcp_reserved_cpus(inv->gcp), inv->preset_env, inv->npreset_env, environ};
  int rc = wr_plan_make(o, inv, &here, out, why, sizeof(why));
  if (rc)
    fprintf(stderr, "weftrun: %s\n", why);
  return rc;
}

/* Lines "# PREFIX: TEXT" of a text of lines. */
static void print_lines(const char *prefix, const char *text)
{
  for (const char *line = text; *line;) {
    size_t n = strcspn(line, "\n");
    printf("# %s: %.*s\n", prefix, (int)n, line);
    line += n + (line[n] == '\n');
  }
}

/* --dry-run: the engine and the command that would run (network choice left out), and
 * with -v what it changes in the environment and the hostfile it would read. */
static int print_command(const wr_plan *p, const wr_opts *o, wr_engine *e, const wr_jobdir *dir)
{
  char jobdir[4096], hostfile[4200], xml[4200], why[600];
  wr_jobdir_name(dir, jobdir, sizeof(jobdir));
  snprintf(hostfile, sizeof(hostfile), "%s/hostfile", jobdir);
  snprintf(xml, sizeof(xml), "%s/topology.xml", jobdir);
  e->hostfile = hostfile;
  e->host_xml = wr_engine_local_topo(p) ? xml : NULL; /* as wr_run() writes it */
  wr_argv a = {NULL, 0, 0}, env = {NULL, 0, 0};
  int rc = wr_engine_argv(p, o, NULL, e, &a, &env, why, sizeof(why));
  if (rc)
    fprintf(stderr, "weftrun: %s\n", why);
  else {
    printf("# engine: %s (%s)\n", e->name, e->why);
    wr_argv_print(stdout, "# command:", &a);
  }
  for (int i = 0; !rc && o->verbose && i < env.n; i++)
    printf("# environment: %s%s\n", env.v[i], strchr(env.v[i], '=') ? "" : " (unset)");
  wr_argv_free(&a);
  wr_argv_free(&env);
  if (rc || !o->verbose)
    return rc;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f || (wr_engine_hostfile(p, e, f) | fclose(f))) {
    free(text);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  print_lines("hostfile", text);
  free(text);
  return 0;
}

/* The hosts the attempt takes, for the restarts (restart/). */
static int given(const wr_inventory *inv, wr_attempt *att)
{
  att->given = calloc((size_t)inv->nhosts, sizeof(*att->given));
  if (!att->given) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  for (int i = 0; i < inv->nhosts; i++) {
    const weftx_host *h = weftx_hostlist_host(inv->hl, i);
    /* the name as typed: the restart's hostfile must resolve as the user's did */
    snprintf(att->given[i].name, sizeof(att->given[i].name), "%s",
             inv->hosts[i].typed ? inv->hosts[i].typed : inv->hosts[i].name);
    att->given[i].slots = h ? h->slots : inv->hosts[i].slots;
    att->given[i].max_slots = h ? h->max_slots : inv->hosts[i].slots_max;
  }
  att->ngiven = inv->nhosts;
  return 0;
}

/* One attempt of the job (restart/ runs one, or several with --restarts): hosts,
 * engine, facts, plan, then the plan printed or the job run. */
static int attempt(wr_opts *o, int stop_fd, wr_attempt *att, void *arg)
{
  (void)arg;
  wr_inventory inv;
  wr_jobdir dir;
  wr_plan *p = NULL;
  wr_net net;
  wr_engine e;
  memset(&dir, 0, sizeof(dir));
  memset(&net, 0, sizeof(net));
  int rc = wr_hosts_gather(o, &inv);
  if (!rc)
    rc = given(&inv, att);
  if (!rc && !(rc = wr_engine_choose(o, &inv, &e)))
    inv.no_mapper = e.kind != WR_ENGINE_MPIRUN;
  if (!rc)
    rc = wr_facts_gather(o, &e, &inv, &dir, stop_fd);
  /* the probe failed in the engine: the hosts it cannot reach named, as --check names
   * them; else its own account */
  if (rc == WR_EXIT_ENGINE && inv.probe_said) {
    rc = wr_check_name_unreached(o, &e, &inv, &dir, stop_fd, WR_CHECK_UNREACHED_S);
    if (!rc) {
      fputs(inv.probe_said, stderr);
      rc = WR_EXIT_ENGINE;
    }
  }
  /* --check: its own job through the engine, its own report (check/check.c) */
  if (!rc && o->check && !(rc = stopped(stop_fd))) {
    rc = wr_check(o, &e, &inv, &dir, stop_fd);
    wr_inventory_free(&inv);
    wr_jobdir_remove(&dir);
    return rc;
  }
  /* the rules the plan follows: the engine's Open MPI (after --check, which needs none) */
  if (!rc && !(rc = stopped(stop_fd)))
    rc = wr_ompi_version(e.kind == WR_ENGINE_MPIRUN && e.found ? e.path : NULL, stop_fd,
                         &inv.ompi_version);
  if (!rc && !(rc = stopped(stop_fd)))
    rc = plan(o, &inv, &p);
  /* a dry run refuses what the launch would: a TMPDIR where no private directory can be made */
  if (!rc && o->dry_run)
    rc = wr_jobdir_try(&dir);
  /* a real launch chooses the network first, so that the plan shows it */
  if (!rc && !o->dry_run)
    rc = wr_net_choose(p, &net);
  if (!rc && (o->dry_run || (o->report_bindings && o->json)))
    rc = wr_report(p, &inv, o->dry_run ? NULL : &net, o, stdout);
  /* --display-map and its kin: Open MPI's own when it places the ranks (mpirun prints
   * it), weft's plan when weft does (Open MPI's would show weft's rewritten hosts) */
  if (!rc && !o->dry_run && !o->json && o->ndisplay && p->mode == WR_MODE_GPU)
    rc = wr_report(p, &inv, &net, o, stdout);
  if (!rc && o->verbose && !o->dry_run) {
    if (p->mode == WR_MODE_GPU && p->departure[0])
      fprintf(stderr, "weftrun: %s\n", p->departure);
    else if (p->mpirun_binds)
      fprintf(stderr, "weftrun: Open MPI places and binds the ranks (%s), as mpirun would\n",
              p->mode_why);
    else if (p->mode == WR_MODE_OMPI)
      fprintf(stderr, "weftrun: each rank's agent binds it as Open MPI's mpirun would (%s)\n",
              p->mode_why);
  }
  if (!rc && o->dry_run && !o->json && o->nprogram)
    rc = print_command(p, o, &e, &dir);
  weftx_topo_env_restore(); /* mpirun and the ranks get the user's environment */
  if (!rc && !o->dry_run && !(rc = stopped(stop_fd)))
    rc = wr_run(p, o, &net, &e, &inv, &dir, stop_fd, att);
  wr_plan_destroy(p);
  wr_inventory_free(&inv);
  wr_jobdir_remove(&dir);
  return rc;
}

int main(int argc, char **argv)
{
  if (weft_check_version(stderr, argv[0]))
    return WR_EXIT_ENGINE;
  wr_opts o;
  wr_opts_init(&o);
  o.started = weftx_monotonic();
  char me[256] = "";
  if (gethostname(me, sizeof(me)))
    snprintf(me, sizeof(me), "weftrun");
  me[sizeof(me) - 1] = '\0';
  snprintf(o.job, sizeof(o.job), "%s:%ld", me, (long)getpid());
  int rc = wr_opts_parse(&o, argc, argv);
  if (rc || o.help || o.help_man || o.help_man_exit) {
    if (!rc)
      rc = help(&o);
    wr_opts_free(&o);
    return rc;
  }
  int stop_fd = wr_signals_install();
  /* what mpirun leaves behind when it dies (srun, in a group of its own under Slurm)
   * comes to weftrun, which ends it with the attempt (run.c); not when the user keeps
   * what the ranks leave running (WEFT_KEEP_DAEMONS, as the agents do): a daemon of a
   * rank here would come to weftrun too */
  const char *keep = getenv("WEFT_KEEP_DAEMONS");
  if (!keep || !*keep || !strcmp(keep, "0"))
    (void)weftx_proc_adopt();
  if (o.version) {
    wr_opts_free(&o);
    return version(stop_fd);
  }

  rc = wr_restart_run(&o, stop_fd, attempt, NULL);
  wr_opts_free(&o);
  return rc;
}
