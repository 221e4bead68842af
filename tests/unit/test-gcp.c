/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/gcp against a fake metadata server on loopback
 * (tests/cli/gcp-fake-metadata.py, started here on a free port) and a fake
 * sysfs tree in a temporary directory (WEFT_GCP_SYSROOT). The real metadata
 * server is never contacted: every test that may make a request points
 * GCE_METADATA_HOST at the fake one, and the others check that none is made.
 */
#include "weft_private.h"
#include <weftx.h> /* weft_private.h brings weftx/util.h alone */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Tests that talk to the fake server skip in a build without libcurl. */
#ifdef WEFT_HAVE_CURL
#define NEED_CURL() ((void)0)
#else
#define NEED_CURL() skip()
#endif

static char tmpdir[256];
static char sysroot[300];
static pid_t server_pid = -1;
static int server_port;
static char md_host[64];

/* ---- helpers ----------------------------------------------------------- */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *fmt, ...) WEFT_PRINTF(2, 3);
static void write_file(const char *path, const char *fmt, ...)
{
  char dir[512], *slash;
  va_list ap;
  FILE *f;

  snprintf(dir, sizeof(dir), "%s", path);
  for (slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    mkdir(dir, 0755);
    *slash = '/';
  }
  f = fopen(path, "w");
  assert_non_null(f);
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fclose(f);
}

/* One interface of the fake sysfs. */
static void fake_if(const char *name, const char *mac, int mtu, const char *pci, const char *driver)
{
  char p[512];

  snprintf(p, sizeof(p), "%s/sys/class/net/%s/address", sysroot, name);
  write_file(p, "%s\n", mac);
  snprintf(p, sizeof(p), "%s/sys/class/net/%s/mtu", sysroot, name);
  write_file(p, "%d\n", mtu);
  if (pci) {
    snprintf(p, sizeof(p), "%s/sys/class/net/%s/device/uevent", sysroot, name);
    write_file(p, "DRIVER=%s\nPCI_CLASS=20000\nPCI_ID=%s:0042\nPCI_SLOT_NAME=%s\n", driver,
               !strcmp(driver, "gve") ? "1AE0" : "15B3", pci);
  }
}

static void set_dmi(const char *name)
{
  char p[512];
  snprintf(p, sizeof(p), "%s/sys/class/dmi/id/product_name", sysroot);
  write_file(p, "%s\n", name);
}

/* A plain HTTP/1.0 GET of a control URL of the fake server; returns the body's first number. */
static long control(const char *fmt, ...) WEFT_PRINTF(1, 2);
static long control(const char *fmt, ...)
{
  struct sockaddr_in sa;
  char req[512], path[400], resp[2048];
  size_t got = 0;
  ssize_t r;
  va_list ap;
  int fd;
  char *body;

  va_start(ap, fmt);
  vsnprintf(path, sizeof(path), fmt, ap);
  va_end(ap);
  fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)server_port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nConnection: close\r\n\r\n", path);
  assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  while (got < sizeof(resp) - 1 && (r = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
    got += (size_t)r;
  close(fd);
  resp[got] = '\0';
  assert_non_null(strstr(resp, " 200 "));
  body = strstr(resp, "\r\n\r\n");
  return body ? strtol(body + 4, NULL, 10) : -1;
}

static const char *tree_json = "{\"instance\": {"
                               "  \"machine-type\": \"projects/123/machineTypes/a3-highgpu-8g\","
                               "  \"zone\": \"projects/123/zones/us-central1-a\","
                               "  \"hostname\": \"vm-a.c.proj.internal\","
                               "  \"preempted\": \"FALSE\","
                               "  \"maintenance-event\": \"NONE\","
                               "  \"scheduling\": {\"preemptible\": \"TRUE\"},"
                               "  \"attributes\": {\"physical_host\": \"/c1/r7/h3\"},"
                               "  \"network-interfaces\": {"
                               "    \"0\": {\"mac\": \"42:01:0A:00:00:02\", \"ip\": \"10.0.0.2\", "
                               "\"network\": \"projects/123/networks/host\"},"
                               "    \"1\": {\"mac\": \"42:01:0a:01:00:02\", \"ip\": \"10.1.0.2\", "
                               "\"network\": \"projects/123/networks/gpu0\"},"
                               "    \"2\": {\"mac\": \"42:01:0a:02:00:02\", \"ip\": \"10.2.0.2\", "
                               "\"network\": \"projects/123/networks/gpu1\"},"
                               "    \"3\": {\"mac\": \"42:01:0a:03:00:02\", \"ip\": \"10.3.0.2\", "
                               "\"network\": \"projects/123/networks/gpu2\"},"
                               "    \"4\": {\"mac\": \"42:01:0a:04:00:02\", \"ip\": \"10.4.0.2\", "
                               "\"network\": \"projects/123/networks/gpu3\"}"
                               "  }},"
                               " \"project\": {\"project-id\": \"proj\"}}";

static int start_server(void **state)
{
  char data[512], portfile[512], script[512], line[32];
  const char *top = getenv("WEFT_TOPDIR");
  double t0;
  FILE *f;

  (void)state;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/weft-test-gcp-XXXXXX");
  if (!mkdtemp(tmpdir))
    return -1;
  snprintf(sysroot, sizeof(sysroot), "%s/root", tmpdir);
  snprintf(data, sizeof(data), "%s/tree.json", tmpdir);
  write_file(data, "%s\n", tree_json);
  snprintf(portfile, sizeof(portfile), "%s/port", tmpdir);
  snprintf(script, sizeof(script), "%s/tests/cli/gcp-fake-metadata.py", top ? top : "..");
  server_pid = fork();
  if (server_pid == 0) {
    execl("/usr/bin/python3", "python3", script, "--data", data, "--port-file", portfile,
          (char *)NULL);
    _exit(127);
  }
  if (server_pid < 0)
    return -1;
  for (t0 = now_s(); now_s() - t0 < 20; usleep(20000)) {
    f = fopen(portfile, "r");
    if (f && fgets(line, sizeof(line), f)) {
      fclose(f);
      long port;
      line[strcspn(line, "\n")] = '\0';
      if (weftx_parse_long(line, 1, 65535, &port) == 0)
        server_port = (int)port;
      break;
    }
    if (f)
      fclose(f);
  }
  if (server_port <= 0) {
    fprintf(stderr, "fake metadata server did not start (%s)\n", script);
    return -1;
  }
  snprintf(md_host, sizeof(md_host), "127.0.0.1:%d", server_port);
  setenv("WEFT_GCP_SYSROOT", sysroot, 1);
  return 0;
}

static int stop_server(void **state)
{
  char cmd[400];
  int st;

  (void)state;
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, &st, 0);
  }
  if (tmpdir[0]) {
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", tmpdir);
  }
  return 0;
}

/* The A3 High VM: host NIC and 4 GPU NICs whose metadata order differs from their PCI order. */
static void a3_sysfs(void)
{
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys'", sysroot);
  assert_int_equal(system(cmd), 0);
  set_dmi("Google Compute Engine");
  fake_if("lo", "00:00:00:00:00:00", 65536, NULL, NULL);
  fake_if("docker0", "02:42:ac:11:00:01", 1500, NULL, NULL);
  fake_if("enp0s12", "42:01:0a:00:00:02", 1460, "0000:00:0c.0", "gve");
  fake_if("enp134s0", "42:01:0a:01:00:02", 8244, "0000:86:00.0", "gve");
  fake_if("enp6s0", "42:01:0a:02:00:02", 8244, "0000:06:00.0", "gve");
  fake_if("enp140s0", "42:01:0a:03:00:02", 8244, "0000:8c:00.0", "gve");
  fake_if("enp12s0", "42:01:0a:04:00:02", 8244, "0000:0c:00.0", "gve");
}

static int setup_each(void **state)
{
  (void)state;
  setenv("GCE_METADATA_HOST", md_host, 1);
  setenv("WEFT_GCP_SYSROOT", sysroot, 1);
  a3_sysfs();
  control("/control/fail503?n=0");
  control("/control/set?path=instance/preempted&value=FALSE");
  control("/control/set?path=instance/maintenance-event&value=NONE");
  control("/control/set?path=instance/machine-type&value=projects/123/machineTypes/a3-highgpu-8g");
  control("/control/set?path=instance/attributes/physical_host&value=/c1/r7/h3");
  return 0;
}

static const weftx_preset_var *var(const weftx_preset_var *v, int n, const char *key)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].key, key))
      return &v[i];
  return NULL;
}

/* ---- tests ------------------------------------------------------------- */

static void test_family(void **state)
{
  static const char *const cases[][2] = {
    {"n1-standard-8", "n1"},
    {"projects/1/machineTypes/n1-highmem-96", "n1"},
    {"a2-highgpu-8g", "a2"},
    {"a2-megagpu-16g", "a2"},
    {"a2-ultragpu-1g", "a2"},
    {"g2-standard-24", "g2"},
    {"a3-highgpu-1g", "a3-highgpu-small"},
    {"a3-highgpu-2g", "a3-highgpu-small"},
    {"a3-highgpu-4g", "a3-highgpu-small"},
    {"a3-highgpu-8g", "a3-highgpu-8g"},
    {"zones/x/machineTypes/a3-edgegpu-8g", "a3-edgegpu-8g"},
    {"a3-megagpu-8g", "a3-megagpu-8g"},
    {"a3-ultragpu-8g", "a3-ultragpu-8g"},
    {"a4-highgpu-8g", "a4-highgpu-8g"},
  };
  (void)state;
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(cases); i++) {
    const char *f = weftx_gcp_family(cases[i][0]);
    assert_non_null(f);
    assert_string_equal(f, cases[i][1]);
    /* Every family has its preset file, and it loads. */
    {
      weftx_preset *p;
      char why[512];
      int rc = weftx_preset_load(f, &p, why, sizeof(why));
      if (rc != 0)
        fprintf(stderr, "%s\n", why);
      assert_int_equal(rc, 0);
      weftx_preset_free(p);
    }
  }
  assert_null(weftx_gcp_family("e2-standard-4"));
  assert_null(weftx_gcp_family("a3-highgpu-3g"));
  assert_null(weftx_gcp_family(""));
  assert_null(weftx_gcp_family(NULL));
  assert_int_equal(weftx_gcp_family_host_nics("a3-ultragpu-8g"), 2);
  assert_int_equal(weftx_gcp_family_host_nics("a3-highgpu-8g"), 1);
}

/* Each family detected from the fake server's machine type. */
static void test_detect_families(void **state)
{
  static const char *const types[] = {"n1-standard-16", "a2-highgpu-8g",  "g2-standard-48",
                                      "a3-highgpu-4g",  "a3-highgpu-8g",  "a3-edgegpu-8g",
                                      "a3-megagpu-8g",  "a3-ultragpu-8g", "a4-highgpu-8g"};
  weftx_gcp_info info;
  char why[512];
  (void)state;
  NEED_CURL();
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(types); i++) {
    control("/control/set?path=instance/machine-type&value=projects/123/machineTypes/%s", types[i]);
    assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
    assert_true(info.on_gce);
    assert_string_equal(info.machine_type, types[i]);
    assert_non_null(info.family);
    assert_string_equal(info.family, weftx_gcp_family(types[i]));
  }
}

static void test_detect_a3(void **state)
{
  static const char *const gpu[] = {"enp6s0", "enp12s0", "enp134s0", "enp140s0"};
  weftx_gcp_info info;
  char why[512];
  (void)state;
  NEED_CURL();
  /* A proxy in the environment is not used for the metadata server. */
  setenv("http_proxy", "http://127.0.0.1:9", 1);
  setenv("HTTP_PROXY", "http://127.0.0.1:9", 1);
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  unsetenv("http_proxy");
  unsetenv("HTTP_PROXY");
  assert_true(info.on_gce);
  assert_string_equal(info.machine_type, "a3-highgpu-8g");
  assert_string_equal(info.family, "a3-highgpu-8g");
  assert_string_equal(info.zone, "us-central1-a");
  assert_string_equal(info.hostname, "vm-a.c.proj.internal");
  assert_string_equal(info.physical_host, "/c1/r7/h3");
  assert_true(info.preemptible);
  assert_int_equal(info.nnics, 5);
  assert_string_equal(info.nics[0].ifname, "enp0s12");
  assert_string_equal(info.nics[0].mac, "42:01:0a:00:00:02");
  assert_string_equal(info.nics[0].ip, "10.0.0.2");
  assert_int_equal(info.nics[0].gpu, 0);
  assert_int_equal(info.nics[0].mtu, 1460);
  for (int i = 0; i < 4; i++) {
    assert_string_equal(info.nics[1 + i].ifname, gpu[i]);
    assert_int_equal(info.nics[1 + i].gpu, 1);
    assert_int_equal(info.nics[1 + i].mtu, 8244);
    assert_int_equal(info.nics[1 + i].gvnic, 1);
  }
  assert_string_equal(info.nics[1].pci, "0000:06:00.0");
  /* The probe's cheap form: machine type and physical_host, two requests. */
  long before = control("/control/count");
  assert_int_equal(weftx_gcp_identify(&info, why, sizeof(why)), 0);
  assert_true(info.on_gce);
  assert_string_equal(info.machine_type, "a3-highgpu-8g");
  assert_string_equal(info.physical_host, "/c1/r7/h3");
  assert_int_equal(info.nnics, 0);
  assert_int_equal(control("/control/count") - before, 2);
}

static void test_not_on_gce(void **state)
{
  weftx_gcp_info info;
  weftx_gcp_md *md;
  weftx_gcp_watch *w;
  char why[512];
  long before;
  (void)state;
  unsetenv("GCE_METADATA_HOST");
  set_dmi("Standard PC (Q35 + ICH9, 2009)");
  before = control("/control/count");
  assert_int_equal(weftx_gcp_dmi_is_gce(), 0);
  assert_int_equal(weftx_gcp_md_open(&md), WEFT_ENOTGCE);
  assert_null(md);
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  assert_false(info.on_gce);
  assert_null(info.family);
  assert_int_equal(weftx_gcp_watch_start(&w, (weftx_gcp_preempt_fn)abort, NULL), WEFT_ENOTGCE);
  assert_int_equal(weftx_gcp_identify(&info, why, sizeof(why)), 0);
  assert_false(info.on_gce);
  assert_string_equal(info.machine_type, "");
  assert_int_equal(control("/control/count"), before);
  /* No DMI file at all: not GCE either. */
  setenv("WEFT_GCP_SYSROOT", tmpdir, 1);
  assert_int_equal(weftx_gcp_dmi_is_gce(), 0);
  /* On GCE by DMI, without override: the real server's name (no request made here). */
  setenv("WEFT_GCP_SYSROOT", sysroot, 1);
  set_dmi("Google Compute Engine");
  assert_int_equal(weftx_gcp_dmi_is_gce(), 1);
#ifdef WEFT_HAVE_CURL
  assert_int_equal(weftx_gcp_md_open(&md), 0);
  assert_string_equal(weftx_gcp_md_base(md), "http://metadata.google.internal/computeMetadata/v1/");
  weftx_gcp_md_close(md);
#endif
  assert_int_equal(control("/control/count"), before);
}

static void test_retry_503(void **state)
{
  weftx_gcp_md *md;
  char *v, etag[64];
  double t0;
  (void)state;
  NEED_CURL();
  assert_int_equal(weftx_gcp_md_open(&md), 0);
  control("/control/fail503?n=3");
  t0 = now_s();
  assert_int_equal(weftx_gcp_md_get(md, "instance/zone", &v, etag, sizeof(etag)), 0);
  assert_string_equal(v, "projects/123/zones/us-central1-a");
  assert_true(etag[0] != '\0');
  free(v);
  assert_true(now_s() - t0 >= 0.6); /* 100 + 200 + 400 ms of backoff */
  /* More failures than tries: an error, in bounded time. */
  control("/control/fail503?n=50");
  t0 = now_s();
  assert_int_equal(weftx_gcp_md_get(md, "instance/zone", &v, NULL, 0), WEFT_EHTTP);
  assert_null(v);
  assert_true(now_s() - t0 < 5);
  control("/control/fail503?n=0");
  assert_int_equal(weftx_gcp_md_get(md, "instance/no-such-key", &v, NULL, 0), WEFT_ENOENT);
  weftx_gcp_md_close(md);
}

static void *flip_later(void *arg)
{
  const char *path = arg;
  usleep(300000);
  control("%s", path);
  return NULL;
}

static void test_wait_for_change(void **state)
{
  weftx_gcp_md *md;
  char *v, etag[64], etag2[64];
  pthread_t th;
  double t0;
  (void)state;
  NEED_CURL();
  assert_int_equal(weftx_gcp_md_open(&md), 0);
  assert_int_equal(weftx_gcp_md_get(md, "instance/preempted", &v, etag, sizeof(etag)), 0);
  assert_string_equal(v, "FALSE");
  free(v);
  /* A stale ETag returns at once with the current value. */
  t0 = now_s();
  assert_int_equal(weftx_gcp_md_wait(md, "instance/preempted", "0", 30, &v, etag2, sizeof(etag2)),
                   0);
  assert_string_equal(v, "FALSE");
  assert_string_equal(etag2, etag);
  assert_true(now_s() - t0 < 5);
  free(v);
  /* The current ETag waits for the change. */
  assert_int_equal(
    pthread_create(&th, NULL, flip_later, "/control/set?path=instance/preempted&value=TRUE"), 0);
  t0 = now_s();
  assert_int_equal(weftx_gcp_md_wait(md, "instance/preempted", etag, 30, &v, etag2, sizeof(etag2)),
                   0);
  pthread_join(th, NULL);
  assert_string_equal(v, "TRUE");
  assert_string_not_equal(etag2, etag);
  assert_true(now_s() - t0 >= 0.25 && now_s() - t0 < 10);
  free(v);
  /* No change: the server answers with the same value after timeout_sec. */
  t0 = now_s();
  assert_int_equal(weftx_gcp_md_wait(md, "instance/preempted", etag2, 1, &v, etag, sizeof(etag)),
                   0);
  assert_string_equal(v, "TRUE");
  assert_string_equal(etag, etag2);
  assert_true(now_s() - t0 >= 0.9);
  free(v);
  weftx_gcp_md_close(md);
}

struct notice {
  pthread_mutex_t lock;
  int calls;
  char what[64], value[64];
};

static void on_notice(void *arg, const char *what, const char *value)
{
  struct notice *n = arg;
  pthread_mutex_lock(&n->lock);
  n->calls++;
  snprintf(n->what, sizeof(n->what), "%s", what);
  snprintf(n->value, sizeof(n->value), "%s", value);
  pthread_mutex_unlock(&n->lock);
}

static int wait_calls(struct notice *n, double limit)
{
  double t0 = now_s();
  int c = 0;
  while (now_s() - t0 < limit) {
    pthread_mutex_lock(&n->lock);
    c = n->calls;
    pthread_mutex_unlock(&n->lock);
    if (c)
      break;
    usleep(10000);
  }
  return c;
}

static void watch_case(const char *flip, const char *what, const char *value)
{
  struct notice n = {PTHREAD_MUTEX_INITIALIZER, 0, "", ""};
  weftx_gcp_watch *w;
  double t0;

  assert_int_equal(weftx_gcp_watch_start(&w, on_notice, &n), 0);
  usleep(300000); /* let it read the values and start waiting */
  assert_int_equal(n.calls, 0);
  t0 = now_s();
  control("%s", flip);
  assert_int_equal(wait_calls(&n, 10), 1);
  assert_true(now_s() - t0 < 5);
  assert_string_equal(n.what, what);
  assert_string_equal(n.value, value);
  t0 = now_s();
  weftx_gcp_watch_stop(w);
  assert_true(now_s() - t0 < 2);
  assert_int_equal(n.calls, 1);
}

static void test_watch_preempted(void **state)
{
  (void)state;
  NEED_CURL();
  watch_case("/control/set?path=instance/preempted&value=TRUE", "preempted", "TRUE");
}

static void test_watch_maintenance(void **state)
{
  (void)state;
  NEED_CURL();
  /* A live migration is no notice; a terminating maintenance is. */
  watch_case("/control/set?path=instance/maintenance-event&value=TERMINATE_ON_HOST_MAINTENANCE",
             "maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE");
}

static void test_watch_already_preempted_and_stop(void **state)
{
  struct notice n = {PTHREAD_MUTEX_INITIALIZER, 0, "", ""};
  weftx_gcp_watch *w;
  double t0;
  (void)state;
  NEED_CURL();
  /* Nothing happens: stop is prompt although both requests are held by the server. */
  control("/control/delete?path=instance/maintenance-event");
  assert_int_equal(weftx_gcp_watch_start(&w, on_notice, &n), 0);
  usleep(400000);
  t0 = now_s();
  weftx_gcp_watch_stop(w);
  assert_true(now_s() - t0 < 2);
  assert_int_equal(n.calls, 0);
  /* Already TRUE at start: the first read is the notice. */
  control("/control/set?path=instance/preempted&value=TRUE");
  assert_int_equal(weftx_gcp_watch_start(&w, on_notice, &n), 0);
  assert_int_equal(wait_calls(&n, 5), 1);
  weftx_gcp_watch_stop(w);
}

static void test_preset_a3_high(void **state)
{
  const char *user[] = {"NCCL_ALGO=Tree", "NCCL_DEBUG", NULL};
  const weftx_preset_var *v, *x;
  weftx_gcp_info info;
  weftx_preset *p;
  char why[512];
  int n;
  (void)state;
  NEED_CURL();
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  /* auto: only for multi-VM jobs. */
  assert_int_equal(weftx_preset_select("auto", &info, 0, &p, why, sizeof(why)), 0);
  assert_null(p);
  assert_int_equal(weftx_preset_select("none", &info, 1, &p, why, sizeof(why)), 0);
  assert_null(p);
  assert_int_equal(weftx_preset_select("auto", &info, 1, &p, why, sizeof(why)), 0);
  assert_non_null(p);
  assert_string_equal(weftx_preset_name(p), "a3-highgpu-8g");
  assert_string_equal(weftx_preset_reserved_cpus(p), "8-35,112-139,60-87,164-191");
  assert_int_equal(weftx_preset_mtu(p), 8244);
  assert_int_equal(weftx_preset_resolve(p, &info, user, &v, &n, why, sizeof(why)), 0);
  assert_true(n > 15);
  assert_null(var(v, n, "NCCL_ALGO")); /* the user's value wins */
  x = var(v, n, "NCCL_NET");
  assert_non_null(x);
  assert_string_equal(x->value, "GPUDirectTCPX_v7");
  assert_string_equal(x->source, "preset a3-highgpu-8g");
  assert_string_equal(var(v, n, "NCCL_SOCKET_IFNAME")->value, "enp0s12");
  assert_string_equal(var(v, n, "NCCL_GPUDIRECTTCPX_CTRL_DEV")->value, "enp0s12");
  assert_string_equal(var(v, n, "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME")->value,
                      "enp6s0,enp12s0,enp134s0,enp140s0");
  assert_string_equal(var(v, n, "NCCL_GPUDIRECTTCPX_TX_BINDINGS")->value,
                      "enp6s0:8-21,112-125;enp12s0:8-21,112-125;enp134s0:60-73,164-177;"
                      "enp140s0:60-73,164-177");
  x = var(v, n, "LD_LIBRARY_PATH");
  assert_non_null(x);
  assert_true(x->prepend);
  assert_string_equal(x->value, "/var/lib/tcpx/lib64");
  weftx_preset_free(p);
  /* An explicit family applies to a single-VM job too; edge includes high. */
  assert_int_equal(weftx_preset_select("a3-edgegpu-8g", &info, 0, &p, why, sizeof(why)), 0);
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), 0);
  assert_string_equal(var(v, n, "NCCL_NET")->source, "preset a3-edgegpu-8g");
  assert_string_equal(weftx_preset_reserved_cpus(p), "8-35,112-139,60-87,164-191");
  weftx_preset_free(p);
  assert_int_equal(weftx_preset_select("no-such-family", &info, 1, &p, why, sizeof(why)),
                   WEFT_ENAME);
  assert_non_null(strstr(why, "no-such-family"));
  assert_int_equal(weftx_preset_select("../etc", &info, 1, &p, why, sizeof(why)), WEFT_ENAME);
}

static void test_preset_apply_env(void **state)
{
  weftx_gcp_info info;
  weftx_preset *p;
  weftx_env *env;
  weftx_env_origin o;
  char why[512], desc[256];
  int i;
  (void)state;
  NEED_CURL();
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  assert_int_equal(weftx_preset_select("auto", &info, 1, &p, why, sizeof(why)), 0);
  assert_int_equal(weftx_env_create(&env), 0);
  assert_int_equal(weftx_env_set(env, "NCCL_PROTO", "LL", WEFTX_ENV_XARG, NULL), 0);
  assert_int_equal(weftx_env_set(env, "LD_LIBRARY_PATH", "/opt/lib", WEFTX_ENV_USER, NULL), 0);
  assert_int_equal(weftx_preset_apply(p, &info, env, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(env, "NCCL_PROTO"), "LL");
  assert_int_equal(weftx_env_origin_of(env, "NCCL_PROTO", &o), 0);
  assert_int_equal(o, WEFTX_ENV_XARG);
  assert_string_equal(weftx_env_get(env, "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"),
                      "enp6s0,enp12s0,enp134s0,enp140s0");
  assert_string_equal(weftx_env_get(env, "LD_LIBRARY_PATH"), "/var/lib/tcpx/lib64:/opt/lib");
  for (i = 0; i < weftx_env_count(env); i++) {
    const char *k;
    weftx_env_entry(env, i, &k, NULL, NULL, NULL);
    if (!strcmp(k, "NCCL_NET"))
      break;
  }
  assert_int_equal(weftx_env_describe(env, i, desc, sizeof(desc)), 0);
  assert_string_equal(desc, "preset a3-highgpu-8g");
  /* Applying twice changes nothing (LD_LIBRARY_PATH not prepended again). */
  assert_int_equal(weftx_preset_apply(p, &info, env, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(env, "LD_LIBRARY_PATH"), "/var/lib/tcpx/lib64:/opt/lib");
  /* -x LD_LIBRARY_PATH=... is the user's final word. */
  assert_int_equal(weftx_env_set(env, "LD_LIBRARY_PATH", "/mine", WEFTX_ENV_XARG, NULL), 0);
  assert_int_equal(weftx_preset_apply(p, &info, env, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(env, "LD_LIBRARY_PATH"), "/mine");
  weftx_env_destroy(env);
  weftx_preset_free(p);
}

static void test_preset_off_gce(void **state)
{
  const weftx_preset_var *v;
  weftx_gcp_info info;
  weftx_preset *p;
  char why[512];
  int n;
  (void)state;
  memset(&info, 0, sizeof(info));
  assert_int_equal(weftx_preset_select("auto", &info, 1, &p, why, sizeof(why)), 0);
  assert_null(p);
  assert_int_equal(weftx_preset_load("g2", &p, why, sizeof(why)), 0);
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), WEFT_ENOENT);
  assert_non_null(strstr(why, "NCCL_SOCKET_IFNAME"));
  assert_non_null(strstr(why, "not a GCE VM"));
  /* ... unless the user set it. */
  {
    const char *user[] = {"NCCL_SOCKET_IFNAME=eth0", NULL};
    assert_int_equal(weftx_preset_resolve(p, &info, user, &v, &n, why, sizeof(why)), 0);
    assert_int_equal(n, 0);
  }
  weftx_preset_free(p);

  /* The preview for --dry-run keeps every variable, the unfilled ones as the file has them. */
  int nres = 0, unres = 0;
  assert_int_equal(weftx_preset_load("a3-highgpu-8g", &p, why, sizeof(why)), 0);
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), WEFT_ENOENT);
  assert_int_equal(weftx_preset_preview(p, &info, NULL, &v, &n, why, sizeof(why)), 0);
  assert_true(n >= 16);
  for (int i = 0; i < n; i++) {
    if (!v[i].unresolved) {
      assert_null(strchr(v[i].value, '@'));
      nres++;
      continue;
    }
    unres++;
    assert_non_null(strchr(v[i].value, '@'));
    assert_string_equal(v[i].unresolved, "this is not a GCE VM");
    if (!strcmp(v[i].key, "NCCL_SOCKET_IFNAME"))
      assert_string_equal(v[i].value, "@host_nic@");
  }
  assert_true(unres >= 3 && nres >= 10);
  weftx_preset_free(p);
}

static void test_preset_parse_errors(void **state)
{
  static const char *const bad[] = {"lowercase=1\n",  "NCCL_X=@nic@\n",
                                    "mtu lots\n",     "reserve-cpus all\n",
                                    "frobnicate 1\n", "prepend-path LD_LIBRARY_PATH relative\n",
                                    "include ../x\n", "include loop\n"};
  char path[512], why[512], datadir[512];
  weftx_preset *p;
  (void)state;
  snprintf(datadir, sizeof(datadir), "%s", weftx_datadir());
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(bad); i++) {
    snprintf(path, sizeof(path), "%s/loop.preset", tmpdir);
    write_file(path, "# comment\n\nNCCL_OK=1\n%s", bad[i]);
    if (!strcmp(bad[i], "include loop\n")) {
      /* include reads from the data directory: point it at tmpdir for this case. */
      char presets[512];
      snprintf(presets, sizeof(presets), "%s/presets/loop.preset", tmpdir);
      write_file(presets, "include loop\n");
      setenv("WEFT_DATADIR", tmpdir, 1);
    }
    assert_int_equal(weftx_preset_load(path, &p, why, sizeof(why)), WEFT_EPARSE);
    assert_null(p);
    if (strstr(bad[i], "include loop"))
      assert_non_null(strstr(why, "nest"));
    else
      assert_non_null(strstr(why, ":4:"));
  }
  setenv("WEFT_DATADIR", datadir, 1);
}

static void test_preset_mega_profile(void **state)
{
  const weftx_preset_var *v, *x;
  weftx_gcp_info info;
  weftx_preset *p;
  char why[512], path[512];
  int n;
  (void)state;
  NEED_CURL();
  control("/control/set?path=instance/machine-type&value=a3-megagpu-8g");
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  assert_int_equal(weftx_preset_select("auto", &info, 1, &p, why, sizeof(why)), 0);
  assert_string_equal(weftx_preset_name(p), "a3-megagpu-8g");
  /* Without Google's profile: our copy. */
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), 0);
  assert_string_equal(var(v, n, "NCCL_FASTRAK_IFNAME")->value, "enp6s0,enp12s0,enp134s0,enp140s0");
  assert_string_equal(var(v, n, "NCCL_BUFFSIZE")->value, "8388608");
  assert_null(var(v, n, "NCCL_ALGO"));
  /* With it installed: its values, our interface names. */
  snprintf(path, sizeof(path), "%s/var/lib/tcpxo/lib64/nccl-env-profile.sh", sysroot);
  write_file(path, "echo noise\nexport LD_LIBRARY_PATH=${NCCL_LIB_DIR}:$LD_LIBRARY_PATH\n"
                   "export NCCL_FASTRAK_IFNAME=eth1,eth2\nexport NCCL_BUFFSIZE=4194304\n"
                   "export NCCL_NEW_KNOB=1\n"
                   "export NCCL_TUNER_CONFIG_PATH=${NCCL_LIB_DIR}/tuner.textproto\n");
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), 0);
  assert_string_equal(var(v, n, "NCCL_FASTRAK_IFNAME")->value, "enp6s0,enp12s0,enp134s0,enp140s0");
  assert_string_equal(var(v, n, "NCCL_FASTRAK_IFNAME")->source, "preset a3-megagpu-8g");
  x = var(v, n, "NCCL_BUFFSIZE");
  assert_string_equal(x->value, "4194304");
  assert_string_equal(x->source, "preset a3-megagpu-8g (/var/lib/tcpxo/lib64/nccl-env-profile.sh)");
  assert_string_equal(var(v, n, "NCCL_NEW_KNOB")->value, "1");
  assert_string_equal(var(v, n, "NCCL_TUNER_CONFIG_PATH")->value,
                      "/var/lib/tcpxo/lib64/tuner.textproto");
  x = var(v, n, "LD_LIBRARY_PATH");
  assert_true(x->prepend);
  assert_string_equal(x->value, "/var/lib/tcpxo/lib64");
  assert_null(var(v, n, "NCCL_LIB_DIR"));
  assert_null(var(v, n, "PWD"));
  /* A failing script is an error that names it. */
  write_file(path, "exit 3\n");
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), WEFT_ESYS);
  assert_non_null(strstr(why, "nccl-env-profile.sh"));
  /* Output too large to read whole is refused, not merged cut. */
  write_file(path, "for i in 1 2 3; do export NCCL_BIG$i=$(head -c 100000 /dev/zero | tr '\\0' x); "
                   "done\n");
  assert_int_equal(weftx_preset_resolve(p, &info, NULL, &v, &n, why, sizeof(why)), WEFT_ESYS);
  assert_non_null(strstr(why, "more than 256 KiB"));
  weftx_preset_free(p);
}

static void collect(void *arg, const char *msg)
{
  char *buf = arg;
  size_t len = strlen(buf);
  snprintf(buf + len, 4096 - len, "%s\n", msg);
}

static void test_checks(void **state)
{
  static char msgs[4096];
  weftx_gcp_info info;
  weftx_preset *p;
  char why[512], path[512];
  (void)state;
  NEED_CURL();
  control("/control/delete?path=instance/attributes/physical_host");
  fake_if("enp134s0", "42:01:0a:01:00:02", 1460, "0000:86:00.0", "gve");
  fake_if("enp12s0", "42:01:0a:04:00:02", 8244, "0000:0c:00.0", "virtio-pci");
  assert_int_equal(weftx_gcp_detect(&info, why, sizeof(why)), 0);
  assert_string_equal(info.physical_host, "");
  assert_int_equal(weftx_preset_load("a3-highgpu-8g", &p, why, sizeof(why)), 0);
  msgs[0] = '\0';
  assert_int_equal(weftx_gcp_check(&info, p, 1, collect, msgs), 4);
  assert_non_null(strstr(msgs, "/var/lib/tcpx/lib64/libnccl-net.so is missing"));
  assert_non_null(strstr(msgs, "enp134s0 has MTU 1460, a3-highgpu-8g needs 8244"));
  assert_non_null(strstr(msgs, "enp12s0 is not a gVNIC"));
  assert_non_null(strstr(msgs, "compact placement"));
  /* Installed plugin, single VM: two left. */
  snprintf(path, sizeof(path), "%s/var/lib/tcpx/lib64/libnccl-net.so", sysroot);
  write_file(path, "\n");
  msgs[0] = '\0';
  assert_int_equal(weftx_gcp_check(&info, p, 0, collect, msgs), 2);
  weftx_preset_free(p);
  /* Mixed machine types. */
  {
    const char *hosts[] = {"vm-a", "vm-b", "vm-c"};
    const char *same[] = {"a3-highgpu-8g", NULL, "a3-highgpu-8g"};
    const char *mixed[] = {"a3-highgpu-8g", "a3-highgpu-8g", "a3-megagpu-8g"};
    msgs[0] = '\0';
    assert_int_equal(weftx_gcp_check_mixed(hosts, same, 3, collect, msgs), 0);
    assert_int_equal(weftx_gcp_check_mixed(hosts, mixed, 3, collect, msgs), 1);
    assert_non_null(strstr(msgs, "vm-c is a3-megagpu-8g"));
  }
}

static weftx_topo *load_topo(const char *name)
{
  weftx_topo *t = NULL;
  char why[512];
  if (weftx_topo_load(name, name ? 0 : WEFTX_TOPO_IGNORE_ENV, &t, why, sizeof(why)) != 0)
    fail_msg("%s: %s", name ? name : "live", why);
  return t;
}

/* Google Cloud advice about a topology: only for this machine on GCE (DMI, through
 * WEFT_GCP_SYSROOT) or a file that models a GCE VM, and worded for each. */
static void test_topo_advice(void **state)
{
  static char msgs[4096];
  weftx_topo *live, *t;
  int gvnic = 0;
  (void)state;

  set_dmi("Standard PC (Q35 + ICH9, 2009)");
  t = load_topo("n1-standard-32-4xv100"); /* GCE's DMI product name, a virtio NIC */
  msgs[0] = '\0';
  assert_int_equal(weftx_gcp_topo_check(t, collect, msgs), 1);
  assert_non_null(
    strstr(msgs, "this topology file models a Google Compute Engine VM without gVNIC"));
  assert_non_null(strstr(msgs, "--network-interface=nic-type=GVNIC"));
  assert_null(strstr(msgs, "this is a"));
  weftx_topo_destroy(t);
  t = load_topo("a3-highgpu-8g"); /* GCE with gVNICs: nothing to say */
  assert_int_equal(weftx_gcp_topo_check(t, collect, msgs), 0);
  weftx_topo_destroy(t);
  t = load_topo("flat-vm-2numa"); /* a virtio NIC, but no GCE shape */
  assert_int_equal(weftx_gcp_topo_check(t, collect, msgs), 0);
  live = load_topo(NULL);
  assert_int_equal(weftx_gcp_topo_check(live, collect, msgs), 0); /* not on GCE */
  set_dmi("Google Compute Engine");
  assert_int_equal(weftx_gcp_topo_check(t, collect, msgs), 0); /* a file speaks for itself */
  for (int i = 0; i < weftx_topo_nnics(live); i++)
    gvnic |= weftx_topo_nic(live, i)->gvnic;
  msgs[0] = '\0';
  assert_int_equal(weftx_gcp_topo_check(live, collect, msgs), !gvnic);
  if (!gvnic)
    assert_non_null(strstr(msgs, "this is a Google Compute Engine VM without gVNIC"));
  assert_int_equal(weftx_gcp_topo_check(NULL, collect, msgs), 0);
  weftx_topo_destroy(t);
  weftx_topo_destroy(live);
}

static void test_order_hosts(void **state)
{
  const char *ph[] = {"/c2/r1/h1", "/c1/r9/h2", "/c1/r10/h1", "/c1/r9/h1", "/c1/r9/h2"};
  const char *some[] = {"/c1/r1/h1", "", "/c1/r1/h2"};
  int order[5];
  (void)state;
  assert_int_equal(weftx_gcp_order_hosts(ph, 5, order), 0);
  assert_int_equal(order[0], 2); /* /c1/r10 sorts before /c1/r9 as strings */
  assert_int_equal(order[1], 3);
  assert_int_equal(order[2], 1); /* ties keep input order */
  assert_int_equal(order[3], 4);
  assert_int_equal(order[4], 0);
  assert_int_equal(weftx_gcp_order_hosts(some, 3, order), WEFT_ENOENT);
  assert_int_equal(order[1], 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_family),
    cmocka_unit_test_setup(test_not_on_gce, setup_each),
    cmocka_unit_test_setup(test_preset_off_gce, setup_each),
    cmocka_unit_test_setup(test_preset_parse_errors, setup_each),
    cmocka_unit_test(test_order_hosts),
    cmocka_unit_test_setup(test_detect_families, setup_each),
    cmocka_unit_test_setup(test_detect_a3, setup_each),
    cmocka_unit_test_setup(test_retry_503, setup_each),
    cmocka_unit_test_setup(test_wait_for_change, setup_each),
    cmocka_unit_test_setup(test_watch_preempted, setup_each),
    cmocka_unit_test_setup(test_watch_maintenance, setup_each),
    cmocka_unit_test_setup(test_watch_already_preempted_and_stop, setup_each),
    cmocka_unit_test_setup(test_preset_a3_high, setup_each),
    cmocka_unit_test_setup(test_preset_mega_profile, setup_each),
    cmocka_unit_test_setup(test_preset_apply_env, setup_each),
    cmocka_unit_test_setup(test_checks, setup_each),
    cmocka_unit_test_setup(test_topo_advice, setup_each),
  };
  if (access("/usr/bin/python3", X_OK) != 0) {
    printf("SKIP: /usr/bin/python3 is needed for the fake metadata server\n");
    return 77;
  }
  return cmocka_run_group_tests(tests, start_server, stop_server);
}
