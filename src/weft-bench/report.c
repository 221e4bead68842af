/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench's output: the nccl-tests table (every line that is not data
 * starts with '#', so `grep -v '^#'` leaves the rows), its footer with the
 * verdict, and the same results as JSON. Only rank 0 calls these.
 *
 * Columns: size (B), count (elements), type, redop ("none" when the
 * collective does not reduce), root (-1 when it has none), time (us per
 * iteration, averaged over the ranks), algbw and busbw (GB/s = 1e9 B/s) and
 * #wrong; with --baseline the time, algbw and busbw of raw MPI (raw NCCL on
 * device memory) and the ratio weft/raw (raw time / weft time: above 1, weft
 * is faster).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define ROW_FMT "%13s %12s %9s %6s %6s %9s %8s %8s %7s"
#define RAW_FMT "  %9s %8s %8s %9s"

/* A number in exactly \p width characters or fewer: as many decimals as fit
 * (2, 1, 0), then exponent notation (nccl-tests does the same). */
void bench_fmt(char *buf, int width, double v)
{
  if (isnan(v) || v < 0) {
    snprintf(buf, (size_t)width + 1, "N/A");
    return;
  }
  for (int decimals = 2; decimals >= 0; decimals--)
    if (snprintf(buf, (size_t)width + 1, "%.*f", decimals, v) <= width)
      return;
  snprintf(buf, (size_t)width + 1, "%.1e", v);
}

static const char *redop_name(const struct bench_opts *o, weft_op op)
{
  return o->coll->reduces ? weft_op_name(op) : "none";
}

/* A header line printed with the rows' widths, its first column turned into '#'. */
static void header_line(FILE *f, const char *const *cols, int raw)
{
  char line[256];
  size_t n;

  n = (size_t)snprintf(line, sizeof(line), ROW_FMT, cols[0], cols[1], cols[2], cols[3], cols[4],
                       cols[5], cols[6], cols[7], cols[8]);
  if (raw && n < sizeof(line))
    snprintf(line + n, sizeof(line) - n, RAW_FMT, cols[9], cols[10], cols[11], cols[12]);
  line[0] = '#';
  for (n = strlen(line); n > 0 && line[n - 1] == ' '; n--)
    line[n - 1] = '\0';
  fprintf(f, "%s\n", line);
}

void bench_report_header(FILE *f, const struct bench_report *r)
{
  const struct bench_opts *o = r->o;
  static const char *const names[] = { "size", "count", "type", "redop", "root", "time",
                                       "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                                       "weft/raw" };
  static const char *const units[] = { "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                                       "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "(ratio)" };

  fprintf(f, "# weft-bench %s: weft %s, %s, NCCL %s\n", o->coll->name, weft_version_string(),
          r->mpi_version, r->nccl_version);
  if (o->nsizes)
    fprintf(f, "#  sizes: %d from %zu to %zu", o->nsizes, o->min_bytes, o->max_bytes);
  else
    fprintf(f, "#  minBytes %zu maxBytes %zu step: %ld(factor)", o->min_bytes, o->max_bytes,
            o->factor);
  fprintf(f, " warmup iters: %ld iters: %ld check: %d memory: %s%s%s\n", o->warmup, o->iters,
          o->check, o->device ? "device" : "host",
          r->raw_name ? " baseline: " : r->raw_note[0] ? " baseline: none: " : "",
          r->raw_name ? r->raw_name : r->raw_note);
  if (o->coll->tensors)
    fprintf(f, "#  tensors per size: %ld (fewer when a size has fewer elements)\n", o->tensors);
  fprintf(f, "#\n# %d rank%s on %d host%s:", r->nranks, r->nranks == 1 ? "" : "s", r->nhosts,
          r->nhosts == 1 ? "" : "s");
  for (int i = 0; i < r->nhosts; i++)
    fprintf(f, " %s", r->hosts[i]);
  fputs("\n", f);
  for (int i = 0; i < r->nranks; i++)
    fprintf(f, "#  Rank %3d Pid %7d on %-16s GPU %s NIC %s\n", i, r->rank_pid[i], r->rank_host[i],
            r->rank_gpu[i], r->rank_nic[i]);
  if (r->have_expect) {
    const struct bench_expect *e = &r->expect;

    fprintf(f, "#\n# Machine %s (from %s): GPU-data NICs %.0f Gbps per VM, ring busbw ceiling %.1f "
            "GB/s", e->machine, e->source, e->nic_gbps, e->ceiling);
    if (e->healthy_lo > 0 && e->healthy_hi > 0)
      fprintf(f, ", healthy busbw %.0f-%.0f GB/s", e->healthy_lo, e->healthy_hi);
    else if (e->healthy_lo > 0)
      fprintf(f, ", healthy busbw >= %.0f GB/s", e->healthy_lo);
    fprintf(f, "\n#   %s\n", e->note);
  }
  fputs("#\n", f);
  if (r->raw_name)
    fprintf(f, "#%65s%s%33s%s\n", "", "weft", "", r->raw_name);
  header_line(f, names, r->raw_name != NULL);
  header_line(f, units, r->raw_name != NULL);
}

void bench_report_row(FILE *f, const struct bench_report *r, const struct bench_row *w)
{
  const struct bench_opts *o = r->o;
  char size[24], count[24], root[12], t[16], al[16], bu[16], wr[24];

  snprintf(size, sizeof(size), "%zu", w->bytes);
  snprintf(count, sizeof(count), "%zu", w->count);
  snprintf(root, sizeof(root), "%d", o->coll->rooted ? o->root : -1);
  bench_fmt(t, 9, w->time_us);
  bench_fmt(al, 8, w->algbw);
  bench_fmt(bu, 8, w->busbw);
  if (w->wrong < 0)
    snprintf(wr, sizeof(wr), "N/A");
  else
    snprintf(wr, sizeof(wr), "%lld", w->wrong);
  fprintf(f, ROW_FMT, size, count, weft_dtype_name(w->dtype), redop_name(o, w->op), root, t, al, bu, wr);
  if (r->raw_name) {
    char rt[16], ra[16], rb[16], ratio[16];

    bench_fmt(rt, 9, w->raw_time_us);
    bench_fmt(ra, 8, w->raw_algbw);
    bench_fmt(rb, 8, w->raw_busbw);
    bench_fmt(ratio, 9, w->time_us > 0 && w->raw_time_us > 0 ? w->raw_time_us / w->time_us : -1);
    fprintf(f, RAW_FMT, rt, ra, rb, ratio);
  }
  fputs("\n", f);
  fflush(f);
}

/* Averages of the footer: busbw over all rows (nccl-tests' mean); weft/raw
 * over all rows and over the rows of 1 MiB and more as geometric means (the
 * mean that treats 2x faster and 2x slower alike) and the median of the
 * latter, which one disturbed row cannot move (ratio < 0 when there is none). */
struct averages {
  double busbw, ratio, ratio_big, median_big;
  int n, nbig;
  long long wrong;
};

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;

  return a < b ? -1 : a > b;
}

static void averages(const struct bench_report *r, struct averages *a)
{
  double logsum = 0, logbig = 0, *big = calloc((size_t)r->nrows + 1, sizeof(double));
  int nratio = 0;

  memset(a, 0, sizeof(*a));
  for (int i = 0; i < r->nrows; i++) {
    const struct bench_row *w = &r->rows[i];

    a->busbw += w->busbw;
    a->n++;
    if (w->wrong > 0)
      a->wrong += w->wrong;
    if (w->raw_time_us > 0 && w->time_us > 0) {
      double ratio = w->raw_time_us / w->time_us;

      logsum += log(ratio);
      nratio++;
      if (w->bytes >= (1u << 20)) {
        logbig += log(ratio);
        if (big)
          big[a->nbig] = ratio;
        a->nbig++;
      }
    }
  }
  a->busbw = a->n ? a->busbw / a->n : 0;
  a->ratio = nratio ? exp(logsum / nratio) : -1;
  a->ratio_big = a->nbig ? exp(logbig / a->nbig) : -1;
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
    fprintf(f, " (--min-busbw %g: %s)", r->o->min_busbw, a.busbw < r->o->min_busbw ? "FAILED" : "OK");
  fputs("\n", f);
  if (a.ratio > 0) {
    fprintf(f, "# Avg weft/raw ratio   : %.3f (geometric mean)", a.ratio);
    if (a.nbig)
      fprintf(f, "; from 1 MiB: %.3f, median %.3f (%d row%s)", a.ratio_big, a.median_big,
              a.nbig, a.nbig == 1 ? "" : "s");
    fputs("\n", f);
  }
  if (r->have_expect && r->nhosts > 1) {
    const struct bench_expect *e = &r->expect;
    double peak = 0;

    for (int i = 0; i < r->nrows; i++)
      peak = fmax(peak, r->rows[i].busbw);
    fprintf(f, "# Peak bus bandwidth   : %.3f GB/s = %.0f%% of %s's ring ceiling (%.1f GB/s)%s\n", peak,
            100 * peak / e->ceiling, e->machine, e->ceiling,
            e->healthy_lo <= 0 ? "" : peak >= e->healthy_lo ? ", in the healthy range"
                                                            : ", BELOW the healthy range");
  }
  fprintf(f, "#\n# Collective test concluded: %s: %s\n", r->o->coll->name,
          status == BENCH_EXIT_OK ? "OK" : "FAILED");
  return status;
}

/* JSON string with the escapes JSON needs. */
void bench_json_num(FILE *f, double v)
{
  if (isnan(v) || isinf(v) || v < 0)
    fputs("null", f);
  else
    fprintf(f, "%.6g", v);
}

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
  fputs("{\n  \"version\": 1,\n  \"tool\": \"weft-bench\",\n  \"collective\": ", f);
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
    weftx_json_string(f, weft_dtype_name(o->dtypes[i]));
  }
  fputs("],\n  \"ops\": [", f);
  for (int i = 0; i < (o->coll->reduces ? o->nops : 1); i++) {
    fputs(i ? ", " : "", f);
    weftx_json_string(f, redop_name(o, o->ops[i]));
  }
  fputs("]", f);
  fprintf(f, ",\n  \"root\": %d,\n  \"iters\": %ld,\n  \"warmup_iters\": %ld,\n  \"check\": %s,\n",
          o->coll->rooted ? o->root : -1, o->iters, o->warmup, o->check ? "true" : "false");
  fputs("  \"baseline\": ", f);
  if (r->raw_name)
    weftx_json_string(f, r->raw_name);
  else
    fputs("null", f);
  fputs(",\n  \"busbw_factor\": ", f);
  bench_json_num(f, o->coll->busbw_factor(r->nranks));
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
  fputs(",\n  \"results\": [\n", f);
  for (int i = 0; i < r->nrows; i++) {
    const struct bench_row *w = &r->rows[i];

    fprintf(f, "    { \"size\": %zu, \"count\": %zu, \"type\": ", w->bytes, w->count);
    weftx_json_string(f, weft_dtype_name(w->dtype));
    fputs(", \"redop\": ", f);
    weftx_json_string(f, redop_name(o, w->op));
    fputs(", \"time_us\": ", f);
    bench_json_num(f, w->time_us);
    fputs(", \"algbw\": ", f);
    bench_json_num(f, w->algbw);
    fputs(", \"busbw\": ", f);
    bench_json_num(f, w->busbw);
    fputs(", \"wrong\": ", f);
    if (w->wrong >= 0)
      fprintf(f, "%lld", w->wrong);
    else
      fputs("null", f);
    if (w->raw_time_us >= 0) {
      fputs(", \"raw\": { \"time_us\": ", f);
      bench_json_num(f, w->raw_time_us);
      fputs(", \"algbw\": ", f);
      bench_json_num(f, w->raw_algbw);
      fputs(", \"busbw\": ", f);
      bench_json_num(f, w->raw_busbw);
      fputs(" }, \"ratio\": ", f);
      bench_json_num(f, w->time_us > 0 && w->raw_time_us > 0 ? w->raw_time_us / w->time_us : -1);
    }
    fprintf(f, " }%s\n", i + 1 < r->nrows ? "," : "");
  }
  fprintf(f, "  ],\n  \"out_of_bounds\": %lld,\n  \"average_bus_bandwidth\": ", a.wrong);
  bench_json_num(f, a.busbw);
  fputs(",\n  \"average_ratio\": ", f);
  bench_json_num(f, a.ratio);
  fputs(",\n  \"average_ratio_1mib\": ", f);
  bench_json_num(f, a.ratio_big);
  fputs(",\n  \"median_ratio_1mib\": ", f);
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
