/* SPDX-License-Identifier: BSD-3-Clause */
/* Placeholder until this part of libweft is written; keeps the convenience library non-empty. */
int weft__placeholder_gcp(void);
int weft__placeholder_gcp(void) { return 0; }
