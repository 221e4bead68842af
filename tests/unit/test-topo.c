/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/topo: every shipped topology loads with the right counts
 * and locality, the GCP facts of a3-highgpu-8g, a machine whose GPU PCI order
 * is not its NUMA order, a flat VM without locality, the warnings, and the
 * error cases (missing, empty, truncated, non-XML, no processors).
 */
#include "weft_private.h"
#include <weftx.h> /* weft_private.h brings weftx/util.h alone */

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test-util.h"

static char tmpdir[256];

static const char *topo_path(const char *name)
{
  static char buf[1024];
  assert_int_equal(weft__snprintf(buf, sizeof(buf), "%s/topologies/%s.xml", weftx_datadir(), name),
                   0);
  return buf;
}

static weftx_topo *load_ok(const char *name)
{
  weftx_topo *t = NULL;
  char why[512];
  int rc = weftx_topo_load(topo_path(name), 0, &t, why, sizeof(why));
  if (rc != 0)
    fail_msg("loading %s: %s (%s)", name, weft_strerror(rc), why);
  assert_non_null(t);
  return t;
}

static const char *fmt(hwloc_const_cpuset_t set)
{
  static char buf[256];
  assert_int_equal(weftx_cpuset_format(set, buf, sizeof(buf)), 0);
  return buf;
}

static int has_warning(const weftx_topo *t, const char *needle)
{
  for (int i = 0; i < weftx_topo_nwarnings(t); i++)
    if (strstr(weftx_topo_warning(t, i), needle))
      return 1;
  return 0;
}

static const struct shape {
  const char *name;
  int gpus, nics, numa, packages, cores, pus, locality, warnings;
} shapes[] = {
  {"a3-highgpu-8g", 8, 5, 2, 2, 104, 208, 1, 0},
  {"a3-megagpu-8g", 8, 9, 2, 2, 104, 208, 1, 0},
  {"a3-ultragpu-8g", 8, 10, 2, 2, 112, 224, 1, 0}, /* 8 CX-7 + 2 gVNIC */
  {"a4-highgpu-8g", 8, 10, 2, 2, 112, 224, 1, 0},
  {"a2-highgpu-8g", 8, 1, 2, 2, 48, 96, 1, 4}, /* GPUs 4-7: no NIC on NUMA 1 */
  {"a2-megagpu-16g", 16, 1, 2, 2, 48, 96, 1, 8},
  {"g2-standard-48", 4, 1, 1, 1, 24, 48, 1, 0},
  {"n1-standard-32-4xv100", 4, 1, 1, 1, 16, 32, 1, 0}, /* no gVNIC: lib/gcp's advice, not topo's */
  {"n2-standard-16", 0, 1, 1, 1, 8, 16, 1, 0},
  {"gpu-numa-interleaved", 4, 2, 2, 2, 16, 32, 1, 0},
  {"flat-vm-2numa", 2, 1, 2, 2, 8, 16, 0, 1}, /* no locality */
};

static void check_devices(const weftx_topo *t, const struct shape *s)
{
  for (int i = 0; i < weftx_topo_ngpus(t); i++) {
    const weftx_gpu *g = weftx_topo_gpu(t, i);
    assert_int_equal(g->index, i);
    assert_int_equal(g->vendor_id, 0x10de);
    assert_true(g->model[0] != '\0');
    assert_true(g->uuid[0] != '\0');
    assert_true(g->memory >= (16ULL << 30));
    assert_non_null(g->cpuset);
    assert_false(hwloc_bitmap_iszero(g->cpuset));
    if (s->locality) {
      assert_true(g->numa >= 0);
      assert_true(g->package >= 0);
    } else {
      assert_int_equal(g->numa, -1);
      assert_true(hwloc_bitmap_isequal(g->cpuset, weftx_topo_cpuset(t)));
    }
    if (i > 0) /* PCI bus order */
      assert_true(strcmp(weftx_topo_gpu(t, i - 1)->pci, g->pci) < 0);
  }
  for (int i = 0; i < weftx_topo_nnics(t); i++) {
    const weftx_nic *n = weftx_topo_nic(t, i);
    assert_int_equal(n->index, i);
    assert_true(n->name[0] != '\0');
    assert_ptr_equal(weftx_topo_nic_by_name(t, n->name), n);
    assert_int_equal(n->gvnic, n->vendor_id == 0x1ae0);
    if (s->locality)
      assert_true(n->numa >= 0);
  }
  for (int i = 0; i < weftx_topo_nnuma(t); i++) {
    const weftx_numa *m = weftx_topo_numa(t, i);
    assert_true(m->memory > 0);
    assert_true(m->package >= 0);
    assert_false(hwloc_bitmap_iszero(m->cpuset));
  }
}

/* nvidia-smi's labels: NV18 between every pair of A3/A4 GPUs (NVSwitch), NV12 on A2, none
 * on G2; PCI paths PIX (one switch), NODE (another host bridge, same NUMA node), SYS. */
static void test_links(void **state)
{
  static const struct {
    const char *name;
    int links;
  } nv[] = {
    {"a3-highgpu-8g", 18}, {"a3-megagpu-8g", 18},  {"a3-ultragpu-8g", 18}, {"a4-highgpu-8g", 18},
    {"a2-highgpu-8g", 12}, {"a2-megagpu-16g", 12}, {"g2-standard-48", 0},
  };
  weftx_topo *t;
  (void)state;

  for (size_t i = 0; i < WEFT__ARRAY_SIZE(nv); i++) {
    t = load_ok(nv[i].name);
    for (int a = 0; a < weftx_topo_ngpus(t); a++)
      for (int b = 0; b < weftx_topo_ngpus(t); b++)
        assert_int_equal(weftx_topo_gpu_nvlinks(t, a, b), a == b ? 0 : nv[i].links);
    weftx_topo_destroy(t);
  }
  t = load_ok("a3-ultragpu-8g"); /* NIC 0 gVNIC enp0s19, 1-4 CX-7s of NUMA 0 */
  assert_int_equal(weftx_topo_gpu_gpu_path(t, 0, 1), WEFTX_PATH_PIX);
  assert_int_equal(weftx_topo_gpu_gpu_path(t, 0, 2), WEFTX_PATH_NODE);
  assert_int_equal(weftx_topo_gpu_gpu_path(t, 0, 4), WEFTX_PATH_SYS);
  assert_string_equal(weftx_topo_nic(t, 1)->rdma, "mlx5_0");
  assert_int_equal(weftx_topo_gpu_nic_path(t, 0, 1), WEFTX_PATH_PIX);
  assert_int_equal(weftx_topo_gpu_nic_path(t, 1, 2), WEFTX_PATH_PIX);
  assert_int_equal(weftx_topo_gpu_nic_path(t, 0, 3), WEFTX_PATH_NODE);
  assert_int_equal(weftx_topo_gpu_nic_path(t, 7, 1), WEFTX_PATH_SYS);
  assert_int_equal(weftx_topo_nic_nic_path(t, 1, 2), WEFTX_PATH_PIX);
  assert_string_equal(weftx_path_label(WEFTX_PATH_PHB), "PHB");
  weftx_topo_destroy(t);
  t = load_ok("a3-highgpu-8g"); /* two switches below one host bridge per NUMA node */
  assert_int_equal(weftx_topo_gpu_gpu_path(t, 0, 1), WEFTX_PATH_PIX);
  assert_int_equal(weftx_topo_gpu_gpu_path(t, 0, 2), WEFTX_PATH_PHB);
  assert_int_equal(weftx_topo_gpu_nic_path(t, 0, 1), WEFTX_PATH_PIX); /* enp6s0 */
  assert_int_equal(weftx_topo_gpu_nvlinks(t, 0, 8), 0);               /* no such GPU */
  weftx_topo_destroy(t);
}

static void test_shipped(void **state)
{
  DIR *d;
  struct dirent *e;
  char dir[1024];
  int seen = 0;
  (void)state;

  for (size_t i = 0; i < WEFT__ARRAY_SIZE(shapes); i++) {
    const struct shape *s = &shapes[i];
    weftx_topo *t = load_ok(s->name);
    assert_int_equal(weftx_topo_ngpus(t), s->gpus);
    assert_int_equal(weftx_topo_nnics(t), s->nics);
    assert_int_equal(weftx_topo_nnuma(t), s->numa);
    assert_int_equal(weftx_topo_npackages(t), s->packages);
    assert_int_equal(weftx_topo_ncores(t), s->cores);
    assert_int_equal(weftx_topo_npus(t), s->pus);
    assert_int_equal(weftx_topo_has_locality(t), s->locality);
    if (weftx_topo_nwarnings(t) != s->warnings) {
      for (int w = 0; w < weftx_topo_nwarnings(t); w++)
        print_message("%s: %s\n", s->name, weftx_topo_warning(t, w));
      fail_msg("%s: %d warnings, expected %d", s->name, weftx_topo_nwarnings(t), s->warnings);
    }
    assert_int_equal(weftx_topo_is_live(t), 0);
    assert_string_equal(weftx_topo_source(t), topo_path(s->name));
    assert_non_null(weftx_topo_hwloc(t));
    check_devices(t, s);
    weftx_topo_destroy(t);
  }
  /* Every file shipped is in the table above. */
  assert_int_equal(weft__snprintf(dir, sizeof(dir), "%s/topologies", weftx_datadir()), 0);
  d = opendir(dir);
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    int found = 0;
    if (len < 5 || strcmp(e->d_name + len - 4, ".xml") != 0)
      continue;
    for (size_t i = 0; i < WEFT__ARRAY_SIZE(shapes); i++)
      found |= strlen(shapes[i].name) == len - 4 && !strncmp(shapes[i].name, e->d_name, len - 4);
    if (!found)
      fail_msg("%s/%s is not checked by test-topo", dir, e->d_name);
    seen++;
  }
  closedir(d);
  assert_int_equal(seen, (int)WEFT__ARRAY_SIZE(shapes));
}

static void test_a3_highgpu(void **state)
{
  weftx_topo *t = load_ok("a3-highgpu-8g");
  static const char *const bus[8] = {"04", "05", "0a", "0b", "84", "85", "8a", "8b"};
  static const char *const nic_of[8] = {"enp6s0",   "enp6s0",   "enp12s0",  "enp12s0",
                                        "enp134s0", "enp134s0", "enp140s0", "enp140s0"};
  const weftx_gpu *g;
  const weftx_nic *host;
  (void)state;

  assert_string_equal(weftx_topo_hostname(t), "a3-highgpu-8g");
  g = weftx_topo_gpu(t, 0);
  assert_string_equal(g->pci, "0000:04:00.0");
  assert_string_equal(g->model, "NVIDIA H100 80GB HBM3");
  assert_int_equal(g->memory, 80ULL << 30);
  assert_int_equal(g->numa, 0);
  assert_int_equal(g->package, 0);
  assert_string_equal(fmt(g->cpuset), "0-51,104-155");
  assert_string_equal(fmt(weftx_topo_gpu(t, 7)->cpuset), "52-103,156-207");
  assert_string_equal(fmt(weftx_topo_numa(t, 1)->cpuset), "52-103,156-207");
  assert_string_equal(fmt(weftx_topo_cpuset(t)), "0-207");
  for (int i = 0; i < 8; i++) {
    const weftx_nic *n = weftx_topo_nic_by_name(t, nic_of[i]);
    char pci[16];
    g = weftx_topo_gpu(t, i);
    assert_int_equal(weft__snprintf(pci, sizeof(pci), "0000:%s:00.0", bus[i]), 0);
    assert_string_equal(g->pci, pci);
    assert_int_equal(g->numa, i < 4 ? 0 : 1);
    assert_non_null(n);
    assert_true(n->gvnic);
    assert_int_equal(n->speed_mbps, 200000);
    assert_int_equal(n->pci_switch, g->pci_switch);
    assert_int_equal(weftx_topo_gpu_nic_near(t, i, n->index), WEFTX_NEAR_SWITCH);
    assert_int_equal(weftx_topo_gpu_gpu_near(t, i, i ^ 1), WEFTX_NEAR_SWITCH);
    assert_int_equal(weftx_topo_gpu_gpu_near(t, i, i ^ 2), WEFTX_NEAR_NUMA);
    assert_int_equal(weftx_topo_gpu_gpu_near(t, i, i ^ 4), WEFTX_NEAR_SYSTEM);
  }
  /* The host NIC sits on its own bus, below no switch, on NUMA node 0. */
  host = weftx_topo_nic_by_name(t, "enp0s12");
  assert_non_null(host);
  assert_string_equal(host->pci, "0000:00:0c.0");
  assert_int_equal(host->pci_switch, -1);
  assert_int_equal(host->numa, 0);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 0, host->index), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 4, host->index), WEFTX_NEAR_SYSTEM);
  assert_null(weftx_topo_nic_by_name(t, "eth0"));
  assert_null(weftx_topo_gpu(t, 8));
  assert_null(weftx_topo_nic(t, -1));
  assert_int_equal(weftx_topo_gpu_nic_near(t, 99, 0), WEFTX_NEAR_SYSTEM);
  weftx_topo_destroy(t);
}

static void test_a3_megagpu(void **state)
{
  weftx_topo *t = load_ok("a3-megagpu-8g");
  (void)state;
  /* One GPU NIC per GPU, two per PCI switch. */
  for (int i = 0; i < 8; i++) {
    int nsw = 0;
    for (int n = 0; n < weftx_topo_nnics(t); n++)
      nsw += weftx_topo_gpu_nic_near(t, i, n) == WEFTX_NEAR_SWITCH;
    assert_int_equal(nsw, 2);
  }
  assert_non_null(weftx_topo_nic_by_name(t, "enp142s0"));
  /* NIC to NIC: enp6s0 and enp7s0 share a switch, enp13s0 only the NUMA node,
   * enp134s0 is on the other package; the host NIC has no switch. */
  assert_int_equal(weftx_topo_nic_nic_near(t, 1, 2), WEFTX_NEAR_SWITCH);
  assert_int_equal(weftx_topo_nic_nic_near(t, 2, 1), WEFTX_NEAR_SWITCH);
  assert_int_equal(weftx_topo_nic_nic_near(t, 1, 3), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_nic_nic_near(t, 1, 5), WEFTX_NEAR_SYSTEM);
  assert_int_equal(weftx_topo_nic_nic_near(t, 0, 1), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_nic_nic_near(t, 0, 99), WEFTX_NEAR_SYSTEM);
  weftx_topo_destroy(t);
}

static void test_numa_interleaved(void **state)
{
  weftx_topo *t = load_ok("gpu-numa-interleaved");
  static const int numa[4] = {1, 0, 1, 0};
  const weftx_nic *a, *b;
  (void)state;

  for (int i = 0; i < 4; i++) {
    assert_int_equal(weftx_topo_gpu(t, i)->numa, numa[i]);
    assert_int_equal(weftx_topo_gpu(t, i)->package, numa[i]);
  }
  assert_string_equal(weftx_topo_gpu(t, 0)->pci, "0000:04:00.0");
  assert_string_equal(weftx_topo_gpu(t, 1)->pci, "0000:14:00.0");
  assert_string_equal(fmt(weftx_topo_gpu(t, 0)->cpuset), "8-15,24-31");
  assert_string_equal(fmt(weftx_topo_gpu(t, 1)->cpuset), "0-7,16-23");
  a = weftx_topo_nic_by_name(t, "enp5s0");
  b = weftx_topo_nic_by_name(t, "enp21s0");
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 0, a->index), WEFTX_NEAR_SWITCH);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 2, a->index), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 1, b->index), WEFTX_NEAR_SWITCH);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 3, b->index), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 0, b->index), WEFTX_NEAR_SYSTEM);
  assert_int_equal(weftx_topo_gpu_gpu_near(t, 0, 2), WEFTX_NEAR_NUMA);
  assert_int_equal(weftx_topo_gpu_gpu_near(t, 0, 1), WEFTX_NEAR_SYSTEM);
  weftx_topo_destroy(t);
}

static void test_flat_vm(void **state)
{
  weftx_topo *t = load_ok("flat-vm-2numa");
  (void)state;
  assert_int_equal(weftx_topo_has_locality(t), 0);
  assert_true(has_warning(t, "no NUMA locality"));
  for (int i = 0; i < weftx_topo_ngpus(t); i++) {
    const weftx_gpu *g = weftx_topo_gpu(t, i);
    assert_int_equal(g->numa, -1);
    assert_int_equal(g->package, -1);
    assert_string_equal(fmt(g->cpuset), "0-15");
    assert_int_equal(g->pci_switch, -1);
  }
  assert_int_equal(weftx_topo_nic(t, 0)->numa, -1);
  assert_int_equal(weftx_topo_gpu_nic_near(t, 0, 0), WEFTX_NEAR_SYSTEM);
  assert_int_equal(weftx_topo_gpu_gpu_near(t, 0, 1), WEFTX_NEAR_SYSTEM);
  weftx_topo_destroy(t);
}

static void test_warnings(void **state)
{
  weftx_topo *t = load_ok("a2-highgpu-8g");
  (void)state;
  assert_false(has_warning(t, "GPU 3 "));
  assert_true(has_warning(t, "GPU 4 ("));
  assert_true(has_warning(t, "GPU 7 ("));
  assert_true(has_warning(t, "has no NIC on its PCI switch or NUMA node"));
  assert_false(has_warning(t, "gVNIC"));
  weftx_topo_destroy(t);
  /* Google Cloud advice is not the topology's (weftx_gcp_topo_check gives it where it applies). */
  t = load_ok("n1-standard-32-4xv100");
  assert_false(has_warning(t, "gVNIC"));
  assert_false(weftx_topo_nic(t, 0)->gvnic);
  weftx_topo_destroy(t);
}

/* Write \p len bytes of \p data to a temporary file; returns its path (static). */
static const char *write_tmp(const char *name, const char *data, size_t len)
{
  static char path[512];
  FILE *f;
  assert_int_equal(weft__snprintf(path, sizeof(path), "%s/%s", tmpdir, name), 0);
  f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
  return path;
}

static void expect_error(const char *path, int code, const char *needle)
{
  weftx_topo *t = (weftx_topo *)1;
  char why[512] = "";
  int rc = weftx_topo_load(path, 0, &t, why, sizeof(why));
  if (rc != code)
    fail_msg("%s: got %s (%s), expected %s", path, weft_err_name(rc), why, weft_err_name(code));
  assert_null(t);
  assert_non_null(strstr(why, path));
  if (needle && !strstr(why, needle))
    fail_msg("%s: reason '%s' does not say '%s'", path, why, needle);
  assert_null(strchr(why, '\n'));
}

static const char one_pu_xml[] =
  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
  "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
  "<topology version=\"2.0\">\n"
  "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
  "allowed_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
  "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
  "    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000001\" "
  "complete_cpuset=\"0x00000001\" "
  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\" "
  "local_memory=\"1048576\"/>\n"
  "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"3\"/>\n"
  "  </object>\n"
  "</topology>\n";

static const char no_pu_xml[] =
  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
  "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
  "<topology version=\"2.0\">\n"
  "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x0\" complete_cpuset=\"0x0\" "
  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"1\">\n"
  "    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x0\" complete_cpuset=\"0x0\" "
  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\" "
  "local_memory=\"1048576\"/>\n"
  "  </object>\n"
  "</topology>\n";

static void test_errors(void **state)
{
  size_t len;
  char *a3 = slurp(topo_path("a3-highgpu-8g"), &len);
  char missing[512];
  weftx_topo *t = NULL;
  char why[512];
  (void)state;

  assert_int_equal(weft__snprintf(missing, sizeof(missing), "%s/no-such.xml", tmpdir), 0);
  expect_error(missing, WEFT_ENOENT, "cannot open");
  expect_error(missing, WEFT_ENOENT, "lstopo --of xml");
  expect_error(tmpdir, WEFT_ENOENT, "directory");
  expect_error(write_tmp("empty.xml", "", 0), WEFT_EPARSE, "empty");
  expect_error(write_tmp("blank.xml", " \n\n", 3), WEFT_EPARSE, "empty");
  expect_error(write_tmp("text.xml", "hello world\n", 12), WEFT_EPARSE, "not an hwloc XML");
  expect_error(write_tmp("other.xml", "<?xml version=\"1.0\"?><html></html>", 35), WEFT_EPARSE,
               NULL);
  expect_error(write_tmp("half.xml", a3, len / 2), WEFT_EPARSE, "not a valid hwloc XML");
  expect_error(write_tmp("head.xml", a3, 120), WEFT_EPARSE, NULL);
  expect_error(write_tmp("nul.xml", "<topology>\0</topology>", 22), WEFT_EPARSE, "NUL");
  expect_error(write_tmp("nopu.xml", no_pu_xml, sizeof(no_pu_xml) - 1), WEFT_EPARSE, NULL);
  free(a3);
  /* What hwloc 2.9 itself would crash on: caught before hwloc sees the file. */
  {
    char *x = strdup(one_pu_xml);
    char *at;
    assert_non_null(x);
    at = strstr(strstr(x, "type=\"PU\""), "complete_cpuset");
    at[3] = 'X'; /* "comXlete_cpuset": the PU has no complete_cpuset */
    expect_error(write_tmp("nocomplete.xml", x, strlen(x)), WEFT_EPARSE,
                 ":6: PU object has no complete_cpuset");
    free(x);
    x = strdup(one_pu_xml);
    assert_non_null(x);
    at = strstr(strstr(x, "type=\"PU\""), "cpuset=\"0x");
    at[8] = ','; /* cpuset=",x00000001": hwloc_bitmap_sscanf asserts */
    expect_error(write_tmp("badset.xml", x, strlen(x)), WEFT_EPARSE,
                 ":6: attribute cpuset is not an hwloc bitmap");
    free(x);
    x = strdup(one_pu_xml);
    assert_non_null(x);
    at = strstr(x, "\"Machine\"");
    memcpy(at, "\"Core\"   ", 9);
    expect_error(write_tmp("noroot.xml", x, strlen(x)), WEFT_EPARSE,
                 ":4: the first object is not the Machine");
    free(x);
  }

  /* No GPUs and no I/O at all is fine. */
  assert_int_equal(weftx_topo_load(write_tmp("onepu.xml", one_pu_xml, sizeof(one_pu_xml) - 1), 0,
                                   &t, why, sizeof(why)),
                   0);
  assert_int_equal(weftx_topo_ngpus(t), 0);
  assert_int_equal(weftx_topo_nnics(t), 0);
  assert_int_equal(weftx_topo_npus(t), 1);
  assert_int_equal(weftx_topo_ncores(t), 1); /* no Core objects: PUs count as cores */
  assert_int_equal(weftx_topo_npackages(t), 0);
  assert_int_equal(weftx_topo_nwarnings(t), 0);
  assert_int_equal(weftx_topo_has_locality(t), 1);
  assert_string_equal(weftx_topo_hostname(t), "");
  weftx_topo_destroy(t);
  weftx_topo_destroy(NULL);
  assert_int_equal(weftx_topo_load("x", 0, NULL, why, sizeof(why)), WEFT_EINVAL);
}

static void test_env_and_live(void **state)
{
  weftx_topo *t = NULL;
  char why[512];
  const char *path = topo_path("n2-standard-16");
  (void)state;

  assert_int_equal(setenv("WEFT_TOPOLOGY", path, 1), 0);
  assert_int_equal(weftx_topo_load(NULL, 0, &t, why, sizeof(why)), 0);
  assert_string_equal(weftx_topo_source(t), path);
  assert_int_equal(weftx_topo_npus(t), 16);
  weftx_topo_destroy(t);
  assert_int_equal(setenv("WEFT_TOPOLOGY", "/nonexistent/t.xml", 1), 0);
  assert_int_equal(weftx_topo_load(NULL, 0, &t, why, sizeof(why)), WEFT_ENOENT);
  assert_non_null(strstr(why, "WEFT_TOPOLOGY: cannot open /nonexistent/t.xml"));
  assert_int_equal(weftx_topo_load(NULL, WEFTX_TOPO_IGNORE_ENV, &t, why, sizeof(why)), 0);
  assert_string_equal(weftx_topo_source(t), "live");
  assert_int_equal(weftx_topo_is_live(t), 1);
  assert_true(weftx_topo_npus(t) >= 1);
  assert_true(weftx_topo_nnuma(t) >= 1);
  for (int i = 0; i < weftx_topo_nwarnings(t); i++)
    print_message("live: %s\n", weftx_topo_warning(t, i));
  weftx_topo_destroy(t);
  assert_int_equal(unsetenv("WEFT_TOPOLOGY"), 0);
}

/* Topologies by name: with or without .xml, from any directory, through WEFT_TOPOLOGY
 * too; a file here wins over a name; a path is never looked up; an unknown name says
 * where it looked, the nearest name and the names there. */
static void test_names(void **state)
{
  weftx_topo *t = NULL;
  weftx_topo_entry *v = NULL;
  char why[1024], path[4096], dir[4096], cwd[4096], data[4096];
  int n = 0, seen = 0;
  (void)state;

  assert_int_equal(weft__snprintf(data, sizeof(data), "%s", weftx_datadir()), 0);
  assert_int_equal(weftx_topo_dir(dir, sizeof(dir)), 0);
  assert_non_null(getcwd(cwd, sizeof(cwd)));
  assert_int_equal(chdir(tmpdir), 0);
  assert_int_equal(weftx_topo_find("a3-highgpu-8g", path, sizeof(path), why, sizeof(why)), 0);
  assert_string_equal(path, topo_path("a3-highgpu-8g"));
  assert_int_equal(weftx_topo_find("a3-highgpu-8g.xml", path, sizeof(path), why, sizeof(why)), 0);
  assert_string_equal(path, topo_path("a3-highgpu-8g"));
  assert_int_equal(weftx_topo_load("n2-standard-16", 0, &t, why, sizeof(why)), 0);
  assert_string_equal(weftx_topo_source(t), topo_path("n2-standard-16"));
  assert_int_equal(weftx_topo_npus(t), 16);
  weftx_topo_destroy(t);
  assert_int_equal(setenv("WEFT_TOPOLOGY", "g2-standard-48.xml", 1), 0);
  assert_int_equal(weftx_topo_load(NULL, 0, &t, why, sizeof(why)), 0);
  assert_int_equal(weftx_topo_ngpus(t), 4);
  weftx_topo_destroy(t);

  /* Unknown names, through WEFT_TOPOLOGY and directly. */
  assert_int_equal(setenv("WEFT_TOPOLOGY", "a3-higpu-8g", 1), 0);
  assert_int_equal(weftx_topo_load(NULL, 0, &t, why, sizeof(why)), WEFT_ENOENT);
  assert_null(t);
  assert_non_null(strstr(why, "WEFT_TOPOLOGY: topology 'a3-higpu-8g' not found"));
  assert_non_null(strstr(why, "did you mean 'a3-highgpu-8g'?"));
  assert_non_null(strstr(why, dir));
  assert_non_null(strstr(why, "a3-higpu-8g.xml"));
  assert_non_null(strstr(why, "n2-standard-16")); /* the names there */
  assert_null(strchr(why, '\n'));
  assert_int_equal(unsetenv("WEFT_TOPOLOGY"), 0);
  assert_int_equal(weftx_topo_find("zzzzzzzzzzzz.xml", path, sizeof(path), why, sizeof(why)),
                   WEFT_ENOENT);
  assert_null(strstr(why, "did you mean"));
  assert_non_null(strstr(why, "not a file in the current directory, nor zzzzzzzzzzzz.xml in"));
  /* A message too long for the buffer is cut with "...", never overrun. */
  assert_int_equal(weftx_topo_find("zzz", path, sizeof(path), why, 120), WEFT_ENOENT);
  assert_int_equal(strlen(why), 119);
  assert_string_equal(why + 116, "...");

  /* A path is what it says; a file in the current directory wins over a name. */
  assert_int_equal(weftx_topo_find("./a3-highgpu-8g", path, sizeof(path), why, sizeof(why)), 0);
  assert_string_equal(path, "./a3-highgpu-8g");
  write_tmp("a3-highgpu-8g.xml", one_pu_xml, sizeof(one_pu_xml) - 1);
  assert_int_equal(weftx_topo_load("a3-highgpu-8g.xml", 0, &t, why, sizeof(why)), 0);
  assert_int_equal(weftx_topo_npus(t), 1);
  weftx_topo_destroy(t);
  assert_int_equal(unlink("a3-highgpu-8g.xml"), 0);

  /* The list: every shipped file, sorted, each with a description. */
  assert_int_equal(weftx_topo_list(&v, &n, why, sizeof(why)), 0);
  assert_true(n >= (int)WEFT__ARRAY_SIZE(shapes));
  for (int i = 0; i < n; i++) {
    if (i)
      assert_true(strcmp(v[i - 1].name, v[i].name) < 0);
    assert_null(strstr(v[i].name, ".xml"));
    for (size_t k = 0; k < WEFT__ARRAY_SIZE(shapes); k++)
      if (!strcmp(shapes[k].name, v[i].name)) {
        seen++;
        if (!v[i].desc[0] || strstr(v[i].desc, v[i].name) == v[i].desc || strchr(v[i].desc, '\n'))
          fail_msg("%s: description '%s'", v[i].name, v[i].desc);
      }
  }
  assert_int_equal(seen, (int)WEFT__ARRAY_SIZE(shapes));
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].name, "a3-highgpu-8g"))
      assert_non_null(strstr(v[i].desc, "8 x H100"));
  free(v);
  assert_int_equal(setenv("WEFT_DATADIR", tmpdir, 1), 0);
  assert_int_equal(weftx_topo_list(&v, &n, why, sizeof(why)), WEFT_ENOENT);
  assert_non_null(strstr(why, "WEFT_DATADIR"));
  assert_int_equal(weftx_topo_find("a3-highgpu-8g", path, sizeof(path), why, sizeof(why)),
                   WEFT_ENOENT);
  assert_non_null(strstr(why, "cannot read"));
  assert_int_equal(setenv("WEFT_DATADIR", data, 1), 0);
  assert_int_equal(chdir(cwd), 0);
}

/* What hwloc itself writes loads: zero bitmap words are empty ("0x0000ffff,,,"). */
static void test_hwloc_export(void **state)
{
  hwloc_topology_t h;
  weftx_topo *t = NULL, *live = NULL;
  char path[512], why[512];
  size_t len;
  char *xml;
  (void)state;

  assert_int_equal(weft__snprintf(path, sizeof(path), "%s/export.xml", tmpdir), 0);
  assert_int_equal(hwloc_topology_init(&h), 0);
  assert_int_equal(hwloc_topology_set_synthetic(h, "pack:2 numa:1 core:52 pu:2"), 0);
  assert_int_equal(hwloc_topology_load(h), 0);
  assert_int_equal(hwloc_topology_export_xml(h, path, 0), 0);
  hwloc_topology_destroy(h);
  xml = slurp(path, &len);
  assert_non_null(strstr(xml, ",,"));
  free(xml);
  if (weftx_topo_load(path, 0, &t, why, sizeof(why)) != 0)
    fail_msg("hwloc's own export does not load: %s", why);
  assert_int_equal(weftx_topo_npus(t), 208);
  assert_int_equal(weftx_topo_nnuma(t), 2);
  assert_string_equal(fmt(weftx_topo_numa(t, 1)->cpuset), "104-207");
  weftx_topo_destroy(t);
  unlink(path);

  /* This machine, through XML and back. */
  assert_int_equal(weftx_topo_load(NULL, WEFTX_TOPO_IGNORE_ENV, &live, why, sizeof(why)), 0);
  assert_int_equal(hwloc_topology_export_xml(weftx_topo_hwloc(live), path, 0), 0);
  if (weftx_topo_load(path, 0, &t, why, sizeof(why)) != 0)
    fail_msg("this machine's exported XML does not load: %s", why);
  assert_int_equal(weftx_topo_npus(t), weftx_topo_npus(live));
  assert_int_equal(weftx_topo_ngpus(t), weftx_topo_ngpus(live));
  assert_int_equal(weftx_topo_nnics(t), weftx_topo_nnics(live));
  assert_string_equal(weftx_topo_hostname(t), weftx_topo_hostname(live));
  weftx_topo_destroy(t);
  weftx_topo_destroy(live);
  unlink(path);
}

static void test_cpuset_format(void **state)
{
  hwloc_bitmap_t s = hwloc_bitmap_alloc();
  char buf[8];
  (void)state;
  assert_non_null(s);
  assert_int_equal(weftx_cpuset_format(s, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "");
  assert_int_equal(hwloc_bitmap_set_range(s, 0, 3), 0);
  assert_int_equal(hwloc_bitmap_set(s, 9), 0);
  assert_int_equal(weftx_cpuset_format(s, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "0-3,9");
  assert_int_equal(hwloc_bitmap_set_range(s, 100, 112), 0);
  assert_int_equal(weftx_cpuset_format(s, buf, sizeof(buf)), WEFT_ERANGE);
  assert_int_equal(weftx_cpuset_format(s, NULL, 0), WEFT_EINVAL);
  hwloc_bitmap_free(s);
}

static int setup(void **state)
{
  const char *base = getenv("TMPDIR");
  (void)state;
  if (weft__snprintf(tmpdir, sizeof(tmpdir), "%s/test-topo.XXXXXX", base && *base ? base : "/tmp"))
    return -1;
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
  static const char *const names[] = {"empty.xml", "blank.xml",      "text.xml",   "other.xml",
                                      "half.xml",  "head.xml",       "nul.xml",    "nopu.xml",
                                      "onepu.xml", "nocomplete.xml", "badset.xml", "noroot.xml"};
  char path[512];
  (void)state;
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(names); i++)
    if (weft__snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]) == 0)
      unlink(path);
  return rmdir(tmpdir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_shipped),          cmocka_unit_test(test_links),
    cmocka_unit_test(test_a3_highgpu),       cmocka_unit_test(test_a3_megagpu),
    cmocka_unit_test(test_numa_interleaved), cmocka_unit_test(test_flat_vm),
    cmocka_unit_test(test_warnings),         cmocka_unit_test(test_names),
    cmocka_unit_test(test_errors),           cmocka_unit_test(test_env_and_live),
    cmocka_unit_test(test_hwloc_export),     cmocka_unit_test(test_cpuset_format),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
