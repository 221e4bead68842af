/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Diagnostic logging, off by default.
 *
 * WEFT_VERBOSE switches it on per subsystem: a comma-separated list of
 * subsystem names ("topo,map"), "all" (or "1"), and "-name" to leave one out
 * ("all,-rt"). Messages go to stderr as "weft[host:pid] topo: ...".
 * The variable is read once, at the first call.
 */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include <weft/common.h>

typedef enum weft_subsys {
  WEFT_LOG_CORE = 0,
  WEFT_LOG_TOPO,
  WEFT_LOG_MAP,
  WEFT_LOG_HOSTS,
  WEFT_LOG_ENV,
  WEFT_LOG_GCP,
  WEFT_LOG_RT,
  WEFT_LOG_RUN, /* weftrun and weft-rank */
  WEFT_LOG_BENCH,
  WEFT_LOG_NSUBSYS
} weft_subsys;

WEFT_BEGIN_DECLS

/** \brief 1 when WEFT_VERBOSE enables \p s, 0 otherwise. */
WEFT_EXPORT int weft_log_enabled(weft_subsys s);

/** \brief Print one diagnostic line for \p s when it is enabled. */
WEFT_EXPORT void weft_log(weft_subsys s, const char *fmt, ...) WEFT_PRINTF(2, 3);

/** \brief Name of a subsystem as WEFT_VERBOSE spells it ("topo"). */
WEFT_EXPORT const char *weft_subsys_name(weft_subsys s);

WEFT_END_DECLS

#endif /* WEFT_LOG_H */
