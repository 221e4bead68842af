/* SPDX-License-Identifier: BSD-3-Clause */
/* Placeholder until this part of libweft is written; keeps the convenience library non-empty. */
int weft__placeholder_hosts(void);
int weft__placeholder_hosts(void) { return 0; }
