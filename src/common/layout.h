/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which host a rank of the job lands on, shared by weftrun (which plans it
 * and asks mpirun for it) and weft-rank (which finds its own host index, the
 * torchrun NODE_RANK, from the same counts); and the counts' spelling on the
 * agent's command line, run-length coded so that it does not grow with the
 * hosts of a uniform job ("8x2000", "8x1999,4", "9x3,8x5"); and, coded the
 * same way, the GPUs each host's ranks may have.
 */
#ifndef WT_LAYOUT_H
#define WT_LAYOUT_H

#include <stddef.h>

/** \brief Host of \p rank when host h takes counts[h] ranks, numbered host by
 * host (by_node 0, Open MPI's --map-by slot) or round-robin over the hosts that
 * still have room (by_node 1, --map-by node).
 * \param local set to the rank's index among its host's ranks.
 * \return the host index, or -1 when rank is outside the job. */
int wt_layout_host(const int *counts, int nhosts, int by_node, int rank, int *local);

/** \brief The host and local index of every rank 0..np-1 at once, by the rule of
 * wt_layout_host(), in time linear in np and nhosts (a plan of many hosts must
 * not ask wt_layout_host() rank by rank). np is the sum of the counts.
 * \return 0, or -1 when out of memory. */
int wt_layout_assign(const int *counts, int nhosts, int by_node, int np, int *host, int *local);

/** \brief Parse "C[xN],..." (C ranks on each of N hosts, N 1 when left out) into
 * counts, at most \p max hosts. \return how many hosts, or -1 (malformed, a count
 * over 1000000, more than \p max hosts). */
int wt_layout_parse(const char *s, int *counts, int max);

/** \brief The run-length spelling of \p n counts, allocated (free()); NULL when out of memory. */
char *wt_layout_encode(const int *counts, int n);

/* The GPUs the ranks of each host may have (a Slurm job's), in the same order and
 * spelled for the agent the same way: ';' between hosts, "*N" for N hosts in a row
 * with the same set, each set a list of indices ("3-4,6"), "none" or "all" (no limit):
 * "3-4*3", "0-1*2;0", "all;2-3". */

/** \brief The spelling of \p n sets (NULL: all, "": none), allocated (free()); NULL
 * when out of memory. */
char *wt_gpusets_encode(const char *const *sets, int n);

/** \brief Host \p h's set of the spelling \p s into \p buf ("" for none).
 * \return 0 with the list, 1 for all (no limit), -1 when \p s is malformed (a set of
 * other characters than digits, ',' and '-', a bad count), names fewer hosts, or the
 * set does not fit \p len. */
int wt_gpusets_host(const char *s, int h, char *buf, size_t len);

#endif /* WT_LAYOUT_H */
