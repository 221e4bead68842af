/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA side of the stand-in tested on its own (no MPI, no NCCL): device
 * order and visibility, PCI bus ids, the thread's current context, stream
 * capture and CUDA graphs. Each case names the CUDA documentation it follows;
 * what CUDA answers with an error is checked as that error (the stand-in
 * returns it, as CUDA does), and what the stand-in treats as a broken rule
 * ends its child process with SIGABRT and the rule's words on stderr.
 *
 * standin-cuda-rules            run everything; exit 0, or 1 naming what failed
 * standin-cuda-rules CASE       run one case in this process (what the children do)
 * standin-cuda-rules probe      print what this process sees (for the cases that
 *                               try environments): "N: P[m]@BUS ..." and
 *                               "nvml: P ..." (P the physical device, m a MIG
 *                               instance), after checking that every UUID agrees
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define DR(call) CK((call) == CUDA_SUCCESS)
/* call returns the error want (and it stays as the last error) */
#define ERR(call, want)                                                                            \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != (want)) {                                                                            \
      fprintf(stderr, "FAIL %s:%d: %s: %s, want %s\n", __FILE__, __LINE__, #call,                  \
              cudaGetErrorName(e_), cudaGetErrorName(want));                                       \
      exit(1);                                                                                     \
    }                                                                                              \
    CK(cudaGetLastError() == (want));                                                              \
  } while (0)

static const char *self;

/* ---- helpers ---- */

/* The physical device (pci.h's UUID scheme: byte 3) and whether a MIG UUID. */
static int uuid_physical(const unsigned char *u, int *mig)
{
  CK(u[0] == 0x57 && u[1] == 0x53 && (u[2] == 0x49 || u[2] == 0x4d) && u[3] == u[15]);
  if (mig)
    *mig = u[2] == 0x4d;
  return u[3];
}

static void uuid_str(const unsigned char *u, char *buf, size_t len)
{
  snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
           u[14], u[15]);
}

/* NVML through dlopen (the stand-in's libnvidia-ml.so.1 in LD_LIBRARY_PATH). */
static struct {
  int (*init)(void);
  int (*count)(unsigned *);
  int (*by_index)(unsigned, void **);
  int (*by_pci)(const char *, void **);
  int (*uuid)(void *, char *, unsigned);
} nvml;

static void load_nvml(void)
{
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  void *f[5];

  CK(h != NULL);
  f[0] = dlsym(h, "nvmlInit_v2");
  f[1] = dlsym(h, "nvmlDeviceGetCount_v2");
  f[2] = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  f[3] = dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
  f[4] = dlsym(h, "nvmlDeviceGetUUID");
  CK(f[0] && f[1] && f[2] && f[3] && f[4]);
  memcpy(&nvml.init, &f[0], sizeof(f[0]));
  memcpy(&nvml.count, &f[1], sizeof(f[1]));
  memcpy(&nvml.by_index, &f[2], sizeof(f[2]));
  memcpy(&nvml.by_pci, &f[3], sizeof(f[3]));
  memcpy(&nvml.uuid, &f[4], sizeof(f[4]));
  CK(nvml.init() == 0);
}

/* The legacy cuDeviceGetUuid (cuda.h maps the name to _v2). */
static CUresult uuid_v1(CUuuid *u, CUdevice d)
{
  CUresult (*fn)(CUuuid *, CUdevice);
  void *s = dlsym(RTLD_DEFAULT, "cuDeviceGetUuid");

  CK(s != NULL);
  memcpy(&fn, &s, sizeof(s));
  return fn(u, d);
}

/* Lines of the WEFT_STANDIN_LOG file that contain every word given. */
static int log_count(const char *a, const char *b)
{
  const char *path = getenv("WEFT_STANDIN_LOG");
  char line[1024];
  int n = 0;
  FILE *f;

  CK(path != NULL);
  if (!(f = fopen(path, "r")))
    return 0;
  while (fgets(line, sizeof(line), f))
    n += strstr(line, a) && (!b || strstr(line, b));
  fclose(f);
  return n;
}

/* Run "self probe" with the NAME=VALUE assignments (NULL-terminated; VALUE
 * "-" unsets NAME); its output in out. */
static void probe(char *out, size_t len, ...)
{
  int fds[2], status;
  ssize_t n, got = 0;
  va_list ap;
  pid_t pid;

  CK(pipe(fds) == 0);
  va_start(ap, len);
  pid = fork();
  CK(pid >= 0);
  if (pid == 0) {
    const char *kv;
    dup2(fds[1], 1);
    close(fds[0]);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("CUDA_DEVICE_ORDER");
    unsetenv("WEFT_STANDIN_NVML_ORDER");
    while ((kv = va_arg(ap, const char *))) {
      char name[64];
      const char *eq = strchr(kv, '=');
      CK(eq && (size_t)(eq - kv) < sizeof(name));
      memcpy(name, kv, (size_t)(eq - kv));
      name[eq - kv] = '\0';
      if (!strcmp(eq + 1, "-"))
        unsetenv(name);
      else
        setenv(name, eq + 1, 1);
    }
    execl(self, self, "probe", (char *)NULL);
    _exit(127);
  }
  va_end(ap);
  close(fds[1]);
  while ((n = read(fds[0], out + got, len - 1 - (size_t)got)) > 0)
    got += n;
  out[got > 0 ? got : 0] = '\0';
  close(fds[0]);
  CK(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "probe failed (status %d), said: %s\n", status, out);
    exit(1);
  }
}

#define EXPECT(got, want)                                                                          \
  do {                                                                                             \
    if (strcmp((got), (want))) {                                                                   \
      fprintf(stderr, "FAIL %s:%d: saw \"%s\", want \"%s\"\n", __FILE__, __LINE__, (got), (want)); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int case_probe(void)
{
  char line[4096], bus[32], nv[64], want[48];
  size_t at = 0;
  int n = 0, d, p, mig;
  unsigned nn = 0, i;
  CUresult r;
  cudaError_t e = cudaGetDeviceCount(&n);

  CK(e == cudaSuccess || e == cudaErrorNoDevice);
  r = cuInit(0);
  CK(r == CUDA_SUCCESS || (n == 0 && r == CUDA_ERROR_NO_DEVICE));
  load_nvml();
  at += (size_t)snprintf(line + at, sizeof(line) - at, "%d:", n);
  for (d = 0; d < n; d++) {
    struct cudaDeviceProp prop;
    CUuuid u2, u1;
    void *h;
    unsigned b;
    CU(cudaGetDeviceProperties(&prop, d));
    CU(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
    CK(sscanf(bus, "0000:%2x:00.0", &b) == 1 && (int)b == prop.pciBusID);
    p = uuid_physical((const unsigned char *)prop.uuid.bytes, &mig);
    CK(mig == (strstr(prop.name, " MIG") != NULL));
    /* cudaDeviceProp.uuid, cuDeviceGetUuid_v2: the MIG instance's own */
    DR(cuDeviceGetUuid(&u2, d));
    CK(!memcmp(u2.bytes, prop.uuid.bytes, 16));
    /* cuDeviceGetUuid (before _v2): the GPU's */
    DR(uuid_v1(&u1, d));
    CK(uuid_physical((const unsigned char *)u1.bytes, &mig) == p && !mig);
    /* the address finds the device again, in the runtime and the driver */
    {
      int back = -1;
      CUdevice cd = -1;
      CU(cudaDeviceGetByPCIBusId(&back, bus));
      DR(cuDeviceGetByPCIBusId(&cd, bus));
      CK(back == d && cd == d);
    }
    /* NVML knows the GPU at that address by the same UUID */
    CK(nvml.by_pci(bus, &h) == 0);
    CK(nvml.uuid(h, nv, sizeof(nv)) == 0);
    uuid_str((const unsigned char *)u1.bytes, want, sizeof(want));
    CK(!strcmp(nv, want));
    at += (size_t)snprintf(line + at, sizeof(line) - at, " %d%s@%s", p,
                           prop.uuid.bytes[2] == 0x4d ? "m" : "", bus);
  }
  CK(nvml.count(&nn) == 0);
  at += (size_t)snprintf(line + at, sizeof(line) - at, "\nnvml:");
  for (i = 0; i < nn; i++) {
    void *h;
    unsigned x;
    CK(nvml.by_index(i, &h) == 0);
    CK(nvml.uuid(h, nv, sizeof(nv)) == 0);
    CK(sscanf(nv, "GPU-575349%2x", &x) == 1);
    at += (size_t)snprintf(line + at, sizeof(line) - at, " %u", x);
  }
  printf("%s", line);
  return 0;
}

static void sleep_ms(void *arg)
{
  struct timespec ts = {0, (long)(size_t)arg * 1000000L};
  nanosleep(&ts, NULL);
}

static void count_up(void *arg) { __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST); }

/* ---- 1. CUDA_DEVICE_ORDER ----
 * CUDA programming guide, "CUDA Environment Variables": CUDA_DEVICE_ORDER is
 * FASTEST_FIRST (the default) or PCI_BUS_ID, "orders devices by PCI bus ID in
 * ascending order"; CUDA_VISIBLE_DEVICES's indexes are in that numbering. The
 * stand-in's own order is its FASTEST_FIRST order. NVML numbers by PCI bus
 * whatever CUDA does (WEFT_STANDIN_NVML_ORDER=reverse: the other way). */
static int case_device_order(void)
{
  char out[4096];
  const char *buses = "WEFT_STANDIN_PCI_BUS=04,0a,05", *three = "WEFT_STANDIN_DEVICES=3";

  probe(out, sizeof(out), buses, three, NULL);
  EXPECT(out, "3: 0@0000:04:00.0 1@0000:0A:00.0 2@0000:05:00.0\nnvml: 0 2 1");
  probe(out, sizeof(out), buses, three, "CUDA_DEVICE_ORDER=FASTEST_FIRST", NULL);
  EXPECT(out, "3: 0@0000:04:00.0 1@0000:0A:00.0 2@0000:05:00.0\nnvml: 0 2 1");
  probe(out, sizeof(out), buses, three, "CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL);
  EXPECT(out, "3: 0@0000:04:00.0 2@0000:05:00.0 1@0000:0A:00.0\nnvml: 0 2 1");
  /* indexes of CUDA_VISIBLE_DEVICES follow CUDA_DEVICE_ORDER */
  probe(out, sizeof(out), buses, three, "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=2,0",
        NULL);
  EXPECT(out, "2: 1@0000:0A:00.0 0@0000:04:00.0\nnvml: 0 2 1");
  probe(out, sizeof(out), buses, three, "CUDA_VISIBLE_DEVICES=2,0", NULL);
  EXPECT(out, "2: 2@0000:05:00.0 0@0000:04:00.0\nnvml: 0 2 1");
  probe(out, sizeof(out), buses, three, "WEFT_STANDIN_NVML_ORDER=reverse", NULL);
  EXPECT(out, "3: 0@0000:04:00.0 1@0000:0A:00.0 2@0000:05:00.0\nnvml: 1 2 0");
  /* the default buses ascend: both orders agree */
  probe(out, sizeof(out), three, "WEFT_STANDIN_PCI_BUS=-", "CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL);
  EXPECT(out, "3: 0@0000:10:00.0 1@0000:11:00.0 2@0000:12:00.0\nnvml: 0 1 2");
  return 0;
}

/* ---- 2. CUDA_VISIBLE_DEVICES ----
 * Same section, "CUDA_VISIBLE_DEVICES": indexes, GPU UUIDs or "enough digits
 * from the beginning of the GPU UUID to uniquely identify that GPU"; the list
 * ends at an invalid entry ("0,2,-1,1" shows 0 and 2); empty shows none; MIG
 * instances by UUID, "Only single MIG instance enumeration is supported".
 * The stand-in also ends the list at a duplicate, an ambiguous or unknown
 * prefix, and takes exact characters only. UUIDs agree across
 * cudaDeviceProp.uuid, cuDeviceGetUuid(_v2) and nvmlDeviceGetUUID (probe). */
static int case_visible(void)
{
  char out[4096];
  const char *dev8 = "WEFT_STANDIN_DEVICES=8";
  static const struct {
    const char *cvd, *want;
  } t[] = {
    {"2,1", "2: 2@0000:12:00.0 1@0000:11:00.0"},
    {"0,2,-1,1", "2: 0@0000:10:00.0 2@0000:12:00.0"},
    {"", "0:"},
    {"1,1,2", "1: 1@0000:11:00.0"},
    {"3,9,1", "1: 3@0000:13:00.0"},
    {" 1", "0:"},
    {"GPU-57534903-0000-0000-0000-000000000003,GPU-57534901", "2: 3@0000:13:00.0 1@0000:11:00.0"},
    {"GPU-57534902", "1: 2@0000:12:00.0"},
    {"1,GPU-5753490,2", "1: 1@0000:11:00.0"}, /* ambiguous: devices 0 to 7 */
    {"GPU-deadbeef,1", "0:"},
    {"GPU-57534902,2", "1: 2@0000:12:00.0"},
    {"gpu-57534902", "0:"},
    {"MIG-57534d05-0000-0000-0000-000000000005", "1: 5m@0000:15:00.0"},
    {"MIG-GPU-57534905-0000-0000-0000-000000000005/1/0", "1: 5m@0000:15:00.0"},
    {"MIG-57534d05-0000-0000-0000-000000000005,1", "1: 5m@0000:15:00.0"},
    {"1,MIG-57534d05-0000-0000-0000-000000000005", "1: 1@0000:11:00.0"},
    {"MIG-57534d05", "0:"},
  };
  char want[256];
  size_t i;

  for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    char cvd[128];
    snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", t[i].cvd);
    probe(out, sizeof(out), dev8, "WEFT_STANDIN_PCI_BUS=-", cvd, NULL);
    snprintf(want, sizeof(want), "%s\nnvml: 0 1 2 3 4 5 6 7", t[i].want);
    if (strcmp(out, want)) {
      fprintf(stderr, "FAIL: CUDA_VISIBLE_DEVICES='%s': saw \"%s\", want \"%s\"\n", t[i].cvd, out,
              want);
      return 1;
    }
  }
  return 0;
}

/* ---- 3. PCI bus ids ----
 * cuda_runtime_api.h and cuda.h, cudaDeviceGetByPCIBusId/cuDeviceGetByPCIBusId:
 * "[domain]:[bus]:[device].[function], [domain]:[bus]:[device],
 * [bus]:[device].[function]", hexadecimal; cudaErrorInvalidValue /
 * CUDA_ERROR_INVALID_VALUE for anything else, cudaErrorInvalidDevice /
 * CUDA_ERROR_INVALID_DEVICE where no visible device is; cudaDeviceGetPCIBusId
 * gives 13 characters with the NUL. None makes a context. */
static int case_pci(void)
{
  static const struct {
    const char *id;
    int dev; /* >= 0 the device, -1 invalid value, -2 invalid device */
  } t[] = {
    {"0000:05:00.0", 0},   {"00000000:0a:00.0", 1},
    {"0A:00.0", 1},        {"0000:0a:00", 1},
    {"0000:04:00.0", -2}, /* hidden by CUDA_VISIBLE_DEVICES */
    {"0000:99:00.0", -2},  {"0000:05:00.1", -2},
    {"0001:05:00.0", -2},  {"05:00", -1},
    {"junk", -1},          {" 0000:05:00.0", -1},
    {"0x05:00.0", -1},     {"0000:05:00.0 ", -1},
    {"0000:005:00.0", -1}, {"", -1},
  };
  char bus[32];
  size_t i;
  int d;
  CUdevice cd;
  CUcontext ctx = (CUcontext)&ctx;

  setenv("WEFT_STANDIN_PCI_BUS", "04,0a,05", 1);
  setenv("CUDA_VISIBLE_DEVICES", "2,1", 1);
  DR(cuInit(0));
  for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    cudaError_t e = cudaDeviceGetByPCIBusId(&d, t[i].id);
    CUresult r = cuDeviceGetByPCIBusId(&cd, t[i].id);
    if (t[i].dev >= 0) {
      if (e != cudaSuccess || d != t[i].dev || r != CUDA_SUCCESS || cd != t[i].dev) {
        fprintf(stderr, "FAIL: %s: %d %d, %d %d\n", t[i].id, (int)e, d, (int)r, (int)cd);
        return 1;
      }
    } else if (e != (t[i].dev == -1 ? cudaErrorInvalidValue : cudaErrorInvalidDevice) ||
               r != (t[i].dev == -1 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE)) {
      fprintf(stderr, "FAIL: %s: %s, %d\n", t[i].id, cudaGetErrorName(e), (int)r);
      return 1;
    }
  }
  cudaGetLastError();
  CU(cudaDeviceGetPCIBusId(bus, 13, 1));
  EXPECT(bus, "0000:0A:00.0");
  DR(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
  EXPECT(bus, "0000:05:00.0");
  ERR(cudaDeviceGetPCIBusId(bus, 12, 0), cudaErrorInvalidValue);
  ERR(cudaDeviceGetPCIBusId(bus, sizeof(bus), 2), cudaErrorInvalidDevice);
  CK(cuDeviceGetPCIBusId(bus, sizeof(bus), 2) == CUDA_ERROR_INVALID_DEVICE);
  /* each device's id finds it again */
  for (d = 0; d < 2; d++) {
    int back = -1;
    CU(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
    CU(cudaDeviceGetByPCIBusId(&back, bus));
    CK(back == d);
  }
  DR(cuCtxGetCurrent(&ctx));
  CK(ctx == NULL);
  CK(log_count(" context ", NULL) == 0);
  return 0;
}

/* ---- 4. the current context ----
 * CUDA runtime API reference, "Interactions with the CUDA Driver API":
 * cudaSetDevice "initializes the primary context for the specified device and
 * makes it current to the calling thread by calling cuCtxSetCurrent()"; a
 * runtime call that needs a context when none is current selects a device's
 * primary context, makes it current and initialises it. cuda.h: cuCtxGetCurrent
 * gives NULL when no context is bound; cuCtxSetCurrent(NULL) unbinds.
 * cudaGetDevice gives the current context's device; with none, the device
 * cudaSetDevice last chose on the thread (0 before any). */
static void *other_thread(void *arg)
{
  CUcontext c = (CUcontext)&c;
  int d = -1;

  (void)arg;
  DR(cuCtxGetCurrent(&c));
  CK(c == NULL); /* contexts are per thread */
  CU(cudaGetDevice(&d));
  CK(d == 0);
  return NULL;
}

static int case_context(void)
{
  CUcontext c = (CUcontext)&c, c2;
  CUdevice cd = -1;
  pthread_t t;
  int d = -1;

  DR(cuInit(0));
  DR(cuCtxGetCurrent(&c));
  CK(c == NULL);
  CK(cuCtxGetDevice(&cd) == CUDA_ERROR_INVALID_CONTEXT);
  CU(cudaGetDevice(&d));
  CK(d == 0);
  CK(log_count(" context ", NULL) == 0); /* cudaGetDevice makes none */
  CU(cudaSetDevice(2));
  CK(log_count(" context device=2 ", "by=cudaSetDevice") == 1);
  DR(cuCtxGetCurrent(&c2));
  CK(c2 != NULL);
  DR(cuCtxGetDevice(&cd));
  CK(cd == 2);
  CU(cudaGetDevice(&d));
  CK(d == 2);
  CK(pthread_create(&t, NULL, other_thread, NULL) == 0);
  CK(pthread_join(t, NULL) == 0);
  /* unbound: the thread's device stays what cudaSetDevice chose */
  DR(cuCtxSetCurrent(NULL));
  DR(cuCtxGetCurrent(&c));
  CK(c == NULL);
  CU(cudaGetDevice(&d));
  CK(d == 2);
  /* bound again through the driver: the runtime follows it */
  DR(cuCtxSetCurrent(c2));
  CU(cudaGetDevice(&d));
  CK(d == 2);
  CK(cuCtxSetCurrent((CUcontext)&d) == CUDA_ERROR_INVALID_CONTEXT);
  CK(log_count(" context ", NULL) == 1);
  return 0;
}

/* A runtime call that needs a context with none current: device 0's primary
 * context, made current (same section). */
static int case_context_implicit(void)
{
  CUcontext c = NULL;
  CUdevice cd = -1;
  void *p;

  DR(cuInit(0));
  CU(cudaMalloc(&p, 16));
  CK(log_count(" context device=0 ", "by=cudaMalloc") == 1);
  DR(cuCtxGetCurrent(&c));
  CK(c != NULL);
  DR(cuCtxGetDevice(&cd));
  CK(cd == 0);
  CU(cudaFree(p));
  return 0;
}

/* weft's pattern: keep the thread's context (cuCtxGetCurrent), work on its own
 * device, put it back (cuCtxSetCurrent). The program's device is unchanged and
 * only the devices used get a context; with no context to keep, switching
 * through the driver (cuDevicePrimaryCtxRetain, cuCtxSetCurrent) leaves the
 * runtime's device alone, where cudaSetDevice would not. */
static void *save_restore_none(void *arg)
{
  CUcontext saved = (CUcontext)&saved, mine;
  struct cudaPointerAttributes a;
  int d = -1;
  void *p;

  (void)arg;
  DR(cuCtxGetCurrent(&saved));
  CK(saved == NULL);
  DR(cuDevicePrimaryCtxRetain(&mine, 3));
  DR(cuCtxSetCurrent(mine));
  CU(cudaMalloc(&p, 16));
  CU(cudaPointerGetAttributes(&a, p));
  CK(a.device == 3);
  DR(cuCtxSetCurrent(saved));
  CU(cudaGetDevice(&d));
  CK(d == 0);
  CU(cudaFree(p)); /* makes device 0's context: the program's own call */
  DR(cuDevicePrimaryCtxRelease(3));
  return NULL;
}

static void *set_device_pitfall(void *arg)
{
  CUcontext saved = (CUcontext)&saved;
  int d = -1;

  (void)arg;
  DR(cuCtxGetCurrent(&saved));
  CK(saved == NULL);
  CU(cudaSetDevice(4));
  DR(cuCtxSetCurrent(saved));
  CU(cudaGetDevice(&d));
  CK(d == 4); /* cudaSetDevice changed the thread's device for good */
  return NULL;
}

static int case_context_save_restore(void)
{
  CUcontext saved, c;
  struct cudaPointerAttributes a;
  pthread_t t;
  void *p, *q;
  int d = -1;

  DR(cuInit(0));
  /* the program */
  CU(cudaSetDevice(1));
  CU(cudaMalloc(&p, 16));
  /* weft */
  DR(cuCtxGetCurrent(&saved));
  CK(saved != NULL);
  CU(cudaSetDevice(2));
  CU(cudaMalloc(&q, 16));
  CU(cudaFree(q));
  DR(cuCtxSetCurrent(saved));
  /* the program again */
  CU(cudaGetDevice(&d));
  CK(d == 1);
  DR(cuCtxGetCurrent(&c));
  CK(c == saved);
  CU(cudaMalloc(&q, 16));
  CU(cudaPointerGetAttributes(&a, q));
  CK(a.device == 1);
  CK(log_count(" context ", NULL) == 2);
  CK(log_count(" context device=1 ", "by=cudaSetDevice") == 1);
  CK(log_count(" context device=2 ", "by=cudaSetDevice") == 1);
  CK(pthread_create(&t, NULL, save_restore_none, NULL) == 0);
  CK(pthread_join(t, NULL) == 0);
  CK(log_count(" context device=3 ", "by=cuDevicePrimaryCtxRetain") == 1);
  CK(log_count(" context device=0 ", "by=cudaFree") == 1);
  CK(pthread_create(&t, NULL, set_device_pitfall, NULL) == 0);
  CK(pthread_join(t, NULL) == 0);
  CK(log_count(" context ", NULL) == 5);
  CU(cudaFree(p));
  CU(cudaFree(q));
  return 0;
}

/* cuda.h, cuDevicePrimaryCtxRetain/Release: retaining makes the primary
 * context (not current); "The context is automatically reset once the last
 * reference to it is released" (unless the runtime uses it); a release
 * without a retain is CUDA_ERROR_INVALID_CONTEXT. */
static int case_context_retain(void)
{
  CUcontext c, cur = (CUcontext)&cur;
  unsigned flags;
  int active = -1;

  DR(cuInit(0));
  DR(cuDevicePrimaryCtxGetState(5, &flags, &active));
  CK(active == 0);
  DR(cuDevicePrimaryCtxRetain(&c, 5));
  CK(log_count(" context device=5 ", "by=cuDevicePrimaryCtxRetain") == 1);
  DR(cuCtxGetCurrent(&cur));
  CK(cur == NULL);
  DR(cuDevicePrimaryCtxGetState(5, &flags, &active));
  CK(active == 1);
  DR(cuDevicePrimaryCtxRelease(5));
  DR(cuDevicePrimaryCtxGetState(5, &flags, &active));
  CK(active == 0);
  CK(log_count(" context-reset device=5 ", NULL) == 1);
  CK(cuDevicePrimaryCtxRelease(5) == CUDA_ERROR_INVALID_CONTEXT);
  CK(cuDevicePrimaryCtxRetain(&c, 8) == CUDA_ERROR_INVALID_DEVICE);
  return 0;
}

/* ---- 5. stream capture and graphs ----
 * CUDA programming guide, "CUDA Graphs" / "Stream Capture"; cuda_runtime_api.h
 * of CUDA 13 (cudaStreamGetCaptureInfo, cudaGraphInstantiate with flags):
 * work queued on a capturing stream is not run but captured, and runs again
 * at every launch; "Each launch is ordered behind ... any previous launches
 * of graphExec". */
static int case_graph(void)
{
  cudaStream_t s;
  cudaGraph_t g = NULL, gi = NULL;
  cudaGraphExec_t x;
  cudaGraphNode_t nodes[8];
  const cudaGraphNode_t *deps = NULL;
  const cudaGraphEdgeData *edges = NULL;
  enum cudaStreamCaptureStatus st;
  unsigned long long id = 0;
  size_t n = 0, nd = 99;
  char *a, *b, *h, *in;
  int count = 0, i, round;
  void *dsts[1];
  const void *srcs[1];
  size_t sizes[1] = {16}, idx = 0;
  struct cudaMemcpyAttributes at;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 64));
  CU(cudaMalloc((void **)&b, 64));
  CU(cudaMallocHost((void **)&h, 64));
  CU(cudaMallocHost((void **)&in, 64));
  memset(h, 0, 64);
  memset(&at, 0, sizeof(at));
  at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CU(cudaStreamIsCapturing(s, &st));
  CK(st == cudaStreamCaptureStatusNone);
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaStreamIsCapturing(s, &st));
  CK(st == cudaStreamCaptureStatusActive);
  CU(cudaStreamGetCaptureInfo(s, &st, &id, &gi, &deps, &edges, &nd));
  CK(st == cudaStreamCaptureStatusActive && id > 0 && gi != NULL && nd == 0);
  CU(cudaMemcpyAsync(a, in, 64, cudaMemcpyHostToDevice, s)); /* read at each launch */
  CU(cudaMemsetAsync(b, 0, 64, s));
  dsts[0] = b;
  srcs[0] = a;
  CU(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &at, &idx, 1, s));
  CU(cudaLaunchHostFunc(s, count_up, &count));
  CU(cudaMemcpyAsync(h, b, 64, cudaMemcpyDeviceToHost, s));
  CU(cudaStreamGetCaptureInfo(s, &st, &id, &gi, &deps, &edges, &nd));
  CK(nd == 1 && deps && deps[0] != NULL && edges && edges[0].from_port == 0 && edges[0].type == 0);
  ERR(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, &edges, NULL), cudaErrorInvalidValue);
  CU(cudaStreamEndCapture(s, &g));
  CK(g == gi);
  CU(cudaStreamIsCapturing(s, &st));
  CK(st == cudaStreamCaptureStatusNone);
  sleep_ms((void *)(size_t)20);
  CK(count == 0 && h[0] == 0); /* nothing ran */
  CU(cudaGraphGetNodes(g, NULL, &n));
  CK(n == 5);
  n = 8;
  CU(cudaGraphGetNodes(g, nodes, &n));
  CK(n == 5 && nodes[4] == deps[0] && nodes[5] == NULL);
  ERR(cudaGraphInstantiate(&x, g, 1ULL << 40), cudaErrorInvalidValue);
  CU(cudaGraphInstantiate(&x, g, 0));
  CU(cudaGraphDestroy(g)); /* the executable graph lives on */
  for (round = 1; round <= 3; round++) {
    memset(in, round, 64);
    CU(cudaGraphLaunch(x, round == 3 ? NULL : s)); /* the legacy stream too */
    CU(cudaStreamSynchronize(round == 3 ? NULL : s));
    CK(count == round);
    for (i = 0; i < 64; i++)
      CK(h[i] == (i < 16 ? round : 0));
  }
  CU(cudaGraphExecDestroy(x));
  CU(cudaFree(a));
  CU(cudaFree(b));
  CU(cudaFreeHost(h));
  CU(cudaFreeHost(in));
  CU(cudaStreamDestroy(s));
  return 0;
}

/* "Cross-stream Dependencies and Events": an event recorded in the capture
 * and waited for forks another stream into it; waiting for an event recorded
 * there after its work joins it back; cudaStreamEndCapture ends both. The
 * two branches run concurrently in a graph: they touch other memory. */
static int case_graph_fork_join(void)
{
  cudaStream_t s1, s2;
  cudaEvent_t fork, join;
  cudaGraph_t g;
  cudaGraphExec_t x;
  enum cudaStreamCaptureStatus st;
  char *a, *b, *c, *h;
  int i, round;

  CU(cudaStreamCreate(&s1));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CU(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CU(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaMalloc((void **)&b, 32));
  CU(cudaMalloc((void **)&c, 32));
  CU(cudaMallocHost((void **)&h, 64));
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  CU(cudaMemsetAsync(a, 5, 32, s1));
  CU(cudaEventRecord(fork, s1));
  CU(cudaStreamWaitEvent(s2, fork, 0));
  CU(cudaStreamIsCapturing(s2, &st));
  CK(st == cudaStreamCaptureStatusActive);
  CU(cudaMemcpyAsync(b, a, 32, cudaMemcpyDeviceToDevice, s2));
  CU(cudaLaunchHostFunc(s2, sleep_ms, (void *)(size_t)20));
  CU(cudaMemsetAsync(c, 7, 32, s1));
  CU(cudaEventRecord(join, s2));
  CU(cudaStreamWaitEvent(s1, join, 0));
  CU(cudaMemcpyAsync(h, b, 32, cudaMemcpyDeviceToHost, s1));
  CU(cudaMemcpyAsync(h + 32, c, 32, cudaMemcpyDeviceToHost, s1));
  /* cudaErrorStreamCaptureUnmatched: s2 did not begin the capture */
  ERR(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureUnmatched);
  CK(g == NULL);
  ERR(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureInvalidated);
  /* again, ended properly */
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  CU(cudaMemsetAsync(a, 5, 32, s1));
  CU(cudaEventRecord(fork, s1));
  CU(cudaStreamWaitEvent(s2, fork, 0));
  CU(cudaMemcpyAsync(b, a, 32, cudaMemcpyDeviceToDevice, s2));
  CU(cudaLaunchHostFunc(s2, sleep_ms, (void *)(size_t)20));
  CU(cudaMemsetAsync(c, 7, 32, s1));
  CU(cudaEventRecord(join, s2));
  CU(cudaStreamWaitEvent(s1, join, 0));
  CU(cudaMemcpyAsync(h, b, 32, cudaMemcpyDeviceToHost, s1));
  CU(cudaMemcpyAsync(h + 32, c, 32, cudaMemcpyDeviceToHost, s1));
  CU(cudaStreamEndCapture(s1, &g));
  CU(cudaStreamIsCapturing(s2, &st));
  CK(st == cudaStreamCaptureStatusNone);
  CU(cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (round = 0; round < 2; round++) {
    memset(h, 0, 64);
    CU(cudaGraphLaunch(x, s2));
    CU(cudaStreamSynchronize(s2));
    for (i = 0; i < 64; i++)
      CK(h[i] == (i < 32 ? 5 : 7));
  }
  CU(cudaGraphExecDestroy(x));
  CU(cudaGraphDestroy(g));
  CU(cudaFree(a));
  CU(cudaFree(b));
  CU(cudaFree(c));
  CU(cudaFreeHost(h));
  return 0;
}

/* "Cross-stream Dependencies and Events": "Failure to rejoin to the origin
 * stream will result in failure of the overall capture operation"
 * (cudaErrorStreamCaptureUnjoined, a NULL graph); every stream leaves
 * capture. */
static int case_graph_unjoined(void)
{
  cudaStream_t s1, s2;
  cudaEvent_t fork;
  cudaGraph_t g = (cudaGraph_t)&g;
  enum cudaStreamCaptureStatus st;
  char *a, *b;

  CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CU(cudaEventCreate(&fork));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaMalloc((void **)&b, 32));
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CU(cudaMemsetAsync(a, 1, 32, s1));
  CU(cudaEventRecord(fork, s1));
  CU(cudaStreamWaitEvent(s2, fork, 0));
  CU(cudaMemsetAsync(b, 1, 32, s2));
  ERR(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureUnjoined);
  CK(g == NULL);
  CU(cudaStreamIsCapturing(s2, &st));
  CK(st == cudaStreamCaptureStatusNone);
  /* a forked stream that did nothing needs no join */
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CU(cudaEventRecord(fork, s1));
  CU(cudaStreamWaitEvent(s2, fork, 0));
  CU(cudaMemsetAsync(a, 1, 32, s1));
  CU(cudaStreamEndCapture(s1, &g));
  CU(cudaGraphDestroy(g));
  /* the streams work as before */
  CU(cudaMemsetAsync(b, 2, 32, s2));
  CU(cudaStreamSynchronize(s2));
  return 0;
}

/* "Prohibited and Unhandled Operations": "It is invalid to synchronize or
 * query the execution status of a stream which is being captured or a
 * captured event"; "Invalidation": the capture is invalidated, further use of
 * its streams or captured events is an error "until stream capture is ended
 * with cudaStreamEndCapture()", which returns an error and a NULL graph. */
static int case_capture_invalidation(void)
{
  cudaStream_t s;
  cudaEvent_t e;
  cudaGraph_t g = (cudaGraph_t)&g;
  enum cudaStreamCaptureStatus st;
  char *a, *h;
  int round;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaEventCreate(&e));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaMallocHost((void **)&h, 32));
  for (round = 0; round < 4; round++) {
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CU(cudaMemsetAsync(a, 1, 32, s));
    CU(cudaEventRecord(e, s));
    switch (round) {
    case 0: ERR(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported); break;
    case 1: ERR(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported); break;
    case 2: ERR(cudaEventQuery(e), cudaErrorCapturedEvent); break;
    case 3: ERR(cudaEventSynchronize(e), cudaErrorCapturedEvent); break;
    }
    CU(cudaStreamIsCapturing(s, &st));
    CK(st == cudaStreamCaptureStatusInvalidated);
    ERR(cudaMemcpyAsync(h, a, 32, cudaMemcpyDeviceToHost, s), cudaErrorStreamCaptureInvalidated);
    ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CK(g == NULL);
    CU(cudaStreamIsCapturing(s, &st));
    CK(st == cudaStreamCaptureStatusNone);
  }
  /* the event stays one last recorded in a capture until recorded again */
  ERR(cudaEventQuery(e), cudaErrorCapturedEvent);
  ERR(cudaStreamWaitEvent(s, e, 0), cudaErrorCapturedEvent);
  CU(cudaEventRecord(e, s));
  CU(cudaEventSynchronize(e));
  CU(cudaMemcpyAsync(h, a, 32, cudaMemcpyDeviceToHost, s));
  CU(cudaStreamSynchronize(s));
  CK(h[0] == 1 || h[0] == (char)0xa5);
  /* pageable memory is not captured */
  {
    char pageable[32];
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    ERR(cudaMemcpyAsync(a, pageable, 32, cudaMemcpyHostToDevice, s),
        cudaErrorStreamCaptureUnsupported);
    ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  }
  return 0;
}

/* cudaThreadExchangeStreamCaptureMode (cuda_runtime_api.h): in global mode a
 * thread may not make a potentially unsafe call (cudaMalloc; the stand-in
 * counts cudaMalloc, cudaMallocHost, cudaFree, cudaFreeHost and the
 * synchronous cudaMemcpy) while it captures or another thread captures in
 * global mode; thread-local ignores other threads' captures; relaxed lifts
 * it. Synchronising the device while any of its streams captures is never
 * allowed ("a broader handle which encompasses an active stream capture"). */
struct peer {
  cudaError_t want;
  enum cudaStreamCaptureMode mode;
  void *q;
};

static void *peer_malloc(void *arg)
{
  struct peer *p = arg;
  enum cudaStreamCaptureMode m = p->mode;
  void *q = NULL;
  cudaError_t e;

  CU(cudaThreadExchangeStreamCaptureMode(&m));
  CK(m == cudaStreamCaptureModeGlobal);
  e = cudaMalloc(&q, 16);
  if (e != p->want) {
    fprintf(stderr, "FAIL: cudaMalloc in another thread: %s, want %s\n", cudaGetErrorName(e),
            cudaGetErrorName(p->want));
    exit(1);
  }
  p->q = q; /* freed after the capture: cudaFree synchronises the device */
  return NULL;
}

static void *other_malloc(cudaError_t want, enum cudaStreamCaptureMode mode)
{
  struct peer p = {want, mode, NULL};
  pthread_t t;

  CK(pthread_create(&t, NULL, peer_malloc, &p) == 0);
  CK(pthread_join(t, NULL) == 0);
  return p.q;
}

static int case_capture_modes(void)
{
  cudaStream_t s;
  cudaGraph_t g;
  enum cudaStreamCaptureMode m = (enum cudaStreamCaptureMode)7;
  char *a, host[16];
  void *q, *q1, *q2;

  CU(cudaSetDevice(0));
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 32));
  ERR(cudaThreadExchangeStreamCaptureMode(&m), cudaErrorInvalidValue);
  /* global: another thread's cudaMalloc fails and invalidates the capture */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaMemsetAsync(a, 1, 32, s));
  other_malloc(cudaErrorStreamCaptureUnsupported, cudaStreamCaptureModeGlobal);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  /* ... unless that thread is relaxed or thread-local */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaMemsetAsync(a, 1, 32, s));
  q1 = other_malloc(cudaSuccess, cudaStreamCaptureModeRelaxed);
  q2 = other_malloc(cudaSuccess, cudaStreamCaptureModeThreadLocal);
  /* this thread's own synchronous copy, and freeing (the device is synchronised) */
  ERR(cudaMemcpy(host, a, 16, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
  ERR(cudaFree(q1), cudaErrorStreamCaptureUnsupported);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  CU(cudaFree(q1));
  CU(cudaFree(q2));
  /* thread-local: other threads may */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CU(cudaMemsetAsync(a, 1, 32, s));
  q1 = other_malloc(cudaSuccess, cudaStreamCaptureModeGlobal);
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphDestroy(g));
  CU(cudaFree(q1));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ERR(cudaMalloc(&q, 16), cudaErrorStreamCaptureUnsupported);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  /* relaxed: this thread may too, but not synchronise the device */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CU(cudaMalloc(&q, 16));
  CU(cudaFreeHost(NULL));
  ERR(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  CU(cudaFree(q));
  /* a thread's relaxed mode lets it allocate during its own global capture */
  m = cudaStreamCaptureModeRelaxed;
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaThreadExchangeStreamCaptureMode(&m));
  CK(m == cudaStreamCaptureModeGlobal);
  CU(cudaMalloc(&q, 16));
  CU(cudaThreadExchangeStreamCaptureMode(&m));
  CK(m == cudaStreamCaptureModeRelaxed);
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphDestroy(g));
  CU(cudaFree(q));
  CU(cudaDeviceSynchronize());
  return 0;
}

/* cudaStreamIsCapturing (cuda_runtime_api.h): on the legacy stream while a
 * blocking stream of the device captures, cudaErrorStreamCaptureImplicit,
 * "The blocking stream capture is not invalidated"; "Prohibited and
 * Unhandled Operations": any use of the legacy stream then is invalid (the
 * capture is invalidated). A non-blocking stream's capture leaves the legacy
 * stream alone. Capture may not begin on the legacy stream. */
static int case_capture_legacy(void)
{
  cudaStream_t s, nb;
  cudaGraph_t g;
  enum cudaStreamCaptureStatus st;
  char *a;

  CU(cudaStreamCreate(&s));
  CU(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 32));
  ERR(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  ERR(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
      cudaErrorStreamCaptureUnsupported);
  ERR(cudaStreamBeginCapture(s, (enum cudaStreamCaptureMode)3), cudaErrorInvalidValue);
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  ERR(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaErrorIllegalState);
  CU(cudaMemsetAsync(a, 1, 32, s));
  ERR(cudaStreamIsCapturing(NULL, &st), cudaErrorStreamCaptureImplicit);
  CU(cudaStreamIsCapturing(s, &st));
  CK(st == cudaStreamCaptureStatusActive);
  ERR(cudaMemsetAsync(a, 2, 32, NULL), cudaErrorStreamCaptureImplicit);
  CU(cudaStreamIsCapturing(s, &st));
  CK(st == cudaStreamCaptureStatusInvalidated);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
  /* a non-blocking capture: the legacy stream is free */
  CU(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
  CU(cudaMemsetAsync(a, 3, 32, NULL));
  CU(cudaStreamIsCapturing(NULL, &st));
  CK(st == cudaStreamCaptureStatusNone);
  CU(cudaStreamSynchronize(NULL));
  CU(cudaStreamEndCapture(nb, &g));
  CU(cudaGraphDestroy(g));
  return 0;
}

/* "Prohibited and Unhandled Operations": "It is invalid to wait on a
 * non-captured event from a stream which is being captured without
 * specifying the cudaEventWaitExternal flag" (cudaErrorStreamCaptureIsolation);
 * "It is invalid to merge two separate capture graphs" (Merge). With
 * cudaEventWaitExternal the wait is a node: each launch waits for the
 * event's record of that moment. cudaStreamEndCapture from another thread of
 * a capture not begun relaxed: cudaErrorStreamCaptureWrongThread. */
static cudaStream_t end_stream;
static void *end_elsewhere(void *arg)
{
  cudaGraph_t g;

  (void)arg;
  ERR(cudaStreamEndCapture(end_stream, &g), cudaErrorStreamCaptureWrongThread);
  return NULL;
}

static int case_capture_events(void)
{
  cudaStream_t s, s2, other;
  cudaEvent_t before, e2;
  cudaGraph_t g;
  cudaGraphExec_t x;
  pthread_t t;
  char *a, *h;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CU(cudaEventCreate(&before));
  CU(cudaEventCreate(&e2));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaMallocHost((void **)&h, 32));
  CU(cudaEventRecord(before, other));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ERR(cudaStreamWaitEvent(s, before, 0), cudaErrorStreamCaptureIsolation);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  ERR(cudaStreamWaitEvent(s, before, 2), cudaErrorInvalidValue);
  /* two captures do not merge */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CU(cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed));
  CU(cudaEventRecord(e2, s2));
  ERR(cudaStreamWaitEvent(s, e2, 0), cudaErrorStreamCaptureMerge);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  ERR(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureInvalidated);
  /* an external wait: the launch waits for other's work of the time */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaStreamWaitEvent(s, before, cudaEventWaitExternal));
  CU(cudaMemcpyAsync(h, a, 32, cudaMemcpyDeviceToHost, s));
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphInstantiate(&x, g, 0));
  CU(cudaMemsetAsync(a, 9, 32, other));
  CU(cudaLaunchHostFunc(other, sleep_ms, (void *)(size_t)50));
  CU(cudaEventRecord(before, other));
  CU(cudaGraphLaunch(x, s)); /* no race: the graph waits for the memset */
  CU(cudaStreamSynchronize(s));
  CK(h[0] == 9 && h[31] == 9);
  CU(cudaGraphExecDestroy(x));
  CU(cudaGraphDestroy(g));
  /* the thread that began a global capture ends it */
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  end_stream = s;
  CK(pthread_create(&t, NULL, end_elsewhere, NULL) == 0);
  CK(pthread_join(t, NULL) == 0);
  ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  return 0;
}

/* "Each launch is ordered behind ... any previous launches of graphExec"
 * (cudaGraphLaunch): two launches of one executable graph on two
 * non-blocking streams do not race; with another stream's work on the same
 * memory they do, found at the launch (graph-race-launch). */
static int case_graph_launch_order(void)
{
  cudaStream_t s, s1, s2;
  cudaGraph_t g;
  cudaGraphExec_t x;
  char *a;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaLaunchHostFunc(s, sleep_ms, (void *)(size_t)30));
  CU(cudaMemsetAsync(a, 1, 32, s));
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphInstantiate(&x, g, 0));
  CU(cudaGraphLaunch(x, s1));
  CU(cudaGraphLaunch(x, s2));
  CU(cudaStreamSynchronize(s2));
  CU(cudaStreamSynchronize(s1));
  return 0;
}

/* ---- rules: each ends the child ---- */

/* Two branches of a capture write the same memory and nothing orders them. */
static int case_graph_race(void)
{
  cudaStream_t s1, s2;
  cudaEvent_t fork;
  char *a;

  CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CU(cudaEventCreate(&fork));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CU(cudaEventRecord(fork, s1));
  CU(cudaStreamWaitEvent(s2, fork, 0));
  CU(cudaMemsetAsync(a, 1, 32, s1));
  CU(cudaMemsetAsync(a + 16, 2, 8, s2));
  return 0;
}

/* A launch writes memory another stream read, nothing ordering the two: the
 * ranges are checked at each launch as any queued work. */
static int case_graph_race_launch(void)
{
  cudaStream_t s, other;
  cudaGraph_t g;
  cudaGraphExec_t x;
  char *a, *h;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaMallocHost((void **)&h, 32));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaMemsetAsync(a, 1, 32, s));
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphInstantiate(&x, g, 0));
  CU(cudaGraphLaunch(x, s));
  CU(cudaStreamSynchronize(s));
  CU(cudaLaunchHostFunc(other, sleep_ms, (void *)(size_t)100));
  CU(cudaMemcpyAsync(h, a, 32, cudaMemcpyDeviceToHost, other));
  CU(cudaGraphLaunch(x, s));
  return 0;
}

/* A graph keeps addresses: memory freed after the capture. */
static int case_graph_freed(void)
{
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t x;
  char *a;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaMalloc((void **)&a, 32));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaMemsetAsync(a, 1, 32, s));
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphInstantiate(&x, g, 0));
  CU(cudaFree(a));
  CU(cudaGraphLaunch(x, s));
  return 0;
}

static int case_graph_destroyed(void)
{
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t x;

  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CU(cudaStreamEndCapture(s, &g));
  CU(cudaGraphDestroy(g));
  CU(cudaGraphInstantiate(&x, g, 0));
  return 0;
}

/* ---- 6. exports ----
 * What weft's loaders dlsym: each name in the stand-in's libraries. */
static int case_exports(void)
{
  static const char *const rt[] = {
    "cudaGetDevice",           "cudaSetDevice",
    "cudaStreamIsCapturing",   "cudaStreamGetCaptureInfo",
    "cudaDeviceGetByPCIBusId", "cudaDeviceGetPCIBusId",
    "cudaStreamBeginCapture",  "cudaStreamEndCapture",
    "cudaGraphInstantiate",    "cudaGraphLaunch",
    "cudaGraphExecDestroy",    "cudaGraphDestroy",
    "cudaGraphGetNodes",       "cudaThreadExchangeStreamCaptureMode"};
  static const char *const drv[] = {"cuCtxGetCurrent",
                                    "cuCtxSetCurrent",
                                    "cuCtxGetDevice",
                                    "cuDeviceGetByPCIBusId",
                                    "cuDeviceGetPCIBusId",
                                    "cuDevicePrimaryCtxRetain",
                                    "cuDevicePrimaryCtxRelease",
                                    "cuDevicePrimaryCtxRelease_v2",
                                    "cuDevicePrimaryCtxGetState",
                                    "cuDeviceGetUuid",
                                    "cuDeviceGetUuid_v2"};
  void *hr = dlopen("libcudart.so.13", RTLD_NOW), *hd = dlopen("libcuda.so.1", RTLD_NOW);
  size_t i;

  CK(hr && hd);
  CK(dlsym(hr, "weft_standin_marker") && dlsym(hd, "weft_standin_marker"));
  for (i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
    if (!dlsym(hr, rt[i]) || !dlvsym(hr, rt[i], "libcudart.so.13")) {
      fprintf(stderr, "FAIL: libcudart.so.13 has no %s (version libcudart.so.13)\n", rt[i]);
      return 1;
    }
  for (i = 0; i < sizeof(drv) / sizeof(drv[0]); i++)
    if (!dlsym(hd, drv[i])) {
      fprintf(stderr, "FAIL: libcuda.so.1 has no %s\n", drv[i]);
      return 1;
    }
  return 0;
}

static const struct {
  const char *name;
  int (*fn)(void);
  int sig;           /* expected end: 0 exit 0, else this signal */
  const char *words; /* on stderr */
} cases[] = {
  {"device-order", case_device_order, 0, NULL},
  {"visible", case_visible, 0, NULL},
  {"pci", case_pci, 0, NULL},
  {"context", case_context, 0, NULL},
  {"context-implicit", case_context_implicit, 0, NULL},
  {"context-save-restore", case_context_save_restore, 0, NULL},
  {"context-retain", case_context_retain, 0, NULL},
  {"graph", case_graph, 0, NULL},
  {"graph-fork-join", case_graph_fork_join, 0, NULL},
  {"graph-unjoined", case_graph_unjoined, 0, NULL},
  {"capture-invalidation", case_capture_invalidation, 0, NULL},
  {"capture-modes", case_capture_modes, 0, NULL},
  {"capture-legacy", case_capture_legacy, 0, NULL},
  {"capture-events", case_capture_events, 0, NULL},
  {"graph-launch-order", case_graph_launch_order, 0, NULL},
  {"graph-race", case_graph_race, SIGABRT, "race between streams"},
  {"graph-race-launch", case_graph_race_launch, SIGABRT, "race between streams"},
  {"graph-freed", case_graph_freed, SIGABRT, "graph uses freed memory"},
  {"graph-destroyed", case_graph_destroyed, SIGABRT, "use of a destroyed graph"},
  {"exports", case_exports, 0, NULL},
};

/* Run one case as a child process; 0 when it ended as it should. */
static int run_child(size_t k, const char *log)
{
  char errfile[] = "/tmp/weft-standin-cuda-rules-XXXXXX", buf[8192];
  int fd = mkstemp(errfile), status, ok;
  ssize_t n;
  pid_t pid;

  CK(fd >= 0);
  if (truncate(log, 0) != 0)
    return 1;
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
    ok = WIFSIGNALED(status) && WTERMSIG(status) == cases[k].sig &&
         (!cases[k].words || strstr(buf, cases[k].words));
  printf("%s %s%s%s\n", ok ? "ok:  " : "FAIL:", cases[k].name, cases[k].words ? ": " : "",
         cases[k].words ? cases[k].words : "");
  if (!ok)
    fprintf(stderr, "--- %s: status %d, stderr:\n%s---\n", cases[k].name, status, buf);
  return !ok;
}

int main(int argc, char **argv)
{
  char log[] = "/tmp/weft-standin-cuda-log-XXXXXX";
  size_t k;
  int fails = 0, fd;

  self = argv[0];
  if (argc == 2) {
    if (!strcmp(argv[1], "probe"))
      return case_probe();
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
      if (!strcmp(argv[1], cases[k].name))
        return cases[k].fn();
    fprintf(stderr, "standin-cuda-rules: no case %s\n", argv[1]);
    return 2;
  }
  fd = mkstemp(log);
  CK(fd >= 0);
  close(fd);
  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
    fails += run_child(k, log);
  unlink(log);
  printf("standin-cuda-rules: %d failed\n", fails);
  return fails ? 1 : 0;
}
