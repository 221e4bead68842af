/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft_init under settings that may differ between ranks (test-rt-agree.sh
 * gives each rank its own environment): every rank prints
 * "AGREE rank N: CODE" with what weft_init returned (the world rank from
 * Open MPI's variable, as MPI is gone after a failed weft_init); when it
 * succeeded, all ranks then run one all-reduce to show that the job works.
 * Exits 0 either way, so that mpirun does not kill the ranks that have not
 * printed yet.
 */
#include "rt-common.h"

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  const char *me = getenv("OMPI_COMM_WORLD_RANK");
  int rc = weft_init(&argc, &argv, &ctx), x = 1, y = 0;

  printf("AGREE rank %s: %s\n", me ? me : "?", rc ? weft_err_name(rc) : "OK");
  fflush(stdout);
  if (rc)
    return 0;
  CHECK(weft_allreduce(weft_world(ctx), &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0 &&
          y == weft_size(ctx),
        "all-reduce after weft_init");
  weft_finalize(ctx);
  return 0;
}
