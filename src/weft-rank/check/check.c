/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-rank --check: weftrun --check's agent, one per host, started by the
 * engine exactly as a job's ranks are. It answers at once (a "hello" record:
 * the engine reached this host), then runs its checks side by side, each in
 * a thread of its own with a deadline: versions, the program, GPUs
 * (gpu.c), memory and limits, the job's interface, Google Cloud, and
 * the network rendezvous with the other hosts' agents (net.c). Each
 * check's records are printed as soon as it is done; one that misses its
 * deadline is reported as such ("timeout"), and the agent ends anyway. It
 * always exits 0: what it found is in the records, and a non-zero exit would
 * make the engine end every other host's agent too.
 *
 * WEFT_CHECK_INJECT (tests only; see inject()) replaces what the agent of one
 * host reports, so that the tests can rehearse a version mismatch or a clock
 * that is off on a virtual cluster whose hosts share one machine.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"
#include "layout.h"

#define DEFAULT_DEADLINE_S 10
#define GROUP_SHARE 0.5 /* a local check's deadline: this share of the agent's */
#define MPI_DETECT_S 5  /* seconds for a Python interpreter to say where its mpi4py is */

/* ---- The checks of this host --------------------------------------------- */

typedef struct ctx {
  const wt_agent_args *o;
  char **program;
  int me, n;
  double t0, deadline;
  char host[256];
} ctx;

/* "2.28.9" from NCCL's code (2.9 and later: major*10000 + minor*100 + patch) */
static void nccl_version(int code, char *buf, size_t len)
{
  if (code >= 20900)
    snprintf(buf, len, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  else
    snprintf(buf, len, "%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

/* A library's version through one of its functions, "absent" without the library. */
typedef int (*int_fn)(int *);

static int lib_int(const char *const *sonames, const char *sym, int *v)
{
  for (int i = 0; sonames[i]; i++) {
    void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_LOCAL);
    if (!h)
      continue;
    int_fn fn = (int_fn)(uintptr_t)dlsym(h, sym);
    int rc = fn ? fn(v) : -1;
    /* left loaded: a library's destructors may not like being unloaded early */
    if (rc == 0)
      return 0;
  }
  return -1;
}

static void open_mpi(wk_facts *f)
{
  void *h = dlopen("libmpi.so.40", RTLD_LAZY | RTLD_LOCAL);
  int (*fn)(char *, int *) =
    h ? (int (*)(char *, int *))(uintptr_t)dlsym(h, "MPI_Get_library_version") : NULL;
  char buf[8192] = "";
  int len = 0;
  if (!fn || fn(buf, &len) != 0) {
    wk_fact(f, WT_CK_VER_OMPI, "absent");
    return;
  }
  const char *v = strstr(buf, "Open MPI v");
  if (v)
    wk_fact(f, WT_CK_VER_OMPI, "%.*s", (int)strcspn(v + 10, ", \n"), v + 10);
  else
    wk_fact(f, WT_CK_VER_OMPI, "%.*s", (int)strcspn(buf, ",\n"), buf);
}

static void versions(ctx *c, wk_facts *f)
{
  static const char *const nccl[] = {"libnccl.so.2", NULL};
  static const char *const cudart[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                       "libcudart.so", NULL};
  static const char *const cuda[] = {"libcuda.so.1", NULL};
  char buf[64];
  int v;
  (void)c;
  wk_fact(f, WT_CK_VER_WEFT, "%s", weft_version_string());
  /* hwloc's release (not its API version): what the library writes into any topology
   * it discovers, here this machine's with every type but the mandatory ones left out */
  hwloc_topology_t t;
  const char *hv = NULL;
  if (hwloc_topology_init(&t) == 0) {
    hwloc_topology_set_all_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (hwloc_topology_load(t) == 0)
      hv = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "hwlocVersion");
    wk_fact(f, WT_CK_VER_HWLOC, "%s", hv ? hv : "unknown");
    hwloc_topology_destroy(t);
  }
  open_mpi(f);
  if (lib_int(nccl, "ncclGetVersion", &v) == 0) {
    nccl_version(v, buf, sizeof(buf));
    wk_fact(f, WT_CK_VER_NCCL, "%s", buf);
  } else {
    wk_fact(f, WT_CK_VER_NCCL, "absent");
  }
  if (lib_int(cudart, "cudaRuntimeGetVersion", &v) == 0)
    wk_fact(f, WT_CK_VER_CUDART, "%d.%d", v / 1000, v % 1000 / 10);
  else
    wk_fact(f, WT_CK_VER_CUDART, "absent");
  if (lib_int(cuda, "cuDriverGetVersion", &v) == 0)
    wk_fact(f, WT_CK_VER_CUDA, "%d.%d", v / 1000, v % 1000 / 10);
  else
    wk_fact(f, WT_CK_VER_CUDA, "absent");
  /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  ..." */
  FILE *p = fopen("/proc/driver/nvidia/version", "r");
  char line[512], *m;
  if (p && fgets(line, sizeof(line), p) && (m = strstr(line, "Kernel Module"))) {
    m += 13;
    while (*m == ' ')
      m++;
    wk_fact(f, WT_CK_VER_DRIVER, "%.*s", (int)strcspn(m, " \n"), m);
  } else {
    wk_fact(f, WT_CK_VER_DRIVER, "absent");
  }
  if (p)
    fclose(p);
}

static const char *machine_name(unsigned m, char *buf, size_t len)
{
  switch (m) {
  case 3: return "i386";
  case 20: return "ppc";
  case 21: return "ppc64";
  case 40: return "arm";
  case 62: return "x86-64";
  case 183: return "aarch64";
  case 243: return "riscv";
  }
  snprintf(buf, len, "machine-%u", m);
  return buf;
}

/* A bare name on $PATH that exists but is not executable, into \p buf. */
static int on_path_noexec(const char *name, char *buf, size_t len)
{
  const char *path = getenv("PATH");
  struct stat st;
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    size_t n = strcspn(p, ":");
    if ((size_t)snprintf(buf, len, "%.*s/%s", (int)n, p, name) < len && stat(buf, &st) == 0 &&
        S_ISREG(st.st_mode))
      return 1;
    p += n + (p[n] == ':');
  }
  return 0;
}

/* The program on this host: found (PATH as the job's ranks get it), executable, an
 * ELF file of which class and machine, or a script whose interpreter is there; for
 * "python3 train.py" also the script. */
static void check_program(ctx *c, wk_facts *f)
{
  const char *name = c->program[0], *arg = c->program[1];
  char path[4096], head[256], what[6400];
  const char *look[] = {name, NULL};
  struct stat st;
  if (!weftx_find_exe(look, path, sizeof(path))) {
    if ((strchr(name, '/') && stat(name, &st) == 0) ||
        (!strchr(name, '/') && on_path_noexec(name, path, sizeof(path))))
      wk_fact(f, WT_CK_PROGRAM, "noexec %s", strchr(name, '/') ? name : path);
    else
      wk_fact(f, WT_CK_PROGRAM, "missing %s", name);
    return;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, head, sizeof(head) - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (got >= 20 && !memcmp(head, "\177ELF", 4)) {
    const unsigned char *u = (const unsigned char *)head;
    unsigned m = u[5] == 2 ? (unsigned)(u[18] << 8 | u[19]) : (unsigned)(u[19] << 8 | u[18]);
    char mb[32];
    snprintf(what, sizeof(what), "elf %s %s %s",
             u[4] == 1   ? "ELF32"
             : u[4] == 2 ? "ELF64"
                         : "ELF?",
             machine_name(m, mb, sizeof(mb)), path);
  } else if (got >= 2 && head[0] == '#' && head[1] == '!') {
    char interp[2048], found[2048];
    head[got] = '\0';
    const char *s = head + 2 + strspn(head + 2, " \t");
    snprintf(interp, sizeof(interp), "%.*s", (int)strcspn(s, " \t\n"), s);
    /* "#!/usr/bin/env python3": the interpreter is python3 on PATH */
    if (!strcmp(interp, "/usr/bin/env") || !strcmp(interp, "/bin/env")) {
      s += strlen(interp);
      s += strspn(s, " \t");
      snprintf(interp, sizeof(interp), "%.*s", (int)strcspn(s, " \t\n"), s);
    }
    const char *il[] = {interp, NULL};
    if (!interp[0] || !weftx_find_exe(il, found, sizeof(found))) {
      wk_fact(f, WT_CK_PROGRAM, "nointerp %s %s", interp[0] ? interp : "?", path);
      return;
    }
    snprintf(what, sizeof(what), "script %s %s", found, path);
  } else {
    snprintf(what, sizeof(what), "other %s", path);
  }
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (!strncmp(base, "python", 6) && arg && arg[0] != '-' && stat(arg, &st) != 0) {
    wk_fact(f, WT_CK_PROGRAM, "noscript %s %s", arg, path);
    return;
  }
  wk_fact(f, WT_CK_PROGRAM, "%s", what);
  /* the MPI it was built with, for weftrun to hold against its engine */
  static const char *const kinds[] = {[WEFTX_MPI_NONE] = "none",
                                      [WEFTX_MPI_OPENMPI] = "openmpi",
                                      [WEFTX_MPI_MPICH] = "mpich",
                                      [WEFTX_MPI_MPICH_FAMILY] = "mpich-family",
                                      [WEFTX_MPI_INTEL] = "intel"};
  weftx_mpi_info m;
  weftx_mpi_of_command(c->program, MPI_DETECT_S, &m);
  if (m.kind != WEFTX_MPI_UNKNOWN)
    wk_fact(f, WT_CK_MPI, "%s %s", kinds[m.kind], m.lib[0] ? m.lib : "-");
}

static void memory(ctx *c, wk_facts *f)
{
  FILE *m = fopen("/proc/meminfo", "r");
  char line[256];
  unsigned long long kb;
  struct statvfs sv;
  struct rlimit rl;
  (void)c;
  while (m && fgets(line, sizeof(line), m)) {
    if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
      wk_fact(f, WT_CK_MEM_TOTAL, "%llu", kb * 1024);
    else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
      wk_fact(f, WT_CK_MEM_AVAIL, "%llu", kb * 1024);
  }
  if (m)
    fclose(m);
  if (statvfs("/dev/shm", &sv) == 0)
    wk_fact(f, WT_CK_SHM, "%llu %llu", (unsigned long long)sv.f_blocks * sv.f_frsize,
            (unsigned long long)sv.f_bavail * sv.f_frsize);
  else
    wk_fact(f, WT_CK_SHM, "absent");
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    if (rl.rlim_cur == RLIM_INFINITY)
      wk_fact(f, WT_CK_MEMLOCK, "unlimited");
    else
      wk_fact(f, WT_CK_MEMLOCK, "%llu", (unsigned long long)rl.rlim_cur);
  }
}

/* The job's interface here: its address, MTU, whether it is a gVNIC, and the
 * interface the kernel would reach the master through. */
static void netif(ctx *c, wk_facts *f)
{
  const char *ifname = c->o->ifname;
  weftx_netif *ifs = NULL;
  int nifs = 0;
  if (weftx_netif_list(&ifs, &nifs))
    nifs = 0;
  int found = wk_check_ifaddr(ifs, nifs, ifname);
  if (ifname && found < 0) {
    wk_fact(f, WT_CK_NET_IF, "missing %s", ifname);
  } else if (ifname) {
    char a[64] = "?";
    weftx_netaddr_format(ifs[found].family, ifs[found].addr, a, sizeof(a));
    wk_fact(f, WT_CK_NET_IF, "%s %s/%d", ifname, a, ifs[found].prefixlen);
    struct ifreq ifr;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    if (s >= 0 && ioctl(s, SIOCGIFMTU, &ifr) == 0)
      wk_fact(f, WT_CK_NET_MTU, "%d", ifr.ifr_mtu);
    if (s >= 0)
      close(s);
    char path[300], vendor[16] = "";
    snprintf(path, sizeof(path), "/sys/class/net/%s/device/vendor", ifname);
    /* a virtual interface (veth, a bridge) has no PCI device: nothing to say */
    FILE *v = fopen(path, "r");
    if (v && fgets(vendor, sizeof(vendor), v))
      wk_fact(f, WT_CK_NET_GVNIC, "%s", !strncmp(vendor, "0x1ae0", 6) ? "yes" : "no");
    if (v)
      fclose(v);
  }
  weftx_netaddr m;
  char route[32];
  if (c->o->master_addr && weftx_netaddr_parse(&m, c->o->master_addr) == 0 &&
      weftx_netif_route_to(ifs, nifs, &m, route, sizeof(route)) == 0)
    wk_fact(f, WT_CK_NET_ROUTE, "%s", route);
  free(ifs);
}

static void on_gce_warn(void *arg, const char *msg) { wk_fact(arg, WT_CK_GCE_WARN, "%s", msg); }

/* On a Google Cloud VM: its machine type and placement, and weftx_gcp_check()'s
 * warnings against the family's preset (plugin, gVNIC, GPU NIC MTUs, NIC names).
 * Off GCE no request is made. */
static void gce(ctx *c, wk_facts *f)
{
  weftx_gcp_info info;
  weftx_preset *p = NULL;
  char why[600] = "";
  int rc = weftx_gcp_job_preset(c->o->nccl_preset, c->n > 1, &info, &p, why, sizeof(why));
  if (rc) {
    wk_fact(f, WT_CK_GCE_WARN, "--nccl-preset: %s", why[0] ? why : weft_strerror(rc));
    return;
  }
  if (!info.on_gce)
    return;
  wk_fact(f, WT_CK_GCE, "%s %s", info.machine_type[0] ? info.machine_type : "?",
          info.physical_host[0] ? info.physical_host : "-");
  if (why[0])
    wk_fact(f, WT_CK_GCE_WARN, "%s", why);
  weftx_gcp_check(&info, p, c->n > 1, on_gce_warn, f);
  weftx_preset_free(p);
}

static double inject_skew(const char *host);

static void net(ctx *c, wk_facts *f)
{
  wk_check_net a = {c->me,
                    c->n,
                    c->o->check_id ? c->o->check_id : "-",
                    c->o->master_addr,
                    (int)c->o->master_port,
                    c->o->ifname,
                    inject_skew(c->host),
                    c->deadline - 0.5};
  wk_check_net_run(&a, f);
}

static void gpus(ctx *c, wk_facts *f)
{
  (void)c;
  wk_check_gpus(f);
}

/* ---- Running them side by side ------------------------------------------- */

typedef struct group {
  const char *col; /* its column, for "timeout COLUMN SECONDS" */
  void (*fn)(ctx *, wk_facts *);
  double deadline;
  ctx *c;
  wk_facts facts;
  int done, printed;
  pthread_t thread;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
} group;

static void *run_group(void *arg)
{
  group *g = arg;
  wk_facts f = {NULL, 0, 0};
  g->fn(g->c, &f);
  pthread_mutex_lock(g->mu);
  g->facts = f;
  g->done = 1;
  pthread_cond_signal(g->cv);
  pthread_mutex_unlock(g->mu);
  return NULL;
}

/* WEFT_CHECK_INJECT="HOST:KEY=VALUE;..." (tests only): the agent on HOST reports
 * VALUE for KEY instead of what it found; KEY "clock.skew" adds VALUE seconds to
 * its clock as the other hosts' agents see it. Never set outside tests: it makes
 * the check lie. */
static const char *inject(const char *host, const char *key, char *buf, size_t len)
{
  const char *spec = getenv("WEFT_CHECK_INJECT");
  size_t hl = strlen(host), kl = strlen(key);
  for (const char *p = spec; p && *p;) {
    size_t n = strcspn(p, ";");
    if (n > hl + kl + 2 && !strncmp(p, host, hl) && p[hl] == ':' && !strncmp(p + hl + 1, key, kl) &&
        p[hl + 1 + kl] == '=') {
      const char *v = p + hl + kl + 2;
      snprintf(buf, len, "%.*s", (int)(p + n - v), v);
      return buf;
    }
    p += n + (p[n] == ';');
  }
  return NULL;
}

static double inject_skew(const char *host)
{
  char buf[64];
  return inject(host, "clock.skew", buf, sizeof(buf)) ? strtod(buf, NULL) : 0;
}

static void print_facts(const ctx *c, const wk_facts *f)
{
  for (int i = 0; i < f->n; i++) {
    char key[64], buf[1024];
    size_t k = strcspn(f->v[i], " ");
    snprintf(key, sizeof(key), "%.*s", (int)(k < sizeof(key) ? k : sizeof(key) - 1), f->v[i]);
    if (!strcmp(key, "xml")) {
      const char *x = f->v[i] + k + 1;
      size_t n = strlen(x);
      wt_agent_check_print(stdout, c->me, key, "%zu", n);
      fwrite(x, 1, n, stdout);
      continue;
    }
    const char *v = inject(c->host, key, buf, sizeof(buf));
    wt_agent_check_print(stdout, c->me, key, "%s", v ? v : f->v[i] + k + (f->v[i][k] == ' '));
  }
}

/* Index and number of hosts: this rank's host in the check job's layout (one rank
 * per host), the rank as Open MPI gives it (or PMIx, or Slurm, for other engines);
 * 0 of 1 when run by hand, outside any engine. */
static int where(const wt_agent_args *o, int *me, int *n, char *why, size_t len)
{
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r)
    r = getenv("PMIX_RANK");
  if (!r)
    r = getenv("SLURM_PROCID");
  long rank = 0;
  *me = 0;
  *n = 1;
  if (!o->layout || !r)
    return 0;
  int *counts = calloc(WT_AGENT_MAX_HOSTS, sizeof(int)), local = 0;
  if (!counts || weftx_parse_long(r, 0, 100000000, &rank)) {
    free(counts);
    snprintf(why, len, "%s", counts ? "bad OMPI_COMM_WORLD_RANK" : "out of memory");
    return -1;
  }
  *n = wt_layout_parse(o->layout, counts, WT_AGENT_MAX_HOSTS);
  *me = *n > 0 ? wt_layout_host(counts, *n, o->by_node, (int)rank, &local) : -1;
  free(counts);
  if (*n < 1 || *me < 0) {
    snprintf(why, len, "rank %ld is outside the layout '%s'", rank, o->layout);
    return -1;
  }
  return 0;
}

int wk_check(const wt_agent_args *o, char **program)
{
  ctx c;
  char why[300];
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv;
  pthread_condattr_t ca;

  memset(&c, 0, sizeof(c));
  c.o = o;
  c.program = program;
  c.t0 = weftx_monotonic();
  c.deadline = c.t0 + (o->check_deadline > 0 ? o->check_deadline : DEFAULT_DEADLINE_S);
  setvbuf(stdout, NULL, _IOLBF, 0); /* a record per write(2) */
  if (gethostname(c.host, sizeof(c.host)))
    snprintf(c.host, sizeof(c.host), "unknown");
  c.host[sizeof(c.host) - 1] = '\0';
  if (where(o, &c.me, &c.n, why, sizeof(why))) {
    /* no hello: weftrun names this host as not reached, with this line */
    fprintf(stderr, "weft-rank --check: host %s: %s\n", c.host, why);
    return 0;
  }
  wt_agent_check_print(stdout, c.me, WT_CK_HELLO, "%ld", (long)getpid());
  if (!strcmp(o->check, "reach")) {
    wt_agent_check_print(stdout, c.me, WT_CK_VER_WEFT, "%s", weft_version_string());
    wt_agent_check_print(stdout, c.me, WT_CK_END, "%s", "");
    return 0;
  }

  double local = c.t0 + GROUP_SHARE * (c.deadline - c.t0);
  group g[] = {
    {"versions", versions, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"program", program[0] ? check_program : NULL, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"gpus", gpus, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"memory", memory, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"net", netif, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"net", gce, local, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
    {"pairs", net, c.deadline - 0.2, &c, {NULL, 0, 0}, 0, 0, 0, &mu, &cv},
  };
  int ng = (int)(sizeof(g) / sizeof(g[0])), pending = 0;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &ca);
  pthread_mutex_lock(&mu);
  for (int i = 0; i < ng; i++) {
    if (!g[i].fn || pthread_create(&g[i].thread, NULL, run_group, &g[i])) {
      g[i].printed = 1;
      if (g[i].fn)
        fprintf(stderr, "weft-rank --check: host %s: cannot start the %s check: %s\n", c.host,
                g[i].col, strerror(errno));
      continue;
    }
    pthread_detach(g[i].thread);
    pending++;
  }
  while (pending > 0) {
    double now = weftx_monotonic(), next = 0;
    for (int i = 0; i < ng; i++) {
      if (g[i].printed)
        continue;
      if (g[i].done) {
        print_facts(&c, &g[i].facts);
      } else if (now >= g[i].deadline) {
        wt_agent_check_print(stdout, c.me, WT_CK_TIMEOUT, "%s %.0f", g[i].col,
                             g[i].deadline - c.t0);
      } else {
        if (!next || g[i].deadline < next)
          next = g[i].deadline;
        continue;
      }
      g[i].printed = 1;
      pending--;
    }
    if (pending > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      double wait = next - weftx_monotonic();
      if (wait < 0.001)
        wait = 0.001;
      ts.tv_sec += (time_t)wait;
      ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&cv, &mu, &ts);
    }
  }
  pthread_mutex_unlock(&mu);
  wt_agent_check_print(stdout, c.me, WT_CK_END, "%.3f", weftx_monotonic() - c.t0);
  fflush(stdout);
  fflush(stderr);
  /* a check that missed its deadline may still be stuck in a driver call: do not
   * wait for it, and do not run exit handlers under it */
  _exit(0);
}
