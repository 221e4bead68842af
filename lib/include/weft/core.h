/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Version queries and the small utilities that tools share with the library.
 */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include <stdio.h>
#include <weft/common.h>
#include <weft/version.h>

WEFT_BEGIN_DECLS

/** \brief WEFT_VERSION_HEX of the library that runs. */
WEFT_EXPORT unsigned weft_version(void);
/** \brief WEFT_VERSION_STRING of the library that runs. */
WEFT_EXPORT const char *weft_version_string(void);
/** \brief WEFT_API_VERSION of the library that runs. */
WEFT_EXPORT unsigned weft_api_version(void);

/** \brief Check that the library that runs has the API a tool was compiled for.
 * \return 0, or WEFT_EVERSION after printing one line to \p err (may be NULL)
 * that names both versions and suggests LD_LIBRARY_PATH. Tools call
 * weft_check_version(stderr, argv[0]) first thing; see the macro below. */
WEFT_EXPORT int weft__check_api(unsigned compiled_api, FILE *err, const char *prog);
#define weft_check_version(err, prog) weft__check_api(WEFT_API_VERSION, (err), (prog))

/** \brief Parse a whole decimal integer in [min, max] (no sign for min >= 0,
 * no trailing junk). \return 0 or WEFT_EPARSE / WEFT_ERANGE. */
WEFT_EXPORT int weft_parse_long(const char *s, long min, long max, long *out);

/** \brief Parse a size with an optional K/M/G suffix (powers of 1024, "B" allowed).
 * \return 0 or WEFT_EPARSE / WEFT_ERANGE. */
WEFT_EXPORT int weft_parse_size(const char *s, size_t *out);

/** \brief Levenshtein distance between two words, for "did you mean" messages;
 * case-insensitive when \p nocase. Only the first 63 bytes of each word count. */
WEFT_EXPORT int weft_edit_distance(const char *a, const char *b, int nocase);

/** \brief Write \p s (NULL: "") to \p out as a JSON string: quoted, with '"', '\\' and
 * control characters escaped. Used by every JSON weft writes. */
WEFT_EXPORT void weft_json_string(FILE *out, const char *s);

/** \brief Directory of weft's data files (topologies, presets, help):
 * $WEFT_DATADIR when set, else the installed $(datadir)/weft. */
WEFT_EXPORT const char *weft_datadir(void);

WEFT_END_DECLS

#endif /* WEFT_CORE_H */
