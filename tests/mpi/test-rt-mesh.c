/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mesh groups on the running world: for several layouts and sets of
 * dimensions, the members of this rank's group (gathered over the group
 * itself) equal the pure computation, coordinates match rank order
 * (first dimension fastest), and collectives on the group sum over it.
 * The program initialises MPI itself, before weft_init.
 */
#include "rt-common.h"

static const char *const layouts[] = {"dp=*", "tp=2,dp=*", "tp=2,pp=2,dp=*", "a=1,b=*,c=1",
                                      "x=*,y=1"};
static const char *const dimsets[][6] = {{"dp"},
                                         {"tp", "dp", "tp,dp", "dp,tp"},
                                         {"tp", "pp", "dp", "tp,dp", "pp,dp"},
                                         {"a", "b", "c", "a,c"},
                                         {"x", "y", "x,y"}};

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  int rank, p, li, di, checks = 0;

  /* This program starts MPI itself: weft_init must use it, and leave it
   * for the program to finalise. */
  CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  rank = weft_rank(ctx);
  p = weft_size(ctx);
  for (li = 0; li < (int)(sizeof(layouts) / sizeof(layouts[0])); li++) {
    struct weft__layout l;
    weft_mesh *m;
    int rc = weft_mesh_create(ctx, layouts[li], &m);
    if (weft__layout_parse(layouts[li], p, &l, NULL, 0) != 0) {
      CHECK(rc == WEFT_ERANGE, "layout %s on %d ranks: %d", layouts[li], p, rc);
      continue;
    }
    CHECK(rc == 0, "mesh %s: %s", layouts[li], weft_last_error(ctx));
    {
      int i, stride = 1, back = 0;
      for (i = 0; i < l.ndims; i++) {
        int c = weft_mesh_coord(m, l.dims[i].name);
        CHECK(c >= 0 && c < l.dims[i].size, "coord");
        back += c * stride;
        stride *= l.dims[i].size;
      }
      CHECK(back == rank, "coordinates of rank %d give %d", rank, back);
    }
    for (di = 0; di < 5 && dimsets[li][di]; di++) {
      unsigned mask;
      int want[64], got[64], n, i, sum = 0;
      weft_group *g = weft_mesh_group(m, dimsets[li][di]);
      CHECK(g, "group %s of %s: %s", dimsets[li][di], layouts[li], weft_last_error(ctx));
      CHECK(weft_mesh_group(m, dimsets[li][di]) == g, "groups are cached");
      CHECK(weft__layout_mask(&l, dimsets[li][di], &mask, NULL, 0) == 0, "mask");
      n = weft__layout_members(&l, mask, rank, want);
      CHECK(n == weft_group_size(g), "group %s size %d, want %d", dimsets[li][di],
            weft_group_size(g), n);
      CHECK(weft_allgather(g, &rank, got, 1, WEFT_INT32, NULL) == 0, "allgather");
      for (i = 0; i < n; i++) {
        CHECK(got[i] == want[i], "%s/%s member %d is %d, want %d", layouts[li], dimsets[li][di], i,
              got[i], want[i]);
        CHECK(weft_group_world_rank(g, i) == want[i], "world rank");
      }
      CHECK(weft_allreduce(g, &rank, &sum, 1, WEFT_INT32, WEFT_SUM, NULL) == 0, "allreduce");
      for (i = 0; i < n; i++)
        sum -= want[i];
      CHECK(sum == 0, "sum over group %s", dimsets[li][di]);
      checks++;
    }
    CHECK(weft_mesh_group(m, "nope") == NULL, "unknown dimension");
    CHECK(weft_mesh_coord(m, "nope") == WEFT_ENAME, "unknown coordinate");
    if (li % 2)
      weft_mesh_destroy(m); /* the others go with weft_finalize */
  }
  if (rank == 0)
    printf("test-rt-mesh: %d rank(s), %d groups checked\n", p, checks);
  CHECK(weft_finalize(ctx) == 0, "finalize");
  {
    int fin = 1;
    MPI_Finalized(&fin);
    CHECK(!fin, "weft_finalize finalised MPI that the program had started");
  }
  MPI_Finalize();
  return 0;
}
