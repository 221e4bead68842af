/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heat2d: explicit 2-D heat diffusion on an NY x NX grid with fixed edges (top
 * edge hot, left edge warm), the shape of an MPI simulation on libweft.
 *
 * The interior rows are cut into one contiguous band per rank. Before each
 * step a rank swaps its first and last rows with its neighbours' halo rows
 * through weft_send/weft_recv, in two phases (even ranks send first, odd ranks
 * receive first) so that no pair of blocking sends waits on each other. Each
 * cell's update reads the same values whatever the decomposition, so the
 * final grid is bit for bit the one of a 1-rank run; rank 0 gathers it and
 * prints a checksum and a hash of its bytes, which the tests compare.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#include "args.h"

struct opts {
  long nx, ny, steps;
};

struct band {
  long nx, ny;   /* whole grid, edges included */
  long lo, hi;   /* this rank's rows [lo, hi) of the grid */
  double *u, *v; /* rows lo-1 .. hi (halos included), nx each */
};

#define ROW(b, p, i) ((p) + ((i) - (b)->lo + 1) * (b)->nx)

static const char usage_text[] =
  "usage: heat2d [--nx N] [--ny N] [--steps N]\n"
  "2-D heat diffusion with rows split across ranks and halo exchange through\n"
  "weft_send/weft_recv; prints a checksum of the final grid (the same on any\n"
  "number of ranks).\n";

static int parse_opts(int argc, char **argv, struct opts *o)
{
  o->nx = 128;
  o->ny = 128;
  o->steps = 2000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long *dst;
    int rc;

    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage_text, stdout);
      return 1;
    }
    if (!strcmp(a, "--nx"))
      dst = &o->nx;
    else if (!strcmp(a, "--ny"))
      dst = &o->ny;
    else if (!strcmp(a, "--steps"))
      dst = &o->steps;
    else {
      fprintf(stderr, "heat2d: unknown option '%s'; see heat2d --help\n", a);
      return -1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "heat2d: option %s needs a value\n", a);
      return -1;
    }
    rc = example_parse_long(argv[++i], dst == &o->steps ? 0 : 3, 1L << 16, dst);
    if (rc) {
      fprintf(stderr, "heat2d: bad value '%s' for %s: %s (3 to 65536; steps from 0)\n", argv[i], a,
              weft_strerror(rc));
      return -1;
    }
  }
  return 0;
}

/* The fixed edge values: 1 on the top edge, 0.5 on the left one, 0 elsewhere. */
static double edge(long i, long j) { return i == 0 ? 1.0 : j == 0 ? 0.5 : 0.0; }

static int band_init(struct band *b, const struct opts *o, int rank, int size)
{
  long inner = o->ny - 2;

  memset(b, 0, sizeof(*b));
  b->nx = o->nx;
  b->ny = o->ny;
  b->lo = 1 + inner * rank / size;
  b->hi = 1 + inner * (rank + 1) / size;
  b->u = calloc((size_t)((b->hi - b->lo + 2) * b->nx), sizeof(double));
  b->v = calloc((size_t)((b->hi - b->lo + 2) * b->nx), sizeof(double));
  if (!b->u || !b->v)
    return WEFT_ENOMEM;
  for (long i = b->lo - 1; i <= b->hi; i++)
    for (long j = 0; j < b->nx; j++) {
      int on_edge = i == 0 || i == b->ny - 1 || j == 0 || j == b->nx - 1;
      ROW(b, b->u, i)[j] = ROW(b, b->v, i)[j] = on_edge ? edge(i, j) : 0.0;
    }
  return 0;
}

/* Swap one row with rank peer: send ours, receive theirs, in the order that
 * the parity of our rank says. */
static int swap_row(weft_group *g, int rank, int peer, const double *out, double *in, long n)
{
  int rc;

  if (rank % 2 == 0) {
    rc = weft_send(g, out, (size_t)n, WEFT_FLOAT64, peer, NULL);
    if (rc == 0)
      rc = weft_recv(g, in, (size_t)n, WEFT_FLOAT64, peer, NULL);
  } else {
    rc = weft_recv(g, in, (size_t)n, WEFT_FLOAT64, peer, NULL);
    if (rc == 0)
      rc = weft_send(g, out, (size_t)n, WEFT_FLOAT64, peer, NULL);
  }
  return rc;
}

/* Fill the halo rows from the neighbours. Phase 1 pairs (0,1), (2,3), ...;
 * phase 2 pairs (1,2), (3,4), ... */
static int exchange(weft_group *g, struct band *b)
{
  int rank = weft_group_rank(g), size = weft_group_size(g), rc = 0;

  for (int phase = 0; phase < 2 && rc == 0; phase++) {
    int down = (rank % 2 == phase) ? rank + 1 : -1; /* our partner below, if any */
    int up = (rank % 2 != phase) ? rank - 1 : -1;   /* our partner above, if any */

    if (down >= 0 && down < size)
      rc = swap_row(g, rank, down, ROW(b, b->u, b->hi - 1), ROW(b, b->u, b->hi), b->nx);
    else if (up >= 0)
      rc = swap_row(g, rank, up, ROW(b, b->u, b->lo), ROW(b, b->u, b->lo - 1), b->nx);
  }
  return rc;
}

/* One explicit step of u_t = k (u_xx + u_yy) with k dt / h^2 = 0.2. */
static void step(struct band *b)
{
  double *t;

  for (long i = b->lo; i < b->hi; i++) {
    const double *n = ROW(b, b->u, i - 1), *c = ROW(b, b->u, i), *s = ROW(b, b->u, i + 1);
    double *o = ROW(b, b->v, i);

    for (long j = 1; j < b->nx - 1; j++)
      o[j] = c[j] + 0.2 * (n[j] + s[j] + c[j - 1] + c[j + 1] - 4.0 * c[j]);
  }
  t = b->u;
  b->u = b->v;
  b->v = t;
}

/* Rank 0 receives every band into the whole grid (rows 1 .. ny-2) and prints
 * the checksum; the other ranks send theirs. */
static int gather_and_report(weft_group *g, struct band *b, const struct opts *o, double secs)
{
  int rank = weft_group_rank(g), size = weft_group_size(g), rc = 0;
  double *grid, sum = 0, center;
  uint64_t hash = 0xcbf29ce484222325ULL;
  long inner = b->ny - 2;

  if (rank != 0)
    return weft_send(g, ROW(b, b->u, b->lo), (size_t)((b->hi - b->lo) * b->nx), WEFT_FLOAT64, 0,
                     NULL);
  grid = malloc((size_t)(b->ny * b->nx) * sizeof(double));
  if (!grid)
    return WEFT_ENOMEM;
  for (long j = 0; j < b->nx; j++) {
    grid[j] = edge(0, j);
    grid[(b->ny - 1) * b->nx + j] = edge(b->ny - 1, j);
  }
  memcpy(grid + b->lo * b->nx, ROW(b, b->u, b->lo),
         (size_t)((b->hi - b->lo) * b->nx) * sizeof(double));
  for (int r = 1; r < size && rc == 0; r++) {
    long lo = 1 + inner * r / size, hi = 1 + inner * (r + 1) / size;

    rc = weft_recv(g, grid + lo * b->nx, (size_t)((hi - lo) * b->nx), WEFT_FLOAT64, r, NULL);
  }
  if (rc == 0) {
    const unsigned char *p = (const unsigned char *)grid;

    for (long k = 0; k < b->ny * b->nx; k++)
      sum += grid[k];
    for (size_t k = 0; k < (size_t)(b->ny * b->nx) * sizeof(double); k++)
      hash = (hash ^ p[k]) * 0x100000001b3ULL;
    center = grid[(b->ny / 2) * b->nx + b->nx / 2];
    printf("heat2d: %d rank%s, grid %ldx%ld, %ld steps, %.2f s\n", size, size == 1 ? "" : "s",
           o->ny, o->nx, o->steps, secs);
    printf("checksum %.15e  center %.15e  hash %016llx\n", sum, center, (unsigned long long)hash);
  }
  free(grid);
  return rc;
}

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int simulate(weft_group *g, const struct opts *o)
{
  int rank = weft_group_rank(g), size = weft_group_size(g), rc;
  struct band b;
  double t0 = now();

  if (o->ny - 2 < size) {
    if (rank == 0)
      fprintf(stderr,
              "heat2d: %ld interior rows cannot be split across %d ranks; "
              "use --ny %d or more\n",
              o->ny - 2, size, size + 2);
    return WEFT_EINVAL;
  }
  rc = band_init(&b, o, rank, size);
  for (long s = 0; s < o->steps && rc == 0; s++) {
    rc = exchange(g, &b);
    if (rc == 0)
      step(&b);
  }
  if (rc == 0)
    rc = gather_and_report(g, &b, o, now() - t0);
  if (rc)
    fprintf(stderr, "heat2d: rank %d: %s\n", rank, weft_strerror(rc));
  free(b.u);
  free(b.v);
  return rc;
}

int main(int argc, char **argv)
{
  struct opts o;
  weft_ctx *ctx = NULL;
  int rc;

  if (weft_check_version(stderr, argv[0]))
    return 1;
  rc = weft_init(&argc, &argv, &ctx);
  if (rc) {
    fprintf(stderr, "heat2d: weft_init failed: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = parse_opts(argc, argv, &o);
  /* After a failed exchange the other ranks may never reach finalize, so
   * leave without it and let the launcher end the job. */
  if (rc == 0 && simulate(weft_world(ctx), &o) != 0)
    return 1;
  weft_finalize(ctx);
  return rc < 0 ? 2 : 0;
}
