/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the per-user topology cache (lib/topo/topo-cache*.c): the key
 * of a made-up /sys and /proc changes with each thing it covers and with
 * nothing else; this machine's topology is written, then read back, private
 * (0600 file, 0700 directory); it is probed again when a key part differs,
 * the file is damaged (also in a way hwloc would crash on), not private, a
 * link, or not the user's; WEFT_TOPOLOGY_CACHE=0 and hwloc's other inputs
 * (HWLOC_XMLFILE) turn it off.
 */
#include "topo_private.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test-util.h"

static char tmpdir[256];
static char cachedir[300], cachefile[600];

static void put(const char *rel, const char *text)
{
  char path[1024], cmd[1200];
  assert_int_equal(weft__snprintf(path, sizeof(path), "%s/%s", tmpdir, rel), 0);
  assert_int_equal(weft__snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path), 0);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* The value of part \p name in \p key. */
static const char *part(const char *key, const char *name)
{
  static char v[64];
  char pat[32];
  assert_int_equal(weft__snprintf(pat, sizeof(pat), "%s=", name), 0);
  const char *p = strstr(key, pat);
  assert_non_null(p);
  p += strlen(pat);
  assert_int_equal(weft__snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, " "), p), 0);
  return v;
}

static char root[300];

/* The parts of the key that differ from \p before, as "pci cpu". */
static const char *changed(const char *before)
{
  static char out[128];
  static const char *const names[] = {"boot", "host", "hwloc", "weft", "pci",
                                      "net",  "cpu",  "env",   NULL};
  char key[512], a[64];
  assert_int_equal(weft__topo_cache_key(root, key, sizeof(key)), 0);
  out[0] = '\0';
  for (int i = 0; names[i]; i++) {
    assert_int_equal(weft__snprintf(a, sizeof(a), "%s", part(before, names[i])), 0);
    if (strcmp(a, part(key, names[i])))
      assert_int_equal(weft__snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
                                      out[0] ? " " : "", names[i]),
                       0);
  }
  return out;
}

static void key_now(char *key, size_t len)
{
  assert_int_equal(weft__topo_cache_key(root, key, len), 0);
}

static void test_key(void **state)
{
  char key[512];
  (void)state;
  assert_int_equal(weft__snprintf(root, sizeof(root), "%s/root", tmpdir), 0);
  /* no boot id: no key, so no cache */
  assert_int_equal(weft__topo_cache_key(root, key, sizeof(key)), WEFT_ENOENT);
  put("root/proc/sys/kernel/random/boot_id", "0f1e2d3c-aaaa-bbbb-cccc-000000000001\n");
  put("root/sys/bus/pci/devices/0000:00:04.0/uevent",
      "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2330\nPCI_SLOT_NAME=0000:00:04.0\n");
  put("root/sys/devices/system/cpu/online", "0-7\n");
  put("root/sys/devices/system/node/online", "0\n");
  put("root/proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t0\n"
                               "VmRSS:\t100 kB\n");
  put("root/proc/self/cgroup", "0::/user.slice/job1\n");
  put("root/sys/fs/cgroup/user.slice/job1/cpuset.cpus.effective", "0-7\n");
  key_now(key, sizeof(key));
  assert_string_equal(changed(key), "");

  /* one change at a time: the part that covers it changes, and no other */
  static const struct {
    const char *file, *text, *parts;
  } steps[] = {
    {"root/proc/sys/kernel/random/boot_id", "0f1e2d3c-aaaa-bbbb-cccc-000000000002\n", "boot"},
    {"root/sys/bus/pci/devices/0000:00:05.0/uevent", "DRIVER=gve\nPCI_CLASS=20000\n", "pci"},
    {"root/sys/bus/pci/devices/0000:00:04.0/uevent", /* the driver unbound */
     "PCI_CLASS=30200\nPCI_ID=10DE:2330\nPCI_SLOT_NAME=0000:00:04.0\n", "pci"},
    {"root/sys/devices/system/cpu/online", "0-3\n", "cpu"},
    {"root/proc/self/status",
     "Name:\tx\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n"
     "VmRSS:\t100 kB\n",
     "cpu"},
    {"root/proc/self/status",
     "Name:\tx\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n"
     "VmRSS:\t999 kB\n",
     ""}, /* a line hwloc does not read */
    {"root/sys/fs/cgroup/user.slice/job1/cpuset.cpus.effective", "0-5\n", "cpu"},
    {"root/proc/self/cgroup", "0::/user.slice/job2\n", "cpu"},
  };
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(steps); i++) {
    put(steps[i].file, steps[i].text);
    if (strcmp(changed(key), steps[i].parts))
      fail_msg("%s: '%s' changed, expected '%s'", steps[i].file, changed(key), steps[i].parts);
    key_now(key, sizeof(key));
  }
  assert_int_equal(setenv("HWLOC_COMPONENTS", "-gl", 1), 0);
  assert_string_equal(changed(key), "env");
  key_now(key, sizeof(key));
  assert_int_equal(setenv("CUDA_VISIBLE_DEVICES", "1", 1), 0);
  assert_string_equal(changed(key), "env");
  key_now(key, sizeof(key));
  assert_int_equal(setenv("HWLOC_HIDE_ERRORS", "2", 1), 0); /* only quiets hwloc */
  assert_int_equal(setenv("WEFT_SOMETHING", "1", 1), 0);
  assert_string_equal(changed(key), "");
  assert_int_equal(unsetenv("HWLOC_COMPONENTS"), 0);
  assert_int_equal(unsetenv("CUDA_VISIBLE_DEVICES"), 0);
  assert_int_equal(unsetenv("WEFT_SOMETHING"), 0);
  /* a key too long for the buffer is an error, not a cut key */
  assert_int_equal(weft__topo_cache_key(root, key, 40), WEFT_ERANGE);
}

static weftx_topo *load(int expect)
{
  weftx_topo *t = NULL;
  char why[600] = "";
  int rc = weftx_topo_load(NULL, WEFTX_TOPO_CACHE | WEFTX_TOPO_NO_DETAILS, &t, why, sizeof(why));
  if (rc)
    fail_msg("load: %s (%s)", weft_strerror(rc), why);
  assert_int_equal(weftx_topo_is_live(t), 1);
  if (weftx_topo_cache_state(t) != expect)
    fail_msg("cache state %d, expected %d", weftx_topo_cache_state(t), expect);
  return t;
}

static void load_and_drop(int expect) { weftx_topo_destroy(load(expect)); }

static mode_t mode_of(const char *path)
{
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  return st.st_mode;
}

/* The cached file with \p from replaced by \p to (first match), written in place. */
static void edit(const char *from, const char *to)
{
  size_t n;
  char *buf = slurp(cachefile, &n), *at = strstr(buf, from);
  assert_non_null(at);
  FILE *f = fopen(cachefile, "w");
  assert_non_null(f);
  fwrite(buf, 1, (size_t)(at - buf), f);
  fputs(to, f);
  fputs(at + strlen(from), f);
  assert_int_equal(fclose(f), 0);
  free(buf);
}

static void test_cache(void **state)
{
  (void)state;
  char host[256], xdg[300];
  assert_int_equal(gethostname(host, sizeof(host)), 0);
  host[sizeof(host) - 1] = '\0';
  for (char *c = host; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.", *c))
      *c = '_';
  assert_int_equal(weft__snprintf(xdg, sizeof(xdg), "%s/cache", tmpdir), 0);
  assert_int_equal(weft__snprintf(cachedir, sizeof(cachedir), "%s/weft", xdg), 0);
  assert_int_equal(
    weft__snprintf(cachefile, sizeof(cachefile), "%s/topology-%s.xml", cachedir, host), 0);
  assert_int_equal(setenv("XDG_CACHE_HOME", xdg, 1), 0);
  assert_int_equal(unsetenv("WEFT_TOPOLOGY"), 0);
  assert_int_equal(unsetenv("WEFT_TOPOLOGY_CACHE"), 0);

  /* made private, then read back as this machine */
  weftx_topo *a = load(WEFTX_TOPO_CACHE_WRITTEN);
  assert_int_equal(mode_of(cachedir) & 0777, 0700);
  assert_int_equal(mode_of(cachefile) & 0777, 0600);
  weftx_topo *b = load(WEFTX_TOPO_CACHE_HIT);
  assert_string_equal(weftx_topo_source(b), cachefile);
  assert_int_equal(weftx_topo_npus(a), weftx_topo_npus(b));
  assert_int_equal(weftx_topo_ncores(a), weftx_topo_ncores(b));
  assert_int_equal(weftx_topo_nnuma(a), weftx_topo_nnuma(b));
  assert_int_equal(weftx_topo_nnics(a), weftx_topo_nnics(b));
  assert_int_equal(weftx_topo_ngpus(a), weftx_topo_ngpus(b));
  assert_string_equal(weftx_topo_hostname(a), weftx_topo_hostname(b));
  /* the export of a cached topology is the file, byte for byte */
  char *text = NULL;
  size_t len = 0, flen;
  FILE *m = open_memstream(&text, &len);
  assert_int_equal(weftx_topo_export_xml(b, m), 0);
  assert_int_equal(fclose(m), 0);
  char *file = slurp(cachefile, &flen);
  assert_int_equal(len, flen);
  assert_memory_equal(text, file, len);
  free(text);
  free(file);
  weftx_topo_destroy(a);
  weftx_topo_destroy(b);

  /* a key part that differs: probed and written again, then read */
  assert_int_equal(setenv("HWLOC_WEFT_TEST", "1", 1), 0);
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  load_and_drop(WEFTX_TOPO_CACHE_HIT);
  assert_int_equal(unsetenv("HWLOC_WEFT_TEST"), 0);
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  edit(" pci=", " pci=0");
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  edit("<!-- weft-topology-cache ", "<!-- ");
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  load_and_drop(WEFTX_TOPO_CACHE_HIT);

  /* damaged under a good key: never trusted, whatever hwloc would make of it */
  edit("complete_cpuset=", "x=");
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  edit("<object type=\"Machine\"", "<object type=\"Machine");
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  edit("<topology", "<topologx"); /* no topology element */
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  load_and_drop(WEFTX_TOPO_CACHE_HIT);

  /* not private, or a link: not read, and replaced by a private file */
  assert_int_equal(chmod(cachefile, 0644), 0);
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  assert_int_equal(mode_of(cachefile) & 0777, 0600);
  char other[700];
  assert_int_equal(weft__snprintf(other, sizeof(other), "%s/other.xml", tmpdir), 0);
  assert_int_equal(rename(cachefile, other), 0);
  assert_int_equal(symlink(other, cachefile), 0);
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  assert_true(S_ISREG(mode_of(cachefile)));
  unlink(other);
  if (geteuid() == 0) { /* another user's file, even with the right key */
    assert_int_equal(chown(cachefile, 65534, 65534), 0);
    load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
    load_and_drop(WEFTX_TOPO_CACHE_HIT);
  }

  /* a directory others may enter: not used at all */
  assert_int_equal(chmod(cachedir, 0755), 0);
  load_and_drop(WEFTX_TOPO_CACHE_OFF);
  assert_int_equal(chmod(cachedir, 0700), 0);
  load_and_drop(WEFTX_TOPO_CACHE_HIT);

  /* an XDG_CACHE_HOME of another user's (kept across sudo): HOME/.cache instead */
  if (geteuid() == 0) {
    char home[300], other_file[700];
    assert_int_equal(weft__snprintf(home, sizeof(home), "%s/home", tmpdir), 0);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(chown(xdg, 65534, 65534), 0);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    assert_int_equal(setenv("HOME", home, 1), 0);
    load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
    assert_int_equal(weft__snprintf(other_file, sizeof(other_file), "%s/.cache/weft/%s", home,
                                    strrchr(cachefile, '/') + 1),
                     0);
    assert_int_equal(mode_of(other_file) & 0777, 0600);
    load_and_drop(WEFTX_TOPO_CACHE_HIT);
    assert_int_equal(chown(xdg, 0, 0), 0);
    if (old_home)
      assert_int_equal(setenv("HOME", old_home, 1), 0);
    free(old_home);
  }

  /* turned off: nothing read or written */
  assert_int_equal(unlink(cachefile), 0);
  assert_int_equal(setenv("WEFT_TOPOLOGY_CACHE", "0", 1), 0);
  load_and_drop(WEFTX_TOPO_CACHE_OFF);
  assert_int_equal(access(cachefile, F_OK), -1);
  assert_int_equal(setenv("WEFT_TOPOLOGY_CACHE", "off", 1), 0); /* not "0" or "1": off too */
  load_and_drop(WEFTX_TOPO_CACHE_OFF);
  assert_int_equal(setenv("WEFT_TOPOLOGY_CACHE", "1", 1), 0);
  load_and_drop(WEFTX_TOPO_CACHE_WRITTEN);
  assert_int_equal(unsetenv("WEFT_TOPOLOGY_CACHE"), 0);
  char xml[1024];
  assert_int_equal(
    weft__snprintf(xml, sizeof(xml), "%s/topologies/n2-standard-16.xml", weftx_datadir()), 0);
  assert_int_equal(setenv("HWLOC_XMLFILE", xml, 1), 0);
  weftx_topo *t = NULL;
  char why[600];
  assert_int_equal(weftx_topo_load(NULL, WEFTX_TOPO_CACHE, &t, why, sizeof(why)), 0);
  assert_int_equal(weftx_topo_cache_state(t), WEFTX_TOPO_CACHE_OFF);
  weftx_topo_destroy(t);
  assert_int_equal(unsetenv("HWLOC_XMLFILE"), 0);
  /* a file named by WEFT_TOPOLOGY is that file, cache or not */
  assert_int_equal(setenv("WEFT_TOPOLOGY", xml, 1), 0);
  assert_int_equal(weftx_topo_load(NULL, WEFTX_TOPO_CACHE, &t, why, sizeof(why)), 0);
  assert_int_equal(weftx_topo_cache_state(t), WEFTX_TOPO_CACHE_OFF);
  assert_int_equal(weftx_topo_npus(t), 16);
  weftx_topo_destroy(t);
  assert_int_equal(unsetenv("WEFT_TOPOLOGY"), 0);
}

static int setup(void **state)
{
  (void)state;
  assert_int_equal(
    weft__snprintf(tmpdir, sizeof(tmpdir), "%s/weft-topo-cache.XXXXXX",
                   getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp"),
    0);
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
  char cmd[600];
  (void)state;
  if (weft__snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir) != 0)
    return -1;
  return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_key),
    cmocka_unit_test(test_cache),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
