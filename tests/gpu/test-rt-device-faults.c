/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime's device path where it used to go wrong (issue 12, part 1),
 * one scenario per run, for test-rt-device-faults.sh to start under mpirun
 * and the CUDA/NCCL stand-in (which ends a rank that breaks an NCCL or CUDA
 * rule). Only the public API (<weft.h>) and CUDA's.
 *
 *   cpu           host buffers only (the script checks that no rank made a
 *                 CUDA context)
 *   contexts      one device all-reduce (one context per rank, on its device)
 *   one-visible   the only visible device is device 0, whatever the local rank
 *   split-drain   a mesh group split while a world all-reduce is still queued
 *   pair          device send from rank 0 to 1 while rank 2 does nothing
 *   late-root     rank 0 comes to the first device call after the deadline;
 *                 rank 1 gives up, then checks that the late unique id did not
 *                 land in its stack, and that the group now fails at once
 *   async-error   an asynchronous NCCL error on rank 1 (the script injects it)
 *   async-late    the same, with rank 1's notice reaching rank 0 while rank 0's
 *                 first call, done with rank 1, has not finished yet
 *   async-held    the same, with rank 1's notice already there when rank 0's
 *                 first call, finished, comes back to weft
 *   abort-all     rank 1 times out alone; rank 0 must abort too
 *   deadline      work queued before a collective does not count against
 *                 WEFT_COLL_TIMEOUT
 *   nonccl        (test-rt-device-nonccl, built without NCCL) device buffers
 *                 are refused with WEFT_ENONCCL, host buffers still work
 * Prints "ok: SCENARIO" on rank 0 when everything held.
 */
#include <weft.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(cond, ...)                                                                        \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n");                                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)
#define CU(call) CK((call) == cudaSuccess, "%s", #call)

static int rank, size;
static weft_ctx *ctx;
static weft_group *world;
static cudaStream_t st;

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(void *arg)
{
  struct timespec ts = {(time_t)((size_t)arg / 1000), (long)((size_t)arg % 1000) * 1000000L};

  nanosleep(&ts, NULL);
}

/* n floats of value v on the device. */
static float *device_floats(size_t n, float v)
{
  float *h = malloc(n * sizeof(float)), *d;
  size_t i;

  CK(h != NULL, "malloc");
  for (i = 0; i < n; i++)
    h[i] = v;
  CU(cudaMalloc((void **)&d, n * sizeof(float)));
  CU(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, st));
  CU(cudaStreamSynchronize(st));
  free(h);
  return d;
}

static void expect_floats(const float *d, size_t n, float v, const char *what)
{
  float *h = malloc(n * sizeof(float));
  size_t i;

  CK(h != NULL, "malloc");
  CU(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  for (i = 0; i < n; i++)
    CK(h[i] == v, "%s [%zu]: %g, want %g", what, i, h[i], v);
  free(h);
}

static float sum_of_ranks(void)
{
  return (float)(size * (size - 1) / 2);
}

static void device_setup(void)
{
  CU(cudaSetDevice(weft_device(ctx)));
  CU(cudaStreamCreate(&st));
}

static void cpu(void)
{
  int x = rank, y = -1, all[64];
  weft_bucket *b;
  weft_mesh *m;

  CK(weft_allreduce(world, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0, "allreduce");
  CK(y == size * (size - 1) / 2, "allreduce gave %d", y);
  CK(size <= 64, "too many ranks");
  CK(weft_allgather(world, &x, all, 1, WEFT_INT32, NULL) == 0, "allgather");
  CK(weft_broadcast(world, &x, 1, WEFT_INT32, 0, NULL) == 0 && x == 0, "broadcast");
  CK(weft_bucket_create(world, WEFT_INT32, 0, &b) == 0, "bucket");
  CK(weft_bucket_add(b, all, (size_t)size) == 0, "bucket_add");
  CK(weft_bucket_allreduce(b, WEFT_SUM, NULL) == 0, "bucket_allreduce");
  weft_bucket_destroy(b);
  if (size % 2 == 0) {
    CK(weft_mesh_create(ctx, "a=2,b=*", &m) == 0, "mesh");
    CK(weft_mesh_group(m, "a") != NULL, "mesh group");
  }
  if (size >= 2 && rank < 2) {
    int v = 42 + rank;
    CK(rank == 0 ? weft_send(world, &v, 1, WEFT_INT32, 1, NULL) == 0
                 : weft_recv(world, &v, 1, WEFT_INT32, 0, NULL) == 0 && v == 42, "send/recv");
  }
}

static void contexts(void)
{
  float *d;

  device_setup();
  d = device_floats(256, (float)rank);
  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  expect_floats(d, 256, sum_of_ranks(), "allreduce");
}

static void one_visible(void)
{
  int n = 0;

  CU(cudaGetDeviceCount(&n));
  CK(n == 1, "%d devices visible; the script shows each rank one", n);
  CK(weft_device(ctx) == 0, "weft_device is %d with one visible GPU (local rank %d)",
     weft_device(ctx), weft_local_rank(ctx));
  contexts();
}

static void split_drain(void)
{
  weft_mesh *m;
  weft_group *a;
  float *d, *e;

  CK(size % 2 == 0, "needs an even number of ranks");
  device_setup();
  d = device_floats(1024, 1);
  e = device_floats(1024, (float)rank);
  /* The world's communicator up, then a call still queued behind half a
   * second of other work when the mesh group is split from it. */
  CK(weft_allreduce(world, d, d, 1024, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce");
  CU(cudaLaunchHostFunc(st, sleep_ms, (void *)(size_t)500));
  CK(weft_allreduce(world, d, d, 1024, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce");
  CK(weft_mesh_create(ctx, "a=2,b=*", &m) == 0, "mesh");
  a = weft_mesh_group(m, "a");
  CK(a != NULL, "mesh group: %s", weft_last_error(ctx));
  CK(weft_allreduce(a, e, e, 1024, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce on a: %s",
     weft_last_error(ctx));
  expect_floats(d, 1024, (float)(size * size), "world");
  expect_floats(e, 1024, (float)(rank / 2 * 4 + 1), "group a");
}

static void pair(void)
{
  double t0;
  float *d;

  CK(size >= 3, "needs 3 ranks or more");
  device_setup();
  d = device_floats(4096, (float)rank + 10);
  t0 = now();
  if (rank == 0)
    CK(weft_send(world, d, 4096, WEFT_FLOAT32, 1, st) == 0, "send: %s", weft_last_error(ctx));
  if (rank == 1)
    CK(weft_recv(world, d, 4096, WEFT_FLOAT32, 0, st) == 0, "recv: %s", weft_last_error(ctx));
  CU(cudaStreamSynchronize(st));
  if (rank == 1)
    expect_floats(d, 4096, 10, "received");
  CK(now() - t0 < 10, "a send between two ranks took %.1fs (it waited for the others)",
     now() - t0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Fill a large stretch of stack, let MPI make progress for a while (a late
 * broadcast lands then), and check that nothing wrote into it. */
static int __attribute__((noinline)) stack_untouched(double seconds)
{
  volatile unsigned char buf[32768];
  double end = now() + seconds;
  size_t i;
  int flag;

  for (i = 0; i < sizeof(buf); i++)
    buf[i] = 0x5a;
  while (now() < end) {
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    usleep(2000);
  }
  for (i = 0; i < sizeof(buf); i++)
    if (buf[i] != 0x5a) {
      fprintf(stderr, "rank %d: byte %zu of the stack changed under us (0x%02x): a late MPI "
              "request wrote into a dead frame\n", rank, i, buf[i]);
      return 0;
    }
  return 1;
}

/* After the group's communicator failed, a device call on it fails at once. */
static void fails_at_once(float *d, const char *what)
{
  double t0 = now();
  int rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);

  CK(rc != 0 && now() - t0 < 1, "allreduce %s: %s after %.1fs", what, weft_strerror(rc),
     now() - t0);
}

static void late_root(void)
{
  float *d;
  int rc;

  device_setup();
  d = device_floats(256, 1);
  if (rank == 0) {
    sleep(3); /* past the others' WEFT_INIT_TIMEOUT */
    rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);
    CK(rc != 0, "rank 0's allreduce succeeded alone");
  } else {
    rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);
    CK(rc == WEFT_ETIMEDOUT, "allreduce without rank 0: %s", weft_strerror(rc));
    CK(stack_untouched(5), "the unique id of a late rank 0 landed in a dead stack frame");
    fails_at_once(d, "after the bootstrap failed");
    CK(strstr(weft_last_error(ctx), "failed") != NULL, "second allreduce said: %s",
       weft_last_error(ctx));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The device, 256 floats, and the world's communicator up (one all-reduce). */
static float *world_up(void)
{
  float *d;

  device_setup();
  d = device_floats(256, 1);
  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "first allreduce: %s",
     weft_last_error(ctx));
  return d;
}

static void async_error(void)
{
  float *d = world_up();
  int rc;

  rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st); /* fails on rank 1 */
  CK(rc == WEFT_ENCCL, "allreduce with an asynchronous error: %s (%s)", weft_strerror(rc),
     weft_last_error(ctx));
  fails_at_once(d, "after the error");
  MPI_Barrier(MPI_COMM_WORLD);
}

static void abort_all(void)
{
  float *d = world_up();
  int rc;

  /* Rank 1's broadcast never completes (the script injects it); rank 0, the
   * root, is done at once. */
  rc = weft_broadcast(world, d, 256, WEFT_FLOAT32, 0, st);
  CK(rank == 0 ? rc == 0 : rc == WEFT_ETIMEDOUT, "broadcast: %s (%s)", weft_strerror(rc),
     weft_last_error(ctx));
  MPI_Barrier(MPI_COMM_WORLD);
  fails_at_once(d, "after rank 1 aborted");
  if (rank == 0)
    CK(strstr(weft_last_error(ctx), "world rank 1") != NULL, "rank 0 was told: %s",
       weft_last_error(ctx));
  MPI_Barrier(MPI_COMM_WORLD);
}

static void deadline(void)
{
  float *d;
  int rc;

  device_setup();
  d = device_floats(256, (float)rank);
  /* The communicator up first: its bootstrap is not what is timed here. */
  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "first allreduce: %s",
     weft_last_error(ctx));
  CU(cudaStreamSynchronize(st));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1)
    usleep(2500000);
  /* 3.5 s of the caller's own work, then the collective, with
   * WEFT_COLL_TIMEOUT=5 (the script): rank 0 waits 6 s in all, 2.5 of them
   * in the collective, waiting for rank 1. */
  CU(cudaLaunchHostFunc(st, sleep_ms, (void *)(size_t)3500));
  rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);
  CK(rc == 0, "allreduce behind 3.5 s of other work: %s (%s)", weft_strerror(rc),
     weft_last_error(ctx));
  expect_floats(d, 256, sum_of_ranks() * (float)size, "allreduce");
}

static void nonccl(void)
{
  weft_bucket *b;
  float *d;
  int rc, x = 1, y = 0;

  device_setup();
  d = device_floats(256, 1);
  rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);
  CK(rc == WEFT_ENONCCL, "device allreduce without NCCL: %s", weft_strerror(rc));
  CK(strstr(weft_last_error(ctx), "NCCL") != NULL, "said: %s", weft_last_error(ctx));
  CK(weft_bucket_create(world, WEFT_FLOAT32, 0, &b) == 0 && weft_bucket_add(b, d, 256) == 0,
     "bucket");
  CK(weft_bucket_allreduce(b, WEFT_SUM, st) == WEFT_ENONCCL, "device bucket without NCCL");
  weft_bucket_destroy(b);
  CK(weft_allreduce(world, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0 && y == size,
     "host allreduce");
}

static const struct {
  const char *name;
  void (*fn)(void);
} scenarios[] = {
  {"cpu", cpu}, {"contexts", contexts}, {"one-visible", one_visible},
  {"split-drain", split_drain}, {"pair", pair}, {"late-root", late_root},
  {"async-error", async_error}, {"async-late", async_error}, {"async-held", async_error},
  {"abort-all", abort_all}, {"deadline", deadline},
  {"nonccl", nonccl},
};

int main(int argc, char **argv)
{
  size_t i;

  if (argc != 2) {
    fprintf(stderr, "usage: test-rt-device-faults SCENARIO (see the source)\n");
    return 2;
  }
  if (weft_init(&argc, &argv, &ctx) != 0)
    return 1;
  world = weft_world(ctx);
  rank = weft_rank(ctx);
  size = weft_size(ctx);
  for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
    if (!strcmp(argv[1], scenarios[i].name)) {
      scenarios[i].fn();
      if (st)
        cudaStreamDestroy(st);
      CK(weft_finalize(ctx) == 0, "finalize");
      if (rank == 0)
        printf("ok: %s on %d ranks\n", argv[1], size);
      return 0;
    }
  fprintf(stderr, "test-rt-device-faults: no scenario %s\n", argv[1]);
  weft_finalize(ctx);
  return 2;
}
