/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank's internal interface: the supervisor that runs the program and
 * reports how it ended, its end of the control channel to weftrun, the
 * rank's call page, stack traces, and Google Cloud on the rank's host. Its
 * arguments, its messages and its exit codes are the contract with weftrun
 * (src/common/agent.h, ctl.h).
 */
#ifndef WEFT_RANK_H
#define WEFT_RANK_H

#include <weftx.h>

#include "agent.h"
#include "ctl-io.h"
#include "sample.h"

#include <pthread.h>
#include <sys/types.h>

/* weft-rank could not set its rank up (agent.h's WT_EXIT_ENGINE, "launch failed") */
#define WK_EXIT_SETUP WT_EXIT_ENGINE

/* channel.c: the control channel (NULL when weftrun asked for none). */
typedef struct wk_channel wk_channel;
typedef struct wk_channel_event {
  int type;   /* 0 nothing, -1 weftrun lost, WT_CTL_END, WT_CTL_STACK_REQ */
  int signal; /* END's */
  char why[256];
} wk_channel_event;
/* Connect and send HELLO with the secret (taken out of the environment), within
 * WT_CTL_CONNECT_S; \p addr is kept (it must outlive the channel). 0, or -1 with
 * the reason. */
int wk_channel_open(wk_channel **c, const char *addr, const wt_agent_who *who, char *why,
                    size_t len);
/* weftrun's WELCOME (its bounds), within WT_CTL_CONNECT_S of the open; the rank may
 * start only after it. The wait is apart from the open so that the agent sets the rank
 * up meanwhile. 0, or -1 with the reason (a REFUSE says why). */
int wk_channel_welcomed(wk_channel *c, char *why, size_t len);
void wk_channel_scrub(void);            /* the secret out of the environment, no channel */
int wk_channel_fd(const wk_channel *c); /* -1 once lost */
double wk_channel_grace(const wk_channel *c);
double wk_channel_lost(const wk_channel *c); /* weftrun's bound of silence (--host-timeout) */
void wk_channel_send(wk_channel *c, const wt_ctl_out *m);
void wk_channel_flush(wk_channel *c, double seconds);
/* Read weftrun's messages, send a heartbeat when one is due (with \p page, a snapshot
 * or NULL), check for silence: what came (type -1: weftrun lost, why says how). */
const wk_channel_event *wk_channel_pump(wk_channel *c, double now, const weftx_page *page,
                                        char *why, size_t len);
void wk_channel_heard(wk_channel *c, double now); /* after a wait of the agent's own */
double wk_channel_next(const wk_channel *c);      /* when pump is due at the latest */
/* The last messages out, then the connection closed in order (weftrun closes its end
 * first), by deadline. */
void wk_channel_close(wk_channel *c, double deadline);

/* leftovers.c: what the rank leaves on its host. start: the agent becomes the child
 * subreaper of the program's descendants (1), unless WEFT_KEEP_DAEMONS=1 (keep: 1) or
 * the kernel cannot (0). reap_except: orphans that came to the agent reaped, never
 * \p keep (the program: its wait is supervise.c's); reap: all. end: once the rank has
 * ended, what is left under the agent gets SIGTERM, then SIGKILL after a grace, and
 * one line on stderr names it when \p say (the program ended on its own) or when some
 * outlive SIGKILL; how many there were. state: /proc/PID/stat's state
 * letter ('?' gone). shm: the rank's Open MPI shared-memory segment removed. */
int wk_leftovers_keep(void);
int wk_leftovers_start(void);
void wk_leftovers_reap_except(pid_t keep);
void wk_leftovers_reap(void);
int wk_leftovers_end(const wt_agent_who *who, int say);
char wk_leftovers_state(pid_t pid);
void wk_leftovers_shm(void);

/* page.c: the rank's call page (weftx/page.h), named in the environment. */
typedef struct wk_page wk_page;
int wk_page_create(wk_page **g, char *why, size_t len);
void wk_page_destroy(wk_page *g);
int wk_page_read(const wk_page *g, weftx_page *copy); /* 0, -1 when not readable */
void wk_page_put(wt_ctl_out *m, const weftx_page *p, double now);

/* stack.c: the rank's stack (eu-stack or gdb) to weftrun, or why there is none. */
void wk_stack_send(wk_channel *c, long pid, const wt_agent_who *who);

/* supervise.c: fork+exec argv, forward signals, report to weftrun over \p ch (may be
 * NULL), wait; returns the exit code to use (the program's, 128+N for signal N) after
 * printing what happened when it failed. */
int wk_supervise(char **argv, const wt_agent_who *who, wk_channel *ch, wk_page *page);
/* A setup failure: the line on stderr (for the user to read) and EXITED over \p ch. */
int wk_setup_failed(wk_channel *ch, const wt_agent_who *who, const char *why, int code);
/* Grace after a preemption notice (default WEFTX_PREEMPT_GRACE_S); wk_supervise_preempt()
 * sends WEFTX_PREEMPT_SIGNAL to this process so that the program gets that grace. */
void wk_supervise_set_grace(long seconds);
/* --monitor: a SAMPLE of the rank every \p every seconds (0: none), with \p nic's rates
 * and GPU \p gpu's figures (its index on this host, -1 none; \p pci its PCI address), and
 * its Prometheus file in \p prom_dir (NULL: none) labelled with \p job. */
void wk_supervise_set_monitor(double every, const char *nic, int gpu, const char *pci,
                              const char *prom_dir, const char *job);
void wk_supervise_preempt(void);

/* nvml.c: NVML loaded at run time (dlopen): the part of its C ABI weft-rank calls
 * (nvml.h's, stable since NVML 2); a function this NVML lacks is NULL. */
typedef int wk_nvml_ret;
typedef void *wk_nvml_dev;
typedef struct wk_nvml_mem {
  unsigned long long total, free, used;
} wk_nvml_mem;
typedef struct wk_nvml_util {
  unsigned int gpu, memory;
} wk_nvml_util;
typedef struct wk_nvml_proc1 {
  unsigned int pid;
  unsigned long long used;
} wk_nvml_proc1;
typedef struct wk_nvml_proc3 {
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance, compute_instance;
} wk_nvml_proc3;
#define WK_NVML_OK 0
#define WK_NVML_ERROR_INSUFFICIENT_SIZE 7
#define WK_NVML_UNCORRECTED 1 /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED */
#define WK_NVML_VOLATILE 0    /* NVML_VOLATILE_ECC: since the driver loaded */
#define WK_NVML_TEMPERATURE_GPU 0
typedef struct wk_nvml {
  wk_nvml_ret (*init)(void);
  wk_nvml_ret (*shutdown)(void);
  wk_nvml_ret (*count)(unsigned *);
  wk_nvml_ret (*handle)(unsigned, wk_nvml_dev *);
  wk_nvml_ret (*by_pci)(const char *, wk_nvml_dev *);
  wk_nvml_ret (*name)(wk_nvml_dev, char *, unsigned);
  wk_nvml_ret (*memory)(wk_nvml_dev, wk_nvml_mem *);
  wk_nvml_ret (*persistence)(wk_nvml_dev, int *);
  wk_nvml_ret (*ecc)(wk_nvml_dev, int, int, unsigned long long *);
  wk_nvml_ret (*retired_pending)(wk_nvml_dev, int *);
  wk_nvml_ret (*procs3)(wk_nvml_dev, unsigned *, wk_nvml_proc3 *);
  wk_nvml_ret (*procs1)(wk_nvml_dev, unsigned *, wk_nvml_proc1 *);
  wk_nvml_ret (*utilization)(wk_nvml_dev, wk_nvml_util *);
  wk_nvml_ret (*power)(wk_nvml_dev, unsigned *);            /* milliwatts */
  wk_nvml_ret (*temperature)(wk_nvml_dev, int, unsigned *); /* degrees C */
  const char *(*error)(wk_nvml_ret);
} wk_nvml;
/* 0, or -1 with why (no driver, an NVML too old). init() is the caller's. */
int wk_nvml_load(wk_nvml *n, char *why, size_t len);
const char *wk_nvml_why(const wk_nvml *n, wk_nvml_ret rc, char *buf, size_t len);

/* monitor.c: the rank's samples for weftrun --monitor (sample.h): what its process uses
 * and its NIC's rates, one SAMPLE over the channel when wk_monitor_next() has come. */
typedef struct wk_monitor wk_monitor;
typedef struct wk_monitor_conf {
  double every;
  char nic[32];
  int gpu; /* -1: none */
  char pci[32];
  const char *prom_dir, *job;
} wk_monitor_conf;
wk_monitor *wk_monitor_new(long pid, const wk_monitor_conf *c, const wt_agent_who *who,
                           double now);                          /* NULL: no memory */
double wk_monitor_next(const wk_monitor *m);                     /* 0 for NULL */
void wk_monitor_tick(wk_monitor *m, wk_channel *ch, double now); /* sends when due */
void wk_monitor_free(wk_monitor *m); /* its rank leaves the host's Prometheus file */

/* prom.c: --monitor-prom DIR, the host's DIR/weft-JOB-HOST.prom shared by its agents. */
typedef struct wk_prom wk_prom;
wk_prom *wk_prom_open(const char *dir, const char *job, const wt_sample_who *who,
                      double every);              /* NULL: no memory */
void wk_prom_put(wk_prom *p, const wt_sample *s); /* each sample; NULL p: nothing */
void wk_prom_close(wk_prom *p); /* the rank ended: out of the file, the last one removes it */

/* ids.c: this rank's numbers, from Open MPI's OMPI_COMM_WORLD_* (mpirun), else from
 * srun's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE
 * (checked against PMIX_RANK). 0, or -1 with a reason. */
typedef struct wk_ids {
  int rank, size, local, lsize;
  const char *from; /* "Open MPI", "srun" or "Hydra" */
} wk_ids;
int wk_ids_get(wk_ids *ids, char *why, size_t len);

/* gpus.c: the GPUs this rank may have (weftrun's --gpus for its host, Slurm's step) and
 * how this process numbers them. prepare before placing (wk_gpus_policy() is the
 * policy's gpus), apply after: it fills ri's devices and GPU in the step's numbering and
 * leaves a CUDA_VISIBLE_DEVICES of Slurm's to weft. 0, or -1 with a reason. */
typedef struct wk_gpus {
  int limited;         /* set applies */
  char set[1024];      /* "3-4": the GPUs (node indices) ranks here may have */
  int slurm;           /* CUDA_VISIBLE_DEVICES is Slurm's for this step */
  char step_var[1100]; /* "SLURM_STEP_GPUS=3,4", for messages */
  int node[WEFTX_SLURM_GPUS_MAX], cuda[WEFTX_SLURM_GPUS_MAX], npairs; /* node index -> CUDA's */
  int devices[WEFTX_SLURM_GPUS_MAX], ndevices;
} wk_gpus;
int wk_gpus_prepare(wk_gpus *g, const char *arg, int node, char *why, size_t len);
const char *wk_gpus_policy(const wk_gpus *g);
int wk_gpus_apply(wk_gpus *g, const weftx_place *pl, weftx_rank_info *ri, weftx_env *env,
                  weftx_gpu_visibility vis, char *why, size_t len);

/* output.c: the program's output read by the agent, from wk_output_start() to
 * wk_output_finish(): with --lines handed on in whole lines, tagged and stamped as asked,
 * as records on the agent's stderr (agent.h, WT_LINE_MARK); with --output-filename DIR
 * also into DIR/1/rank.R/stdout and stderr. */
typedef struct wk_output wk_output;
int wk_output_start(const wt_agent_args *a, int rank, wk_output **out, char *why, size_t len);
void wk_output_finish(wk_output *o);

/* gcp.c: --nccl-preset on this host (reserved cores, variables) and the preemption
 * watch; wk_gcp_watch_stop() turns rc into WT_EXIT_PREEMPTED after a notice. */
typedef struct wk_gcp wk_gcp;
int wk_gcp_prepare(const char *nccl_preset, int nhosts, int local_rank, const wt_agent_who *who,
                   wk_gcp **g, char *why, size_t len);
const char *wk_gcp_reserved_cpus(const wk_gcp *g);
int wk_gcp_apply(wk_gcp *g, weftx_env *env, char *why, size_t len);
void wk_gcp_watch_start(wk_gcp *g);
int wk_gcp_watch_stop(wk_gcp *g, int rc);
void wk_gcp_destroy(wk_gcp *g);
/* For weftrun's probe, after the XML: the GCE line (agent.h) when this host is on
 * GCE (or GCE_METADATA_HOST is set), nothing otherwise (no request). */
void wk_gcp_probe_facts(FILE *out);

#endif /* WEFT_RANK_H */
