/* SPDX-License-Identifier: BSD-3-Clause */
/* Error code to text, from the one table in <weft/errors.h>. */
#include "weft_private.h"

const char *weft_strerror(int err)
{
  if (err == 0)
    return "success";
  switch (err) {
#define WEFT__XX(name, value, msg)                                                                 \
  case WEFT_E##name: return msg;
    WEFT_ERRNO_MAP(WEFT__XX)
#undef WEFT__XX
  default: return "unknown error";
  }
}

const char *weft_err_name(int err)
{
  if (err == 0)
    return "WEFT_OK";
  switch (err) {
#define WEFT__XX(name, value, msg)                                                                 \
  case WEFT_E##name: return "WEFT_E" #name;
    WEFT_ERRNO_MAP(WEFT__XX)
#undef WEFT__XX
  default: return "WEFT_EUNKNOWN";
  }
}
