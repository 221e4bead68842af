/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in tested on its own (no MPI): what a program built against CUDA
 * 13 and NCCL 2.28 sees (copies, streams, events, host functions, the legacy
 * stream's ordering, contexts, NCCL across two processes with every
 * collective, split, groups, non-blocking init), and each rule, broken in a
 * child process of its own, ending that child with SIGABRT and the rule's
 * words on stderr. A host that dereferences device memory gets SIGSEGV.
 *
 * standin-rules            run everything; exit 0, or 1 naming what failed
 * standin-rules CASE       run one case in this process (what the children do)
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(cond)                                                                             \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define CU(call) CK((call) == cudaSuccess)
#define NC(call) CK((call) == ncclSuccess)

static const char *self;

static void sleep_ms(void *arg)
{
  struct timespec ts = {0, (long)(size_t)arg * 1000000L};
  nanosleep(&ts, NULL);
}

static void bad_host_fn(void *arg)
{
  int n;
  (void)arg;
  cudaGetDeviceCount(&n); /* not allowed in a host function */
}

/* A one-rank communicator on the current device. */
static ncclComm_t one(int blocking)
{
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t c = NULL;
  ncclResult_t st = ncclInProgress;

  NC(ncclGetUniqueId(&id));
  cfg.blocking = blocking;
  if (ncclCommInitRankConfig(&c, 1, id, 0, &cfg) == ncclInProgress)
    while (st == ncclInProgress)
      NC(ncclCommGetAsyncError(c, &st));
  CK(st == ncclSuccess || blocking);
  return c;
}

/* Two ranks in two processes (this one rank 0, a fork rank 1), on devices
 * d0 and d1; fn runs in both with the communicator. The fork comes before the
 * unique id, whose bootstrap root is a thread: a fork while it holds the
 * allocator's lock leaves the child stuck in its first malloc (seen under
 * AddressSanitizer); the id reaches the child through a pipe. */
static int two(int d0, int d1, const char *host1, int (*fn)(ncclComm_t c, int rank))
{
  int fds[2], status, rc;
  ncclUniqueId id;
  ncclComm_t c;
  pid_t pid;

  CK(pipe(fds) == 0);
  pid = fork();
  CK(pid >= 0);
  if (pid == 0) {
    close(fds[1]);
    CK(read(fds[0], &id, sizeof(id)) == (ssize_t)sizeof(id));
    setenv("NCCL_HOSTID", host1 ? host1 : "this-host", 1);
    CU(cudaSetDevice(d1));
    NC(ncclCommInitRank(&c, 2, id, 1));
    rc = fn(c, 1);
    _exit(rc);
  }
  NC(ncclGetUniqueId(&id));
  CK(write(fds[1], &id, sizeof(id)) == (ssize_t)sizeof(id));
  setenv("NCCL_HOSTID", "this-host", 1);
  CU(cudaSetDevice(d0));
  NC(ncclCommInitRank(&c, 2, id, 0));
  rc = fn(c, 0);
  CK(waitpid(pid, &status, 0) == pid);
  close(fds[0]);
  close(fds[1]);
  return rc ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
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
static int case_nccl(void)
{
  return two(0, 1, NULL, colls);
}

/* The same device is fine for two "hosts" (NCCL_HOSTID). */
static int case_nccl_hostid(void)
{
  return two(2, 2, "other-host", colls);
}

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

  CU(cudaMalloc((void **)&d, 16));
  CU(cudaStreamCreate(&s));
  CU(cudaLaunchHostFunc(s, sleep_ms, (void *)(size_t)500));
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, s));
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
  CU(cudaMalloc((void **)&d, 16));
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, NULL));
  CU(cudaDeviceSynchronize());
  NC(ncclCommGetAsyncError(c, &st));
  CK(st == ncclSystemError);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, NULL));
  return 0;
}

static int dup_fn(ncclComm_t c, int rank)
{
  (void)c, (void)rank;
  return 0;
}

static int case_duplicate(void)
{
  return two(0, 0, NULL, dup_fn);
}

static int abort_fn(ncclComm_t c, int rank)
{
  float *d;

  CU(cudaMalloc((void **)&d, 16));
  if (rank == 1) {
    NC(ncclCommAbort(c));
    return 0;
  }
  sleep_ms((void *)(size_t)300);
  NC(ncclCommDestroy(c)); /* rank 1 aborted: this one must abort too */
  return 0;
}

static int case_abort_all(void)
{
  return two(0, 1, NULL, abort_fn);
}

static int case_unsettled(void)
{
  float *d;
  ncclComm_t c = one(0);

  CU(cudaMalloc((void **)&d, 16));
  CK(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, NULL) == ncclInProgress);
  NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, c, NULL));
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

static const struct {
  const char *name;
  int (*fn)(void);
  int sig;             /* expected end: 0 exit 0, else this signal */
  const char *words;   /* on stderr */
} cases[] = {
  {"works", case_works, 0, NULL},
  {"nccl", case_nccl, 0, NULL},
  {"nccl-hostid", case_nccl_hostid, 0, NULL},
  {"no-context", case_no_context, 0, NULL},
  {"race", case_race, SIGABRT, "race between streams"},
  {"destroyed-stream", case_destroyed_stream, SIGABRT, "use of a destroyed stream"},
  {"host-fn", case_host_fn, SIGABRT, "CUDA call from a host function"},
  {"bounds", case_bounds, SIGABRT, "out of bounds"},
  {"host-deref", case_host_deref, SIGSEGV, NULL},
  {"nccl-host-ptr", case_nccl_host_ptr, SIGABRT, "host pointer passed as device memory"},
  {"nccl-other-device", case_nccl_other_device, SIGABRT, "device pointer from another device"},
  {"split-queued", case_split_queued, SIGABRT, "split with queued operations"},
  {"async-error", case_async_error, SIGABRT, "use after an asynchronous error"},
  {"duplicate", case_duplicate, SIGABRT, "duplicate GPU in one communicator"},
  {"abort-all", case_abort_all, SIGABRT, "abort not called by every rank"},
  {"unsettled", case_unsettled, SIGABRT, "non-blocking call not settled"},
  {"batch-legacy", case_batch_legacy, SIGABRT, "cudaMemcpyBatchAsync on the legacy stream"},
  {"direction", case_direction, SIGABRT, "copy direction does not match the memory"},
};

/* Run one case as a child process; 0 when it ended as it should. */
static int run_child(size_t k, const char *log)
{
  char errfile[] = "/tmp/weft-standin-rules-XXXXXX", buf[8192];
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
    ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  else
    ok = (WIFSIGNALED(status) && WTERMSIG(status) == cases[k].sig &&
          (!cases[k].words || strstr(buf, cases[k].words))) ||
         /* under AddressSanitizer a fault is its report and exit 1 */
         (cases[k].sig == SIGSEGV && strstr(buf, "AddressSanitizer: SEGV"));
  printf("%s %s%s%s\n", ok ? "ok:  " : "FAIL:", cases[k].name,
         cases[k].words ? ": " : "", cases[k].words ? cases[k].words : "");
  if (!ok)
    fprintf(stderr, "--- %s: status %d, stderr:\n%s---\n", cases[k].name, status, buf);
  return !ok;
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

int main(int argc, char **argv)
{
  char log[] = "/tmp/weft-standin-log-XXXXXX";
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
  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    if (truncate(log, 0) != 0)
      return 1;
    fails += run_child(k, log);
    if (!strcmp(cases[k].name, "no-context")) {
      int n = count_contexts(log);
      printf("%s no-context: %d context(s) after device count, properties, bus id, cuInit\n",
             n == 0 ? "ok:  " : "FAIL:", n);
      fails += n != 0;
    }
  }
  unlink(log);
  printf("standin-rules: %d failed\n", fails);
  return fails ? 1 : 0;
}
