/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key of the topology cache: everything that changes what hwloc finds on
 * this machine, each part hashed (64-bit FNV-1a) and written "name=HASH", so
 * that a log can say which part changed. The parts:
 *
 *   boot   the kernel's boot id (a reboot, a kernel upgrade, a live migration
 *          that reboots)
 *   host   the host name (a shared home directory holds one file per host)
 *   hwloc  hwloc's API version at build and run time, its library file and the
 *          plugins next to it (an upgrade, libhwloc-plugins installed)
 *   weft   weft's version and the cache format (how weft asks hwloc to probe)
 *   pci    every PCI device with its ids, class and driver (hot-plug, a driver
 *          bound or unbound)
 *   net    the network and RDMA interfaces on PCI devices (renames)
 *   cpu    online CPUs and NUMA nodes, and this process's allowed CPUs and
 *          memory nodes and cgroup (hwloc leaves disallowed ones out)
 *   env    HWLOC_* (but HWLOC_HIDE_ERRORS, which only quiets messages) and
 *          CUDA_VISIBLE_DEVICES (hwloc's CUDA plugin sees only those)
 *
 * Every file is read under a root directory ("" for this machine), so that
 * the unit tests can hand it a made-up /sys and /proc.
 */
#define _GNU_SOURCE 1 /* dladdr() */
#include "topo_private.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_FORMAT "1" /* raise when what weft asks hwloc for changes */
#define SMALL_FILE 8192

extern char **environ;

typedef struct part {
  const char *root;
  uint64_t h;
} part;

static void mix(part *p, const void *data, size_t n)
{
  const unsigned char *c = data;
  for (size_t i = 0; i < n; i++) {
    p->h ^= c[i];
    p->h *= 0x100000001b3ULL;
  }
  p->h ^= 0xff; /* a separator, so that "ab","c" and "a","bc" differ */
  p->h *= 0x100000001b3ULL;
}

static void mix_str(part *p, const char *s) { mix(p, s, strlen(s)); }

/* A small file's content under the root, or "-" when it cannot be read. */
static void mix_file(part *p, const char *path)
{
  char full[4096], buf[SMALL_FILE];
  ssize_t n = -1;
  int fd;

  if (weft__snprintf(full, sizeof(full), "%s%s", p->root, path) == 0 &&
      (fd = open(full, O_RDONLY | O_CLOEXEC)) >= 0) {
    n = read(fd, buf, sizeof(buf));
    close(fd);
  }
  mix_str(p, path);
  if (n < 0)
    mix_str(p, "-");
  else
    mix(p, buf, (size_t)n);
}

static int name_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a directory under the root, sorted; NULL-terminated, or NULL when
 * it cannot be read (free with free_names()). */
static char **list_dir(const char *root, const char *path, int *n)
{
  char full[4096], **v = NULL;
  struct dirent *e;
  int cap = 0;
  DIR *d;

  *n = 0;
  if (weft__snprintf(full, sizeof(full), "%s%s", root, path) != 0 || !(d = opendir(full)))
    return NULL;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (*n + 2 > cap) {
      char **w = realloc(v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*w));
      if (!w)
        break;
      v = w;
    }
    if (!(v[*n] = strdup(e->d_name)))
      break;
    v[++*n] = NULL;
  }
  closedir(d);
  if (v)
    qsort(v, (size_t)*n, sizeof(*v), name_cmp);
  return v;
}

static void free_names(char **v)
{
  for (int i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

/* PCI devices: their addresses, and ids, class and driver from each one's uevent. */
static int key_pci(part *p)
{
  char path[512];
  int n;
  char **v = list_dir(p->root, "/sys/bus/pci/devices", &n);

  mix(p, &n, sizeof(n));
  for (int i = 0; i < n; i++) {
    if (weft__snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/uevent", v[i]) == 0)
      mix_file(p, path);
  }
  free_names(v);
  return 0;
}

/* Network interfaces that sit on a PCI device (a veth or a bridge coming and going
 * changes nothing hwloc shows), with what they point at; RDMA devices by name. */
static int key_net(part *p)
{
  char path[4096], link[4096];
  int n;
  char **v = list_dir(p->root, "/sys/class/net", &n);

  for (int i = 0; i < n; i++) {
    ssize_t k;
    if (weft__snprintf(path, sizeof(path), "%s/sys/class/net/%s", p->root, v[i]) != 0 ||
        (k = readlink(path, link, sizeof(link) - 1)) < 0)
      continue;
    link[k] = '\0';
    if (strstr(link, "/pci")) {
      mix_str(p, v[i]);
      mix_str(p, link);
    }
  }
  free_names(v);
  v = list_dir(p->root, "/sys/class/infiniband", &n);
  for (int i = 0; i < n; i++)
    mix_str(p, v[i]);
  free_names(v);
  return 0;
}

/* The cgroup's effective cpuset (v2, then v1), which hwloc reads for the allowed sets. */
static void key_cgroup(part *p)
{
  char full[4096], buf[SMALL_FILE], path[4200];
  ssize_t n = -1;
  int fd;

  if (weft__snprintf(full, sizeof(full), "%s/proc/self/cgroup", p->root) == 0 &&
      (fd = open(full, O_RDONLY | O_CLOEXEC)) >= 0) {
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
  }
  if (n < 0) {
    mix_str(p, "-");
    return;
  }
  buf[n] = '\0';
  mix(p, buf, (size_t)n);
  for (char *line = buf, *next; *line; line = next) {
    next = line + strcspn(line, "\n");
    if (*next)
      *next++ = '\0';
    char *cg = strrchr(line, ':');
    if (!cg || strstr(cg, ".."))
      continue;
    if (!strncmp(line, "0::", 3)) {
      if (weft__snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpuset.cpus.effective", cg + 1) == 0)
        mix_file(p, path);
      if (weft__snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpuset.mems.effective", cg + 1) == 0)
        mix_file(p, path);
    } else if (strstr(line, ":cpuset:")) {
      if (weft__snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset%s/cpuset.effective_cpus",
                         cg + 1) == 0)
        mix_file(p, path);
      if (weft__snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset%s/cpuset.effective_mems",
                         cg + 1) == 0)
        mix_file(p, path);
    }
  }
}

/* Online CPUs and NUMA nodes, this process's allowed ones, its cgroup. */
static int key_cpu(part *p)
{
  char full[4096], buf[SMALL_FILE];
  ssize_t n = -1;
  int fd;

  mix_file(p, "/sys/devices/system/cpu/online");
  mix_file(p, "/sys/devices/system/node/online");
  if (weft__snprintf(full, sizeof(full), "%s/proc/self/status", p->root) == 0 &&
      (fd = open(full, O_RDONLY | O_CLOEXEC)) >= 0) {
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
  }
  buf[n < 0 ? 0 : n] = '\0';
  for (const char *line = buf; *line;) {
    size_t k = strcspn(line, "\n");
    if (!strncmp(line, "Cpus_allowed_list:", 18) || !strncmp(line, "Mems_allowed_list:", 18))
      mix(p, line, k);
    line += k + (line[k] != '\0');
  }
  key_cgroup(p);
  return 0;
}

static int env_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int key_env(part *p)
{
  int n = 0;
  for (char **e = environ; *e; e++)
    n++;
  const char **v = calloc((size_t)n + 1, sizeof(*v));
  if (!v)
    return WEFT_ENOMEM;
  n = 0;
  for (char **e = environ; *e; e++)
    if ((!strncmp(*e, "HWLOC_", 6) && strncmp(*e, "HWLOC_HIDE_ERRORS=", 18)) ||
        !strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21))
      v[n++] = *e;
  qsort(v, (size_t)n, sizeof(*v), env_cmp);
  for (int i = 0; i < n; i++)
    mix_str(p, v[i]);
  free(v);
  return 0;
}

/* The hwloc library this process runs with, and its plugins' directory beside it. */
static int key_hwloc(part *p)
{
  char buf[64], dir[4096], path[4400];
  Dl_info info;
  struct stat st;

  weft__snprintf(buf, sizeof(buf), "%x %x", (unsigned)HWLOC_API_VERSION, hwloc_get_api_version());
  mix_str(p, buf);
  if (!dladdr((void *)hwloc_topology_init, &info) || !info.dli_fname || !info.dli_fname[0]) {
    mix_str(p, "-");
    return 0;
  }
  /* the file itself, not its path: programs may reach one library by different paths */
  if (stat(info.dli_fname, &st) == 0) {
    long long id[5] = {(long long)st.st_dev, (long long)st.st_ino, (long long)st.st_size,
                       (long long)st.st_mtime, (long long)st.st_ctime};
    mix(p, id, sizeof(id));
  }
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash || weft__snprintf(dir, sizeof(dir), "%.*shwloc", (int)(slash + 1 - info.dli_fname),
                               info.dli_fname) != 0)
    return 0;
  int n;
  char **v = list_dir("", dir, &n);
  for (int i = 0; i < n; i++) {
    if (weft__snprintf(path, sizeof(path), "%s/%s", dir, v[i]) != 0 || stat(path, &st) != 0)
      continue;
    long long id[3] = {(long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtime};
    mix_str(p, v[i]);
    mix(p, id, sizeof(id));
  }
  free_names(v);
  return 0;
}

static int add(char *key, size_t len, size_t *used, const char *name, const part *p)
{
  int n = snprintf(key + *used, len - *used, "%s%s=%016llx", *used ? " " : "", name,
                   (unsigned long long)p->h);
  if (n < 0 || (size_t)n >= len - *used)
    return WEFT_ERANGE;
  *used += (size_t)n;
  return 0;
}

/* The boot id: without one nothing says the machine is the one that was probed. */
static int key_boot(part *p)
{
  char path[4096], boot[128];
  ssize_t n = -1;
  int fd;

  if (weft__snprintf(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id", p->root) == 0 &&
      (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
    n = read(fd, boot, sizeof(boot));
    close(fd);
  }
  if (n <= 0)
    return WEFT_ENOENT;
  mix(p, boot, (size_t)n);
  return 0;
}

static int key_host(part *p)
{
  char host[256];

  if (gethostname(host, sizeof(host)) != 0)
    host[0] = '\0';
  host[sizeof(host) - 1] = '\0';
  mix_str(p, host);
  return 0;
}

static int key_weft(part *p)
{
  mix_str(p, weft_version_string());
  mix_str(p, KEY_FORMAT);
  return 0;
}

int weft__topo_cache_key(const char *root, char *key, size_t len)
{
  static const struct {
    const char *name;
    int (*fn)(part *);
  } parts[] = {{"boot", key_boot}, {"host", key_host}, {"hwloc", key_hwloc}, {"weft", key_weft},
               {"pci", key_pci},   {"net", key_net},   {"cpu", key_cpu},     {"env", key_env}};
  size_t used = 0;
  part p = {root, 0};
  int rc = 0;

  if (!key || len == 0)
    return WEFT_EINVAL;
  key[0] = '\0';
  for (size_t i = 0; !rc && i < WEFT__ARRAY_SIZE(parts); i++) {
    p.h = 0xcbf29ce484222325ULL; /* FNV-1a's offset basis */
    rc = parts[i].fn(&p);
    rc = rc ? rc : add(key, len, &used, parts[i].name, &p);
  }
  if (rc)
    key[0] = '\0';
  return rc;
}
