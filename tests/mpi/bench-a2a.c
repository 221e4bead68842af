/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-all and the pipeline exchange on host memory against raw MPI on
 * the same buffers (not a test: figures, README and libweft(3)):
 *   a2a       weft_alltoall against MPI_Alltoall, bytes, from 8 B to 64 MiB
 *             per rank (the rank's whole send buffer, as nccl-tests' size
 *             column), x2 per step;
 *   sendrecv  weft_sendrecv against MPI_Sendrecv of the same size (a pipeline
 *             stage's exchange with its neighbours; 2 ranks: with each other).
 * Contenders alternate: each round times ITERS calls of one, then of the
 * other (which goes first alternates too), the slowest rank's time counting;
 * a size's figure is the median round of each, and the ratio MPI / weft
 * (above 1: weft is faster). Output lines, one per size:
 *   a2a SIZE weft_us mpi_us ratio
 *   mpirun -np N tests/mpi/bench-a2a [a2a|sendrecv] [rounds (15)] [max bytes (64M)]
 *   mpirun -np N tests/mpi/bench-a2a a2a ROUNDS 8,1K,64K,1M,16M,64M   (those sizes only)
 */
#include <weft.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Seconds per call of iters calls of one contender, the slowest rank's. */
static double timed(weft_group *w, int which, int mode, void *s, void *r, size_t n, int iters)
{
  int rank = weft_group_rank(w), p = weft_group_size(w), i, rc = 0;
  int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  double t0, t;

  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (i = 0; i < iters && rc == 0; i++) {
    if (mode == 0 && which == 0)
      rc = weft_alltoall(w, s, r, n / (size_t)p, WEFT_UINT8, NULL);
    else if (mode == 0)
      rc = MPI_Alltoall(s, (int)(n / (size_t)p), MPI_BYTE, r, (int)(n / (size_t)p), MPI_BYTE,
                        MPI_COMM_WORLD);
    else if (which == 0)
      rc = weft_sendrecv(w, s, n, next, r, n, prev, WEFT_UINT8, NULL);
    else
      rc = MPI_Sendrecv(s, (int)n, MPI_BYTE, next, 9, r, (int)n, MPI_BYTE, prev, 9, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
  }
  t = (MPI_Wtime() - t0) / iters;
  if (rc != 0) {
    fprintf(stderr, "bench-a2a: %s failed: %d (%s)\n", which ? "MPI" : "weft", rc,
            weft_last_error(weft_group_ctx(w)));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

/* "64M", "1K", "8": bytes; 0 when not such a number. */
static size_t bytes_of(const char *s, char **end)
{
  size_t v = strtoull(s, end, 10);

  if (*end == s)
    return 0;
  if (**end == 'K' || **end == 'M' || **end == 'G')
    v <<= **end == 'K' ? 10 : **end == 'M' ? 20 : 30, (*end)++;
  return v;
}

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  weft_group *w;
  int mode, rounds, rank, p, k;
  size_t max, bytes, first, list[32];
  int nlist = 0, li = 0;
  char *end;

  if (weft_init(&argc, &argv, &ctx) != 0)
    return 1;
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  p = weft_size(ctx);
  mode = argc > 1 && !strcmp(argv[1], "sendrecv");
  rounds = argc > 2 ? (int)strtol(argv[2], &end, 10) : 15;
  max = (size_t)64 << 20;
  if (argc > 3) {
    const char *q = argv[3];
    for (;;) {
      size_t v = bytes_of(q, &end);
      if (v == 0 || nlist == 32 || (*end && *end != ','))
        break;
      list[nlist++] = max = v;
      if (!*end)
        break;
      q = end + 1;
    }
    if (nlist == 0 || *end)
      max = 0; /* refused below */
    if (nlist == 1)
      nlist = 0; /* a single number: the largest of the sweep */
  }
  if (rounds < 1 || max < 4 || (mode && p < 2)) {
    fprintf(stderr, "usage: mpirun -np N bench-a2a [a2a|sendrecv] [rounds] "
                    "[max bytes | SIZE,SIZE,...]\n");
    return 2;
  }
  first = mode ? max : nlist ? list[0] : (size_t)(8 < p ? p : 8);
  for (bytes = first; bytes > 0 && (nlist || bytes <= max);
       bytes = nlist ? (++li < nlist ? list[li] : 0) : bytes * 2) {
    size_t n = bytes / (mode ? 1 : (size_t)p) * (mode ? 1 : (size_t)p);
    char *s = malloc(n + 64), *r = malloc(n + 64);
    double tw[64], tm[64];
    int iters = (int)(((size_t)4 << 20) / (bytes + 1024)), nr = rounds > 64 ? 64 : rounds;
    if (!s || !r) {
      fprintf(stderr, "bench-a2a: out of memory for %zu bytes\n", bytes);
      return 1;
    }
    if (iters < 2)
      iters = 2;
    if (iters > 2000)
      iters = 2000;
    memset(s, 1, n + 64);
    memset(r, 2, n + 64);
    timed(w, 0, mode, s, r, n, iters); /* warm-up: arenas, pages */
    timed(w, 1, mode, s, r, n, iters);
    for (k = 0; k < nr; k++) {
      int a = k % 2;
      double t1 = timed(w, a, mode, s, r, n, iters), t2 = timed(w, !a, mode, s, r, n, iters);
      tw[k] = a ? t2 : t1;
      tm[k] = a ? t1 : t2;
    }
    if (rank == 0) {
      double mw = median(tw, nr), mm = median(tm, nr);
      printf("%s %zu %.2f %.2f %.3f\n", mode ? "sendrecv" : "a2a", n, mw * 1e6, mm * 1e6, mm / mw);
      fflush(stdout);
    }
    free(s);
    free(r);
    if (mode)
      break;
  }
  weft_finalize(ctx);
  return 0;
}
