/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --map-by gpu (and ppr:N:gpu): one rank per GPU, or N.
 *
 * With fewer ranks than GPUs the GPUs are chosen spread out: each next GPU
 * is the one whose package, then NUMA node, then PCI switch holds the fewest
 * chosen ones so far (lowest index on ties), so 2 ranks on a 2-socket box get
 * one GPU per socket and 4 ranks one GPU per PCI switch. Ranks take the chosen
 * GPUs in index order. The cores of a GPU's NUMA node are shared out evenly
 * between the ranks whose GPUs sit on that node, in GPU order; pe=N asks for
 * N each. Without PCI locality the whole machine is the locality, and the note
 * says so. When the policy names the GPUs ranks may have (those a Slurm job was
 * given), only those are counted and chosen, by the same rules.
 */
#include "weft_private.h"
#include "map_private.h"

#include <stdlib.h>
#include <string.h>

/* Choose \p m of the \p g GPUs \p gpus (indices, ascending), spread out, into \p sel
 * in index order. */
static void spread(const weftx_topo *t, const int *gpus, int g, int m, int *sel)
{
  char *taken = calloc((size_t)g, 1);
  int i, k, n = 0;

  if (!taken) {
    /* Out of memory here only costs the spreading: take the first m. */
    for (i = 0; i < m; i++)
      sel[i] = gpus[i];
    return;
  }
  for (k = 0; k < m; k++) {
    int best = -1, bp = 0, bn = 0, bs = 0;
    for (i = 0; i < g; i++) {
      const weftx_gpu *a = weftx_topo_gpu(t, gpus[i]);
      int cp = 0, cn = 0, cs = 0, j;
      if (taken[i])
        continue;
      for (j = 0; j < g; j++) {
        const weftx_gpu *b = weftx_topo_gpu(t, gpus[j]);
        if (!taken[j])
          continue;
        cp += a->package == b->package;
        cn += a->numa == b->numa;
        cs += a->pci_switch >= 0 && a->pci_switch == b->pci_switch;
      }
      if (best < 0 || cp < bp || (cp == bp && (cn < bn || (cn == bn && cs < bs)))) {
        best = i;
        bp = cp;
        bn = cn;
        bs = cs;
      }
    }
    taken[best] = 1;
  }
  for (i = 0; i < g; i++)
    if (taken[i])
      sel[n++] = gpus[i];
  free(taken);
}

/* The processors local to GPU \p g: its NUMA node's (within the GPU's own
 * cpuset when they meet), or the whole machine without locality. */
static void gpu_local(const weft__mapctx *c, const weftx_gpu *g, hwloc_bitmap_t out)
{
  int i;

  hwloc_bitmap_copy(out, weftx_topo_cpuset(c->t));
  if (!weftx_topo_has_locality(c->t) || g->numa < 0) {
    hwloc_bitmap_and(out, out, c->avail);
    return;
  }
  for (i = 0; i < weftx_topo_nnuma(c->t); i++) {
    const weftx_numa *nu = weftx_topo_numa(c->t, i);
    if (nu->os_index == g->numa) {
      hwloc_bitmap_copy(out, nu->cpuset);
      if (g->cpuset && hwloc_bitmap_intersects(out, g->cpuset))
        hwloc_bitmap_and(out, out, g->cpuset);
      break;
    }
  }
  hwloc_bitmap_and(out, out, c->avail);
}

/* Locality key of a GPU: its NUMA node, or -1 for the whole machine. */
static int gpu_key(const weft__mapctx *c, int gpu)
{
  const weftx_gpu *g = weftx_topo_gpu(c->t, gpu);

  return weftx_topo_has_locality(c->t) && g->numa >= 0 ? g->numa : -1;
}

static void append(char *buf, size_t len, const char *sep, const char *text)
{
  size_t used = strlen(buf);

  if (used + 1 < len)
    weft__snprintf(buf + used, len - used, "%s%s", used ? sep : "", text);
}

int weft__map_gpu(weft__mapctx *c, int r, int n, weftx_place *out)
{
  const weftx_policy *p = c->p;
  int g = c->ngpus, per = p->ppr_n > 0 ? p->ppr_n : 1;
  int slots, m, *sel, gi, key, share = 0, pos = 0, i, q, cycle, nunits = 0, rc = 0;
  hwloc_bitmap_t local = NULL;
  hwloc_obj_t *units = NULL;
  const weftx_gpu *gpu;
  char text[160], only[96] = "";

  /* " the ranks may use (GPUs 3-4 of 8)" when the policy names the GPUs */
  if (p->gpus)
    weft__snprintf(only, sizeof(only), " the ranks may use (GPUs %s of %d)",
                   *p->gpus ? p->gpus : "none", weftx_topo_ngpus(c->t));
  if (g <= 0) {
    weft__snprintf(c->why, c->whylen, "--map-by gpu but %s has no GPUs%s; use --map-by core",
                   c->label, only);
    return WEFT_ENOGPU;
  }
  slots = g * per;
  if (n > slots && !p->oversubscribe) {
    if (per == 1)
      weft__snprintf(
        c->why, c->whylen,
        "%d ranks but %s has %d GPU%s%s; use -np %d or fewer, --map-by core, or --oversubscribe", n,
        c->label, g, g == 1 ? "" : "s", only, g);
    else
      weft__snprintf(c->why, c->whylen,
                     "%d ranks but ppr:%d:gpu on %s has %d slots (%d GPUs%s); use -np %d or fewer, "
                     "or --oversubscribe",
                     n, per, c->label, slots, g, only, slots);
    return WEFT_ENOFIT;
  }
  m = (n + per - 1) / per;
  if (m > g)
    m = g;
  sel = calloc((size_t)m, sizeof(*sel));
  if (!sel)
    return WEFT_ENOMEM;
  spread(c->t, c->gpus, g, m, sel);
  /* Rank r's GPU: ranks beyond the slots wrap around (oversubscribe only). */
  gi = (r % (m * per)) / per;
  out->gpu = sel[gi];
  gpu = weftx_topo_gpu(c->t, out->gpu);
  key = gpu_key(c, out->gpu);
  /* The ranks sharing this locality, in (GPU, rank) order; r is number pos.
   * Ranks come in rounds of m * per (one round unless oversubscribing). */
  cycle = m * per;
  for (i = 0; i < m; i++) {
    int rest = n % cycle - i * per, cnt = (n / cycle) * per;
    cnt += rest <= 0 ? 0 : rest < per ? rest : per;
    if (gpu_key(c, sel[i]) != key)
      continue;
    share += cnt;
    if (i < gi)
      pos += cnt;
  }
  pos += (r / cycle) * per + (r % cycle) % per;
  out->nic = weft__nic_for_gpus(c->t, sel, m, gi);
  free(sel);

  local = hwloc_bitmap_alloc();
  if (!local)
    return WEFT_ENOMEM;
  gpu_local(c, gpu, local);
  rc = weft__units(c, local, &units, &nunits);
  if (rc != 0)
    goto out;
  if (nunits == 0) {
    weft__snprintf(c->why, c->whylen,
                   "GPU %d (%s) of %s has no free processor near it; "
                   "reserve fewer processors or use --bind-to none",
                   gpu->index, gpu->pci, c->label);
    rc = WEFT_ENOFIT;
    goto out;
  }
  if (p->pe > nunits) {
    weft__snprintf(c->why, c->whylen, "pe=%d but GPU %d of %s has %d %s near it; use pe=%d or less",
                   p->pe, gpu->index, c->label, nunits, p->use_hwthreads ? "processors" : "cores",
                   nunits);
    rc = WEFT_ENOFIT;
    goto out;
  }
  q = p->pe > 0 ? p->pe : nunits / share;
  if (((long)q * share > nunits || q == 0) && !p->oversubscribe) {
    char where[96];
    const char *what = p->use_hwthreads ? "processors" : "cores";
    if (key >= 0)
      weft__snprintf(where, sizeof(where), "NUMA node %d of %s", key, c->label);
    else
      weft__snprintf(where, sizeof(where), "%s", c->label);
    if (p->pe > 0)
      weft__snprintf(c->why, c->whylen,
                     "%d ranks with pe=%d need %d %s, but %s has %d; "
                     "use fewer ranks or a smaller pe, or --oversubscribe",
                     share, p->pe, share * p->pe, what, where, nunits);
    else
      weft__snprintf(c->why, c->whylen,
                     "%d ranks share the %d %s of %s; use fewer ranks, "
                     "or --oversubscribe",
                     share, nunits, what, where);
    rc = WEFT_ENOFIT;
    goto out;
  }
  if (q == 0)
    q = 1;
  if (c->bind == WEFTX_BIND_NUMA || c->bind == WEFTX_BIND_PACKAGE) {
    if (c->bind == WEFTX_BIND_NUMA && key >= 0)
      hwloc_bitmap_copy(out->cpuset, local);
    else {
      hwloc_bitmap_t first = hwloc_bitmap_alloc();
      if (!first) {
        rc = WEFT_ENOMEM;
        goto out;
      }
      weft__units_add(c, units, nunits, pos * q, 1, first);
      rc = weft__enclosing(c, c->bind == WEFTX_BIND_NUMA ? HWLOC_OBJ_NUMANODE : HWLOC_OBJ_PACKAGE,
                           first, out->cpuset);
      hwloc_bitmap_free(first);
      if (rc != 0)
        goto out;
    }
  } else
    weft__units_add(c, units, nunits, pos * q, q, out->cpuset);
  if (key >= 0 && c->bind != WEFTX_BIND_PACKAGE)
    hwloc_bitmap_only(out->nodeset, (unsigned)key);
  else
    weft__nodes_of(c, out->cpuset, out->nodeset);

  if (!weftx_topo_has_locality(c->t))
    append(out->note, sizeof(out->note), "; ",
           "PCI devices carry no NUMA locality: the cores of the whole machine are split evenly "
           "between the ranks");
  if (n > slots) {
    weft__snprintf(text, sizeof(text),
                   "oversubscribed: %d ranks on %d GPU slots, GPUs are shared round-robin", n,
                   slots);
    append(out->note, sizeof(out->note), "; ", text);
  }
  if ((long)q * share > nunits) {
    weft__snprintf(text, sizeof(text),
                   "oversubscribed: %d ranks x %d on %d %s, cores are shared round-robin", share, q,
                   nunits, p->use_hwthreads ? "processors" : "cores");
    append(out->note, sizeof(out->note), "; ", text);
  }
out:
  free(units);
  hwloc_bitmap_free(local);
  return rc;
}
