/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Google Cloud in the rank agent: the --nccl-preset of this host (its
 * reserved cores and its variables, resolved with this VM's NIC names), and
 * the preemption watch. On a preemption notice the agent sends itself
 * WEFTX_PREEMPT_SIGNAL, which the supervisor forwards to the program (SIGKILL
 * after its grace period), and then exits with WT_EXIT_PREEMPTED.
 */
#include "config.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft-rank.h"

struct wk_gcp {
  weftx_gcp_info info;
  weftx_preset *preset;
  weftx_gcp_watch *watch;
  const wt_agent_who *who;
  atomic_int preempted;
  char what[64], value[64];
};

static void warn(void *arg, const char *msg)
{
  const wk_gcp *g = arg;
  fprintf(stderr, "weft-rank: host %s: warning: %s\n", g->who->host, msg);
}

int wk_gcp_prepare(const char *nccl_preset, int nhosts, int local_rank, const wt_agent_who *who,
                   wk_gcp **out, char *why, size_t len)
{
  wk_gcp *g = calloc(1, sizeof(*g));
  int rc;

  *out = g;
  if (!g)
    return WEFT_ENOMEM;
  g->who = who;
  atomic_init(&g->preempted, 0);
  rc = weftx_gcp_job_preset(nccl_preset, nhosts > 1, &g->info, &g->preset, why, len);
  if (rc)
    return rc;
  /* One voice per host for what every rank there would say alike. */
  if (local_rank == 0) {
    if (why[0])
      warn(g, why);
    if (g->preset)
      weftx_gcp_check(&g->info, g->preset, nhosts > 1, warn, g);
  }
  why[0] = '\0';
  return 0;
}

const char *wk_gcp_reserved_cpus(const wk_gcp *g)
{
  return g ? weftx_preset_reserved_cpus(g->preset) : NULL;
}

int wk_gcp_apply(wk_gcp *g, weftx_env *env, char *why, size_t len)
{
  return g && g->preset ? weftx_preset_apply(g->preset, &g->info, env, why, len) : 0;
}

static void on_notice(void *arg, const char *what, const char *value)
{
  wk_gcp *g = arg;

  snprintf(g->what, sizeof(g->what), "%s", what);
  snprintf(g->value, sizeof(g->value), "%s", value);
  atomic_store(&g->preempted, 1);
  fprintf(stderr,
          "weft-rank: rank %d host %s gpu %s: GCE notice instance/%s = %s: the VM is going "
          "away; stopping the rank (signal %d)\n",
          g->who->rank, g->who->host, g->who->gpu, what, value, WEFTX_PREEMPT_SIGNAL);
  wk_supervise_preempt();
}

void wk_gcp_watch_start(wk_gcp *g)
{
  /* Off GCE this makes no request and starts nothing. */
  if (g && weftx_gcp_watch_start(&g->watch, on_notice, g) != 0)
    g->watch = NULL;
}

int wk_gcp_watch_stop(wk_gcp *g, int rc)
{
  if (!g)
    return rc;
  weftx_gcp_watch_stop(g->watch);
  g->watch = NULL;
  if (!atomic_load(&g->preempted))
    return rc;
  char why[160];
  snprintf(why, sizeof(why), "preempted (instance/%s = %s)", g->what, g->value);
  wt_agent_fail_print(stderr, g->who, why, WT_EXIT_PREEMPTED, 0);
  return WT_EXIT_PREEMPTED;
}

void wk_gcp_destroy(wk_gcp *g)
{
  if (!g)
    return;
  weftx_gcp_watch_stop(g->watch);
  weftx_preset_free(g->preset);
  free(g);
}

void wk_gcp_probe_facts(FILE *out)
{
  weftx_gcp_info info;
  char why[512];
  int rc = weftx_gcp_identify(&info, why, sizeof(why));

  if (rc)
    fprintf(stderr, "weft-rank --probe: warning: %s\n", why[0] ? why : weft_strerror(rc));
  else if (info.on_gce)
    wt_agent_gce_print(out, info.machine_type, info.physical_host);
}
