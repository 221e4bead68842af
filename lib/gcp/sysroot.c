/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The machine's own files that lib/gcp reads (DMI, /sys/class/net, a
 * preset's script), found under WEFT_GCP_SYSROOT when tests set it.
 */
#include "gcp_private.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weft__gcp_path(char *buf, size_t len, const char *abs)
{
  const char *root = getenv("WEFT_GCP_SYSROOT");

  return weft__snprintf(buf, len, "%s%s", root ? root : "", abs);
}

int weft__gcp_read_line(const char *path, char *buf, size_t len)
{
  FILE *f = fopen(path, "r");
  size_t n;

  if (!f)
    return WEFT_ENOENT;
  if (!fgets(buf, (int)len, f)) {
    fclose(f);
    return WEFT_ENOENT;
  }
  fclose(f);
  n = strlen(buf);
  while (n > 0 && isspace((unsigned char)buf[n - 1]))
    buf[--n] = '\0';
  return 0;
}
