/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in tested on its own (no MPI): what a program built against CUDA
 * 13 and NCCL 2.28 sees (copies, streams, events, host functions, the legacy
 * stream's ordering, contexts, NCCL across processes with every collective,
 * split, groups, non-blocking init), NCCL's behaviour as its source has it
 * (late split handles, rendezvous sends, ranks that die, one-rank
 * communicators, ring-order reductions, older versions, graph capture), and
 * each rule, broken in a child process of its own, ending that child with
 * SIGABRT and the rule's words on stderr. A host that dereferences device
 * memory gets SIGSEGV.
 *
 * standin-rules            run everything; exit 0, or 1 naming what failed
 * standin-rules CASE       run one case in this process (what the children do)
 */
#define _GNU_SOURCE 1 /* prctl's PR_SET_PDEATHSIG */
#include <cuda.h>
#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(cond)                                                                                   \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CU(call) CK((call) == cudaSuccess)
#define NC(call) CK((call) == ncclSuccess)

static const char *self;

static void sleep_ms(void *arg)
{
  struct timespec ts = {(long)(size_t)arg / 1000, (long)(size_t)arg % 1000 * 1000000L};
  nanosleep(&ts, NULL);
}

static void nap(int ms) { sleep_ms((void *)(size_t)ms); }

static double now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void bad_host_fn(void *arg)
{
  int n;
  (void)arg;
  cudaGetDeviceCount(&n); /* not allowed in a host function */
}

/* Poll a non-blocking communicator until it is no longer in progress. */
static ncclResult_t settle(ncclComm_t c)
{
  ncclResult_t st = ncclInProgress;

  while (st == ncclInProgress)
    NC(ncclCommGetAsyncError(c, &st));
  return st;
}

/* A one-rank communicator on the current device. */
static ncclComm_t one(int blocking)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c = NULL;
  ncclResult_t st;

  NC(ncclGetUniqueId(&id));
  cfg.blocking = blocking;
  st = ncclCommInitRankConfig(&c, 1, id, 0, &cfg);
  if (st == ncclInProgress)
    st = settle(c);
  CK(st == ncclSuccess);
  return c;
}

/* A non-blocking child of a blocking communicator: the split blocks (the
 * parent decides), the child's later calls do not (its config). */
static ncclComm_t nonblocking_child(ncclComm_t c, int rank)
{
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t child = NULL;

  cfg.blocking = 0;
  NC(ncclCommSplit(c, 0, rank, &child, &cfg));
  CK(child != NULL);
  return child;
}

/* A second communicator of the same ranks (a blocking split). */
static ncclComm_t twin(ncclComm_t c, int rank)
{
  ncclComm_t child = NULL;

  NC(ncclCommSplit(c, 0, rank, &child, NULL));
  CK(child != NULL);
  return child;
}

/* 1 when the stream still has work after ms milliseconds. */
static int busy_after(cudaStream_t s, int ms)
{
  nap(ms);
  return cudaStreamQuery(s) == cudaErrorNotReady;
}

/* 1 when the stream has finished within ms milliseconds. */
static int done_within(cudaStream_t s, int ms)
{
  double end = now_ms() + ms;

  while (cudaStreamQuery(s) == cudaErrorNotReady)
    if (now_ms() > end)
      return 0;
    else
      nap(5);
  return 1;
}

/* The ranks of team() meet here: rank 0 hears from every other one, then
 * lets them go. */
static int bar_up[2], bar_down[2], team_n;

static void barrier(int rank)
{
  char b = 0;
  int i;

  if (rank == 0) {
    for (i = 1; i < team_n; i++)
      CK(read(bar_up[0], &b, 1) == 1);
    for (i = 1; i < team_n; i++)
      CK(write(bar_down[1], &b, 1) == 1);
  } else {
    CK(write(bar_up[1], &b, 1) == 1);
    CK(read(bar_down[0], &b, 1) == 1);
  }
}

/* n ranks in n processes (this one rank 0, forks the others), rank r on
 * device dev[r] of host host[r]; fn runs in each with the communicator. The
 * forks come before the unique id, whose bootstrap root is a thread: a fork
 * while it holds the allocator's lock leaves the child stuck in its first
 * malloc (seen under AddressSanitizer); the id reaches the children through
 * a pipe. A child dies with this process. */
static int team(int n, const int *dev, const char *const *host, int (*fn)(ncclComm_t c, int rank))
{
  int fds[2], status, rc, r, bad = 0;
  pid_t pid[8];
  ncclUniqueId id;
  ncclComm_t c;

  CK(n <= 8 && pipe(fds) == 0 && pipe(bar_up) == 0 && pipe(bar_down) == 0);
  team_n = n;
  for (r = 1; r < n; r++) {
    pid[r] = fork();
    CK(pid[r] >= 0);
    if (pid[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[1]);
      CK(read(fds[0], &id, sizeof(id)) == (ssize_t)sizeof(id));
      setenv("NCCL_HOSTID", host[r], 1);
      CU(cudaSetDevice(dev[r]));
      NC(ncclCommInitRank(&c, n, id, r));
      _exit(fn(c, r));
    }
  }
  NC(ncclGetUniqueId(&id));
  for (r = 1; r < n; r++)
    CK(write(fds[1], &id, sizeof(id)) == (ssize_t)sizeof(id));
  setenv("NCCL_HOSTID", host[0], 1);
  CU(cudaSetDevice(dev[0]));
  NC(ncclCommInitRank(&c, n, id, 0));
  rc = fn(c, 0);
  for (r = 1; r < n; r++) {
    CK(waitpid(pid[r], &status, 0) == pid[r]);
    if (!bad)
      bad = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  close(fds[0]);
  close(fds[1]);
  return rc ? rc : bad;
}

static int two(int d0, int d1, const char *host1, int (*fn)(ncclComm_t c, int rank))
{
  int dev[2] = {d0, d1};
  const char *host[2] = {"this-host", host1 ? host1 : "this-host"};

  return team(2, dev, host, fn);
}

/* A send to itself and the receive of it, in a group: NCCL work even on a
 * one-rank communicator. */
static ncclResult_t self_xfer(ncclComm_t c, float *d, float *r, cudaStream_t s)
{
  NC(ncclGroupStart());
  NC(ncclSend(d, 4, ncclFloat32, 0, c, s));
  NC(ncclRecv(r, 4, ncclFloat32, 0, c, s));
  return ncclGroupEnd();
}

/* ---- cases that must work ---- */

static int colls(ncclComm_t c, int rank)
{
  cudaStream_t s;
  float *d, *r, h[8], g[16];
  int i;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&d, 16 * sizeof(float)));
  CU(cudaMalloc((void **)&r, 16 * sizeof(float)));
  for (i = 0; i < 8; i++)
    h[i] = (float)(rank * 10 + i);
  CU(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, s));
  NC(ncclAllReduce(d, r, 8, ncclFloat32, ncclSum, c, s));
  CU(cudaMemcpyAsync(g, r, 8 * sizeof(float), cudaMemcpyDeviceToHost, s));
  for (i = 0; i < 8; i++)
    CK(g[i] == (float)(10 + 2 * i));
  NC(ncclAllGather(d, r, 8, ncclFloat32, c, s));
  CU(cudaMemcpyAsync(g, r, 16 * sizeof(float), cudaMemcpyDeviceToHost, s));
  for (i = 0; i < 16; i++)
    CK(g[i] == (float)((i / 8) * 10 + i % 8));
  NC(ncclReduceScatter(r, d, 8, ncclFloat32, ncclMax, c, s));
  CU(cudaMemcpyAsync(g, d, 8 * sizeof(float), cudaMemcpyDeviceToHost, s));
  for (i = 0; i < 8; i++)
    CK(g[i] == (float)(rank * 10 + i));
  NC(ncclBroadcast(d, d, 8, ncclFloat32, 1, c, s));
  NC(ncclGroupStart());
  NC(ncclRecv(r, 8, ncclFloat32, 1 - rank, c, s));
  NC(ncclSend(d, 8, ncclFloat32, 1 - rank, c, s));
  NC(ncclGroupEnd());
  CU(cudaMemcpyAsync(g, r, 8 * sizeof(float), cudaMemcpyDeviceToHost, s));
  for (i = 0; i < 8; i++)
    CK(g[i] == (float)(10 + i));
  {
    ncclComm_t sub;
    if (ncclCommSplit(c, rank, 0, &sub, NULL) != ncclSuccess) {
      fprintf(stderr, "split: %s\n", ncclGetLastError(c));
      return 1;
    }
    NC(ncclAllReduce(d, r, 8, ncclFloat32, ncclSum, sub, s));
    CU(cudaStreamSynchronize(s));
    NC(ncclCommDestroy(sub));
  }
  NC(ncclCommDestroy(c));
  CU(cudaFree(d));
  CU(cudaFree(r));
  CU(cudaStreamDestroy(s));
  return 0;
}

static int case_works(void)
{
  cudaStream_t a, b;
  cudaEvent_t e0, e1;
  char *d, h[64], back[64];
  float ms = 0;
  int n = 0, i;
  struct cudaDeviceProp p;
  void *dptr;
  unsigned type = 0;
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  void *data[1] = {&type};

  CU(cudaGetDeviceCount(&n));
  CK(n == 8);
  CU(cudaGetDeviceProperties(&p, 3));
  CK(strstr(p.name, "stand-in") != NULL);
  for (i = 0; i < 64; i++)
    h[i] = (char)i;
  CU(cudaMalloc((void **)&d, 64));
  CU(cudaStreamCreate(&a));
  CU(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  /* legacy then blocking stream: ordered without anything else */
  CU(cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice));
  CU(cudaMemcpyAsync(back, d, 64, cudaMemcpyDeviceToHost, a));
  CK(!memcmp(h, back, 64));
  /* non-blocking stream ordered by an event; elapsed time of a host function */
  CU(cudaEventRecord(e0, a));
  CU(cudaLaunchHostFunc(a, sleep_ms, (void *)(size_t)50));
  CU(cudaMemsetAsync(d, 7, 64, a));
  CU(cudaEventRecord(e1, a));
  CU(cudaStreamWaitEvent(b, e1, 0));
  CU(cudaMemcpyAsync(back, d, 64, cudaMemcpyDeviceToHost, b));
  CK(back[0] == 7 && back[63] == 7);
  CU(cudaEventElapsedTime(&ms, e0, e1));
  CK(ms >= 40);
  CK(cudaStreamQuery(a) == cudaSuccess);
  /* batched copies */
  {
    char *d2;
    void *dsts[2];
    const void *srcs[2];
    size_t sizes[2] = {32, 32}, idx = 0;
    struct cudaMemcpyAttributes at;
    memset(&at, 0, sizeof(at));
    at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CU(cudaMalloc((void **)&d2, 64));
    dsts[0] = d2 + 32;
    dsts[1] = d2;
    srcs[0] = d;
    srcs[1] = d + 32;
    CU(cudaMemsetAsync(d, 1, 32, a));
    CU(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &at, &idx, 1, a));
    CU(cudaMemcpyAsync(back, d2, 64, cudaMemcpyDeviceToHost, a));
    CK(back[0] == 7 && back[32] == 1);
    CU(cudaFree(d2));
  }
  /* driver: no context needed to tell device memory from host memory */
  CK(cuInit(0) == CUDA_SUCCESS);
  CK(cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)(size_t)d) == CUDA_SUCCESS);
  CK(type == CU_MEMORYTYPE_DEVICE);
  CK(cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)(size_t)h) == CUDA_SUCCESS);
  CK(type == 0);
  CU(cudaMallocHost(&dptr, 16));
  CU(cudaFreeHost(dptr));
  CU(cudaStreamDestroy(a));
  CU(cudaStreamDestroy(b));
  CU(cudaEventDestroy(e0));
  CU(cudaEventDestroy(e1));
  CU(cudaFree(d));
  return 0;
}

/* NCCL on two processes (forked before any CUDA call: neither CUDA nor the
 * stand-in survives a fork of a process whose threads are running). */
static int case_nccl(void) { return two(0, 1, NULL, colls); }

/* The same device is fine for two "hosts" (NCCL_HOSTID). */
static int case_nccl_hostid(void) { return two(2, 2, "other-host", colls); }

/* init.cc ncclCommSplit on a non-blocking parent: ncclInProgress, *newcomm
 * NULL until the split completes, the parent in progress until then; the
 * child non-blocking as its parent (no config: copyCommConfig); a rank with
 * NCCL_SPLIT_NOCOLOR waits for the others too and gets NULL. */
static ncclComm_t late_handle, late_nocolor;

static int split_nb_fn(ncclComm_t c, int rank)
{
  ncclComm_t p = nonblocking_child(c, rank);
  float *d, h[4] = {1, 2, 3, 4}, g[4];
  ncclResult_t st = ncclInProgress;
  int polls = 0, i;

  CU(cudaMalloc((void **)&d, sizeof(h)));
  CU(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
  late_handle = (ncclComm_t)&polls; /* ncclCommSplit makes it NULL at once */
  CK(ncclCommSplit(p, 7, rank, &late_handle, NULL) == ncclInProgress);
  CK(late_handle == NULL);
  while (st == ncclInProgress) {
    CK(late_handle == NULL || polls > 0);
    NC(ncclCommGetAsyncError(p, &st));
    polls += st == ncclInProgress;
  }
  CK(st == ncclSuccess && polls >= 1 && late_handle != NULL);
  CK(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, late_handle, NULL) == ncclInProgress);
  CK(settle(late_handle) == ncclSuccess);
  CU(cudaMemcpy(g, d, sizeof(g), cudaMemcpyDeviceToHost));
  for (i = 0; i < 4; i++)
    CK(g[i] == 2 * h[i]);
  late_nocolor = (ncclComm_t)&polls;
  CK(ncclCommSplit(p, rank == 1 ? NCCL_SPLIT_NOCOLOR : 3, 0, &late_nocolor, NULL) ==
     ncclInProgress);
  CK(settle(p) == ncclSuccess);
  CK(rank == 1 ? late_nocolor == NULL : late_nocolor != NULL);
  if (late_nocolor)
    NC(ncclCommDestroy(late_nocolor));
  NC(ncclCommDestroy(late_handle));
  CK(ncclCommFinalize(p) == ncclInProgress);
  CK(settle(p) == ncclSuccess);
  NC(ncclCommDestroy(p));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_split_nonblocking(void) { return two(0, 1, NULL, split_nb_fn); }

/* A failed split (rank 1 is gone: the bootstrap sees its connection close):
 * on a non-blocking parent the error is the parent's (group.cc
 * groupCleanup) and the half-made child is in *newcomm all the same (init.cc
 * ncclCommInitRankFunc), saying ncclSuccess; on a blocking one the call
 * returns the error, with the child in *newcomm too. */
static ncclComm_t failed_child;

static int split_fail_fn(ncclComm_t c, int rank)
{
  ncclComm_t nb = nonblocking_child(c, rank), blk = twin(c, rank), child = NULL;
  ncclResult_t st;

  if (rank == 1)
    _exit(0); /* without finalising: its connections close */
  nap(200);
  CK(ncclCommSplit(nb, 0, 0, &failed_child, NULL) == ncclInProgress);
  CK(settle(nb) == ncclRemoteError);
  CK(failed_child != NULL);
  CK(strstr(ncclGetLastError(NULL), "closed its connection") != NULL);
  NC(ncclCommGetAsyncError(failed_child, &st));
  CK(st == ncclSuccess);
  NC(ncclCommAbort(failed_child));
  NC(ncclCommAbort(nb));
  CK(ncclCommSplit(blk, 0, 0, &child, NULL) == ncclRemoteError);
  CK(child != NULL);
  NC(ncclCommDestroy(child));
  NC(ncclCommAbort(blk));
  NC(ncclCommAbort(c));
  return 0;
}

static int case_split_fail(void) { return two(0, 1, NULL, split_fail_fn); }

/* ncclSend completes once the receive has started on the peer: an empty
 * one too. Rank 1 receives only after rank 0 saw its send still waiting. */
static int rendezvous_fn(ncclComm_t c, int rank)
{
  cudaStream_t s;
  float *d, h[4] = {5, 6, 7, 8}, g[4];

  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, sizeof(h)));
  if (rank == 0) {
    CU(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
    NC(ncclSend(d, 4, ncclFloat32, 1, c, s));
    CK(busy_after(s, 200));
    barrier(rank);
    CU(cudaStreamSynchronize(s));
    NC(ncclSend(d, 0, ncclFloat32, 1, c, s));
    CK(busy_after(s, 200));
    barrier(rank);
    CU(cudaStreamSynchronize(s));
  } else {
    barrier(rank);
    NC(ncclRecv(d, 4, ncclFloat32, 0, c, s));
    CU(cudaMemcpyAsync(g, d, sizeof(g), cudaMemcpyDeviceToHost, s));
    CK(!memcmp(g, h, sizeof(g)));
    barrier(rank);
    NC(ncclRecv(d, 0, ncclFloat32, 0, c, s));
    CU(cudaStreamSynchronize(s));
  }
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_send_rendezvous(void) { return two(0, 1, NULL, rendezvous_fn); }

/* Both ranks send first, outside a group: each send waits for a receive
 * that comes after it on the same stream, as on a GPU; only aborts end it. */
static int send_order_fn(ncclComm_t c, int rank)
{
  cudaStream_t s;
  float *d;

  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, 32));
  NC(ncclSend(d, 4, ncclFloat32, 1 - rank, c, s));
  NC(ncclRecv(d + 4, 4, ncclFloat32, 1 - rank, c, s));
  CK(busy_after(s, 500));
  barrier(rank); /* neither aborts before both saw the hang */
  NC(ncclCommAbort(c));
  CK(done_within(s, 5000));
  return 0;
}

static int case_send_order(void) { return two(0, 1, NULL, send_order_fn); }

/* Two communicators used in different orders on the two ranks, on one
 * stream: each waits for the other rank, which waits for the other one. */
static int comm_order_fn(ncclComm_t c, int rank)
{
  ncclComm_t b = twin(c, rank);
  cudaStream_t s;
  float *d;

  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, 16));
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, rank ? b : c, s));
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, rank ? c : b, s));
  CK(busy_after(s, 500));
  barrier(rank); /* neither aborts before both saw the hang */
  NC(ncclCommAbort(b));
  NC(ncclCommAbort(c));
  CK(done_within(s, 5000));
  return 0;
}

static int case_comm_order(void) { return two(0, 1, NULL, comm_order_fn); }

/* In a group, sends and receives complete in any order: on one stream, on
 * two streams of one communicator (one launch after both), and on two
 * communicators sharing a stream. */
static int group_fn(ncclComm_t c, int rank)
{
  ncclComm_t b = twin(c, rank);
  cudaStream_t s1, s2;
  float *d, h[4] = {1, 2, 3, 4}, g[12];
  int i, peer = 1 - rank;

  CU(cudaStreamCreate(&s1));
  CU(cudaStreamCreate(&s2));
  CU(cudaMalloc((void **)&d, 16 * sizeof(float)));
  for (i = 0; i < 4; i++)
    h[i] += (float)(10 * rank);
  CU(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
  NC(ncclGroupStart());
  if (rank == 0) {
    NC(ncclSend(d, 4, ncclFloat32, peer, c, s1));
    NC(ncclRecv(d + 4, 4, ncclFloat32, peer, c, s1));
  } else {
    NC(ncclRecv(d + 4, 4, ncclFloat32, peer, c, s1));
    NC(ncclSend(d, 4, ncclFloat32, peer, c, s1));
  }
  NC(ncclGroupEnd());
  NC(ncclGroupStart());
  NC(ncclSend(d, 4, ncclFloat32, peer, c, rank ? s2 : s1));
  NC(ncclRecv(d + 8, 4, ncclFloat32, peer, c, rank ? s1 : s2));
  NC(ncclGroupEnd());
  NC(ncclGroupStart());
  NC(ncclSend(d, 4, ncclFloat32, peer, rank ? b : c, s1));
  NC(ncclRecv(d + 12, 4, ncclFloat32, peer, rank ? c : b, s1));
  NC(ncclGroupEnd());
  CK(done_within(s1, 5000) && done_within(s2, 5000));
  CU(cudaMemcpy(g, d + 4, sizeof(g), cudaMemcpyDeviceToHost));
  for (i = 0; i < 12; i++)
    CK(g[i] == (float)(i % 4 + 1 + 10 * peer));
  NC(ncclCommDestroy(b));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_group_order(void) { return two(0, 1, NULL, group_fn); }

/* A broadcast's root is done only once every rank has entered it. */
static int bcast_fn(ncclComm_t c, int rank)
{
  cudaStream_t s;
  float *d;

  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, 16));
  CU(cudaMemset(d, 0, 16));
  if (rank == 1)
    barrier(rank);
  NC(ncclBroadcast(d, d, 4, ncclFloat32, 0, c, s));
  if (rank == 0) {
    CK(busy_after(s, 200));
    barrier(rank);
  }
  CU(cudaStreamSynchronize(s));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_bcast_waits(void) { return two(0, 1, NULL, bcast_fn); }

/* Rank 1 dies. Over a network transport the proxy sees the connection
 * closed: ncclRemoteError; between ranks of one host nothing notices and
 * the operation waits until this rank aborts. */
static int death_wants_error;

static int death_fn(ncclComm_t c, int rank)
{
  cudaStream_t s;
  ncclResult_t st = ncclSuccess;
  float *d;
  double end;

  if (rank == 1)
    _exit(0);
  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, 16));
  nap(200);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, s));
  end = now_ms() + (death_wants_error ? 5000 : 1000);
  while (st == ncclSuccess && now_ms() < end) {
    NC(ncclCommGetAsyncError(c, &st));
    nap(20);
  }
  if (death_wants_error) {
    CK(st == ncclRemoteError);
    CK(strstr(ncclGetLastError(NULL), "Connection closed by remote peer") != NULL);
  } else {
    CK(st == ncclSuccess);
  }
  CK(cudaStreamQuery(s) == cudaErrorNotReady);
  NC(ncclCommAbort(c));
  CK(done_within(s, 5000));
  return 0;
}

static int case_death_p2p(void) { return two(0, 1, NULL, death_fn); }

static int case_death_net(void)
{
  death_wants_error = 1;
  return two(0, 1, "other-host", death_fn);
}

static int case_death_forced_net(void)
{
  setenv("WEFT_STANDIN_NCCL_TRANSPORT", "net", 1);
  death_wants_error = 1;
  return two(0, 1, NULL, death_fn);
}

static int case_death_forced_p2p(void)
{
  setenv("WEFT_STANDIN_NCCL_TRANSPORT", "p2p", 1);
  return two(0, 1, "other-host", death_fn);
}

/* ncclGetLastError ignores its argument: one text for the process, from
 * whichever thread failed last. */
static void *bad_root(void *arg)
{
  float *d = NULL;

  CK(ncclBroadcast(d, d, 4, ncclFloat32, 5, (ncclComm_t)arg, NULL) == ncclInvalidArgument);
  return NULL;
}

static int case_last_error(void)
{
  ncclComm_t a = one(1), b = one(1);
  pthread_t t;
  float *d;

  CU(cudaMalloc((void **)&d, 16));
  CK(ncclAllReduce(d, d, 4, (ncclDataType_t)99, ncclSum, a, NULL) == ncclInvalidArgument);
  CK(ncclGetLastError(b) == ncclGetLastError(NULL) && ncclGetLastError(a) == ncclGetLastError(b));
  CK(strstr(ncclGetLastError(b), "invalid type") != NULL);
  CK(pthread_create(&t, NULL, bad_root, b) == 0);
  CK(pthread_join(t, NULL) == 0);
  CK(strstr(ncclGetLastError(a), "invalid root") != NULL);
  NC(ncclCommDestroy(a));
  NC(ncclCommDestroy(b));
  return 0;
}

/* NCCL_COMM_BLOCKING=0 makes a blocking config non-blocking; ncclCommInitRank
 * still blocks (it runs outside any group) but its communicator is
 * non-blocking. */
static int case_blocking_env0(void)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c, d;

  setenv("NCCL_COMM_BLOCKING", "0", 1);
  NC(ncclGetUniqueId(&id));
  cfg.blocking = 1;
  CK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg) == ncclInProgress);
  CK(settle(c) == ncclSuccess);
  NC(ncclGetUniqueId(&id));
  NC(ncclCommInitRank(&d, 1, id, 0));
  CK(ncclCommFinalize(d) == ncclInProgress);
  CK(settle(d) == ncclSuccess);
  NC(ncclCommDestroy(d));
  CK(ncclCommFinalize(c) == ncclInProgress);
  CK(settle(c) == ncclSuccess);
  NC(ncclCommDestroy(c));
  return 0;
}

/* NCCL_COMM_BLOCKING=2 is ignored. */
static int case_blocking_env2(void)
{
  ncclComm_t c;

  setenv("NCCL_COMM_BLOCKING", "2", 1);
  c = one(0);
  CK(ncclCommFinalize(c) == ncclInProgress);
  CK(settle(c) == ncclSuccess);
  NC(ncclCommDestroy(c));
  c = one(1);
  NC(ncclCommFinalize(c));
  NC(ncclCommDestroy(c));
  return 0;
}

/* NCCL_COMM_BLOCKING=1 overrides a split's child config too. */
static int case_blocking_env_split(void)
{
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c, child = NULL;

  setenv("NCCL_COMM_BLOCKING", "1", 1);
  c = one(0); /* blocking after all */
  cfg.blocking = 0;
  NC(ncclCommSplit(c, 0, 0, &child, &cfg));
  CK(child != NULL);
  NC(ncclCommFinalize(child));
  NC(ncclCommDestroy(child));
  NC(ncclCommDestroy(c));
  return 0;
}

/* WEFT_STANDIN_NCCL_VERSION plays older NCCLs. */
static int case_version_213(void)
{
  ncclUniqueId id;
  ncclComm_t c;
  int v = 0;

  setenv("WEFT_STANDIN_NCCL_VERSION", "2.13", 1);
  NC(ncclGetVersion(&v));
  CK(v == 21300);
  NC(ncclGetUniqueId(&id));
  NC(ncclCommInitRankConfig(&c, 1, id, 0, NULL));
  return 0;
}

static int case_version_214(void)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c, child;
  int v = 0;

  setenv("WEFT_STANDIN_NCCL_VERSION", "2.14.3", 1);
  NC(ncclGetVersion(&v));
  CK(v == 21403);
  NC(ncclGetUniqueId(&id));
  /* 2.14 has no NCCL_CONFIG_UNDEF_INT for blocking: the initializer's value
   * is invalid there. */
  CK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg) == ncclInvalidArgument);
  CK(strstr(ncclGetLastError(NULL), "Invalid config blocking attribute value") != NULL);
  cfg.blocking = 0;
  CK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg) == ncclInProgress);
  CK(settle(c) == ncclSuccess);
  NC(ncclCommSplit(c, 0, 0, &child, NULL));
  return 0;
}

static int case_version_218(void)
{
  ncclComm_t c, child = NULL;
  void *p;
  int v = 0;

  setenv("WEFT_STANDIN_NCCL_VERSION", "2.18", 1);
  NC(ncclGetVersion(&v));
  CK(v == 21800);
  c = one(1);
  NC(ncclCommSplit(c, 0, 0, &child, NULL));
  CK(child != NULL);
  NC(ncclMemAlloc(&p, 64));
  return 0;
}

/* Before 2.19 ncclCommSplit does not check that its parent is ready. */
static int not_ready_split(const char *version)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c, child;

  setenv("WEFT_STANDIN_NCCL_VERSION", version, 1);
  NC(ncclGetUniqueId(&id));
  cfg.blocking = 0;
  CK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg) == ncclInProgress);
  NC(ncclCommSplit(c, 0, 0, &child, NULL));
  return 0;
}

static int case_version_218_split(void) { return not_ready_split("2.18.6"); }

static int case_version_219(void)
{
  void *p;
  int v = 0;

  setenv("WEFT_STANDIN_NCCL_VERSION", "2.19.1", 1);
  NC(ncclGetVersion(&v));
  CK(v == 21901);
  NC(ncclMemAlloc(&p, 64));
  NC(ncclMemFree(p));
  return not_ready_split("2.19.1");
}

/* The log's lines of one process (WEFT_STANDIN_LOG): 1 when one has s. */
static int logged(const char *s)
{
  const char *path = getenv("WEFT_STANDIN_LOG");
  char line[1024];
  FILE *f = path ? fopen(path, "r") : NULL;
  int found = 0;

  while (f && !found && fgets(line, sizeof(line), f))
    found = strstr(line, s) != NULL;
  if (f)
    fclose(f);
  return found;
}

/* commName came in 2.27: an older NCCL ignores it. ncclCommInitRankScalable
 * came in 2.23. */
static int named(const char *version, int honoured)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c;

  setenv("WEFT_STANDIN_NCCL_VERSION", version, 1);
  NC(ncclGetUniqueId(&id));
  cfg.commName = "named";
  NC(ncclCommInitRankScalable(&c, 1, 0, 1, &id, &cfg));
  CK(logged("nccl comm named rank 0/1 device 0 up by init") == honoured);
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_version_223(void) { return named("2.23.4", 0); }

static int case_version_228(void)
{
  int v = 0;

  NC(ncclGetVersion(&v));
  CK(v == NCCL_VERSION_CODE);
  return named("2.28.9", 1);
}

/* A one-rank communicator: nothing queued in place, a copy otherwise, even
 * non-blocking ncclSuccess (no group task); ncclAvg a kernel; count 0
 * discarded. */
static int case_one_rank(void)
{
  ncclComm_t c = one(0);
  cudaStream_t a, b;
  float *d, *r, h[4] = {1, 2, 3, 4}, g[4];
  uint16_t *x, hx[4] = {0x3c00, 0x4000, 0x7bff, 0x0001}, gx[4];

  CU(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&d, 16));
  CU(cudaMalloc((void **)&r, 16));
  CU(cudaMalloc((void **)&x, 8));
  CU(cudaMemsetAsync(d, 0, 16, a));
  /* in place: nothing touches d, so no race with a's memset */
  CK(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, b) == ncclSuccess);
  CK(ncclBroadcast(d, d, 0, ncclFloat32, 0, c, b) == ncclSuccess);
  CU(cudaStreamSynchronize(a));
  CU(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, b));
  NC(ncclGroupStart());
  NC(ncclAllReduce(d, r, 4, ncclFloat32, ncclSum, c, b));
  NC(ncclGroupEnd()); /* no task: ncclSuccess */
  CU(cudaMemcpyAsync(g, r, sizeof(g), cudaMemcpyDeviceToHost, b));
  CK(!memcmp(g, h, sizeof(g)));
  CU(cudaMemcpyAsync(x, hx, sizeof(hx), cudaMemcpyHostToDevice, b));
  CK(ncclAllReduce(x, x, 4, ncclFloat16, ncclAvg, c, b) == ncclSuccess);
  CU(cudaMemcpyAsync(gx, x, sizeof(gx), cudaMemcpyDeviceToHost, b));
  CK(!memcmp(gx, hx, sizeof(gx)));
  CK(ncclCommFinalize(c) == ncclInProgress);
  CK(settle(c) == ncclSuccess);
  NC(ncclCommDestroy(c));
  return 0;
}

/* Count 0: a collective is discarded (ncclSuccess on a non-blocking
 * communicator, nothing to settle), a send is a rendezvous. */
static int zero_fn(ncclComm_t c, int rank)
{
  ncclComm_t nb = nonblocking_child(c, rank);
  cudaStream_t s;
  float *d;

  CU(cudaStreamCreate(&s));
  CU(cudaMalloc((void **)&d, 16));
  CK(ncclAllReduce(d, d, 0, ncclFloat32, ncclSum, nb, s) == ncclSuccess);
  CK(ncclAllGather(d, d, 0, ncclFloat32, nb, s) == ncclSuccess);
  if (rank == 0) {
    CK(ncclSend(NULL, 0, ncclFloat32, 1, nb, s) == ncclInProgress);
    CK(settle(nb) == ncclSuccess);
    CK(busy_after(s, 200));
    barrier(rank);
  } else {
    barrier(rank);
    CK(ncclRecv(NULL, 0, ncclFloat32, 0, nb, s) == ncclInProgress);
    CK(settle(nb) == ncclSuccess);
  }
  CK(done_within(s, 5000));
  NC(ncclCommDestroy(nb));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_zero_count(void) { return two(0, 1, NULL, zero_fn); }

/* Ring order on three ranks (device/all_reduce.h runRing): chunk c of 8
 * halves starts at rank c+1 and ends at rank c, every sum rounded to fp16.
 * Rank r holds x_r in every element, x = {2048, 1, 1}: chunk 0 is
 * (1+1)+2048 = 2050, chunks 1 and 2 lose a 1 to rounding at each step (2049
 * is a tie, even 2048). A plain rank-order sum gives 2048 everywhere. */
static int ring_fn(ncclComm_t c, int rank)
{
  const uint16_t x[3] = {0x6800, 0x3c00, 0x3c00}, h2048 = 0x6800, h2050 = 0x6801;
  uint16_t h[24], g[24], *d, *r;
  const uint16_t b[3] = {0x4380, 0x3f80, 0x3f80}; /* bfloat16 256, 1, 1 */
  int i;

  for (i = 0; i < 24; i++)
    h[i] = x[rank];
  CU(cudaMalloc((void **)&d, sizeof(h)));
  CU(cudaMalloc((void **)&r, sizeof(h)));
  CU(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
  NC(ncclAllReduce(d, r, 24, ncclFloat16, ncclSum, c, NULL));
  CU(cudaMemcpy(g, r, sizeof(g), cudaMemcpyDeviceToHost));
  for (i = 0; i < 24; i++)
    CK(g[i] == (i < 8 ? h2050 : h2048));
  /* reduce-scatter: rank r's block from rank r+1 round to r */
  NC(ncclReduceScatter(d, r, 8, ncclFloat16, ncclSum, c, NULL));
  CU(cudaMemcpy(g, r, 8 * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  for (i = 0; i < 8; i++)
    CK(g[i] == (rank == 0 ? h2050 : h2048));
  /* reduce to root 0: from rank 1 round to 0 */
  NC(ncclReduce(d, r, 8, ncclFloat16, ncclSum, 0, c, NULL));
  if (rank == 0) {
    CU(cudaMemcpy(g, r, 8 * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (i = 0; i < 8; i++)
      CK(g[i] == h2050);
  }
  /* bfloat16: 256 + 1 is a tie at 8 bits, (1+1)+256 is 258 */
  for (i = 0; i < 24; i++)
    h[i] = b[rank];
  CU(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
  NC(ncclAllReduce(d, r, 24, ncclBfloat16, ncclSum, c, NULL));
  CU(cudaMemcpy(g, r, sizeof(g), cudaMemcpyDeviceToHost));
  for (i = 0; i < 24; i++)
    CK(g[i] == (i < 8 ? 0x4381 : 0x4380));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_ring_order(void)
{
  int dev[3] = {0, 1, 2};
  const char *host[3] = {"this-host", "this-host", "this-host"};

  return team(3, dev, host, ring_fn);
}

/* The log's NCCL lines (checked by log_lines below): up by init and by
 * split, destroyed, aborted, and a communicator left open. */
static int case_log(void)
{
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c, child = NULL, kept = NULL;
  ncclUniqueId id;

  NC(ncclGetUniqueId(&id));
  cfg.commName = "root";
  NC(ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
  cfg.commName = "kid";
  NC(ncclCommSplit(c, 0, 0, &child, &cfg));
  NC(ncclCommSplit(c, 1, 0, &kept, NULL));
  NC(ncclCommDestroy(child));
  NC(ncclCommAbort(c));
  return 0;
}

/* Operations captured into a CUDA graph run again at each launch, with new
 * data: an all-reduce and a group of a send and a receive. */
static int capture_fn(ncclComm_t c, int rank)
{
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t x;
  float *d, *r, h[4], out[8];
  int k, i;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&d, sizeof(h)));
  CU(cudaMalloc((void **)&r, 2 * sizeof(h)));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  NC(ncclAllReduce(d, r, 4, ncclFloat32, ncclSum, c, s));
  NC(ncclGroupStart());
  NC(ncclSend(d, 4, ncclFloat32, 1 - rank, c, s));
  NC(ncclRecv(r + 4, 4, ncclFloat32, 1 - rank, c, s));
  NC(ncclGroupEnd());
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphInstantiate(&x, g, 0));
  for (k = 1; k <= 3; k++) {
    for (i = 0; i < 4; i++)
      h[i] = (float)(k * 100 + rank * 10 + i);
    CU(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, s));
    CU(cudaGraphLaunch(x, s));
    CU(cudaMemcpyAsync(out, r, sizeof(out), cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    for (i = 0; i < 4; i++) {
      CK(out[i] == (float)(2 * (k * 100 + i) + 10));
      CK(out[4 + i] == (float)(k * 100 + (1 - rank) * 10 + i));
    }
  }
  CU(cudaGraphExecDestroy(x));
  CU(cudaGraphDestroy(g));
  NC(ncclCommDestroy(c));
  return 0;
}

static int case_capture(void) { return two(0, 1, NULL, capture_fn); }

static int case_no_context(void)
{
  struct cudaDeviceProp p;
  char bus[32];
  int n;

  CU(cudaGetDeviceCount(&n));
  CU(cudaGetDeviceProperties(&p, 0));
  CU(cudaDeviceGetPCIBusId(bus, sizeof(bus), 1));
  CK(cuInit(0) == CUDA_SUCCESS);
  return 0;
}

/* ---- cases that must end the process with a rule's words ---- */

static int case_race(void)
{
  cudaStream_t s;
  char *d, h[64] = {0}, back[64];

  CU(cudaMalloc((void **)&d, 64));
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice)); /* lands later, on the legacy stream */
  CU(cudaMemcpyAsync(back, d, 64, cudaMemcpyDeviceToHost, s));
  return 0;
}

static int case_destroyed_stream(void)
{
  cudaStream_t s;
  char *d, h[8];

  CU(cudaMalloc((void **)&d, 8));
  CU(cudaStreamCreate(&s));
  CU(cudaStreamDestroy(s));
  CU(cudaMemcpyAsync(d, h, 8, cudaMemcpyHostToDevice, s));
  return 0;
}

static int case_host_fn(void)
{
  CU(cudaSetDevice(0));
  CU(cudaLaunchHostFunc(NULL, bad_host_fn, NULL));
  CU(cudaDeviceSynchronize());
  return 0;
}

static int case_bounds(void)
{
  char *d, h[128];

  CU(cudaMalloc((void **)&d, 64));
  CU(cudaMemcpy(d, h, 128, cudaMemcpyHostToDevice));
  return 0;
}

static int case_host_deref(void)
{
  char *d;

  CU(cudaMalloc((void **)&d, 64));
  return d[1]; /* a GPU address: the host cannot read it */
}

static int case_nccl_host_ptr(void)
{
  ncclComm_t c = one(1);
  float h[4];

  NC(ncclAllReduce(h, h, 4, ncclFloat32, ncclSum, c, NULL));
  return 0;
}

static int case_nccl_other_device(void)
{
  float *d;
  ncclComm_t c;

  CU(cudaSetDevice(1));
  CU(cudaMalloc((void **)&d, 16));
  CU(cudaSetDevice(0));
  c = one(1);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, NULL));
  return 0;
}

static int case_split_queued(void)
{
  cudaStream_t s;
  float *d;
  ncclComm_t c = one(1), sub;

  CU(cudaMalloc((void **)&d, 32));
  CU(cudaStreamCreate(&s));
  CU(cudaLaunchHostFunc(s, sleep_ms, (void *)(size_t)500));
  NC(self_xfer(c, d, d + 4, s));
  NC(ncclCommSplit(c, 0, 0, &sub, NULL));
  return 0;
}

static int case_async_error(void)
{
  float *d;
  ncclComm_t c;
  ncclResult_t st;

  setenv("WEFT_STANDIN_NCCL_FAULT", "async-error:-1:1", 1);
  c = one(1);
  CU(cudaMalloc((void **)&d, 32));
  NC(self_xfer(c, d, d + 4, NULL));
  CU(cudaDeviceSynchronize());
  NC(ncclCommGetAsyncError(c, &st));
  CK(st == ncclSystemError);
  NC(self_xfer(c, d, d + 4, NULL));
  return 0;
}

static int dup_fn(ncclComm_t c, int rank)
{
  (void)c, (void)rank;
  return 0;
}

static int case_duplicate(void) { return two(0, 0, NULL, dup_fn); }

static int abort_fn(ncclComm_t c, int rank)
{
  float *d;

  CU(cudaMalloc((void **)&d, 16));
  if (rank == 1) {
    NC(ncclCommAbort(c));
    return 0;
  }
  nap(300);
  NC(ncclCommDestroy(c)); /* rank 1 aborted: this one must abort too */
  return 0;
}

static int case_abort_all(void) { return two(0, 1, NULL, abort_fn); }

static int case_unsettled(void)
{
  float *d;
  ncclComm_t c = one(0);

  CU(cudaMalloc((void **)&d, 32));
  CK(self_xfer(c, d, d + 4, NULL) == ncclInProgress);
  NC(self_xfer(c, d, d + 4, NULL));
  return 0;
}

/* A call on a non-blocking parent while its split runs. */
static ncclComm_t busy_handle;

static int case_split_busy(void)
{
  ncclComm_t p = one(0);
  float *d;

  CU(cudaMalloc((void **)&d, 16));
  CK(ncclCommSplit(p, 0, 0, &busy_handle, NULL) == ncclInProgress);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, p, NULL));
  return 0;
}

/* NCCL_SPLIT_NOCOLOR puts the parent in progress too; the queries check. */
static int case_split_nocolor_busy(void)
{
  ncclComm_t p = one(0);
  int n;

  CK(ncclCommSplit(p, NCCL_SPLIT_NOCOLOR, 0, &busy_handle, NULL) == ncclInProgress);
  NC(ncclCommCount(p, &n));
  return 0;
}

static int split_fail_use_fn(ncclComm_t c, int rank)
{
  ncclComm_t blk = twin(c, rank), child = NULL;
  float *d;

  if (rank == 1)
    _exit(0);
  CU(cudaMalloc((void **)&d, 16));
  nap(200);
  CK(ncclCommSplit(blk, 0, 0, &child, NULL) == ncclRemoteError && child != NULL);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, child, NULL));
  return 0;
}

static int case_split_fail_use(void) { return two(0, 1, NULL, split_fail_use_fn); }

/* The handle of a non-blocking split in a frame that returns before the
 * split completes (NCCL writes it late). */
__attribute__((noinline)) static ncclResult_t split_into_local(ncclComm_t p)
{
  ncclComm_t local = NULL;
  ncclResult_t r = ncclCommSplit(p, 0, 0, &local, NULL);

  __asm__ volatile("" : : "r"(&local) : "memory");
  return r;
}

static int case_split_stack(void)
{
  ncclComm_t p = one(0);
  ncclResult_t st;

  CK(split_into_local(p) == ncclInProgress);
  NC(ncclCommGetAsyncError(p, &st));
  return 0;
}

/* The handle written before the split completes. */
static int case_split_changed(void)
{
  ncclComm_t p = one(0), *h = malloc(sizeof(*h));

  CK(h != NULL);
  CK(ncclCommSplit(p, 0, 0, h, NULL) == ncclInProgress);
  *h = p;
  settle(p);
  nap(500);
  return 0;
}

static int case_version_bad(void)
{
  int v;

  setenv("WEFT_STANDIN_NCCL_VERSION", "2.29", 1);
  NC(ncclGetVersion(&v));
  return 0;
}

static int case_transport_bad(void)
{
  setenv("WEFT_STANDIN_NCCL_TRANSPORT", "ib", 1);
  one(1);
  return 0;
}

/* A one-rank copy is device work: it races with an unordered memset. */
static int case_one_rank_copy(void)
{
  ncclComm_t c = one(1);
  cudaStream_t a, b;
  float *d, *r;

  CU(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&d, 16));
  CU(cudaMalloc((void **)&r, 16));
  CU(cudaMemsetAsync(d, 0, 16, a));
  NC(ncclAllReduce(d, r, 4, ncclFloat32, ncclSum, c, b));
  return 0;
}

static int case_batch_legacy(void)
{
  char *d;
  void *dsts[1];
  const void *srcs[1];
  size_t sizes[1] = {8}, idx = 0;
  struct cudaMemcpyAttributes at;

  CU(cudaMalloc((void **)&d, 16));
  memset(&at, 0, sizeof(at));
  at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  dsts[0] = d;
  srcs[0] = d + 8;
  CU(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &at, &idx, 1, NULL));
  return 0;
}

static int case_direction(void)
{
  char *d, h[8];

  CU(cudaMalloc((void **)&d, 8));
  CU(cudaMemcpy(h, d, 8, cudaMemcpyHostToDevice));
  return 0;
}

static int count_contexts(const char *log)
{
  char line[512];
  int n = 0;
  FILE *f = fopen(log, "r");

  if (!f)
    return 0;
  while (fgets(line, sizeof(line), f))
    n += strstr(line, " context ") != NULL;
  fclose(f);
  return n;
}

/* After no-context: no context was made. */
static int no_contexts(const char *log)
{
  int n = count_contexts(log);

  printf("%s no-context: %d context(s) after device count, properties, bus id, cuInit\n",
         n == 0 ? "ok:  " : "FAIL:", n);
  return n != 0;
}

static int has_line(const char *log, const char *s)
{
  char line[1024];
  FILE *f = fopen(log, "r");
  int found = 0;

  while (f && !found && fgets(line, sizeof(line), f))
    found = strstr(line, s) != NULL;
  if (f)
    fclose(f);
  return found;
}

/* After log: every NCCL line a test may rely on. */
static int log_lines(const char *log)
{
  static const char *const want[] = {
    "nccl comm root rank 0/1 device 0 up by init",
    "nccl comm kid rank 0/1 device 0 up by split of root",
    "nccl comm root.split1 rank 0/1 device 0 up by split of root",
    "nccl comm kid rank 0 destroyed",
    "nccl comm root rank 0 aborted",
    "nccl comm root.split1 rank 0 leaked: neither ncclCommDestroy nor ncclCommAbort",
  };
  size_t i;
  int bad = 0;

  for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    if (!has_line(log, want[i])) {
      printf("FAIL: log: no line \"%s\"\n", want[i]);
      bad = 1;
    }
  if (!bad)
    printf("ok:   log: up by init, up by split, destroyed, aborted, leaked\n");
  return bad;
}

static const struct {
  const char *name;
  int (*fn)(void);
  int sig; /* expected end: 0 exit (code), else this signal */
  int code;
  const char *words; /* on stderr */
  const char *words2;
  int (*check)(const char *log);
} cases[] = {
  {"works", case_works, 0, 0, NULL, NULL, NULL},
  {"nccl", case_nccl, 0, 0, NULL, NULL, NULL},
  {"nccl-hostid", case_nccl_hostid, 0, 0, NULL, NULL, NULL},
  {"no-context", case_no_context, 0, 0, NULL, NULL, no_contexts},
  {"split-nonblocking", case_split_nonblocking, 0, 0, NULL, NULL, NULL},
  {"split-fail", case_split_fail, 0, 0, NULL, NULL, NULL},
  {"send-rendezvous", case_send_rendezvous, 0, 0, NULL, NULL, NULL},
  {"send-order", case_send_order, 0, 0, NULL, NULL, NULL},
  {"comm-order", case_comm_order, 0, 0, NULL, NULL, NULL},
  {"group-order", case_group_order, 0, 0, NULL, NULL, NULL},
  {"bcast-waits", case_bcast_waits, 0, 0, NULL, NULL, NULL},
  {"death-p2p", case_death_p2p, 0, 0, NULL, NULL, NULL},
  {"death-net", case_death_net, 0, 0, NULL, NULL, NULL},
  {"death-forced-net", case_death_forced_net, 0, 0, NULL, NULL, NULL},
  {"death-forced-p2p", case_death_forced_p2p, 0, 0, NULL, NULL, NULL},
  {"last-error", case_last_error, 0, 0, NULL, NULL, NULL},
  {"blocking-env0", case_blocking_env0, 0, 0, NULL, NULL, NULL},
  {"blocking-env2", case_blocking_env2, 0, 0, NULL, NULL, NULL},
  {"blocking-env-split", case_blocking_env_split, 0, 0, NULL, NULL, NULL},
  {"version-2.23", case_version_223, 0, 0, NULL, NULL, NULL},
  {"version-2.28", case_version_228, 0, 0, NULL, NULL, NULL},
  {"one-rank", case_one_rank, 0, 0, NULL, NULL, NULL},
  {"zero-count", case_zero_count, 0, 0, NULL, NULL, NULL},
  {"ring-order", case_ring_order, 0, 0, NULL, NULL, NULL},
  {"log", case_log, 0, 0, NULL, NULL, log_lines},
  {"capture", case_capture, 0, 0, NULL, NULL, NULL},
  {"race", case_race, SIGABRT, 0, "race between streams", NULL, NULL},
  {"destroyed-stream", case_destroyed_stream, SIGABRT, 0, "use of a destroyed stream", NULL, NULL},
  {"host-fn", case_host_fn, SIGABRT, 0, "CUDA call from a host function", NULL, NULL},
  {"bounds", case_bounds, SIGABRT, 0, "out of bounds", NULL, NULL},
  {"host-deref", case_host_deref, SIGSEGV, 0, NULL, NULL, NULL},
  {"nccl-host-ptr", case_nccl_host_ptr, SIGABRT, 0, "host pointer passed as device memory", NULL,
   NULL},
  {"nccl-other-device", case_nccl_other_device, SIGABRT, 0, "device pointer from another device",
   NULL, NULL},
  {"split-queued", case_split_queued, SIGABRT, 0, "split with queued operations", NULL, NULL},
  {"async-error", case_async_error, SIGABRT, 0, "use after an asynchronous error", NULL, NULL},
  {"duplicate", case_duplicate, SIGABRT, 0, "duplicate GPU in one communicator", NULL, NULL},
  {"abort-all", case_abort_all, SIGABRT, 0, "abort not called by every rank", NULL, NULL},
  {"unsettled", case_unsettled, SIGABRT, 0, "non-blocking call not settled", NULL, NULL},
  {"split-busy", case_split_busy, SIGABRT, 0, "communicator not ready",
   "ncclCommEnsureReady returns ncclInvalidArgument", NULL},
  {"split-nocolor-busy", case_split_nocolor_busy, SIGABRT, 0, "communicator not ready",
   "ncclCommCount on communicator", NULL},
  {"split-fail-use", case_split_fail_use, SIGABRT, 0, "use of a communicator whose split failed",
   NULL, NULL},
  {"split-stack", case_split_stack, SIGABRT, 0, "split handle on a returned stack frame", NULL,
   NULL},
  {"split-changed", case_split_changed, SIGABRT, 0,
   "split handle changed before the split completed", NULL, NULL},
  {"version-2.13", case_version_213, SIGABRT, 0, "not in this NCCL version",
   "ncclCommInitRankConfig is not in NCCL 2.13.0: it came in 2.14", NULL},
  {"version-2.14", case_version_214, SIGABRT, 0, "not in this NCCL version",
   "ncclCommSplit is not in NCCL 2.14.3: it came in 2.18", NULL},
  {"version-2.18", case_version_218, SIGABRT, 0, "not in this NCCL version",
   "ncclMemAlloc is not in NCCL 2.18.0: it came in 2.19", NULL},
  {"version-2.18-split", case_version_218_split, SIGABRT, 0, "communicator not ready",
   "NCCL 2.18.6 does not check this", NULL},
  {"version-2.19", case_version_219, SIGABRT, 0, "communicator not ready",
   "ncclCommEnsureReady returns ncclInvalidArgument", NULL},
  {"version-bad", case_version_bad, 0, 2, "WEFT_STANDIN_NCCL_VERSION=2.29: use X.Y or X.Y.Z", NULL,
   NULL},
  {"transport-bad", case_transport_bad, 0, 2,
   "WEFT_STANDIN_NCCL_TRANSPORT=ib: use auto, net or p2p", NULL, NULL},
  {"one-rank-copy", case_one_rank_copy, SIGABRT, 0, "race between streams", NULL, NULL},
  {"batch-legacy", case_batch_legacy, SIGABRT, 0, "cudaMemcpyBatchAsync on the legacy stream", NULL,
   NULL},
  {"direction", case_direction, SIGABRT, 0, "copy direction does not match the memory", NULL, NULL},
};

/* Run one case as a child process; 0 when it ended as it should. */
static int run_child(size_t k, const char *log)
{
  char errfile[] = "/tmp/weft-standin-rules-XXXXXX", buf[16384];
  int fd = mkstemp(errfile), status, ok;
  ssize_t n;
  pid_t pid;

  CK(fd >= 0);
  pid = fork();
  CK(pid >= 0);
  if (pid == 0) {
    dup2(fd, 2);
    setenv("WEFT_STANDIN_LOG", log, 1);
    execl(self, self, cases[k].name, (char *)NULL);
    _exit(127);
  }
  CK(waitpid(pid, &status, 0) == pid);
  lseek(fd, 0, SEEK_SET);
  n = read(fd, buf, sizeof(buf) - 1);
  buf[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(errfile);
  if (cases[k].sig == 0)
    ok = WIFEXITED(status) && WEXITSTATUS(status) == cases[k].code;
  else
    ok = (WIFSIGNALED(status) && WTERMSIG(status) == cases[k].sig) ||
         /* under AddressSanitizer a fault is its report and exit 1 */
         (cases[k].sig == SIGSEGV && strstr(buf, "AddressSanitizer: SEGV"));
  ok = ok && (!cases[k].words || strstr(buf, cases[k].words)) &&
       (!cases[k].words2 || strstr(buf, cases[k].words2));
  printf("%s %s%s%s\n", ok ? "ok:  " : "FAIL:", cases[k].name, cases[k].words ? ": " : "",
         cases[k].words ? cases[k].words : "");
  if (!ok)
    fprintf(stderr, "--- %s: status %d, stderr:\n%s---\n", cases[k].name, status, buf);
  return !ok;
}

/* The sockets of the children that a rule ended (they cannot remove their
 * own) go to a directory of their own, removed at the end. */
static void remove_dir(const char *dir)
{
  char path[512];
  struct dirent *e;
  DIR *d = opendir(dir);

  while (d && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
      unlink(path);
  if (d)
    closedir(d);
  rmdir(dir);
}

int main(int argc, char **argv)
{
  char log[] = "/tmp/weft-standin-log-XXXXXX", dir[] = "/tmp/weft-standin-rules-XXXXXX";
  size_t k;
  int fails = 0, fd;

  self = argv[0];
  if (argc == 2) {
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
      if (!strcmp(argv[1], cases[k].name))
        return cases[k].fn();
    fprintf(stderr, "standin-rules: no case %s\n", argv[1]);
    return 2;
  }
  fd = mkstemp(log);
  CK(fd >= 0);
  close(fd);
  CK(mkdtemp(dir) != NULL);
  setenv("TMPDIR", dir, 1);
  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    if (truncate(log, 0) != 0)
      return 1;
    fails += run_child(k, log);
    if (cases[k].check)
      fails += cases[k].check(log);
  }
  unlink(log);
  remove_dir(dir);
  printf("standin-rules: %d failed\n", fails);
  return fails ? 1 : 0;
}
