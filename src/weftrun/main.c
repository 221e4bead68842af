/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun: parse the command line, plan the job, and either print the plan
 * (--dry-run) or run it through mpirun and weft-rank.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "help.h"
#include "weftrun.h"

static int
version(void)
{
  printf("weftrun (weft) %s\n", weft_version_string());
  fflush(stdout);
  char mpirun[4096];
  if (!wr_find_mpirun(mpirun, sizeof(mpirun))) {
    printf("mpirun: not found on PATH\n");
    return 0;
  }
  char *argv[] = { mpirun, (char *)"--version", NULL };
  wr_opts o;
  wr_opts_init(&o);
  return wr_run(NULL, &o, argv) ? WR_EXIT_ENGINE : 0;
}

static int
add_master_env(wr_job *j, const wr_master *m)
{
  char port[16];
  snprintf(port, sizeof(port), "%d", m->port);
  if (wr_job_add_env(j, "MASTER_ADDR", m->addr) || wr_job_add_env(j, "MASTER_PORT", port) ||
      (m->ifname[0] && wr_job_add_env(j, "NCCL_SOCKET_IFNAME", m->ifname)))
    return WR_EXIT_ENGINE;
  return 0;
}

/* --dry-run: the engine command that would run (network choice left out). */
static int
print_command(const wr_job *j, const wr_opts *o)
{
  char mpirun[4096], agent[4096];
  wr_master m;
  memset(&m, 0, sizeof(m));
  if (!wr_find_mpirun(mpirun, sizeof(mpirun)))
    snprintf(mpirun, sizeof(mpirun), "mpirun");
  if (!wr_find_rank_agent(agent, sizeof(agent)))
    snprintf(agent, sizeof(agent), "%s/weft-rank", WEFT_LIBEXECDIR);
  wr_argv a = { NULL, 0, 0 };
  if (wr_engine_argv(j, o, mpirun, agent, &m, NULL, &a)) {
    wr_argv_free(&a);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  fputs("# command:", stdout);
  for (int i = 0; i < a.n; i++)
    printf(" %s", a.v[i]);
  putchar('\n');
  wr_argv_free(&a);
  return 0;
}

static int
launch(const wr_job *j, const wr_opts *o, const wr_master *m)
{
  char mpirun[4096], agent[4096];
  if (!wr_find_mpirun(mpirun, sizeof(mpirun))) {
    fprintf(stderr, "weftrun: mpirun not found on PATH%s; install Open MPI or set WEFT_MPIRUN\n",
            getenv("WEFT_MPIRUN") ? " (WEFT_MPIRUN is not executable)" : "");
    return WR_EXIT_ENGINE;
  }
  const char *r1 = getenv("OMPI_ALLOW_RUN_AS_ROOT"), *r2 = getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  if (geteuid() == 0 && !o->allow_run_as_root && !(r1 && !strcmp(r1, "1") && r2 && !strcmp(r2, "1"))) {
    fprintf(stderr, "weftrun: running as root, which mpirun refuses; add --allow-run-as-root (or set "
            "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1), or run as a user\n");
    return WR_EXIT_ENGINE;
  }
  if (!wr_find_rank_agent(agent, sizeof(agent))) {
    fprintf(stderr, "weftrun: weft-rank not found (looked at $WEFT_RANK_PATH, the build tree and "
            "%s); reinstall weft or set WEFT_RANK_PATH\n", WEFT_LIBEXECDIR);
    return WR_EXIT_ENGINE;
  }
  wr_argv a = { NULL, 0, 0 };
  char host_xml[4096];
  int rc;
  wr_hostxml_create(j, host_xml, sizeof(host_xml));
  if (wr_engine_argv(j, o, mpirun, agent, m, host_xml, &a)) {
    wr_argv_free(&a);
    wr_hostxml_remove(host_xml);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  if (o->verbose) {
    fputs("weftrun: running", stderr);
    for (int i = 0; i < a.n; i++)
      fprintf(stderr, " %s", a.v[i]);
    fputc('\n', stderr);
  }
  rc = wr_run(j, o, a.v);
  wr_argv_free(&a);
  wr_hostxml_remove(host_xml);
  return rc;
}

int
main(int argc, char **argv)
{
  if (weft_check_version(stderr, argv[0]))
    return WR_EXIT_ENGINE;
  wr_opts o;
  wr_opts_init(&o);
  int rc = wr_opts_parse(&o, argc, argv);
  if (rc)
    return rc;
  if (o.help) {
    static const char *const topics[] = { "placement", "environment", "exit-status", NULL };
    if (o.nprogram == 1)
      return weft_help_topic(stdout, "weftrun", o.program[0], topics) ? WR_EXIT_USAGE : 0;
    wr_usage(stdout);
    return 0;
  }
  if (o.help_man) {
    weft_opt_man(stdout, wr_options);
    return 0;
  }
  if (o.version)
    return version();

  wr_job *j = NULL;
  wr_master m;
  rc = wr_job_build(&o, &j);
  /* a real launch chooses the network first, so that the plan shows it */
  if (!rc && !o.dry_run && !(rc = wr_master_choose(j, &m)))
    rc = add_master_env(j, &m);
  if (!rc && (o.dry_run || (o.report_bindings && o.json)))
    rc = wr_job_print(j, &o, stdout);
  if (!rc && o.dry_run && !o.json && o.nprogram)
    rc = print_command(j, &o);
  if (!rc && !o.dry_run)
    rc = launch(j, &o, &m);
  wr_job_destroy(j);
  return rc;
}
