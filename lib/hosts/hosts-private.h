/* SPDX-License-Identifier: BSD-3-Clause */
/* What the files of lib/hosts share and nobody else needs. */
#ifndef WEFT_HOSTS_PRIVATE_H
#define WEFT_HOSTS_PRIVATE_H

#include "weft_private.h"

#include <weftx/hosts.h>

/* Record where the list came from (the parsers call it once they succeed). */
void weft__hostlist_set_origin(weftx_hostlist *hl, weftx_hosts_origin o);

/* Keep full host names (Open MPI's orte_keep_fqdn_hostnames) when adding to \p hl. */
int weft__hostlist_fqdn(const weftx_hostlist *hl);
void weft__hostlist_set_fqdn(weftx_hostlist *hl, int keep);

/* Write "NAME 'VALUE': message" into \p why (unless NULL; VALUE cut at 200
 * characters), as the Slurm parsers word their errors; returns WEFT_EPARSE. */
int weft__hosts_value_error(const char *name, const char *value, char *why, size_t whylen,
                            const char *fmt, ...) WEFT_PRINTF(5, 6);

#endif /* WEFT_HOSTS_PRIVATE_H */
