/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench's command line: the option tables of its two modes (the
 * benchmark, and scale), read by the option-table engine weftrun and
 * weft-topo use (src/common/opt.c), which also writes --help, the OPTIONS
 * of weft-bench(1) (--help-man) and "did you mean" for a typo. Option names
 * follow nccl-tests (-b -e -f -n -w -d -o -r -c -a -z -J) so that admins'
 * habits carry over, and its -t -g -m -G -p are accepted where their value
 * means what weft-bench does (one thread and one GPU per rank, no grouped or
 * graph launches), refused in one line otherwise; "-b 1K", "-b1K",
 * "--minbytes 1K" and "--minbytes=1K" are all accepted. The list of
 * collectives in --help comes from the registry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opt.h"
#include "scale.h"

/* ---- Values ---------------------------------------------------------- */

static int set_size(const char *sp, const char *v, size_t *dst, char *why, size_t whylen)
{
  if (weftx_parse_size(v, dst) != 0) {
    snprintf(why, whylen, "%s: '%s' is not a size: write bytes with an optional K, M or G", sp, v);
    return -1;
  }
  return 0;
}

static int set_long(const char *sp, const char *v, long min, long max, long *dst, char *why,
                    size_t whylen)
{
  if (weftx_parse_long(v, min, max, dst) != 0) {
    snprintf(why, whylen, "%s: '%s' is not a whole number from %ld to %ld", sp, v, min, max);
    return -1;
  }
  return 0;
}

static int set_int(const char *sp, const char *v, long min, long max, int *dst, char *why,
                   size_t whylen)
{
  long x;

  if (set_long(sp, v, min, max, &x, why, whylen))
    return -1;
  *dst = (int)x;
  return 0;
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

static int set_sizes(const char *sp, const char *v, size_t *sizes, int *nsizes, char *why,
                     size_t whylen)
{
  char w[200];

  if (bench_parse_sizes(v, sizes, nsizes, w, sizeof(w)) == 0)
    return 0;
  snprintf(why, whylen, "%s: %s", sp, w);
  return -1;
}

/* A list of names ("float32,bfloat16") or "all" into \p out; parse turns one
 * name into its index. \return the count, or 0 after writing why. */
static int name_list(const char *sp, const char *v, int all, int (*parse)(const char *, int *),
                     int *out, const char *what, const char *choices, char *w, size_t n)
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
      snprintf(w, n, "%s: unknown %s '%s': use %s, a comma-separated list, or all", sp, what, tok,
               choices);
      return 0;
    }
    for (int i = 0; i < count; i++)
      dup |= out[i] == x;
    if (!dup && count < all)
      out[count++] = x;
  }
  if (count == 0)
    snprintf(w, n, "%s: no %s in '%s': use %s, a comma-separated list, or all", sp, what, v,
             choices);
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

static int set_dtypes(const char *sp, const char *v, struct bench_opts *o, char *w, size_t n)
{
  int idx[WEFT_DTYPE_COUNT];

  o->ndtypes = name_list(sp, v, WEFT_DTYPE_COUNT, parse_dtype, idx, "type",
                         "int8 uint8 int32 int64 half bfloat16 float double (or float16 "
                         "float32 float64)",
                         w, n);
  for (int i = 0; i < o->ndtypes; i++)
    o->dtypes[i] = (weft_dtype)idx[i];
  return o->ndtypes ? 0 : -1;
}

static int set_ops(const char *sp, const char *v, struct bench_opts *o, char *w, size_t n)
{
  int idx[WEFT_OP_COUNT];

  o->nops =
    name_list(sp, v, WEFT_OP_COUNT, parse_op, idx, "operation", "sum prod min max avg", w, n);
  for (int i = 0; i < o->nops; i++)
    o->ops[i] = (weft_op)idx[i];
  return o->nops ? 0 : -1;
}

/* ---- What both modes answer instead of running ---------------------------- */

enum { O_HELP = 100, O_HELP_MAN, O_VERSION, O_COMPLETION };

struct cli_asked {
  int help, help_man, version, completion;
};

static int asked(struct cli_asked *a, const wt_opt *opt, const char *sp, char *why, size_t whylen)
{
  switch (opt->id) {
  case O_HELP: a->help = 1; return 0;
  case O_HELP_MAN: a->help_man = 1; return 0;
  case O_VERSION: a->version = 1; return 0;
  case O_COMPLETION: a->completion = 1; return 0;
  default: snprintf(why, whylen, "%s: not handled", sp); return -1;
  }
}

/* ---- The benchmark ------------------------------------------------------- */

enum {
  B_MINBYTES = 1,
  B_MAXBYTES,
  B_SIZES,
  B_FACTOR,
  B_ITERS,
  B_WARMUP,
  B_CHECK,
  B_AVERAGE,
  B_BLOCKING,
  B_MEMORY,
  B_BASELINE,
  B_FLOOR,
  B_DTYPE,
  B_OP,
  B_ROOT,
  B_TENSORS,
  B_GAP,
  B_JSON,
  B_MIN_BUSBW,
  B_NTHREADS,
  B_NGPUS,
  B_AGG,
  B_GRAPH,
  B_PARALLEL,
};

#define NCCL_TESTS "nccl-tests options with one meaning here"

#define J WT_OPT_JOINED
static const wt_opt bench_options[] = {
  {B_MINBYTES, "b|minbytes", WT_OPT_ARG, "SIZE", "Sizes",
   "smallest size, bytes with K/M/G (default 1K)", J},
  {B_MAXBYTES, "e|maxbytes", WT_OPT_ARG, "SIZE", "Sizes", "largest size (default 32M)", J},
  {B_SIZES, "s|sizes", WT_OPT_ARG, "LIST", "Sizes",
   "these sizes (e.g. 1M,16M,64M) instead of -b, -e and -f", J},
  {B_FACTOR, "f|stepfactor", WT_OPT_ARG, "N", "Sizes",
   "multiply the size by N from row to row (default 2)", J},
  {B_ITERS, "n|iters", WT_OPT_ARG, "N", "Runs", "timed iterations per size (default 20)", J},
  {B_WARMUP, "w|warmup_iters", WT_OPT_ARG, "N", "Runs",
   "untimed iterations before timing (default 5)", J},
  {B_CHECK, "c|check", WT_OPT_ARG, "0|1", "Runs",
   "check every result and count wrong elements (default 1)", J},
  {B_AVERAGE, "a|average", WT_OPT_ARG, "0|1|2|3", "Runs",
   "a row's time over the ranks: rank 0's (0), the mean (1, default), least (2), most (3)", J},
  {B_BLOCKING, "z|blocking", WT_OPT_ARG, "0|1|2|3", "Runs",
   "after each run: nothing (0, default), wait and barrier (1 or 3), wait (2)", J},
  {B_MEMORY, "memory", WT_OPT_ARG, "host|device", "Runs",
   "where the buffers live: host (MPI) or this rank's GPU (NCCL) (default host)", 0},
  {B_BASELINE, "B|baseline", WT_OPT_FLAG, NULL, "Runs",
   "also time raw MPI (raw NCCL for device memory) on the same buffers, with the speedup "
   "(raw time / weft time)",
   0},
  {B_FLOOR, "floor", WT_OPT_FLAG, NULL, "Runs",
   "also time the copy floor (every rank copies the size with memcpy at once, between two "
   "barriers) and a line per size with the best iteration of the floor, of weft (and of the "
   "baseline) and their ratio to it; on one host also the exchange floor (every rank passes "
   "the size to the next through shared memory) and weft's ratio to it; host memory",
   0},
  {B_DTYPE, "d|datatype", WT_OPT_ARG,
   "TYPE{int8 uint8 int32 int64 half bfloat16 float double float16 float32 float64 all}", "Data",
   "int8 uint8 int32 int64 half bfloat16 float double (float16 float32 float64 too), a list, "
   "or all (default float)",
   J},
  {B_OP, "o|op", WT_OPT_ARG, "OP{sum prod min max avg all}", "Data",
   "sum prod min max avg, a list, or all (default sum), for the collectives that reduce", J},
  {B_ROOT, "r|root", WT_OPT_ARG, "RANK", "Data",
   "root rank, for the collectives that have one (default 0)", J},
  {B_TENSORS, "tensors", WT_OPT_ARG, "N", "Data",
   "tensors per size, for the collectives that fuse them (default 1000)", 0},
  {B_GAP, "gap", WT_OPT_ARG, "BYTES", "Data",
   "bytes between one tensor and the next, so that they lie apart as a model's parameters do "
   "(default 0: one after another)",
   0},
  {B_JSON, "J|json", WT_OPT_ARG, "FILE", "Results", "also write the results as JSON to FILE", J},
  {B_MIN_BUSBW, "min-busbw", WT_OPT_ARG, "GB/s", "Results",
   "fail (exit 3) when the average busbw is lower", 0},
  {B_NTHREADS, "t|nthreads", WT_OPT_ARG, "1", NCCL_TESTS,
   "threads per rank: one (start more ranks instead)", J},
  {B_NGPUS, "g|ngpus", WT_OPT_ARG, "1", NCCL_TESTS,
   "GPUs per thread: one (one rank per GPU, as weftrun starts them)", J},
  {B_AGG, "m|agg_iters", WT_OPT_ARG, "1", NCCL_TESTS,
   "collectives per timed iteration: one (weft has no grouped launch)", J},
  {B_GRAPH, "G|cudagraph", WT_OPT_ARG, "0", NCCL_TESTS,
   "CUDA graph launches: none (weft-bench does not capture graphs)", J},
  {B_PARALLEL, "p|parallel_init", WT_OPT_ARG, "0|1", NCCL_TESTS,
   "either: with one thread per rank there is nothing to start in parallel", J},
  {O_HELP, "h|help", WT_OPT_FLAG, NULL, "Help", "print this help and exit", 0},
  {O_VERSION, "V|version", WT_OPT_FLAG, NULL, "Help", "print the version and exit", 0},
  {O_HELP_MAN, "help-man", WT_OPT_FLAG, NULL, "Help", "the man page's OPTIONS", WT_OPT_HIDDEN},
  {O_COMPLETION, "help-completion", WT_OPT_FLAG, NULL, "Help",
   "the options and collectives for shell completion", WT_OPT_HIDDEN},
  {0, NULL, WT_OPT_FLAG, NULL, NULL, NULL, 0},
};
#undef J

/* nccl-tests' -t -g -m -G: the one value that means what weft-bench does,
 * or one line that says what to do instead. */
static int only(const char *sp, const char *v, long want, const char *instead, char *why,
                size_t whylen)
{
  long x;

  if (weftx_parse_long(v, 0, 1 << 30, &x) != 0 || x != want) {
    snprintf(why, whylen, "%s %s: %s", sp, v, instead);
    return -1;
  }
  return 0;
}

/* What the command line asked beside a run. */
struct bench_cli {
  struct bench_opts *o;
  struct cli_asked asked;
};

static int on_bench_option(void *ud, const wt_opt *opt, const char *sp, const char *v,
                           const char *a2, char *why, size_t whylen)
{
  struct bench_cli *cli = ud;
  struct bench_opts *o = cli->o;

  (void)a2;
  switch (opt->id) {
  case B_MINBYTES: return set_size(sp, v, &o->min_bytes, why, whylen);
  case B_MAXBYTES: return set_size(sp, v, &o->max_bytes, why, whylen);
  case B_SIZES: return set_sizes(sp, v, o->sizes, &o->nsizes, why, whylen);
  case B_FACTOR: return set_long(sp, v, 2, 1024, &o->factor, why, whylen);
  case B_ITERS: return set_long(sp, v, 1, 100000000, &o->iters, why, whylen);
  case B_WARMUP: return set_long(sp, v, 0, 100000000, &o->warmup, why, whylen);
  case B_CHECK: return set_int(sp, v, 0, 1, &o->check, why, whylen);
  case B_ROOT: return set_int(sp, v, 0, 1 << 30, &o->root, why, whylen);
  case B_TENSORS: return set_long(sp, v, 1, 10000000, &o->tensors, why, whylen);
  case B_GAP: return set_long(sp, v, 0, 1 << 20, &o->gap, why, whylen);
  case B_AVERAGE: return set_int(sp, v, 0, 3, &o->average, why, whylen);
  case B_BLOCKING: return set_int(sp, v, 0, 3, &o->blocking, why, whylen);
  case B_NTHREADS:
    return only(sp, v, 1,
                "weft-bench runs one thread per rank (nccl-tests' -t 1): start more "
                "ranks instead; the bucket's tensors are --tensors",
                why, whylen);
  case B_NGPUS:
    return only(sp, v, 1,
                "weft-bench drives one GPU per rank (nccl-tests' -g 1): start one "
                "rank per GPU instead (weftrun does)",
                why, whylen);
  case B_AGG:
    return only(sp, v, 1,
                strcmp(v, "host") && strcmp(v, "device")
                  ? "weft has no grouped launch, so each timed iteration is one collective (-m 1)"
                  : "-m is nccl-tests' aggregated iterations; where the buffers live is --memory",
                why, whylen);
  case B_GRAPH:
    return only(sp, v, 0, "weft-bench does not capture CUDA graphs (-G 0)", why, whylen);
  case B_PARALLEL: {
    int unused;

    return set_int(sp, v, 0, 1, &unused, why, whylen);
  }
  case B_DTYPE: return set_dtypes(sp, v, o, why, whylen);
  case B_OP: return set_ops(sp, v, o, why, whylen);
  case B_MEMORY:
    if (strcmp(v, "host") && strcmp(v, "device")) {
      snprintf(why, whylen, "%s: unknown memory '%s': use host or device", sp, v);
      return -1;
    }
    o->device = !strcmp(v, "device");
    return 0;
  case B_BASELINE: o->baseline = 1; return 0;
  case B_FLOOR: o->floor = 1; return 0;
  case B_JSON: o->json = v; return 0;
  case B_MIN_BUSBW: {
    char *end;
    double d = strtod(v, &end);

    if (end == v || *end || !(d >= 0)) {
      snprintf(why, whylen,
               "%s: '%s' is not a bandwidth: write GB/s as a number, e.g. 40 or "
               "12.5",
               sp, v);
      return -1;
    }
    o->min_busbw = d;
    return 0;
  }
  default: return asked(&cli->asked, opt, sp, why, whylen);
  }
}

/* The collectives, from the registry, in the layout of the options. */
static void coll_help(FILE *f)
{
  fputs("\nCollectives:\n", f);
  for (int i = 0; bench_colls[i]; i++) {
    const struct bench_coll *c = bench_colls[i];
    char left[64];

    snprintf(left, sizeof(left), "%s, %s", c->name, c->alias);
    if (strlen(left) <= 28)
      fprintf(f, "  %-28s %s\n", left, c->help);
    else
      fprintf(f, "  %s\n  %-28s %s\n", left, "", c->help);
  }
}

/* Append to buf at *used; the text is cut at the end of buf. */
static void append(char *buf, size_t len, size_t *used, const char *s)
{
  int n = snprintf(buf + *used, len - *used, "%s", s);

  if (n > 0)
    *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

/* "busbw = algbw x 2(n-1)/n (allreduce, bucket), (n-1)/n (...), ...": the
 * collectives grouped by their factor, in the registry's order. */
static void factors(char *buf, size_t len)
{
  size_t used = 0;

  buf[0] = '\0';
  append(buf, len, &used, "busbw = algbw x");
  for (int i = 0; bench_colls[i]; i++) {
    int seen = 0, first = 1;

    for (int k = 0; k < i; k++)
      seen |= !strcmp(bench_colls[k]->busbw, bench_colls[i]->busbw);
    if (seen)
      continue;
    append(buf, len, &used, i ? ", " : " ");
    append(buf, len, &used, bench_colls[i]->busbw);
    for (int k = i; bench_colls[k]; k++)
      if (!strcmp(bench_colls[k]->busbw, bench_colls[i]->busbw)) {
        append(buf, len, &used, first ? " (" : ", ");
        append(buf, len, &used, bench_colls[k]->name);
        first = 0;
      }
    append(buf, len, &used, ")");
  }
}

/* Write s wrapped at spaces into lines of at most \p width characters. */
static void wrap(FILE *f, const char *s, size_t width)
{
  while (strlen(s) > width) {
    size_t cut = width;

    while (cut > 0 && s[cut] != ' ')
      cut--;
    if (cut == 0)
      break;
    fprintf(f, "%.*s\n", (int)cut, s);
    s += cut + 1;
  }
  fprintf(f, "%s\n", s);
}

void bench_usage(FILE *f)
{
  char text[1024], busbw[512];

  fputs("usage: weft-bench COLLECTIVE [options]\n"
        "       weft-bench scale [options] [-- options]   (weft-bench scale --help)\n"
        "Collective benchmarks with a data check, nccl-tests style; run it under weftrun or\n"
        "mpirun.\n",
        f);
  coll_help(f);
  wt_opt_help(f, bench_options);
  factors(busbw, sizeof(busbw));
  snprintf(text, sizeof(text),
           "algbw = size / time; %s. Exit status: 0 OK, 1 wrong data, "
           "2 usage, 3 below --min-busbw, 4 no GPU for --memory device, 5 runtime error. "
           "See weft-bench(1).",
           busbw);
  fputs("\n", f);
  wrap(f, text, 88);
}

/* For shell completion: the options after a collective, and the words that
 * may come first (every collective's names, and scale). */
static void bench_completion(FILE *f, const wt_opt *tab)
{
  wt_opt_completion(f, tab, "*");
  fputs("-\t@\twords\t", f);
  for (int i = 0; bench_colls[i]; i++)
    fprintf(f, "%s %s ", bench_colls[i]->name, bench_colls[i]->alias);
  fputs("scale\n", f);
}

int bench_is_first_rank(void)
{
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"};

  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);

    if (v && *v)
      return !strcmp(v, "0");
  }
  return 1;
}

int bench_usage_fail(const char *why)
{
  if (bench_is_first_rank()) {
    fprintf(stderr, "weft-bench: %s\n", why);
    return BENCH_EXIT_USAGE;
  }
  /* mpirun aborts the job at the first rank that fails, and may kill the first rank
   * before its line is out: the others wait for that abort (at most 2 s) */
  for (int i = 0; i < 40; i++) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return BENCH_EXIT_USAGE;
}

int bench_parse(int argc, char **argv, struct bench_opts *o)
{
  const char *env = getenv("WEFT_BENCH_INJECT_ERROR");
  struct bench_cli cli = {o, {0, 0, 0, 0}};
  char why[512];
  int first = argc;

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
  o->average = 1;
  o->min_busbw = -1;
  o->inject = env && !strcmp(env, "1");
  if (wt_opt_parse(bench_options, argc, argv, on_bench_option, &cli, &first, why, sizeof(why)) != 0)
    return bench_usage_fail(why);
  if (cli.asked.help || cli.asked.help_man || cli.asked.version || cli.asked.completion) {
    if (cli.asked.help)
      bench_usage(stdout);
    else if (cli.asked.help_man)
      wt_opt_man(stdout, bench_options);
    else if (cli.asked.completion)
      bench_completion(stdout, bench_options);
    else
      printf("weft-bench %s\n", weft_version_string());
    return -1;
  }
  if (first < argc) {
    snprintf(why, sizeof(why),
             "unexpected argument '%s' (weft-bench takes options only; "
             "--help lists them)",
             argv[first]);
    return bench_usage_fail(why);
  }
  if (o->nsizes) {
    o->min_bytes = o->max_bytes = o->sizes[0];
    for (int i = 1; i < o->nsizes; i++) {
      o->min_bytes = o->sizes[i] < o->min_bytes ? o->sizes[i] : o->min_bytes;
      o->max_bytes = o->sizes[i] > o->max_bytes ? o->sizes[i] : o->max_bytes;
    }
  }
  if (o->min_bytes > o->max_bytes) {
    snprintf(why, sizeof(why), "--minbytes %zu is larger than --maxbytes %zu", o->min_bytes,
             o->max_bytes);
    return bench_usage_fail(why);
  }
  if (o->floor && o->device)
    return bench_usage_fail("--floor times memcpy in host memory, which says nothing of a GPU's "
                            "memory: use --floor with --memory host");
  return BENCH_EXIT_OK;
}

/* ---- weft-bench scale ------------------------------------------------------ */

enum {
  S_HOSTFILE = 1,
  S_NODES,
  S_PPN,
  S_NO_PAIRS,
  S_COLL,
  S_SIZES,
  S_ITERS,
  S_WARMUP,
  S_REPEAT,
  S_LAUNCHER,
  S_LARG,
  S_TIMEOUT,
  S_OUT,
};

static const wt_opt scale_options[] = {
  {S_HOSTFILE, "hostfile", WT_OPT_ARG, "FILE", "Hosts",
   "hosts, Open MPI syntax (default: the Slurm allocation's, else $WEFT_VCLUSTER_HOSTFILE)", 0},
  {S_NODES, "nodes", WT_OPT_ARG, "LIST", "Hosts",
   "increasing node counts (default 1,2,4,... up to the hosts in FILE)", 0},
  {S_PPN, "ppn", WT_OPT_ARG, "N", "Hosts", "ranks per node (default 1)", 0},
  {S_NO_PAIRS, "no-pairs", WT_OPT_FLAG, NULL, "Hosts",
   "skip the pairwise test of neighbouring hosts", 0},
  {S_COLL, "coll", WT_OPT_ARG, "NAME", "Benchmark",
   "the collective (default: the first in the list of collectives)", 0},
  {S_SIZES, "sizes", WT_OPT_ARG, "LIST", "Benchmark",
   "message sizes (default 1M,16M,64M; 64K,1M,4M on weft-vcluster)", 0},
  {S_ITERS, "iters", WT_OPT_ARG, "N", "Benchmark", "timed iterations per size (default 10)", 0},
  {S_WARMUP, "warmup", WT_OPT_ARG, "N", "Benchmark", "untimed iterations per size (default 2)", 0},
  {S_REPEAT, "repeat", WT_OPT_ARG, "N", "Benchmark",
   "measure everything N times, round after round, and report the median and spread "
   "(default 3)",
   0},
  {S_LAUNCHER, "launcher", WT_OPT_ARG, "weftrun|mpirun|PATH", "Launch",
   "the launcher (default weftrun when found)", 0},
  {S_LARG, "launcher-arg", WT_OPT_ARG, "ARG", "Launch",
   "one more launcher argument, before the program (repeat for more)", 0},
  {S_TIMEOUT, "timeout", WT_OPT_ARG, "SECONDS", "Launch",
   "end a run (its whole process group) that takes longer (default 600)", 0},
  {S_OUT, "out", WT_OPT_ARG, "DIR", "Output", "where the files go (default weft-bench-scale)", 0},
  {O_HELP, "h|help", WT_OPT_FLAG, NULL, "Output", "print this help and exit", 0},
  {O_HELP_MAN, "help-man", WT_OPT_FLAG, NULL, "Output", "the man page's scale options",
   WT_OPT_HIDDEN},
  {O_COMPLETION, "help-completion", WT_OPT_FLAG, NULL, "Output", "the options for shell completion",
   WT_OPT_HIDDEN},
  {0, NULL, WT_OPT_FLAG, NULL, NULL, NULL, 0},
};

struct scale_cli {
  struct scale_opts *o;
  struct cli_asked asked;
  const char *last_arg; /* the argument of the last option met, to tell it from "--" */
};

static int parse_counts(const char *sp, const char *v, struct scale_opts *o, char *why,
                        size_t whylen)
{
  char buf[256], *save = NULL, *tok;

  o->ncounts = 0;
  snprintf(buf, sizeof(buf), "%s", v);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    long k;

    /* increasing, so that "the largest" is the last */
    if (o->ncounts == SCALE_MAX_COUNTS || weftx_parse_long(tok, 1, 100000, &k) != 0 ||
        (o->ncounts && k <= o->counts[o->ncounts - 1]))
      break;
    o->counts[o->ncounts++] = (int)k;
  }
  if (!tok && o->ncounts)
    return 0;
  snprintf(why, whylen, "%s wants increasing counts from 1 to 100000 (%d at most), got '%s'", sp,
           SCALE_MAX_COUNTS, v);
  return -1;
}

static int on_scale_option(void *ud, const wt_opt *opt, const char *sp, const char *v,
                           const char *a2, char *why, size_t whylen)
{
  struct scale_cli *cli = ud;
  struct scale_opts *o = cli->o;

  (void)a2;
  cli->last_arg = v;
  switch (opt->id) {
  case S_HOSTFILE: o->hostfile = v; return 0;
  case S_NODES: return parse_counts(sp, v, o, why, whylen);
  case S_PPN: return set_long(sp, v, 1, 4096, &o->ppn, why, whylen);
  case S_NO_PAIRS: o->pairs = 0; return 0;
  case S_COLL:
    o->coll = bench_coll_find(v);
    if (!o->coll)
      bench_coll_unknown(v, NULL, why, whylen);
    return o->coll ? 0 : -1;
  case S_SIZES: o->sizes_given = 1; return set_sizes(sp, v, o->sizes, &o->nsizes, why, whylen);
  case S_ITERS: return set_long(sp, v, 1, 1000000, &o->iters, why, whylen);
  case S_WARMUP: return set_long(sp, v, 0, 1000000, &o->warmup, why, whylen);
  case S_REPEAT: return set_long(sp, v, 1, SCALE_MAX_REPEAT, &o->repeat, why, whylen);
  case S_LAUNCHER: o->launcher = v; return 0;
  case S_LARG:
    if (o->nlargs == SCALE_MAX_LARGS) {
      snprintf(why, whylen, "more than %d %s", SCALE_MAX_LARGS, sp);
      return -1;
    }
    o->largs[o->nlargs++] = (char *)v;
    return 0;
  case S_TIMEOUT: return set_long(sp, v, 1, 86400, &o->timeout, why, whylen);
  case S_OUT: o->out = v; return 0;
  default: return asked(&cli->asked, opt, sp, why, whylen);
  }
}

static void scale_usage(FILE *f)
{
  char names[256];

  fputs("usage: weft-bench scale [options] [-- WEFT-BENCH OPTIONS]\n"
        "Runs weft-bench at each node count through weftrun, --repeat times, and reports\n"
        "busbw with its spread, scaling efficiency, an alpha-beta fit with a prediction for\n"
        "larger counts, the links or hosts slower or faster than the others, and with a\n"
        "known machine family whether busbw is in its healthy range. Writes DIR/scale.csv,\n"
        "scale.json, pairs.csv, scale.gp and a plot.\n",
        f);
  wt_opt_help(f, scale_options);
  bench_coll_names(names, sizeof(names));
  fprintf(f,
          "\nCollectives: %s.\n"
          "Options after -- (%d at most) go to every weft-bench run (weft-bench --help).\n"
          "Exit status: 0 OK, 1 wrong data, 2 usage, 5 a run failed. See weft-bench(1).\n",
          names, SCALE_MAX_BARGS);
}

static int scale_usage_error(const char *why)
{
  fprintf(stderr, "weft-bench scale: %s\n", why);
  return BENCH_EXIT_USAGE;
}

int scale_parse(int argc, char **argv, struct scale_opts *o)
{
  struct scale_cli cli = {o, {0, 0, 0, 0}, NULL};
  char why[512];
  int first = argc;

  memset(o, 0, sizeof(*o));
  o->coll = bench_colls[0];
  o->ppn = 1;
  o->iters = 10;
  o->warmup = 2;
  o->repeat = 3;
  o->timeout = 600;
  o->pairs = 1;
  o->out = "weft-bench-scale";
  bench_parse_sizes("1M,16M,64M", o->sizes, &o->nsizes, NULL, 0);
  if (wt_opt_parse(scale_options, argc, argv, on_scale_option, &cli, &first, why, sizeof(why)) != 0)
    return scale_usage_error(why);
  if (cli.asked.help || cli.asked.help_man || cli.asked.completion) {
    if (cli.asked.help)
      scale_usage(stdout);
    else if (cli.asked.help_man)
      wt_opt_man(stdout, scale_options);
    else
      wt_opt_completion(stdout, scale_options, "scale");
    return -1;
  }
  if (first == argc)
    return BENCH_EXIT_OK;
  /* The engine stops after "--" or at a word that is no option. */
  if (strcmp(argv[first - 1], "--") || argv[first - 1] == cli.last_arg) {
    snprintf(why, sizeof(why), "unexpected argument '%s' (weft-bench options go after '--')",
             argv[first]);
    return scale_usage_error(why);
  }
  o->bargs = argv + first;
  o->nbargs = argc - first;
  if (o->nbargs > SCALE_MAX_BARGS) {
    snprintf(why, sizeof(why), "more than %d weft-bench options after '--', at '%s'",
             SCALE_MAX_BARGS, argv[first + SCALE_MAX_BARGS]);
    return scale_usage_error(why);
  }
  return BENCH_EXIT_OK;
}
