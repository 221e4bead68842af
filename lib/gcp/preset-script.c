/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A preset's profile script (Google's nccl-env-profile.sh): run it with bash
 * in a clean environment, with a deadline and a cap on its output, and give
 * back what `env` printed after sourcing it. preset-env.c decides which of
 * those variables count.
 */
#include "preset_private.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <weftx/proc.h>

#define SCRIPT_TIMEOUT_S 10
#define SCRIPT_MAX_OUTPUT (256 * 1024)

/* Run "source SCRIPT; env" in a clean environment and read what it exported.
 * Returns the output (allocated) or NULL on failure with why set. */
char *weft__preset_script_run(const weftx_preset *p, const char *path, char *why, size_t whylen)
{
  char *argv[] = {(char *)"/bin/bash", (char *)"-c", (char *)". \"$0\" >/dev/null 2>&1; env",
                  (char *)path, NULL};
  weftx_proc_spec spec;
  weftx_proc_result r;
  char **envp;
  int n = 0, rc;

  envp = calloc((size_t)p->nscript_env + 3, sizeof(char *));
  if (!envp)
    return NULL;
  envp[n++] = (char *)"PATH=/usr/local/bin:/usr/bin:/bin";
  envp[n++] = (char *)"LD_LIBRARY_PATH=";
  for (int i = 0; i < p->nscript_env; i++)
    envp[n++] = p->script_env[i];
  weftx_proc_spec_init(&spec);
  spec.argv = argv;
  spec.envp = envp;
  spec.in = WEFTX_PROC_NULL;
  spec.out = WEFTX_PROC_PIPE; /* kept */
  spec.err = WEFTX_PROC_NULL;
  spec.timeout = SCRIPT_TIMEOUT_S;
  spec.stop_signal = SIGKILL;
  spec.stop_group = 1;
  spec.grace = 1;
  spec.max_output = SCRIPT_MAX_OUTPUT;
  rc = weftx_proc_run(&spec, &r, why, whylen);
  free(envp);
  if (rc)
    return NULL;
  if (r.timed_out)
    weft__snprintf(why, whylen, "%s did not finish within %d s", path, SCRIPT_TIMEOUT_S);
  else if (r.capped) /* cut output would be merged as if whole */
    weft__snprintf(why, whylen,
                   "%s exported more than %d KiB of variables; export only "
                   "NCCL settings there",
                   path, SCRIPT_MAX_OUTPUT / 1024);
  else if (r.status != 0)
    weft__snprintf(why, whylen, "%s failed (bash exit status %d)", path, r.status);
  if (r.timed_out || r.capped || r.status != 0) {
    free(r.output);
    return NULL;
  }
  return r.output ? r.output : strdup("");
}
