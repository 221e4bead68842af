/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of lib/env: the provenance list, forwarding and -x, the per-rank
 * environment and its precedence, CUDA_VISIBLE_DEVICES in every mode, the
 * interface choice from fabricated interface lists, and MASTER_PORT. */
#include "weft_private.h"
#include <weftx.h> /* weft_private.h brings weftx/util.h alone */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net/if.h>
#include <sys/socket.h>

#include <cmocka.h>

static char why[512];

static weftx_env *new_env(void)
{
  weftx_env *e = NULL;
  assert_int_equal(weftx_env_create(&e), 0);
  return e;
}

static void assert_origin(const weftx_env *e, const char *key, weftx_env_origin want)
{
  weftx_env_origin o;
  assert_int_equal(weftx_env_origin_of(e, key, &o), 0);
  assert_int_equal(o, want);
}

static void test_list(void **state)
{
  weftx_env *e = new_env();
  const char *k, *v, *d;
  weftx_env_origin o;
  char **envp, buf[64];
  (void)state;

  assert_int_equal(weftx_env_set(e, "A", "1", WEFTX_ENV_USER, NULL), 0);
  assert_int_equal(weftx_env_set(e, "B", "2", WEFTX_ENV_PRESET, "a3-highgpu"), 0);
  assert_int_equal(weftx_env_set_default(e, "A", "x", WEFTX_ENV_WEFT, NULL), 1);
  assert_string_equal(weftx_env_get(e, "A"), "1");
  assert_int_equal(weftx_env_set_default(e, "C", "3", WEFTX_ENV_WEFT, NULL), 0);
  assert_int_equal(weftx_env_set(e, "A", "one", WEFTX_ENV_XARG, NULL), 0);
  assert_int_equal(weftx_env_count(e), 3);
  assert_int_equal(weftx_env_entry(e, 0, &k, &v, &o, &d), 0);
  assert_string_equal(k, "A");
  assert_string_equal(v, "one");
  assert_int_equal(o, WEFTX_ENV_XARG);
  assert_null(d);
  assert_int_equal(weftx_env_describe(e, 1, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "preset a3-highgpu");
  assert_int_equal(weftx_env_describe(e, 0, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "-x");
  assert_int_equal(weftx_env_entry(e, 3, &k, &v, &o, &d), WEFT_EINVAL);
  assert_int_equal(weftx_env_put(e, "D=x=y", WEFTX_ENV_USER, NULL), 0);
  assert_string_equal(weftx_env_get(e, "D"), "x=y");
  assert_int_equal(weftx_env_put(e, "E=", WEFTX_ENV_USER, NULL), 0);
  assert_string_equal(weftx_env_get(e, "E"), "");
  assert_int_equal(weftx_env_put(e, "=x", WEFTX_ENV_USER, NULL), WEFT_EPARSE);
  assert_int_equal(weftx_env_put(e, "1A=x", WEFTX_ENV_USER, NULL), WEFT_EPARSE);
  assert_int_equal(weftx_env_put(e, "noequals", WEFTX_ENV_USER, NULL), WEFT_EPARSE);
  assert_int_equal(weftx_env_set(e, "A B", "x", WEFTX_ENV_USER, NULL), WEFT_EINVAL);
  assert_int_equal(weftx_env_set(e, "A", NULL, WEFTX_ENV_USER, NULL), WEFT_EINVAL);
  assert_int_equal(weftx_env_unset(e, "B"), 0);
  assert_int_equal(weftx_env_unset(e, "B"), 1);
  assert_null(weftx_env_get(e, "B"));
  assert_int_equal(weftx_env_to_envp(e, &envp), 0);
  assert_string_equal(envp[0], "A=one");
  assert_string_equal(envp[1], "C=3");
  assert_string_equal(envp[2], "D=x=y");
  assert_string_equal(envp[3], "E=");
  assert_null(envp[4]);
  free(envp);
  /* truncate keeps the first n in order; a key taken away is found no more, and
   * can come back */
  assert_int_equal(weftx_env_index(e, "C"), 1);
  assert_int_equal(weftx_env_index(e, "B"), -1);
  assert_int_equal(weftx_env_index(e, NULL), -1);
  assert_int_equal(weftx_env_index(NULL, "A"), -1);
  weftx_env_truncate(e, 2);
  assert_int_equal(weftx_env_count(e), 2);
  assert_string_equal(weftx_env_get(e, "C"), "3");
  assert_null(weftx_env_get(e, "D"));
  assert_int_equal(weftx_env_set_default(e, "D", "again", WEFTX_ENV_WEFT, NULL), 0);
  assert_string_equal(weftx_env_get(e, "D"), "again");
  assert_int_equal(weftx_env_set_default(e, "A", "no", WEFTX_ENV_WEFT, NULL), 1);
  weftx_env_truncate(e, 5);
  assert_int_equal(weftx_env_count(e), 3);
  weftx_env_truncate(e, -1); /* garbage: nothing taken */
  assert_int_equal(weftx_env_count(e), 3);
  weftx_env_truncate(NULL, 0);
  weftx_env_truncate(e, 0);
  assert_int_equal(weftx_env_count(e), 0);
  assert_null(weftx_env_get(e, "A"));
  assert_string_equal(weftx_env_origin_name(WEFTX_ENV_WEFT), "weft");
  weftx_env_destroy(e);
}

static void test_forward(void **state)
{
  char *user[] = {"PATH=/usr/bin",
                  "HOME=/root",
                  "NCCL_DEBUG=INFO",
                  "CUDA_VISIBLE_DEVICES=1",
                  "PYTHONPATH=/x",
                  "OMP_PROC_BIND=true",
                  "WEFT_VERBOSE=env",
                  "LD_LIBRARY_PATH=/l",
                  "LD_PRELOAD=/evil.so",
                  "OMPI_MCA_x=1",
                  "SECRET=1",
                  "junk",
                  "GLOO_SOCKET_IFNAME=eth1",
                  NULL};
  weftx_env *e = new_env();
  (void)state;

  assert_true(weftx_env_forward_default("NCCL_IB_HCA"));
  assert_false(weftx_env_forward_default("HOME"));
  assert_false(weftx_env_forward_default("PATHX"));
  assert_int_equal(weftx_env_forward(e, user), 0);
  assert_int_equal(weftx_env_count(e), 8);
  assert_string_equal(weftx_env_get(e, "GLOO_SOCKET_IFNAME"), "eth1");
  assert_string_equal(weftx_env_get(e, "NCCL_DEBUG"), "INFO");
  assert_null(weftx_env_get(e, "HOME"));
  assert_null(weftx_env_get(e, "LD_PRELOAD"));
  assert_origin(e, "PATH", WEFTX_ENV_USER);
  /* -x as in mpirun */
  assert_int_equal(weftx_env_add_x(e, "HOME", user, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "HOME"), "/root");
  assert_origin(e, "HOME", WEFTX_ENV_XARG);
  assert_int_equal(weftx_env_add_x(e, "FOO=a b=c", user, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "FOO"), "a b=c");
  assert_int_equal(weftx_env_add_x(e, "NCCL_DEBUG=WARN", user, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "NCCL_DEBUG"), "WARN");
  assert_origin(e, "NCCL_DEBUG", WEFTX_ENV_XARG);
  assert_int_equal(weftx_env_add_x(e, "NOPE", user, why, sizeof(why)), WEFT_ENOENT);
  assert_non_null(strstr(why, "NOPE is not set"));
  assert_int_equal(weftx_env_add_x(e, "1X", user, why, sizeof(why)), WEFT_EPARSE);
  assert_int_equal(weftx_env_add_x(e, "=x", user, why, sizeof(why)), WEFT_EPARSE);
  assert_non_null(strstr(why, "-x '=x'"));
  assert_int_equal(weftx_env_add_x(e, "A;B=1", user, why, sizeof(why)), WEFT_EPARSE);
  weftx_env_destroy(e);
}

static void expect_cvd(weftx_gpu_visibility mode, int ngpus, int gpu, int lr, int rc,
                       const char *want)
{
  char buf[128];
  int got = weftx_cuda_visible_devices(mode, ngpus, gpu, lr, buf, sizeof(buf));
  if (got != rc || strcmp(buf, want) != 0)
    fail_msg("mode %d ngpus %d gpu %d local %d: got %d '%s', wanted %d '%s'", mode, ngpus, gpu, lr,
             got, buf, rc, want);
}

static void test_cuda_visible(void **state)
{
  weftx_gpu_visibility v;
  char small[4];
  (void)state;
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 3, 3, 0, "0,1,2,3,4,5,6,7");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 0, 0, 0, "0,1,2,3,4,5,6,7");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 5, 0, 0, "5,0,1,2,3,4,6,7");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 0, 2, 0, "1,2,0,3,4,5,6,7");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 7, 7, 0, "0,1,2,3,4,5,6,7");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 1, 7, 0, "0,2,3,4,5,6,7,1");
  expect_cvd(WEFTX_GPUVIS_ALL, 4, 2, 9, 0, "2,0,1,3");
  expect_cvd(WEFTX_GPUVIS_ALL, 1, 0, 0, 0, "0");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, -1, 0, 1, "");
  expect_cvd(WEFTX_GPUVIS_ALL, 0, -1, 0, 1, "");
  expect_cvd(WEFTX_GPUVIS_OWN, 8, 5, 0, 0, "5");
  expect_cvd(WEFTX_GPUVIS_OWN, 8, -1, 0, 0, "");
  expect_cvd(WEFTX_GPUVIS_OWN, 0, -1, 0, 1, "");
  expect_cvd(WEFTX_GPUVIS_NONE, 8, 5, 0, 1, "");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 8, 0, WEFT_EINVAL, "");
  expect_cvd(WEFTX_GPUVIS_ALL, 8, 1, -1, WEFT_EINVAL, "");
  assert_int_equal(weftx_cuda_visible_devices(WEFTX_GPUVIS_ALL, 8, 1, 1, small, sizeof(small)),
                   WEFT_ERANGE);
  /* Every "all" answer is a permutation with the rank's GPU at LOCAL_RANK. */
  for (int n = 1; n <= 16; n++)
    for (int g = 0; g < n; g++)
      for (int lr = 0; lr < n; lr++) {
        char buf[128], *p = buf;
        int seen[16] = {0};
        assert_int_equal(weftx_cuda_visible_devices(WEFTX_GPUVIS_ALL, n, g, lr, buf, sizeof(buf)),
                         0);
        for (int pos = 0; pos < n; pos++) {
          long d = strtol(p, &p, 10);
          assert_true(d >= 0 && d < n && !seen[d]);
          seen[d] = 1;
          if (pos == lr)
            assert_int_equal(d, g);
          if (*p == ',')
            p++;
        }
        assert_int_equal(*p, '\0');
      }
  /* Over the GPUs a Slurm job was given, as the process numbers them. */
  {
    static const int job[] = {3, 4}, six[] = {0, 2, 3, 5, 6, 7};
    char buf[64];
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, job, 2, 4, 0, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "4,3");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, job, 2, 4, 1, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "3,4");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, six, 6, 5, 1, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "0,5,2,3,6,7");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, six, 6, 0, 9, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "0,2,3,5,6,7");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_OWN, job, 2, 3, 1, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "3");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, job, 2, -1, 0, buf, sizeof(buf)), 1);
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_NONE, job, 2, 3, 0, buf, sizeof(buf)), 1);
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, job, 0, -1, 0, buf, sizeof(buf)), 1);
    /* a GPU outside the list is never written */
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, job, 2, 0, 0, buf, sizeof(buf)),
                     WEFT_EINVAL);
    assert_string_equal(buf, "");
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_OWN, job, 2, 5, 0, buf, sizeof(buf)),
                     WEFT_EINVAL);
    assert_int_equal(weftx_cuda_visible_list(WEFTX_GPUVIS_ALL, NULL, 2, 0, 0, buf, sizeof(buf)),
                     WEFT_EINVAL);
  }
  assert_int_equal(weftx_gpu_visibility_parse("own", &v), 0);
  assert_int_equal(v, WEFTX_GPUVIS_OWN);
  assert_int_equal(weftx_gpu_visibility_parse("NONE", &v), 0);
  assert_int_equal(v, WEFTX_GPUVIS_NONE);
  assert_int_equal(weftx_gpu_visibility_parse("some", &v), WEFT_EPARSE);
}

static weftx_rank_info sample_info(void)
{
  weftx_rank_info ri;
  weftx_rank_info_init(&ri);
  ri.rank = 11;
  ri.size = 16;
  ri.local_rank = 3;
  ri.local_size = 8;
  ri.node_rank = 1;
  ri.nnodes = 2;
  ri.master_addr = "10.0.0.2";
  ri.master_port = 29500;
  ri.ifname = "ens4";
  ri.run_id = "vm-a:4242";
  ri.ngpus = 8;
  ri.gpu = 5;
  ri.ncores = 13;
  snprintf(ri.cpus, sizeof(ri.cpus), "%s", "52-64");
  snprintf(ri.nic, sizeof(ri.nic), "%s", "enp6s0");
  snprintf(ri.gpu_pci, sizeof(ri.gpu_pci), "%s", "0000:8a:00.0");
  return ri;
}

static void test_rank_env(void **state)
{
  static const char *want[][2] = {
    {"RANK", "11"},
    {"WORLD_SIZE", "16"},
    {"LOCAL_RANK", "3"},
    {"LOCAL_WORLD_SIZE", "8"},
    {"NODE_RANK", "1"},
    {"GROUP_RANK", "1"},
    {"GROUP_WORLD_SIZE", "2"},
    {"ROLE_RANK", "11"},
    {"ROLE_WORLD_SIZE", "16"},
    {"TORCHELASTIC_RUN_ID", "vm-a:4242"},
    {"MASTER_ADDR", "10.0.0.2"},
    {"MASTER_PORT", "29500"},
    {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
    {"CUDA_VISIBLE_DEVICES", "0,1,2,5,3,4,6,7"},
    {"OMP_NUM_THREADS", "13"},
    {"NCCL_SOCKET_IFNAME", "ens4"},
    {"GLOO_SOCKET_IFNAME", "ens4"},
    {"WEFT_GPU", "5"},
    {"WEFT_GPU_PCI", "0000:8a:00.0"},
    {"WEFT_CPUS", "52-64"},
    {"WEFT_NIC", "enp6s0"},
    {"WEFT_LOCAL_RANK", "3"},
    {"WEFT_LOCAL_SIZE", "8"},
    {"WEFT_NODE_RANK", "1"},
    {"WEFT_NNODES", "2"},
  };
  weftx_rank_info ri = sample_info();
  weftx_env *e = new_env();
  (void)state;

  assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
  assert_int_equal(weftx_env_count(e), (int)(sizeof(want) / sizeof(want[0])));
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    const char *v = weftx_env_get(e, want[i][0]);
    if (!v || strcmp(v, want[i][1]) != 0)
      fail_msg("%s=%s, wanted %s", want[i][0], v ? v : "(unset)", want[i][1]);
    assert_origin(e, want[i][0], WEFTX_ENV_WEFT);
  }
  weftx_env_destroy(e);

  /* A rank without GPU, NIC, cores or master on a host without GPUs. */
  weftx_rank_info_init(&ri);
  e = new_env();
  assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "RANK"), "0");
  assert_string_equal(weftx_env_get(e, "TORCHELASTIC_RUN_ID"), "none"); /* torchrun's own */
  assert_string_equal(weftx_env_get(e, "WEFT_GPU"), "-1");
  assert_null(weftx_env_get(e, "WEFT_GPU_PCI"));
  assert_null(weftx_env_get(e, "CUDA_VISIBLE_DEVICES"));
  assert_string_equal(weftx_env_get(e, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  assert_null(weftx_env_get(e, "MASTER_ADDR"));
  assert_null(weftx_env_get(e, "MASTER_PORT"));
  assert_null(weftx_env_get(e, "WEFT_NIC"));
  assert_null(weftx_env_get(e, "OMP_NUM_THREADS"));
  assert_null(weftx_env_get(e, "NCCL_SOCKET_IFNAME"));
  assert_null(weftx_env_get(e, "GLOO_SOCKET_IFNAME"));
  weftx_env_destroy(e);

  /* The GPUs of a Slurm job: CUDA_VISIBLE_DEVICES and WEFT_GPU among them only. */
  {
    static const int job[] = {3, 4};
    ri = sample_info();
    ri.devices = job;
    ri.ndevices = 2;
    ri.gpu = 4;
    ri.local_rank = 1;
    e = new_env();
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
    assert_string_equal(weftx_env_get(e, "CUDA_VISIBLE_DEVICES"), "3,4");
    assert_string_equal(weftx_env_get(e, "WEFT_GPU"), "4");
    /* the address is the GPU's, whatever numbering WEFT_GPU is in */
    assert_string_equal(weftx_env_get(e, "WEFT_GPU_PCI"), "0000:8a:00.0");
    weftx_env_destroy(e);
    ri.gpu = 5;
    e = new_env();
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), WEFT_EINVAL);
    assert_string_equal(why, "per-rank environment: GPU 5 is not one of the 2 the rank may see");
    weftx_env_destroy(e);
    weftx_rank_info_init(&ri);
  }

  /* own: a rank with no GPU on a GPU host sees none. */
  ri.ngpus = 4;
  ri.gpu_visibility = WEFTX_GPUVIS_OWN;
  e = new_env();
  assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "CUDA_VISIBLE_DEVICES"), "");
  weftx_env_destroy(e);
}

/* The placement fields from a real topology file (a3-highgpu-8g: 8 GPUs, NICs by them). */
static void test_rank_info_set_place(void **state)
{
  char path[1024], cpus[WEFTX_RANK_CPUS_MAX];
  weftx_topo *t = NULL;
  weftx_place pl;
  weftx_rank_info ri;
  const weftx_gpu *g;
  (void)state;

  snprintf(path, sizeof(path), "%s/topologies/a3-highgpu-8g.xml", weftx_datadir());
  if (weftx_topo_load(path, 0, &t, why, sizeof(why)) != 0) {
    fprintf(stderr, "skipped: %s\n", why);
    skip();
  }
  assert_int_equal(weftx_topo_ngpus(t), 8);
  g = weftx_topo_gpu(t, 3);
  assert_non_null(g);
  memset(&pl, 0, sizeof(pl));
  pl.local_rank = 3;
  pl.gpu = 3;
  pl.nic = weftx_topo_nnics(t) > 0 ? 0 : -1;
  pl.cpuset = hwloc_bitmap_dup(g->cpuset);
  pl.ncores = 4;
  weftx_rank_info_init(&ri);
  assert_int_equal(weftx_rank_info_set_place(&ri, t, &pl), 0);
  assert_int_equal(ri.ngpus, 8);
  assert_int_equal(ri.gpu, 3);
  assert_int_equal(ri.ncores, 4);
  assert_int_equal(weftx_cpuset_format(g->cpuset, cpus, sizeof(cpus)), 0);
  assert_string_equal(ri.cpus, cpus);
  if (pl.nic >= 0)
    assert_string_equal(ri.nic, weftx_topo_nic(t, 0)->name);
  assert_string_equal(ri.gpu_pci, g->pci);
  assert_int_equal(strlen(ri.gpu_pci), 12); /* "0000:8a:00.0" */
  pl.nic = -1;
  pl.gpu = -1;
  assert_int_equal(weftx_rank_info_set_place(&ri, t, &pl), 0);
  assert_string_equal(ri.nic, "");
  assert_string_equal(ri.gpu_pci, "");
  hwloc_bitmap_free(pl.cpuset);
  weftx_topo_destroy(t);
}

static void test_rank_env_precedence(void **state)
{
  char *user[] = {"CUDA_VISIBLE_DEVICES=2,3", "MASTER_PORT=1234", "OMP_NUM_THREADS=1",
                  "NCCL_SOCKET_IFNAME=eth9",  "PATH=/bin",        NULL};
  weftx_rank_info ri = sample_info();
  weftx_env *e = new_env();
  (void)state;

  assert_int_equal(weftx_env_forward(e, user), 0);
  assert_int_equal(weftx_env_import(e, user, WEFTX_ENV_USER), 0);
  assert_int_equal(weftx_env_add_x(e, "RANK=99", user, why, sizeof(why)), 0);
  assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
  assert_string_equal(weftx_env_get(e, "CUDA_VISIBLE_DEVICES"), "2,3");
  assert_origin(e, "CUDA_VISIBLE_DEVICES", WEFTX_ENV_USER);
  assert_string_equal(weftx_env_get(e, "MASTER_PORT"), "1234");
  assert_origin(e, "MASTER_PORT", WEFTX_ENV_USER);
  assert_string_equal(weftx_env_get(e, "OMP_NUM_THREADS"), "1");
  assert_string_equal(weftx_env_get(e, "NCCL_SOCKET_IFNAME"), "eth9");
  assert_string_equal(weftx_env_get(e, "GLOO_SOCKET_IFNAME"), "eth9"); /* gloo follows NCCL */
  assert_origin(e, "GLOO_SOCKET_IFNAME", WEFTX_ENV_WEFT);
  assert_string_equal(weftx_env_get(e, "RANK"), "99");
  assert_origin(e, "RANK", WEFTX_ENV_XARG);
  assert_string_equal(weftx_env_get(e, "MASTER_ADDR"), "10.0.0.2");
  assert_origin(e, "MASTER_ADDR", WEFTX_ENV_WEFT);
  assert_string_equal(weftx_env_get(e, "WEFT_GPU_PCI"), "0000:8a:00.0");
  assert_origin(e, "WEFT_GPU_PCI", WEFTX_ENV_WEFT);
  weftx_env_destroy(e);

  /* WEFT_GPU_PCI only beside weft's own WEFT_GPU: a WEFT_GPU of the user's may be another
   * GPU than the placement's, whose address would then contradict it */
  {
    char *gpu[] = {"WEFT_GPU=2", NULL}, *pci[] = {"WEFT_GPU_PCI=0000:04:00.0", NULL};
    e = new_env();
    assert_int_equal(weftx_env_import(e, gpu, WEFTX_ENV_USER), 0);
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
    assert_string_equal(weftx_env_get(e, "WEFT_GPU"), "2");
    assert_null(weftx_env_get(e, "WEFT_GPU_PCI"));
    weftx_env_destroy(e);
    /* and the user's WEFT_GPU_PCI is never overwritten */
    e = new_env();
    assert_int_equal(weftx_env_add_x(e, pci[0], pci, why, sizeof(why)), 0);
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
    assert_string_equal(weftx_env_get(e, "WEFT_GPU"), "5");
    assert_string_equal(weftx_env_get(e, "WEFT_GPU_PCI"), "0000:04:00.0");
    assert_origin(e, "WEFT_GPU_PCI", WEFTX_ENV_XARG);
    weftx_env_destroy(e);
  }
}

/* GLOO_SOCKET_IFNAME: the user's own value wins; otherwise NCCL's interfaces (from the
 * user, a preset or weft) as exact names; nothing for an exclusion list. */
static void test_rank_env_gloo(void **state)
{
  static const struct {
    const char *user, *gloo;
  } cases[] = {
    {NULL, "ens4"},                                /* weft's choice */
    {"GLOO_SOCKET_IFNAME=eth3", "eth3"},           /* never over the user's */
    {"NCCL_SOCKET_IFNAME=eth1,eth2", "eth1,eth2"}, /* gloo takes lists too */
    {"NCCL_SOCKET_IFNAME==eth1", "eth1"},          /* NCCL's exact-match '=' */
    {"NCCL_SOCKET_IFNAME=^docker,lo", NULL},       /* an exclusion list is not a name */
    {"NCCL_SOCKET_IFNAME==", NULL},
  };
  (void)state;

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *user[] = {(char *)cases[i].user, NULL};
    weftx_rank_info ri = sample_info();
    weftx_env *e = new_env();
    const char *v;
    assert_int_equal(weftx_env_import(e, user, WEFTX_ENV_USER), 0);
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
    v = weftx_env_get(e, "GLOO_SOCKET_IFNAME");
    if (cases[i].gloo ? !v || strcmp(v, cases[i].gloo) : v != NULL)
      fail_msg("%s: GLOO_SOCKET_IFNAME=%s, wanted %s", cases[i].user ? cases[i].user : "(none)",
               v ? v : "(unset)", cases[i].gloo ? cases[i].gloo : "(unset)");
    weftx_env_destroy(e);
  }
  /* A preset's NCCL_SOCKET_IFNAME (applied before weftx_rank_env) is followed too. */
  {
    weftx_rank_info ri = sample_info();
    weftx_env *e = new_env();
    assert_int_equal(weftx_env_set_default(e, "NCCL_SOCKET_IFNAME", "enp0s12", WEFTX_ENV_PRESET,
                                           "preset a3-highgpu-8g"),
                     0);
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), 0);
    assert_string_equal(weftx_env_get(e, "GLOO_SOCKET_IFNAME"), "enp0s12");
    weftx_env_destroy(e);
  }
}

static void test_rank_env_invalid(void **state)
{
  weftx_env *e = new_env();
  weftx_rank_info ri;
  (void)state;
#define BAD(field, value, part)                                                                    \
  do {                                                                                             \
    ri = sample_info();                                                                            \
    ri.field = value;                                                                              \
    why[0] = '\0';                                                                                 \
    assert_int_equal(weftx_rank_env(e, &ri, why, sizeof(why)), WEFT_EINVAL);                       \
    assert_non_null(strstr(why, part));                                                            \
  } while (0)
  BAD(rank, 16, "rank 16");
  BAD(rank, -1, "rank -1");
  BAD(size, 0, "rank 11");
  BAD(local_rank, 8, "local rank 8");
  BAD(local_size, 32, "local rank");
  BAD(node_rank, 2, "node rank 2");
  BAD(master_port, 70000, "MASTER_PORT");
  BAD(gpu, 8, "GPU 8");
#undef BAD
  assert_int_equal(weftx_env_count(e), 0);
  weftx_env_destroy(e);
}

/* The interface list of a cloud GPU VM with docker and a bridge. */
static int make_ifs(weftx_netif *ifs)
{
  static const struct {
    const char *name, *cidr;
    unsigned flags;
  } list[] = {
    {"lo", "127.0.0.1/8", IFF_UP | IFF_LOOPBACK},
    {"docker0", "172.17.0.1/16", IFF_UP},
    {"veth12ab", "169.254.1.1/16", IFF_UP},
    {"virbr0", "192.168.122.1/24", IFF_UP},
    {"br-5f2a", "172.18.0.1/16", IFF_UP},
    {"ens4", "10.128.0.5/32", IFF_UP},  /* GCE: /32, peers reached via the gateway */
    {"ens5", "192.168.1.5/24", IFF_UP}, /* a second NIC with the peers' subnet */
    {"ens6", "10.200.0.5/24", 0},       /* down */
    {"ens5", "fd00::5/64", IFF_UP},
  };
  for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
    assert_int_equal(weftx_netif_make(&ifs[i], list[i].name, list[i].cidr, list[i].flags), 0);
  return (int)(sizeof(list) / sizeof(list[0]));
}

static const char *choose(const weftx_netif *ifs, int n, const char *const *addrs,
                          const char *const *routes, int nt, const char *defif)
{
  weftx_netaddr t[8];
  int idx = -1;

  for (int k = 0; k < nt; k++)
    assert_int_equal(weftx_netaddr_parse(&t[k], addrs[k]), 0);
  if (weftx_netif_choose(ifs, n, t, routes, nt, defif, &idx, why, sizeof(why)) != 0)
    return NULL;
  return ifs[idx].name;
}

static void test_netif_choose(void **state)
{
  weftx_netif ifs[16], only[4];
  weftx_netaddr a;
  const char *peers[] = {"192.168.1.6", "192.168.1.7"};
  const char *far[] = {"10.128.0.6", "10.128.0.7"};
  const char *far_routes[] = {"ens4", "ens4"};
  const char *docker_peer[] = {"172.17.0.2"};
  const char *docker_route[] = {"docker0"};
  const char *loop[] = {"127.0.1.1"};
  const char *v6[] = {"fd00::6"};
  int n = make_ifs(ifs), idx;
  (void)state;

  assert_true(weftx_netif_excluded("lo"));
  assert_true(weftx_netif_excluded("docker0"));
  assert_true(weftx_netif_excluded("veth0a1b"));
  assert_true(weftx_netif_excluded("virbr0"));
  assert_true(weftx_netif_excluded("br-1234"));
  assert_false(weftx_netif_excluded("ens4"));
  assert_false(weftx_netif_excluded("eth0"));
  assert_false(weftx_netif_excluded("bond0"));

  /* Peers on ens5's subnet: ens5, even when the default route is ens4. */
  assert_string_equal(choose(ifs, n, peers, NULL, 2, "ens4"), "ens5");
  /* Peers only reachable through ens4 (GCE /32): the route decides. */
  assert_string_equal(choose(ifs, n, far, far_routes, 2, NULL), "ens4");
  /* Routes unknown: the default route's interface. */
  assert_string_equal(choose(ifs, n, far, NULL, 2, "ens4"), "ens4");
  /* Routes unknown and no default route: nothing reaches them, clearly. */
  assert_null(choose(ifs, n, far, NULL, 2, NULL));
  assert_non_null(strstr(why, "NCCL_SOCKET_IFNAME"));
  /* A peer in docker's subnet or routed through docker0 never picks docker0. */
  assert_string_equal(choose(ifs, n, docker_peer, docker_route, 1, "ens4"), "ens4");
  /* Single host (no peers, or only loopback ones): the default route's interface. */
  assert_string_equal(choose(ifs, n, NULL, NULL, 0, "ens4"), "ens4");
  assert_string_equal(choose(ifs, n, loop, NULL, 1, "ens5"), "ens5");
  /* No default route: the first candidate, IPv4 before IPv6. */
  assert_string_equal(choose(ifs, n, NULL, NULL, 0, NULL), "ens4");
  /* IPv6 peers. */
  assert_int_equal(weftx_netaddr_parse(&a, v6[0]), 0);
  assert_int_equal(weftx_netif_choose(ifs, n, &a, NULL, 1, "ens4", &idx, why, sizeof(why)), 0);
  assert_int_equal(idx, 8);
  /* Only lo and docker: a single-host job gets lo, a multi-host one an error. */
  only[0] = ifs[0];
  only[1] = ifs[1];
  assert_string_equal(choose(only, 2, NULL, NULL, 0, NULL), "lo");
  assert_null(choose(only, 2, far, far_routes, 2, NULL));
  assert_null(choose(only, 0, NULL, NULL, 0, NULL));
  assert_non_null(strstr(why, "not even lo"));

  assert_int_equal(weftx_netif_make(&only[0], "x", "10.0.0.1", 0), WEFT_EPARSE);
  assert_int_equal(weftx_netif_make(&only[0], "x", "10.0.0.1/33", 0), WEFT_EPARSE);
  assert_int_equal(weftx_netif_make(&only[0], "x", "10.0.0/8", 0), WEFT_EPARSE);
  assert_int_equal(weftx_netif_make(&only[0], "x", "10.1.2.3/20", IFF_UP), 0);
  assert_int_equal(weftx_netaddr_parse(&a, "10.1.15.200"), 0);
  assert_true(weftx_netif_contains(&only[0], &a));
  assert_int_equal(weftx_netaddr_parse(&a, "10.1.16.1"), 0);
  assert_false(weftx_netif_contains(&only[0], &a));
  assert_int_equal(weftx_netaddr_parse(&a, "host"), WEFT_EPARSE);
}

static void test_netif_probe(void **state)
{
  weftx_netif *ifs = NULL;
  weftx_netaddr a;
  char name[32], addr[64], defif[32];
  const char *hosts[] = {"localhost"};
  int n = 0, has_lo = 0;
  (void)state;

  assert_int_equal(weftx_netif_list(&ifs, &n), 0);
  for (int i = 0; i < n; i++)
    has_lo |= strcmp(ifs[i].name, "lo") == 0;
  assert_true(has_lo);
  assert_int_equal(weftx_netaddr_parse(&a, "127.0.0.1"), 0);
  assert_true(weftx_netaddr_is_local(ifs, n, &a));
  assert_int_equal(weftx_netif_route_to(ifs, n, &a, name, sizeof(name)), 0);
  assert_string_equal(name, "lo");
  free(ifs);
  assert_int_equal(weftx_netif_default_route(defif, sizeof(defif)), 0);
  /* No buffer: refused before /proc/net/route is opened (LeakSanitizer sees a leak). */
  assert_int_equal(weftx_netif_default_route(NULL, 0), WEFT_EINVAL);
  /* A single-host job always finds an interface (lo at worst). */
  assert_int_equal(
    weftx_netif_pick(hosts, 1, name, sizeof(name), addr, sizeof(addr), why, sizeof(why)), 0);
  assert_int_equal(weftx_host_resolve("localhost", &a, why, sizeof(why)), 0);
  /* Refused before any DNS query (a test must not wait on a resolver). */
  assert_int_equal(weftx_host_resolve("a;reboot", &a, why, sizeof(why)), WEFT_ENAME);
  assert_non_null(strstr(why, "';'"));
  assert_int_equal(weftx_master_addr("localhost", NULL, addr, sizeof(addr), why, sizeof(why)), 0);
  assert_string_equal(addr, "127.0.0.1");
  assert_int_equal(weftx_master_addr("localhost", "10.0.0.5", addr, sizeof(addr), why, sizeof(why)),
                   0);
  assert_string_equal(addr, "10.0.0.5");
  assert_int_equal(weftx_master_addr("192.0.2.7", "10.0.0.5", addr, sizeof(addr), why, sizeof(why)),
                   0);
  assert_string_equal(addr, "192.0.2.7");
}

static void test_port(void **state)
{
  int p = 0, q = 0;
  (void)state;
  assert_int_equal(weftx_port_candidate(0, 0), WEFTX_PORT_BASE);
  assert_int_equal(weftx_port_candidate(7, 1), WEFTX_PORT_BASE + 8);
  assert_int_equal(weftx_port_candidate(WEFTX_PORT_SPAN, 0), WEFTX_PORT_BASE);
  for (unsigned long j = 0; j < 5000; j += 37)
    for (int t = 0; t < WEFTX_PORT_TRIES; t++) {
      int c = weftx_port_candidate(j, t);
      assert_true(c >= WEFTX_PORT_BASE && c < WEFTX_PORT_BASE + WEFTX_PORT_SPAN);
    }
  assert_int_equal(weftx_master_port(0, &p, why, sizeof(why)), 0);
  assert_true(p > 0 && p < 65536);
  assert_int_equal(weftx_master_port(12345, &q, why, sizeof(why)), 0);
  assert_true(q >= WEFTX_PORT_BASE && q < WEFTX_PORT_BASE + WEFTX_PORT_SPAN);
}

/* apply: the list becomes the whole environment, its values exactly */
static void test_apply(void **state)
{
  extern char **environ;
  char **saved = environ;
  char *fake[] = {"WEFT_T_KEEP=1", "WEFT_T_GONE=2", "WEFT_T_CHANGE=3", NULL};
  weftx_env *e;

  (void)state;
  assert_int_equal(weftx_env_create(&e), 0);
  assert_int_equal(weftx_env_import(e, fake, WEFTX_ENV_USER), 0);
  assert_int_equal(weftx_env_unset(e, "WEFT_T_GONE"), 0);
  assert_int_equal(weftx_env_set(e, "WEFT_T_CHANGE", "a=b c", WEFTX_ENV_WEFT, NULL), 0);
  assert_int_equal(weftx_env_set(e, "WEFT_T_NEW", "", WEFTX_ENV_WEFT, NULL), 0);
  assert_int_equal(weftx_env_apply(e), 0);
  char **mine = environ;
  assert_string_equal(getenv("WEFT_T_KEEP"), "1");
  assert_null(getenv("WEFT_T_GONE"));
  assert_string_equal(getenv("WEFT_T_CHANGE"), "a=b c");
  assert_string_equal(getenv("WEFT_T_NEW"), "");
  int n = 0;
  while (environ[n])
    n++;
  assert_int_equal(n, 3);
  environ = saved;
  free(mine);
  weftx_env_destroy(e);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_list),
    cmocka_unit_test(test_forward),
    cmocka_unit_test(test_cuda_visible),
    cmocka_unit_test(test_rank_env),
    cmocka_unit_test(test_rank_info_set_place),
    cmocka_unit_test(test_rank_env_precedence),
    cmocka_unit_test(test_rank_env_gloo),
    cmocka_unit_test(test_rank_env_invalid),
    cmocka_unit_test(test_netif_choose),
    cmocka_unit_test(test_netif_probe),
    cmocka_unit_test(test_port),
    cmocka_unit_test(test_apply),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
