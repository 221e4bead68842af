/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A command-line face of the Open MPI 4.1 model (weftx/ompi.h) for the tests
 * that compare it with mpirun itself (test-ompi-oracle.sh):
 *
 *   ompi-model TOPOLOGY.xml HOSTS [OPTION...] -- NP[,NP...]
 *
 * HOSTS is "name[:slots][!],..." in Open MPI's pool order ('!' marks mpirun's own
 * host), OPTIONs are mpirun's placement options, --mca KEY VALUE or KEY=VALUE (an MCA
 * parameter from the environment), NP the ranks of each app context (0: not
 * given). It prints one line per rank, "HOST rank R local L app A bind CPUS"
 * (CPUS "-" when not bound), or "error: WHY" and exits 1.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weftx.h>

static int num(const char *s)
{
  long v = 0;
  if (weftx_parse_long(s, 0, 1000000, &v)) {
    fprintf(stderr, "ompi-model: '%s' is not a number\n", s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv)
{
  weftx_topo *t = NULL;
  weftx_ompi_mca m;
  weftx_ompi_cmdline cl;
  weftx_ompi_policy p;
  weftx_ompi_host hosts[64];
  weftx_ompi_app apps[16];
  weftx_ompi_job j;
  char why[512] = "", *names[64], *list, *tok, *save = NULL;
  int nhosts = 0, napps = 0, i, rc;

  if (argc < 4) {
    fprintf(stderr, "usage: ompi-model TOPOLOGY HOSTS [KEY=VALUE...] -- NP[,NP...]\n");
    return 2;
  }
  if (weftx_topo_load(argv[1], 0, &t, why, sizeof(why))) {
    fprintf(stderr, "ompi-model: %s\n", why);
    return 2;
  }
  memset(&m, 0, sizeof(m));
  memset(hosts, 0, sizeof(hosts));
  memset(apps, 0, sizeof(apps));
  list = strdup(argv[2]);
  for (tok = strtok_r(list, ",", &save); tok && nhosts < 64; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':'), *bang = strchr(tok, '!');
    if (bang) {
      *bang = '\0';
      hosts[nhosts].hnp = 1;
    }
    if (colon) {
      *colon = '\0';
      hosts[nhosts].slots = num(colon + 1);
    }
    hosts[nhosts].topo = t;
    names[nhosts++] = tok;
  }
  memset(&cl, 0, sizeof(cl));
  for (i = 3; i < argc && strcmp(argv[i], "--"); i++) {
    /* mpirun's options: each sets its MCA parameter and the job's policy */
    static const struct {
      const char *opt, *mca;
      int arg;
    } opts[] = {
      {"--map-by", "rmaps_base_mapping_policy", 1},
      {"--rank-by", "rmaps_base_ranking_policy", 1},
      {"--bind-to", "hwloc_base_binding_policy", 1},
      {"-N", "rmaps_ppr_n_pernode", 1},
      {"--npernode", "rmaps_ppr_n_pernode", 1},
      {"--npersocket", "rmaps_ppr_n_persocket", 1},
      {"--cpus-per-proc", "rmaps_base_cpus_per_rank", 1},
      {"--cpu-set", "hwloc_base_cpu_set", 1},
      {"--cpu-list", "hwloc_base_cpu_list", 1},
      {"--ppr", "rmaps_ppr_pattern", 1},
      {"--oversubscribe", "rmaps_base_oversubscribe", 0},
      {"--nooversubscribe", "rmaps_base_no_oversubscribe", 0},
      {"--nolocal", "rmaps_base_no_schedule_local", 0},
      {"--pernode", "rmaps_ppr_pernode", 0},
      {"--use-hwthread-cpus", "hwloc_base_use_hwthreads_as_cpus", 0},
      {"--bycore", "rmaps_base_bycore", 0},
      {"--byslot", "rmaps_base_byslot", 0},
      {"--bynode", "rmaps_base_bynode", 0},
      {"--bind-to-core", "hwloc_base_bind_to_core", 0},
      {"--bind-to-socket", "hwloc_base_bind_to_socket", 0},
    };
    char *eq = strchr(argv[i], '=');
    const char *val;
    size_t k;
    int id;
    if (!strcmp(argv[i], "--mca") && i + 2 < argc) {
      if ((id = weftx_ompi_mca_id(argv[i + 1])) < 0) {
        fprintf(stderr, "ompi-model: unknown MCA parameter %s\n", argv[i + 1]);
        return 2;
      }
      m.v[id] = argv[i + 2];
      i += 2;
      continue;
    }
    for (k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
      if (!strcmp(argv[i], opts[k].opt))
        break;
    if (k < sizeof(opts) / sizeof(opts[0])) {
      val = opts[k].arg ? argv[++i] : "1";
      m.v[weftx_ompi_mca_id(opts[k].mca)] = val;
      if (!strcmp(opts[k].opt, "--map-by"))
        cl.map_by = val;
      else if (!strcmp(opts[k].opt, "--rank-by"))
        cl.rank_by = val;
      else if (!strcmp(opts[k].opt, "--bind-to"))
        cl.bind_to = val;
      else if (!strcmp(opts[k].opt, "-N") || !strcmp(opts[k].opt, "--npernode"))
        cl.npernode = num(val);
      else if (!strcmp(opts[k].opt, "--npersocket"))
        cl.npersocket = num(val);
      else if (!strcmp(opts[k].opt, "--cpus-per-proc"))
        cl.cpus_per_proc = num(val);
      else if (!strcmp(opts[k].opt, "--pernode"))
        cl.pernode = 1;
      else if (!strcmp(opts[k].opt, "--nolocal"))
        cl.nolocal = 1;
      else if (!strcmp(opts[k].opt, "--oversubscribe"))
        cl.oversubscribe = 1;
      else if (!strcmp(opts[k].opt, "--nooversubscribe"))
        cl.nooversubscribe = 1;
      continue;
    }
    if (!eq) {
      fprintf(stderr, "ompi-model: option %s not known here\n", argv[i]);
      return 2;
    }
    *eq = '\0';
    if ((id = weftx_ompi_mca_id(argv[i])) < 0) {
      fprintf(stderr, "ompi-model: unknown MCA parameter %s\n", argv[i]);
      return 2;
    }
    m.v[id] = eq + 1;
  }
  if (i + 1 >= argc)
    return 2;
  for (tok = strtok_r(argv[i + 1], ",", &save); tok && napps < 16; tok = strtok_r(NULL, ",", &save))
    apps[napps++].np = num(tok);
  if ((rc = weftx_ompi_policy_make(&m, &cl, &p, why, sizeof(why))) ||
      (rc = weftx_ompi_job_map(&p, hosts, nhosts, apps, napps, t, &j, why, sizeof(why)))) {
    printf("error: %s\n", why);
    return 1;
  }
  {
    char desc[256];
    weftx_ompi_describe(&j.policy, desc, sizeof(desc));
    printf("# %s\n", desc);
  }
  /* bindings host by host, as each daemon computes them */
  {
    weftx_ompi_bound *b[64];
    int counts[64][16];
    memset(counts, 0, sizeof(counts));
    for (int r = 0; r < j.np; r++)
      counts[j.ranks[r].host][j.ranks[r].app]++;
    for (int h = 0; h < nhosts; h++) {
      int n = 0;
      for (int a = 0; a < napps; a++)
        n += counts[h][a];
      b[h] = calloc((size_t)n + 1, sizeof(**b));
      if (n && weftx_ompi_node_bind(t, &j.policy, j.slots[h], counts[h], napps, b[h], why,
                                    sizeof(why))) {
        printf("error: %s: %s\n", names[h], why);
        return 1;
      }
    }
    for (int r = 0; r < j.np; r++) {
      const weftx_ompi_bound *x = &b[j.ranks[r].host][j.ranks[r].local_rank];
      char cpus[256] = "-";
      if (x->bound)
        hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), x->cpuset);
      printf("%s rank %d local %d app %d bind %s\n", names[j.ranks[r].host], r,
             j.ranks[r].local_rank, j.ranks[r].app, cpus);
    }
  }
  return 0;
}
