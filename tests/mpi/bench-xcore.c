/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the host collectives' figures depend on (not a test): how fast two
 * processors of this host pass data to each other. Two processes, pinned to
 * the first two processors this one may use, share a page and a buffer:
 *  - round trip: one flips a counter, the other answers, 200,000 times;
 *  - copy: one writes 1 MiB, the other copies it out, 200 times.
 * On a shared cloud VM both figures can change by a factor of 3 to 5 from one
 * minute to the next (where the host puts the two virtual processors), and
 * the host collectives, which move data between processors, follow them:
 * run this before and after a benchmark to know which state it ran in.
 *   tests/mpi/bench-xcore [runs (1)]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIPS 200000L
#define COPIES 200
#define BYTES ((size_t)1 << 20)

static double now(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
  cpu_set_t s;

  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof(s), &s);
}

/* The first two processors we may run on; -1 when there are fewer. */
static int two_cpus(int cpu[2])
{
  cpu_set_t s;
  int i, n = 0;

  if (sched_getaffinity(0, sizeof(s), &s) != 0)
    return -1;
  for (i = 0; i < CPU_SETSIZE && n < 2; i++)
    if (CPU_ISSET(i, &s))
      cpu[n++] = i;
  return n == 2 ? 0 : -1;
}

/* The answering side: the counter goes odd (ours to answer) to even. */
static void answer(_Atomic long *flag, _Atomic long *copy, char *buf)
{
  long i;
  int r;

  for (i = 0; i < TRIPS; i++) {
    while (atomic_load(flag) != 2 * i + 1)
      ;
    atomic_store(flag, 2 * i + 2);
  }
  for (r = 0; r < COPIES; r++) {
    while (atomic_load(copy) != 2 * r + 1)
      ;
    memset(buf, r, BYTES);
    atomic_store(copy, 2 * r + 2);
  }
}

static int run(const int cpu[2])
{
  char *shared =
    mmap(NULL, BYTES + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  _Atomic long *flag, *copy;
  char *buf, *mine;
  double t0, trip, spent = 0;
  long i;
  int r, st;
  pid_t pid;

  if (shared == MAP_FAILED) {
    perror("bench-xcore: mmap");
    return -1;
  }
  flag = (_Atomic long *)shared;
  copy = (_Atomic long *)(shared + 128); /* its own cache line */
  buf = shared + 4096;
  mine = malloc(BYTES);
  if (!mine) {
    fprintf(stderr, "bench-xcore: out of memory\n");
    munmap(shared, BYTES + 4096);
    return -1;
  }
  memset(mine, 1, BYTES);
  memset(buf, 1, BYTES);
  if (pin(cpu[0]) != 0) { /* before the fork: the other side re-pins itself */
    perror("bench-xcore: sched_setaffinity");
    free(mine);
    munmap(shared, BYTES + 4096);
    return -1;
  }
  pid = fork();
  if (pid < 0) {
    perror("bench-xcore: fork");
    free(mine);
    munmap(shared, BYTES + 4096);
    return -1;
  }
  if (pid == 0) {
    if (pin(cpu[1]) != 0)
      _exit(1);
    answer(flag, copy, buf);
    _exit(0);
  }
  t0 = now();
  for (i = 0; i < TRIPS; i++) {
    atomic_store(flag, 2 * i + 1);
    while (atomic_load(flag) != 2 * i + 2)
      ;
  }
  trip = (now() - t0) / (double)TRIPS;
  for (r = 0; r < COPIES; r++) {
    atomic_store(copy, 2 * r + 1);
    while (atomic_load(copy) != 2 * r + 2)
      ;
    t0 = now();
    memcpy(mine, buf, BYTES);
    spent += now() - t0;
  }
  free(mine);
  munmap(shared, BYTES + 4096);
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench-xcore: the process on CPU %d failed\n", cpu[1]);
    return -1;
  }
  printf(
    "CPUs %d and %d: round trip %.0f ns, 1 MiB written on one and copied on the other %.1f GB/s\n",
    cpu[0], cpu[1], trip * 1e9, (double)COPIES * (double)BYTES / spent / 1e9);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv)
{
  long runs = 1;
  int cpu[2], k;
  char *end;

  if (argc > 1) {
    runs = strtol(argv[1], &end, 10);
    if (*end || runs < 1 || runs > 1000) {
      fprintf(stderr, "bench-xcore: runs must be 1 to 1000, not '%s'\n", argv[1]);
      return 2;
    }
  }
  if (two_cpus(cpu) != 0) {
    fprintf(stderr, "bench-xcore: this process may run on fewer than 2 processors\n");
    return 2;
  }
  for (k = 0; k < runs; k++)
    if (run(cpu) != 0)
      return 1;
  return 0;
}
