/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON string output, shared by the plan JSON and weft-bench's reports. */
#include "weft_private.h"

#include <stdio.h>

void weftx_json_string(FILE *out, const char *s)
{
  const unsigned char *c = (const unsigned char *)(s ? s : "");

  fputc('"', out);
  for (; *c; c++) {
    switch (*c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    default:
      if (*c < 0x20 || *c == 0x7f)
        fprintf(out, "\\u%04x", *c);
      else
        fputc(*c, out);
    }
  }
  fputc('"', out);
}
