/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's side of the rank's call page (weftx/page.h): a shared memory
 * file the rank's libweft maps through WEFT_RANK_PAGE, read here with the
 * page's sequence lock and copied into heartbeats and the EXITED message.
 */
#define _GNU_SOURCE /* memfd_create */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "weft-rank.h"

struct wk_page {
  int fd;
  weftx_page *p;
};

int wk_page_create(wk_page **out, char *why, size_t len)
{
  wk_page *g = calloc(1, sizeof(*g));
  char path[64];
  *out = NULL;
  if (!g) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  g->fd = memfd_create("weft-rank-page", MFD_CLOEXEC);
  if (g->fd < 0 || ftruncate(g->fd, WEFTX_PAGE_SIZE) ||
      (g->p = mmap(NULL, WEFTX_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0)) ==
        MAP_FAILED) {
    snprintf(why, len, "cannot make the rank's call page: %s", strerror(errno));
    if (g->fd >= 0)
      close(g->fd);
    free(g);
    return -1;
  }
  g->p->magic = WEFTX_PAGE_MAGIC;
  g->p->version = WEFTX_PAGE_VERSION;
  g->p->world_rank = -1;
  snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)getpid(), g->fd);
  if (setenv(WEFTX_PAGE_ENV, path, 1)) {
    snprintf(why, len, "cannot set %s: %s", WEFTX_PAGE_ENV, strerror(errno));
    wk_page_destroy(g);
    return -1;
  }
  *out = g;
  return 0;
}

void wk_page_destroy(wk_page *g)
{
  if (!g)
    return;
  munmap(g->p, WEFTX_PAGE_SIZE);
  close(g->fd);
  free(g);
}

int wk_page_read(const wk_page *g, weftx_page *copy)
{
  if (!g)
    return -1;
  /* a writer that died between its two increments leaves seq odd: then take
   * what is there after a few tries */
  for (int tries = 0; tries < 100; tries++) {
    uint32_t a = __atomic_load_n(&g->p->seq, __ATOMIC_ACQUIRE);
    memcpy(copy, g->p, sizeof(*copy));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint32_t b = __atomic_load_n(&g->p->seq, __ATOMIC_RELAXED);
    if (a == b && !(a & 1))
      break;
  }
  copy->group[sizeof(copy->group) - 1] = '\0';
  copy->why[sizeof(copy->why) - 1] = '\0';
  copy->members[sizeof(copy->members) - 1] = '\0';
  return copy->magic == WEFTX_PAGE_MAGIC && copy->version == WEFTX_PAGE_VERSION ? 0 : -1;
}

void wk_page_put(wt_ctl_out *m, const weftx_page *p, double now)
{
  (void)now;
  if (!p)
    return;
  wt_ctl_put_int(m, WT_CTL_T_WSTATE, p->state);
  wt_ctl_put_int(m, WT_CTL_T_CALLS, (int64_t)p->calls);
  if (p->state == WEFTX_PAGE_NONE)
    return;
  wt_ctl_put_int(m, WT_CTL_T_OP, p->op);
  if (p->since_ns > 0)
    wt_ctl_put_int(m, WT_CTL_T_IN_MS, (weftx_monotonic_ns() - p->since_ns) / 1000000);
  if (p->op != WEFTX_OP_NONE && p->group[0]) {
    wt_ctl_put_str(m, WT_CTL_T_GROUP, p->group);
    wt_ctl_put_int(m, WT_CTL_T_GROUP_FIRST, p->group_first);
    wt_ctl_put_int(m, WT_CTL_T_GROUP_SIZE, p->group_size);
    wt_ctl_put_int(m, WT_CTL_T_BYTES, (int64_t)p->bytes);
  }
  if (p->state == WEFTX_PAGE_DEADLINE) {
    wt_ctl_put_str(m, WT_CTL_T_WHY, p->why);
    wt_ctl_put_str(m, WT_CTL_T_MEMBERS, p->members);
  }
}
