/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal helpers shared by the files of libweft. Never installed; tools
 * must not include it. Cross-file internal names use the weft__ prefix.
 * It brings only weft's utilities (weftx/util.h): each area includes the
 * parts of the internal tier it uses, so that lib/rt, which calls no hwloc
 * function, never sees hwloc's headers.
 */
#ifndef WEFT_PRIVATE_H
#define WEFT_PRIVATE_H

#include "config.h"

#include <weft.h>
#include <weftx/util.h>

#define WEFT__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Log through the subsystem's switch; the arguments are not evaluated when it is off. */
#define WEFT__LOG(sub, ...)                                                                        \
  do {                                                                                             \
    if (weft_log_enabled(WEFT_LOG_##sub))                                                          \
      weft_log(WEFT_LOG_##sub, __VA_ARGS__);                                                       \
  } while (0)

/* snprintf into a fixed buffer; returns 0, or WEFT_ERANGE when it did not fit. */
int weft__snprintf(char *buf, size_t size, const char *fmt, ...) WEFT_PRINTF(3, 4);

#endif /* WEFT_PRIVATE_H */
