/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hierarchical all-reduce for groups that span several hosts: reduce-scatter
 * among the group's ranks on one host, all-reduce of each block across hosts
 * (one communicator per local index), all-gather on the host. The bytes each
 * host sends are those of a flat ring, but the inter-host stage has N, not
 * p, participants and host-local stages run over shared memory.
 *
 * The rule (WEFT_ALLREDUCE=auto): hierarchical when the group spans more
 * than one host, has more than one of its ranks on each host, the same
 * number on every host, and the message is at least WEFT_HIER_THRESHOLD bytes
 * (1 MiB). WEFT_ALLREDUCE=hier drops the size condition; =flat never uses it.
 * The decision depends only on data every rank has (host of each rank,
 * count, type), so all ranks take the same branch without talking.
 */
#include "rt_private.h"
#include "shm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Look at the group's hosts (pure), and build the communicators. */
static int setup(weft_group *g)
{
  weft_ctx *ctx = g->ctx;
  int *per_host, i, hosts = 0, mine = 0, first = -1, uniform = 1, rc;

  g->hier_state = -1;
  per_host = calloc((size_t)ctx->node_count, sizeof(int));
  if (!per_host)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "hierarchical all-reduce: out of memory");
  for (i = 0; i < g->size; i++)
    if (per_host[ctx->node_of[g->world_ranks[i]]]++ == 0)
      hosts++;
  for (i = 0; i < ctx->node_count; i++) {
    if (!per_host[i])
      continue;
    if (first < 0)
      first = per_host[i];
    else if (per_host[i] != first)
      uniform = 0;
  }
  mine = per_host[ctx->node_of[ctx->rank]];
  free(per_host);
  if (hosts < 2 || mine < 2 || !uniform) {
    WEFT__LOG(RT, "group %s: %d host(s), %d rank(s) here%s: flat all-reduce", g->name, hosts, mine,
              uniform ? "" : ", uneven");
    return 0;
  }
  rc = MPI_Comm_split(g->comm, ctx->node_of[ctx->rank], g->rank, &g->intra);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_rank(g->intra, &g->intra_rank);
    MPI_Comm_size(g->intra, &g->intra_size);
    rc = MPI_Comm_split(g->comm, g->intra_rank, g->rank, &g->inter);
  }
  if (rc != MPI_SUCCESS)
    return weft__rt_fail(ctx, WEFT_EMPI, "group %s: building host communicators failed", g->name);
  g->nhosts = hosts;
  g->hier_counts = calloc((size_t)g->intra_size, sizeof(int));
  g->hier_displs = calloc((size_t)g->intra_size, sizeof(int));
  if (!g->hier_counts || !g->hier_displs)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "hierarchical all-reduce: out of memory");
  g->hier_state = 1;
  WEFT__LOG(RT, "group %s: %d hosts x %d ranks: hierarchical all-reduce available", g->name, hosts,
            g->intra_size);
  return 0;
}

int weft__hier_wanted(weft_group *g, size_t n, weft_dtype dt)
{
  weft_ctx *ctx = g->ctx;

  if (ctx->ar_algo == WEFT__AR_FLAT || n > INT_MAX)
    return 0;
  if (ctx->ar_algo == WEFT__AR_AUTO && n * weft_dtype_size(dt) < ctx->hier_threshold)
    return 0;
  if (g->hier_state == 0 && setup(g) != 0)
    return 0;
  return g->hier_state == 1;
}

static int step(weft_group *g, int rc, MPI_Request *req, const char *what)
{
  char buf[MPI_MAX_ERROR_STRING];

  if (rc != MPI_SUCCESS)
    return weft__rt_fail(g->ctx, WEFT_EMPI, "hierarchical all-reduce on group %s: %s: %s", g->name,
                         what, weft__mpi_strerror(rc, buf, sizeof(buf)));
  if (req)
    return weft__wait(g, req, what, -1);
  return 0;
}

int weft__hier_allreduce(weft_group *g, const void *s, void *r, size_t n, weft_dtype dt, weft_op op)
{
  size_t es = weft_dtype_size(dt);
  int L = g->intra_size, me = g->intra_rank, i, rc, off = 0;
  int dl = g->ctx->coll_timeout > 0;
  MPI_Request req, *rq = dl ? &req : NULL;
  MPI_Datatype t;
  MPI_Op o;
  char *block;

  /* The host stages through shared memory when the host allows it. */
  if ((rc = weft__shm_hier_allreduce(g, s, r, n, dt, op)) != WEFT__SHM_DECLINED)
    return rc;
  if ((rc = weft__mpi_type_op(dt, op, &t, &o)) != 0)
    return weft__rt_fail(g->ctx, rc, "allreduce: no MPI form for %s", weft_dtype_name(dt));
  for (i = 0; i < L; i++) {
    g->hier_counts[i] = (int)(n / (size_t)L) + (i < (int)(n % (size_t)L));
    g->hier_displs[i] = off;
    off += g->hier_counts[i];
  }
  block = (char *)r + (size_t)g->hier_displs[me] * es;

  /* 1. Reduce-scatter on the host. In place, MPI leaves our block at the
   * start of r; move it to its place. */
  if (s == r) {
    rc = dl ? MPI_Ireduce_scatter(MPI_IN_PLACE, r, g->hier_counts, t, o, g->intra, rq)
            : MPI_Reduce_scatter(MPI_IN_PLACE, r, g->hier_counts, t, o, g->intra);
    if ((rc = step(g, rc, rq, "reduce-scatter on the host")) != 0)
      return rc;
    memmove(block, r, (size_t)g->hier_counts[me] * es);
  } else {
    rc = dl ? MPI_Ireduce_scatter(s, block, g->hier_counts, t, o, g->intra, rq)
            : MPI_Reduce_scatter(s, block, g->hier_counts, t, o, g->intra);
    if ((rc = step(g, rc, rq, "reduce-scatter on the host")) != 0)
      return rc;
  }
  /* 2. All-reduce of our block with the same block on the other hosts. */
  if (g->hier_counts[me] > 0) {
    rc = dl ? MPI_Iallreduce(MPI_IN_PLACE, block, g->hier_counts[me], t, o, g->inter, rq)
            : MPI_Allreduce(MPI_IN_PLACE, block, g->hier_counts[me], t, o, g->inter);
    if ((rc = step(g, rc, rq, "all-reduce across hosts")) != 0)
      return rc;
  }
  /* 3. All-gather on the host. */
  rc = dl ? MPI_Iallgatherv(MPI_IN_PLACE, 0, t, r, g->hier_counts, g->hier_displs, t, g->intra, rq)
          : MPI_Allgatherv(MPI_IN_PLACE, 0, t, r, g->hier_counts, g->hier_displs, t, g->intra);
  return step(g, rc, rq, "all-gather on the host");
}
