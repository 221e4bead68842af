/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A mesh group's NCCL communicator split from the world's (ncclCommSplit,
 * NCCL 2.18 and later), when the world has one; otherwise the group's comes
 * up at its first device call (nccl-comm.c).
 */
#include "nccl-private.h"

#include <sched.h>

/* Wait (bounded) until the world's calls queued so far have run. */
static int world_drained(weft_ctx *ctx)
{
  double end = weftx_monotonic() + ctx->init_timeout;

  if (!ctx->world->nccl)
    return 1;
  return weft__nc_poll(ctx->world, "ncclCommSplit", end) == 0;
}

/* ncclCommSplit of the world's communicator for g. NCCL 2.28 (init.cc
 * ncclCommInitChildComm, group.cc ncclAsyncLaunch/ncclGroupEndInternal):
 * on a non-blocking parent the call returns ncclInProgress with the child's
 * handle still NULL; the split runs in NCCL's own thread, which writes the
 * handle when it is done, and until then the PARENT says ncclInProgress (a
 * call on it fails with ncclInvalidArgument); a failed split leaves its
 * error on the parent. So the handle's address must outlive this call (it
 * is ns->child), the parent is waited for, then the handle (PyTorch's
 * NCCLComm::split does the same; NVIDIA/nccl issue 1472). 1 when g has its
 * communicator; 0 when it was not split (it comes up at its first use); a
 * failure that spoils the world's communicator fails the world too. */
static int split(weft_group *g, struct weft__ncgroup *ns, int color, int key)
{
  weft_ctx *ctx = g->ctx;
  weft_group *w = ctx->world;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclComm_t parent = (ncclComm_t)ctx->nccl_world, child;
  ncclResult_t st, ps;
  double end = weftx_monotonic() + ctx->init_timeout;
  char why[300];

  cfg.blocking = 0;
  cfg.commName = g->name;
  __atomic_store_n(&ns->child, NULL, __ATOMIC_RELEASE);
  weft__fl_blocking_enter(g, "ncclCommSplit", ctx->init_timeout);
  st = ncclCommSplit(parent, color, key, &ns->child, &cfg);
  weft__fl_blocking_exit();
  /* The parent first: the split is done when it settles. */
  ps = st == ncclSuccess || st == ncclInProgress ? weft__nc_wait_comm(parent, ncclInProgress, end)
                                                 : st;
  if (ps == ncclInProgress) {
    /* Still running: the parent cannot be used, and NCCL's thread would
     * write ns->child later; aborting the parent joins that thread. */
    weft__snprintf(why, sizeof(why),
                   "ncclCommSplit for group %s did not finish within %gs "
                   "(WEFT_INIT_TIMEOUT); a rank did not come to weft_mesh_group",
                   g->name, ctx->init_timeout);
    weft__nc_abort(w, WEFT_ETIMEDOUT, 1, why);
    return weft__rt_fail(ctx, WEFT_ETIMEDOUT, "%s", why);
  }
  if (ps != ncclSuccess) {
    weft__snprintf(why, sizeof(why),
                   "ncclCommSplit for group %s failed: %s (NCCL's last "
                   "message in this process: %s)",
                   g->name, ncclGetErrorString(ps), ncclGetLastError(NULL));
    weft__nc_abort(w, WEFT_ENCCL, 1, why);
    child = __atomic_exchange_n(&ns->child, NULL, __ATOMIC_ACQ_REL);
    if (child)
      ncclCommAbort(child);
    return weft__rt_fail(ctx, WEFT_ENCCL, "%s", why);
  }
  /* Then the child: written before the parent settled, but waited for
   * (bounded) in case a later NCCL orders it otherwise. */
  while (!(child = __atomic_load_n(&ns->child, __ATOMIC_ACQUIRE)) && weftx_monotonic() < end)
    sched_yield();
  st = child ? weft__nc_wait_comm(child, ncclInProgress, end) : ncclInProgress;
  if (st == ncclSuccess && weft__nc_async_error(child) == ncclSuccess) {
    __atomic_store_n(&ns->child, NULL, __ATOMIC_RELEASE);
    ns->comm = child;
    return 1;
  }
  __atomic_store_n(&ns->child, NULL, __ATOMIC_RELEASE);
  if (child)
    ncclCommAbort(child);
  WEFT__LOG(RT, "group %s: the split's communicator %s", g->name,
            child ? ncclGetErrorString(st) : "never came");
  return 0;
}

int weft__nccl_split(weft_group *g, int color, int key)
{
  weft_ctx *ctx = g->ctx;
  struct weft__ncgroup *ns;
  void *saved;
  int ok, all = 0, mine = 0, rc;

  if (!ctx->nccl_world || !weft__nccl.CommSplit)
    return 0;
  /* Every rank splits or none: first the world's queued calls must be done
   * (NCCL: a split with outstanding operations may deadlock). */
  ok = world_drained(ctx) && weft__nc_usable(ctx->world, ctx->nccl_world, "ncclCommSplit") == 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->world->comm) != MPI_SUCCESS || !all) {
    WEFT__LOG(RT,
              "group %s: the world's NCCL calls did not drain in time; NCCL comes up at "
              "first use",
              g->name);
    return 0;
  }
  if (!(ns = weft__nc_state(g)))
    return weft__rt_fail(ctx, WEFT_ENOMEM, "group %s: out of memory", g->name);
  if ((rc = weft__nc_device(ctx, &saved)) != 0)
    return rc;
  mine = split(g, ns, color, key);
  weft__nc_device_put_back(saved);
  if (mine < 0)
    mine = 0;
  /* All or none: a group whose members disagree would hang at its first
   * collective; without a split, the communicator comes up lazily. */
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, g->comm) != MPI_SUCCESS)
    all = 0;
  if (!all && ns->comm) {
    ncclCommAbort(ns->comm);
    ns->comm = NULL;
  }
  if (!all) {
    WEFT__LOG(RT, "group %s: not split on every member; NCCL comes up at first use", g->name);
    return 0;
  }
  WEFT__LOG(RT, "group %s: NCCL communicator split from the world's", g->name);
  return 0;
}
