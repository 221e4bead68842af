/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Version queries: which libweft runs, and whether it is the one a program was built for.
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
 * that names both versions and suggests LD_LIBRARY_PATH. Programs call the macro
 * weft_check_version(stderr, argv[0]) first thing, never this function: the
 * macro passes the WEFT_API_VERSION of the headers the program was compiled
 * with, which only the caller's compilation knows. The function is exported
 * (the macro expands to a call of it in the program) and keeps the weft__
 * prefix to say "not to be called by name", as the public API's one exception. */
WEFT_EXPORT int weft__check_api(unsigned compiled_api, FILE *err, const char *prog);
#define weft_check_version(err, prog) weft__check_api(WEFT_API_VERSION, (err), (prog))

WEFT_END_DECLS

#endif /* WEFT_CORE_H */
