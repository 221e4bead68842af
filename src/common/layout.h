/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which host a rank of the job lands on, shared by weftrun (which plans it
 * and asks mpirun for it) and weft-rank (which finds its own host index, the
 * torchrun NODE_RANK, from the same counts).
 */
#ifndef WEFT_TOOL_LAYOUT_H
#define WEFT_TOOL_LAYOUT_H

/** \brief Host of \p rank when host h takes counts[h] ranks, numbered host by
 * host (by_node 0, Open MPI's --map-by slot) or round-robin over the hosts that
 * still have room (by_node 1, --map-by node).
 * \param local set to the rank's index among its host's ranks.
 * \return the host index, or -1 when rank is outside the job. */
int weft_layout_host(const int *counts, int nhosts, int by_node, int rank, int *local);

/** \brief Parse "4,4,2" into counts (at most max). \return how many, or -1. */
int weft_layout_parse(const char *s, int *counts, int max);

#endif /* WEFT_TOOL_LAYOUT_H */
