/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WEFT_VERBOSE: per-subsystem diagnostics on stderr, off by default.
 * The mask is computed once; an unknown name in WEFT_VERBOSE is reported once
 * and otherwise ignored, so that a typo never stops a job.
 */
#include "weft_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const subsys_names[WEFT_LOG_NSUBSYS] = {
  "core", "topo", "map", "hosts", "env", "gcp", "rt", "run", "bench",
};

static int log_mask = -1; /* -1: not read yet */

const char *weft_subsys_name(weft_subsys s)
{
  if ((int)s < 0 || s >= WEFT_LOG_NSUBSYS)
    return "?";
  return subsys_names[s];
}

static int parse_mask(const char *spec)
{
  int mask = 0;
  char buf[256];
  char *save = NULL;

  if (!spec || !*spec)
    return 0;
  if (weft__snprintf(buf, sizeof(buf), "%s", spec) != 0) {
    fprintf(stderr,
            "weft: WEFT_VERBOSE is too long (more than %zu characters); logging stays off\n",
            sizeof(buf) - 1);
    return 0;
  }
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int neg = 0, found = 0;
    if (*tok == '-') {
      neg = 1;
      tok++;
    }
    if (!strcmp(tok, "all") || !strcmp(tok, "1")) {
      mask = neg ? 0 : (1 << WEFT_LOG_NSUBSYS) - 1;
      continue;
    }
    if (!strcmp(tok, "0") || !*tok)
      continue;
    for (int i = 0; i < WEFT_LOG_NSUBSYS; i++) {
      if (!strcmp(tok, subsys_names[i])) {
        mask = neg ? (mask & ~(1 << i)) : (mask | (1 << i));
        found = 1;
      }
    }
    if (!found)
      fprintf(stderr,
              "weft: WEFT_VERBOSE names an unknown subsystem '%s' (known: all, core, topo, "
              "map, hosts, env, gcp, rt, run, bench); ignored\n",
              tok);
  }
  return mask;
}

int weft_log_enabled(weft_subsys s)
{
  if (log_mask < 0)
    log_mask = parse_mask(getenv("WEFT_VERBOSE"));
  if ((int)s < 0 || s >= WEFT_LOG_NSUBSYS)
    return 0;
  return (log_mask >> s) & 1;
}

void weftx_log_reset(void) { log_mask = -1; }

void weft_log(weft_subsys s, const char *fmt, ...)
{
  char host[64] = "?";
  char line[1024];
  va_list ap;

  if (!weft_log_enabled(s))
    return;
  if (gethostname(host, sizeof(host)) != 0)
    host[0] = '?', host[1] = '\0';
  host[sizeof(host) - 1] = '\0';
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  /* One fprintf per line, so that lines of concurrent ranks do not interleave. */
  fprintf(stderr, "weft[%s:%ld] %s: %s\n", host, (long)getpid(), weft_subsys_name(s), line);
}
