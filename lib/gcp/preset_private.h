/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the four files of an NCCL preset share: the loaded preset itself.
 * preset.c reads the file grammar into it, preset-script.c runs a profile
 * script, preset-expand.c fills the NIC placeholders, and preset-env.c
 * merges it all (file, script, the user's own variables) into the variables
 * a job gets.
 */
#ifndef WEFT_GCP_PRESET_PRIVATE_H
#define WEFT_GCP_PRESET_PRIVATE_H

#include "gcp_private.h"

/* One KEY=VALUE (or prepend-path KEY DIR) line of a preset file. */
struct weft__preset_entry {
  char *key;
  char *value; /* placeholders not yet filled */
  int prepend;
};

struct weftx_preset {
  char *name;
  struct weft__preset_entry *ent;
  int nent;
  char *reserve_cpus;
  int mtu;
  int gvnic_all; /* "gvnic all": GPU NICs must be gVNICs too */
  char **plugins;
  int nplugins;
  char *script;      /* profile-script PATH */
  char **script_env; /* its NAME=VALUE arguments */
  int nscript_env;
  char **keep; /* keys ours keep over the script's */
  int nkeep;
  /* The last resolve (preset-env.c). */
  weftx_preset_var *vars;
  int nvars;
  char **pool;
  int npool;
};

/* Make room for element n of *arrp (arrays grow by 8). 0 or WEFT_ENOMEM. */
int weft__preset_grow(void *arrp, int n, size_t elem);

/* Free n strings and their array. */
void weft__preset_free_strs(char **arr, int n);

/* Forget the last resolve (preset.c). */
void weft__preset_clear_resolved(weftx_preset *p);

/* preset-expand.c: 1 when every @word@ of v is a placeholder it knows. */
int weft__preset_placeholders_ok(const char *v);

/* preset-expand.c: v with its placeholders filled from info (NULL off GCE)
 * into buf. 0; WEFT_ENOENT with the missing NIC and the fix in why (naming
 * preset \p name and variable \p key); WEFT_ERANGE, WEFT_EPARSE. */
int weft__preset_expand(const char *name, const weftx_gcp_info *info, const char *key,
                        const char *v, char *buf, size_t len, char *why, size_t whylen);

/* preset-script.c: run "source SCRIPT; env" in a clean environment with the
 * preset's script arguments. The output (allocated), or NULL with why set
 * when there is a reason to give. */
char *weft__preset_script_run(const weftx_preset *p, const char *path, char *why, size_t whylen);

#endif /* WEFT_GCP_PRESET_PRIVATE_H */
