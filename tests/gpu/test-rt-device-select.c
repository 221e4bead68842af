/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which CUDA device weft_init takes for a rank's GPU, for
 * test-rt-device-select.sh to start under mpirun (or weftrun) and the
 * CUDA/NCCL stand-in. WEFT_GPU is the GPU's index in PCI order and
 * WEFT_GPU_PCI its address; where CUDA numbers the GPUs otherwise (its
 * default order, FASTEST_FIRST, or UUIDs in CUDA_VISIBLE_DEVICES) the device
 * must still be that GPU, or weft_init must refuse on every rank. Only the
 * public API (<weft.h>) and CUDA's.
 *
 *   planned            weft_device() is the GPU at WEFT_GPU_PCI, as CUDA
 *                      itself says (cudaDeviceGetPCIBusId, no context); then a
 *                      device all-reduce on it (each rank's context and NCCL
 *                      communicator on that device: the script reads the
 *                      stand-in's log)
 *   refused            weft_init fails on every rank, none waits for another
 *                      (the script checks the line that says why)
 *   nodevice           weft_init succeeds and weft_device() is -1: without a
 *                      driver CUDA can use no device at all
 * Each rank prints "rank R device D bus B want W" (planned); rank 0 prints
 * "ok: SCENARIO" when everything held.
 */
#include <weft.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* "0000:04:00.0" and "0000:04:00.0" in CUDA's upper case, or a longer
 * domain, as one number; -1 for what is not an address. */
static long long pci_key(const char *s)
{
  unsigned dom, bus, dev, fn;
  int n = 0;

  if (!s || sscanf(s, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) != 4 || s[n] != '\0')
    return -1;
  return (long long)dom << 16 | bus << 8 | dev << 3 | fn;
}

static void planned(void)
{
  weft_ctx *ctx;
  const char *want = getenv("WEFT_GPU_PCI");
  char bus[32];
  float h[64], *d;
  int dev, n = 0;
  cudaStream_t st;

  CK(weft_init(NULL, NULL, &ctx) == 0, "weft_init failed (its line above says why)");
  dev = weft_device(ctx);
  CU(cudaGetDeviceCount(&n));
  CK(dev >= 0 && dev < n, "weft_device() is %d of %d visible devices", dev, n);
  CU(cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), dev));
  printf("rank %d device %d bus %s want %s\n", rank, dev, bus, want ? want : "(unset)");
  fflush(stdout);
  CK(want && pci_key(bus) >= 0 && pci_key(bus) == pci_key(want),
     "weft_device() %d is the GPU at %s, not the planned one at %s (WEFT_GPU=%s "
     "CUDA_VISIBLE_DEVICES=%s CUDA_DEVICE_ORDER=%s)",
     dev, bus, want ? want : "(unset)", getenv("WEFT_GPU") ? getenv("WEFT_GPU") : "(unset)",
     getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)",
     getenv("CUDA_DEVICE_ORDER") ? getenv("CUDA_DEVICE_ORDER") : "(unset)");
  /* a context and a communicator on that device; the stand-in ends a rank
   * whose communicator shares a GPU with another's */
  CU(cudaSetDevice(dev));
  CU(cudaStreamCreate(&st));
  for (int i = 0; i < 64; i++)
    h[i] = (float)rank;
  CU(cudaMalloc((void **)&d, sizeof(h)));
  CU(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, st));
  CK(weft_allreduce(weft_world(ctx), d, d, 64, WEFT_FLOAT32, WEFT_SUM, st) == 0, "allreduce: %s",
     weft_last_error(ctx));
  CU(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, st));
  CU(cudaStreamSynchronize(st));
  for (int i = 0; i < 64; i++)
    CK(h[i] == (float)(size * (size - 1) / 2), "allreduce gave %g", h[i]);
  CU(cudaFree(d));
  CU(cudaStreamDestroy(st));
  CK(weft_finalize(ctx) == 0, "finalize");
}

static void refused(void)
{
  weft_ctx *ctx = NULL;
  int rc = weft_init(NULL, NULL, &ctx), failed, all = 0;

  CK(rc != 0, "weft_init succeeded (device %d)", weft_device(ctx));
  CK(ctx == NULL, "weft_init failed but gave a context");
  printf("rank %d weft_init: %s\n", rank, weft_err_name(rc));
  fflush(stdout);
  failed = 1;
  CK(MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce");
  CK(all == size, "weft_init failed on %d of %d ranks", all, size);
}

static void nodevice(void)
{
  weft_ctx *ctx;

  CK(weft_init(NULL, NULL, &ctx) == 0, "weft_init failed (its line above says why)");
  CK(weft_device(ctx) == -1, "weft_device() is %d without a driver", weft_device(ctx));
  CK(weft_finalize(ctx) == 0, "finalize");
}

int main(int argc, char **argv)
{
  int provided;

  if (argc != 2) {
    fprintf(stderr, "usage: test-rt-device-select planned|refused|nodevice\n");
    return 2;
  }
  /* MPI is the program's, so that it outlives a failed weft_init */
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!strcmp(argv[1], "planned")) {
    planned();
  } else if (!strcmp(argv[1], "refused")) {
    refused();
  } else if (!strcmp(argv[1], "nodevice")) {
    nodevice();
  } else {
    fprintf(stderr, "test-rt-device-select: no scenario %s\n", argv[1]);
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  if (rank == 0)
    printf("ok: %s on %d ranks\n", argv[1], size);
  return 0;
}
