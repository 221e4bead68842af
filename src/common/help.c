/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "TOOL --help TOPIC": print $(weftx_datadir)/help/TOOL-TOPIC.txt; and the
 * word wrapping of help texts generated from tables.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <weftx.h>

#include "help.h"

int wt_help_topic(FILE *out, const char *tool, const char *topic, const char *const *topics)
{
  int known = 0;
  for (int i = 0; topics[i]; i++)
    if (!strcmp(topic, topics[i]))
      known = 1;
  if (!known) {
    char list[256] = "";
    size_t off = 0;
    for (int i = 0; topics[i] && off < sizeof(list); i++)
      off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", topics[i]);
    fprintf(stderr, "%s: no help topic '%s'; the topics are %s\n", tool, topic, list);
    return -1;
  }
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/help/%s-%s.txt", weftx_datadir(), tool, topic) >=
      sizeof(path)) {
    fprintf(stderr, "%s: help directory path too long; check WEFT_DATADIR\n", tool);
    return -1;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot read %s: %s; reinstall weft or set WEFT_DATADIR\n", tool, path,
            strerror(errno));
    return -1;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    fwrite(buf, 1, n, out);
  fclose(f);
  return 0;
}

void wt_help_wrap(FILE *out, const char *text, int col, int indent, int width)
{
  const char *p = text;
  while (*p) {
    while (*p == ' ')
      p++;
    size_t n = strcspn(p, " ");
    if (!n)
      break;
    if (col > indent && col + 1 + (int)n > width) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    } else if (col < indent) {
      fprintf(out, "%*s", indent - col, "");
      col = indent;
    }
    fwrite(p, 1, n, out);
    col += (int)n;
    p += n;
  }
  fputc('\n', out);
}
