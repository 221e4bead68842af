/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench: collective benchmarks with a data check, in the manner of
 * nccl-tests, for one collective per run (or `weft-bench scale`, scale*.c).
 *
 * For each size from -b to -e (times -f), and for each placement (out of
 * place, then in place, as nccl-tests), the driver runs the collective once
 * on known data and counts the wrong elements, then runs it -w times untimed
 * and -n times timed between a barrier and a wait for the stream; the time of
 * a row is the mean over the ranks of each rank's time per iteration (-a: or
 * rank 0's, the least, the most). With --baseline the same rows are timed
 * through raw MPI on the same buffers in the same process (raw NCCL on device
 * memory), in rounds that alternate with weft's. Bookkeeping (times, counts,
 * rank lines) goes through a duplicate of MPI_COMM_WORLD, never through the
 * weft calls being measured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

/* One rank's line of the header, gathered on rank 0. */
struct rank_info {
  int pid, nprocs; /* nprocs: the machine's online processors */
  char host[128], gpu[160], nic[64];
  char boot[40]; /* the kernel's boot id: one per machine, network namespaces included */
};

/* Everything one run holds; freed by run_free(). */
struct run {
  const struct bench_opts *o;
  const struct bench_mem *mem;
  weft_ctx *ctx;
  MPI_Comm comm;
  struct bench_args a;
  void *sendbuf, *recvbuf;     /* the buffers (host or device) */
  void *hsendbuf, *hrecvbuf;   /* their host copies (the same for host memory) */
  char *floor_src, *floor_dst; /* --floor: the copy's own buffers, touched once */
  struct bench_xchg *xchg;     /* --floor on one host: the exchange floor */
  double *best;                /* --floor: 2 x KINDS x -n iteration times */
  struct bench_report rep;
  struct rank_info *infos;
  int skipped;  /* (type, operation) pairs weft does not take */
  int injected; /* WEFT_BENCH_INJECT_ERROR has spoilt its element */
};

/* The interface that carries the default route, for ranks whose launcher
 * did not say (WEFT_NIC is weftrun's word; NCCL_SOCKET_IFNAME the user's). */
static void nic_name(char *buf, size_t len)
{
  const char *v = getenv("WEFT_NIC");

  if (!v || !*v)
    v = getenv("NCCL_SOCKET_IFNAME");
  if (v && *v) {
    snprintf(buf, len, "%s", v);
    return;
  }
  if (weftx_netif_default_route(buf, len) != 0 || !buf[0])
    snprintf(buf, len, "none");
}

static void mpi_version(char *buf, size_t len)
{
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  char *comma;

  if (MPI_Get_library_version(v, &n) != MPI_SUCCESS)
    snprintf(v, sizeof(v), "MPI ?");
  comma = strchr(v, ',');
  if (comma)
    *comma = '\0';
  v[strcspn(v, "\n")] = '\0';
  snprintf(buf, len, "%.100s", v);
}

/* This machine's boot id (/proc/sys/kernel/random/boot_id), "" when unknown. */
static void boot_id(char *buf, size_t len)
{
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

  buf[0] = '\0';
  if (!f)
    return;
  if (!fgets(buf, (int)len, f))
    buf[0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
}

/* The machine's online processors. */
static int nprocs(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);

  return n > 0 && n < 1 << 20 ? (int)n : 0;
}

/* Ranks that share cores: hosts on one machine (one boot id: a virtual
 * cluster's nodes), or more ranks on a machine than it has processors. */
static void find_sharing(struct run *r)
{
  struct bench_report *rep = &r->rep;
  int n = r->a.nranks, machines = 0, most = 0, procs = 0;

  for (int i = 0; i < n; i++) {
    int first = 1, on = 0;
    if (!r->infos[i].boot[0])
      return; /* unknown: say nothing */
    for (int j = 0; j < i && first; j++)
      first = strcmp(r->infos[j].boot, r->infos[i].boot) != 0;
    if (!first)
      continue;
    machines++;
    for (int j = 0; j < n; j++)
      on += !strcmp(r->infos[j].boot, r->infos[i].boot);
    if (on > most || (on == most && r->infos[i].nprocs < procs)) {
      most = on;
      procs = r->infos[i].nprocs;
    }
  }
  rep->machines = machines;
  rep->shared = machines < rep->nhosts || (procs > 0 && most > procs);
  rep->shared_ranks = most;
  rep->shared_procs = procs;
}

/* Rank 0 learns every rank's host, pid, GPU and NIC, and the distinct hosts. */
static int gather_ranks(struct run *r, int probe_gpu)
{
  struct rank_info me;
  struct bench_report *rep = &r->rep;
  int n = r->a.nranks;

  memset(&me, 0, sizeof(me));
  me.pid = (int)getpid();
  me.nprocs = nprocs();
  boot_id(me.boot, sizeof(me.boot));
  if (gethostname(me.host, sizeof(me.host) - 1) != 0)
    snprintf(me.host, sizeof(me.host), "?");
  bench_gpu_describe(weft_device(r->ctx), probe_gpu, me.gpu, sizeof(me.gpu));
  nic_name(me.nic, sizeof(me.nic));
  if (r->a.rank == 0) {
    r->infos = calloc((size_t)n, sizeof(*r->infos));
    rep->rank_host = calloc((size_t)n, sizeof(char *));
    rep->rank_gpu = calloc((size_t)n, sizeof(char *));
    rep->rank_nic = calloc((size_t)n, sizeof(char *));
    rep->rank_pid = calloc((size_t)n, sizeof(int));
    rep->hosts = calloc((size_t)n, sizeof(char *));
    if (!r->infos || !rep->rank_host || !rep->rank_gpu || !rep->rank_nic || !rep->rank_pid ||
        !rep->hosts)
      return WEFT_ENOMEM;
  }
  if (MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, r->infos, (int)sizeof(me), MPI_BYTE, 0, r->comm) !=
      MPI_SUCCESS)
    return WEFT_EMPI;
  if (r->a.rank != 0)
    return 0;
  rep->nranks = n;
  for (int i = 0; i < n; i++) {
    int known = 0;

    rep->rank_host[i] = r->infos[i].host;
    rep->rank_gpu[i] = r->infos[i].gpu;
    rep->rank_nic[i] = r->infos[i].nic;
    rep->rank_pid[i] = r->infos[i].pid;
    for (int h = 0; h < rep->nhosts && !known; h++)
      known = !strcmp(rep->hosts[h], r->infos[i].host);
    if (!known)
      rep->hosts[rep->nhosts++] = r->infos[i].host;
  }
  find_sharing(r);
  return 0;
}

/* Stop the whole job after a failed weft or MPI call: the other ranks may
 * be inside a collective that will never complete. */
static void fail(struct run *r, const char *what, size_t bytes, int rc)
{
  const char *detail = weft_last_error(r->ctx);

  fprintf(stderr, "weft-bench: rank %d: %s %s of %zu bytes failed: %s%s%s\n", r->a.rank, what,
          r->o->coll->name, bytes, weft_strerror(rc), detail && *detail ? ": " : "",
          detail ? detail : "");
  MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_RUNTIME);
}

/* \p n runs of \p fn, waited for; this rank's seconds. -z 1 (or 3: with one
 * collective per iteration the same) waits for each run and meets the other
 * ranks after it, -z 2 only waits; on host memory weft's calls return done. */
static double run_n(struct run *r, int (*fn)(struct bench_args *), long n, const char *what)
{
  struct bench_args *a = &r->a;
  double t0 = MPI_Wtime();
  int rc = 0;

  for (long i = 0; i < n && rc == 0; i++) {
    rc = fn(a);
    if (rc == 0 && r->o->blocking)
      rc = r->mem->sync(a->stream);
    if (rc == 0 && (r->o->blocking == 1 || r->o->blocking == 3) &&
        MPI_Barrier(r->comm) != MPI_SUCCESS)
      rc = WEFT_EMPI;
  }
  if (rc == 0)
    rc = r->mem->sync(a->stream);
  if (rc)
    fail(r, what, a->bytes, rc);
  return MPI_Wtime() - t0;
}

/* This rank's times, \p n of them, into the job's as -a asks: 0 rank 0's,
 * 1 the mean over the ranks (nccl-tests' default), 2 the least, 3 the most. */
static void over_ranks(struct run *r, double *mine, double *out, int n)
{
  switch (r->o->average) {
  case 0:
    for (int i = 0; i < n; i++)
      out[i] = mine[i];
    MPI_Bcast(out, n, MPI_DOUBLE, 0, r->comm);
    break;
  case 2: MPI_Allreduce(mine, out, n, MPI_DOUBLE, MPI_MIN, r->comm); break;
  case 3: MPI_Allreduce(mine, out, n, MPI_DOUBLE, MPI_MAX, r->comm); break;
  default:
    MPI_Allreduce(mine, out, n, MPI_DOUBLE, MPI_SUM, r->comm);
    for (int i = 0; i < n; i++)
      out[i] /= r->a.nranks;
  }
}

/* Time -n runs of weft (and of raw MPI with --baseline) after -w untimed
 * ones of each. With a baseline the timed runs alternate in up to 5 rounds
 * of weft then raw, so that a change of load on a shared machine falls on
 * both. Sets the time per run over the ranks (-a), in microseconds (raw: -1
 * without a baseline). */
static void timed(struct run *r, double *weft_us, double *raw_us)
{
  const struct bench_coll *c = r->o->coll;
  int raw = r->rep.raw_name != NULL;
  int (*raw_fn)(struct bench_args *) = r->o->device ? c->run_nccl : c->run_raw;
  long rounds = raw ? (r->o->iters < 5 ? r->o->iters : 5) : 1;
  double mine[2] = {0, 0}, all[2] = {0, 0};

  run_n(r, c->run, r->o->warmup, "warm-up");
  if (raw)
    run_n(r, raw_fn, r->o->warmup, "baseline warm-up");
  for (long k = 0; k < rounds; k++) {
    long n = r->o->iters * (k + 1) / rounds - r->o->iters * k / rounds;

    MPI_Barrier(r->comm);
    mine[0] += run_n(r, c->run, n, "timed");
    if (raw) {
      MPI_Barrier(r->comm);
      mine[1] += run_n(r, raw_fn, n, r->rep.raw_name);
    }
  }
  mine[0] = mine[0] / (double)r->o->iters * 1e6;
  mine[1] = mine[1] / (double)r->o->iters * 1e6;
  over_ranks(r, mine, all, 2);
  *weft_us = all[0];
  *raw_us = raw ? all[1] : -1;
}

/* --floor: -n iterations, each of them the copy floor (every rank copies
 * the row's bytes with memcpy at once, between two barriers), then weft,
 * then the baseline, each alone between barriers, so that a slow spell
 * falls on all three alike. An iteration's time is the slowest rank's; the
 * cell gets the best iteration of each. */
static volatile char floor_sink;

/* The copy floor, weft, the baseline, the contiguous all-reduce, the
 * exchange floor. */
#define KINDS 5

/* Before each step of --floor, its input is written, as a program writes
 * what it reduces (a gradient, say) just before: so that no step finds the
 * buffers as the step before left them. Without it, an in-place buffer that
 * the other rank had just read through cross-memory attach (Open MPI's
 * step) cost weft's next in-place call at 1 MiB on 2 ranks a third more
 * (155 against 114 us, medians of 3 runs). The values do not matter: the
 * data were checked before, and each step gets fresh ones. */
static void write_input(struct run *r, int k)
{
  struct bench_args *a = &r->a;

  if (k == 0 || k == 4)
    memset(r->floor_src, 0x3c, a->bytes);
  else if (k == 3)
    memset(a->recv, 0x3c, a->count * a->esize);
  else
    memset(a->send, 0x3c, a->sendcount * a->esize);
}

static void best_of(struct run *r, struct bench_cell *cell)
{
  const struct bench_coll *c = r->o->coll;
  struct bench_args *a = &r->a;
  int (*fn[KINDS])(struct bench_args *) = {NULL, c->run, r->rep.raw_name ? c->run_raw : NULL,
                                           c->run_contig, NULL};
  double *slot[KINDS] = {&cell->floor_us, &cell->best_us, &cell->raw_best_us, &cell->contig_best_us,
                         &cell->xchg_us};
  long n = r->o->iters;
  double *t = r->best, *all = r->best + KINDS * n;

  for (long i = 0; i < KINDS * n; i++)
    t[i] = -1;
  for (long i = 0; i < n; i++)
    for (int k = 0; k < KINDS; k++) {
      double t0;
      int rc = 0;

      if (k == 4 ? !r->xchg : k > 0 && !fn[k])
        continue;
      write_input(r, k);
      MPI_Barrier(r->comm);
      t0 = MPI_Wtime();
      if (k == 0)
        memcpy(r->floor_dst, r->floor_src, a->bytes);
      else if (k == 4)
        rc = bench_xchg_run(r->xchg, r->floor_dst, r->floor_src, a->bytes);
      else
        rc = fn[k](a);
      t[k * n + i] = MPI_Wtime() - t0;
      if (rc && k == 4) {
        fprintf(stderr,
                "weft-bench: rank %d: the exchange floor of %zu bytes: the next rank did not "
                "copy its part into shared memory within a minute\n",
                a->rank, a->bytes);
        MPI_Abort(MPI_COMM_WORLD, BENCH_EXIT_RUNTIME);
      }
      if (rc)
        fail(r, k == 2 ? r->rep.raw_name : "best-of", a->bytes, rc);
    }
  if (a->bytes > 0)
    floor_sink = r->floor_dst[a->bytes / 2]; /* the copy is used: not optimised away */
  MPI_Allreduce(t, all, (int)(KINDS * n), MPI_DOUBLE, MPI_MAX, r->comm);
  for (int k = 0; k < KINDS; k++) {
    *slot[k] = -1;
    for (long i = 0; i < n; i++) {
      double us = all[k * n + i] * 1e6;
      if (all[k * n + i] >= 0 && (*slot[k] < 0 || us < *slot[k]))
        *slot[k] = us;
    }
  }
}

/* Run the collective once on known data; the number of wrong elements over
 * all ranks. WEFT_BENCH_INJECT_ERROR=1 spoils one element on the last rank
 * first, so that tests can see the check fail. */
static long long check_once(struct run *r)
{
  struct bench_args *a = &r->a;
  const struct bench_coll *c = r->o->coll;
  long long wrong = 0, total = 0;
  int rc;

  /* Poison first, input second: in place, the input lies in the receive buffer. */
  bench_poison(a->hrecv, a->dtype, a->recvcount);
  c->fill(a);
  rc = r->mem->upload(a->recv, a->hrecv, a->recvcount * a->esize);
  if (rc == 0)
    rc = r->mem->upload(a->send, a->hsend, a->sendcount * a->esize);
  if (rc == 0)
    rc = c->run(a);
  if (rc == 0)
    rc = r->mem->sync(a->stream);
  if (rc == 0)
    rc = r->mem->download(a->hrecv, a->recv, a->recvcount * a->esize);
  if (rc)
    fail(r, "checked", a->bytes, rc);
  if (r->o->inject && !r->injected && a->rank == a->nranks - 1 && a->recvcount > 0) {
    weftx_dtype_put(a->hrecv, a->dtype, a->recvcount / 2,
                    weftx_dtype_get(a->hrecv, a->dtype, a->recvcount / 2) + 1);
    r->injected = 1;
  }
  wrong = (long long)c->check(a);
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, r->comm);
  return total;
}

static int add_row(struct bench_report *rep, const struct bench_row *w)
{
  if (rep->nrows == rep->cap) {
    int cap = rep->cap ? 2 * rep->cap : 32;
    struct bench_row *rows = realloc(rep->rows, (size_t)cap * sizeof(*rows));

    if (!rows)
      return WEFT_ENOMEM;
    rep->rows = rows;
    rep->cap = cap;
  }
  rep->rows[rep->nrows++] = *w;
  return 0;
}

/* Point the collective at its buffers for one placement: out of place the
 * two buffers; in place both blocks inside the receive buffer, at the
 * offsets counts() set. Host memory is filled and checked where it lies. */
static void place(struct run *r, int where)
{
  struct bench_args *a = &r->a;

  a->in_place = where == BENCH_IN_PLACE;
  a->send = a->in_place ? (char *)r->recvbuf + a->send_inplace * a->esize : r->sendbuf;
  a->recv = a->in_place ? (char *)r->recvbuf + a->recv_inplace * a->esize : r->recvbuf;
  a->hsend = r->o->device ? r->hsendbuf : a->send;
  a->hrecv = r->o->device ? r->hrecvbuf : a->recv;
}

/* One placement of a row: its data check, its times and bandwidths. */
static void one_cell(struct run *r, int where, struct bench_cell *cell)
{
  const struct bench_coll *c = r->o->coll;
  double factor = c->busbw_factor(r->a.nranks), bytes = (double)r->a.bytes;

  cell->time_us = cell->algbw = cell->busbw = -1;
  cell->raw_time_us = cell->raw_algbw = cell->raw_busbw = -1;
  cell->wrong = -1;
  cell->floor_us = cell->best_us = cell->raw_best_us = cell->contig_best_us = -1;
  cell->xchg_us = -1;
  if ((where == BENCH_OUT_OF_PLACE && c->in_place_only) ||
      (where == BENCH_IN_PLACE && c->out_of_place_only))
    return;
  place(r, where);
  if (r->o->check && !(where == BENCH_IN_PLACE && c->in_place_unchecked))
    cell->wrong = check_once(r);
  timed(r, &cell->time_us, &cell->raw_time_us);
  if (r->o->floor)
    best_of(r, cell);
  cell->algbw = cell->time_us > 0 ? bytes / cell->time_us / 1e3 : 0;
  cell->busbw = cell->algbw * factor;
  if (cell->raw_time_us >= 0) {
    cell->raw_algbw = cell->raw_time_us > 0 ? bytes / cell->raw_time_us / 1e3 : 0;
    cell->raw_busbw = cell->raw_algbw * factor;
  }
}

/* One row of the table at about \p bytes bytes. */
static int one_size(struct run *r, size_t bytes)
{
  struct bench_args *a = &r->a;
  const struct bench_coll *c = r->o->coll;
  struct bench_row w;
  int rc;

  memset(&w, 0, sizeof(w));
  w.dtype = a->dtype;
  w.op = a->op;
  a->send_inplace = a->recv_inplace = 0;
  c->counts(a, bytes);
  place(r, c->in_place_only ? BENCH_IN_PLACE : BENCH_OUT_OF_PLACE);
  if (c->setup && (rc = c->setup(a)) != 0)
    fail(r, "set-up for", a->bytes, rc);
  w.bytes = a->bytes;
  w.count = a->count;
  for (int p = 0; p < BENCH_PLACES; p++)
    one_cell(r, p, &w.cell[p]);
  if (c->teardown)
    c->teardown(a);
  if (a->rank != 0)
    return 0;
  bench_report_row(stdout, &r->rep, &w);
  return add_row(&r->rep, &w);
}

/* Buffers for the largest row: whatever the type, no buffer of a row of at
 * most max_bytes bytes holds more than max_bytes. Host memory needs no host
 * copy. */
static int alloc_buffers(struct run *r)
{
  size_t bytes = r->o->max_bytes;
  int rc;

  /* A bucket's tensors with --gap between them (and a whole element each). */
  if (r->o->coll->tensors && r->o->gap > 0)
    bytes += (size_t)r->o->tensors * ((size_t)r->o->gap + sizeof(double));

  rc = r->mem->alloc(&r->sendbuf, bytes);
  if (rc == 0)
    rc = r->mem->alloc(&r->recvbuf, bytes);
  if (rc)
    return rc;
  if (r->o->floor) {
    /* Pages touched once, so that the floor is a copy and not first faults. */
    r->floor_src = malloc(r->o->max_bytes ? r->o->max_bytes : 1);
    r->floor_dst = malloc(r->o->max_bytes ? r->o->max_bytes : 1);
    r->best = calloc((size_t)r->o->iters * 2 * KINDS, sizeof(*r->best));
    if (!r->floor_src || !r->floor_dst || !r->best)
      return WEFT_ENOMEM;
    if (!r->o->device) {
      rc = bench_xchg_open(r->comm, &r->xchg, r->rep.xchg_note, sizeof(r->rep.xchg_note));
      if (rc == WEFT_EMPI && r->rep.xchg_note[0]) {
        if (r->a.rank == 0)
          fprintf(stderr,
                  "weft-bench: warning: --floor: no exchange floor: %s; the rest is measured\n",
                  r->rep.xchg_note);
      } else if (rc) {
        return rc;
      }
    }
    r->rep.xchg = r->xchg != NULL;
    memset(r->floor_src, 1, r->o->max_bytes);
    memset(r->floor_dst, 2, r->o->max_bytes);
  }
  if (!r->o->device) {
    r->hsendbuf = r->sendbuf;
    r->hrecvbuf = r->recvbuf;
    return 0;
  }
  rc = bench_mem_host.alloc(&r->hsendbuf, bytes);
  if (rc == 0)
    rc = bench_mem_host.alloc(&r->hrecvbuf, bytes);
  return rc;
}

/* Whether weft takes this (type, operation) pair: a one-element all-reduce
 * on host memory answers WEFT_EDTYPE on every rank alike when it does not
 * (integer averages, say). Rank 0 notes a pair it skips. */
static int supported(struct run *r)
{
  struct bench_args *a = &r->a;
  double in = 0, out = 0;
  int rc;

  if (!r->o->coll->reduces)
    return 1;
  rc = weft_allreduce(a->group, &in, &out, 1, a->dtype, a->op, NULL);
  if (rc == 0)
    return 1;
  if (rc != WEFT_EDTYPE)
    fail(r, "probe of", 1, rc);
  if (a->rank == 0)
    printf("# skipped: %s of %s: %s\n", weft_op_name(a->op), bench_dtype_label(a->dtype),
           weft_last_error(r->ctx));
  r->skipped++;
  return 0;
}

/* Every size for the current type and operation. */
static void sweep(struct run *r)
{
  const struct bench_opts *o = r->o;
  struct bench_args *a = &r->a;

  a->esize = weft_dtype_size(a->dtype);
  a->mpi_dtype = bench_mpi_dtype(a->dtype);
  a->mpi_op = bench_mpi_op(a->op, a->dtype);
  if (!supported(r))
    return;
  for (int i = 0; i < o->nsizes; i++)
    if (one_size(r, o->sizes[i]))
      fail(r, "report of", o->sizes[i], WEFT_ENOMEM);
  for (size_t bytes = o->min_bytes; !o->nsizes && bytes <= o->max_bytes;) {
    if (one_size(r, bytes))
      fail(r, "report of", bytes, WEFT_ENOMEM);
    /* Compared before multiplying: the product could wrap past SIZE_MAX. */
    if (bytes > o->max_bytes / (size_t)o->factor)
      break;
    bytes = bytes ? bytes * (size_t)o->factor : a->esize;
  }
}

/* Raw MPI for host memory; raw NCCL on a communicator of its own for device
 * memory, or a note in the header saying why there is none. */
static void open_baseline(struct run *r)
{
  if (!r->o->baseline)
    return;
  if (!r->o->device) {
    r->rep.raw_name = "raw MPI";
    return;
  }
  if (bench_nccl_open(&r->a, r->comm, r->rep.raw_note, sizeof(r->rep.raw_note)) == 0)
    r->rep.raw_name = "raw NCCL";
}

static void run_free(struct run *r)
{
  struct bench_args *a = &r->a;

  if (r->mem) {
    r->mem->release(r->sendbuf);
    r->mem->release(r->recvbuf);
  }
  if (r->o->device) {
    free(r->hsendbuf);
    free(r->hrecvbuf);
  }
  free(r->floor_src);
  free(r->floor_dst);
  bench_xchg_close(r->xchg);
  free(r->best);
  bench_nccl_close(a);
  bench_stream_destroy(a->stream);
  free(r->infos);
  free(r->rep.rank_host);
  free(r->rep.rank_gpu);
  free(r->rep.rank_nic);
  free(r->rep.rank_pid);
  free(r->rep.hosts);
  free(r->rep.rows);
  if (r->comm != MPI_COMM_NULL)
    MPI_Comm_free(&r->comm);
}

/* The checks every rank makes alike before any buffer exists; returns an
 * exit status (BENCH_EXIT_OK to go on). Only rank 0 speaks. */
static int preflight(struct run *r)
{
  const struct bench_opts *o = r->o;
  struct bench_args *a = &r->a;
  char why[256] = "";
  int nodev = 0, first = a->nranks, lacking = 0;

  if (a->nranks < o->coll->min_ranks) {
    if (a->rank == 0)
      fprintf(stderr, "weft-bench: %s needs at least %d ranks; start it with -np %d or more\n",
              o->coll->name, o->coll->min_ranks, o->coll->min_ranks);
    return BENCH_EXIT_USAGE;
  }
  if (o->coll->rooted && o->root >= a->nranks) {
    if (a->rank == 0)
      fprintf(stderr, "weft-bench: --root %d is not a rank of this %d-rank job\n", o->root,
              a->nranks);
    return BENCH_EXIT_USAGE;
  }
  if (o->device) {
    r->mem = bench_mem_device(weft_device(r->ctx), why, sizeof(why));
    nodev = r->mem == NULL;
  }
  /* The lowest rank without a GPU speaks for all of them. */
  MPI_Allreduce(&nodev, &lacking, 1, MPI_INT, MPI_SUM, r->comm);
  if (lacking) {
    int me = nodev ? a->rank : a->nranks;

    MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, r->comm);
    if (a->rank == first)
      fprintf(stderr,
              "weft-bench: --memory device: rank %d%s: %s; run on GPU hosts or use "
              "--memory host\n",
              a->rank, lacking > 1 ? " and others" : "", why);
    return BENCH_EXIT_NODEVICE;
  }
  if (!o->device)
    r->mem = &bench_mem_host;
  return BENCH_EXIT_OK;
}

static int bench_run(const struct bench_opts *o)
{
  struct run r;
  struct bench_args *a = &r.a;
  int rc, status = BENCH_EXIT_OK;

  memset(&r, 0, sizeof(r));
  r.o = o;
  r.comm = MPI_COMM_NULL;
  rc = weft_init(NULL, NULL, &r.ctx);
  if (rc) {
    fprintf(stderr, "weft-bench: weft_init failed: %s\n", weft_strerror(rc));
    return BENCH_EXIT_RUNTIME;
  }
  if (MPI_Comm_dup(MPI_COMM_WORLD, &r.comm) != MPI_SUCCESS) {
    fprintf(stderr, "weft-bench: MPI_Comm_dup failed\n");
    weft_finalize(r.ctx);
    return BENCH_EXIT_RUNTIME;
  }
  a->group = weft_world(r.ctx);
  a->rank = weft_group_rank(a->group);
  a->nranks = weft_group_size(a->group);
  a->root = o->root;
  a->tensors = o->tensors;
  a->gap = (size_t)o->gap;
  a->comm = r.comm;
  r.rep.o = o;

  status = preflight(&r);
  if (status == BENCH_EXIT_OK) {
    if (o->device && !(a->stream = bench_stream_create()))
      rc = WEFT_ECUDA;
    if (rc == 0)
      rc = gather_ranks(&r, o->device || getenv("WEFT_GPU"));
    if (rc == 0)
      rc = alloc_buffers(&r);
    if (rc)
      fail(&r, "buffers for", o->max_bytes, rc);
    open_baseline(&r);
  }
  if (status == BENCH_EXIT_OK && a->rank == 0) {
    mpi_version(r.rep.mpi_version, sizeof(r.rep.mpi_version));
    bench_nccl_version(r.rep.nccl_version, sizeof(r.rep.nccl_version));
    r.rep.have_expect = bench_expect_lookup(&r.rep.expect) == 0;
    bench_report_header(stdout, &r.rep);
  }
  for (int t = 0; status == BENCH_EXIT_OK && t < o->ndtypes; t++)
    for (int p = 0; p < (o->coll->reduces ? o->nops : 1); p++) {
      a->dtype = o->dtypes[t];
      a->op = o->ops[p];
      sweep(&r);
    }
  if (status == BENCH_EXIT_OK && r.skipped == o->ndtypes * (o->coll->reduces ? o->nops : 1)) {
    if (a->rank == 0)
      fprintf(stderr, "weft-bench: weft does not take this type and operation; see the line "
                      "above and choose others with -d and -o\n");
    status = BENCH_EXIT_USAGE;
  }
  if (status == BENCH_EXIT_OK) {
    if (a->rank == 0) {
      status = bench_report_footer(stdout, &r.rep);
      fflush(stdout);
      if (o->json && bench_report_json(o->json, &r.rep, status) != 0 && status == BENCH_EXIT_OK)
        status = BENCH_EXIT_RUNTIME;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, r.comm);
  }
  run_free(&r);
  weft_finalize(r.ctx);
  return status;
}

int main(int argc, char **argv)
{
  struct bench_opts o;
  const struct bench_coll *coll;
  char why[512];
  int rc;

  if (weft_check_version(stderr, argv[0]))
    return BENCH_EXIT_RUNTIME;
  if (argc < 2 || argv[1][0] == '-') {
    rc = bench_parse(argc, argv, &o); /* --help, --version, or a usage error */
    if (rc == BENCH_EXIT_OK) {
      char what[600];
      bench_coll_names(why, sizeof(why));
      snprintf(what, sizeof(what), "which collective? %s, or scale; see weft-bench --help", why);
      return bench_usage_fail(what);
    }
    return rc < 0 ? BENCH_EXIT_OK : rc;
  }
  if (!strcmp(argv[1], "scale"))
    return bench_scale_main(argc - 1, argv + 1);
  coll = bench_coll_find(argv[1]);
  if (!coll) {
    bench_coll_unknown(argv[1], "or scale", why, sizeof(why));
    return bench_usage_fail(why);
  }
  rc = bench_parse(argc - 1, argv + 1, &o);
  if (rc)
    return rc < 0 ? BENCH_EXIT_OK : rc;
  o.coll = coll;
  if (o.gap > 0 && !coll->tensors) {
    snprintf(why, sizeof(why), "--gap %ld: %s has no tensors to lay apart; --gap is for bucket",
             o.gap, coll->name);
    return bench_usage_fail(why);
  }
  return bench_run(&o);
}
