/* SPDX-License-Identifier: BSD-3-Clause */
/* Run-time version queries and the API check that tools make at start. */
#include "weft_private.h"

#include <stdio.h>

unsigned weft_version(void) { return WEFT_VERSION_HEX; }

const char *weft_version_string(void) { return WEFT_VERSION_STRING; }

unsigned weft_api_version(void) { return WEFT_API_VERSION; }

int weft__check_api(unsigned compiled_api, FILE *err, const char *prog)
{
  if (compiled_api == WEFT_API_VERSION)
    return 0;
  if (err)
    fprintf(err,
            "%s: compiled for libweft API %u but running on libweft %s (API %u); "
            "point LD_LIBRARY_PATH at the libweft it was built with\n",
            prog ? prog : "weft", compiled_api, WEFT_VERSION_STRING, WEFT_API_VERSION);
  return WEFT_EVERSION;
}
