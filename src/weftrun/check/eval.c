/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The evaluation of weftrun --check (check.h): every host's facts, compared
 * with the other hosts' (the most common value is the norm, and a host that
 * differs is named) and with the job's plan, become one cell per host and
 * column and one line per problem that says what to change. Pure: the input
 * is what the agents reported and what weftrun planned.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "check.h"

#define MAX_PAIR_PROBLEMS 20 /* failing pairs spelt out one by one; the rest summed up */

#define COL_NAME(name, word) word,
static const char *const col_names[] = {WR_CHECK_COLUMNS(COL_NAME) NULL};
#undef COL_NAME

const char *wr_check_col_name(int col)
{
  return col >= 0 && col < WR_CHECK_NCOLS ? col_names[col] : "?";
}

const char *wr_check_status_name(wr_check_status s)
{
  switch (s) {
  case WR_CHECK_OK: return "OK";
  case WR_CHECK_WARN: return "WARN";
  case WR_CHECK_FAIL: return "FAIL";
  case WR_CHECK_NONE: break;
  }
  return "-";
}

const char *wr_check_fact_get(const wr_check_host *h, const char *key)
{
  for (int i = 0; i < h->nfacts; i++)
    if (!strcmp(h->facts[i].key, key))
      return h->facts[i].value;
  return NULL;
}

const wr_check_cell *wr_check_cell_at(const wr_check_result *r, int host, int col)
{
  return &r->cells[(size_t)host * WR_CHECK_NCOLS + (size_t)col];
}

/* ---- Building the result ---------------------------------------------------- */

typedef struct eval {
  const wr_check_input *in;
  wr_check_result *r;
  int cap;
  int nomem;
} eval;

static wr_check_cell *cell_of(eval *e, int host, int col)
{
  return &e->r->cells[(size_t)host * WR_CHECK_NCOLS + (size_t)col];
}

static void cell(eval *e, int host, int col, wr_check_status s, const char *fmt, ...)
  WEFT_PRINTF(5, 6);
static void cell(eval *e, int host, int col, wr_check_status s, const char *fmt, ...)
{
  wr_check_cell *c = cell_of(e, host, col);
  va_list ap;
  c->status = s;
  va_start(ap, fmt);
  vsnprintf(c->value, sizeof(c->value), fmt, ap);
  va_end(ap);
}

/* Raise a cell's status to at least \p s (its value stays). */
static void worsen(eval *e, int host, int col, wr_check_status s)
{
  wr_check_cell *c = cell_of(e, host, col);
  if (c->status < s)
    c->status = s;
}

static void problem(eval *e, wr_check_status s, int col, int host, const char *fmt, ...)
  WEFT_PRINTF(5, 6);
static void problem(eval *e, wr_check_status s, int col, int host, const char *fmt, ...)
{
  wr_check_result *r = e->r;
  va_list ap;
  if (r->nproblems == e->cap) {
    int cap = e->cap ? 2 * e->cap : 16;
    wr_check_problem *p = realloc(r->problems, (size_t)cap * sizeof(*p));
    if (!p) {
      e->nomem = 1;
      return;
    }
    r->problems = p;
    e->cap = cap;
  }
  wr_check_problem *p = &r->problems[r->nproblems++];
  p->status = s;
  p->col = col;
  p->host = host;
  va_start(ap, fmt);
  vsnprintf(p->text, sizeof(p->text), fmt, ap);
  va_end(ap);
  if (host >= 0)
    worsen(e, host, col, s);
}

static const wr_check_host *H(const eval *e, int h) { return &e->in->hosts[h]; }

static int usable(const eval *e, int h) { return H(e, h)->answered; }

/* "1.5G", "512M" */
static void bytes(char *buf, size_t len, double b)
{
  static const char units[] = "KMGTP";
  const char *u = NULL;
  for (const char *p = units; b >= 1024 && *p; p++) {
    b /= 1024;
    u = p;
  }
  if (!u)
    snprintf(buf, len, "%.0fB", b);
  else
    snprintf(buf, len, b < 10 ? "%.1f%c" : "%.0f%c", b, *u);
}

/* The first word of \p s into \p w; the rest after spaces is returned. */
static const char *word(const char *s, char *w, size_t len)
{
  size_t n = strcspn(s, " ");
  snprintf(w, len, "%.*s", (int)(n < len ? n : len - 1), s);
  s += n;
  while (*s == ' ')
    s++;
  return s;
}

/* "vnode2", "vnode2 and vnode5", "vnode2, vnode5 and 3 more" */
static void names(const eval *e, const int *idx, int k, char *buf, size_t len)
{
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < k && i < 3 && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s",
                            i == 0       ? ""
                            : i == k - 1 ? " and "
                                         : ", ",
                            H(e, idx[i])->name);
  if (k > 3 && off < len)
    snprintf(buf + off, len - off, " and %d more", k - 3);
}

/* ---- The most common value, and who differs ------------------------------ */

typedef struct tally {
  const char **value; /* per host: its value, NULL when it has none */
  const char *common; /* the most common value */
  int ncommon, nwith; /* hosts with it, hosts with any value */
  int tie;            /* another value is as common */
} tally;

static int tally_make(eval *e, tally *t, const char *(*get)(const eval *, int, void *), void *arg)
{
  int n = e->in->nhosts, best = 0;
  memset(t, 0, sizeof(*t));
  if (!(t->value = calloc((size_t)n + 1, sizeof(*t->value)))) {
    e->nomem = 1;
    return -1;
  }
  for (int h = 0; h < n; h++)
    if (usable(e, h) && (t->value[h] = get(e, h, arg)))
      t->nwith++;
  /* O(hosts x distinct values): each first occurrence counts the rest */
  for (int h = 0; h < n; h++) {
    if (!t->value[h])
      continue;
    int first = 1, c = 0;
    for (int g = 0; g < h && first; g++)
      if (t->value[g] && !strcmp(t->value[g], t->value[h]))
        first = 0;
    if (!first)
      continue;
    for (int g = h; g < n; g++)
      if (t->value[g] && !strcmp(t->value[g], t->value[h]))
        c++;
    if (c > best) {
      best = c;
      t->common = t->value[h];
      t->tie = 0;
    } else if (c == best) {
      t->tie = 1;
    }
  }
  t->ncommon = best;
  return 0;
}

/* Each value other than the common one, with the hosts that have it: \p fn is
 * called once per such value with those hosts' indexes. */
static void tally_odd(eval *e, const tally *t,
                      void (*fn)(eval *, const tally *, const char *, const int *, int, void *),
                      void *arg)
{
  int n = e->in->nhosts;
  int *idx = malloc(((size_t)n + 1) * sizeof(*idx));
  if (!idx) {
    e->nomem = 1;
    return;
  }
  for (int h = 0; h < n; h++) {
    const char *v = t->value[h];
    if (!v || !strcmp(v, t->common))
      continue;
    int first = 1, k = 0;
    for (int g = 0; g < h && first; g++)
      if (t->value[g] && !strcmp(t->value[g], v))
        first = 0;
    if (!first)
      continue;
    for (int g = h; g < n; g++)
      if (t->value[g] && !strcmp(t->value[g], v))
        idx[k++] = g;
    fn(e, t, v, idx, k, arg);
  }
  free(idx);
}

static const char *get_fact(const eval *e, int h, void *key)
{
  return wr_check_fact_get(H(e, h), key);
}

/* "the other 3 hosts have 2.28.9", or, with no majority, "2.28.9 on vnode0 and vnode1" */
static void others(const eval *e, const tally *t, char *buf, size_t len)
{
  if (!t->tie) {
    if (t->ncommon == 1)
      snprintf(buf, len, "the other host has %s", t->common);
    else
      snprintf(buf, len, "the other %d hosts have %s", t->ncommon, t->common);
    return;
  }
  int *idx = malloc(((size_t)e->in->nhosts + 1) * sizeof(*idx)), k = 0;
  char list[200];
  if (!idx) {
    snprintf(buf, len, "%s elsewhere", t->common);
    return;
  }
  for (int h = 0; h < e->in->nhosts; h++)
    if (t->value[h] && !strcmp(t->value[h], t->common))
      idx[k++] = h;
  names(e, idx, k, list, sizeof(list));
  snprintf(buf, len, "%s on %s", t->common, list);
  free(idx);
}

/* ---- REACH -------------------------------------------------------------- */

static void check_reach(eval *e)
{
  const char *eng = e->in->engine ? e->in->engine : "the engine";
  for (int h = 0; h < e->in->nhosts; h++) {
    const wr_check_host *w = H(e, h);
    const char *why = w->engine_why && *w->engine_why ? w->engine_why : NULL;
    if (!w->answered) {
      cell(e, h, WR_CHECK_REACH, WR_CHECK_FAIL, "no answer");
      problem(e, WR_CHECK_FAIL, WR_CHECK_REACH, h,
              "%s: not reached through %s%s%s%s; check that it is up and that %s can start "
              "processes there, or leave it out of the job",
              w->name, eng, why ? " (" : "", why ? why : "", why ? ")" : "", eng);
    } else if (!w->complete) {
      cell(e, h, WR_CHECK_REACH, WR_CHECK_FAIL, "ended early");
      problem(e, WR_CHECK_FAIL, WR_CHECK_REACH, h,
              "%s: weft-rank --check ended there before it had reported everything%s%s%s; run "
              "'weftrun -v --check -H %s' to see its messages",
              w->name, why ? " (" : "", why ? why : "", why ? ")" : "", w->name);
    } else if (w->start_s > WR_CHECK_START_WARN_S) {
      cell(e, h, WR_CHECK_REACH, WR_CHECK_WARN, "%.1f s", w->start_s);
      problem(e, WR_CHECK_WARN, WR_CHECK_REACH, h,
              "%s: %s took %.1f s to start a process there (more than %.0f s); a slow ssh "
              "login (DNS, a login script) delays every job",
              w->name, eng, w->start_s, WR_CHECK_START_WARN_S);
    } else {
      cell(e, h, WR_CHECK_REACH, WR_CHECK_OK, "%.2f s", w->start_s);
    }
  }
}

/* Checks that ran out of time on a host (timeout COLUMN SECONDS). */
static void check_timeouts(eval *e)
{
  for (int h = 0; h < e->in->nhosts; h++) {
    const wr_check_host *w = H(e, h);
    for (int i = 0; i < w->nfacts; i++) {
      char colw[32];
      if (strcmp(w->facts[i].key, WT_CK_TIMEOUT))
        continue;
      const char *secs = word(w->facts[i].value, colw, sizeof(colw));
      for (int c = 0; c < WR_CHECK_NCOLS; c++)
        if (!strcmp(colw, col_names[c])) {
          cell(e, h, c, WR_CHECK_FAIL, "no answer");
          problem(e, WR_CHECK_FAIL, c, h,
                  "%s: the %s check did not finish within %s s there "
                  "(a hung driver, file system or metadata server?)",
                  w->name, colw, secs);
        }
    }
  }
}

static int timed_out(const eval *e, int h, int col)
{
  const wr_check_host *w = H(e, h);
  size_t n = strlen(col_names[col]);
  for (int i = 0; i < w->nfacts; i++)
    if (!strcmp(w->facts[i].key, WT_CK_TIMEOUT) && !strncmp(w->facts[i].value, col_names[col], n) &&
        w->facts[i].value[n] == ' ')
      return 1;
  return 0;
}

/* ---- VERSIONS ------------------------------------------------------------ */

typedef struct component {
  const char *key, *label;
} component;

static const component components[] = {
  {WT_CK_VER_WEFT, "weft"},
  {WT_CK_VER_OMPI, "Open MPI"},
  {WT_CK_VER_HWLOC, "hwloc"},
  {WT_CK_VER_NCCL, "NCCL"},
  {WT_CK_VER_CUDART, "CUDA runtime"},
  {WT_CK_VER_CUDA, "CUDA driver library"},
  {WT_CK_VER_DRIVER, "NVIDIA driver"},
  {NULL, NULL},
};

static void odd_version(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  const component *c = arg;
  char who[200], rest[300];
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_FAIL, WR_CHECK_VERSIONS, idx[0],
          "%s: %s %s, %s; install the same %s "
          "on every host",
          who, c->label, v, rest, c->label);
  /* the cell names the first component that differs (its value was weft's until then) */
  for (int i = 0; i < k; i++) {
    wr_check_cell *cl = cell_of(e, idx[i], WR_CHECK_VERSIONS);
    if (!strncmp(cl->value, "weft ", 5) || !cl->value[0])
      cell(e, idx[i], WR_CHECK_VERSIONS, WR_CHECK_FAIL, "%s %s", c->label, v);
  }
}

static void check_versions(eval *e)
{
  const char *mine = e->in->version;
  for (int h = 0; h < e->in->nhosts; h++) {
    const char *v = wr_check_fact_get(H(e, h), WT_CK_VER_WEFT);
    if (usable(e, h) && v && !timed_out(e, h, WR_CHECK_VERSIONS))
      cell(e, h, WR_CHECK_VERSIONS, WR_CHECK_OK, "weft %s", v);
  }
  for (const component *c = components; c->key; c++) {
    tally t;
    if (tally_make(e, &t, get_fact, (void *)c->key))
      return;
    if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
      tally_odd(e, &t, odd_version, (void *)c);
    /* weft-rank's weft must be weftrun's (one contract between them) */
    if (c == components && mine && t.nwith > 0 && t.ncommon == t.nwith && strcmp(t.common, mine)) {
      int *idx = calloc((size_t)e->in->nhosts + 1, sizeof(*idx)), k = 0;
      char who[200];
      if (!idx) {
        e->nomem = 1;
        free(t.value);
        return;
      }
      for (int h = 0; h < e->in->nhosts; h++)
        if (t.value[h])
          idx[k++] = h;
      names(e, idx, k, who, sizeof(who));
      problem(e, WR_CHECK_FAIL, WR_CHECK_VERSIONS, idx[0],
              "%s: weft %s, but weftrun here is "
              "weft %s; install the same weft where weftrun runs and on every host",
              who, t.common, mine);
      for (int i = 0; i < k; i++)
        cell(e, idx[i], WR_CHECK_VERSIONS, WR_CHECK_FAIL, "weft %s", t.common);
      free(idx);
    }
    free(t.value);
  }
}

/* ---- PROGRAM ------------------------------------------------------------ */

/* "ELF64 x86-64" of an "elf CLASS MACHINE PATH" value, into a buffer per host */
typedef struct archs {
  char (*v)[48];
} archs;

static const char *get_arch(const eval *e, int h, void *arg)
{
  const archs *a = arg;
  return a->v[h][0] ? a->v[h] : NULL;
}

static void odd_arch(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  char who[200], rest[300];
  (void)arg;
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, idx[0],
          "%s: the program is %s there, %s; "
          "install a build for every host's architecture",
          who, v, rest);
}

/* The MPI each host's program was built with against the engine's: a program of one MPI
 * started by the other's launcher would run as singletons of one rank each. */
static void check_mpi(eval *e)
{
  const char *eng = e->in->engine ? e->in->engine : "the engine";
  int hydra = !strcmp(eng, "mpiexec.hydra");
  for (int h = 0; h < e->in->nhosts; h++) {
    const wr_check_host *w = H(e, h);
    const char *v = usable(e, h) ? wr_check_fact_get(w, WT_CK_MPI) : NULL;
    char kind[32], lib[64];
    if (!v || timed_out(e, h, WR_CHECK_PROGRAM))
      continue;
    word(word(v, kind, sizeof(kind)), lib, sizeof(lib));
    int ompi = !strcmp(kind, "openmpi");
    int mpich = !strcmp(kind, "mpich") || !strcmp(kind, "mpich-family") || !strcmp(kind, "intel");
    if (!(hydra && ompi) && !(!hydra && mpich))
      continue;
    cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_FAIL, "%s build", ompi ? "Open MPI" : "MPICH");
    problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, h,
            "%s: the program there was built with %s (%s), which %s would start as "
            "singletons of one rank each; install the %s build there%s",
            w->name,
            ompi                     ? "Open MPI"
            : !strcmp(kind, "mpich") ? "MPICH"
            : !strcmp(kind, "intel") ? "Intel MPI"
                                     : "an MPICH-family MPI",
            lib, eng, ompi ? "MPICH" : "Open MPI",
            hydra ? ", or run it with --engine mpirun" : ", or run it with --engine hydra");
  }
}

static void check_program(eval *e)
{
  int n = e->in->nhosts;
  archs a = {calloc((size_t)n + 1, sizeof(*a.v))};
  if (!a.v) {
    e->nomem = 1;
    return;
  }
  for (int h = 0; h < n; h++) {
    const wr_check_host *w = H(e, h);
    const char *v = usable(e, h) ? wr_check_fact_get(w, WT_CK_PROGRAM) : NULL;
    char what[16], f1[256], f2[1024];
    if (!v || timed_out(e, h, WR_CHECK_PROGRAM))
      continue;
    const char *rest = word(v, what, sizeof(what));
    rest = word(rest, f1, sizeof(f1));
    if (!strcmp(what, "elf")) {
      char mach[64];
      rest = word(rest, mach, sizeof(mach));
      snprintf(a.v[h], sizeof(a.v[h]), "%.15s %.30s", f1, mach);
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_OK, "%s", a.v[h]);
    } else if (!strcmp(what, "script")) {
      const char *b = strrchr(f1, '/');
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_OK, "script (%s)", b ? b + 1 : f1);
    } else if (!strcmp(what, "missing")) {
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_FAIL, "missing");
      problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, h,
              "%s: %s is not there (not found %s); "
              "install it there or give a path every host has",
              w->name, f1, strchr(f1, '/') ? "at that path" : "on PATH");
    } else if (!strcmp(what, "noexec")) {
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_FAIL, "not executable");
      problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, h,
              "%s: %s is there but not executable "
              "(chmod +x, or a noexec mount)",
              w->name, f1);
    } else if (!strcmp(what, "nointerp")) {
      word(rest, f2, sizeof(f2));
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_FAIL, "no interpreter");
      problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, h,
              "%s: %s starts with #!%s, which is not "
              "there; install it",
              w->name, f2, f1);
    } else if (!strcmp(what, "noscript")) {
      cell(e, h, WR_CHECK_PROGRAM, WR_CHECK_FAIL, "script missing");
      problem(e, WR_CHECK_FAIL, WR_CHECK_PROGRAM, h,
              "%s: the script %s is not there; copy "
              "it to every host (or to a shared file system)",
              w->name, f1);
    }
  }
  tally t;
  if (!tally_make(e, &t, get_arch, &a)) {
    if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
      tally_odd(e, &t, odd_arch, NULL);
    free(t.value);
  }
  free(a.v);
  check_mpi(e);
}

/* ---- GPUS --------------------------------------------------------------- */

static int as_int(const char *s, long *v)
{
  char *end;
  if (!s)
    return 0;
  *v = strtol(s, &end, 10);
  return end != s;
}

/* GPUs of a host: NVML's count when NVML answered, else the PCI bus's; -1 unknown */
static long gpus_of(const eval *e, int h)
{
  long v;
  if (as_int(wr_check_fact_get(H(e, h), WT_CK_GPU_NVML), &v) ||
      as_int(wr_check_fact_get(H(e, h), WT_CK_GPU_PCI), &v))
    return v;
  return -1;
}

typedef struct counts {
  char (*v)[24];
} counts;

static const char *get_count(const eval *e, int h, void *arg)
{
  const counts *c = arg;
  return c->v[h][0] ? c->v[h] : NULL;
}

static void odd_count(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  char who[200], rest[300];
  (void)arg;
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, idx[0],
          "%s: %s GPUs, %s; a GPU may be missing "
          "(nvidia-smi), or the hosts are of different kinds",
          who, v, rest);
}

static void odd_model(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  char who[200], rest[300];
  (void)arg;
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, idx[0],
          "%s: GPUs %s, %s; the slowest GPU sets "
          "the pace of the whole job",
          who, v, rest);
}

static void gpu_host(eval *e, int h)
{
  const wr_check_host *w = H(e, h);
  const char *nvml = wr_check_fact_get(w, WT_CK_GPU_NVML);
  const char *model = wr_check_fact_get(w, WT_CK_GPU_MODEL);
  long pci = -1, nv = -1, n = gpus_of(e, h);
  as_int(wr_check_fact_get(w, WT_CK_GPU_PCI), &pci);
  int have_nvml = as_int(nvml, &nv);
  if (n < 0)
    return;
  if (n == 0)
    cell(e, h, WR_CHECK_GPUS, WR_CHECK_OK, "none");
  else if (model && *model)
    cell(e, h, WR_CHECK_GPUS, WR_CHECK_OK, "%ld %s", n,
         !strncmp(model, "NVIDIA ", 7) ? model + 7 : model);
  else
    cell(e, h, WR_CHECK_GPUS, WR_CHECK_OK, "%ld%s", n, have_nvml ? "" : " (no NVML)");
  if (w->planned_gpus > n)
    problem(
      e, WR_CHECK_FAIL, WR_CHECK_GPUS, h,
      "%s: the plan puts %d ranks there, each on a "
      "GPU of its own, and it has %ld GPUs; lower -np or -N, give the host's slots (-H %s:%ld), "
      "or fix the host",
      w->name, w->planned_gpus, n, w->name, n);
  if (have_nvml && pci >= 0 && nv != pci)
    problem(e, WR_CHECK_FAIL, WR_CHECK_GPUS, h,
            "%s: NVML sees %ld GPUs, the PCI bus %ld: a "
            "GPU has fallen off the bus or lost its driver; look at nvidia-smi and dmesg (Xid)",
            w->name, nv, pci);
  int persist_off = 0;
  for (int i = 0; i < w->nfacts; i++) {
    const char *k = w->facts[i].key, *v = w->facts[i].value;
    char idx[16], a[64];
    const char *rest = word(v, idx, sizeof(idx));
    if (!strcmp(k, WT_CK_GPU_ECC)) {
      problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, h,
              "%s: GPU %s has had %s uncorrected ECC "
              "errors since the driver loaded; drain it and look at 'nvidia-smi -q -d ECC'",
              w->name, idx, rest);
    } else if (!strcmp(k, WT_CK_GPU_RETIRED)) {
      problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, h,
              "%s: GPU %s has retired memory pages "
              "waiting for a reset; reset the GPU (nvidia-smi -r) or reboot the host",
              w->name, idx);
    } else if (!strcmp(k, WT_CK_GPU_BUSY)) {
      rest = word(rest, a, sizeof(a));
      problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, h,
              "%s: GPU %s is in use by pid %s (%s); "
              "is another job still running there?",
              w->name, idx, a, *rest ? rest : "?");
    } else if (!strcmp(k, WT_CK_GPU_PERSIST)) {
      long p;
      if (as_int(v, &p) && p > 0)
        persist_off = (int)p;
    }
  }
  if (persist_off)
    problem(e, WR_CHECK_WARN, WR_CHECK_GPUS, h,
            "%s: persistence mode is off on %d GPU%s, so "
            "every job start waits for the driver to initialise them; 'nvidia-smi -pm 1' (or "
            "nvidia-persistenced)",
            w->name, persist_off, persist_off == 1 ? "" : "s");
}

static void check_gpus(eval *e)
{
  int n = e->in->nhosts;
  counts c = {calloc((size_t)n + 1, sizeof(*c.v))};
  if (!c.v) {
    e->nomem = 1;
    return;
  }
  for (int h = 0; h < n; h++) {
    if (!usable(e, h) || timed_out(e, h, WR_CHECK_GPUS))
      continue;
    gpu_host(e, h);
    long g = gpus_of(e, h);
    if (g >= 0)
      snprintf(c.v[h], sizeof(c.v[h]), "%ld", g);
  }
  tally t;
  if (!tally_make(e, &t, get_count, &c)) {
    if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
      tally_odd(e, &t, odd_count, NULL);
    free(t.value);
  }
  if (!tally_make(e, &t, get_fact, (void *)WT_CK_GPU_MODEL)) {
    if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
      tally_odd(e, &t, odd_model, NULL);
    free(t.value);
  }
  free(c.v);
}

/* ---- NET ------------------------------------------------------------------ */

static void odd_mtu(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  const char *ifname = arg;
  char who[200], rest[300];
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_WARN, WR_CHECK_NET, idx[0],
          "%s: %s has MTU %s, %s; give it the same "
          "MTU on every host ('ip link set %s mtu %s'): mismatched MTUs drop large packets",
          who, ifname, v, rest, ifname, t->common);
}

static void odd_type(eval *e, const tally *t, const char *v, const int *idx, int k, void *arg)
{
  char who[200], rest[300];
  (void)arg;
  names(e, idx, k, who, sizeof(who));
  others(e, t, rest, sizeof(rest));
  problem(e, WR_CHECK_WARN, WR_CHECK_NET, idx[0],
          "%s: machine type %s, %s; NCCL's settings "
          "(--nccl-preset) are one family's",
          who, v, rest);
}

static const char *get_type(const eval *e, int h, void *arg)
{
  char(*types)[64] = arg;
  return types[h][0] ? types[h] : NULL;
}

static void check_net(eval *e)
{
  const wr_check_input *in = e->in;
  const char *ifname = in->ifname && *in->ifname ? in->ifname : NULL;
  int n = in->nhosts;
  for (int h = 0; h < n; h++) {
    const wr_check_host *w = H(e, h);
    const char *nif = wr_check_fact_get(w, WT_CK_NET_IF);
    const char *mtu = wr_check_fact_get(w, WT_CK_NET_MTU);
    const char *route = wr_check_fact_get(w, WT_CK_NET_ROUTE);
    const char *gv = wr_check_fact_get(w, WT_CK_NET_GVNIC);
    const char *gce = wr_check_fact_get(w, WT_CK_GCE);
    if (!usable(e, h) || timed_out(e, h, WR_CHECK_NET))
      continue;
    if (ifname && nif && !strncmp(nif, "missing ", 8)) {
      cell(e, h, WR_CHECK_NET, WR_CHECK_FAIL, "no %s", ifname);
      problem(e, WR_CHECK_FAIL, WR_CHECK_NET, h,
              "%s: has no interface %s, which the job "
              "uses (chosen on this host for Open MPI and NCCL); give the hosts' interfaces one "
              "name, or set NCCL_SOCKET_IFNAME and --mca btl_tcp_if_include to a subnet",
              w->name, ifname);
      continue;
    }
    if (ifname && nif)
      cell(e, h, WR_CHECK_NET, WR_CHECK_OK, "%s%s%s%s", ifname, mtu ? " mtu " : "", mtu ? mtu : "",
           gce && gv ? (!strcmp(gv, "yes") ? " gVNIC" : " not gVNIC") : "");
    else if (mtu)
      cell(e, h, WR_CHECK_NET, WR_CHECK_OK, "mtu %s", mtu);
    if (ifname && route && *route && strcmp(route, ifname))
      problem(e, WR_CHECK_WARN, WR_CHECK_NET, h,
              "%s: reaches the master through %s, not %s: "
              "its traffic to the master leaves by another interface than the job's; check "
              "its routes ('ip route get MASTER_ADDR')",
              w->name, route, ifname);
    for (int i = 0; i < w->nfacts; i++)
      if (!strcmp(w->facts[i].key, WT_CK_GCE_WARN))
        problem(e, WR_CHECK_WARN, WR_CHECK_NET, h, "%s: %s", w->name, w->facts[i].value);
    const char *port = wr_check_fact_get(w, WT_CK_PORT);
    char p[16], state[16];
    if (port) {
      const char *rest = word(word(port, p, sizeof(p)), state, sizeof(state));
      if (!strcmp(state, "taken")) {
        char pid[24];
        rest = word(rest, pid, sizeof(pid));
        cell(e, h, WR_CHECK_NET, WR_CHECK_FAIL, "port %s taken", p);
        if (pid[0] && strcmp(pid, "?"))
          problem(e, WR_CHECK_FAIL, WR_CHECK_NET, h,
                  "%s: MASTER_PORT %s is taken there, by "
                  "pid %s (%s); set another (-x MASTER_PORT=N) or end that process",
                  w->name, p, pid, *rest ? rest : "?");
        else
          problem(e, WR_CHECK_FAIL, WR_CHECK_NET, h,
                  "%s: MASTER_PORT %s is taken there (by a "
                  "process this user cannot see); set another with -x MASTER_PORT=N",
                  w->name, p);
      }
    }
  }
  if (ifname) {
    tally t;
    if (!tally_make(e, &t, get_fact, (void *)WT_CK_NET_MTU)) {
      if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
        tally_odd(e, &t, odd_mtu, (void *)ifname);
      free(t.value);
    }
  }
  char(*types)[64] = calloc((size_t)n + 1, sizeof(*types));
  if (!types) {
    e->nomem = 1;
    return;
  }
  for (int h = 0; h < n; h++) {
    const char *g = usable(e, h) ? wr_check_fact_get(H(e, h), WT_CK_GCE) : NULL;
    if (g)
      word(g, types[h], sizeof(types[h]));
  }
  tally t;
  if (!tally_make(e, &t, get_type, types)) {
    if (t.nwith > 0 && (t.ncommon < t.nwith || t.tie))
      tally_odd(e, &t, odd_type, NULL);
    free(t.value);
  }
  free(types);
}

/* ---- PAIRS -------------------------------------------------------------- */

typedef struct pairfail {
  int from, to;
  const char *why;
} pairfail;

static void check_pairs(eval *e)
{
  const wr_check_input *in = e->in;
  int n = in->nhosts, nf = 0, cap = 0;
  const char *ifname = in->ifname && *in->ifname ? in->ifname : "the job's interface";
  pairfail *f = NULL;
  int *tested = calloc((size_t)n + 1, sizeof(int)), *failed = calloc((size_t)n + 1, sizeof(int));
  int *ok = calloc((size_t)n + 1, sizeof(int)), *tried = calloc((size_t)n + 1, sizeof(int));
  if (!tested || !failed || !ok || !tried) {
    e->nomem = 1;
    goto out;
  }
  for (int h = 0; h < n; h++) {
    const wr_check_host *w = H(e, h);
    if (!usable(e, h))
      continue;
    const char *m = wr_check_fact_get(w, WT_CK_MASTER);
    if (m && !strncmp(m, "fail", 4) && in->master >= 0 && in->master < n) {
      cell(e, h, WR_CHECK_PAIRS, WR_CHECK_FAIL, "no master");
      problem(e, WR_CHECK_FAIL, WR_CHECK_PAIRS, h,
              "%s: cannot reach the master %s on port "
              "%d (%s): every rank must reach MASTER_ADDR:MASTER_PORT; check the firewall and "
              "routes between them",
              w->name, H(e, in->master)->name, in->master_port, m[4] == ' ' ? m + 5 : "no answer");
    }
    for (int i = 0; i < w->nfacts; i++) {
      char j[16], st[8];
      long t;
      if (strcmp(w->facts[i].key, WT_CK_PAIR))
        continue;
      const char *why = word(word(w->facts[i].value, j, sizeof(j)), st, sizeof(st));
      if (!as_int(j, &t) || t < 0 || t >= n || !strcmp(st, "skip"))
        continue;
      tried[h]++;
      tested[h]++;
      tested[t]++;
      if (!strcmp(st, "ok")) {
        ok[h]++;
        continue;
      }
      failed[h]++;
      failed[t]++;
      if (nf == cap) {
        cap = cap ? 2 * cap : 16;
        pairfail *g = realloc(f, (size_t)cap * sizeof(*g));
        if (!g) {
          e->nomem = 1;
          goto out;
        }
        f = g;
      }
      f[nf].from = h;
      f[nf].to = (int)t;
      f[nf++].why = why;
    }
  }
  for (int h = 0; h < n; h++) {
    if (!usable(e, h) || cell_of(e, h, WR_CHECK_PAIRS)->status == WR_CHECK_FAIL)
      continue;
    if (tried[h] || failed[h])
      cell(e, h, WR_CHECK_PAIRS, failed[h] ? WR_CHECK_FAIL : WR_CHECK_OK, "%d/%d", ok[h], tried[h]);
  }
  /* a host every one of whose tests failed, both ways, with two or more hosts: one
   * line for it instead of one per pair */
  int *cut = calloc((size_t)n + 1, sizeof(int));
  if (!cut) {
    e->nomem = 1;
    goto out;
  }
  for (int h = 0; h < n; h++)
    if (tested[h] >= 4 && failed[h] == tested[h]) {
      const char *why = NULL;
      for (int i = 0; i < nf && !why; i++)
        if (f[i].from == h || f[i].to == h)
          why = f[i].why;
      cut[h] = 1;
      problem(e, WR_CHECK_FAIL, WR_CHECK_PAIRS, h,
              "%s: no TCP connection to or from any host "
              "it was tested with on %s (%s): its link is down or a firewall closes it",
              H(e, h)->name, ifname, why ? why : "?");
    }
  int shown = 0, more = 0;
  for (int i = 0; i < nf; i++) {
    int a = f[i].from, b = f[i].to, dup = 0;
    if (cut[a] || cut[b])
      continue;
    for (int k = 0; k < i && !dup; k++)
      if ((f[k].from == b && f[k].to == a) || (f[k].from == a && f[k].to == b))
        dup = 1;
    if (dup)
      continue;
    const char *back = NULL;
    for (int k = i + 1; k < nf && !back; k++)
      if (f[k].from == b && f[k].to == a)
        back = f[k].why;
    if (shown >= MAX_PAIR_PROBLEMS) {
      more++;
      continue;
    }
    shown++;
    if (back)
      problem(e, WR_CHECK_FAIL, WR_CHECK_PAIRS, a,
              "%s <-> %s: no TCP connection on %s either "
              "way (%s; %s): a firewall or a route between them",
              H(e, a)->name, H(e, b)->name, ifname, f[i].why, back);
    else
      problem(e, WR_CHECK_FAIL, WR_CHECK_PAIRS, a,
              "%s -> %s: no TCP connection on %s (%s; the "
              "other way works): a firewall on %s or a route between them",
              H(e, a)->name, H(e, b)->name, ifname, f[i].why, H(e, b)->name);
    worsen(e, b, WR_CHECK_PAIRS, WR_CHECK_FAIL);
  }
  if (more)
    problem(e, WR_CHECK_FAIL, WR_CHECK_PAIRS, -1,
            "%d more pairs of hosts have no TCP "
            "connection on %s (--json lists every test)",
            more, ifname);
  free(cut);
out:
  free(f);
  free(tested);
  free(failed);
  free(ok);
  free(tried);
}

/* ---- CLOCK ------------------------------------------------------------- */

static void check_clock(eval *e)
{
  const wr_check_input *in = e->in;
  for (int h = 0; h < in->nhosts; h++) {
    const wr_check_host *w = H(e, h);
    const char *c = usable(e, h) ? wr_check_fact_get(w, WT_CK_CLOCK) : NULL;
    double off, err = 0;
    if (!c || sscanf(c, "%lf %lf", &off, &err) < 1 || !isfinite(off))
      continue;
    if (h == in->master) {
      cell(e, h, WR_CHECK_CLOCK, WR_CHECK_OK, "master");
      continue;
    }
    if (fabs(off) > WR_CHECK_CLOCK_WARN_S) {
      cell(e, h, WR_CHECK_CLOCK, WR_CHECK_WARN, "%+.1f s", off);
      problem(e, WR_CHECK_WARN, WR_CHECK_CLOCK, h,
              "%s: its clock is %.1f s %s the master's "
              "(%s); logs and timeouts across hosts will disagree: run NTP (chrony) on every "
              "host",
              w->name, fabs(off), off > 0 ? "ahead of" : "behind",
              in->master >= 0 ? H(e, in->master)->name : "?");
    } else {
      cell(e, h, WR_CHECK_CLOCK, WR_CHECK_OK, fabs(off) < 1 ? "%+.2f ms" : "%+.3f s",
           fabs(off) < 1 ? off * 1000 : off);
    }
  }
}

/* ---- MEMORY ------------------------------------------------------------ */

static void check_memory(eval *e)
{
  for (int h = 0; h < e->in->nhosts; h++) {
    const wr_check_host *w = H(e, h);
    const char *tot = wr_check_fact_get(w, WT_CK_MEM_TOTAL);
    const char *av = wr_check_fact_get(w, WT_CK_MEM_AVAIL);
    const char *shm = wr_check_fact_get(w, WT_CK_SHM);
    const char *lock = wr_check_fact_get(w, WT_CK_MEMLOCK);
    double t = 0, a = 0, s = 0;
    char b1[16], b2[16];
    long gpus = gpus_of(e, h);
    if (!usable(e, h) || timed_out(e, h, WR_CHECK_MEMORY) || !av)
      continue;
    a = strtod(av, NULL);
    t = tot ? strtod(tot, NULL) : 0;
    bytes(b1, sizeof(b1), a);
    cell(e, h, WR_CHECK_MEMORY, WR_CHECK_OK, "%s free", b1);
    if (t > 0 && a * 100 < t * WR_CHECK_MEM_AVAIL_PCT) {
      bytes(b2, sizeof(b2), t);
      problem(e, WR_CHECK_WARN, WR_CHECK_MEMORY, h,
              "%s: only %s of %s memory is available; "
              "is another job still running there?",
              w->name, b1, b2);
    }
    if (shm && !strcmp(shm, "absent")) {
      problem(e, WR_CHECK_WARN, WR_CHECK_MEMORY, h,
              "%s: no /dev/shm; NCCL and Open MPI's "
              "shared-memory transports need it (mount a tmpfs there)",
              w->name);
    } else if (shm && (s = strtod(shm, NULL)) < (double)WR_CHECK_SHM_MIN && gpus > 0) {
      bytes(b2, sizeof(b2), s);
      problem(e, WR_CHECK_WARN, WR_CHECK_MEMORY, h,
              "%s: /dev/shm is only %s; NCCL needs more "
              "between the GPUs of a host (remount it larger, or docker --shm-size=16g)",
              w->name, b2);
    }
    long rdma = 0;
    as_int(wr_check_fact_get(w, WT_CK_NET_RDMA), &rdma);
    if (lock && strcmp(lock, "unlimited") && rdma > 0) {
      bytes(b2, sizeof(b2), strtod(lock, NULL));
      problem(e, WR_CHECK_WARN, WR_CHECK_MEMORY, h,
              "%s: ulimit -l is %s and it has %ld RDMA "
              "device%s; NCCL and MPI over RDMA need it unlimited: 'memlock unlimited' in "
              "/etc/security/limits.conf (LimitMEMLOCK=infinity for a service)",
              w->name, b2, rdma, rdma == 1 ? "" : "s");
    }
  }
}

/* ---- Order ---------------------------------------------------------------- */

/* FAILs first, then by host (the job's own last), then by column. */
static int before(const wr_check_problem *p, const wr_check_problem *q)
{
  long ph = p->host < 0 ? 1L << 30 : p->host, qh = q->host < 0 ? 1L << 30 : q->host;
  if (p->status != q->status)
    return p->status > q->status;
  if (ph != qh)
    return ph < qh;
  return p->col < q->col;
}

/* A stable merge sort: problems of one host and column keep the order they were found in. */
static int sort_problems(wr_check_problem *v, int n)
{
  wr_check_problem *tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
  if (!tmp)
    return -1;
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) {
      int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        tmp[k++] = before(&v[j], &v[i]) ? v[j++] : v[i++];
      while (i < mid)
        tmp[k++] = v[i++];
      while (j < hi)
        tmp[k++] = v[j++];
    }
    memcpy(v, tmp, (size_t)n * sizeof(*v));
  }
  free(tmp);
  return 0;
}

int wr_check_evaluate(const wr_check_input *in, wr_check_result *out)
{
  eval e = {in, out, 0, 0};
  memset(out, 0, sizeof(*out));
  out->nhosts = in->nhosts;
  if (!(out->cells = calloc((size_t)in->nhosts * WR_CHECK_NCOLS + 1, sizeof(*out->cells))))
    return WEFT_ENOMEM;
  check_reach(&e);
  check_versions(&e);
  check_program(&e);
  check_gpus(&e);
  check_net(&e);
  check_pairs(&e);
  check_clock(&e);
  check_memory(&e);
  check_timeouts(&e);
  if (in->plan_why)
    problem(&e, WR_CHECK_FAIL, WR_CHECK_GPUS, -1,
            "the job's plan cannot be made with what "
            "the hosts have: %s",
            in->plan_why);
  if (e.nomem) {
    wr_check_result_free(out);
    return WEFT_ENOMEM;
  }
  if (sort_problems(out->problems, out->nproblems)) {
    wr_check_result_free(out);
    return WEFT_ENOMEM;
  }
  out->worst = WR_CHECK_OK;
  for (int i = 0; i < out->nproblems; i++)
    if (out->problems[i].status > out->worst)
      out->worst = out->problems[i].status;
  for (int i = 0; i < in->nhosts * WR_CHECK_NCOLS; i++)
    if (out->cells[i].status > out->worst)
      out->worst = out->cells[i].status;
  return 0;
}

void wr_check_result_free(wr_check_result *r)
{
  free(r->cells);
  free(r->problems);
  memset(r, 0, sizeof(*r));
}
