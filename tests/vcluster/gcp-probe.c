/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What lib/gcp makes of the VM it runs on, for the vcluster tests (each vnode
 * has its own fake metadata server):
 *   gcp-probe env PRESET MULTI   the preset's variables for this VM, one
 *                                "KEY=VALUE  # origin" line each, then the
 *                                reserve-cpus and the check warnings
 *   gcp-probe watch SECONDS      wait for a preemption notice: exit 79
 *                                (WT_EXIT_PREEMPTED, src/common/agent.h) with "notice WHAT VALUE"
 *                                on it, 1 when none came in time
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weftx.h>

#include "agent.h"

static void warn(void *arg, const char *msg)
{
  (void)arg;
  printf("warning: %s\n", msg);
}

static int env_cmd(const char *arg, int multi)
{
  weftx_gcp_info info;
  weftx_preset *p = NULL;
  weftx_env *env = NULL;
  char why[1024], desc[256];
  int rc;

  rc = weftx_gcp_job_preset(arg, multi, &info, &p, why, sizeof(why));
  if (why[0])
    printf("warning: %s\n", why);
  if (rc != 0)
    return 1;
  printf("# on_gce %d machine-type %s family %s preset %s\n", info.on_gce, info.machine_type,
         info.family ? info.family : "-", p ? weftx_preset_name(p) : "-");
  if (weftx_env_create(&env) != 0)
    return 1;
  if (p && (rc = weftx_preset_apply(p, &info, env, why, sizeof(why))) != 0) {
    printf("error: %s\n", why);
    rc = 1;
    goto out;
  }
  for (int i = 0; i < weftx_env_count(env); i++) {
    const char *k, *v;
    weftx_env_entry(env, i, &k, &v, NULL, NULL);
    weftx_env_describe(env, i, desc, sizeof(desc));
    printf("%s=%s  # %s\n", k, v, desc);
  }
  printf("reserve-cpus %s\n", weftx_preset_reserved_cpus(p) ? weftx_preset_reserved_cpus(p) : "-");
  weftx_gcp_check(&info, p, multi, warn, NULL);
out:
  weftx_env_destroy(env);
  weftx_preset_free(p);
  return rc;
}

static volatile int noticed;

static void on_notice(void *arg, const char *what, const char *value)
{
  (void)arg;
  printf("notice %s %s\n", what, value);
  fflush(stdout);
  noticed = 1;
}

static int watch_cmd(long seconds)
{
  weftx_gcp_watch *w;
  int rc = weftx_gcp_watch_start(&w, on_notice, NULL);

  if (rc != 0) {
    printf("error: %s\n", weft_strerror(rc));
    return 2;
  }
  printf("watching\n");
  fflush(stdout);
  for (long t = 0; t < seconds * 20 && !noticed; t++)
    usleep(50000);
  weftx_gcp_watch_stop(w);
  return noticed ? WT_EXIT_PREEMPTED : 1;
}

int main(int argc, char **argv)
{
  long n;

  if (weft_check_version(stderr, argv[0]))
    return 2;
  if (argc == 4 && !strcmp(argv[1], "env"))
    return env_cmd(argv[2], !strcmp(argv[3], "1"));
  if (argc == 3 && !strcmp(argv[1], "watch") && weftx_parse_long(argv[2], 1, 600, &n) == 0)
    return watch_cmd(n);
  fprintf(stderr, "usage: gcp-probe env PRESET 0|1 | gcp-probe watch SECONDS\n");
  return 2;
}
