/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The WEFT_* settings libweft reads, in one table: how each is parsed into
 * the context, and whether every rank must have the same value. weft_init
 * reads them (weft__settings_read) and then checks, with one all-reduce of
 * each agreed value's maximum and minimum, that all ranks read the same
 * (weft__settings_agree): a timeout, a threshold or an algorithm that differs
 * between ranks sends them down different paths, to hang or time out at
 * different moments. Every rank sees the same reduced values, so where any
 * differs all return the same error; rank 0 then gathers that variable's
 * values and hosts and prints one line naming them. A rank that cannot read
 * a value takes part all the same, so that all fail instead of waiting for
 * it. A setting is added with one row here.
 */
#include "rt_private.h"
#include "shm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind {
  K_CHOICE,   /* int: the index of the word in arg ("auto|mpi|nccl") */
  K_SIZE,     /* size_t: bytes, with K/M/G */
  K_SECONDS,  /* double: non-negative seconds */
  K_COUNT,    /* size_t: a whole number from lo to hi */
  K_ELSEWHERE /* read where it is used, never agreed: why says why */
};

struct setting {
  const char *var;
  enum kind kind;
  size_t off;      /* of the parsed value in weft_ctx */
  const char *arg; /* K_CHOICE: the words; K_SIZE: an example */
  double def;      /* the value when unset or empty */
  long lo, hi;     /* K_COUNT */
  const char *why;
};

#define AT(field) offsetof(struct weft_ctx, field)

/* Every row but K_ELSEWHERE is agreed; record slot k + 1 is agreed row k. */
static const struct setting table[] = {
  {"WEFT_BACKEND", K_CHOICE, AT(backend), "auto|mpi|nccl", 0, 0, 0, "the path of device buffers"},
  {"WEFT_ALLREDUCE", K_CHOICE, AT(ar_algo), "auto|flat|hier", 0, 0, 0, "the all-reduce algorithm"},
  {"WEFT_HIER_THRESHOLD", K_SIZE, AT(hier_threshold), "1M", 1 << 20, 0, 0,
   "where the hierarchical all-reduce starts"},
  {"WEFT_MPI_CHUNK", K_COUNT, AT(chunk), NULL, INT_MAX, 1, INT_MAX, "how a count is cut"},
  {"WEFT_COLL_TIMEOUT", K_SECONDS, AT(coll_timeout), NULL, 0, 0, 0, "deadlines and arrival tokens"},
  {"WEFT_INIT_TIMEOUT", K_SECONDS, AT(init_timeout), NULL, WEFT__INIT_TIMEOUT_S, 0, 0,
   "how long NCCL's start may take"},
  {"WEFT_HOST_SHM", K_CHOICE, AT(host_shm), "0|1", 1, 0, 0, "shared memory or MPI on a host"},
  {"WEFT_HOST_SHM_THRESHOLD", K_SIZE, AT(shm_threshold), "64K", WEFT__SHM_THRESHOLD_DEFAULT, 0, 0,
   "shared memory or MPI by size"},
  {"WEFT_HOST_SHM_STAGED", K_SIZE, AT(shm_staged), "64M", WEFT__SHM_STAGED, 0, 0,
   "staged copies or cross-memory attach"},
  {"WEFT_RANKS_PER_NODE", K_COUNT, AT(ranks_per_node), NULL, 0, 1, 1 << 30,
   "which ranks share a host (tests)"},
  /* Settings that may differ between ranks. */
  {"WEFT_GPU", K_ELSEWHERE, 0, NULL, 0, 0, 0, "each rank's own GPU (init.c)"},
  {"WEFT_GPU_PCI", K_ELSEWHERE, 0, NULL, 0, 0, 0, "each rank's own GPU's address (init.c)"},
  {"WEFT_BUCKET_COPY", K_ELSEWHERE, 0, NULL, 0, 0, 0,
   "how a rank copies into its own bucket (backend-nccl.c)"},
  {"WEFT_COLL_WATCHDOG", K_ELSEWHERE, 0, NULL, 0, 0, 0,
   "ends only its own rank, whose end ends the job (watch.c)"},
  {"WEFT_RANK_PAGE", K_ELSEWHERE, 0, NULL, 0, 0, 0, "each rank's agent page (watch.c)"},
  {"WEFT_VERBOSE", K_ELSEWHERE, 0, NULL, 0, 0, 0, "diagnostics (core/log.c)"},
  /* Read only when the program asks (weft_restart_info, restart.c), never by
   * weft_init: weftrun gives every rank of an attempt the same values. */
  {"WEFT_RESTART_COUNT", K_ELSEWHERE, 0, NULL, 0, 0, 0, "the attempt (restart.c)"},
  {"WEFT_MAX_RESTARTS", K_ELSEWHERE, 0, NULL, 0, 0, 0, "the restarts allowed (restart.c)"},
  {"WEFT_PREV_WORLD_SIZE", K_ELSEWHERE, 0, NULL, 0, 0, 0, "the attempt before's size (restart.c)"},
  {"WEFT_CHECKPOINT_DIR", K_ELSEWHERE, 0, NULL, 0, 0, 0, "where checkpoints go (restart.c)"},
};

#define NROWS (sizeof(table) / sizeof(table[0]))
_Static_assert(NROWS + 1 <= WEFT__SETTINGS_MAX, "a record has a slot per agreed row, and one");

/* Agreed row k (0-based among the agreed ones), NULL past the last. */
static const struct setting *agreed(int k)
{
  for (size_t i = 0; i < NROWS; i++)
    if (table[i].kind != K_ELSEWHERE && k-- == 0)
      return &table[i];
  return NULL;
}

int weft__settings_count(void)
{
  int n = 0;
  while (agreed(n))
    n++;
  return n + 1;
}

const char *weft__settings_name(int slot)
{
  const struct setting *s = slot > 0 ? agreed(slot - 1) : NULL;
  return s ? s->var : "(read)";
}

/* The index of word in the '|'-separated words, -1 if not there. */
static int choice(const char *words, const char *word)
{
  size_t len = strlen(word);
  for (int i = 0; *words; i++) {
    size_t n = strcspn(words, "|");
    if (n == len && !strncmp(words, word, n))
      return i;
    words += n + (words[n] == '|');
  }
  return -1;
}

/* Word i of the '|'-separated words: *w and its length. */
static int word_at(const char *words, int i, const char **w)
{
  while (i-- > 0 && *words)
    words += strcspn(words, "|") + (words[strcspn(words, "|")] == '|');
  *w = words;
  return (int)strcspn(words, "|");
}

static int read_one(weft_ctx *ctx, const struct setting *st)
{
  char *at = (char *)ctx + st->off, *end, list[64];
  const char *def;
  const char *s = getenv(st->var);
  int set = s && *s;

  switch (st->kind) {
  case K_CHOICE: {
    int i = set ? choice(st->arg, s) : (int)st->def;
    if (i < 0) {
      int deflen = word_at(st->arg, (int)st->def, &def);
      weft__snprintf(list, sizeof(list), "%s", st->arg);
      for (char *p = list; *p; p++)
        if (*p == '|')
          *p = ',';
      return weft__rt_fail(ctx, WEFT_EINVAL, "%s=%s: use one of %s (default %.*s)", st->var, s,
                           list, deflen, def);
    }
    memcpy(at, &i, sizeof(i));
    return 0;
  }
  case K_SIZE: {
    size_t v = (size_t)st->def;
    if (set && weftx_parse_size(s, &v) != 0)
      return weft__rt_fail(ctx, WEFT_EINVAL, "%s=%s is not a size in bytes (e.g. %s, or 0)",
                           st->var, s, st->arg);
    memcpy(at, &v, sizeof(v));
    return 0;
  }
  case K_SECONDS: {
    double v = st->def;
    if (set) {
      errno = 0;
      v = strtod(s, &end);
      if (errno || *end || !(v >= 0) || v > 1e9)
        return weft__rt_fail(ctx, WEFT_EINVAL,
                             "%s=%s is not a number of seconds; set it to e.g. 30, or 0 for none",
                             st->var, s);
    }
    memcpy(at, &v, sizeof(v));
    return 0;
  }
  case K_COUNT: {
    long v = (long)st->def;
    if (set && weftx_parse_long(s, st->lo, st->hi, &v) != 0)
      return weft__rt_fail(ctx, WEFT_EINVAL, "%s=%s: a whole number from %ld to %ld", st->var, s,
                           st->lo, st->hi);
    size_t u = (size_t)v;
    memcpy(at, &u, sizeof(u));
    return 0;
  }
  case K_ELSEWHERE: break;
  }
  return 0;
}

int weft__settings_read(weft_ctx *ctx)
{
  int rc;

  for (size_t i = 0; i < NROWS; i++)
    if ((rc = read_one(ctx, &table[i])) != 0)
      return rc;
  return 0;
}

/* One value as a whole number: the choice's index, the size (at most
 * INT64_MAX), the seconds in microseconds. */
static int64_t value_of(const weft_ctx *ctx, const struct setting *st)
{
  const char *at = (const char *)ctx + st->off;
  int i;
  size_t z;
  double d;

  switch (st->kind) {
  case K_CHOICE: memcpy(&i, at, sizeof(i)); return i;
  case K_SIZE:
  case K_COUNT: memcpy(&z, at, sizeof(z)); return z > INT64_MAX ? INT64_MAX : (int64_t)z;
  case K_SECONDS: memcpy(&d, at, sizeof(d)); return (int64_t)llround(d * 1e6);
  case K_ELSEWHERE: break;
  }
  return 0;
}

void weft__settings_record(const weft_ctx *ctx, int read_rc, int64_t *v)
{
  const struct setting *st;

  v[0] = read_rc != 0;
  for (int k = 0; (st = agreed(k)) != NULL; k++)
    v[k + 1] = read_rc != 0 ? 0 : value_of(ctx, st);
}

int weft__settings_differs(const int64_t *red, int n, int from)
{
  /* red holds each slot's maximum, then the maximum of its negation */
  for (int k = from; k < n; k++)
    if (red[k] != -red[n + k])
      return k;
  return -1;
}

/* Appends to buf at *len, never past size. */
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...) WEFT_PRINTF(4, 5);
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (*len >= size)
    return;
  va_start(ap, fmt);
  n = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  if (n > 0)
    *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

#define SHOW_VALUES 3
#define SHOW_RANKS 4
#define SHOW_HOSTS 3

/* "3 on rank 0 (host a)" for the ranks whose value is all[first]'s. */
static void one_value(const struct weft__setting_seen *all, int n, int first, char *buf,
                      size_t size, size_t *len)
{
  int nr = 0, nh = 0, k, j;

  if (all[first].raw[0])
    add(buf, size, len, "%s on rank", all[first].raw);
  else
    add(buf, size, len, "unset on rank");
  for (k = first; k < n; k++)
    nr += all[k].value == all[first].value;
  add(buf, size, len, "%s", nr > 1 ? "s " : " ");
  for (k = first, j = 0; k < n && j < SHOW_RANKS; k++)
    if (all[k].value == all[first].value)
      add(buf, size, len, "%s%d", j++ ? ", " : "", k);
  if (nr > SHOW_RANKS)
    add(buf, size, len, " and %d more", nr - SHOW_RANKS);
  /* the distinct hosts of these ranks */
  add(buf, size, len, " (");
  for (k = first; k < n; k++) {
    if (all[k].value != all[first].value)
      continue;
    for (j = first; j < k; j++)
      if (all[j].value == all[first].value && !strcmp(all[j].host, all[k].host))
        break;
    if (j < k)
      continue;
    if (nh < SHOW_HOSTS)
      add(buf, size, len, "%s%s", nh ? ", " : "host ", all[k].host);
    nh++;
  }
  if (nh > SHOW_HOSTS)
    add(buf, size, len, " and %d more hosts", nh - SHOW_HOSTS);
  add(buf, size, len, ")");
}

void weft__settings_line(const char *var, const struct weft__setting_seen *all, int n,
                         const char *also, char *buf, size_t size)
{
  size_t len = 0;
  int shown = 0, values = 0, k, j;

  buf[0] = '\0';
  add(buf, size, &len, "ranks disagree on %s: ", var);
  for (k = 0; k < n; k++) {
    for (j = 0; j < k && all[j].value != all[k].value; j++)
      ;
    if (j < k)
      continue; /* a value already seen */
    values++;
    if (shown < SHOW_VALUES) {
      if (shown++)
        add(buf, size, &len, "; ");
      one_value(all, n, k, buf, size, &len);
    }
  }
  if (values > shown)
    add(buf, size, &len, "; and %d more value%s", values - shown, values - shown > 1 ? "s" : "");
  if (also && *also)
    add(buf, size, &len, " (%s %s too)", also, strchr(also, ',') ? "differ" : "differs");
  add(buf, size, &len, "; set it on every host, or pass -x %s to mpirun or weftrun", var);
}

/* The variables of slots from..n-1 that differ, as "A, B". */
static void others(const int64_t *red, int n, int from, char *list, size_t size)
{
  size_t len = 0;
  int k;

  list[0] = '\0';
  while ((k = weft__settings_differs(red, n, from)) >= 0) {
    add(list, size, &len, "%s%s", len ? ", " : "", weft__settings_name(k));
    from = k + 1;
  }
}

int weft__settings_agree(weft_ctx *ctx, MPI_Comm comm, int read_rc)
{
  int n = weft__settings_count(), first, rc, namelen = 0;
  int64_t v[2 * WEFT__SETTINGS_MAX];
  struct weft__setting_seen mine, *all = NULL;
  char pname[MPI_MAX_PROCESSOR_NAME], also[256], line[sizeof(ctx->err)];
  const char *raw;

  /* Rank 0 gathers the values should they differ; a rank that cannot read its
   * settings (or rank 0 without that memory) says so in slot 0 but still takes
   * part, or the others would wait here for it. */
  if (ctx->rank == 0 && !(all = calloc((size_t)ctx->size, sizeof(*all))) && !read_rc)
    read_rc = weft__rt_fail(ctx, WEFT_ENOMEM, "weft_init: out of memory");
  weft__settings_record(ctx, read_rc, v);
  for (int k = 0; k < n; k++)
    v[n + k] = -v[k];
  rc = MPI_Allreduce(MPI_IN_PLACE, v, 2 * n, MPI_INT64_T, MPI_MAX, comm);
  if (rc != MPI_SUCCESS) {
    free(all);
    return weft__rt_fail(ctx, WEFT_EMPI,
                         "weft_init: comparing WEFT_* settings between ranks "
                         "failed");
  }
  if (v[0] != 0 || (first = weft__settings_differs(v, n, 1)) < 0) {
    /* none differs, or a rank could not read its own (its line says which) */
    free(all);
    return v[0] == 0 ? 0 : read_rc ? read_rc : WEFT_EINVAL;
  }
  others(v, n, first + 1, also, sizeof(also));

  /* Every rank sees the same difference: rank 0 gathers that variable. */
  memset(&mine, 0, sizeof(mine));
  weft__settings_record(ctx, 0, v);
  mine.value = v[first];
  raw = getenv(weft__settings_name(first));
  weft__snprintf(mine.raw, sizeof(mine.raw), "%s", raw ? raw : "");
  if (MPI_Get_processor_name(pname, &namelen) != MPI_SUCCESS)
    weft__snprintf(pname, sizeof(pname), "?");
  weft__snprintf(mine.host, sizeof(mine.host), "%s", pname);
  rc = MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, 0, comm);
  if (rc == MPI_SUCCESS && ctx->rank == 0) {
    weft__settings_line(weft__settings_name(first), all, ctx->size, also, line, sizeof(line));
  } else {
    weft__snprintf(line, sizeof(line),
                   "ranks disagree on %s%s%s%s; set it on every host, or pass -x %s to mpirun "
                   "or weftrun",
                   weft__settings_name(first), *also ? " (" : "", also,
                   !*also              ? ""
                   : strchr(also, ',') ? " differ too)"
                                       : " differs too)",
                   weft__settings_name(first));
  }
  free(all);
  /* One line for the job, from rank 0; the others keep theirs for WEFT_VERBOSE=rt. */
  if (ctx->rank == 0)
    return weft__rt_fail(ctx, WEFT_EDISAGREE, "weft_init: %s", line);
  weft__snprintf(ctx->err, sizeof(ctx->err), "weft_init: %s", line);
  WEFT__LOG(RT, "rank %d: %s", ctx->rank, ctx->err);
  return WEFT_EDISAGREE;
}
