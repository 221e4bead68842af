/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What weftrun forwards to the ranks: the variables of the launching
 * environment that GPU and Python jobs need (NCCL_*, GLOO_*, CUDA_*, WEFT_*,
 * OMP_*, PYTHON*, LD_LIBRARY_PATH, PATH), and -x arguments with mpirun's meaning.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <string.h>

static const char *const prefixes[] = {"NCCL_", "GLOO_", "CUDA_", "WEFT_", "OMP_", "PYTHON", NULL};
static const char *const names[] = {"LD_LIBRARY_PATH", "PATH", NULL};

int weftx_env_forward_default(const char *key)
{
  if (!key)
    return 0;
  for (int i = 0; prefixes[i]; i++)
    if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
      return 1;
  for (int i = 0; names[i]; i++)
    if (strcmp(key, names[i]) == 0)
      return 1;
  return 0;
}

int weftx_env_forward(weftx_env *e, char *const *envp)
{
  char key[256];

  for (; envp && *envp; envp++) {
    const char *eq = strchr(*envp, '=');
    size_t len = eq ? (size_t)(eq - *envp) : 0;
    int rc;
    if (!eq || len == 0 || len >= sizeof(key))
      continue;
    memcpy(key, *envp, len);
    key[len] = '\0';
    if (!weftx_env_forward_default(key))
      continue;
    rc = weftx_env_put(e, *envp, WEFTX_ENV_USER, NULL);
    if (rc == WEFT_ENOMEM)
      return rc;
  }
  return 0;
}

static const char *lookup(char *const *envp, const char *key)
{
  size_t len = strlen(key);

  for (; envp && *envp; envp++)
    if (strncmp(*envp, key, len) == 0 && (*envp)[len] == '=')
      return *envp + len + 1;
  return NULL;
}

int weftx_env_add_x(weftx_env *e, const char *arg, char *const *envp, char *why, size_t whylen)
{
  const char *value;
  int rc;

  if (!e || !arg)
    return WEFT_EINVAL;
  if (strchr(arg, '=')) {
    rc = weftx_env_put(e, arg, WEFTX_ENV_XARG, NULL);
    if (rc == WEFT_EPARSE && why)
      weft__snprintf(why, whylen,
                     "-x '%.200s': not a variable name before '='; write -x NAME "
                     "or -x NAME=VALUE",
                     arg);
    return rc;
  }
  if (!weftx_env_key_valid(arg)) {
    if (why)
      weft__snprintf(why, whylen,
                     "-x '%.200s': not a variable name; write -x NAME or "
                     "-x NAME=VALUE",
                     arg);
    return WEFT_EPARSE;
  }
  value = lookup(envp, arg);
  if (!value) {
    if (why)
      weft__snprintf(why, whylen,
                     "-x %.200s: %.200s is not set in your environment; set it or "
                     "write -x %.200s=VALUE",
                     arg, arg, arg);
    return WEFT_ENOENT;
  }
  return weftx_env_set(e, arg, value, WEFTX_ENV_XARG, NULL);
}
