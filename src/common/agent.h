/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The contract between weftrun and its per-rank agent, weft-rank, in one place:
 *
 *  - the agent's options: one table, from which weftrun WRITES the agent's
 *    arguments and weft-rank PARSES them (wt_agent_args);
 *  - the control channel (ctl.h: its wire format; ctl-io.h: its sockets):
 *    every agent connects to weftrun's --control address and proves the job's
 *    secret (an HMAC of weftrun's challenge) before it starts its rank, and weftrun learns what happens to
 *    each rank from it alone;
 *  - the failure line an agent prints when its rank fails, for the user to
 *    read (weftrun never parses output);
 *  - the line "weft-rank --probe" adds after a Google Cloud host's XML;
 *  - the records "weft-rank --check" prints for weftrun --check (one key per
 *    fact), their one parser (plain output until the control channel carries
 *    them), and the pair rule by which the agents test their connections;
 *  - weftrun's exit status: one table (code, name, sentence) from which the
 *    WT_EXIT_* constants (weftrun's WR_EXIT_* too), the exit-status lines
 *    of --help, "--help exit-status" and the man page's EXIT STATUS come.
 *
 * The agent's arguments do not grow with the number of hosts: the ranks per
 * host go run-length coded (--layout "8x1999,4", layout.h), host names are
 * not sent (weftrun knows where each rank runs from its plan and names the
 * host itself), --topology FILE is one argument and --topology I=FILE one per
 * --topology HOST=FILE the user gave (at most WT_AGENT_MAX_TOPOLOGY), and
 * the GPUs each host's ranks may have (a Slurm job's) go run-length coded too
 * (--gpus "3-4*2000").
 */
#ifndef WT_AGENT_H
#define WT_AGENT_H

#include <stddef.h>
#include <stdio.h>

#include <weft/common.h>

#include "ctl.h"
#include "opt.h"

#define WT_AGENT_MAX_HOSTS 16384  /* hosts of a job (weftrun refuses more) */
#define WT_AGENT_MAX_TOPOLOGY 256 /* --topology I=FILE options */
#define WT_AGENT_ARG_MAX 131072   /* longest word the kernel passes (MAX_ARG_STRLEN) */

/* ---- Exit status ---------------------------------------------------------- */

/* X(NAME, code, label, brief, sentence, example): brief is --help's word, sentence
 * the contract (--help exit-status and the man page), example a line shown as it
 * is (or NULL). Rows with a negative code stand for a range ("N", "128+N"). */
#define WT_EXIT_TABLE(X)                                                                           \
  X(OK, 0, "0", "all ranks exited 0", "Every rank exited 0.", NULL)                                \
  X(RANK, -1, "N", "the failed rank's code (128+N: signal N)",                                     \
    "A rank failed: weftrun exits with the failed rank's own exit status (the first one its "      \
    "agent reported when several fail), 128+N when it was killed by signal N (137 for "            \
    "SIGKILL, 139 for SIGSEGV); a rank that exited 0 without finalizing while the others ran: "    \
    "mpirun's status (1). The job is ended on every host, and one line on stderr names the "       \
    "rank, its host, its GPU and what happened (what the agent reported over the control "         \
    "channel; nothing a program prints counts), in place of mpirun's own account of the end "      \
    "(weftrun -v shows it); the ranks that failed after it follow, each as its consequence or "    \
    "as the same fault met again:",                                                                \
    "weftrun: job failed: rank 3 host vm-b gpu 2 (0000:0a:00.0): exited with status 3 (exit 3)")   \
  X(USAGE, 2, "2", "bad option",                                                                   \
    "A bad option or option value; nothing was started, and the message names the closest "        \
    "known option.",                                                                               \
    NULL)                                                                                          \
  X(HOSTS, 65, "65", "bad hosts",                                                                  \
    "A bad hostfile (the message gives FILE:LINE), -H list or Slurm node list.", NULL)             \
  X(NOINPUT, 66, "66", "unreadable file",                                                          \
    "A file named on the command line (hostfile, topology) cannot be read.", NULL)                 \
  X(PLACE, 67, "67", "placement does not fit",                                                     \
    "The placement asked for does not fit: more ranks than slots without --oversubscribe, "        \
    "-N larger than a host's slots, or a mapping the topology cannot meet.",                       \
    NULL)                                                                                          \
  X(NOHOST, 68, "68", "unknown host",                                                              \
    "A host is unknown: named in --topology HOST=FILE but not in the job, or it does not "         \
    "resolve.",                                                                                    \
    NULL)                                                                                          \
  X(NOGPU, 69, "69", "no GPU", "GPUs were asked for (--map-by gpu) on a host without any.", NULL)  \
  X(ENGINE, 70, "70", "launch failed",                                                             \
    "The job could not be launched or mpirun failed: mpirun or weft-rank not found, the "          \
    "hosts could not be probed, mpirun failed or was killed before any rank reported a "           \
    "failure (its own message is shown; the ranks still running are named; when no rank had "      \
    "started and a host cannot be reached, 75 or 68 instead), or it exited 0 "                     \
    "without running every rank. weft-rank exits 70 when it cannot set its rank up or reach "      \
    "weftrun's control channel.",                                                                  \
    NULL)                                                                                          \
  X(HOSTLOST, 75, "75", "host lost",                                                               \
    "A host was lost while the job ran: its agents' connections closed without a word, or "        \
    "its machine acknowledged nothing for 5 s (it went down or its network was cut), or none "     \
    "of its agents said anything for --host-timeout seconds (default 30: stopped or starved "      \
    "agents); or a single agent was killed or stopped answering; or a rank's program was "         \
    "stopped (SIGSTOP, Ctrl-Z: its agent sees state T) for longer than --host-timeout, which "     \
    "the summary says (stopped, not slow); or, before any rank "                                   \
    "started, mpirun could not reach a host (found as --check finds it, and named). The summary "  \
    "line names the host and its ranks; the job is ended on every host, the lost one "             \
    "included (its agents end their ranks when they lose weftrun).",                               \
    NULL)                                                                                          \
  X(PREEMPTED, 79, "79", "preempted (Google Cloud)",                                               \
    "The job was preempted: on a Google Cloud VM the metadata server announced a preemption "      \
    "(instance/preempted TRUE) or a maintenance that stops the VM "                                \
    "(TERMINATE_ON_HOST_MAINTENANCE). The ranks there got SIGTERM, then SIGKILL after the "        \
    "grace period (--preempt-grace, 5 seconds by default; a Spot VM powers off 30 seconds "        \
    "after the notice, so a longer grace is cut short and draws a warning); the job was ended "    \
    "on every host. A wrapper may requeue it.",                                                    \
    NULL)                                                                                          \
  X(CHECKWARN, 80, "80", "--check: warnings",                                                      \
    "--check found warnings and no failure: the job can start, but something on a host is "        \
    "not as it should be (each warning has its line; weftrun(1) CHECKS).",                         \
    NULL)                                                                                          \
  X(CHECKFAIL, 81, "81", "--check: failures",                                                      \
    "--check found at least one failure: a host the job cannot run on as planned (each "           \
    "problem has its line; weftrun(1) CHECKS).",                                                   \
    NULL)                                                                                          \
  X(TIMEOUT, 124, "124", "timeout",                                                                \
    "A deadline expired: --timeout, or in a rank libweft's WEFT_INIT_TIMEOUT (weft_init "          \
    "waits 300 s for every rank by default) or its collective watchdog (600 s in one call); "      \
    "the job was ended on every host. The summary names the ranks still running, or those "        \
    "that never joined the call, with their hosts and their current weft calls.",                  \
    NULL)                                                                                          \
  X(SIGNAL, -2, "128+N", "weftrun got signal N",                                                   \
    "weftrun itself got signal N (130 for SIGINT, 143 for SIGTERM), forwarded it to mpirun "       \
    "and told every agent to end its rank (SIGTERM, SIGKILL 2 seconds later). What has not "       \
    "ended a few seconds later is killed. After a SIGKILL of weftrun the agents lose it and "      \
    "end their ranks, and mpirun gets SIGTERM.",                                                   \
    NULL)

/* WT_EXIT_OK, WT_EXIT_USAGE, ... WT_EXIT_PREEMPTED (79), WT_EXIT_TIMEOUT (124);
 * WT_EXIT_RANK and WT_EXIT_SIGNAL are negative: ranges, not codes. */
#define WT_EXIT_ENUM(name, code, ...) WT_EXIT_##name = (code),
enum wt_exit { WT_EXIT_TABLE(WT_EXIT_ENUM) };
#undef WT_EXIT_ENUM

typedef struct wt_exit_row {
  int code; /* negative for a range: see label */
  const char *name, *label, *brief, *sentence, *example;
} wt_exit_row;

/* The table's rows in order, ending with a row whose name is NULL. */
extern const wt_exit_row wt_exit_rows[];

/** \brief --help's exit-status paragraph (ends with "See weftrun(1)."). */
void wt_exit_help(FILE *out);
/** \brief "weftrun --help exit-status": one row per code, wrapped. */
void wt_exit_topic(FILE *out);
/** \brief The man page's EXIT STATUS entries (roff .TP paragraphs, without .SH). */
void wt_exit_man(FILE *out);

/* ---- The agent's arguments ----------------------------------------------- */

typedef struct wt_agent_args {
  const char *layout; /* ranks per host in weftrun's order, run-length coded; for
                                  several programs (MPMD) one such list per program, ';'
                                  between them */
  int by_node;        /* ranks numbered round-robin over the hosts (--rank-by node) */
  const char *ompi;   /* the ranks are Open MPI's layout, by this policy
                                  (weftx_ompi_policy_format()): mpirun bound them, or (srun)
                                  each agent binds its own so; NULL: weft's GPU rule */
  const char *slots;  /* with ompi: every host's slots, as the layout, for the
                                  prediction of this host's bindings */
  const char *map_by, *bind_to;
  int oversubscribe, report_bindings;
  const char *gpu_visibility, *nccl_preset;
  const char *master_addr; /* MASTER_ADDR; NULL: not set */
  long master_port;        /* 0: not set */
  const char *ifname;      /* NCCL_SOCKET_IFNAME and the job's interface */
  const char *topology;    /* hwloc XML of every host without one of its own */
  const char *host_topology[WT_AGENT_MAX_TOPOLOGY]; /* "I=FILE", I a host index of the layout */
  int nhost_topology;
  const char *host_xml;             /* weftrun's own host as XML, for the ranks on that host */
  const char *gpus;                 /* the GPUs each host's ranks may have (layout.h's sets) */
  const char *output_filename;      /* the rank's output into DIR/1/rank.R/{stdout,stderr} */
  int lines;                        /* the rank's output in whole lines, as records on the
                                  agent's stderr (WT_LINE_MARK) */
  int tag_output, timestamp_output; /* each line tagged, stamped as mpirun's options would */
  long preempt_grace;               /* -1: the agent's default */
  const char *control;              /* weftrun's control channel, ADDR:PORT (ctl.h); NULL: none */
  long monitor_ms;                  /* a SAMPLE (sample.h) every this many ms; 0: none */
  const char *monitor_prom;         /* and a Prometheus file of it in this directory */
  const char *job;                  /* the job's name for its labels */
  int probe;                        /* print this host's topology and exit */
  const char *check;    /* "full" or "reach": weftrun --check's agent (records, no rank) */
  const char *check_id; /* the check job's nonce: its agents know each other by it */
  long check_deadline;  /* seconds the agent has for everything; 0: its default */
  int help;
} wt_agent_args;

/* The agent's option table (weft-rank --help prints it). */
extern const wt_opt wt_agent_options[];

void wt_agent_args_init(wt_agent_args *a);

/** \brief Write \p a as the agent's arguments, one word per call of \p add (the
 * table's spellings; nothing for what is unset), without the "--" and the program.
 * \return 0, or the first non-zero \p add returned. */
int wt_agent_args_write(const wt_agent_args *a, int (*add)(void *ud, const char *word), void *ud);

/** \brief Parse the agent's argv; \p first: index of the program (after "--").
 * \return 0, or -1 with a one-line reason in \p why. */
int wt_agent_args_parse(wt_agent_args *a, int argc, char **argv, int *first, char *why,
                        size_t whylen);

/** \brief The file of host \p index: its "I=FILE", else a->topology, else NULL. */
const char *wt_agent_topology_for(const wt_agent_args *a, int index);

/* ---- The failure line (display only) -------------------------------------- */

/* Who a failure line names. */
typedef struct wt_agent_who {
  int rank; /* -1: not known yet */
  char host[256];
  char gpu[64]; /* "2 (0000:0a:00.0)" or "none" */
} wt_agent_who;

/** \brief Print the line a failed rank's agent shows the user (weftrun attributes
 * failures from the control channel, never from this line):
 * "weft-rank: rank R host H gpu G: [WHY; ]exited with status CODE" when \p sig is 0,
 * "weft-rank: rank R host H gpu G: [WHY; ]killed by signal SIG (NAME)" otherwise.
 * \p why may be NULL. */
void wt_agent_fail_print(FILE *out, const wt_agent_who *who, const char *why, int code, int sig);

/* ---- This machine's topology for mpirun ---------------------------------- */

/* When every rank is on weftrun's host, mpirun's environment names weftrun's XML of
 * it (--host-xml) through hwloc's own variables, so that Open MPI and its PMIx
 * server load it instead of probing the machine again. weft-rank finds
 * WT_HWLOC_XMLFILE equal to its --host-xml and removes both before anything else. */
#define WT_HWLOC_XMLFILE "HWLOC_XMLFILE"
#define WT_HWLOC_THISSYSTEM "HWLOC_THISSYSTEM"

/* ---- The rank's output in whole lines (--lines) --------------------------- */

/* Under mpirun each agent hands its program's output on in whole lines, as records
 * on its stderr (weft-rank/output.c), which weftrun reads from mpirun's stderr and
 * writes out (weftrun/engine/lines.c): WT_LINE_MARK, then 'O' for a line of stdout,
 * 'E' of stderr ('o', 'e': a piece without its end of line, written without the '\n'
 * that ends the record), the line, '\n'. A line longer than a record's room is cut,
 * each piece ending in WT_LINE_CUT. What does not start with the mark (mpirun's own
 * words, an agent's before its rank starts) is passed on as it is. */
#define WT_LINE_MARK '\036'
#define WT_LINE_CUT "[weft: cut]"

/* ---- The probe ------------------------------------------------------------ */

/* "weft-rank --probe" prints its host's hwloc XML, then on Google Cloud one line
 * "TAG MACHINE_TYPE PHYSICAL_HOST|-". */
#define WT_AGENT_GCE_TAG "#weft-gce"

/** \brief The line after the XML (\p physical_host "" is written "-"). */
void wt_agent_gce_print(FILE *out, const char *machine_type, const char *physical_host);

/** \brief Split a probed host's output (\p buf NUL-terminated at \p len): the XML's
 * length is returned; when the GCE line is there, \p mt and \p ph get its fields
 * ("" for "-"), else they are left alone. */
size_t wt_agent_gce_parse(const char *buf, size_t len, char *mt, size_t mtlen, char *ph,
                          size_t phlen);

/* ---- The check's records ------------------------------------------------- */

/* "weft-rank --check" prints what it finds as records, one line each:
 * "#weft-check H KEY VALUE", H the host's index in the check job's layout, KEY a
 * word (below), VALUE the rest of the line (may be empty). weftrun evaluates them
 * (src/weftrun/check/); weft-rank gathers them (src/weft-rank/check/). */
#define WT_AGENT_CHECK_TAG "#weft-check"

/* The record keys, one per fact (repeated keys are marked): */
#define WT_CK_HELLO "hello"       /* PID: the agent started (the engine reached the host) */
#define WT_CK_END "end"           /* the agent reported everything */
#define WT_CK_TIMEOUT "timeout"   /* COLUMN SECONDS: a check that did not finish (repeated) */
#define WT_CK_VER_WEFT "ver.weft" /* versions: a version, or "absent" */
#define WT_CK_VER_OMPI "ver.ompi"
#define WT_CK_VER_HWLOC "ver.hwloc"
#define WT_CK_VER_NCCL "ver.nccl"
#define WT_CK_VER_CUDART "ver.cudart" /* the CUDA runtime the loader finds */
#define WT_CK_VER_CUDA "ver.cuda"     /* the CUDA version of the driver library (libcuda) */
#define WT_CK_VER_DRIVER "ver.driver" /* the kernel driver, as NVML says */
/* program: "elf CLASS MACHINE PATH", "script INTERPRETER PATH", "missing NAME",
 * "noexec PATH", "nointerp INTERPRETER PATH", "noscript FILE INTERPRETER" */
#define WT_CK_PROGRAM "program"
/* mpi: "KIND LIB", the MPI the program was built with (weftx_mpi_of_command): KIND is
 * openmpi, mpich, mpich-family, intel or none (unknown: no fact); LIB the library that
 * says it, "-" for none */
#define WT_CK_MPI "mpi"
#define WT_CK_GPU_PCI "gpu.pci"   /* NVIDIA GPUs on the PCI bus (hwloc, or WEFT_TOPOLOGY) */
#define WT_CK_GPU_NVML "gpu.nvml" /* GPUs NVML counts, or "absent WHY" */
#define WT_CK_GPU_MODEL "gpu.model"
#define WT_CK_GPU_MEM "gpu.mem"         /* bytes of the smallest GPU */
#define WT_CK_GPU_ECC "gpu.ecc"         /* IDX COUNT: uncorrected ECC errors (repeated) */
#define WT_CK_GPU_RETIRED "gpu.retired" /* IDX: retired pages wait for a reset (repeated) */
#define WT_CK_GPU_PERSIST "gpu.persist" /* GPUs with persistence mode off */
#define WT_CK_GPU_BUSY "gpu.busy"       /* IDX PID NAME: a process on a GPU (repeated) */
#define WT_CK_NET_IF "net.if"           /* "NAME ADDR/PREFIX" or "missing NAME" */
#define WT_CK_NET_MTU "net.mtu"
#define WT_CK_NET_GVNIC "net.gvnic" /* yes, no */
#define WT_CK_NET_ROUTE "net.route" /* the interface this host reaches the master through */
#define WT_CK_NET_RDMA "net.rdma"   /* RDMA devices (InfiniBand, RoCE, gIB) in the topology */
#define WT_CK_GCE "gce"             /* MACHINE_TYPE PHYSICAL_HOST|- on a Google Cloud VM */
#define WT_CK_GCE_WARN "gce.warn"   /* a Google Cloud check's warning (repeated) */
#define WT_CK_MASTER "master"       /* "ok MS" (connected to the master), "fail WHY" */
#define WT_CK_PORT "port"           /* the master only: "PORT free", "PORT taken [PID NAME]" */
#define WT_CK_CLOCK "clock"         /* OFFSET ERROR: seconds ahead of the master's clock */
#define WT_CK_PAIR "pair"           /* "J ok MS", "J fail WHY", "J skip WHY" (repeated) */
#define WT_CK_MEM_TOTAL "mem.total" /* bytes */
#define WT_CK_MEM_AVAIL "mem.avail" /* bytes */
#define WT_CK_SHM "shm"             /* "SIZE FREE" bytes of /dev/shm, or "absent" */
#define WT_CK_MEMLOCK "memlock"     /* bytes, or "unlimited" */

/* The pair rule (check-pairs.c): which hosts test a TCP connection to which, evaluated
 * by every agent for itself (weftrun(1) CHECKS says the numbers). */
#define WT_CHECK_ALL_PAIRS 32   /* up to this many hosts every host tests every other */
#define WT_CHECK_MAX_TARGETS 40 /* most hosts one host tests */

/** \brief The hosts host \p me of \p n opens a TCP connection to (the pair rule): every
 * other host when n <= WT_CHECK_ALL_PAIRS; else its ring neighbours (me-1, me+1),
 * the master (0), the hosts n/4, n/2 and 3n/4 ahead, and one more picked by a hash of
 * \p me: at most 7. Every pair is thus tested both ways up to WT_CHECK_ALL_PAIRS
 * hosts, and above it every host at least 4 times each way. \p out gets them in
 * increasing order. \return how many (at most \p max). */
int wt_check_targets(int me, int n, int *out, int max);

/** \brief Print one record; newlines in the value become spaces. One write(2)
 * per record when \p out is line-buffered. */
void wt_agent_check_print(FILE *out, int host, const char *key, const char *fmt, ...)
  WEFT_PRINTF(4, 5);

/** \brief Is \p line (a prefix allowed, as the failure line's) a record? 1 with
 * \p host, \p key (a word of at most \p keylen - 1 bytes) and \p value (pointing
 * into \p line, its length in \p vlen, without the line end) filled, else 0. */
int wt_agent_check_parse(const char *line, int *host, char *key, size_t keylen, const char **value,
                         size_t *vlen);

#endif /* WT_AGENT_H */
