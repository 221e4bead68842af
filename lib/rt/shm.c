/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arena of the host shared-memory collectives, and how ranks meet in it.
 *
 * A group whose ranks all live on this host gets, at its first host
 * collective, an MPI shared window with one control block and two slots of
 * 512 KiB per rank for small and medium messages (MPI creates and removes the
 * memory, so nothing is left behind; pages are touched only when used),
 * after every
 * rank has checked once that it may read its peers' memory with
 * process_vm_readv: ptrace restrictions (Yama) and containers' seccomp
 * profiles forbid it, and then the group stays on MPI with one WEFT_VERBOSE=rt
 * line saying why. Settings are agreed by all members at that point, so that
 * a rank with a different environment cannot send the others down another
 * path.
 *
 * A call is numbered (seq); a rank publishes its buffer addresses and sets
 * its ARRIVE counter, sets READY when its part of the result is final, and
 * DONE when it has finished with every peer's memory. Waiting for a peer's
 * counter polls a moment, yields a few times, then sleeps in FUTEX_WAIT
 * (peers wake sleepers when they move a counter), waking every 50 ms to check
 * that the peer is still alive and that the WEFT_COLL_TIMEOUT deadline has not
 * passed: a dead peer ends the call with WEFT_EPEER, a missing one with
 * WEFT_ETIMEDOUT, both naming the world ranks. A rank that fails sets its
 * failed word (for good: the arena is not used again), so that its peers stop
 * waiting too, and says whom it blames, so that their errors name the same
 * rank.
 */
#define _GNU_SOURCE

#include "shm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Waiting: polls (about 10 us; none when the group's ranks outnumber the
 * processors we may run on: the peer we wait for may need ours), then
 * sched_yield()s, then futex sleeps of this long. */
#define SPINS 500
#define YIELDS 50
#define NAP 0.05

/* A moment of polling that lets a sibling hyperthread run. */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* ---- waiting ---- */

static long futex(_Atomic uint32_t *word, int cmd, uint32_t val, const struct timespec *ts)
{
  return syscall(SYS_futex, (uint32_t *)word, cmd, val, ts, NULL, 0);
}

static void set_word(struct weft__shm_ctl *c, _Atomic uint32_t *word, uint32_t v)
{
  atomic_store(word, v);
  if (atomic_load(&c->sleepers))
    futex(word, FUTEX_WAKE, INT_MAX, NULL);
}

static int reached(uint32_t v, uint32_t seq) { return (int32_t)(v - seq) >= 0; }

static const char *group_name(const struct weft__shm *sh) { return sh->g->name; }

/* The members whose counter is behind, as "2,5". */
static void behind(const struct weft__shm *sh, int counter, char *list, size_t size)
{
  size_t len = 0;
  int k;

  list[0] = '\0';
  for (k = 0; k < sh->size; k++) {
    uint32_t v = atomic_load(&sh->ctl[k]->count[counter]);
    if (!reached(v, sh->seq)) {
      int n = snprintf(list + len, size - len, "%s%d", len ? "," : "", sh->world[k]);
      if (n > 0 && (size_t)n < size - len)
        len += (size_t)n;
    }
  }
}

/* Give up for good; tell peers who is to blame (a world rank, or -1) and how. */
static int give_up(struct weft__shm *sh, int rc, int blame, int kind)
{
  struct weft__shm_ctl *c = sh->ctl[sh->rank];

  sh->state = -2;
  c->blame = blame;
  c->kind = (uint32_t)kind;
  /* for weftrun: a timed-out call blames the rank that never came, not this one */
  if (rc == WEFT_ETIMEDOUT && (kind == WEFT__SHM_ABSENT || kind == WEFT__SHM_STUCK))
    weft__page_deadline(sh->g, blame, sh->ctx->coll_timeout, sh->ctx->err);
  atomic_store(&c->failed, sh->seq ? sh->seq : 1);
  for (int w = 0; w < WEFT__SHM_NCOUNTERS; w++)
    futex(&c->count[w], FUTEX_WAKE, INT_MAX, NULL);
  return rc;
}

int weft__shm_fail(struct weft__shm *sh, int rc)
{
  return give_up(sh, rc, sh->world[sh->rank], WEFT__SHM_FAILED);
}

static int died(struct weft__shm *sh, int k, const char *opname)
{
  return give_up(sh,
                 weft__rt_fail(sh->ctx, WEFT_EPEER,
                               "%s on group %s (size %d): world rank %d (pid %d) died during "
                               "the call; abort the job (MPI_Abort)",
                               opname, group_name(sh), sh->size, sh->world[k], sh->pid[k]),
                 sh->world[k], WEFT__SHM_DIED);
}

static int alive(const struct weft__shm *sh, int k)
{
  return kill(sh->pid[k], 0) == 0 || errno != ESRCH;
}

static int timed_out(struct weft__shm *sh, int counter, const char *opname)
{
  char list[512];
  int first;

  behind(sh, counter, list, sizeof(list));
  first = (int)strtol(list, NULL, 10);
  if (counter == WEFT__SHM_ARRIVE)
    return give_up(
      sh,
      weft__rt_fail(sh->ctx, WEFT_ETIMEDOUT,
                    "%s on group %s (size %d, shared-memory call %u) timed out after %gs; "
                    "world rank(s) %s had not joined; abort the job (MPI_Abort)",
                    opname, group_name(sh), sh->size, sh->seq, sh->ctx->coll_timeout, list),
      first, WEFT__SHM_ABSENT);
  return give_up(
    sh,
    weft__rt_fail(sh->ctx, WEFT_ETIMEDOUT,
                  "%s on group %s (size %d, shared-memory call %u) timed out after %gs; "
                  "every rank had joined, world rank(s) %s had not finished (stopped, or "
                  "stuck in the call); abort the job (MPI_Abort)",
                  opname, group_name(sh), sh->size, sh->seq, sh->ctx->coll_timeout, list),
    first, WEFT__SHM_STUCK);
}

/* Peer k gave up: pass on what it found, naming the rank it blames. */
static int peer_gave_up(struct weft__shm *sh, int k, const char *opname)
{
  struct weft__shm_ctl *c = sh->ctl[k];
  int blame = c->blame, by = sh->world[k];

  switch (c->kind) {
  case WEFT__SHM_DIED:
    return give_up(sh,
                   weft__rt_fail(sh->ctx, WEFT_EPEER,
                                 "%s on group %s (size %d): world rank %d died during the "
                                 "call (world rank %d found it); abort the job (MPI_Abort)",
                                 opname, group_name(sh), sh->size, blame, by),
                   blame, WEFT__SHM_DIED);
  case WEFT__SHM_ABSENT:
  case WEFT__SHM_STUCK:
    return give_up(sh,
                   weft__rt_fail(sh->ctx, WEFT_ETIMEDOUT,
                                 "%s on group %s (size %d): world rank(s) %d had not %s when "
                                 "world rank %d timed out after %gs; abort the job "
                                 "(MPI_Abort)",
                                 opname, group_name(sh), sh->size, blame,
                                 c->kind == WEFT__SHM_ABSENT ? "joined" : "finished", by,
                                 sh->ctx->coll_timeout),
                   blame, (int)c->kind);
  default:
    return give_up(sh,
                   weft__rt_fail(sh->ctx, WEFT_EPEER,
                                 "%s on group %s: world rank %d failed in a shared-memory "
                                 "call (its own message says why); abort the job "
                                 "(MPI_Abort)",
                                 opname, group_name(sh), by),
                   by, WEFT__SHM_FAILED);
  }
}

/* Wait until member k's counter reaches this call, or give up. */
static int wait_one(struct weft__shm *sh, int k, int counter, double end, const char *opname)
{
  struct weft__shm_ctl *c = sh->ctl[k];
  _Atomic uint32_t *word = &c->count[counter];
  double next_check = 0;
  uint32_t v;
  int spins = 0;

  while (!reached(v = atomic_load(word), sh->seq)) {
    double now, nap = NAP;
    struct timespec ts;
    if (atomic_load(&c->failed) != 0)
      return peer_gave_up(sh, k, opname);
    if (spins < sh->spins + YIELDS) {
      if (spins++ < sh->spins)
        relax();
      else
        sched_yield();
      continue;
    }
    now = weftx_monotonic();
    if (end > 0 && now > end)
      return timed_out(sh, counter, opname);
    if (now >= next_check) {
      if (!alive(sh, k))
        return died(sh, k, opname);
      next_check = now + NAP;
    }
    if (end > 0 && end - now < nap)
      nap = end - now;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)(nap * 1e9);
    atomic_fetch_add(&c->sleepers, 1);
    if (atomic_load(word) == v && atomic_load(&c->failed) == 0)
      futex(word, FUTEX_WAIT, v, &ts);
    atomic_fetch_sub(&c->sleepers, 1);
  }
  return 0;
}

static double deadline(const struct weft__shm *sh)
{
  return sh->ctx->coll_timeout > 0 ? weftx_monotonic() + sh->ctx->coll_timeout : 0;
}

static int wait_all(struct weft__shm *sh, int counter, const char *opname)
{
  double end = deadline(sh);
  int k, rc;

  for (k = 0; k < sh->size; k++)
    if (k != sh->rank && (rc = wait_one(sh, k, counter, end, opname)) != 0)
      return rc;
  return 0;
}

int weft__shm_wait(struct weft__shm *sh, int k, int counter, const char *opname)
{
  return wait_one(sh, k, counter, deadline(sh), opname);
}

int weft__shm_reached(const struct weft__shm *sh, int k, int counter)
{
  return reached(atomic_load(&sh->ctl[k]->count[counter]), sh->seq);
}

void weft__shm_ready(struct weft__shm *sh)
{
  struct weft__shm_ctl *me = sh->ctl[sh->rank];

  set_word(me, &me->count[WEFT__SHM_READY], sh->seq);
}

int weft__shm_next(struct weft__shm *sh, const char *opname)
{
  if (sh->state != 1)
    return weft__rt_fail(sh->ctx, WEFT_ESTATE,
                         "%s on group %s: an earlier host shared-memory collective on this group "
                         "failed; abort the job (MPI_Abort)",
                         opname, group_name(sh));
  sh->seq++;
  return 0;
}

char *weft__shm_slot(const struct weft__shm *sh, int k)
{
  return (char *)sh->ctl[k] + sizeof(struct weft__shm_ctl) + (sh->seq & 1) * WEFT__SHM_SLOT;
}

int weft__shm_begin(struct weft__shm *sh, const void *s, const void *r, const char *opname)
{
  int rc = weft__shm_next(sh, opname);

  return rc != 0 ? rc : weft__shm_meet(sh, s, r, opname);
}

int weft__shm_meet(struct weft__shm *sh, const void *s, const void *r, const char *opname)
{
  struct weft__shm_ctl *me = sh->ctl[sh->rank];
  int k, rc;

  me->s = (uint64_t)(uintptr_t)s;
  me->r = (uint64_t)(uintptr_t)r;
  set_word(me, &me->count[WEFT__SHM_ARRIVE], sh->seq);
  if ((rc = wait_all(sh, WEFT__SHM_ARRIVE, opname)) != 0)
    return rc;
  for (k = 0; k < sh->size; k++) {
    sh->peer_s[k] = sh->ctl[k]->s;
    sh->peer_r[k] = sh->ctl[k]->r;
  }
  return 0;
}

void weft__shm_done(struct weft__shm *sh)
{
  struct weft__shm_ctl *me = sh->ctl[sh->rank];

  set_word(me, &me->count[WEFT__SHM_DONE], sh->seq);
}

int weft__shm_end(struct weft__shm *sh, const char *opname)
{
  struct weft__shm_ctl *me = sh->ctl[sh->rank];

  set_word(me, &me->count[WEFT__SHM_DONE], sh->seq);
  return wait_all(sh, WEFT__SHM_DONE, opname);
}

int weft__shm_xfer(struct weft__shm *sh, int peer, int write, const struct iovec *l, size_t nl,
                   const struct iovec *r, size_t nr, size_t bytes, const char *opname)
{
  ssize_t got;
  int err;

  if (bytes == 0)
    return 0;
  got = write ? process_vm_writev(sh->pid[peer], l, nl, r, nr, 0)
              : process_vm_readv(sh->pid[peer], l, nl, r, nr, 0);
  if (got == (ssize_t)bytes)
    return 0;
  err = got < 0 ? errno : EFAULT;
  if (err == ESRCH)
    return died(sh, peer, opname);
  return weft__shm_fail(
    sh, weft__rt_fail(sh->ctx, WEFT_ESYS,
                      "%s on group %s: %s world rank %d's memory failed after %zd of %zu bytes: "
                      "%s; abort the job (MPI_Abort)",
                      opname, group_name(sh), write ? "writing" : "reading", sh->world[peer],
                      got < 0 ? (ssize_t)0 : got, bytes, strerror(err)));
}

/* ---- setting up ---- */

/* Why process_vm_readv of a peer failed with err, in words. */
static void cma_why(struct weft__shm *sh, int k, int err)
{
  char scope[16] = "?";
  FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");

  if (f) {
    if (!fgets(scope, sizeof(scope), f))
      scope[0] = '\0';
    scope[strcspn(scope, "\n")] = '\0';
    fclose(f);
  }
  weft__snprintf(sh->why, sizeof(sh->why),
                 "cross-memory attach to world rank %d (pid %d) is not permitted: "
                 "process_vm_readv: %s (%s)",
                 sh->world[k], sh->pid[k], strerror(err),
                 err == EPERM && f ? (strcmp(scope, "0") ? "ptrace restriction, kernel.yama."
                                                           "ptrace_scope is not 0"
                                                         : "a seccomp filter or a missing "
                                                           "CAP_SYS_PTRACE")
                 : err == EPERM    ? "a container's seccomp profile, or ptrace restrictions"
                 : err == ENOSYS   ? "not in this kernel, or blocked by seccomp"
                                   : "ranks in different PID namespaces?");
}

/* Read every peer's token once: may we read their memory? */
static int probe(struct weft__shm *sh)
{
  int k;

  for (k = 0; k < sh->size; k++) {
    struct weft__shm_ctl *c = sh->ctl[k];
    uint64_t v = 0;
    struct iovec l = {&v, sizeof(v)}, r = {(void *)(uintptr_t)c->token_at, sizeof(v)};
    ssize_t got;
    if (k == sh->rank)
      continue;
    got = process_vm_readv(sh->pid[k], &l, 1, &r, 1, 0);
    if (got != (ssize_t)sizeof(v)) {
      cma_why(sh, k, got < 0 ? errno : EFAULT);
      return 0;
    }
    if (v != c->token || c->pid != sh->pid[k]) {
      weft__snprintf(sh->why, sizeof(sh->why),
                     "pid %d of world rank %d is another process here (ranks in different PID "
                     "namespaces?)",
                     sh->pid[k], sh->world[k]);
      return 0;
    }
  }
  return 1;
}

/* A blocking collective when there is no deadline, else started and
 * polled against it (deadline.c). */
static int finish(struct weft__shm *sh, int rc, MPI_Request *req, const char *opname)
{
  char buf[MPI_MAX_ERROR_STRING];

  if (rc != MPI_SUCCESS)
    return weft__rt_fail(sh->ctx, WEFT_EMPI, "%s on group %s: setting up shared memory: %s", opname,
                         group_name(sh), weft__mpi_strerror(rc, buf, sizeof(buf)));
  return weft__wait(sh->g, req, opname, -1);
}

/* What this rank says before the arena exists: its pid, whether it wants
 * shared memory, its threshold and staged limit. */
struct offer {
  int64_t pid, on, threshold, staged;
};

static int64_t clamp64(size_t v) { return (int64_t)(v > INT64_MAX ? INT64_MAX : v); }

static int agree(struct weft__shm *sh, const char *opname)
{
  weft_ctx *ctx = sh->ctx;
  struct offer mine, *all;
  MPI_Request req;
  int k, rc, off = -1;

  mine.pid = getpid();
  mine.on = ctx->host_shm;
  mine.threshold = clamp64(ctx->shm_threshold);
  mine.staged = clamp64(ctx->shm_staged);
  /* With WEFT_BACKEND=mpi nobody asks CUDA where a buffer lives, and
   * cross-memory attach cannot read device memory. */
  if (ctx->backend == WEFT__BACKEND_MPI && access("/dev/nvidiactl", F_OK) == 0)
    mine.on = -1;
  all = calloc((size_t)sh->size, sizeof(*all));
  if (!all)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "%s on group %s: out of memory", opname, group_name(sh));
  rc = MPI_Iallgather(&mine, 4, MPI_INT64_T, all, 4, MPI_INT64_T, sh->comm, &req);
  if ((rc = finish(sh, rc, &req, opname)) != 0) {
    free(all);
    return rc;
  }
  sh->threshold = 0;
  sh->staged = (size_t)mine.staged;
  for (k = 0; k < sh->size; k++) {
    sh->pid[k] = (int)all[k].pid;
    if (all[k].on != 1 && off < 0)
      off = k;
    if ((size_t)all[k].threshold > sh->threshold)
      sh->threshold = (size_t)all[k].threshold;
    if ((size_t)all[k].staged < sh->staged)
      sh->staged = (size_t)all[k].staged;
  }
  if (off >= 0)
    weft__snprintf(sh->why, sizeof(sh->why), "%s on world rank %d",
                   all[off].on == 0 ? "WEFT_HOST_SHM=0"
                                    : "WEFT_BACKEND=mpi on a host with an NVIDIA driver (buffers "
                                      "may be device memory)",
                   sh->world[off]);
  if ((size_t)mine.threshold != sh->threshold)
    WEFT__LOG(RT,
              "group %s: WEFT_HOST_SHM_THRESHOLD differs between ranks; using the largest, "
              "%zu bytes",
              group_name(sh), sh->threshold);
  if ((size_t)mine.staged != sh->staged)
    WEFT__LOG(RT,
              "group %s: WEFT_HOST_SHM_STAGED differs between ranks; using the smallest, "
              "%zu bytes",
              group_name(sh), sh->staged);
  free(all);
  return 0;
}

/* The window, this rank's block in it, and the probe; *ok says whether all
 * of it worked here. */
static void arena(struct weft__shm *sh, int *ok)
{
  struct weft__shm_ctl *me;
  MPI_Aint sz;
  void *base = NULL;
  char buf[MPI_MAX_ERROR_STRING];
  int k, du, rc;

  sh->ctl = calloc((size_t)sh->size, sizeof(*sh->ctl));
  sh->peer_s = calloc((size_t)sh->size, sizeof(*sh->peer_s));
  sh->peer_r = calloc((size_t)sh->size, sizeof(*sh->peer_r));
  sh->got = calloc((size_t)sh->size, 1);
  sh->iov_l = calloc(2 * WEFT__SHM_MAXIOV, sizeof(*sh->iov_l));
  sh->iov_r = sh->iov_l ? sh->iov_l + WEFT__SHM_MAXIOV : NULL;
  sh->pc = calloc(WEFT__SHM_MAXPIECES, sizeof(*sh->pc));
  if (posix_memalign((void **)&sh->tmp, 64, 3 * WEFT__SHM_CHUNK + WEFT__SHM_GAP) != 0)
    sh->tmp = NULL;
  if (!sh->ctl || !sh->peer_s || !sh->peer_r || !sh->got || !sh->iov_l || !sh->pc || !sh->tmp) {
    weft__snprintf(sh->why, sizeof(sh->why), "out of memory");
    *ok = 0;
  }
  rc = MPI_Win_allocate_shared((MPI_Aint)(sizeof(struct weft__shm_ctl) + 2 * WEFT__SHM_SLOT), 1,
                               MPI_INFO_NULL, sh->comm, &base, &sh->win);
  if (rc != MPI_SUCCESS) {
    sh->win = MPI_WIN_NULL;
    weft__snprintf(sh->why, sizeof(sh->why), "MPI_Win_allocate_shared: %s",
                   weft__mpi_strerror(rc, buf, sizeof(buf)));
    *ok = 0;
    return;
  }
  for (k = 0; k < sh->size && sh->ctl; k++) {
    void *p = NULL;
    if (MPI_Win_shared_query(sh->win, k, &sz, &du, &p) != MPI_SUCCESS || !p ||
        (size_t)sz < sizeof(struct weft__shm_ctl) + 2 * WEFT__SHM_SLOT) {
      weft__snprintf(sh->why, sizeof(sh->why), "MPI_Win_shared_query of rank %d failed", k);
      *ok = 0;
      return;
    }
    sh->ctl[k] = p;
  }
  if (!*ok)
    return;
  me = sh->ctl[sh->rank];
  memset(me, 0, sizeof(*me));
  me->pid = (int32_t)getpid();
  sh->token = ((uint64_t)getpid() << 32) ^ (uint64_t)(weftx_monotonic() * 1e9) ^ (uintptr_t)sh;
  me->token = sh->token;
  me->token_at = (uint64_t)(uintptr_t)&sh->token;
  atomic_thread_fence(memory_order_seq_cst);
}

static int setup(struct weft__shm *sh, MPI_Comm comm, const char *opname)
{
  weft_ctx *ctx = sh->ctx;
  weft_group *g = sh->g;
  MPI_Request req;
  int k, rc, ok = 1, all_ok = 0;
  long ncpu;

  sh->state = -1;
  sh->win = MPI_WIN_NULL;
  sh->comm = comm;
  MPI_Comm_rank(comm, &sh->rank);
  MPI_Comm_size(comm, &sh->size);
  sh->world = calloc((size_t)sh->size, sizeof(int));
  sh->pid = calloc((size_t)sh->size, sizeof(int));
  if (!sh->world || !sh->pid)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "%s on group %s: out of memory", opname, g->name);
  if (comm == g->comm) {
    memcpy(sh->world, g->world_ranks, (size_t)sh->size * sizeof(int));
  } else {
    MPI_Group mine, world;
    int *ranks = calloc((size_t)sh->size, sizeof(int));
    if (!ranks)
      return weft__rt_fail(ctx, WEFT_ENOMEM, "%s on group %s: out of memory", opname, g->name);
    for (k = 0; k < sh->size; k++)
      ranks[k] = k;
    rc = MPI_Comm_group(comm, &mine);
    if (rc == MPI_SUCCESS) {
      if ((rc = MPI_Comm_group(MPI_COMM_WORLD, &world)) == MPI_SUCCESS) {
        rc = MPI_Group_translate_ranks(mine, sh->size, ranks, world, sh->world);
        MPI_Group_free(&world);
      }
      MPI_Group_free(&mine);
    }
    free(ranks);
    if (rc != MPI_SUCCESS)
      return weft__rt_fail(ctx, WEFT_EMPI, "%s on group %s: translating ranks failed", opname,
                           g->name);
  }
  /* Facts every member has: no communication before deciding on them. */
  if (sh->size < 2) {
    weft__snprintf(sh->why, sizeof(sh->why), "one rank");
    goto out;
  }
  for (k = 1; k < sh->size; k++)
    if (ctx->node_of[sh->world[k]] != ctx->node_of[sh->world[0]]) {
      weft__snprintf(sh->why, sizeof(sh->why), "world ranks %d and %d are on different hosts",
                     sh->world[0], sh->world[k]);
      goto out;
    }
  if ((rc = weft__arrive(g)) != 0 || (rc = agree(sh, opname)) != 0)
    return rc;
  if (sh->why[0])
    goto out;
  arena(sh, &ok);
  if (sh->win != MPI_WIN_NULL) {
    /* Every block is written before anybody probes. */
    rc = MPI_Ibarrier(comm, &req);
    if ((rc = finish(sh, rc, &req, opname)) != 0)
      return rc;
    if (ok)
      ok = probe(sh);
  }
  rc = MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm, &req);
  if ((rc = finish(sh, rc, &req, opname)) != 0)
    return rc;
  if (!all_ok) {
    if (ok)
      weft__snprintf(sh->why, sizeof(sh->why),
                     "another rank of the group could not set it up (WEFT_VERBOSE=rt there "
                     "says why)");
    if (sh->win != MPI_WIN_NULL)
      MPI_Win_free(&sh->win);
    goto out;
  }
  sh->state = 1;
  ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  sh->spins = ncpu > 0 && ctx->local_size > ncpu ? 0 : SPINS;
  WEFT__LOG(RT,
            "group %s%s: host shared memory on (%d ranks, cross-memory attach) from %zu "
            "bytes, all-reduces up to %zu bytes copied through the window%s",
            g->name, comm == g->comm ? "" : " (this host)", sh->size, sh->threshold, sh->staged,
            sh->spins ? "" : "; ranks outnumber processors: waits yield at once");
  return 0;
out:
  WEFT__LOG(RT, "group %s%s: host shared memory off: %s; MPI instead", g->name,
            comm == g->comm ? "" : " (this host)", sh->why);
  return 0;
}

struct weft__shm *weft__shm_get(weft_group *g, int which, const char *opname, int *rc)
{
  struct weft__shm **slot = which ? &g->intra_shm : &g->shm;
  struct weft__shm *sh = *slot;

  *rc = 0;
  if (sh)
    return sh;
  sh = calloc(1, sizeof(*sh));
  if (!sh) {
    *rc = weft__rt_fail(g->ctx, WEFT_ENOMEM, "%s on group %s: out of memory", opname, g->name);
    return NULL;
  }
  sh->ctx = g->ctx;
  sh->g = g;
  *slot = sh;
  *rc = setup(sh, which ? g->intra : g->comm, opname);
  if (*rc != 0)
    sh->state = -2;
  return sh;
}

void weft__shm_free(struct weft__shm *sh)
{
  int fin = 0;

  if (!sh)
    return;
  MPI_Finalized(&fin);
  if (sh->win != MPI_WIN_NULL && !fin)
    MPI_Win_free(&sh->win);
  free(sh->world);
  free(sh->pid);
  free(sh->ctl);
  free(sh->tmp);
  free(sh->iov_l);
  free(sh->pc);
  free(sh->peer_s);
  free(sh->peer_r);
  free(sh->got);
  free(sh);
}
