/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench's command line: one table drives parsing and --help. Option
 * names follow nccl-tests (-b -e -f -n -w -d -o -r -c -J) so that admins'
 * habits carry over; weft's additions are long options. "--name=value",
 * "--name value", "-b 1K" and "-b1K" are all accepted.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

struct bench_option {
  const char *lng;
  char shrt;
  const char *arg;          /* NULL for a flag */
  const char *help;
  int (*set)(struct bench_opts *o, const char *v, char *why, size_t whylen);
};

static int set_size(const char *v, size_t *dst, char *why, size_t whylen)
{
  if (weftx_parse_size(v, dst) != 0) {
    snprintf(why, whylen, "'%s' is not a size: write bytes with an optional K, M or G", v);
    return -1;
  }
  return 0;
}

static int set_long(const char *v, long min, long max, long *dst, char *why, size_t whylen)
{
  if (weftx_parse_long(v, min, max, dst) != 0) {
    snprintf(why, whylen, "'%s' is not a whole number from %ld to %ld", v, min, max);
    return -1;
  }
  return 0;
}

static int o_minbytes(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_size(v, &o->min_bytes, w, n);
}

static int o_maxbytes(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_size(v, &o->max_bytes, w, n);
}

int bench_parse_sizes(const char *v, size_t *sizes, int *nsizes, char *w, size_t n)
{
  char buf[1024], *save = NULL, *tok;
  int len = snprintf(buf, sizeof(buf), "%s", v);

  *nsizes = 0;
  if (len < 0 || (size_t)len >= sizeof(buf)) {
    if (w)
      snprintf(w, n, "the list of sizes is longer than %zu characters", sizeof(buf) - 1);
    return -1;
  }
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (*nsizes == BENCH_MAX_SIZES) {
      if (w)
        snprintf(w, n, "more than %d sizes", BENCH_MAX_SIZES);
      return -1;
    }
    if (weftx_parse_size(tok, &sizes[(*nsizes)++]) != 0) {
      if (w)
        snprintf(w, n, "'%s' is not a size: write bytes with an optional K, M or G", tok);
      return -1;
    }
  }
  if (*nsizes == 0) {
    if (w)
      snprintf(w, n, "no size in '%s': write a comma-separated list such as 1M,16M", v);
    return -1;
  }
  return 0;
}

static int o_sizes(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return bench_parse_sizes(v, o->sizes, &o->nsizes, w, n);
}

static int o_factor(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_long(v, 2, 1024, &o->factor, w, n);
}

static int o_iters(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_long(v, 1, 100000000, &o->iters, w, n);
}

static int o_warmup(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_long(v, 0, 100000000, &o->warmup, w, n);
}

static int o_tensors(struct bench_opts *o, const char *v, char *w, size_t n)
{
  return set_long(v, 1, 10000000, &o->tensors, w, n);
}

static int o_root(struct bench_opts *o, const char *v, char *w, size_t n)
{
  long r;

  if (set_long(v, 0, 1 << 30, &r, w, n))
    return -1;
  o->root = (int)r;
  return 0;
}

static int o_check(struct bench_opts *o, const char *v, char *w, size_t n)
{
  long c;

  if (set_long(v, 0, 1, &c, w, n))
    return -1;
  o->check = (int)c;
  return 0;
}

/* A list of names ("float32,bfloat16") or "all" into \p out; parse turns one
 * name into its index. \return the count, or 0 after writing why. */
static int name_list(const char *v, int all, int (*parse)(const char *, int *), int *out,
                     const char *what, const char *choices, char *w, size_t n)
{
  char buf[256], *save = NULL, *tok;
  int count = 0;

  if (!strcmp(v, "all")) {
    for (int i = 0; i < all; i++)
      out[i] = i;
    return all;
  }
  snprintf(buf, sizeof(buf), "%s", v);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int x, dup = 0;

    if (parse(tok, &x)) {
      snprintf(w, n, "unknown %s '%s': use %s, a comma-separated list, or all", what, tok,
               choices);
      return 0;
    }
    for (int i = 0; i < count; i++)
      dup |= out[i] == x;
    if (!dup && count < all)
      out[count++] = x;
  }
  if (count == 0)
    snprintf(w, n, "no %s in '%s': use %s, a comma-separated list, or all", what, v, choices);
  return count;
}

static int parse_dtype(const char *s, int *x)
{
  weft_dtype dt;
  int rc = bench_dtype_parse(s, &dt);

  *x = (int)dt;
  return rc;
}

static int parse_op(const char *s, int *x)
{
  weft_op op;
  int rc = bench_op_parse(s, &op);

  *x = (int)op;
  return rc;
}

static int o_dtype(struct bench_opts *o, const char *v, char *w, size_t n)
{
  int idx[WEFT_DTYPE_COUNT];

  o->ndtypes = name_list(v, WEFT_DTYPE_COUNT, parse_dtype, idx, "type",
                         "int8 uint8 int32 int64 float16 bfloat16 float32 float64", w, n);
  for (int i = 0; i < o->ndtypes; i++)
    o->dtypes[i] = (weft_dtype)idx[i];
  return o->ndtypes ? 0 : -1;
}

static int o_op(struct bench_opts *o, const char *v, char *w, size_t n)
{
  int idx[WEFT_OP_COUNT];

  o->nops = name_list(v, WEFT_OP_COUNT, parse_op, idx, "operation", "sum prod min max avg", w, n);
  for (int i = 0; i < o->nops; i++)
    o->ops[i] = (weft_op)idx[i];
  return o->nops ? 0 : -1;
}

static int o_memory(struct bench_opts *o, const char *v, char *w, size_t n)
{
  if (!strcmp(v, "host") || !strcmp(v, "device")) {
    o->device = !strcmp(v, "device");
    return 0;
  }
  snprintf(w, n, "unknown memory '%s': use host or device", v);
  return -1;
}

static int o_baseline(struct bench_opts *o, const char *v, char *w, size_t n)
{
  (void)v, (void)w, (void)n;
  o->baseline = 1;
  return 0;
}

static int o_json(struct bench_opts *o, const char *v, char *w, size_t n)
{
  (void)w, (void)n;
  o->json = v;
  return 0;
}

static int o_min_busbw(struct bench_opts *o, const char *v, char *w, size_t n)
{
  char *end;
  double d = strtod(v, &end);

  if (end == v || *end || !(d >= 0)) {
    snprintf(w, n, "'%s' is not a bandwidth: write GB/s as a number, e.g. 40 or 12.5", v);
    return -1;
  }
  o->min_busbw = d;
  return 0;
}

static const struct bench_option options[] = {
  { "minbytes", 'b', "SIZE", "smallest size, bytes with K/M/G (default 1K)", o_minbytes },
  { "maxbytes", 'e', "SIZE", "largest size (default 32M)", o_maxbytes },
  { "sizes", 's', "LIST", "these sizes (e.g. 1M,16M,64M) instead of -b, -e and -f", o_sizes },
  { "stepfactor", 'f', "N", "multiply the size by N from row to row (default 2)", o_factor },
  { "iters", 'n', "N", "timed iterations per size (default 20)", o_iters },
  { "warmup_iters", 'w', "N", "untimed iterations before timing (default 5)", o_warmup },
  { "datatype", 'd', "TYPE", "int8 uint8 int32 int64 float16 bfloat16 float32 float64, "
    "a list, or all (default float32)", o_dtype },
  { "op", 'o', "OP", "sum prod min max avg, a list, or all (default sum)", o_op },
  { "root", 'r', "RANK", "root of broadcast (default 0)", o_root },
  { "check", 'c', "0|1", "check every result and count wrong elements (default 1)", o_check },
  { "memory", 'm', "host|device", "where the buffers live: host (MPI) or this rank's GPU "
    "(NCCL) (default host)", o_memory },
  { "baseline", 'B', NULL, "also time raw MPI (raw NCCL for device memory) on the same buffers; print weft/raw", o_baseline },
  { "json", 'J', "FILE", "also write the results as JSON to FILE", o_json },
  { "min-busbw", 0, "GB/s", "fail (exit 3) when the average busbw is lower", o_min_busbw },
  { "tensors", 't', "N", "bucket: tensors per size (default 1000)", o_tensors },
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

void bench_usage(FILE *f)
{
  fputs("usage: weft-bench COLLECTIVE [options]\n"
        "       weft-bench scale [--hostfile FILE] [--nodes 1,2,4] [options]   (see --help there)\n"
        "Collective benchmarks with a data check, nccl-tests style; run it under weftrun or\n"
        "mpirun. COLLECTIVE: allreduce allgather reduce_scatter broadcast sendrecv bucket.\n"
        "\n", f);
  for (size_t i = 0; i < NOPTIONS; i++) {
    const struct bench_option *p = &options[i];
    char left[48];

    if (p->shrt)
      snprintf(left, sizeof(left), "-%c, --%s%s%s", p->shrt, p->lng, p->arg ? " " : "",
               p->arg ? p->arg : "");
    else
      snprintf(left, sizeof(left), "    --%s%s%s", p->lng, p->arg ? " " : "", p->arg ? p->arg : "");
    fprintf(f, "  %-28s %s\n", left, p->help);
  }
  fputs("  -h, --help                   this text\n"
        "  -V, --version                weft-bench's version\n"
        "\n"
        "algbw = size / time; busbw = algbw x 2(n-1)/n (allreduce, bucket), (n-1)/n (allgather,\n"
        "reduce_scatter), 1 (broadcast, sendrecv). Exit status: 0 OK, 1 wrong data, 2 usage,\n"
        "3 below --min-busbw, 4 no GPU for --memory device, 5 runtime error. See weft-bench(1).\n",
        f);
}

/* Text for troff: '-' becomes '\-', a backslash '\e'. */
static void man_text(FILE *f, const char *s)
{
  for (; *s; s++) {
    if (*s == '-')
      fputs("\\-", f);
    else if (*s == '\\')
      fputs("\\e", f);
    else
      fputc(*s, f);
  }
}

/* The OPTIONS section of weft-bench(1), from the same table (--help-man). */
static void bench_usage_man(FILE *f)
{
  for (size_t i = 0; i < NOPTIONS; i++) {
    const struct bench_option *p = &options[i];

    fputs(".TP\n", f);
    if (p->shrt)
      fprintf(f, "\\fB\\-%c\\fR, ", p->shrt);
    fputs("\\fB\\-\\-", f);
    man_text(f, p->lng);
    fputs("\\fR", f);
    if (p->arg) {
      fputs(" \\fI", f);
      man_text(f, p->arg);
      fputs("\\fR", f);
    }
    fputs("\n", f);
    man_text(f, p->help);
    fputs(".\n", f);
  }
}

int bench_is_first_rank(void)
{
  static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK" };

  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);

    if (v && *v)
      return !strcmp(v, "0");
  }
  return 1;
}

const struct bench_coll *bench_coll_find(const char *name)
{
  static const struct bench_coll *const all[] = {
    &bench_allreduce, &bench_allgather, &bench_reduce_scatter, &bench_broadcast,
    &bench_sendrecv, &bench_bucket,
  };

  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (!strcmp(name, all[i]->name) || !strcmp(name, all[i]->alias))
      return all[i];
  return NULL;
}

static const struct bench_option *find_option(const char *arg, const char **inline_val)
{
  *inline_val = NULL;
  if (arg[0] == '-' && arg[1] == '-') {
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);

    for (size_t i = 0; i < NOPTIONS; i++)
      if (strlen(options[i].lng) == len && !strncmp(options[i].lng, name, len)) {
        *inline_val = eq ? eq + 1 : NULL;
        return &options[i];
      }
    return NULL;
  }
  if (arg[0] == '-' && arg[1])
    for (size_t i = 0; i < NOPTIONS; i++)
      if (options[i].shrt == arg[1]) {
        *inline_val = arg[2] ? arg + 2 : NULL;
        return &options[i];
      }
  return NULL;
}

/* Print one line about a usage error (on the first rank only). */
static int usage_error(const char *fmt, ...) WEFT_PRINTF(1, 2);
static int usage_error(const char *fmt, ...)
{
  va_list ap;

  if (bench_is_first_rank()) {
    fputs("weft-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("; see weft-bench --help\n", stderr);
  }
  return BENCH_EXIT_USAGE;
}

int bench_parse(int argc, char **argv, struct bench_opts *o)
{
  const char *env = getenv("WEFT_BENCH_INJECT_ERROR");

  memset(o, 0, sizeof(*o));
  o->min_bytes = 1024;
  o->max_bytes = 32 << 20;
  o->factor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->tensors = 1000;
  o->dtypes[0] = WEFT_FLOAT32;
  o->ndtypes = 1;
  o->ops[0] = WEFT_SUM;
  o->nops = 1;
  o->check = 1;
  o->min_busbw = -1;
  o->inject = env && !strcmp(env, "1");
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *val;
    const struct bench_option *p;
    char why[256];

    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      bench_usage(stdout);
      return -1;
    }
    if (!strcmp(arg, "--help-man")) {
      bench_usage_man(stdout);
      return -1;
    }
    if (!strcmp(arg, "-V") || !strcmp(arg, "--version")) {
      printf("weft-bench %s\n", weft_version_string());
      return -1;
    }
    p = find_option(arg, &val);
    if (!p)
      return usage_error("unknown option '%s'", arg);
    if (!p->arg && val)
      return usage_error("option --%s takes no value", p->lng);
    if (p->arg && !val) {
      if (i + 1 >= argc)
        return usage_error("option --%s needs a value (%s)", p->lng, p->arg);
      val = argv[++i];
    }
    if (p->set(o, val, why, sizeof(why)))
      return usage_error("--%s: %s", p->lng, why);
  }
  if (o->nsizes) {
    o->min_bytes = o->max_bytes = o->sizes[0];
    for (int i = 1; i < o->nsizes; i++) {
      o->min_bytes = o->sizes[i] < o->min_bytes ? o->sizes[i] : o->min_bytes;
      o->max_bytes = o->sizes[i] > o->max_bytes ? o->sizes[i] : o->max_bytes;
    }
  }
  if (o->min_bytes > o->max_bytes)
    return usage_error("--minbytes %zu is larger than --maxbytes %zu", o->min_bytes, o->max_bytes);
  return BENCH_EXIT_OK;
}
