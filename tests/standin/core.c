/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in's process state: devices, their order and visibility
 * (WEFT_STANDIN_DEVICES, CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES; pci.h has
 * their buses and UUIDs), each thread's device and current context, the
 * per-device primary contexts (counted and logged, so that a test can check
 * that a CPU-only job never made one, and which call made each), device
 * memory, the log and the rule checker. Device memory is an address range reserved PROT_NONE, so that a
 * host that dereferences a device pointer faults as it would on a GPU; the
 * bytes live in ordinary memory that the stream workers use.
 */
#include "core.h"
#include "pci.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

const char weft_standin_marker[] = "weft stand-in, not a GPU";

pthread_mutex_t wsi__mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int ndev_physical = 8;
static int order[WSI_MAX_DEVICES];       /* CUDA's index -> physical (CUDA_DEVICE_ORDER) */
static int visible[WSI_MAX_DEVICES];     /* ordinal -> physical */
static int visible_mig[WSI_MAX_DEVICES]; /* ordinal is the physical device's MIG instance */
static int nvisible;
static int no_driver;
static size_t memory_per_device = (size_t)16 << 30;
static size_t used[WSI_MAX_DEVICES];
static int active[WSI_MAX_DEVICES];        /* the primary context exists */
static int retains[WSI_MAX_DEVICES];       /* cuDevicePrimaryCtxRetain not yet released */
static int runtime_holds[WSI_MAX_DEVICES]; /* the runtime initialised it: held to the end */
static char handles[WSI_MAX_DEVICES];      /* CUcontext of physical P: &handles[P] */
static const char *log_path;
static __thread int selected;   /* cudaSetDevice's device (ordinal), 0 until set */
static __thread int bound = -1; /* physical device of the current context, or -1 */
static __thread int in_host_fn;

static struct wsi_alloc **allocs; /* sorted by address */
static size_t nallocs, allocs_cap;

void wsi_lock(void) { pthread_mutex_lock(&wsi__mu); }
void wsi_unlock(void) { pthread_mutex_unlock(&wsi__mu); }
void wsi_wait(void) { pthread_cond_wait(&cv, &wsi__mu); }
void wsi_broadcast(void) { pthread_cond_broadcast(&cv); }

int wsi_wait_ms(int ms)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  return pthread_cond_timedwait(&cv, &wsi__mu, &ts) != ETIMEDOUT;
}

static long env_long(const char *name, long def, long lo, long hi)
{
  const char *s = getenv(name);
  char *end;
  long v;

  if (!s || !*s)
    return def;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) {
    fprintf(stderr, "weft-standin: %s=%s: use a number from %ld to %ld\n", name, s, lo, hi);
    exit(2);
  }
  return v;
}

/* CUDA's device order (CUDA programming guide, "CUDA Environment Variables":
 * CUDA_DEVICE_ORDER, FASTEST_FIRST by default, or PCI_BUS_ID "orders devices
 * by PCI bus ID in ascending order"). The stand-in's physical order is its
 * FASTEST_FIRST order; any other value is taken as the default. */
static void device_order(void)
{
  const char *o = getenv("CUDA_DEVICE_ORDER");
  int i, pci[WSI_MAX_DEVICES];

  standin_pci_order(ndev_physical, pci); /* also refuses two devices on one bus */
  for (i = 0; i < ndev_physical; i++)
    order[i] = o && !strcmp(o, "PCI_BUS_ID") ? pci[i] : i;
}

/* The physical device one entry of CUDA_VISIBLE_DEVICES names, or -1 (same
 * section, "CUDA_VISIBLE_DEVICES"): an index in CUDA_DEVICE_ORDER's numbering;
 * GPU-<uuid> or enough of its first digits to name one device alone (an
 * ambiguous or unknown prefix names none); the MIG instance of a device as
 * MIG-<its uuid> or MIG-GPU-<gpu uuid>/1/0 (*mig set). Exact characters: no
 * space, sign or upper case. */
static int entry_device(const char *item, int *mig)
{
  unsigned char u[16];
  char id[48], gpu[48], old[64];
  size_t len = strlen(item);
  int p, found = -1, n = 0;

  *mig = 0;
  if (len > 0 && len <= 4 && strspn(item, "0123456789") == len) {
    int k = 0;
    for (; *item; item++)
      k = k * 10 + (*item - '0');
    return k < ndev_physical ? order[k] : -1;
  }
  if (!strncmp(item, "GPU-", 4) && len > 4) {
    for (p = 0; p < ndev_physical; p++) {
      standin_uuid(p, 0, u);
      standin_uuid_str(u, 0, id, sizeof(id));
      if (!strncmp(id, item, len))
        found = p, n++;
    }
    return n == 1 ? found : -1;
  }
  if (!strncmp(item, "MIG-", 4)) {
    for (p = 0; p < ndev_physical; p++) {
      standin_uuid(p, 1, u);
      standin_uuid_str(u, 1, id, sizeof(id));
      standin_uuid(p, 0, u);
      standin_uuid_str(u, 0, gpu, sizeof(gpu));
      snprintf(old, sizeof(old), "MIG-%s/1/0", gpu);
      if (!strcmp(item, id) || !strcmp(item, old)) {
        *mig = 1;
        return p;
      }
    }
  }
  return -1;
}

/* CUDA_VISIBLE_DEVICES as CUDA reads it: unset, every device in CUDA's
 * order; set, the devices its comma-separated entries name, in its order,
 * ending at the first entry that names no device or one already listed (so
 * "" shows none). "Only single MIG instance enumeration is supported": a MIG
 * entry shows that instance alone when it comes first and ends the list
 * otherwise. */
static void parse_visible(void)
{
  const char *s = getenv("CUDA_VISIBLE_DEVICES");
  int i;

  nvisible = 0;
  if (!s) {
    for (i = 0; i < ndev_physical; i++)
      visible[nvisible++] = order[i];
    return;
  }
  while (*s && nvisible < WSI_MAX_DEVICES) {
    size_t len = strcspn(s, ",");
    char item[96];
    int p, mig, dup = 0;
    if (len == 0 || len >= sizeof(item))
      return;
    memcpy(item, s, len);
    item[len] = '\0';
    p = entry_device(item, &mig);
    if (p < 0 || (mig && nvisible > 0))
      return;
    for (i = 0; i < nvisible; i++)
      dup |= visible[i] == p;
    if (dup)
      return;
    visible_mig[nvisible] = mig;
    visible[nvisible++] = p;
    if (mig)
      return;
    s += len;
    if (*s == ',')
      s++;
  }
}

static void init_once(void)
{
  ndev_physical = (int)env_long("WEFT_STANDIN_DEVICES", 8, 0, WSI_MAX_DEVICES);
  memory_per_device = (size_t)env_long("WEFT_STANDIN_MEMORY_MB", 16384, 1, 1L << 24) << 20;
  no_driver = env_long("WEFT_STANDIN_NO_DRIVER", 0, 0, 1) != 0;
  log_path = getenv("WEFT_STANDIN_LOG");
  if (log_path && !*log_path)
    log_path = NULL;
  device_order();
  parse_visible();
}

void wsi_init(void) { pthread_once(&once, init_once); }
int wsi_no_driver(void)
{
  wsi_init();
  return no_driver;
}
int wsi_ndevices(void)
{
  wsi_init();
  return no_driver ? 0 : nvisible;
}
size_t wsi_memory(void)
{
  wsi_init();
  return memory_per_device;
}

int wsi_physical(int ordinal)
{
  wsi_init();
  return ordinal >= 0 && ordinal < nvisible ? visible[ordinal] : -1;
}

int wsi_ordinal(int physical)
{
  int i;

  wsi_init();
  for (i = 0; i < nvisible; i++)
    if (visible[i] == physical)
      return i;
  return -1;
}

/* The runtime's current device (cudaGetDevice): the device of the context
 * current to the thread when there is one, else the device cudaSetDevice last
 * chose on this thread (0 when it never did). */
int wsi_current(void) { return bound >= 0 ? wsi_ordinal(bound) : selected; }

/* cudaSetDevice: the thread's device, and its primary context made current
 * ("by calling cuCtxSetCurrent()"); wsi_context then initialises it. */
void wsi_set_current(int ordinal)
{
  int p = wsi_physical(ordinal);

  selected = ordinal;
  if (p >= 0)
    bound = p;
}

int wsi_is_mig(int ordinal)
{
  wsi_init();
  return ordinal >= 0 && ordinal < nvisible && visible_mig[ordinal];
}

int wsi_device_uuid(int ordinal, int mig_uuid, unsigned char uuid[16])
{
  int p = wsi_physical(ordinal);

  if (p < 0)
    return -1;
  standin_uuid(p, mig_uuid && wsi_is_mig(ordinal), uuid);
  return 0;
}

unsigned wsi_pci_bus(int physical) { return standin_pci_bus(physical); }

int wsi_by_bus_id(const char *id)
{
  unsigned dom, bus, dev, fn;
  int i;

  if (standin_parse_bus_id(id, &dom, &bus, &dev, &fn) != 0)
    return -1;
  for (i = 0; i < wsi_ndevices(); i++)
    if (dom == 0 && dev == 0 && fn == 0 && bus == standin_pci_bus(visible[i]))
      return i;
  return -2;
}
int wsi_in_host_fn(void) { return in_host_fn; }
void wsi_set_in_host_fn(int on) { in_host_fn = on; }

int wsi_world_rank(void)
{
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"};
  size_t i;

  for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *s = getenv(vars[i]);
    char *end;
    long v;
    if (!s || !*s)
      continue;
    v = strtol(s, &end, 10);
    if (!*end && v >= 0 && v < (1L << 30))
      return (int)v;
  }
  return -1;
}

static void log_line(const char *line)
{
  int fd;

  if (!log_path)
    return;
  fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  if (write(fd, line, strlen(line)) < 0) {
    /* nothing to do: the log is a courtesy */
  }
  close(fd);
}

void wsi_log(const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  int n;

  wsi_init();
  if (!log_path)
    return;
  n = snprintf(line, sizeof(line), "pid=%d rank=%d ", (int)getpid(), wsi_world_rank());
  if (n < 0 || (size_t)n >= sizeof(line))
    return;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  n = (int)strlen(line);
  line[n] = '\n';
  line[n + 1] = '\0';
  log_line(line);
}

void wsi_violation(const char *rule, const char *fmt, ...)
{
  char detail[1024];
  struct rlimit none = {0, 0};
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  fprintf(stderr, "weft-standin: rank %d pid %d: %s: %s\n", wsi_world_rank(), (int)getpid(), rule,
          detail);
  fflush(stderr);
  wsi_log("violation %s: %s", rule, detail);
  setrlimit(RLIMIT_CORE, &none);
  abort();
}

void wsi_api(const char *fn)
{
  wsi_init();
  if (in_host_fn)
    wsi_violation("CUDA call from a host function",
                  "%s was called inside a function queued with cudaLaunchHostFunc; CUDA says "
                  "such a function must not make any CUDA API call",
                  fn);
}

/* Lock held: the primary context of physical p exists (made and logged). */
static void activate(int p, int ordinal, const char *by)
{
  if (!active[p]) {
    active[p] = 1;
    wsi_log("context device=%d physical=%d by=%s", ordinal, p, by);
  }
}

void wsi_context(int ordinal, const char *by)
{
  int p = wsi_physical(ordinal);

  if (p < 0)
    return;
  wsi_lock();
  activate(p, ordinal, by);
  runtime_holds[p] = 1;
  wsi_unlock();
  if (bound < 0)
    bound = p;
}

int wsi_has_context(int ordinal)
{
  int p = wsi_physical(ordinal), on;

  if (p < 0)
    return 0;
  wsi_lock();
  on = active[p];
  wsi_unlock();
  return on;
}

void *wsi_context_handle(int physical)
{
  return physical >= 0 && physical < WSI_MAX_DEVICES ? &handles[physical] : NULL;
}

void *wsi__ctx_current(void) { return bound >= 0 ? &handles[bound] : NULL; }

int wsi__ctx_physical(const void *ctx)
{
  const char *c = ctx;

  if (c < handles || c >= handles + WSI_MAX_DEVICES)
    return -1;
  return wsi_ordinal((int)(c - handles)) >= 0 ? (int)(c - handles) : -1;
}

int wsi__ctx_bind(void *ctx)
{
  int p;

  if (!ctx) {
    bound = -1;
    return 0;
  }
  if ((p = wsi__ctx_physical(ctx)) < 0)
    return -1;
  bound = p;
  return 0;
}

void *wsi__primary_retain(int ordinal, const char *by)
{
  int p = wsi_physical(ordinal);

  if (p < 0)
    return NULL;
  wsi_lock();
  activate(p, ordinal, by);
  retains[p]++;
  wsi_unlock();
  return &handles[p];
}

int wsi__primary_release(int ordinal, const char *by)
{
  int p = wsi_physical(ordinal);

  if (p < 0)
    return -1;
  wsi_lock();
  if (retains[p] == 0) {
    wsi_unlock();
    return -1;
  }
  if (--retains[p] == 0 && !runtime_holds[p] && active[p]) {
    /* "The context is automatically reset once the last reference to it is
     * released": a later use makes it again (and logs that). */
    active[p] = 0;
    wsi_log("context-reset device=%d physical=%d by=%s", ordinal, p, by);
  }
  wsi_unlock();
  return 0;
}

/* ---- memory ---- */

static size_t lower_bound(uintptr_t a)
{
  size_t lo = 0, hi = nallocs;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (allocs[mid]->addr < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

struct wsi_alloc *wsi__find(const void *p)
{
  uintptr_t a = (uintptr_t)p;
  size_t i = lower_bound(a + 1);

  if (i == 0)
    return NULL;
  i--;
  /* Device memory answers for its whole reservation, so that a range that
   * runs past the end is named as such instead of passing for host memory. */
  if (a >= allocs[i]->addr && a < allocs[i]->addr + (allocs[i]->kind == WSI_DEVICE
                                                       ? allocs[i]->span
                                                       : (allocs[i]->size ? allocs[i]->size : 1)))
    return allocs[i];
  return NULL;
}

static int insert(struct wsi_alloc *m)
{
  size_t i;

  if (nallocs == allocs_cap) {
    size_t cap = allocs_cap ? 2 * allocs_cap : 256;
    struct wsi_alloc **n = realloc(allocs, cap * sizeof(*n));
    if (!n)
      return -1;
    allocs = n;
    allocs_cap = cap;
  }
  i = lower_bound(m->addr);
  memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof(*allocs));
  allocs[i] = m;
  nallocs++;
  return 0;
}

void *wsi_malloc_device(int ordinal, size_t bytes)
{
  long page = sysconf(_SC_PAGESIZE);
  struct wsi_alloc *m;
  int p = wsi_physical(ordinal);
  void *addr;

  if (p < 0)
    return NULL;
  m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->size = bytes;
  m->span = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
  if (m->span == 0)
    m->span = (size_t)page;
  m->physical = p;
  m->kind = WSI_DEVICE;
  wsi_lock();
  if (used[p] + m->span > memory_per_device) {
    wsi_unlock();
    free(m);
    return NULL;
  }
  used[p] += m->span;
  wsi_unlock();
  addr = mmap(NULL, m->span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  m->bytes = mmap(NULL, m->span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED || m->bytes == MAP_FAILED) {
    if (addr != MAP_FAILED)
      munmap(addr, m->span);
    if (m->bytes != MAP_FAILED)
      munmap(m->bytes, m->span);
    wsi_lock();
    used[p] -= m->span;
    wsi_unlock();
    free(m);
    return NULL;
  }
  /* Fresh device memory is not zero on a GPU: neither is ours. */
  memset(m->bytes, 0xa5, m->size);
  m->addr = (uintptr_t)addr;
  wsi_lock();
  if (insert(m) != 0) {
    used[p] -= m->span;
    wsi_unlock();
    munmap(addr, m->span);
    munmap(m->bytes, m->span);
    free(m);
    return NULL;
  }
  wsi_unlock();
  return addr;
}

void *wsi_malloc_pinned(size_t bytes)
{
  struct wsi_alloc *m = calloc(1, sizeof(*m));

  if (!m)
    return NULL;
  m->size = bytes;
  m->kind = WSI_PINNED;
  m->physical = -1;
  m->bytes = malloc(bytes ? bytes : 1);
  if (!m->bytes) {
    free(m);
    return NULL;
  }
  m->addr = (uintptr_t)m->bytes;
  wsi_lock();
  if (insert(m) != 0) {
    wsi_unlock();
    free(m->bytes);
    free(m);
    return NULL;
  }
  wsi_unlock();
  return m->bytes;
}

int wsi_free(void *p, enum wsi_mem kind)
{
  struct wsi_alloc *m;
  size_t i;
  int ordinal;

  wsi_lock();
  m = wsi__find(p);
  if (!m || m->addr != (uintptr_t)p || m->kind != kind) {
    wsi_unlock();
    return -1;
  }
  ordinal = m->kind == WSI_DEVICE ? wsi_ordinal(m->physical) : -1;
  wsi_unlock();
  /* cudaFree waits for the device: nothing queued may still use the memory. */
  if (ordinal >= 0)
    wsi_device_sync(ordinal);
  else
    for (i = 0; i < (size_t)nvisible; i++)
      wsi_device_sync((int)i);
  wsi_lock();
  m = wsi__find(p);
  if (!m || m->addr != (uintptr_t)p) {
    wsi_unlock();
    return -1;
  }
  i = lower_bound(m->addr);
  memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof(*allocs));
  nallocs--;
  if (m->kind == WSI_DEVICE)
    used[m->physical] -= m->span;
  wsi_unlock();
  if (m->kind == WSI_DEVICE) {
    munmap((void *)m->addr, m->span);
    munmap(m->bytes, m->span);
  } else {
    free(m->bytes);
  }
  free(m->acc);
  free(m);
  return 0;
}

enum wsi_mem wsi_kind(const void *p, int *physical, int *ordinal)
{
  struct wsi_alloc *m;
  enum wsi_mem k = WSI_HOST;

  if (physical)
    *physical = -1;
  if (ordinal)
    *ordinal = -1;
  wsi_lock();
  m = wsi__find(p);
  if (m) {
    k = m->kind;
    if (physical)
      *physical = m->physical;
    if (ordinal && m->kind == WSI_DEVICE)
      *ordinal = wsi_ordinal(m->physical);
  }
  wsi_unlock();
  return k;
}

char *wsi_bytes(const void *p, size_t n, const char *fn, const char *what)
{
  struct wsi_alloc *m;
  char *b;

  wsi_lock();
  m = wsi__find(p);
  if (!m) {
    wsi_unlock();
    return (char *)p;
  }
  if ((uintptr_t)p - m->addr + n > m->size) {
    size_t off = (size_t)((uintptr_t)p - m->addr), size = m->size;
    void *base = (void *)m->addr;
    wsi_unlock();
    wsi_violation("out of bounds",
                  "%s: %s: %zu bytes at offset %zu of the %zu-byte allocation at %p go past "
                  "its end",
                  fn, what, n, off, size, base);
  }
  b = m->bytes + ((uintptr_t)p - m->addr);
  wsi_unlock();
  return b;
}
