/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Groups: one MPI communicator of our own (and, lazily, an NCCL one), the
 * map from group rank to world rank, and the bookkeeping that deadlines and
 * the hierarchical all-reduce need.
 */
#include "rt_private.h"
#include "shm.h"

#include <stdlib.h>
#include <string.h>

int weft__group_new(weft_ctx *ctx, MPI_Comm comm, const char *name, weft_group **out)
{
  weft_group *g;
  MPI_Group mine, world;
  int *ranks = NULL, i, rc;

  *out = NULL;
  g = calloc(1, sizeof(*g));
  if (!g) {
    MPI_Comm_free(&comm);
    return weft__rt_fail(ctx, WEFT_ENOMEM, "out of memory for group %s", name);
  }
  g->ctx = ctx;
  g->comm = comm;
  g->arrive = MPI_COMM_NULL;
  g->intra = g->inter = MPI_COMM_NULL;
  weft__snprintf(g->name, sizeof(g->name), "%s", name);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &g->rank);
  MPI_Comm_size(comm, &g->size);
  g->world_ranks = calloc((size_t)g->size, sizeof(int));
  ranks = calloc((size_t)g->size, sizeof(int));
  if (!g->world_ranks || !ranks) {
    free(ranks);
    weft__group_free(g);
    return weft__rt_fail(ctx, WEFT_ENOMEM, "out of memory for group %s", name);
  }
  for (i = 0; i < g->size; i++)
    ranks[i] = i;
  rc = MPI_Comm_group(comm, &mine);
  if (rc == MPI_SUCCESS) {
    rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Group_translate_ranks(mine, g->size, ranks, world, g->world_ranks);
      MPI_Group_free(&world);
    }
    MPI_Group_free(&mine);
  }
  free(ranks);
  if (rc != MPI_SUCCESS) {
    weft__group_free(g);
    return weft__rt_fail(ctx, WEFT_EMPI, "group %s: translating ranks failed", name);
  }
  if (ctx->coll_timeout > 0) {
    /* Arrival tokens travel on their own communicator, so that they never
     * match the collectives' traffic. */
    g->arrived = calloc((size_t)g->size, sizeof(*g->arrived));
    if (!g->arrived || MPI_Comm_dup(comm, &g->arrive) != MPI_SUCCESS) {
      weft__group_free(g);
      return weft__rt_fail(ctx, WEFT_EMPI, "group %s: no side channel for deadlines", name);
    }
  }
  *out = g;
  return 0;
}

void weft__group_free(weft_group *g)
{
  int fin = 0;

  if (!g)
    return;
  weft__nccl_group_free(g);
  weft__shm_free(g->shm);
  weft__shm_free(g->intra_shm);
  /* After MPI_Finalize (the program's, before weft_finalize) only memory
   * is left to free. */
  MPI_Finalized(&fin);
  if (fin)
    g->comm = g->arrive = g->intra = g->inter = MPI_COMM_NULL;
  if (g->comm != MPI_COMM_NULL)
    MPI_Comm_free(&g->comm);
  if (g->arrive != MPI_COMM_NULL)
    MPI_Comm_free(&g->arrive);
  if (g->intra != MPI_COMM_NULL)
    MPI_Comm_free(&g->intra);
  if (g->inter != MPI_COMM_NULL)
    MPI_Comm_free(&g->inter);
  free(g->hier_counts);
  free(g->hier_displs);
  free(g->arrived);
  free(g->p2p);
  free(g->scratch);
  free(g->world_ranks);
  free(g);
}

void *weft__scratch(weft_group *g, size_t bytes, const char *fn)
{
  void *p;

  if (bytes <= g->scratch_size)
    return g->scratch;
  p = realloc(g->scratch, bytes);
  if (!p) {
    weft__rt_fail(g->ctx, WEFT_ENOMEM,
                  "%s on group %s: out of memory for %zu bytes of "
                  "bookkeeping",
                  fn, g->name, bytes);
    return NULL;
  }
  g->scratch = p;
  g->scratch_size = bytes;
  return p;
}

int weft_group_rank(const weft_group *g) { return g ? g->rank : WEFT_EINVAL; }
int weft_group_size(const weft_group *g) { return g ? g->size : WEFT_EINVAL; }
const char *weft_group_name(const weft_group *g) { return g ? g->name : "?"; }
weft_ctx *weft_group_ctx(const weft_group *g) { return g ? g->ctx : NULL; }

int weft_group_world_rank(const weft_group *g, int group_rank)
{
  if (!g)
    return WEFT_EINVAL;
  if (group_rank < 0 || group_rank >= g->size)
    return WEFT_ERANGE;
  return g->world_ranks[group_rank];
}
