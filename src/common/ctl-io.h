/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel's sockets (both ends): a connection with an input
 * buffer of one frame and a bounded outbox, read and written without
 * blocking; an agent's connect with a deadline. The wire format is ctl.h.
 */
#ifndef WT_CTL_IO_H
#define WT_CTL_IO_H

#include "ctl.h"

#define WT_CTL_FRAME_MAX (WT_CTL_HEADER + WT_CTL_MAX_PAYLOAD)

/* Buffers grow to what the frames need (a heartbeat is ~150 bytes), so that
 * thousands of connections cost little. */
typedef struct wt_ctl_conn {
  int fd;
  unsigned char *in;
  size_t in_len, in_cap;
  unsigned char *out;
  size_t out_len, out_max; /* out_max: the outbox's bound */
  unsigned long frames;    /* frames read so far */
  int err;                 /* the errno that ended reading (0: closed, or none) */
} wt_ctl_conn;

/* A whole message read; non-zero when the connection must not be read on. */
typedef int (*wt_ctl_on_msg)(void *arg, const wt_ctl_msg *m);

/* \p out_max: most bytes waiting to be sent (at least one frame). */
void wt_ctl_conn_init(wt_ctl_conn *c, int fd, size_t out_max);
void wt_ctl_conn_close(wt_ctl_conn *c);
/** \brief The whole frames already read, then what the (non-blocking) socket has,
 * each to \p fn (a frame is consumed whatever \p fn returns).
 * \return 0 (wait for more), 1 when \p fn asked to stop (call again for the rest),
 * -1 on EOF, an error, a bad frame or no memory (\p why says which). */
int wt_ctl_conn_read(wt_ctl_conn *c, wt_ctl_on_msg fn, void *arg, char *why, size_t whylen);
/** \brief Add a message to the outbox; -1 when it is full (the peer reads nothing)
 * or memory is short. */
int wt_ctl_conn_queue(wt_ctl_conn *c, const wt_ctl_out *m);
/** \brief Write what the socket takes now; -1 on an error. */
int wt_ctl_conn_flush(wt_ctl_conn *c);
/** \brief Write the whole outbox, waiting until \p deadline (weftx_monotonic()); -1 if not. */
int wt_ctl_conn_drain(wt_ctl_conn *c, double deadline);
/** \brief "ADDR:PORT" or "[V6]:PORT" into its parts; -1 when it is neither. */
int wt_ctl_split_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);
/** \brief TCP keepalive on \p fd: a probe a second while the peer is quiet, the
 * connection failing with ETIMEDOUT (wt_ctl_conn's err) once its machine has
 * acknowledged nothing for WT_CTL_UNANSWERED_S. A starved or stopped process
 * does not count: its kernel answers. 0, or -1 with errno. */
int wt_ctl_keepalive(int fd);
/** \brief Connect to \p addr (numeric) by \p deadline; a non-blocking socket, or
 * -1 with the reason (strerror) in \p why. */
int wt_ctl_connect(const char *addr, double deadline, char *why, size_t whylen);

#endif /* WT_CTL_IO_H */
