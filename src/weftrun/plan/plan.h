/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plan stage and what follows from the plan alone: the plan, a pure
 * function of the options, the hosts and their facts (plan.c, which chooses
 * who places the ranks: weft's GPU rule, gpu.c, or Open MPI's layout,
 * ompi.c); the job's network, chosen from it (network.c); and the plan as
 * weftrun shows it (report.c: --dry-run, the plan JSON), with every
 * variable each rank will get (preview.c). wr_plan and wr_net are in
 * weftrun.h.
 */
#ifndef WR_PLAN_H
#define WR_PLAN_H

#include "weftrun.h"

/* plan.c: the pure plan, and what it takes of this machine besides the hosts' facts: */
typedef struct wr_plan_here {
  const char *reserved_cpus; /* the preset's cores no rank gets, or NULL */
  char *const *preset_env;   /* the preset's "KEY=VALUE" */
  int npreset_env;
  char *const *environ; /* weftrun's environment: the value of -x VAR */
} wr_plan_here;

/* WR_EXIT_*, with a one-line reason in why on failure. */
int wr_plan_make(const wr_opts *o, const wr_inventory *inv, const wr_plan_here *here, wr_plan **out,
                 char *why, size_t whylen);
/* gpu.c and ompi.c: the two ways of placing, after plan.c has chosen one. */
int wr_plan_gpu(wr_plan *p, const wr_opts *o, const wr_host *hosts, int nhosts,
                const wr_plan_here *here, char *why, size_t whylen);
int wr_plan_ompi(wr_plan *p, const wr_opts *o, const wr_inventory *inv, char *why, size_t whylen);
void wr_plan_destroy(wr_plan *p);
int wr_plan_host_of(const wr_plan *p, const char *name); /* plan index of a host, or -1 */

/* network.c: the job's network (wr_net), chosen once and handed to every rank. */
int wr_net_choose(const wr_plan *p, wr_net *n); /* WR_EXIT_*, the reason on stderr */
int wr_net_try(const wr_plan *p, wr_net *n, char *why, size_t len); /* WR_EXIT_*, quiet */

/* preview.c: every variable each rank will get (--dry-run, the plan JSON): what all
 * ranks share once, with its source, and each rank's own; the user's variables that
 * go as they are, by name only. */
typedef struct wr_preview {
  int nall;
  char **all;        /* "KEY=VALUE" every rank gets */
  char **source;     /* where each came from ("weft", "-x", "preset a3-highgpu-8g") */
  char **unresolved; /* why a value still holds a placeholder, else NULL */
  weftx_env_origin *origin;
  int nforwarded;
  char **forwarded; /* names of the variables forwarded as the user has them */
  char ***rank;     /* np NULL-terminated lists: the variables that differ */
  int *nrank;
} wr_preview;
int wr_preview_make(const wr_plan *p, const wr_inventory *inv, const wr_net *net, const wr_opts *o,
                    wr_preview *pv, char *why, size_t len); /* WEFT_E* */
void wr_preview_print(const wr_preview *pv, const wr_plan *p, FILE *out);
void wr_preview_free(wr_preview *pv, int np);

/* report.c: the plan as --dry-run prints it, or as JSON; net may be NULL. */
int wr_report(const wr_plan *p, const wr_inventory *inv, const wr_net *net, const wr_opts *o,
              FILE *out);

#endif /* WR_PLAN_H */
