/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A collective with one rank absent (run with WEFT_COLL_TIMEOUT=2): the last
 * rank sleeps instead of joining; the others must get WEFT_ETIMEDOUT within
 * bounded time, with a message naming that rank. They print
 * "TIMEDOUT-OK rank N" and abort the job, which is what callers should do;
 * test-rt-timeout.sh checks the lines and the time taken.
 * Argument "barrier", "bcast", "recv", "alltoall" or "sendrecv" picks the
 * call (default all-reduce); sendrecv: every rank sends 1 MiB to the next
 * rank and receives from the previous in one batch, and the ranks next to
 * the absent one must name it, with the operation.
 * Without WEFT_COLL_TIMEOUT the watchdog ends the waiting ranks instead
 * ("watchdog": run with WEFT_COLL_WATCHDOG=3; they exit 124); "init": the last
 * rank never calls weft_init (run with WEFT_INIT_TIMEOUT=3): the others'
 * weft_init ends them with 124. weftrun's tests read its summary of both.
 */
#include "rt-common.h"

#include <time.h>
#include <unistd.h>

/* The moment the absent rank stays away, for tests timing the deadline from it
 * ($WEFT_TEST_FAULT_FILE: seconds since the epoch, as date +%s.%N writes them). */
static void mark(void)
{
  const char *path = getenv("WEFT_TEST_FAULT_FILE");
  struct timespec ts;
  FILE *f;
  if (!path || !(f = fopen(path, "w")))
    return;
  clock_gettime(CLOCK_REALTIME, &ts);
  fprintf(f, "%ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
  fclose(f);
}

int main(int argc, char **argv)
{
  weft_ctx *ctx;
  weft_group *w;
  int rank, p, rc, x = 1, y = 0;
  char want[64];
  const char *what = argc > 1 ? argv[1] : "allreduce";
  const char *me = getenv("OMPI_COMM_WORLD_RANK"), *n = getenv("OMPI_COMM_WORLD_SIZE");

  if (!strcmp(what, "init") && me && n && strtol(me, NULL, 10) == strtol(n, NULL, 10) - 1) {
    mark();
    sleep(30); /* never arrives */
    return 0;
  }
  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  p = weft_size(ctx);
  CHECK(p >= 2, "needs 2 ranks or more");
  /* One collective that everybody joins first. */
  CHECK(weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL) == 0 && y == p, "warm-up");
  if (rank == p - 1) {
    mark();
    sleep(30);
    return 0;
  }
  if (!strcmp(what, "watchdog") || !strcmp(what, "init")) {
    weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL); /* the watchdog ends it */
    printf("NOT-ENDED rank %d\n", rank);
    return 1;
  }
  if (!strcmp(what, "barrier"))
    rc = weft_barrier(w);
  else if (!strcmp(what, "bcast")) {
    what = "broadcast";
    rc = weft_broadcast(w, &x, 1, WEFT_INT32, p - 1, NULL); /* from the absent rank */
  } else if (!strcmp(what, "recv"))
    rc = weft_recv(w, &x, 1, WEFT_INT32, p - 1, NULL);
  else if (!strcmp(what, "alltoall")) {
    int *a = calloc((size_t)p, sizeof(int)), *b = calloc((size_t)p, sizeof(int));
    CHECK(a && b, "calloc");
    rc = weft_alltoall(w, a, b, 1, WEFT_INT32, NULL);
  } else if (!strcmp(what, "sendrecv")) {
    /* More than MPI buffers: a send needs its receive. */
    size_t m = 1 << 18;
    float *a = calloc(m, sizeof(float)), *b = calloc(m, sizeof(float));
    CHECK(a && b, "calloc");
    rc = weft_sendrecv(w, a, m, (rank + 1) % p, b, m, (rank + p - 1) % p, WEFT_FLOAT32, NULL);
    if (rank != 0 && rank != p - 2) {
      CHECK(rc == 0, "sendrecv away from the absent rank: %s", weft_last_error(ctx));
      printf("TIMEDOUT-OK rank %d (not next to it)\n", rank);
      fflush(stdout);
      sleep(1);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  } else
    rc = weft_allreduce(w, &x, &y, 1, WEFT_INT32, WEFT_SUM, NULL);
  if (!strcmp(what, "recv"))
    snprintf(want, sizeof(want), "recv with world rank %d", p - 1);
  else if (!strcmp(what, "sendrecv"))
    snprintf(want, sizeof(want), "%s world rank %d", rank == 0 ? "receive from" : "send to", p - 1);
  else
    snprintf(want, sizeof(want), "world rank(s) %d had not joined", p - 1);
  CHECK(rc == WEFT_ETIMEDOUT, "%s gave %s", what, weft_err_name(rc));
  CHECK(strstr(weft_last_error(ctx), want) && strstr(weft_last_error(ctx), what) &&
          strstr(weft_last_error(ctx), "world"),
        "message does not name the op, group and rank: %s", weft_last_error(ctx));
  printf("TIMEDOUT-OK rank %d\n", rank);
  fflush(stdout);
  sleep(1); /* let the other waiting ranks report too */
  MPI_Abort(MPI_COMM_WORLD, 3);
  return 1;
}
