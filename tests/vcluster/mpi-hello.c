/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi-hello: the smallest real MPI job for the vcluster tests. Each rank
 * prints "rank R of N on HOST", then all ranks check an all-reduce (the sum of
 * rank+1 over all ranks must be N(N+1)/2) and rank 0 prints "allreduce ok N".
 * With "--loop SECONDS" the ranks repeat the all-reduce (one every 100 ms) for
 * that long, so a test can kill a node while the job is in flight.
 * "--abort R" and "--nofinalize R" (after --loop, or alone): after the first
 * all-reduce rank R calls MPI_Abort(5), or returns 0 without MPI_Finalize,
 * while the others go on (the supervision tests' faults).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check(int rc, const char *what)
{
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;

  if (rc == MPI_SUCCESS)
    return 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "mpi-hello: %s failed: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

static int allreduce_ok(int rank, int size)
{
  long mine = rank + 1, sum = 0;
  long want = (long)size * (size + 1) / 2;

  if (check(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce"))
    return 0;
  if (sum != want) {
    fprintf(stderr, "mpi-hello: rank %d: all-reduce gave %ld, expected %ld\n", rank, sum, want);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv)
{
  char host[MPI_MAX_PROCESSOR_NAME];
  int rank = 0, size = 0, len = 0, ok;
  long loop_s = 0;
  time_t end;

  long fault_rank = -1;
  const char *fault = NULL;
  for (int i = 1; i < argc; i += 2) {
    char *e = NULL;
    long v = i + 1 < argc ? strtol(argv[i + 1], &e, 10) : -1;
    if (i + 1 >= argc || *argv[i + 1] == '\0' || *e != '\0' || v < 0 || v > 3600) {
      fprintf(stderr, "usage: mpi-hello [--loop SECONDS] [--abort RANK | --nofinalize RANK]\n");
      return 2;
    }
    if (!strcmp(argv[i], "--loop")) {
      loop_s = v;
    } else if (!strcmp(argv[i], "--abort") || !strcmp(argv[i], "--nofinalize")) {
      fault = argv[i];
      fault_rank = v;
    } else {
      fprintf(stderr, "usage: mpi-hello [--loop SECONDS] [--abort RANK | --nofinalize RANK]\n");
      return 2;
    }
  }

  check(MPI_Init(&argc, &argv), "MPI_Init");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  check(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name");
  printf("rank %d of %d on %s\n", rank, size, host);
  fflush(stdout);

  ok = allreduce_ok(rank, size);
  if (fault && rank == fault_rank) {
    const char *mark = getenv("WEFT_TEST_FAULT_FILE"); /* when the fault comes, for tests */
    FILE *f = mark ? fopen(mark, "w") : NULL;
    usleep(500000);
    if (f) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      fprintf(f, "%ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
      fclose(f);
    }
    if (!strcmp(fault, "--abort"))
      MPI_Abort(MPI_COMM_WORLD, 5);
    return 0; /* --nofinalize */
  }
  end = time(NULL) + loop_s;
  while (ok && loop_s > 0 && time(NULL) < end) {
    usleep(100000);
    ok = allreduce_ok(rank, size);
  }
  if (ok && rank == 0) {
    printf("allreduce ok %d\n", size);
    fflush(stdout);
  }
  check(MPI_Finalize(), "MPI_Finalize");
  return ok ? 0 : 1;
}
