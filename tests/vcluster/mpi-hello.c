/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi-hello: the smallest real MPI job for the vcluster tests. Each rank
 * prints "rank R of N on HOST", then all ranks check an all-reduce (the sum of
 * rank+1 over all ranks must be N(N+1)/2) and rank 0 prints "allreduce ok N".
 * With "--loop SECONDS" the ranks repeat the all-reduce (one every 100 ms) for
 * that long, so a test can kill a node while the job is in flight.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int
check(int rc, const char *what)
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

static int
allreduce_ok(int rank, int size)
{
  long mine = rank + 1, sum = 0;
  long want = (long)size * (size + 1) / 2;

  if (check(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce"))
    return 0;
  if (sum != want) {
    fprintf(stderr, "mpi-hello: rank %d: all-reduce gave %ld, expected %ld\n",
            rank, sum, want);
    return 0;
  }
  return 1;
}

int
main(int argc, char **argv)
{
  char host[MPI_MAX_PROCESSOR_NAME];
  int rank = 0, size = 0, len = 0, ok;
  long loop_s = 0;
  time_t end;

  if (argc == 3 && strcmp(argv[1], "--loop") == 0) {
    char *e = NULL;
    loop_s = strtol(argv[2], &e, 10);
    if (*argv[2] == '\0' || *e != '\0' || loop_s < 0 || loop_s > 3600) {
      fprintf(stderr, "mpi-hello: --loop wants seconds in 0..3600, not '%s'\n", argv[2]);
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "usage: mpi-hello [--loop SECONDS]\n");
    return 2;
  }

  check(MPI_Init(&argc, &argv), "MPI_Init");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  check(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name");
  printf("rank %d of %d on %s\n", rank, size, host);
  fflush(stdout);

  ok = allreduce_ok(rank, size);
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
