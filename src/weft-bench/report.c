/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench's output: the nccl-tests table (every line that is not data
 * starts with '#', so `grep -v '^#'` leaves the rows), its footer with the
 * verdict, and the same results as JSON. Only rank 0 calls these.
 *
 * The columns are nccl-tests' own, with its widths (src/util.cu), so that
 * scripts that read nccl-tests' output read this too: size (B), count
 * (elements), type (nccl-tests' names: float, half, ...), redop ("none" when
 * the collective does not reduce), root (-1 when it has none), then out of
 * place and in place each time (us per iteration, over the ranks as -a
 * says), algbw and busbw (GB/s = 1e9 B/s) and #wrong. With --baseline, more
 * columns follow: raw MPI's (raw NCCL's on device memory) time, algbw and
 * busbw out of place and in place, each with the speedup, raw time / weft
 * time (above 1, weft is faster).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* nccl-tests' widths: the row's start, one placement, and ours for one
 * placement of the baseline (time, algbw, busbw, speedup). */
#define ROW_FMT "%12s  %12s  %8s  %6s  %6s"
#define CELL_FMT "  %7s  %6s  %6s  %6s"
#define RAW_FMT "  %7s  %6s  %6s  %7s"
#define CELL_WIDTH 33 /* what CELL_FMT prints */
#define RAW_WIDTH 34  /* what RAW_FMT prints */

static const char *const place_names[BENCH_PLACES] = {"out-of-place", "in-place"};

/* A number in \p width characters, right-aligned, as nccl-tests' getFloatStr:
 * 2 decimals, then 1, then 0, then exponent notation; "N/A" for none. */
void bench_fmt(char *buf, int width, double v)
{
  size_t len = (size_t)width + 1;

  if (isnan(v) || v < 0) {
    snprintf(buf, len, "%*s", width, "N/A");
    return;
  }
  if (snprintf(buf, len, "%*.2f", width, v) <= width ||
      snprintf(buf, len, "%*.1f", width, v) <= width ||
      snprintf(buf, len, "%*.0f", width, v) <= width)
    return;
  snprintf(buf, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

double bench_speedup(const struct bench_cell *c)
{
  return c->time_us > 0 && c->raw_time_us > 0 ? c->raw_time_us / c->time_us : -1;
}

/* The lesser of two placements' times, either missing (< 0); -1 when both are. */
static double least(double a, double b) { return a > 0 && (b <= 0 || a <= b) ? a : b > 0 ? b : -1; }

double bench_floor(const struct bench_row *w)
{
  return least(w->cell[0].floor_us, w->cell[1].floor_us);
}

double bench_over_floor(const struct bench_row *w, double t)
{
  double fl = bench_floor(w);

  return fl > 0 && t > 0 ? t / fl : -1;
}

double bench_xchg_floor(const struct bench_row *w)
{
  return least(w->cell[0].xchg_us, w->cell[1].xchg_us);
}

static const char *redop_name(const struct bench_opts *o, weft_op op)
{
  return o->coll->reduces ? weft_op_name(op) : "none";
}

/* Print \p line without the spaces at its end. */
static void put_trimmed(FILE *f, char *line)
{
  size_t n = strlen(line);

  while (n > 0 && line[n - 1] == ' ')
    line[--n] = '\0';
  fprintf(f, "%s\n", line);
}

/* \p label centred in \p width characters at the end of \p line. */
static void centre(char *line, size_t len, int width, const char *label)
{
  size_t used = strlen(line);
  int pad = (width - (int)strlen(label)) / 2;

  if (pad < 0)
    pad = 0;
  snprintf(line + used, len - used, "%*s%s%*s", pad, "", label,
           width - pad - (int)strlen(label) > 0 ? width - pad - (int)strlen(label) : 0, "");
}

/* The three lines above the rows: placements, column names, units. */
static void column_heads(FILE *f, const struct bench_report *r)
{
  static const char *const names[] = {"size", "count", "type", "redop", "root"};
  static const char *const units[] = {"(B)", "(elements)", "", "", ""};
  char line[512], raw[64];
  const char *const *w[2] = {names, units};
  size_t n;

  /* nccl-tests' line, to the end of the in-place columns. */
  snprintf(line, sizeof(line), "# %10s  %12s  %8s  %6s  %6s%-*s", "", "", "", "", "",
           2 * CELL_WIDTH, "           out-of-place                       in-place");
  for (int p = 0; r->raw_name && p < BENCH_PLACES; p++) {
    snprintf(raw, sizeof(raw), "%s %s", r->raw_name, place_names[p]);
    centre(line, sizeof(line), RAW_WIDTH, raw);
  }
  put_trimmed(f, line);
  for (int k = 0; k < 2; k++) {
    const char *t = k ? "(us)" : "time", *bw = k ? "(GB/s)" : "algbw", *bb = k ? "(GB/s)" : "busbw";

    n = (size_t)snprintf(line, sizeof(line), "# %10s  %12s  %8s  %6s  %6s", w[k][0], w[k][1],
                         w[k][2], w[k][3], w[k][4]);
    for (int p = 0; p < BENCH_PLACES && n < sizeof(line); p++, n = strlen(line))
      snprintf(line + n, sizeof(line) - n, CELL_FMT, t, bw, bb, k ? "" : "#wrong");
    for (int p = 0; r->raw_name && p < BENCH_PLACES && n < sizeof(line); p++, n = strlen(line))
      snprintf(line + n, sizeof(line) - n, RAW_FMT, t, bw, bb, k ? "(x)" : "speedup");
    put_trimmed(f, line);
  }
}

void bench_report_header(FILE *f, const struct bench_report *r)
{
  static const char *const average[] = {"rank 0's", "the mean over the ranks",
                                        "the least of the ranks'", "the most of the ranks'"};
  const struct bench_opts *o = r->o;

  fprintf(f, "# weft-bench %s: weft %s, %s, NCCL %s\n", o->coll->name, weft_version_string(),
          r->mpi_version, r->nccl_version);
  fputs("#  nThread 1 nGpus 1", f);
  if (o->nsizes)
    fprintf(f, " sizes: %d from %zu to %zu", o->nsizes, o->min_bytes, o->max_bytes);
  else
    fprintf(f, " minBytes %zu maxBytes %zu step: %ld(factor)", o->min_bytes, o->max_bytes,
            o->factor);
  fprintf(f, " warmup iters: %ld iters: %ld agg iters: 1 validation: %d graph: 0\n", o->warmup,
          o->iters, o->check);
  fprintf(f, "#  memory: %s baseline: %s%s%s time: %s (-a %d) blocking: %d\n",
          o->device ? "device" : "host", r->raw_name ? r->raw_name : "none",
          !r->raw_name && r->raw_note[0] ? ": " : "", !r->raw_name ? r->raw_note : "",
          average[o->average], o->average, o->blocking);
  if (o->coll->tensors)
    fprintf(f, "#  tensors per size: %ld (fewer when a size has fewer elements)\n", o->tensors);
  fprintf(f, "#\n# %d rank%s on %d host%s:", r->nranks, r->nranks == 1 ? "" : "s", r->nhosts,
          r->nhosts == 1 ? "" : "s");
  for (int i = 0; i < r->nhosts; i++)
    fprintf(f, " %s", r->hosts[i]);
  fputs("\n", f);
  for (int i = 0; i < r->nranks; i++)
    fprintf(f, "#  Rank %2d Group  0 Pid %6d on %10s device %s NIC %s\n", i, r->rank_pid[i],
            r->rank_host[i], r->rank_gpu[i], r->rank_nic[i]);
  if (r->shared)
    fprintf(f,
            "# sharing: the %d host%s %s %d machine%s (one boot id each), %d ranks on %d "
            "processors there: ranks share cores, and times measure that sharing\n",
            r->nhosts, r->nhosts == 1 ? "" : "s", r->nhosts == 1 ? "is" : "are", r->machines,
            r->machines == 1 ? "" : "s", r->shared_ranks, r->shared_procs);
  if (r->have_expect) {
    const struct bench_expect *e = &r->expect;

    fprintf(f,
            "#\n# Machine %s (from %s): GPU-data NICs %.0f Gbps per VM, ring busbw ceiling %.1f "
            "GB/s",
            e->machine, e->source, e->nic_gbps, e->ceiling);
    if (e->healthy_lo > 0 && e->healthy_hi > 0)
      fprintf(f, ", healthy busbw %.0f-%.0f GB/s", e->healthy_lo, e->healthy_hi);
    else if (e->healthy_lo > 0)
      fprintf(f, ", healthy busbw >= %.0f GB/s", e->healthy_lo);
    fprintf(f, "\n#   %s\n", e->note);
  }
  fputs("#\n", f);
  if (r->raw_name)
    fprintf(f,
            "# speedup = %s time / weft time, same size and placement: above 1, weft is "
            "faster\n",
            r->raw_name);
  if (o->floor)
    fprintf(f, "# floor = every rank copies the size with memcpy at once, between two barriers "
               "(this machine's copy floor); best = the best of -n iterations (each the slowest "
               "rank's), timed in turn with the floor; a floor line follows each row: "
               "best (us) and best / floor (x), out of place then in place\n");
  if (r->xchg)
    fprintf(f, "# exchange = every rank copies the size into shared memory and the next rank's "
               "out of it, 512 KiB at a time (what moving the data once between this host's "
               "processors costs; for large sizes no shared-memory collective needs less); an "
               "exchange line follows each floor line: the exchange's best (us), then weft's "
               "best / it (x), out of place then in place\n");
  if (r->xchg_note[0])
    fprintf(f, "# exchange = not measured: %s\n", r->xchg_note);
  if (o->floor && o->coll->run_contig)
    fprintf(f, "# contiguous = one weft all-reduce of the same elements in one buffer, timed in "
               "turn with them\n");
  if (o->coll->in_place_only)
    fprintf(f, "# %s runs in place only: its out-of-place columns say N/A\n", o->coll->name);
  if (o->coll->out_of_place_only)
    fprintf(f,
            "# %s runs out of place only (weft refuses in place): its in-place columns say "
            "N/A\n",
            o->coll->name);
  if (o->coll->in_place_unchecked && o->check)
    fprintf(f, "# %s in place sends and receives on one buffer: timed, not checked (#wrong N/A)\n",
            o->coll->name);
  column_heads(f, r);
}

/* One placement's weft columns (nccl-tests' "  %7s  %6s  %6s  %6g"). */
static void put_cell(FILE *f, const struct bench_cell *c)
{
  char t[16], al[16], bu[16], wr[16];

  bench_fmt(t, 7, c->time_us);
  bench_fmt(al, 6, c->time_us < 0 ? -1 : c->algbw);
  bench_fmt(bu, 6, c->time_us < 0 ? -1 : c->busbw);
  if (c->wrong < 0)
    snprintf(wr, sizeof(wr), "N/A");
  else
    snprintf(wr, sizeof(wr), "%g", (double)c->wrong);
  fprintf(f, CELL_FMT, t, al, bu, wr);
}

static void put_raw(FILE *f, const struct bench_cell *c)
{
  char t[16], al[16], bu[16], sp[16];

  bench_fmt(t, 7, c->raw_time_us);
  bench_fmt(al, 6, c->raw_time_us < 0 ? -1 : c->raw_algbw);
  bench_fmt(bu, 6, c->raw_time_us < 0 ? -1 : c->raw_busbw);
  bench_fmt(sp, 7, bench_speedup(c));
  fprintf(f, RAW_FMT, t, al, bu, sp);
}

/* "T R x" (best time, best / floor) for each placement of weft (which 0),
 * the baseline (1) or the contiguous all-reduce (2). */
static void put_best(FILE *f, const struct bench_row *w, int which)
{
  for (int p = 0; p < BENCH_PLACES; p++) {
    const struct bench_cell *c = &w->cell[p];
    double t = which == 1 ? c->raw_best_us : which == 2 ? c->contig_best_us : c->best_us;
    char tb[16], rb[16];

    bench_fmt(tb, 9, t);
    bench_fmt(rb, 6, bench_over_floor(w, t));
    fprintf(f, " %s %s x", tb, rb);
  }
}

/* The floor line under a row: the copy floor, then weft's and the baseline's best and their ratio to it. */
static void put_floor(FILE *f, const struct bench_report *r, const struct bench_row *w)
{
  char fl[16];

  bench_fmt(fl, 9, bench_floor(w));
  fprintf(f, "#  floor %12zu  copy %s us  weft best", w->bytes, fl);
  put_best(f, w, 0);
  if (r->raw_name) {
    fprintf(f, "  %s best", r->raw_name);
    put_best(f, w, 1);
  }
  if (r->o->coll->run_contig) {
    const struct bench_cell *c = &w->cell[BENCH_IN_PLACE];
    char q[16];

    fputs("  contiguous best", f);
    put_best(f, w, 2);
    bench_fmt(q, 6, c->best_us > 0 && c->contig_best_us > 0 ? c->best_us / c->contig_best_us : -1);
    fprintf(f, "  %s/contiguous %s", r->o->coll->name, q);
  }
  fputs("\n", f);
  if (bench_xchg_floor(w) > 0) {
    char x[16];

    bench_fmt(x, 9, bench_xchg_floor(w));
    fprintf(f, "#  exchange %9zu  %s us  weft best / exchange", w->bytes, x);
    for (int p = 0; p < BENCH_PLACES; p++) {
      const struct bench_cell *c = &w->cell[p];
      char q[16];

      bench_fmt(q, 6, c->best_us > 0 ? c->best_us / bench_xchg_floor(w) : -1);
      fprintf(f, " %s x", q);
    }
    fputs("\n", f);
  }
}

void bench_report_row(FILE *f, const struct bench_report *r, const struct bench_row *w)
{
  const struct bench_opts *o = r->o;
  char size[24], count[24], root[12];

  snprintf(size, sizeof(size), "%zu", w->bytes);
  snprintf(count, sizeof(count), "%zu", w->count);
  snprintf(root, sizeof(root), "%d", o->coll->rooted ? o->root : -1);
  fprintf(f, ROW_FMT, size, count, bench_dtype_label(w->dtype), redop_name(o, w->op), root);
  for (int p = 0; p < BENCH_PLACES; p++)
    put_cell(f, &w->cell[p]);
  for (int p = 0; r->raw_name && p < BENCH_PLACES; p++)
    put_raw(f, &w->cell[p]);
  fputs("\n", f);
  if (o->floor)
    put_floor(f, r, w);
  fflush(f);
}

/* Averages of the footer: busbw over every measured placement of every row
 * (nccl-tests' mean); the speedup over all of them and over those of 1 MiB
 * and more as geometric means (the mean that treats 2x faster and 2x slower
 * alike) and the median of the latter, which one disturbed row cannot move
 * (< 0 when there is none). */
struct averages {
  double busbw, speedup, speedup_big, median_big;
  int n, nspeedup, nbig;
  long long wrong;
};

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;

  return a < b ? -1 : a > b;
}

static void averages(const struct bench_report *r, struct averages *a)
{
  double logsum = 0, logbig = 0;
  double *big = calloc((size_t)r->nrows * BENCH_PLACES + 1, sizeof(double));

  memset(a, 0, sizeof(*a));
  for (int i = 0; i < r->nrows; i++)
    for (int p = 0; p < BENCH_PLACES; p++) {
      const struct bench_cell *c = &r->rows[i].cell[p];
      double s = bench_speedup(c);

      if (c->time_us < 0)
        continue;
      a->busbw += c->busbw;
      a->n++;
      if (c->wrong > 0)
        a->wrong += c->wrong;
      if (s <= 0)
        continue;
      logsum += log(s);
      a->nspeedup++;
      if (r->rows[i].bytes >= (1u << 20)) {
        logbig += log(s);
        if (big)
          big[a->nbig] = s;
        a->nbig++;
      }
    }
  a->busbw = a->n ? a->busbw / a->n : 0;
  a->speedup = a->nspeedup ? exp(logsum / a->nspeedup) : -1;
  a->speedup_big = a->nbig ? exp(logbig / a->nbig) : -1;
  a->median_big = -1;
  if (big && a->nbig) {
    qsort(big, (size_t)a->nbig, sizeof(double), cmp_double);
    a->median_big = a->nbig % 2 ? big[a->nbig / 2] : (big[a->nbig / 2 - 1] + big[a->nbig / 2]) / 2;
  }
  free(big);
}

static int verdict(const struct bench_report *r, const struct averages *a)
{
  if (a->wrong > 0)
    return BENCH_EXIT_WRONG;
  if (r->o->min_busbw >= 0 && a->busbw < r->o->min_busbw)
    return BENCH_EXIT_SLOW;
  return BENCH_EXIT_OK;
}

int bench_report_footer(FILE *f, const struct bench_report *r)
{
  struct averages a;
  int status;

  averages(r, &a);
  status = verdict(r, &a);
  if (r->o->check)
    fprintf(f, "# Out of bounds values : %lld %s\n", a.wrong, a.wrong ? "FAILED" : "OK");
  else
    fprintf(f, "# Out of bounds values : N/A (--check 0)\n");
  fprintf(f, "# Avg bus bandwidth    : %.3f", a.busbw);
  if (r->o->min_busbw >= 0)
    fprintf(f, " (--min-busbw %g: %s)", r->o->min_busbw,
            a.busbw < r->o->min_busbw ? "FAILED" : "OK");
  fputs("\n", f);
  if (a.speedup > 0) {
    fprintf(f, "# Avg speedup          : %.3f (geometric mean of %s time / weft time)", a.speedup,
            r->raw_name);
    if (a.nbig)
      fprintf(f, "; from 1 MiB: %.3f, median %.3f (%d cell%s)", a.speedup_big, a.median_big, a.nbig,
              a.nbig == 1 ? "" : "s");
    fputs("\n", f);
  }
  if (r->have_expect) {
    const struct bench_expect *e = &r->expect;
    double peak = 0;

    for (int i = 0; i < r->nrows; i++)
      for (int p = 0; p < BENCH_PLACES; p++)
        peak = fmax(peak, r->rows[i].cell[p].busbw);
    /* The family's figures are for GPU memory across VMs: nothing else is held against them. */
    if (r->nhosts < 2 || !r->o->device)
      fprintf(f, "# Peak bus bandwidth   : %.3f GB/s, not compared with %s's ceiling (%s)\n", peak,
              e->machine,
              r->nhosts < 2 ? "1 host: busbw within a host, not between VMs"
                            : "host memory: MPI over the host's NIC, not GPU memory");
    else
      fprintf(f, "# Peak bus bandwidth   : %.3f GB/s = %.0f%% of %s's ring ceiling (%.1f GB/s)%s\n",
              peak, 100 * peak / e->ceiling, e->machine, e->ceiling,
              e->healthy_lo <= 0                          ? ""
              : peak < e->healthy_lo                      ? ", BELOW the healthy range"
              : e->healthy_hi > 0 && peak > e->healthy_hi ? ", above the best published figure"
                                                          : ", in the healthy range");
  }
  fprintf(f, "#\n# Collective test concluded: %s: %s\n", r->o->coll->name,
          status == BENCH_EXIT_OK ? "OK" : "FAILED");
  return status;
}

/* A number, or null for NaN, inf and < 0. */
void bench_json_num(FILE *f, double v)
{
  if (isnan(v) || isinf(v) || v < 0)
    fputs("null", f);
  else
    fprintf(f, "%.6g", v);
}

/* A placement's object with nccl-tests' keys ("time" in us, "alg_bw",
 * "bus_bw"), then \p last's key: "nwrong" for weft, "speedup" for the
 * baseline; null when it was not measured. */
static int json_times(FILE *f, double time_us, double algbw, double busbw, const char *last)
{
  if (time_us < 0) {
    fputs("null", f);
    return -1;
  }
  fputs("{ \"time\": ", f);
  bench_json_num(f, time_us);
  fputs(", \"alg_bw\": ", f);
  bench_json_num(f, algbw);
  fputs(", \"bus_bw\": ", f);
  bench_json_num(f, busbw);
  fprintf(f, ", \"%s\": ", last);
  return 0;
}

static void json_cell(FILE *f, const struct bench_cell *c)
{
  if (json_times(f, c->time_us, c->algbw, c->busbw, "nwrong") != 0)
    return;
  if (c->wrong >= 0)
    fprintf(f, "%lld }", c->wrong);
  else
    fputs("null }", f);
}

static void json_raw(FILE *f, const struct bench_cell *c)
{
  if (json_times(f, c->raw_time_us, c->raw_algbw, c->raw_busbw, "speedup") != 0)
    return;
  bench_json_num(f, bench_speedup(c));
  fputs(" }", f);
}

/* --floor: "floor": {"time", "exchange" (null off one host), "best":
 * {"out_of_place", "in_place"}, and
 * "baseline_best" and "contiguous_best" likewise}; times in us, over_floor
 * is best / the floor. */
static void json_floor(FILE *f, const struct bench_report *r, const struct bench_row *w)
{
  fputs(",\n      \"floor\": { \"time\": ", f);
  bench_json_num(f, bench_floor(w));
  fputs(", \"exchange\": ", f);
  bench_json_num(f, bench_xchg_floor(w));
  static const char *const key[] = {"best", "baseline_best", "contiguous_best"};

  for (int k = 0; k < 3; k++) {
    if ((k == 1 && !r->raw_name) || (k == 2 && !r->o->coll->run_contig))
      continue;
    fprintf(f, ", \"%s\": {", key[k]);
    for (int p = 0; p < BENCH_PLACES; p++) {
      double t = k == 1   ? w->cell[p].raw_best_us
                 : k == 2 ? w->cell[p].contig_best_us
                          : w->cell[p].best_us;
      fputs(p ? ", \"in_place\": { \"time\": " : " \"out_of_place\": { \"time\": ", f);
      bench_json_num(f, t);
      fputs(", \"over_floor\": ", f);
      bench_json_num(f, bench_over_floor(w, t));
      fputs(" }", f);
    }
    fputs(" }", f);
  }
  fputs(" }", f);
}

static void json_results(FILE *f, const struct bench_report *r)
{
  const struct bench_opts *o = r->o;

  fputs(",\n  \"results\": [\n", f);
  for (int i = 0; i < r->nrows; i++) {
    const struct bench_row *w = &r->rows[i];

    fprintf(f, "    { \"size\": %zu, \"count\": %zu, \"type\": ", w->bytes, w->count);
    weftx_json_string(f, bench_dtype_label(w->dtype));
    fputs(", \"redop\": ", f);
    weftx_json_string(f, redop_name(o, w->op));
    fprintf(f, ", \"root\": %d,\n      \"out_of_place\": ", o->coll->rooted ? o->root : -1);
    json_cell(f, &w->cell[BENCH_OUT_OF_PLACE]);
    fputs(",\n      \"in_place\": ", f);
    json_cell(f, &w->cell[BENCH_IN_PLACE]);
    if (r->raw_name) {
      fputs(",\n      \"baseline\": { \"out_of_place\": ", f);
      json_raw(f, &w->cell[BENCH_OUT_OF_PLACE]);
      fputs(", \"in_place\": ", f);
      json_raw(f, &w->cell[BENCH_IN_PLACE]);
      fputs(" }", f);
    }
    if (o->floor)
      json_floor(f, r, w);
    fprintf(f, " }%s\n", i + 1 < r->nrows ? "," : "");
  }
  fputs("  ]", f);
}

static void json_ranks(FILE *f, const struct bench_report *r)
{
  fputs(",\n  \"rank_info\": [\n", f);
  for (int i = 0; i < r->nranks; i++) {
    fprintf(f, "    { \"rank\": %d, \"host\": ", i);
    weftx_json_string(f, r->rank_host[i]);
    fprintf(f, ", \"pid\": %d, \"gpu\": ", r->rank_pid[i]);
    if (strcmp(r->rank_gpu[i], "none"))
      weftx_json_string(f, r->rank_gpu[i]);
    else
      fputs("null", f);
    fputs(", \"nic\": ", f);
    weftx_json_string(f, r->rank_nic[i]);
    fprintf(f, " }%s\n", i + 1 < r->nranks ? "," : "");
  }
  fputs("  ],\n  \"machine\": ", f);
  if (r->have_expect) {
    fputs("{ \"type\": ", f);
    weftx_json_string(f, r->expect.machine);
    fputs(", \"source\": ", f);
    weftx_json_string(f, r->expect.source);
    fprintf(f, ", \"nic_gbps\": %.0f, \"busbw_ceiling\": %.1f, \"healthy_busbw_min\": ",
            r->expect.nic_gbps, r->expect.ceiling);
    bench_json_num(f, r->expect.healthy_lo > 0 ? r->expect.healthy_lo : -1);
    fputs(", \"healthy_busbw_max\": ", f);
    bench_json_num(f, r->expect.healthy_hi > 0 ? r->expect.healthy_hi : -1);
    fputs(" }", f);
  } else {
    fputs("null", f);
  }
}

/* Version 2: the placements of nccl-tests, nccl-tests' type names, the
 * baseline's "speedup" (version 1 had one placement and a "ratio"). */
int bench_report_json(const char *path, const struct bench_report *r, int status)
{
  const struct bench_opts *o = r->o;
  struct averages a;
  FILE *f = fopen(path, "w");

  if (!f) {
    fprintf(stderr, "weft-bench: cannot write --json %s: %s\n", path, strerror(errno));
    return WEFT_EIO;
  }
  averages(r, &a);
  fputs("{\n  \"version\": 2,\n  \"tool\": \"weft-bench\",\n  \"collective\": ", f);
  weftx_json_string(f, o->coll->name);
  fputs(",\n  \"weft_version\": ", f);
  weftx_json_string(f, weft_version_string());
  fputs(",\n  \"mpi_version\": ", f);
  weftx_json_string(f, r->mpi_version);
  fputs(",\n  \"nccl_version\": ", f);
  weftx_json_string(f, r->nccl_version);
  fprintf(f, ",\n  \"ranks\": %d,\n  \"hosts\": [", r->nranks);
  for (int i = 0; i < r->nhosts; i++) {
    fputs(i ? ", " : "", f);
    weftx_json_string(f, r->hosts[i]);
  }
  fputs("],\n  \"memory\": ", f);
  weftx_json_string(f, o->device ? "device" : "host");
  fputs(",\n  \"dtypes\": [", f);
  for (int i = 0; i < o->ndtypes; i++) {
    fputs(i ? ", " : "", f);
    weftx_json_string(f, bench_dtype_label(o->dtypes[i]));
  }
  fputs("],\n  \"ops\": [", f);
  for (int i = 0; i < (o->coll->reduces ? o->nops : 1); i++) {
    fputs(i ? ", " : "", f);
    weftx_json_string(f, redop_name(o, o->ops[i]));
  }
  fputs("]", f);
  fprintf(f,
          ",\n  \"root\": %d,\n  \"iters\": %ld,\n  \"warmup_iters\": %ld,\n  \"check\": %s,\n"
          "  \"average\": %d,\n  \"blocking\": %d,\n",
          o->coll->rooted ? o->root : -1, o->iters, o->warmup, o->check ? "true" : "false",
          o->average, o->blocking);
  fputs("  \"baseline\": ", f);
  if (r->raw_name)
    weftx_json_string(f, r->raw_name);
  else
    fputs("null", f);
  if (r->xchg_note[0]) {
    fputs(",\n  \"exchange_note\": ", f);
    weftx_json_string(f, r->xchg_note);
  }
  fputs(",\n  \"speedup\": \"baseline time / weft time, same size and placement; above 1, weft "
        "is faster\",\n  \"busbw_factor\": ",
        f);
  bench_json_num(f, o->coll->busbw_factor(r->nranks));
  json_ranks(f, r);
  json_results(f, r);
  fprintf(f, ",\n  \"out_of_bounds\": %lld,\n  \"average_bus_bandwidth\": ", a.wrong);
  bench_json_num(f, a.busbw);
  fputs(",\n  \"average_speedup\": ", f);
  bench_json_num(f, a.speedup);
  fputs(",\n  \"average_speedup_1mib\": ", f);
  bench_json_num(f, a.speedup_big);
  fputs(",\n  \"median_speedup_1mib\": ", f);
  bench_json_num(f, a.median_big);
  fputs(",\n  \"min_busbw\": ", f);
  bench_json_num(f, o->min_busbw);
  fputs(",\n  \"status\": ", f);
  weftx_json_string(f, status == BENCH_EXIT_OK ? "OK" : "FAILED");
  fprintf(f, ",\n  \"exit_status\": %d\n}\n", status);
  if (fclose(f) != 0) {
    fprintf(stderr, "weft-bench: cannot write --json %s\n", path);
    return WEFT_EIO;
  }
  return 0;
}
