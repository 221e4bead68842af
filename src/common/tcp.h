/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TCP as the tools use it: every socket non-blocking and closed on exec,
 * every wait bounded by a deadline (weftx_monotonic()), every address
 * numeric (weftx_netaddr; nothing here resolves a name). A listener
 * (weftrun's control channel, weft-rank --check's rendezvous and pair
 * tests), a connect from a given address, an accept, and room for many
 * descriptors. The control channel's framing is ctl-io.h.
 */
#ifndef WT_TCP_H
#define WT_TCP_H

#include <weftx.h>

/** \brief Listen on \p addr (NULL: every IPv4 address) and \p port (0: any), with
 * SO_REUSEADDR and a backlog of \p backlog. \return the socket, its port in \p got;
 * or -1 with errno. */
int wt_tcp_listen(const weftx_netaddr *addr, int port, int backlog, int *got);

/** \brief One waiting connection accepted. \return its socket, or -1 with errno
 * (EAGAIN: none is waiting). */
int wt_tcp_accept(int lfd);

/** \brief A connect to \p to, \p port started, from \p from when it is given and of
 * the same family. \return the socket, \p done 1 when it is connected already; -1
 * with errno when the connect failed, -2 with errno when binding to \p from did. */
int wt_tcp_dial_start(const weftx_netaddr *to, int port, const weftx_netaddr *from, int *done);

/** \brief A started connect: 1 made, 0 not yet, -1 failed (errno). */
int wt_tcp_dial_state(int fd);

/** \brief wt_tcp_dial_start(), then its wait until \p deadline. \return the connected
 * socket; or -1 (-2: the bind) with errno, ETIMEDOUT at the deadline. */
int wt_tcp_dial(const weftx_netaddr *to, int port, const weftx_netaddr *from, double deadline);

/** \brief The soft limit of open files raised to \p need where the hard one allows:
 * one descriptor per peer, and thousands of peers. */
void wt_tcp_room(long need);

#endif /* WT_TCP_H */
