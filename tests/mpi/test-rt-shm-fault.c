/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank that fails during host shared-memory all-reduces (run with
 * WEFT_COLL_TIMEOUT=2). The last rank
 *   absent    never joins the next all-reduce (it sleeps);
 *   killed    is killed by SIGKILL while all-reduces of 4 MiB run;
 *   stopped   is stopped by SIGSTOP while they run.
 * "a2a-killed" and "a2a-absent": the same during all-to-alls of 4 MiB per
 * rank (read from the send buffers with cross-memory attach).
 * The other ranks must get an error naming it (WEFT_ETIMEDOUT, or WEFT_EPEER
 * for a rank that died) instead of waiting for ever; they print
 * "FAULT-OK rank N" and abort the job, which is what callers should do.
 * test-rt-shm-fault.sh checks the lines and the time taken.
 */
#include "rt-common.h"
#include "shm.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#define N (1 << 20) /* floats: 4 MiB */

/* Deliver sig to this process after ms milliseconds, wherever it is then. */
static void arm(int sig, long ms)
{
  struct sigevent ev;
  struct itimerspec its;
  timer_t t;

  memset(&ev, 0, sizeof(ev));
  memset(&its, 0, sizeof(its));
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  its.it_value.tv_sec = ms / 1000;
  its.it_value.tv_nsec = (ms % 1000) * 1000000L;
  CHECK(timer_create(CLOCK_MONOTONIC, &ev, &t) == 0 && timer_settime(t, 0, &its, NULL) == 0,
        "timer");
}

int main(int argc, char **argv)
{
  const char *how = argc > 1 ? argv[1] : "absent", *op = "allreduce";
  weft_ctx *ctx;
  weft_group *w;
  float *buf, *out;
  int a2a = !strncmp(how, "a2a-", 4);
  int rank, p, rc = 0, i;
  char want[64];
  double t0;

  CHECK(weft_init(&argc, &argv, &ctx) == 0, "weft_init");
  w = weft_world(ctx);
  rank = weft_rank(ctx);
  p = weft_size(ctx);
  CHECK(p >= 2, "needs 2 ranks or more");
  buf = calloc(N, sizeof(float));
  out = calloc(N, sizeof(float));
  CHECK(buf && out, "calloc");
  if (a2a) {
    how += 4;
    op = "alltoall";
  }
#define CALL()                                                                                     \
  (a2a ? weft_alltoall(w, buf, out, N / (size_t)p, WEFT_FLOAT32, NULL)                             \
       : weft_allreduce(w, buf, buf, N, WEFT_FLOAT32, WEFT_SUM, NULL))
  /* One call that everybody joins, through shared memory. */
  CHECK(CALL() == 0, "warm-up: %s", weft_last_error(ctx));
  CHECK(w->shm && w->shm->state == 1, "host shared memory is off");
  if (rank == p - 1) {
    if (!strcmp(how, "absent")) {
      sleep(30);
      return 0;
    }
    arm(!strcmp(how, "killed") ? SIGKILL : SIGSTOP, 300);
  }
  t0 = weftx_monotonic();
  for (i = 0; i < 100000 && rc == 0 && weftx_monotonic() - t0 < 20; i++)
    rc = CALL();
  if (rank == p - 1)
    return 0; /* a stopped rank is continued when the others abort: nothing to check */
  CHECK(rc != 0, "%d all-reduces went through", i);
  /* A rank that died is WEFT_EPEER; one that never came or never finished
   * is WEFT_ETIMEDOUT; a dead rank may also be found by the deadline. */
  CHECK(rc == WEFT_ETIMEDOUT || (rc == WEFT_EPEER && !strcmp(how, "killed")), "%s gave %s: %s", how,
        weft_err_name(rc), weft_last_error(ctx));
  if (rc == WEFT_EPEER)
    snprintf(want, sizeof(want), "world rank %d ", p - 1);
  else
    snprintf(want, sizeof(want), "world rank(s) %d had not", p - 1);
  CHECK(strstr(weft_last_error(ctx), want) && strstr(weft_last_error(ctx), op) &&
          strstr(weft_last_error(ctx), "world") &&
          (rc != WEFT_EPEER || strstr(weft_last_error(ctx), "died")),
        "message does not name the op, group and rank (%s): %s", want, weft_last_error(ctx));
  printf("FAULT-OK rank %d %s after %d calls: %s\n", rank, weft_err_name(rc), i,
         weft_last_error(ctx));
  fflush(stdout);
  sleep(1); /* let the other waiting ranks report too */
  MPI_Abort(MPI_COMM_WORLD, 3);
  return 1;
}
