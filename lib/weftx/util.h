/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers the tools share with the library: number and size parsing,
 * "did you mean" distances, the one JSON string writer, the data directory,
 * the monotonic clock.
 * Internal tier: not installed, no ABI promise (see weftx.h).
 */
#ifndef WEFTX_UTIL_H
#define WEFTX_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include <weft.h>

WEFT_BEGIN_DECLS

/** \brief Parse a whole decimal integer in [min, max] (no sign for min >= 0,
 * no trailing junk). \return 0 or WEFT_EPARSE / WEFT_ERANGE. */
int weftx_parse_long(const char *s, long min, long max, long *out);

/** \brief Parse a size with an optional K/M/G suffix (powers of 1024, "B" allowed).
 * \return 0 or WEFT_EPARSE / WEFT_ERANGE. */
int weftx_parse_size(const char *s, size_t *out);

/** \brief Levenshtein distance between two words, for "did you mean" messages;
 * case-insensitive when \p nocase. Only the first 63 bytes of each word count. */
int weftx_edit_distance(const char *a, const char *b, int nocase);

/** \brief Write \p s (NULL: "") to \p out as a JSON string: quoted, with '"', '\\' and
 * control characters escaped. Used by every JSON weft writes. */
void weftx_json_string(FILE *out, const char *s);

/** \brief Directory of weft's data files (topologies, presets, help):
 * $WEFT_DATADIR when set, else the installed $(datadir)/weft. */
const char *weftx_datadir(void);

/** \brief Seconds on CLOCK_MONOTONIC: the one clock for deadlines and durations. */
double weftx_monotonic(void);
/** \brief The same clock in nanoseconds (the call page's stamps). */
int64_t weftx_monotonic_ns(void);

/** \brief Element \p i of \p buf, of type \p dt, written from and read as a double
 * (weft-bench's and the tests' data): integers wrap as two's complement, 16-bit
 * floats round to nearest even; an unknown type writes nothing and reads NAN. */
void weftx_dtype_put(void *buf, weft_dtype dt, size_t i, double v);
double weftx_dtype_get(const void *buf, weft_dtype dt, size_t i);

/** \brief Re-read WEFT_VERBOSE (tests; not thread-safe). */
void weftx_log_reset(void);

WEFT_END_DECLS

#endif /* WEFTX_UTIL_H */
