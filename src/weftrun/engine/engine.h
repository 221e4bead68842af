/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine stage: which engine starts the ranks (engine.c), Open MPI's
 * mpirun (mpirun.c), Slurm's srun (srun.c) or MPICH's mpiexec.hydra
 * (hydra.c), and what an engine is given:
 * its command line for a plan, with weft-rank and its arguments in front of
 * every program, the variables it adds to weftrun's environment, the
 * hostfile it reads, the probe's command; which of weftrun's variables go to
 * every host (forward.c); the engine's output cut into its ranks' streams
 * (streams.c); the ranks' output in whole lines, from the records their agents
 * write (lines.c); the programs weftrun starts and their argument vectors
 * (exec.c).
 */
#ifndef WR_ENGINE_H
#define WR_ENGINE_H

#include "weftrun.h"

/* exec.c: the programs weftrun starts and their argument vectors. */
typedef struct wr_argv {
  char **v;
  int n, cap;
} wr_argv;
int wr_argv_add(wr_argv *a, const char *s);                      /* 0 or WEFT_ENOMEM */
int wr_argv_put(wr_argv *a, const char *key, const char *value); /* "KEY=VALUE" */
int wr_argv_add_cb(void *a, const char *s); /* the same, as wt_agent_args_write() calls it */
void wr_argv_free(wr_argv *a);
void wr_argv_print(FILE *out, const char *prefix, const wr_argv *a);
const char *wr_find_rank_agent(char *buf, size_t len); /* $WEFT_RANK_PATH, build tree, libexec */
const char *wr_find_mpirun(char *buf, size_t len);     /* $WEFT_MPIRUN, else $PATH */
const char *wr_find_srun(char *buf, size_t len);       /* $WEFT_SRUN, else $PATH */
const char *wr_find_hydra(char *buf, size_t len);      /* $WEFT_HYDRA, else $PATH */
/* weftrun's environment with \p changes ("KEY=VALUE" sets, "KEY" unsets; NULL: none), for
 * execve: a NULL-terminated array of pointers into both (free() the array only). */
char **wr_env_build(const wr_argv *changes);

/* engine.c: which engine runs the job, chosen after the hosts (the probe runs through
 * it): --engine, or auto (mpirun; srun inside a Slurm allocation without mpirun). What
 * the engine cannot do is refused here in one line. WR_EXIT_*. */
int wr_engine_choose(const wr_opts *o, const wr_inventory *inv, wr_engine *e);
/* The engine as the user names it: $WEFT_MPIRUN ($WEFT_SRUN) as given, else the bare name
 * (exec.c) */
const char *wr_engine_given(wr_engine_kind kind);
/* The engine, mpirun allowed to run as root when weftrun is, and weft-rank all there to
 * run a job: 0, or WR_EXIT_ENGINE with one line on stderr that says what to do (exec.c). */
int wr_engine_ready(const wr_opts *o, const wr_engine *e);
/* The engine's command line for a plan, the variables it adds to weftrun's environment
 * for it ("KEY=VALUE", into env), and the hostfile it reads. */
int wr_engine_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                   wr_argv *out, wr_argv *env, char *why, size_t whylen); /* WR_EXIT_* */
int wr_engine_hostfile(const wr_plan *p, const wr_engine *e, FILE *out);  /* 0 or -1 */
/* 1 when the engine's job hands the ranks' output on in whole lines: mpirun's (not the
 * check's), whose agents write records (agent.h, WT_LINE_MARK) on their stderr, read from
 * mpirun's by wr_lines_put(). */
int wr_engine_lines(const wr_engine *e);
/* The probe's command: \p n hosts, one "weft-rank --probe" on each, as listed in
 * \p hostfile (the engine's own words; the agent's are the caller's). 0, or -1 out of
 * memory. */
int wr_engine_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                         wr_argv *a, wr_argv *env);
/* This machine's live topology when it has ranks and no --topology file: its ranks (and
 * mpirun, when every rank is here) read it from the job directory (e->host_xml) instead
 * of probing the hardware again. NULL otherwise. */
const weftx_topo *wr_engine_local_topo(const wr_plan *p);

/* Seconds weftrun gives a Python interpreter to say where its mpi4py is. */
#define WR_MPI_DETECT_S 10.0

/* streams.c: the engine's stdout cut into its ranks' streams (mpirun's --tag-output
 * tags, srun's --label labels), as it is read: each rank's bytes go to \p to, in order. */
typedef struct wr_streams {
  int labels; /* srun's labels, not mpirun's tags */
  int n;      /* ranks */
  void (*to)(void *arg, int rank, const char *data, size_t len);
  void *arg;
  int cur;        /* the rank the output is of now, -1: none */
  int in_line;    /* srun: past the label of the line now */
  char label[16]; /* srun: the label read so far */
  int labellen;
  int space;   /* mpirun: Open MPI 5's space after each tag (1), 4.1's none (0), not known (-1) */
  int pending; /* mpirun: a read ended right after a tag */
} wr_streams;
void wr_streams_init(wr_streams *s, int labels, int n,
                     void (*to)(void *arg, int rank, const char *data, size_t len), void *arg);
void wr_streams_put(wr_streams *s, const char *data, size_t len);

/* banners.c: mpirun's stderr passed on with its accounts of how the job ended (Open
 * MPI's blocks between rules of dashes) held until the end, when weftrun drops them
 * (its summary names the cause) or writes them. */
typedef struct wr_banners {
  void (*put)(void *arg, const char *data, size_t len);
  void *arg;
  int mode, bol;         /* what is being read; at the start of a line */
  size_t dashes;         /* RULE: dashes so far */
  char *buf;             /* the rule or block being read */
  size_t len, cap, line; /* line: where the block's last line starts */
  char *held;            /* the blocks held, in order */
  size_t nheld;
  int nblocks; /* how many */
} wr_banners;
void wr_banners_init(wr_banners *b, void (*put)(void *arg, const char *data, size_t len),
                     void *arg);
void wr_banners_put(wr_banners *b, const char *data, size_t len);
/* What is still kept is written, the held blocks too unless \p drop_held; then freed. */
void wr_banners_end(wr_banners *b, int drop_held);
/* The node whose daemon mpirun lost, from the held blocks ("ORTE has lost communication
 * with a remote daemon ... Remote daemon: [[4432,0],1] on node vnode1"): 1 with its name
 * in \p node, 0 when no block says so. */
int wr_banners_lost_node(const wr_banners *b, char *node, size_t len);
/* What is still kept is written; the held blocks are returned (\p len bytes, not
 * NUL-terminated, free(); NULL when none), then all freed. */
char *wr_banners_take(wr_banners *b, size_t *len);

/* lines.c: mpirun's stdout and stderr, as weftx_proc_run's on_output gives them (whole
 * lines), when the agents hand their ranks' output on as records (wr_engine_lines()):
 * each record's line to weftrun's stdout or stderr, the rest as it came. \p before is
 * called before anything is written (the monitor's line wiped); \p open says whether
 * the last thing written left a line open (a prompt), \p broken that a reader has gone. */
typedef struct wr_lines {
  void (*before)(void *arg);
  void *arg;
  int in_piece[3];   /* per stream: inside a line longer than a piece */
  FILE *piece_to[3]; /* and where that line goes */
  int piece_rec[3];  /* and whether it is a rank's record */
  int open;
  int broken; /* 1: a write found its reader gone (EPIPE) */
  FILE *last; /* the stream written last */
  /* when set, mpirun's own stderr lines (not a rank's records) go here instead, as they
   * come: to wr_banners_put() */
  void (*rest)(void *arg, const char *data, size_t len);
  void *rest_arg;
} wr_lines;
void wr_lines_init(wr_lines *l, void (*before)(void *arg), void *arg);
void wr_lines_put(wr_lines *l, int stream, const char *data, size_t len);

/* forward.c: the variables plan p's engine passes to every host: those forwarded by
 * default (weftx_env_forward_default() less those that describe one host, and a
 * CUDA_VISIBLE_DEVICES of Slurm's) when weft places the ranks; when Open MPI does, only
 * WEFT_* of them (mpirun passes the rest as it would alone). */
int wr_engine_forwards(const wr_plan *p, const char *name, size_t n);
/* The variables of \p envp that look meant for the job (NCCL_*, OMP_*, TORCH*, ...) but
 * reach only this host's ranks when plan p has a host elsewhere: neither forwarded nor
 * given with -x. Their names, space-separated, into \p buf (those that fit); how many. */
int wr_engine_left_here(const wr_plan *p, const wr_opts *o, char *const *envp, char *buf,
                        size_t len);
/* A CUDA_VISIBLE_DEVICES that Slurm set (a batch script's, a step's): never forwarded. */
int wr_slurm_cvd_is_slurms(void);

/* mpirun.c and srun.c, for engine.c: each engine's command line, environment, hostfile
 * and probe. */
int wr_mpirun_argv(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a);
int wr_mpirun_env(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *env);
int wr_mpirun_app_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, int app, wr_argv *a);
int wr_mpirun_hostfile(const wr_plan *p, FILE *out);
int wr_mpirun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                         wr_argv *a);
int wr_srun_check(const wr_opts *o, const wr_inventory *inv, char *why, size_t len);
int wr_srun_argv(const wr_plan *p, const wr_opts *o, const wr_net *net, const wr_engine *e,
                 wr_argv *a, wr_argv *env);
int wr_srun_hostfile(const wr_plan *p, FILE *out);
int wr_srun_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                       wr_argv *a, wr_argv *env);
int wr_hydra_check(const wr_opts *o, char *why, size_t len);
int wr_hydra_argv(const wr_plan *p, const wr_opts *o, const wr_engine *e, wr_argv *a, wr_argv *env);
int wr_hydra_hostfile(const wr_plan *p, FILE *out);
int wr_hydra_probe_argv(const wr_opts *o, const wr_engine *e, int n, const char *hostfile,
                        wr_argv *a, wr_argv *env);

#endif /* WR_ENGINE_H */
