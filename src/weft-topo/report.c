/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What weft-topo prints: a summary of the machine, the GPU/NIC affinity
 * matrix in the manner of `nvidia-smi topo -m` with CPU and NUMA affinity
 * columns, its legend, the topology's warnings with Google Cloud's advice
 * where it applies, and the placement of -np N ranks as a table or as the
 * plan JSON.
 */
#include "weft-topo.h"

#include <stdlib.h>
#include <string.h>

static void cpus(hwloc_const_bitmap_t set, char *buf, size_t len)
{
  if (!set || weftx_cpuset_format(set, buf, len) != 0 || !buf[0])
    snprintf(buf, len, "-");
}

static void numa_text(int numa, char *buf, size_t len)
{
  if (numa >= 0)
    snprintf(buf, len, "%d", numa);
  else
    snprintf(buf, len, "N/A");
}

static void bytes(unsigned long long b, char *buf, size_t len)
{
  if (b == 0)
    snprintf(buf, len, "-");
  else if (b >= (1ULL << 40) * 10)
    snprintf(buf, len, "%.0f TiB", (double)b / (double)(1ULL << 40));
  else
    snprintf(buf, len, "%.0f GiB", (double)b / (double)(1ULL << 30));
}

static void summary(FILE *out, const weftx_topo *t, const char *host)
{
  const char *src = weftx_topo_source(t);
  char buf[1024], mem[32];
  int i;

  fprintf(out, "# weft-topo: %s (host %s)\n", weftx_topo_is_live(t) ? "this machine" : src, host);
  fprintf(out,
          "Machine: %d package%s, %d NUMA node%s, %d cores, %d processors, %d GPU%s, %d NIC%s\n",
          weftx_topo_npackages(t), weftx_topo_npackages(t) == 1 ? "" : "s", weftx_topo_nnuma(t),
          weftx_topo_nnuma(t) == 1 ? "" : "s", weftx_topo_ncores(t), weftx_topo_npus(t),
          weftx_topo_ngpus(t), weftx_topo_ngpus(t) == 1 ? "" : "s", weftx_topo_nnics(t),
          weftx_topo_nnics(t) == 1 ? "" : "s");
  fputs("\nNUMA  Package  Memory    Processors\n", out);
  for (i = 0; i < weftx_topo_nnuma(t); i++) {
    const weftx_numa *n = weftx_topo_numa(t, i);
    char pkg[16];
    cpus(n->cpuset, buf, sizeof(buf));
    bytes(n->memory, mem, sizeof(mem));
    numa_text(n->package, pkg, sizeof(pkg));
    fprintf(out, "%-4d  %-7s  %-8s  %s\n", n->os_index, pkg, mem, buf);
  }
  if (weftx_topo_ngpus(t) > 0) {
    fputs("\nGPU   PCI           NUMA  Memory    Model\n", out);
    for (i = 0; i < weftx_topo_ngpus(t); i++) {
      const weftx_gpu *g = weftx_topo_gpu(t, i);
      char numa[16];
      numa_text(g->numa, numa, sizeof(numa));
      bytes(g->memory, mem, sizeof(mem));
      fprintf(out, "GPU%-2d %-12s  %-4s  %-8s  %s\n", g->index, g->pci, numa, mem,
              g->model[0] ? g->model : "-");
    }
  }
  if (weftx_topo_nnics(t) > 0) {
    fputs("\nNIC   Name             PCI           NUMA  Speed       Kind\n", out);
    for (i = 0; i < weftx_topo_nnics(t); i++) {
      const weftx_nic *n = weftx_topo_nic(t, i);
      char numa[16], speed[32];
      numa_text(n->numa, numa, sizeof(numa));
      if (n->speed_mbps)
        snprintf(speed, sizeof(speed), "%llu Gb/s", n->speed_mbps / 1000);
      else
        snprintf(speed, sizeof(speed), "-");
      fprintf(out, "NIC%-2d %-15s  %-12s  %-4s  %-10s  %s%s%s\n", n->index,
              n->name[0] ? n->name : "-", n->pci[0] ? n->pci : "-", numa, speed,
              n->gvnic ? "gVNIC" : "NIC", n->rdma[0] ? " RDMA " : "", n->rdma);
    }
  }
}

/* The NICs nvidia-smi topo -m lists: those with an RDMA device (mlx5_0); a gVNIC has none. */
static int matrix_nics(const weftx_topo *t, int *nic)
{
  int n = 0;

  for (int i = 0; i < weftx_topo_nnics(t); i++)
    if (weftx_topo_nic(t, i)->rdma[0])
      nic[n++] = i;
  return n;
}

/* nvidia-smi's label between two devices: X, NV# (GPUs), or the PCI path. dev < ng: a GPU,
 * else the NIC nic[dev - ng]. */
static void link_label(const weftx_topo *t, int ng, const int *nic, int a, int b, char *buf,
                       size_t len)
{
  weftx_path p;
  int links;

  if (a == b) {
    snprintf(buf, len, "X");
    return;
  }
  if (a < ng && b < ng && (links = weftx_topo_gpu_nvlinks(t, a, b)) > 0) {
    snprintf(buf, len, "NV%d", links);
    return;
  }
  if (a < ng && b < ng)
    p = weftx_topo_gpu_gpu_path(t, a, b);
  else if (a < ng)
    p = weftx_topo_gpu_nic_path(t, a, nic[b - ng]);
  else if (b < ng)
    p = weftx_topo_gpu_nic_path(t, b, nic[a - ng]);
  else
    p = weftx_topo_nic_nic_path(t, nic[a - ng], nic[b - ng]);
  snprintf(buf, len, "%s", weftx_path_label(p));
}

/* One row of the matrix: device \p row (GPUs first, then the listed NICs) against all. */
static void matrix_row(FILE *out, const weftx_topo *t, int ng, const int *nic, int nn, int row)
{
  hwloc_const_cpuset_t set;
  char buf[1024], numa[16], label[16];

  if (row < ng)
    fprintf(out, "GPU%-3d", row);
  else
    fprintf(out, "NIC%-3d", row - ng);
  for (int col = 0; col < ng + nn; col++) {
    link_label(t, ng, nic, row, col, label, sizeof(label));
    fprintf(out, " %-5s", label);
  }
  if (row < ng) {
    set = weftx_topo_gpu(t, row)->cpuset;
    numa_text(weftx_topo_gpu(t, row)->numa, numa, sizeof(numa));
  } else {
    set = weftx_topo_nic(t, nic[row - ng])->cpuset;
    numa_text(weftx_topo_nic(t, nic[row - ng])->numa, numa, sizeof(numa));
  }
  cpus(set, buf, sizeof(buf));
  fprintf(out, " %-18s %s\n", buf, numa);
}

/* The matrix of nvidia-smi topo -m: GPUs and the NICs it lists, its labels. */
static void matrix(FILE *out, const weftx_topo *t)
{
  int ng = weftx_topo_ngpus(t), nn, i;
  int *nic = calloc((size_t)weftx_topo_nnics(t) + 1, sizeof(*nic));
  char name[16];

  if (!nic)
    return;
  nn = matrix_nics(t, nic);
  if (ng + nn == 0) {
    free(nic);
    return;
  }
  fputs("\nAffinity (as nvidia-smi topo -m):\n      ", out);
  for (i = 0; i < ng + nn; i++) {
    if (i < ng)
      snprintf(name, sizeof(name), "GPU%d", i);
    else
      snprintf(name, sizeof(name), "NIC%d", i - ng);
    fprintf(out, " %-5s", name);
  }
  fprintf(out, " %-18s %s\n", "CPU Affinity", "NUMA Affinity");
  for (i = 0; i < ng + nn; i++)
    matrix_row(out, t, ng, nic, nn, i);
  fputs("\nLegend:\n"
        "  X    = self\n"
        "  SYS  = through PCIe and the link between NUMA nodes (or the locality is unknown)\n"
        "  NODE = through PCIe and between PCIe host bridges of one NUMA node\n"
        "  PHB  = through PCIe and a PCIe host bridge\n"
        "  PXB  = through several PCIe bridges, no host bridge\n"
        "  PIX  = through at most one PCIe bridge (one PCIe switch)\n"
        "  NV#  = through # bonded NVLinks (through NVSwitch on A2, A3, A4)\n",
        out);
  if (nn > 0) {
    fputs("\nNIC Legend:\n", out);
    for (i = 0; i < nn; i++) {
      const weftx_nic *n = weftx_topo_nic(t, nic[i]);
      fprintf(out, "  NIC%d: %s%s%s%s\n", i, n->rdma, n->name[0] ? " (" : "", n->name,
              n->name[0] ? ")" : "");
    }
  }
  if (nn < weftx_topo_nnics(t))
    fprintf(out,
            "\nNICs without an RDMA device (gVNIC, virtio-net) are left out, as nvidia-smi leaves "
            "them out; the NIC table above lists every NIC.\n");
  free(nic);
}

struct warn_to {
  FILE *out;
  const char *prefix;
  int blank; /* a blank line before the first one */
};

static void warn_line(void *arg, const char *msg)
{
  struct warn_to *w = arg;

  if (w->blank) {
    fputc('\n', w->out);
    w->blank = 0;
  }
  fprintf(w->out, "%swarning: %s\n", w->prefix, msg);
}

/* The topology's warnings, then Google Cloud's advice where it applies (weftx_gcp_topo_check). */
static void warnings(FILE *out, const weftx_topo *t, const char *prefix, int blank)
{
  struct warn_to w = {out, prefix, blank};

  for (int i = 0; i < weftx_topo_nwarnings(t); i++)
    warn_line(&w, weftx_topo_warning(t, i));
  weftx_gcp_topo_check(t, warn_line, &w);
}

int topo_report(FILE *out, const weftx_topo *t, const char *host)
{
  summary(out, t, host);
  matrix(out, t);
  warnings(out, t, "", 1);
  return TOPO_EXIT_OK;
}

static int policy_of(const struct topo_opts *o, weftx_policy *p)
{
  char why[256];
  int rc;

  memset(p, 0, sizeof(*p));
  p->oversubscribe = o->oversubscribe;
  p->use_hwthreads = o->hwthreads;
  p->reserved_cpus = o->reserved;
  rc = weftx_policy_parse(p, o->map_by, o->bind_to, why, sizeof(why));
  if (rc != 0) {
    fprintf(stderr, "weft-topo: %s\n", why);
    return TOPO_EXIT_USAGE;
  }
  if (o->pe > 0) {
    if (p->pe > 0 && p->pe != o->pe) {
      fprintf(stderr, "weft-topo: --pe %ld and --map-by %s disagree; give the count once\n", o->pe,
              o->map_by);
      return TOPO_EXIT_USAGE;
    }
    p->pe = (int)o->pe;
  }
  return 0;
}

static void table(FILE *out, const weftx_topo *t, const weftx_plan *plan, const char *how,
                  const struct topo_preset *pr)
{
  char *list = NULL;
  int i;

  fprintf(out, "# %d rank%s on %s: %s\n", plan->np, plan->np == 1 ? "" : "s", plan->hosts[0].name,
          how);
  topo_preset_line(out, pr, "# ");
  fprintf(out, "%-5s %-5s %-12s  %-5s %-4s %-16s %s\n", "Rank", "GPU", "PCI", "Cores", "NUMA",
          "NIC", "Processors");
  for (i = 0; i < plan->np; i++) {
    const weftx_place *pl = &plan->ranks[i].place;
    char gpu[16] = "-", numa[64] = "-";
    const char *pci = "-", *nic = "-";
    if (pl->gpu >= 0) {
      snprintf(gpu, sizeof(gpu), "%d", pl->gpu);
      pci = weftx_topo_gpu(t, pl->gpu)->pci;
    }
    if (pl->nic >= 0) {
      const weftx_nic *n = weftx_topo_nic(t, pl->nic);
      nic = n->name[0] ? n->name : n->pci;
    }
    if (!hwloc_bitmap_iszero(pl->nodeset) && hwloc_bitmap_list_asprintf(&list, pl->nodeset) >= 0) {
      snprintf(numa, sizeof(numa), "%s", list);
      free(list);
      list = NULL;
    }
    if (hwloc_bitmap_list_asprintf(&list, pl->cpuset) < 0)
      list = NULL;
    fprintf(out, "%-5d %-5s %-12s  %-5d %-4s %-16s %s%s\n", i, gpu, pci, pl->ncores, numa, nic,
            list ? list : "?", pl->bound ? "" : " (not bound)");
    free(list);
    list = NULL;
  }
}

/* Each distinct note once, in rank order. */
static void notes(FILE *out, const weftx_plan *plan, const char *prefix)
{
  int i, j;

  for (i = 0; i < plan->np; i++) {
    const char *n = plan->ranks[i].place.note;
    if (!n[0])
      continue;
    for (j = 0; j < i; j++)
      if (strcmp(plan->ranks[j].place.note, n) == 0)
        break;
    if (j == i)
      fprintf(out, "%snote: %s\n", prefix, n);
  }
}

int topo_place(FILE *out, const weftx_topo *t, const char *host, const struct topo_opts *o)
{
  weftx_policy p;
  struct topo_preset pr;
  weftx_host_map m;
  weftx_plan_host h;
  weftx_plan plan;
  weftx_plan_rank *ranks;
  const char *src = weftx_topo_source(t), *slash;
  char why[600];
  int i, rc, status = TOPO_EXIT_OK;

  rc = topo_preset(t, o, &pr);
  if (rc != 0)
    return rc;
  rc = policy_of(o, &p);
  if (rc != 0) {
    topo_preset_clear(&pr);
    return rc;
  }
  /* weftrun reserves the preset's cores for ranks next to GPUs only: Open MPI's CPU
   * layouts have no reserved cores; --reserved-cpus wins */
  if (!o->reserved && pr.reserved && p.map_by != WEFTX_MAP_CPU && weftx_topo_ngpus(t) > 0)
    p.reserved_cpus = pr.reserved;
  else
    topo_preset_clear(&pr);
  /* every rank of the host at once: a CPU layout binds them together */
  rc = weftx_map_host(t, &p, (int)o->np, &m, why, sizeof(why));
  if (rc != 0) {
    fprintf(stderr, "weft-topo: %s\n", why[0] ? why : weft_strerror(rc));
    topo_preset_clear(&pr);
    return rc == WEFT_ENOMEM                        ? TOPO_EXIT_INTERNAL
           : rc == WEFT_ENOFIT || rc == WEFT_ENOGPU ? TOPO_EXIT_NOFIT
                                                    : TOPO_EXIT_USAGE;
  }
  ranks = calloc((size_t)m.n, sizeof(*ranks));
  if (!ranks) {
    fprintf(stderr, "weft-topo: out of memory for %d ranks\n", m.n);
    weftx_host_map_clear(&m);
    topo_preset_clear(&pr);
    return TOPO_EXIT_INTERNAL;
  }
  for (i = 0; i < m.n; i++) {
    ranks[i].rank = i;
    ranks[i].local_rank = i;
    ranks[i].place = m.place[i];
  }
  slash = src ? strrchr(src, '/') : NULL;
  memset(&h, 0, sizeof(h));
  h.name = host;
  h.slots = m.slots;
  h.topo = t;
  h.topology = weftx_topo_is_live(t) ? NULL : slash ? slash + 1 : src;
  memset(&plan, 0, sizeof(plan));
  plan.np = m.n;
  plan.nhosts = 1;
  plan.hosts = &h;
  plan.ranks = ranks;
  if (o->json) {
    warnings(stderr, t, "weft-topo: ", 0);
    topo_preset_line(stderr, &pr, "weft-topo: ");
    notes(stderr, &plan, "weft-topo: ");
    if (weftx_plan_write_json(out, &plan) != 0)
      status = TOPO_EXIT_INTERNAL;
  } else {
    table(out, t, &plan, m.how, &pr);
    notes(out, &plan, "");
    warnings(out, t, "", 0);
  }
  free(ranks);
  weftx_host_map_clear(&m);
  topo_preset_clear(&pr);
  return status;
}
