/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Child processes, written once for every tool: find an executable, and run
 * a command in its own process group with its output read, a deadline on
 * weftx_monotonic() (util.h), then a stop signal, a grace period and SIGKILL of the whole
 * group. weftrun runs mpirun and its host probe with it; a preset's profile
 * script (output capped) and weft-bench's per-node-count jobs (output kept in
 * a file, rows parsed as they come) are the same shape.
 * Internal tier: not installed, no ABI promise (see weftx.h).
 */
#ifndef WEFTX_PROC_H
#define WEFTX_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include <weft/common.h>

/* Exit status of a command that ran past its deadline (as timeout(1) says it). */
#define WEFTX_PROC_TIMEOUT 124
/* Exit status of a command that could not be started (as a shell says it). */
#define WEFTX_PROC_NOEXEC 127

/* Where one of the child's standard streams goes. */
typedef enum weftx_proc_io {
  WEFTX_PROC_INHERIT = 0, /* the caller's own stream */
  WEFTX_PROC_NULL,        /* /dev/null */
  WEFTX_PROC_PIPE,        /* read by weftx_proc_run(): to on_output, or kept in the result */
  WEFTX_PROC_FD,          /* the descriptor in out_fd / err_fd (a file the caller opened) */
} weftx_proc_io;

/* What weftx_proc_run() does on its own, for the caller to say so (on_event). */
typedef enum weftx_proc_event {
  WEFTX_PROC_EV_DEADLINE = 1, /* the deadline passed: stop_signal sent */
  WEFTX_PROC_EV_STOP, /* a stop request came on stop_fd (value: its byte, a signal number) */
  WEFTX_PROC_EV_KILL, /* grace over or a second stop request: SIGKILL to the group */
  WEFTX_PROC_EV_CAP,  /* kept output reached max_output: SIGKILL to the group */
  WEFTX_PROC_EV_EXIT, /* the child exited (value: its exit status, or -N when killed by
                               * signal N) */
} weftx_proc_event;

/* Output of a PIPE stream: whole lines (the last one ends in '\n') except when a
 * line is longer than 64 KiB or the stream ends without one, or with raw set (as
 * read). \p stream is 1 or 2. */
typedef void (*weftx_proc_output_fn)(void *arg, int stream, const char *data, size_t len);
typedef void (*weftx_proc_event_fn)(void *arg, weftx_proc_event ev, int value);
/* The caller's own work in the same loop (watch_fd readable, or the time it asked
 * for has come; once at the start): \p exited says whether the child has exited.
 * It returns the latest time (weftx_monotonic()) it wants to be called again, 0 for
 * none; after the child exited, 0 also means "done" (the loop then ends once the
 * output is read). Setting *stop to a signal number stops the child as a stop
 * request does (that signal, the grace period, SIGKILL of the group); -1 kills
 * its group at once. */
typedef double (*weftx_proc_watch_fn)(void *arg, double now, int exited, int *stop);

typedef struct weftx_proc_spec {
  char *const *argv;      /* argv[0] is looked up on $PATH unless it contains '/' */
  char *const *envp;      /* the child's environment; NULL: this process's */
  weftx_proc_io in;       /* INHERIT or NULL */
  weftx_proc_io out, err; /* any; a PIPE stream without on_output is kept (stdout only) */
  int out_fd, err_fd;     /* with WEFTX_PROC_FD */
  double timeout;         /* seconds from the start; 0: no deadline */
  int stop_signal;        /* at the deadline or on a stop request; 0: SIGTERM (SIGINT
                               * requests are passed on as SIGINT) */
  int stop_group;         /* 1: stop_signal to the whole group; 0: to the child alone
                               * (mpirun ends its own job) */
  double grace;           /* seconds from stop_signal to SIGKILL of the group */
  double drain;           /* after the child exits (its group is then killed): how long
                               * to keep reading output still in the pipes */
  size_t max_output;      /* most bytes kept of stdout; 0: no limit */
  int stop_fd;            /* -1, or a descriptor the caller makes readable with one byte
                               * per stop request (the signal number, from a self-pipe its
                               * signal handler writes); the bytes are consumed */
  int death_signal;       /* the child gets it when this process dies (PR_SET_PDEATHSIG;
                               * the forking thread's death counts); 0: none */
  int watch_fd;           /* -1, or a descriptor of the caller's (an epoll set) polled in
                               * the same loop; with on_watch */
  double watch_drain;     /* after the child exited: how long on_watch may keep the loop
                               * going (the output's drain counts from the exit too) */
  int raw;                /* 1: on_output gets what each read brings, partial lines
                               * too (the caller joins lines itself) */
  weftx_proc_output_fn on_output;
  weftx_proc_event_fn on_event;
  weftx_proc_watch_fn on_watch;
  void *arg; /* for on_output, on_event and on_watch */
} weftx_proc_spec;

typedef struct weftx_proc_result {
  int status;     /* 0, the exit code N, 128+signal, WEFTX_PROC_TIMEOUT after the
                               * deadline, WEFTX_PROC_NOEXEC when it could not be started */
  int raw_status; /* waitpid()'s status (0 when not started) */
  int timed_out;  /* the deadline passed */
  int stopped;    /* the first stop request's byte (a signal number), 0 when none */
  int capped;     /* kept output reached max_output: the child was killed */
  char *output;   /* kept stdout, NUL-terminated (free()); NULL when not kept */
  size_t len;
  double seconds; /* from start to end */
} weftx_proc_result;

WEFT_BEGIN_DECLS

/** \brief A spec with the defaults: nothing piped, no deadline, SIGTERM to the
 * child, 10 s grace, 3 s drain, no stop_fd, nothing watched. */
void weftx_proc_spec_init(weftx_proc_spec *s);

/** \brief Run \p s->argv in a new process group and wait for it, reading its piped
 * output, until it exits (and, within \p s->drain, its output ends); bounded by the
 * deadline, the stop requests and the grace period as \p s says. Signals the
 * child would inherit as ignored or blocked from this process are reset first.
 * \p r is filled in every case (free r->output).
 * \return 0 when the command ran (r->status says how it ended, 127 when it could not
 * be executed, with the reason in \p why); WEFT_ESYS (pipe, fork) or WEFT_ENOMEM with
 * a reason in \p why, nothing left running. */
int weftx_proc_run(const weftx_proc_spec *s, weftx_proc_result *r, char *why, size_t whylen);

/** \brief Find an executable regular file. Each entry of \p look (NULL-terminated) is
 * tried in order: a path containing '/' as it is, "$ORIGIN/REL" relative to the
 * directory of this program (/proc/self/exe; ld.so's spelling), or a bare name on
 * each directory of $PATH (/usr/bin:/bin when unset). A "$ORIGIN" result is made
 * canonical (realpath), so that another host can run it by the same path.
 * \return \p buf, or NULL when none is found (or none fits in \p len). */
const char *weftx_find_exe(const char *const *look, char *buf, size_t len);
/** \brief This program's path, to start it again (a child job): /proc/self/exe,
 * and in a libtool build tree, where that is DIR/.libs/lt-NAME or DIR/.libs/NAME,
 * the wrapper DIR/NAME that sets the library path up. 0, or -1 when unknown or
 * too long for \p len. */
int weftx_self_exe(char *buf, size_t len);

/** \brief Process \p pid's parent and state letter, from /proc/PID/stat ("pid (comm) S
 * ppid ..."). 0, or -1 when it is gone. */
int weftx_proc_stat(pid_t pid, pid_t *ppid, char *state);
/** \brief Make this process adopt the processes its descendants leave behind when
 * they die (a child subreaper), so that weftx_proc_end_orphans() can end them.
 * 0, or WEFT_ESYS (a kernel without it: nothing is adopted). */
int weftx_proc_adopt(void);
/** \brief End the processes adopted since weftx_proc_adopt() (every child of this
 * process: call it when no child of its own is running): SIGTERM, \p grace seconds
 * for them to end, SIGKILL, all reaped. \return how many there were. */
int weftx_proc_end_orphans(double grace);

WEFT_END_DECLS

#endif /* WEFTX_PROC_H */
