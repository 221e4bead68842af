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
 *   p2p-up        the world's communicator up, then a device send from rank 0
 *                 to 1 while rank 2 does nothing more: done without rank 2
 *   p2p-first     a send from rank 0 to 1 is the world's first device call;
 *                 it brings up the group's communicator, which rank 2 never
 *                 joins: both fail within WEFT_INIT_TIMEOUT naming rank 2
 *   late-root     rank 0 comes to the first device call after the deadline;
 *                 rank 1 gives up, then checks that the late unique id did not
 *                 land in its stack, and that the group now fails at once
 *   async-error   an asynchronous NCCL error in rank 1's second call (the
 *                 script injects it): the call or weft_group_wait() fails on
 *                 both ranks, and the first call's result is intact
 *   async-late    the same, with rank 1's notice reaching rank 0 while rank 0's
 *                 first call, done with rank 1, has not finished yet
 *   async-held    the same, with rank 1's notice already there when rank 0's
 *                 first call, finished, comes back to weft
 *   abort-all     rank 1's broadcast never completes: weft_group_wait() fails
 *                 on both ranks within WEFT_COLL_TIMEOUT, both abort
 *   deadline      work queued before a collective does not count against
 *                 WEFT_COLL_TIMEOUT, and the call does not wait for the GPU
 *   watchdog      rank 1's call never completes while the program waits in
 *                 cudaStreamSynchronize: the watchdog ends the rank (124)
 *   device-kept   the thread's current device is the same after weft's calls
 *                 as before (another device, or none at all)
 *   blocking      with NCCL_COMM_BLOCKING=1 (the script sets it) the device
 *                 calls, a mesh split and a send still work
 *   blocking-absent  the same, rank 1 never joins the world's communicator:
 *                 the watchdog ends the ranks stuck in NCCL's blocking init
 *   nonccl        (test-rt-device-nonccl, built without NCCL) device buffers
 *                 are refused with WEFT_ENONCCL, host buffers still work
 * Prints "ok: SCENARIO" on rank 0 when everything held.
 */
#include <weft.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(cond, ...)                                                                              \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__);                           \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
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

static float sum_of_ranks(void) { return (float)(size * (size - 1) / 2); }

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
                 : weft_recv(world, &v, 1, WEFT_INT32, 0, NULL) == 0 && v == 42,
       "send/recv");
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

/* A send between two ranks of a group whose communicator is up needs
 * nothing from the others. */
static void p2p_up(void)
{
  double t0;
  float *d, *e;

  CK(size >= 3, "needs 3 ranks or more");
  device_setup();
  d = device_floats(4096, (float)rank + 10);
  e = device_floats(1, 1);
  CK(weft_allreduce(world, e, e, 1, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  CU(cudaStreamSynchronize(st));
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = now();
  if (rank == 0)
    CK(weft_send(world, d, 4096, WEFT_FLOAT32, 1, st) == 0, "send: %s", weft_last_error(ctx));
  if (rank == 1)
    CK(weft_recv(world, d, 4096, WEFT_FLOAT32, 0, st) == 0, "recv: %s", weft_last_error(ctx));
  CK(weft_group_wait(world) == 0, "wait: %s", weft_last_error(ctx));
  if (rank == 1)
    expect_floats(d, 4096, 10, "received");
  CK(now() - t0 < 10, "a send between two ranks took %.1fs (it waited for the others)", now() - t0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The group's first device call is a send: its communicator comes up then,
 * and NCCL's init needs every member. */
static void p2p_first(void)
{
  float *d;
  int rc;

  CK(size >= 3, "needs 3 ranks or more");
  device_setup();
  d = device_floats(4096, (float)rank + 10);
  if (rank == 0)
    rc = weft_send(world, d, 4096, WEFT_FLOAT32, 1, st);
  else if (rank == 1)
    rc = weft_recv(world, d, 4096, WEFT_FLOAT32, 0, st);
  else
    rc = WEFT_ETIMEDOUT;
  CK(rc == WEFT_ETIMEDOUT, "p2p without rank 2: %s (%s)", weft_strerror(rc), weft_last_error(ctx));
  if (rank == 0)
    CK(strstr(weft_last_error(ctx), "2(absent)") != NULL, "rank 0 said: %s", weft_last_error(ctx));
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
      fprintf(stderr,
              "rank %d: byte %zu of the stack changed under us (0x%02x): a late MPI "
              "request wrote into a dead frame\n",
              rank, i, buf[i]);
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
    sleep(7); /* past the others' WEFT_INIT_TIMEOUT */
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

/* Rank 1's second call fails with an asynchronous error (the script
 * injects it). The call itself returns at once or already fails; then
 * weft_group_wait() fails on both ranks, both abort (the stand-in checks),
 * and the first call, which both finished, kept its result. */
static void async_error(void)
{
  float *d, *e;
  int rc, rw;

  device_setup();
  e = device_floats(256, (float)rank);
  d = device_floats(256, 1);
  /* Not synchronised: rank 0's may still run when rank 1's notice comes. */
  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "first allreduce: %s",
     weft_last_error(ctx));

  if (rank == 1) /* it counts the first call as finished in its notice */
    CK(weft_group_wait(world) == 0, "wait: %s", weft_last_error(ctx));
  rc = weft_allreduce(world, e, e, 256, WEFT_FLOAT32, WEFT_SUM, st); /* fails on rank 1 */
  CK(rc == 0 || rc == WEFT_ENCCL, "allreduce with an asynchronous error: %s (%s)",
     weft_strerror(rc), weft_last_error(ctx));
  rw = weft_group_wait(world);
  CK(rw == WEFT_ENCCL, "wait after an asynchronous error: %s (%s)", weft_strerror(rw),
     weft_last_error(ctx));
  expect_floats(d, 256, (float)size, "the first allreduce, finished before the error");
  fails_at_once(d, "after the error");
  MPI_Barrier(MPI_COMM_WORLD);
}

static void abort_all(void)
{
  float *d = world_up();
  int rc;

  /* Rank 1's broadcast never completes (the script injects it), so neither
   * does rank 0's: NCCL's root finishes only with its receivers. */
  rc = weft_broadcast(world, d, 256, WEFT_FLOAT32, 0, st);
  CK(rc == 0, "broadcast: %s (%s)", weft_strerror(rc), weft_last_error(ctx));
  rc = weft_group_wait(world);
  CK(rc == WEFT_ETIMEDOUT || rc == WEFT_ENCCL, "wait: %s (%s)", weft_strerror(rc),
     weft_last_error(ctx));
  /* whichever rank timed out first told the other */
  CK(strstr(weft_last_error(ctx), "aborted the group's NCCL communicator") != NULL ||
       strstr(weft_last_error(ctx), "timed out") != NULL,
     "said: %s", weft_last_error(ctx));
  MPI_Barrier(MPI_COMM_WORLD);
  fails_at_once(d, "after the group failed");
  MPI_Barrier(MPI_COMM_WORLD);
}

static void deadline(void)
{
  float *d;
  double t0;
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
   * in the collective, waiting for rank 1. The call itself returns at once. */
  CU(cudaLaunchHostFunc(st, sleep_ms, (void *)(size_t)3500));
  t0 = now();
  rc = weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st);
  CK(rc == 0, "allreduce behind 3.5 s of other work: %s (%s)", weft_strerror(rc),
     weft_last_error(ctx));
  CK(now() - t0 < 1, "the allreduce waited %.1fs for the GPU", now() - t0);
  rc = weft_group_wait(world);
  CK(rc == 0, "wait: %s (%s)", weft_strerror(rc), weft_last_error(ctx));
  expect_floats(d, 256, sum_of_ranks() * (float)size, "allreduce");
}

/* Rank 1's second call never completes (the script injects it) and the
 * program waits for its stream outside weft: the watchdog ends the rank. */
static void watchdog(void)
{
  float *d = world_up();

  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  cudaStreamSynchronize(st); /* never returns on rank 1, nor on rank 0 */
  CK(0, "the stream of a call that never completes finished");
}

/* weft's calls leave the thread's current device as it was: another device
 * than weft's, or (a new thread) none, where no context is made. */
static void *on_fresh_thread(void *arg)
{
  float *d = arg;

  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  return NULL;
}

static void device_kept(void)
{
  int n = 0, cur = -1, other;
  pthread_t t;
  float *d;

  CU(cudaGetDeviceCount(&n));
  CK(n >= 2, "needs two visible devices");
  device_setup();
  d = device_floats(256, 1);
  other = (weft_device(ctx) + 1) % n;
  CU(cudaSetDevice(other));
  CK(weft_allreduce(world, d, d, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  CK(weft_group_wait(world) == 0, "wait: %s", weft_last_error(ctx));
  CU(cudaGetDevice(&cur));
  CK(cur == other, "the current device is %d after weft's call, was %d", cur, other);
  /* A thread that never used CUDA (the script checks that no context was
   * made on any device but weft's). */
  CK(pthread_create(&t, NULL, on_fresh_thread, d) == 0, "pthread_create");
  CK(pthread_join(t, NULL) == 0, "pthread_join");
  CU(cudaSetDevice(weft_device(ctx)));
  expect_floats(d, 256, (float)(size * size), "allreduce");
}

/* NCCL_COMM_BLOCKING=1 overrides weft's non-blocking config: everything
 * still works (NCCL's calls block in the host instead). */
static void blocking(void)
{
  float *d = world_up(), *e = device_floats(256, (float)rank);
  weft_mesh *m;
  weft_group *a;

  CK(size % 2 == 0, "needs an even number of ranks");
  CK(weft_mesh_create(ctx, "a=2,b=*", &m) == 0, "mesh");
  a = weft_mesh_group(m, "a");
  CK(a != NULL, "mesh group: %s", weft_last_error(ctx));
  CK(weft_allreduce(a, e, e, 256, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce on a: %s",
     weft_last_error(ctx));
  CK(rank % 2 == 0 ? weft_send(a, d, 256, WEFT_FLOAT32, 1, st) == 0
                   : weft_recv(a, d, 256, WEFT_FLOAT32, 0, st) == 0,
     "send/recv: %s", weft_last_error(ctx));
  CK(weft_group_wait(a) == 0 && weft_group_wait(world) == 0, "wait: %s", weft_last_error(ctx));
  expect_floats(e, 256, (float)(rank / 2 * 4 + 1), "group a");
  expect_floats(d, 256, (float)size, "sent");
}

/* Rank 1 never joins (the script injects it) and NCCL's init blocks. */
static void blocking_absent(void)
{
  world_up();
  CK(0, "the world's communicator came up without rank 1");
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
  {"cpu", cpu},
  {"contexts", contexts},
  {"one-visible", one_visible},
  {"split-drain", split_drain},
  {"p2p-up", p2p_up},
  {"p2p-first", p2p_first},
  {"late-root", late_root},
  {"async-error", async_error},
  {"async-late", async_error},
  {"async-held", async_error},
  {"abort-all", abort_all},
  {"deadline", deadline},
  {"watchdog", watchdog},
  {"device-kept", device_kept},
  {"blocking", blocking},
  {"blocking-absent", blocking_absent},
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
