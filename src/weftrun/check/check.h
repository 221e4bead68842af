/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --check, the launcher's side: a pre-flight check of every host in
 * short jobs of "weft-rank --check" (the agent's side: src/weft-rank/check/)
 * started through the engine as the real job would be (check.c), run side
 * by side with their deadlines (run.c); the facts the agents report (the
 * records of agent.h) evaluated, against each other and the job's plan, into
 * a table of cells (OK / WARN / FAIL with a value) and one line per problem
 * saying what to change (eval.c, pure: tests/unit/test-weftrun-check.c); the
 * table printed (report.c).
 */
#ifndef WR_CHECK_H
#define WR_CHECK_H

#include "engine/engine.h"
#include "weftrun.h"

/* eval.c: the evaluation. The rules' numbers (weftrun(1) CHECKS says them): */
#define WR_CHECK_CLOCK_WARN_S 1.0     /* clock offset from the master above which: WARN */
#define WR_CHECK_START_WARN_S 5.0     /* engine start above which: WARN */
#define WR_CHECK_SHM_MIN (1ULL << 30) /* /dev/shm below this on a GPU host: WARN */
/* ulimit -l below unlimited on a host with an RDMA device: WARN */
#define WR_CHECK_MEM_AVAIL_PCT 10 /* available memory below this % of the total: WARN */

/* The table's columns. */
#define WR_CHECK_COLUMNS(X)                                                                        \
  X(REACH, "reach")                                                                                \
  X(VERSIONS, "versions")                                                                          \
  X(PROGRAM, "program")                                                                            \
  X(GPUS, "gpus")                                                                                  \
  X(NET, "net")                                                                                    \
  X(PAIRS, "pairs")                                                                                \
  X(CLOCK, "clock")                                                                                \
  X(MEMORY, "memory")

#define WR_CHECK_COL_ENUM(name, word) WR_CHECK_##name,
enum wr_check_col { WR_CHECK_COLUMNS(WR_CHECK_COL_ENUM) WR_CHECK_NCOLS };
#undef WR_CHECK_COL_ENUM

/** \brief "reach", "versions", ... of a column. */
const char *wr_check_col_name(int col);

typedef enum wr_check_status {
  WR_CHECK_NONE = 0, /* not checked ("-") */
  WR_CHECK_OK,
  WR_CHECK_WARN,
  WR_CHECK_FAIL,
} wr_check_status;

/** \brief "-", "OK", "WARN", "FAIL". */
const char *wr_check_status_name(wr_check_status s);

typedef struct wr_check_fact {
  char *key, *value;
} wr_check_fact;

/* One host of the check, as weftrun saw it. */
typedef struct wr_check_host {
  const char *name;
  int answered;           /* its agent started (a hello record came) */
  int complete;           /* its agent reported to the end */
  double start_s;         /* seconds from the engine's start to its hello */
  const char *engine_why; /* not answered: why, as the engine said it (may be NULL) */
  int planned;            /* ranks the job's plan puts there (-1: unknown) */
  int planned_gpus;       /* of them, ranks that each want a GPU of their own */
  wr_check_fact *facts;   /* in the order they came */
  int nfacts;
} wr_check_host;

typedef struct wr_check_input {
  const wr_check_host *hosts;
  int nhosts;
  const char *engine;  /* "mpirun" */
  const char *version; /* weftrun's own weft version */
  const char *ifname;  /* the job's interface; "" or NULL for one host here */
  int master;          /* index of the master host (MASTER_ADDR), -1 for none */
  int master_port;
  const char *plan_why; /* the job's plan cannot be made: why (a FAIL), else NULL */
} wr_check_input;

typedef struct wr_check_cell {
  wr_check_status status;
  char value[40];
} wr_check_cell;

typedef struct wr_check_problem {
  wr_check_status status; /* WARN or FAIL */
  int col;                /* the column it belongs to */
  int host;               /* the host it is about, -1 for the job */
  char text[600];         /* one line: what is wrong, where, what to change */
} wr_check_problem;

typedef struct wr_check_result {
  int nhosts;
  wr_check_cell *cells; /* nhosts x WR_CHECK_NCOLS, row by row */
  wr_check_problem *problems;
  int nproblems;
  wr_check_status worst; /* OK, WARN or FAIL */
} wr_check_result;

/** \brief The first value of \p key in \p h's facts, or NULL. */
const char *wr_check_fact_get(const wr_check_host *h, const char *key);

/** \brief Evaluate \p in (pure): cells and problems into \p out, problems FAILs first,
 * then in host order. \return 0 or WEFT_ENOMEM (nothing to free then). */
int wr_check_evaluate(const wr_check_input *in, wr_check_result *out);
void wr_check_result_free(wr_check_result *r);

/** \brief The cell of \p host and \p col. */
const wr_check_cell *wr_check_cell_at(const wr_check_result *r, int host, int col);

/* run.c: check jobs side by side. What came back from one host: */
typedef struct wr_check_got {
  wr_check_fact *facts; /* its records but hello, end and xml, as they came */
  int nfacts, cap;
  char *xml; /* its topology, NUL-terminated, or NULL */
  size_t xmllen;
  double hello; /* seconds from the job's start to its hello; -1: none */
  int end;      /* its agent reported to the end */
} wr_check_got;

#define WR_CHECK_ERR_MAX 16384 /* bytes of the engine's messages kept */

typedef struct wr_check_priv wr_check_priv;
typedef struct wr_check_job {
  char **argv; /* the engine's command (a wr_argv's, the job's to free);
                                 * host I of the job is its rank I */
  wr_argv env; /* the variables the engine sets for it (the job's) */
  int nhosts;
  double start_s;    /* every hello within this, or the job is stopped */
  double timeout_s;  /* the whole job */
  int verbose;       /* the engine's messages go on to stderr too */
  int labels;        /* its stdout is srun's --label lines, not mpirun's tags */
  wr_check_got *got; /* out: nhosts of them */
  char *err;         /* out: the engine's last messages, NUL-terminated */
  size_t errlen;
  int status; /* out: the engine's exit status (weftx_proc_result) */
  int timed_out, start_late, stopped;
  double seconds;
  wr_check_priv *priv;
} wr_check_job;

/* Run \p n jobs side by side until each ends; weftrun's stop requests (stop_fd) are
 * passed on to all. 0, 128+N when stopped by signal N, -1 when nothing could run. */
int wr_check_run(wr_check_job *jobs, int n, int stop_fd);
/* What a job holds (its argv too); it may be made again afterwards. */
void wr_check_job_free(wr_check_job *j);

/* report.c: the check as a table with its problems, or as JSON. */
typedef struct wr_check_report {
  const wr_check_input *in;
  const wr_check_result *res;
  const char *pair_rule; /* "every pair, both ways", ... */
  double seconds;
  int exit_code;
} wr_check_report;
void wr_check_print(const wr_check_report *r, FILE *out);
void wr_check_print_json(const wr_check_report *r, FILE *out);

/* check.c: --check: the check job, the plan made from what it found, the evaluation
 * (eval.c), the table. WR_EXIT_OK, _CHECKWARN, _CHECKFAIL, or another
 * WR_EXIT_* when the check itself cannot run. */
int wr_check(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir, int stop_fd);

/* check.c: after a launch or a probe that failed before any rank started, which hosts
 * the engine cannot reach, found by the check's reach jobs within \p seconds: \p state
 * (one per host of \p inv) WR_HOST_UNREACHABLE or WR_HOST_NONAME (its name does not
 * resolve) or 0, and for those \p why (strdup()'d, the caller frees; zeroed by the
 * caller). 0, 128+N when stopped by signal N, WR_EXIT_ENGINE. */
#define WR_CHECK_UNREACHED_S 15.0 /* the seconds it has after a failed launch */
#define WR_HOST_UNREACHABLE 1
#define WR_HOST_NONAME 2
int wr_check_unreachable(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                         int stop_fd, double seconds, int *state, char **why);
/* The same, said: one line for each host found ("weftrun: job failed: host H cannot be
 * reached through mpirun (WHY); ..."); WR_EXIT_HOSTLOST, or WR_EXIT_NOHOST when a name
 * does not resolve; 0 when every host was reached (nothing said); 128+N when stopped. */
int wr_check_name_unreached(const wr_opts *o, const wr_engine *e, wr_inventory *inv, wr_jobdir *dir,
                            int stop_fd, double seconds);

#endif /* WR_CHECK_H */
