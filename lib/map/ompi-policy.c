/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Step 1 of the Open MPI 4.1 model (weftx/ompi.h): the MCA parameters that
 * decide placement -> the policy mpirun maps, ranks and binds by. This is
 * opal_hwloc_base_open() and orte_rmaps_base_open() with their helpers
 * (set_binding_policy, set_mapping_policy, check_modifiers,
 * set_ranking_policy) read line by line, including their quirks: words match
 * by prefix ("so" is socket, "" is slot), the first ':' separates modifiers,
 * deprecated flags conflict with explicit policies. What Open MPI refuses is
 * WEFT_EINVAL with its reason; what it has and the model leaves out is
 * WEFT_ENOTSUP.
 *
 * It is weft's one grammar of --map-by and --bind-to: weftx_policy_parse()
 * reads the same words through it, with weft's gpu, ppr:N:gpu and gpu-local
 * besides (whole words, which mpirun refuses and so does the model of it).
 */
#include "weft_private.h"
#include "ompi_private.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  int id;
} mca_names[] = {
#define WEFTX_OMPI_MCA_NAME(id, name) {name, WEFTX_OMPI_MCA_##id},
  WEFTX_OMPI_MCA_PARAMS(WEFTX_OMPI_MCA_NAME)
#undef WEFTX_OMPI_MCA_NAME
  /* synonyms Open MPI registers */
  {"rmaps_base_schedule_policy", WEFTX_OMPI_MCA_MAPPING},
  {"rmaps_ppr_pernode", WEFTX_OMPI_MCA_PERNODE},
  {"rmaps_ppr_n_pernode", WEFTX_OMPI_MCA_N_PERNODE},
  {"rmaps_ppr_n_persocket", WEFTX_OMPI_MCA_N_PERSOCKET},
  {"rmaps_ppr_pattern", WEFTX_OMPI_MCA_PATTERN},
  {"rmaps_base_cpus_per_rank", WEFTX_OMPI_MCA_CPUS_PER_PROC},
  {"hwloc_base_slot_list", WEFTX_OMPI_MCA_CPU_LIST},
  {"hwloc_base_cpu_set", WEFTX_OMPI_MCA_CPU_LIST},
  {"rmaps_rank_file_path", WEFTX_OMPI_MCA_RANKFILE},
  {"rmaps_base_topology", WEFTX_OMPI_MCA_TOPO_FILE},
};

int weftx_ompi_mca_id(const char *name)
{
  size_t i;

  for (i = 0; name && i < WEFT__ARRAY_SIZE(mca_names); i++)
    if (strcmp(name, mca_names[i].name) == 0)
      return mca_names[i].id;
  return -1;
}

const char *weftx_ompi_mca_name(int id)
{
  size_t i;

  for (i = 0; i < WEFT__ARRAY_SIZE(mca_names); i++)
    if (mca_names[i].id == id)
      return mca_names[i].name;
  return "?";
}

/* ---- helpers ---------------------------------------------------------------- */

struct ctx {
  const weftx_ompi_mca *m;
  char *why;
  size_t whylen;
  int weft;    /* weft's words too (gpu, ppr:N:gpu, gpu-local) */
  int *bad_pe; /* set for a PE=n whose n is not a whole number from 1 (Open MPI reads
                      it as 0), or NULL */
  int v5;      /* Open MPI 5's words (package) and rules */
};

/* "PARAM (from WHERE)" for messages. */
static const char *src(const struct ctx *c, int id, char *buf, size_t len)
{
  const char *from = c->m->from[id];

  if (from && *from)
    weft__snprintf(buf, len, "%s", from);
  else
    weft__snprintf(buf, len, "MCA %s", weftx_ompi_mca_name(id));
  return buf;
}

static int fail(const struct ctx *c, int rc, const char *fmt, ...) WEFT_PRINTF(3, 4);
static int fail(const struct ctx *c, int rc, const char *fmt, ...)
{
  va_list ap;

  if (c->why && c->whylen) {
    va_start(ap, fmt);
    vsnprintf(c->why, c->whylen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* An MCA boolean as mca_base_var reads one. */
static int mca_bool(const struct ctx *c, int id, int *out)
{
  const char *v = c->m->v[id];
  char s[160];

  *out = 0;
  if (!v)
    return 0;
  if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
      !strcasecmp(v, "enabled") || !strcasecmp(v, "t") || !strcasecmp(v, "y")) {
    *out = 1;
    return 0;
  }
  if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
      !strcasecmp(v, "disabled") || !strcasecmp(v, "f") || !strcasecmp(v, "n") || !*v)
    return 0;
  return fail(c, WEFT_EINVAL, "%s '%s': Open MPI wants a boolean (1/0, true/false)",
              src(c, id, s, sizeof(s)), v);
}

static int mca_int(const struct ctx *c, int id, int *out)
{
  const char *v = c->m->v[id];
  char *end, s[160];
  long l;

  *out = 0;
  if (!v || !*v)
    return 0;
  l = strtol(v, &end, 10);
  if (*end || l < 0 || l > 1000000)
    return fail(c, WEFT_EINVAL, "%s '%s': Open MPI wants a whole number", src(c, id, s, sizeof(s)),
                v);
  *out = (int)l;
  return 0;
}

/* Open MPI's prefix match: \p word is a prefix of \p name (any length, even 0). */
static int prefix(const char *word, const char *name)
{
  return strncasecmp(word, name, strlen(word)) == 0;
}

/* "; did you mean 'core'?" when one of \p n names is within 2 edits of \p word, and fewer
 * than half its letters (gpu is not ppr), else "". */
static const char *closest(const char *word, const char *const *names, size_t n, char *buf,
                           size_t len)
{
  int best = strlen(word) < 6 ? (int)(strlen(word) + 1) / 2 : 3;

  buf[0] = '\0';
  if (!strcasecmp(word, "package"))
    return "; package is Open MPI 5's word: Open MPI 4.1 calls the package socket";
  for (size_t i = 0; i < n; i++) {
    int d = weftx_edit_distance(word, names[i], 1);
    if (d > 0 && d < best) {
      best = d;
      weft__snprintf(buf, len, "; did you mean '%s'?", names[i]);
    }
  }
  return buf;
}

#define SET_POLICY(t, pol) ((t) = (pol) | ((t)&0xff00u))
#define SET_RPOLICY(t, pol) ((t) = (pol) | ((t)&0xf000u))
#define SET_BIND(t, pol) ((t) = (pol) | (((t)&0xf000u) | WEFTX_OMPI_BIND_GIVEN))
#define SET_DEFAULT_BIND(t, pol)                                                                   \
  do {                                                                                             \
    if (!((t)&WEFTX_OMPI_BIND_GIVEN))                                                              \
      (t) = (pol) | (((t)&0xf000u) | WEFTX_OMPI_BIND_IF_SUPPORTED);                                \
  } while (0)

/* ---- opal_hwloc_base_set_binding_policy() ---------------------------------------- */

static int binding_policy(const struct ctx *c, weftx_ompi_policy *p, const char *spec,
                          unsigned *out)
{
  unsigned tmp = 0;
  char buf[256], *colon, *quals, *q, s[160], hint[64];
  static const char *const names[] = {"hwthread", "core",    "l1cache", "l2cache",
                                      "l3cache",  "socket",  "numa",    "board",
                                      "cpu-list", "cpulist", "none",    "gpu-local"};
  static const int values[] = {WEFTX_OMPI_HWTHREAD,    WEFTX_OMPI_CORE,      WEFTX_OMPI_L1,
                               WEFTX_OMPI_L2,          WEFTX_OMPI_L3,        WEFTX_OMPI_SOCKET,
                               WEFTX_OMPI_NUMA,        WEFTX_OMPI_BOARD,     WEFTX_OMPI_BIND_CPUSET,
                               WEFTX_OMPI_BIND_CPUSET, WEFTX_OMPI_BIND_NONE, WEFTX_OMPI_GPU};
  /* the words a binding may be: Open MPI's, and weft's gpu-local last */
  size_t i, nwords = WEFT__ARRAY_SIZE(names) - (c->weft ? 0 : 1);

  if (!spec) {
    SET_DEFAULT_BIND(tmp, p->hwthreads ? WEFTX_OMPI_HWTHREAD : WEFTX_OMPI_CORE);
    *out = tmp;
    return 0;
  }
  if (strncasecmp(spec, "none", 4) == 0) {
    SET_BIND(tmp, WEFTX_OMPI_BIND_NONE);
    *out = tmp;
    return 0;
  }
  if (weft__snprintf(buf, sizeof(buf), "%s", spec))
    return fail(c, WEFT_EINVAL, "--bind-to '%.40s...': too long", spec);
  colon = strchr(buf, ':');
  if (colon) {
    *colon = '\0';
    quals = colon + 1;
    for (q = strtok(quals, ","); q; q = strtok(NULL, ",")) {
      if (prefix(q, "if-supported"))
        tmp |= WEFTX_OMPI_BIND_IF_SUPPORTED;
      else if (prefix(q, "overload-allowed") || prefix(q, "oversubscribe-allowed"))
        tmp |= WEFTX_OMPI_BIND_OVERLOAD;
      else if (prefix(q, "ordered"))
        tmp |= WEFTX_OMPI_BIND_ORDERED;
      else
        return fail(c, WEFT_EINVAL,
                    "%s '%s': unknown qualifier '%s'; Open MPI takes "
                    "overload-allowed, if-supported and ordered",
                    src(c, WEFTX_OMPI_MCA_BINDING, s, sizeof(s)), spec, q);
    }
  }
  if (buf[0] == '\0') {
    /* ":qualifiers" alone qualify the default, core */
    SET_BIND(tmp, WEFTX_OMPI_CORE);
    tmp &= ~WEFTX_OMPI_BIND_GIVEN;
  } else {
    /* "none" was taken above by its first 4 letters, as Open MPI does; Open MPI 5 calls
     * the socket package (and still reads socket) */
    if (c->v5 && prefix(buf, "package") && strlen(buf) >= 2)
      weft__snprintf(buf, sizeof(buf), "socket");
    for (i = 0; i < nwords; i++)
      if (values[i] != WEFTX_OMPI_BIND_NONE && strcasecmp(buf, names[i]) == 0)
        break;
    if (c->v5 && !c->weft && i < nwords &&
        (values[i] == WEFTX_OMPI_BOARD || values[i] == WEFTX_OMPI_BIND_CPUSET))
      return fail(c, WEFT_EINVAL,
                  "%s '%s': Open MPI 5 binds to none, hwthread, core, l1cache, l2cache, l3cache, "
                  "numa or package (board and cpu-list were Open MPI 4.1's)",
                  src(c, WEFTX_OMPI_MCA_BINDING, s, sizeof(s)), spec);
    if (i == nwords)
      return fail(c, WEFT_EINVAL,
                  "%s '%s': Open MPI binds to none, hwthread, core, l1cache, "
                  "l2cache, l3cache, socket, numa, board or cpu-list%s%s",
                  src(c, WEFTX_OMPI_MCA_BINDING, s, sizeof(s)), spec,
                  c->weft ? ", weft also to gpu-local" : "",
                  closest(buf, names, nwords, hint, sizeof(hint)));
    SET_BIND(tmp, (unsigned)values[i]);
  }
  *out = tmp;
  return 0;
}

/* opal_hwloc_base_open(): the binding, the deprecated flags, the cpu list. */
static int hwloc_open(const struct ctx *c, weftx_ompi_policy *p)
{
  int core, socket, rc;
  char s[160];

  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_HWTHREADS, &p->hwthreads)) ||
      (rc = binding_policy(c, p, c->m->v[WEFTX_OMPI_MCA_BINDING], &p->binding)) ||
      (rc = mca_bool(c, WEFTX_OMPI_MCA_BIND_TO_CORE, &core)) ||
      (rc = mca_bool(c, WEFTX_OMPI_MCA_BIND_TO_SOCKET, &socket)))
    return rc;
  if (core) {
    if ((p->binding & WEFTX_OMPI_BIND_GIVEN) && WEFTX_OMPI_POLICY(p->binding) != WEFTX_OMPI_CORE)
      return fail(c, WEFT_EINVAL, "%s conflicts with the binding policy already given; give one",
                  src(c, WEFTX_OMPI_MCA_BIND_TO_CORE, s, sizeof(s)));
    SET_BIND(p->binding, WEFTX_OMPI_CORE);
  }
  if (socket) {
    if ((p->binding & WEFTX_OMPI_BIND_GIVEN) && WEFTX_OMPI_POLICY(p->binding) != WEFTX_OMPI_SOCKET)
      return fail(c, WEFT_EINVAL, "%s conflicts with the binding policy already given; give one",
                  src(c, WEFTX_OMPI_MCA_BIND_TO_SOCKET, s, sizeof(s)));
    SET_BIND(p->binding, WEFTX_OMPI_SOCKET);
  }
  if (c->m->v[WEFTX_OMPI_MCA_CPU_LIST]) {
    if (weft__snprintf(p->cpu_list, sizeof(p->cpu_list), "%s", c->m->v[WEFTX_OMPI_MCA_CPU_LIST]))
      return fail(c, WEFT_EINVAL, "%s: the cpu list is too long",
                  src(c, WEFTX_OMPI_MCA_CPU_LIST, s, sizeof(s)));
    SET_BIND(p->binding, WEFTX_OMPI_BIND_CPUSET);
  }
  if (WEFTX_OMPI_POLICY(p->binding) == WEFTX_OMPI_HWTHREAD)
    p->hwthreads = 1;
  return 0;
}

/* ---- orte_rmaps_base_set_mapping_policy() and check_modifiers() ------------------- */

#define BAD_MODIFIER 2

/* 0 (found some), 1 (none of them: ORTE_ERR_TAKE_NEXT_OPTION), BAD_MODIFIER (an unknown
 * one: the rest is not read, and only some callers refuse it, as in Open MPI), or an
 * error. */
static int check_modifiers(const struct ctx *c, weftx_ompi_policy *p, unsigned *tmp,
                           const char *mods, const char *spec)
{
  char buf[256], *w, *save = NULL;
  int found = 0;
  char s[160];

  if (weft__snprintf(buf, sizeof(buf), "%s", mods))
    return fail(c, WEFT_EINVAL, "--map-by '%.40s...': too long", spec);
  for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (prefix(w, "span"))
      return fail(c, WEFT_ENOTSUP, "%s '%s': the SPAN modifier",
                  src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), spec);
    if (strncasecmp(w, "pe", 2) == 0) {
      const char *eq = strchr(w, '=');
      if (!eq)
        return fail(c, WEFT_EINVAL, "%s '%s': '%s' has no value; write PE=N",
                    src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), spec, w);
      long pe;
      if (c->bad_pe && weftx_parse_long(eq + 1, 1, 1 << 20, &pe))
        *c->bad_pe = 1;
      p->cpus_per_rank = (int)strtol(eq + 1, NULL, 10);
      found = 1;
    } else if (prefix(w, "oversubscribe")) {
      *tmp &= ~(unsigned)WEFTX_OMPI_MAP_NO_OVERSUB;
      *tmp |= WEFTX_OMPI_MAP_SUBSCRIBE;
      found = 1;
    } else if (prefix(w, "nooversubscribe")) {
      *tmp |= WEFTX_OMPI_MAP_NO_OVERSUB | WEFTX_OMPI_MAP_SUBSCRIBE;
      found = 1;
    } else {
      fail(c, WEFT_EINVAL,
           "%s '%s': Open MPI 4.1 does not know the modifier '%s' (it takes "
           "PE=n, OVERSUBSCRIBE, NOOVERSUBSCRIBE, SPAN)",
           src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), spec, w);
      return BAD_MODIFIER;
    }
  }
  return found ? 0 : 1;
}

/* Open MPI's mapping words in the order it tries their prefixes; weft's gpu, a whole word,
 * last (for suggestions). */
static const char *const map_names[] = {"slot",     "node",    "seq",    "core", "l1cache",
                                        "l2cache",  "l3cache", "socket", "numa", "board",
                                        "hwthread", "dist",    "ppr",    "gpu"};
static const int map_values[] = {WEFTX_OMPI_SLOT,  WEFTX_OMPI_NODE,    WEFTX_OMPI_SEQ,
                                 WEFTX_OMPI_CORE,  WEFTX_OMPI_L1,      WEFTX_OMPI_L2,
                                 WEFTX_OMPI_L3,    WEFTX_OMPI_SOCKET,  WEFTX_OMPI_NUMA,
                                 WEFTX_OMPI_BOARD, WEFTX_OMPI_HWTHREAD};

/* The object of a ppr pattern ("N:obj"), as the ppr mapper reads it. */
static int ppr_pattern(const struct ctx *c, const char *pat, int *n, int *level, int *count)
{
  static const struct {
    const char *name;
    int v;
  } objs[] = {
    {"node", WEFTX_OMPI_NODE},  {"hwthread", WEFTX_OMPI_HWTHREAD}, {"thread", WEFTX_OMPI_HWTHREAD},
    {"core", WEFTX_OMPI_CORE},  {"socket", WEFTX_OMPI_SOCKET},     {"skt", WEFTX_OMPI_SOCKET},
    {"l1cache", WEFTX_OMPI_L1}, {"l2cache", WEFTX_OMPI_L2},        {"l3cache", WEFTX_OMPI_L3},
    {"numa", WEFTX_OMPI_NUMA},
  };
  const char *colon = strchr(pat, ':');
  char *end;
  size_t i;
  long v;

  if (strchr(pat, ','))
    return fail(c, WEFT_ENOTSUP, "ppr pattern '%s' over several levels", pat);
  if (!colon || strchr(colon + 1, ':'))
    return fail(c, WEFT_EINVAL, "ppr pattern '%s': Open MPI wants N:OBJECT, e.g. 2:socket", pat);
  *n = (int)strtol(pat, &end, 10);
  if (c->weft && !strcasecmp(colon + 1, "gpu")) {
    /* weft's ppr:N:gpu, with a count that is one */
    char num[32];
    weft__snprintf(num, sizeof(num), "%.*s", (int)(colon - pat), pat);
    if (weftx_parse_long(num, 1, 1 << 20, &v))
      return fail(c, WEFT_EINVAL, "ppr pattern '%s': N in N:gpu is a whole number from 1", pat);
    *n = (int)v;
    *level = WEFTX_OMPI_GPU;
    *count = 0;
    return 0;
  }
  for (i = 0; i < WEFT__ARRAY_SIZE(objs); i++)
    if (prefix(colon + 1, objs[i].name))
      break;
  if (i == WEFT__ARRAY_SIZE(objs) && c->v5 && colon[1] && prefix(colon + 1, "package"))
    i = 4; /* Open MPI 5's name of the socket */
  if (i == WEFT__ARRAY_SIZE(objs)) {
    if (!strcasecmp(colon + 1, "package"))
      return fail(c, WEFT_EINVAL,
                  "ppr pattern '%s': package is Open MPI 5's word: Open MPI 4.1 calls the "
                  "package socket; write ppr:%.*s:socket",
                  pat, (int)(colon - pat), pat);
    return fail(c, WEFT_EINVAL,
                "ppr pattern '%s': Open MPI does not know the object '%s' (node, "
                "%s, numa, l3cache, l2cache, l1cache, core, hwthread%s)",
                pat, colon + 1, c->v5 ? "package" : "socket", c->weft ? "; weft's gpu" : "");
  }
  *level = objs[i].v;
  *count = strstr(pat, "node")                                               ? WEFTX_OMPI_NODE
           : strstr(pat, "socket") || (c->v5 && *level == WEFTX_OMPI_SOCKET) ? WEFTX_OMPI_SOCKET
                                                                             : 0;
  return 0;
}

/* Into \p out (and the ppr into \p ppr: n, level, count), as for orte_rmaps_base or a job. */
static int mapping_policy(const struct ctx *c, weftx_ompi_policy *p, const char *inspec,
                          unsigned *out, int *ppr)
{
  unsigned tmp = 0;
  char spec[256], s[160], *ck;
  size_t len, i;
  int rc;

  if (!inspec) {
    SET_POLICY(tmp, WEFTX_OMPI_SOCKET);
    *out = tmp;
    return 0;
  }
  if (weft__snprintf(spec, sizeof(spec), "%s", inspec))
    return fail(c, WEFT_EINVAL, "--map-by '%.40s...': too long", inspec);
  ck = strchr(spec, ':');
  if (ck) {
    if (ck == spec) {
      /* modifiers of the default mapping alone (Open MPI 5 leaves the mapping to its
       * defaults, which depend on the job) */
      if (!c->v5)
        SET_POLICY(tmp, WEFTX_OMPI_SOCKET);
      /* an unknown modifier here is not an error in Open MPI */
      rc = check_modifiers(c, p, &tmp, ck + 1, inspec);
      if (rc < 0)
        return rc;
      if (c->why)
        c->why[0] = '\0';
      *out = tmp;
      return 0;
    }
    *ck++ = '\0';
    if (prefix(spec, "ppr")) {
      char pat[128], *mods = strchr(ck, ':');
      if (!mods)
        return fail(c, WEFT_EINVAL, "%s '%s': Open MPI wants ppr:N:OBJECT",
                    src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), inspec);
      mods = strchr(mods + 1, ':');
      if (mods) {
        *mods++ = '\0';
        if ((rc = check_modifiers(c, p, &tmp, mods, inspec)) < 0)
          return rc;
        if (c->why) /* nor here */
          c->why[0] = '\0';
      }
      weft__snprintf(pat, sizeof(pat), "%s", ck);
      if ((rc = ppr_pattern(c, pat, &ppr[0], &ppr[1], &ppr[2])))
        return rc;
      if (ppr[1] == WEFTX_OMPI_GPU && mods &&
          check_modifiers(c, p, &tmp, mods, inspec) == BAD_MODIFIER)
        return WEFT_EINVAL; /* weft's own word: its modifiers are checked */
      SET_POLICY(tmp, WEFTX_OMPI_PPR);
      tmp |= WEFTX_OMPI_MAP_GIVEN;
      *out = tmp;
      return 0;
    }
    if ((rc = check_modifiers(c, p, &tmp, ck, inspec)) < 0)
      return rc;
    if (rc == BAD_MODIFIER)
      return WEFT_EINVAL;
  }
  len = strlen(spec);
  for (i = 0; i < WEFT__ARRAY_SIZE(map_values); i++)
    if (strncasecmp(spec, map_names[i], len) == 0)
      break;
  if (i == WEFT__ARRAY_SIZE(map_values) && c->v5 && len >= 2 && prefix(spec, "package"))
    i = 7; /* Open MPI 5's name of the socket */
  if (c->v5 && !c->weft && i < WEFT__ARRAY_SIZE(map_values) && map_values[i] == WEFTX_OMPI_BOARD)
    return fail(c, WEFT_EINVAL,
                "%s '%s': Open MPI 5 maps by slot, hwthread, core, l1cache, l2cache, l3cache, "
                "numa, package, node, seq, ppr, rankfile or pe-list= (board was Open MPI 4.1's)",
                src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), inspec);
  if (c->weft && !strcasecmp(spec, "gpu")) {
    SET_POLICY(tmp, WEFTX_OMPI_GPU);
  } else if (i == WEFT__ARRAY_SIZE(map_values)) {
    char hint[64];
    if (prefix(spec, "dist"))
      return fail(c, WEFT_ENOTSUP, "%s '%s': the dist mapper",
                  src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), inspec);
    return fail(c, WEFT_EINVAL,
                "%s '%s': Open MPI 4.1 maps by slot, hwthread, core, l1cache, "
                "l2cache, l3cache, socket, numa, board, node, seq, dist or ppr:N:OBJECT%s%s",
                src(c, WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)), inspec,
                c->weft ? ", weft also by gpu" : "",
                closest(spec, map_names, WEFT__ARRAY_SIZE(map_names) - (c->weft ? 0 : 1), hint,
                        sizeof(hint)));
  } else {
    SET_POLICY(tmp, (unsigned)map_values[i]);
  }
  if (WEFTX_OMPI_POLICY(tmp) == WEFTX_OMPI_HWTHREAD)
    p->hwthreads = 1;
  tmp |= WEFTX_OMPI_MAP_GIVEN;
  *out = tmp;
  return 0;
}

/* ---- orte_rmaps_base_set_ranking_policy() ------------------------------------------ */

static int ranking_policy(const struct ctx *c, unsigned mapping, const char *spec, unsigned *out)
{
  static const struct {
    const char *name;
    int v;
  } words[] = {
    {"slot", WEFTX_OMPI_SLOT},   {"node", WEFTX_OMPI_NODE},     {"hwthread", WEFTX_OMPI_HWTHREAD},
    {"core", WEFTX_OMPI_CORE},   {"l1cache", WEFTX_OMPI_L1},    {"l2cache", WEFTX_OMPI_L2},
    {"l3cache", WEFTX_OMPI_L3},  {"socket", WEFTX_OMPI_SOCKET}, {"numa", WEFTX_OMPI_NUMA},
    {"board", WEFTX_OMPI_BOARD},
  };
  unsigned tmp = 0;
  char buf[128], *mod, s[160];
  size_t i, len;

  if (!spec) {
    unsigned m = WEFTX_OMPI_POLICY(mapping);
    if ((mapping & WEFTX_OMPI_MAP_GIVEN) && m >= WEFTX_OMPI_NODE && m <= WEFTX_OMPI_SLOT)
      SET_RPOLICY(tmp, m);
    else
      SET_RPOLICY(tmp, WEFTX_OMPI_SLOT);
    *out = tmp;
    return 0;
  }
  if (weft__snprintf(buf, sizeof(buf), "%s", spec))
    return fail(c, WEFT_EINVAL, "--rank-by '%.40s...': too long", spec);
  mod = strchr(buf, ':');
  if (mod) {
    *mod++ = '\0';
    if (strchr(mod, ':'))
      return fail(c, WEFT_EINVAL, "%s '%s': Open MPI takes POLICY[:SPAN|FILL]",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
    if (prefix(mod, "span"))
      return fail(c, WEFT_ENOTSUP, "%s '%s': the SPAN modifier",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
    if (!prefix(mod, "fill"))
      return fail(c, WEFT_EINVAL, "%s '%s': Open MPI does not know the modifier '%s' (SPAN, FILL)",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec, mod);
    tmp |= WEFTX_OMPI_RANK_FILL;
  }
  len = strlen(buf);
  if (c->v5) {
    /* Open MPI 5 ranks by slot, node, fill or span, without modifiers */
    if (mod)
      return fail(c, WEFT_EINVAL,
                  "%s '%s': Open MPI 5 takes slot, node, fill or span without a modifier "
                  "(Open MPI 4.1 took OBJECT:fill)",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
    if (len && !strncasecmp(buf, "span", len))
      return fail(c, WEFT_ENOTSUP, "%s '%s': ranking by span",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
    if (len && !strncasecmp(buf, "fill", len))
      return fail(c, WEFT_ENOTSUP, "%s '%s': ranking by fill",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
    if (!len || (strncasecmp(buf, "slot", len) && strncasecmp(buf, "node", len)))
      return fail(c, WEFT_EINVAL,
                  "%s '%s': Open MPI 5 ranks by slot, node, fill or span (Open MPI 4.1 also "
                  "by hwthread, core, l1cache, l2cache, l3cache, socket, numa or board)",
                  src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
  }
  for (i = 0; i < WEFT__ARRAY_SIZE(words); i++)
    if (strncasecmp(buf, words[i].name, len) == 0)
      break;
  if (i == WEFT__ARRAY_SIZE(words))
    return fail(c, WEFT_EINVAL,
                "%s '%s': Open MPI 4.1 ranks by slot, node, hwthread, core, "
                "l1cache, l2cache, l3cache, socket, numa or board",
                src(c, WEFTX_OMPI_MCA_RANKING, s, sizeof(s)), spec);
  SET_RPOLICY(tmp, (unsigned)words[i].v);
  tmp |= WEFTX_OMPI_RANK_GIVEN;
  *out = tmp;
  return 0;
}

/* A deprecated --bycore/--byslot/--bynode: both policies, unless others were given. */
static int by_flag(const struct ctx *c, weftx_ompi_policy *p, int id, int policy)
{
  char s[160];

  if ((p->mapping & WEFTX_OMPI_MAP_GIVEN) && WEFTX_OMPI_POLICY(p->mapping) != (unsigned)policy)
    return fail(c, WEFT_EINVAL, "%s conflicts with the mapping policy already given; give one",
                src(c, id, s, sizeof(s)));
  SET_POLICY(p->mapping, (unsigned)policy);
  p->mapping |= WEFTX_OMPI_MAP_GIVEN;
  if ((p->ranking & WEFTX_OMPI_RANK_GIVEN) && WEFTX_OMPI_POLICY(p->ranking) != (unsigned)policy)
    return fail(c, WEFT_EINVAL, "%s conflicts with the ranking policy already given; give one",
                src(c, id, s, sizeof(s)));
  SET_RPOLICY(p->ranking, (unsigned)policy);
  p->ranking |= WEFTX_OMPI_RANK_GIVEN;
  return 0;
}

/* orte_rmaps_base_open(). */
static int rmaps_open(const struct ctx *c, weftx_ompi_policy *p)
{
  const char *mapping = c->m->v[WEFTX_OMPI_MCA_MAPPING], *pat = c->m->v[WEFTX_OMPI_MCA_PATTERN];
  char buf[160], s[160];
  int rc, v;

  if ((rc = mca_int(c, WEFTX_OMPI_MCA_CPUS_PER_PROC, &p->cpus_per_rank)) ||
      (rc = mca_bool(c, WEFTX_OMPI_MCA_PERNODE, &p->pernode)) ||
      (rc = mca_int(c, WEFTX_OMPI_MCA_N_PERNODE, &p->n_pernode)) ||
      (rc = mca_int(c, WEFTX_OMPI_MCA_N_PERSOCKET, &p->n_persocket)))
    return rc;
  if (pat) {
    if (mapping)
      return fail(c, WEFT_EINVAL, "%s and a mapping policy both given; give --map-by ppr:%s alone",
                  src(c, WEFTX_OMPI_MCA_PATTERN, s, sizeof(s)), pat);
    weft__snprintf(buf, sizeof(buf), "ppr:%s", pat);
    mapping = buf;
  }
  {
    int ppr[3] = {0, 0, 0};
    if ((rc = mapping_policy(c, p, mapping, &p->mapping, ppr)) ||
        (rc = ranking_policy(c, p->mapping, c->m->v[WEFTX_OMPI_MCA_RANKING], &p->ranking)))
      return rc;
    p->ppr_n = ppr[0];
    p->ppr_level = ppr[1];
    p->ppr_count = ppr[2];
  }
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_BYCORE, &v)) ||
      (v && (rc = by_flag(c, p, WEFTX_OMPI_MCA_BYCORE, WEFTX_OMPI_CORE))))
    return rc;
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_BYSLOT, &v)) ||
      (v && (rc = by_flag(c, p, WEFTX_OMPI_MCA_BYSLOT, WEFTX_OMPI_SLOT))))
    return rc;
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_BYNODE, &v)) ||
      (v && (rc = by_flag(c, p, WEFTX_OMPI_MCA_BYNODE, WEFTX_OMPI_NODE))))
    return rc;
  if (p->cpus_per_rank > 0) {
    /* cpus per rank are bound to, cores (or hardware threads) */
    unsigned want = p->hwthreads ? WEFTX_OMPI_HWTHREAD : WEFTX_OMPI_CORE;
    if (p->binding & WEFTX_OMPI_BIND_GIVEN) {
      if (WEFTX_OMPI_POLICY(p->binding) != want &&
          WEFTX_OMPI_POLICY(p->binding) != WEFTX_OMPI_BIND_NONE)
        return fail(c, WEFT_EINVAL,
                    "%d cpus per rank bind to %s, but the binding policy given "
                    "is another; use --bind-to %s",
                    p->cpus_per_rank, want == WEFTX_OMPI_CORE ? "cores" : "hardware threads",
                    want == WEFTX_OMPI_CORE ? "core" : "hwthread");
    } else {
      SET_BIND(p->binding, want);
    }
    if (p->cpus_per_rank > 1) {
      if (p->mapping & WEFTX_OMPI_MAP_GIVEN) {
        unsigned m = WEFTX_OMPI_POLICY(p->mapping);
        if (m == WEFTX_OMPI_HWTHREAD || (m == WEFTX_OMPI_CORE && !p->hwthreads))
          return fail(c, WEFT_EINVAL,
                      "%d cpus per rank cannot map by %s (Open MPI refuses a "
                      "level with one cpu); map by socket or numa, e.g. --map-by socket:PE=%d",
                      p->cpus_per_rank, m == WEFTX_OMPI_CORE ? "core" : "hwthread",
                      p->cpus_per_rank);
      } else {
        /* Open MPI 5 maps them by slot (prte_rmaps_base_set_default_mapping()) */
        SET_POLICY(p->mapping, c->v5 ? WEFTX_OMPI_SLOT : WEFTX_OMPI_NUMA);
        p->mapping |= WEFTX_OMPI_MAP_GIVEN;
      }
    }
  }
  if (p->pernode && !(p->mapping & WEFTX_OMPI_MAP_GIVEN)) {
    SET_POLICY(p->mapping, WEFTX_OMPI_PPR);
    p->mapping |= WEFTX_OMPI_MAP_GIVEN;
    p->ppr_n = 1;
    p->ppr_level = p->ppr_count = WEFTX_OMPI_NODE;
  }
  if (p->n_pernode > 0 && !(p->mapping & WEFTX_OMPI_MAP_GIVEN)) {
    SET_POLICY(p->mapping, WEFTX_OMPI_PPR);
    p->mapping |= WEFTX_OMPI_MAP_GIVEN;
    p->ppr_n = p->n_pernode;
    p->ppr_level = p->ppr_count = WEFTX_OMPI_NODE;
  }
  if (p->n_persocket > 0 && !(p->mapping & WEFTX_OMPI_MAP_GIVEN)) {
    SET_POLICY(p->mapping, WEFTX_OMPI_PPR);
    p->mapping |= WEFTX_OMPI_MAP_GIVEN;
    p->ppr_n = p->n_persocket;
    p->ppr_level = p->ppr_count = WEFTX_OMPI_SOCKET;
  }
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_NO_SCHEDULE_LOCAL, &v)))
    return rc;
  if (v)
    p->mapping |= WEFTX_OMPI_MAP_NO_USE_LOCAL;
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_NO_OVERSUBSCRIBE, &v)))
    return rc;
  if (v) {
    if ((p->mapping & WEFTX_OMPI_MAP_SUBSCRIBE) && !(p->mapping & WEFTX_OMPI_MAP_NO_OVERSUB))
      return fail(c, WEFT_EINVAL, "%s contradicts the OVERSUBSCRIBE already given; give one",
                  src(c, WEFTX_OMPI_MCA_NO_OVERSUBSCRIBE, s, sizeof(s)));
    p->mapping |= WEFTX_OMPI_MAP_NO_OVERSUB | WEFTX_OMPI_MAP_SUBSCRIBE;
  }
  if ((rc = mca_bool(c, WEFTX_OMPI_MCA_OVERSUBSCRIBE, &v)))
    return rc;
  if (v) {
    if ((p->mapping & WEFTX_OMPI_MAP_SUBSCRIBE) && (p->mapping & WEFTX_OMPI_MAP_NO_OVERSUB))
      return fail(c, WEFT_EINVAL, "%s contradicts the NOOVERSUBSCRIBE already given; give one",
                  src(c, WEFTX_OMPI_MCA_OVERSUBSCRIBE, s, sizeof(s)));
    p->mapping &= ~(unsigned)WEFTX_OMPI_MAP_NO_OVERSUB;
    p->mapping |= WEFTX_OMPI_MAP_SUBSCRIBE;
    p->binding |= WEFTX_OMPI_BIND_OVERLOAD;
  }
  return 0;
}

/* The job's own policies from the command line (orted_submit.c). */
static int job_open(const struct ctx *c, const weftx_ompi_cmdline *cl, weftx_ompi_policy *p)
{
  int rc, ppr[3] = {0, 0, 0};

  if (cl->map_by) {
    if ((rc = mapping_policy(c, p, cl->map_by, &p->job_mapping, ppr)))
      return rc;
  } else if (cl->pernode || cl->npernode > 0 || cl->npersocket > 0) {
    p->job_mapping = WEFTX_OMPI_PPR | WEFTX_OMPI_MAP_GIVEN;
    ppr[0] = cl->pernode ? 1 : cl->npernode > 0 ? cl->npernode : cl->npersocket;
    ppr[1] = ppr[2] = !cl->pernode && cl->npernode <= 0 ? WEFTX_OMPI_SOCKET : WEFTX_OMPI_NODE;
  }
  p->job_ppr_n = ppr[0];
  p->job_ppr_level = ppr[1];
  p->job_ppr_count = ppr[2];
  p->job_cpus_per_rank = cl->cpus_per_proc;
  if (cl->rank_by && (rc = ranking_policy(c, p->job_mapping, cl->rank_by, &p->job_ranking)))
    return rc;
  if (cl->bind_to && (rc = binding_policy(c, p, cl->bind_to, &p->job_binding)))
    return rc;
  if (cl->nolocal)
    p->job_mapping |= WEFTX_OMPI_MAP_NO_USE_LOCAL;
  if (cl->nooversubscribe)
    p->job_mapping |= WEFTX_OMPI_MAP_NO_OVERSUB;
  if (cl->oversubscribe) {
    p->job_mapping &= ~(unsigned)WEFTX_OMPI_MAP_NO_OVERSUB;
    p->job_mapping |= WEFTX_OMPI_MAP_SUBSCRIBE;
  }
  return 0;
}

int weftx_ompi_policy_make(const weftx_ompi_mca *m, const weftx_ompi_cmdline *cl,
                           weftx_ompi_policy *p, char *why, size_t whylen)
{
  struct ctx c = {m, why, whylen, 0, NULL, cl && cl->version >= 500};
  const char *rmaps = m->v[WEFTX_OMPI_MCA_RMAPS], *slots = m->v[WEFTX_OMPI_MCA_SET_SLOTS];
  char s[160];
  int rc;

  if (why && whylen)
    why[0] = '\0';
  memset(p, 0, sizeof(*p));
  p->version = cl && cl->version > 0 ? cl->version : 401;
  if (m->v[WEFTX_OMPI_MCA_RANKFILE])
    return fail(&c, WEFT_ENOTSUP, "%s '%s': rankfiles",
                src(&c, WEFTX_OMPI_MCA_RANKFILE, s, sizeof(s)), m->v[WEFTX_OMPI_MCA_RANKFILE]);
  if (m->v[WEFTX_OMPI_MCA_TOPO_FILE])
    return fail(&c, WEFT_ENOTSUP, "%s: mapping by a topology file instead of the hosts' own",
                src(&c, WEFTX_OMPI_MCA_TOPO_FILE, s, sizeof(s)));
  if ((rc = hwloc_open(&c, p)))
    return rc;
  /* orte_set_default_slots is registered between hwloc and rmaps: hwthreads when
   * hardware threads are cpus by then (not for --map-by hwthread) */
  weft__snprintf(p->set_slots, sizeof(p->set_slots), "%s",
                 slots && *slots ? slots
                 : p->hwthreads  ? "hwthreads"
                                 : "cores");
  if ((rc = rmaps_open(&c, p)) || (cl && (rc = job_open(&c, cl, p))) ||
      (rc = mca_bool(&c, WEFTX_OMPI_MCA_KEEP_FQDN, &p->keep_fqdn)))
    return rc;
  if (rmaps && *rmaps && rmaps[0] != '^') {
    /* a mapper chosen by name: only these are modelled */
    if (!strcmp(rmaps, "seq")) {
      SET_POLICY(p->mapping, WEFTX_OMPI_SEQ);
      p->mapping |= WEFTX_OMPI_MAP_GIVEN;
    } else if (strcmp(rmaps, "round_robin") && strcmp(rmaps, "ppr")) {
      return fail(&c, WEFT_ENOTSUP, "%s '%s': choosing Open MPI's mapper '%s'",
                  src(&c, WEFTX_OMPI_MCA_RMAPS, s, sizeof(s)), rmaps, rmaps);
    }
  }
  if (WEFTX_OMPI_POLICY(p->mapping) == WEFTX_OMPI_SEQ ||
      WEFTX_OMPI_POLICY(p->job_mapping) == WEFTX_OMPI_SEQ)
    return fail(&c, WEFT_ENOTSUP, "%s: the sequential mapper (one rank per hostfile line)",
                src(&c, rmaps ? WEFTX_OMPI_MCA_RMAPS : WEFTX_OMPI_MCA_MAPPING, s, sizeof(s)));
  return 0;
}

/* ---- the policy on weft-rank's command line ------------------------------------------ */

int weftx_ompi_policy_format(const weftx_ompi_policy *p, char *buf, size_t len)
{
  return weft__snprintf(buf, len, "%x/%x/%x/%d/%d/%d/%d/%d/%d/%d/%d/%d/%s/%s", p->mapping,
                        p->ranking, p->binding, p->ppr_n, p->ppr_level, p->ppr_count,
                        p->cpus_per_rank, p->hwthreads, p->pernode, p->n_pernode, p->n_persocket,
                        p->version, p->set_slots, p->cpu_list);
}

int weftx_ompi_policy_parse(const char *s, weftx_ompi_policy *p)
{
  char buf[512], *f[14], *end;
  long v[12];
  int n = 0, i;

  memset(p, 0, sizeof(*p));
  if (!s || weft__snprintf(buf, sizeof(buf), "%s", s))
    return WEFT_EPARSE;
  /* fields between '/', empty ones kept */
  f[n++] = buf;
  for (char *q = buf; *q; q++)
    if (*q == '/') {
      if (n == 14)
        return WEFT_EPARSE;
      *q = '\0';
      f[n++] = q + 1;
    }
  if (n != 14)
    return WEFT_EPARSE;
  for (i = 0; i < 12; i++) {
    v[i] = strtol(f[i], &end, i < 3 ? 16 : 10);
    if (end == f[i] || *end || v[i] < 0 || v[i] > 0xfffff)
      return WEFT_EPARSE;
  }
  p->mapping = (unsigned)v[0];
  p->ranking = (unsigned)v[1];
  p->binding = (unsigned)v[2];
  p->ppr_n = (int)v[3];
  p->ppr_level = (int)v[4];
  p->ppr_count = (int)v[5];
  p->cpus_per_rank = (int)v[6];
  p->hwthreads = (int)v[7];
  p->pernode = (int)v[8];
  p->n_pernode = (int)v[9];
  p->n_persocket = (int)v[10];
  p->version = (int)v[11];
  if (weft__snprintf(p->set_slots, sizeof(p->set_slots), "%s", f[12]) ||
      weft__snprintf(p->cpu_list, sizeof(p->cpu_list), "%s", f[13]))
    return WEFT_EPARSE;
  return 0;
}

const char *weftx_ompi_level_name(int level)
{
  static const char *const names[] = {"?",      "node",     "board",   "numa",
                                      "socket", "l3cache",  "l2cache", "l1cache",
                                      "core",   "hwthread", "slot"};
  if (level == WEFTX_OMPI_SEQ)
    return "seq";
  if (level == WEFTX_OMPI_PPR)
    return "ppr";
  return level >= 1 && level <= 10 ? names[level] : "?";
}

int weftx_ompi_describe(const weftx_ompi_policy *p, char *buf, size_t len)
{
  char map[64], pe[24] = "", bind[64];
  unsigned m = WEFTX_OMPI_POLICY(p->mapping), b = WEFTX_OMPI_POLICY(p->binding);

  if (p->cpus_per_rank > 0)
    weft__snprintf(pe, sizeof(pe), ":PE=%d", p->cpus_per_rank);
  if (m == WEFTX_OMPI_PPR)
    weft__snprintf(map, sizeof(map), "ppr:%d:%s%s", p->ppr_n, weftx_ompi_level_name(p->ppr_level),
                   pe);
  else
    weft__snprintf(map, sizeof(map), "%s%s", m ? weftx_ompi_level_name((int)m) : "default", pe);
  if (b == WEFTX_OMPI_BIND_CPUSET)
    weft__snprintf(bind, sizeof(bind), "cpu-list %s%s", p->cpu_list,
                   p->binding & WEFTX_OMPI_BIND_ORDERED ? ":ordered" : "");
  else
    weft__snprintf(bind, sizeof(bind), "%s",
                   b == WEFTX_OMPI_BIND_NONE ? "none"
                   : b                       ? weftx_ompi_level_name((int)b)
                                             : "default");
  return weft__snprintf(
    buf, len, "map-by %s, rank-by %s%s, bind-to %s%s%s", map,
    weftx_ompi_level_name((int)WEFTX_OMPI_POLICY(p->ranking)),
    p->ranking & WEFTX_OMPI_RANK_FILL ? ":fill" : "", bind,
    (p->binding & WEFTX_OMPI_BIND_OVERLOAD) && b != WEFTX_OMPI_BIND_NONE ? ":overload-allowed" : "",
    p->hwthreads ? ", hardware threads as cpus" : "");
}

/* ---- weft's tools: the same grammar, with weft's words ----------------------------- */

int weftx_policy_gpu(const char *map_by)
{
  weftx_ompi_mca m;
  weftx_ompi_policy scratch;
  struct ctx c = {&m, NULL, 0, 1, NULL, 0};
  unsigned mapping = 0;
  int ppr[3] = {0, 0, 0};

  if (!map_by)
    return -1;
  memset(&m, 0, sizeof(m));
  memset(&scratch, 0, sizeof(scratch));
  if (mapping_policy(&c, &scratch, map_by, &mapping, ppr) != 0)
    return 0; /* not weft's: Open MPI refuses it, or its model does */
  return WEFTX_OMPI_POLICY(mapping) == WEFTX_OMPI_GPU ||
         (WEFTX_OMPI_POLICY(mapping) == WEFTX_OMPI_PPR && ppr[1] == WEFTX_OMPI_GPU);
}

int weftx_policy_parse(weftx_policy *p, const char *map_by, const char *bind_to, char *why,
                       size_t whylen)
{
  weftx_ompi_mca m;
  weftx_ompi_policy scratch;
  unsigned mapping = 0, binding = 0;
  int ppr[3] = {0, 0, 0}, rc, bad_pe = 0;
  struct ctx c = {&m, why, whylen, 1, &bad_pe, 0};

  if (why && whylen)
    why[0] = '\0';
  if (!p)
    return WEFT_EINVAL;
  memset(&m, 0, sizeof(m));
  memset(&scratch, 0, sizeof(scratch));
  m.from[WEFTX_OMPI_MCA_MAPPING] = "--map-by";
  m.from[WEFTX_OMPI_MCA_BINDING] = "--bind-to";
  p->map_by = WEFTX_MAP_AUTO;
  p->bind_to = WEFTX_BIND_DEFAULT;
  p->ppr_n = 0;
  p->pe = 0;
  p->map_words = map_by;
  p->bind_words = bind_to;
  if (map_by && (rc = mapping_policy(&c, &scratch, map_by, &mapping, ppr)))
    return rc;
  if (WEFTX_OMPI_POLICY(mapping) == WEFTX_OMPI_GPU ||
      (WEFTX_OMPI_POLICY(mapping) == WEFTX_OMPI_PPR && ppr[1] == WEFTX_OMPI_GPU)) {
    if (bad_pe)
      return fail(&c, WEFT_EINVAL, "--map-by '%s': PE=n wants a whole number from 1", map_by);
    p->map_by = WEFTX_MAP_GPU;
    p->ppr_n = ppr[1] == WEFTX_OMPI_GPU ? ppr[0] : 0;
    p->pe = scratch.cpus_per_rank;
    if (mapping & WEFTX_OMPI_MAP_SUBSCRIBE)
      p->oversubscribe = !(mapping & WEFTX_OMPI_MAP_NO_OVERSUB);
  } else if (map_by) {
    p->map_by = WEFTX_MAP_CPU;
  }
  if (bind_to && (rc = binding_policy(&c, &scratch, bind_to, &binding)))
    return rc;
  /* qualifiers alone (":overload-allowed") qualify the default binding */
  switch (binding & WEFTX_OMPI_BIND_GIVEN ? WEFTX_OMPI_POLICY(binding) : 0) {
  case 0: break;
  case WEFTX_OMPI_GPU: p->bind_to = WEFTX_BIND_GPU_LOCAL; break;
  case WEFTX_OMPI_CORE: p->bind_to = WEFTX_BIND_CORE; break;
  case WEFTX_OMPI_NUMA: p->bind_to = WEFTX_BIND_NUMA; break;
  case WEFTX_OMPI_SOCKET: p->bind_to = WEFTX_BIND_PACKAGE; break;
  case WEFTX_OMPI_BIND_NONE: p->bind_to = WEFTX_BIND_NONE; break;
  default: p->bind_to = WEFTX_BIND_OTHER; break;
  }
  if (p->bind_to == WEFTX_BIND_GPU_LOCAL && p->map_by == WEFTX_MAP_CPU)
    return fail(&c, WEFT_EINVAL,
                "--bind-to gpu-local needs --map-by gpu (ranks of --map-by %s "
                "are Open MPI's and have no GPU of their own); use --bind-to core, numa or socket",
                map_by);
  if (p->bind_to == WEFTX_BIND_OTHER && p->map_by == WEFTX_MAP_GPU)
    return fail(&c, WEFT_EINVAL,
                "--bind-to %s with --map-by %s: a rank next to its GPU binds to "
                "gpu-local, core, numa, socket or none",
                bind_to, map_by);
  WEFT__LOG(MAP, "policy map-by '%s' bind-to '%s': map %d bind %d ppr %d pe %d",
            map_by ? map_by : "(default)", bind_to ? bind_to : "(default)", (int)p->map_by,
            (int)p->bind_to, p->ppr_n, p->pe);
  return 0;
}
