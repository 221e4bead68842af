/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --check, the pure part: the facts an agent reports (the record keys
 * of agent.h's "#weft-check H KEY VALUE" lines), which hosts test a TCP
 * connection to which (the pair rule, evaluated by every agent for itself),
 * and the evaluation of every host's facts, against each other and against
 * the job's plan, into a table of cells (OK / WARN / FAIL with a value) and
 * one line per problem saying what to change. No I/O: weft-rank gathers the
 * facts (src/weft-rank/check*.c), weftrun runs the check job and prints the
 * result (src/weftrun/check*.c), tests/unit/test-weftrun-check.c tests this.
 */
#ifndef WEFT_TOOL_CHECK_H
#define WEFT_TOOL_CHECK_H

#include <stddef.h>

/* ---- Record keys (one per fact; repeated keys are marked) ----------------- */

#define WEFT_CK_HELLO "hello"        /* PID: the agent started (the engine reached the host) */
#define WEFT_CK_END "end"            /* the agent reported everything */
#define WEFT_CK_TIMEOUT "timeout"    /* COLUMN SECONDS: a check that did not finish (repeated) */
#define WEFT_CK_VER_WEFT "ver.weft"  /* versions: a version, or "absent" */
#define WEFT_CK_VER_OMPI "ver.ompi"
#define WEFT_CK_VER_HWLOC "ver.hwloc"
#define WEFT_CK_VER_NCCL "ver.nccl"
#define WEFT_CK_VER_CUDART "ver.cudart"  /* the CUDA runtime the loader finds */
#define WEFT_CK_VER_CUDA "ver.cuda"      /* the CUDA version of the driver library (libcuda) */
#define WEFT_CK_VER_DRIVER "ver.driver"  /* the kernel driver, as NVML says */
/* program: "elf CLASS MACHINE PATH", "script INTERPRETER PATH", "missing NAME",
 * "noexec PATH", "nointerp INTERPRETER PATH", "noscript FILE INTERPRETER" */
#define WEFT_CK_PROGRAM "program"
#define WEFT_CK_GPU_PCI "gpu.pci"    /* NVIDIA GPUs on the PCI bus (hwloc, or WEFT_TOPOLOGY) */
#define WEFT_CK_GPU_NVML "gpu.nvml"  /* GPUs NVML counts, or "absent WHY" */
#define WEFT_CK_GPU_MODEL "gpu.model"
#define WEFT_CK_GPU_MEM "gpu.mem"        /* bytes of the smallest GPU */
#define WEFT_CK_GPU_ECC "gpu.ecc"        /* IDX COUNT: uncorrected ECC errors (repeated) */
#define WEFT_CK_GPU_RETIRED "gpu.retired" /* IDX: retired pages wait for a reset (repeated) */
#define WEFT_CK_GPU_PERSIST "gpu.persist" /* GPUs with persistence mode off */
#define WEFT_CK_GPU_BUSY "gpu.busy"      /* IDX PID NAME: a process on a GPU (repeated) */
#define WEFT_CK_NET_IF "net.if"      /* "NAME ADDR/PREFIX" or "missing NAME" */
#define WEFT_CK_NET_MTU "net.mtu"
#define WEFT_CK_NET_GVNIC "net.gvnic" /* yes, no */
#define WEFT_CK_NET_ROUTE "net.route" /* the interface this host reaches the master through */
#define WEFT_CK_NET_RDMA "net.rdma"  /* RDMA devices (InfiniBand, RoCE, gIB) in the topology */
#define WEFT_CK_GCE "gce"            /* MACHINE_TYPE PHYSICAL_HOST|- on a Google Cloud VM */
#define WEFT_CK_GCE_WARN "gce.warn"  /* a Google Cloud check's warning (repeated) */
#define WEFT_CK_MASTER "master"      /* "ok MS" (connected to the master), "fail WHY" */
#define WEFT_CK_PORT "port"          /* the master only: "PORT free", "PORT taken [PID NAME]" */
#define WEFT_CK_CLOCK "clock"        /* OFFSET ERROR: seconds ahead of the master's clock */
#define WEFT_CK_PAIR "pair"          /* "J ok MS", "J fail WHY", "J skip WHY" (repeated) */
#define WEFT_CK_MEM_TOTAL "mem.total" /* bytes */
#define WEFT_CK_MEM_AVAIL "mem.avail" /* bytes */
#define WEFT_CK_SHM "shm"            /* "SIZE FREE" bytes of /dev/shm, or "absent" */
#define WEFT_CK_MEMLOCK "memlock"    /* bytes, or "unlimited" */

/* ---- The rules' numbers (weftrun(1) CHECKS says them) -------------------- */

#define WEFT_CHECK_ALL_PAIRS 32        /* up to this many hosts every host tests every other */
#define WEFT_CHECK_MAX_TARGETS 40      /* most hosts one host tests */
#define WEFT_CHECK_CLOCK_WARN_S 1.0    /* clock offset from the master above which: WARN */
#define WEFT_CHECK_START_WARN_S 5.0    /* engine start above which: WARN */
#define WEFT_CHECK_SHM_MIN (1ULL << 30) /* /dev/shm below this on a GPU host: WARN */
/* ulimit -l below unlimited on a host with an RDMA device: WARN */
#define WEFT_CHECK_MEM_AVAIL_PCT 10    /* available memory below this % of the total: WARN */

/** \brief The hosts host \p me of \p n opens a TCP connection to (the pair rule): every
 * other host when n <= WEFT_CHECK_ALL_PAIRS; else its ring neighbours (me-1, me+1),
 * the master (0), the hosts n/4, n/2 and 3n/4 ahead, and one more picked by a hash of
 * \p me: at most 7. Every pair is thus tested both ways up to WEFT_CHECK_ALL_PAIRS
 * hosts, and above it every host at least 4 times each way. \p out gets them in
 * increasing order. \return how many (at most \p max). */
int weft_check_targets(int me, int n, int *out, int max);

/* ---- Evaluation ------------------------------------------------------------ */

/* The table's columns. */
#define WEFT_CHECK_COLUMNS(X)                                                              \
  X(REACH, "reach")                                                                        \
  X(VERSIONS, "versions")                                                                  \
  X(PROGRAM, "program")                                                                    \
  X(GPUS, "gpus")                                                                          \
  X(NET, "net")                                                                            \
  X(PAIRS, "pairs")                                                                        \
  X(CLOCK, "clock")                                                                        \
  X(MEMORY, "memory")

#define WEFT_CHECK_COL_ENUM(name, word) WEFT_CHECK_##name,
enum weft_check_col { WEFT_CHECK_COLUMNS(WEFT_CHECK_COL_ENUM) WEFT_CHECK_NCOLS };
#undef WEFT_CHECK_COL_ENUM

/** \brief "reach", "versions", ... of a column. */
const char *weft_check_col_name(int col);

typedef enum weft_check_status {
  WEFT_CHECK_NONE = 0,       /* not checked ("-") */
  WEFT_CHECK_OK,
  WEFT_CHECK_WARN,
  WEFT_CHECK_FAIL,
} weft_check_status;

/** \brief "-", "OK", "WARN", "FAIL". */
const char *weft_check_status_name(weft_check_status s);

typedef struct weft_check_fact {
  char *key, *value;
} weft_check_fact;

/* One host of the check, as weftrun saw it. */
typedef struct weft_check_host {
  const char *name;
  int answered;              /* its agent started (a hello record came) */
  int complete;              /* its agent reported to the end */
  double start_s;            /* seconds from the engine's start to its hello */
  const char *engine_why;    /* not answered: why, as the engine said it (may be NULL) */
  int planned;               /* ranks the job's plan puts there (-1: unknown) */
  int planned_gpus;          /* of them, ranks that each want a GPU of their own */
  weft_check_fact *facts;    /* in the order they came */
  int nfacts;
} weft_check_host;

typedef struct weft_check_input {
  const weft_check_host *hosts;
  int nhosts;
  const char *engine;        /* "mpirun" */
  const char *version;       /* weftrun's own weft version */
  const char *ifname;        /* the job's interface; "" or NULL for one host here */
  int master;                /* index of the master host (MASTER_ADDR), -1 for none */
  int master_port;
  const char *plan_why;      /* the job's plan cannot be made: why (a FAIL), else NULL */
} weft_check_input;

typedef struct weft_check_cell {
  weft_check_status status;
  char value[40];
} weft_check_cell;

typedef struct weft_check_problem {
  weft_check_status status;  /* WARN or FAIL */
  int col;                   /* the column it belongs to */
  int host;                  /* the host it is about, -1 for the job */
  char text[600];            /* one line: what is wrong, where, what to change */
} weft_check_problem;

typedef struct weft_check_result {
  int nhosts;
  weft_check_cell *cells;    /* nhosts x WEFT_CHECK_NCOLS, row by row */
  weft_check_problem *problems;
  int nproblems;
  weft_check_status worst;   /* OK, WARN or FAIL */
} weft_check_result;

/** \brief The first value of \p key in \p h's facts, or NULL. */
const char *weft_check_fact_get(const weft_check_host *h, const char *key);

/** \brief Evaluate \p in (pure): cells and problems into \p out, problems FAILs first,
 * then in host order. \return 0 or WEFT_ENOMEM (nothing to free then). */
int weft_check_evaluate(const weft_check_input *in, weft_check_result *out);
void weft_check_result_free(weft_check_result *r);

/** \brief The cell of \p host and \p col. */
const weft_check_cell *weft_check_cell_at(const weft_check_result *r, int host, int col);

#endif /* WEFT_TOOL_CHECK_H */
