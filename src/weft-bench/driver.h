/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-bench's driver and the interface every collective fills (the
 * nccl-tests pattern: one driver, one small file per collective).
 *
 * The driver owns the command line, the bootstrap, the sweep over sizes, the
 * timing, the data check and the report. A collective (coll-*.c) knows only
 * how many elements a size means, where its blocks lie when it runs in place,
 * its bus-bandwidth factor, how to fill its input and check its output, and
 * how to run itself through weft and through raw MPI. As in nccl-tests, every
 * row is measured out of place (separate send and receive buffers) and in
 * place (both in the receive buffer, at the offsets NCCL uses). Exit codes
 * are the BENCH_EXIT_* below, as weft-bench(1) documents.
 */
#ifndef WEFT_BENCH_DRIVER_H
#define WEFT_BENCH_DRIVER_H

#include <stdio.h>
#include <stddef.h>

#include <mpi.h>
#include <weftx.h>

/* Exit status of weft-bench (weft-bench(1), EXIT STATUS). */
enum bench_exit {
  BENCH_EXIT_OK = 0,
  BENCH_EXIT_WRONG = 1,    /* wrong data in at least one result */
  BENCH_EXIT_USAGE = 2,    /* bad command line */
  BENCH_EXIT_SLOW = 3,     /* average busbw below --min-busbw */
  BENCH_EXIT_NODEVICE = 4, /* --memory device without a usable GPU */
  BENCH_EXIT_RUNTIME = 5   /* a weft, MPI or CUDA call failed; a scale run failed */
};

struct bench_coll;

#define BENCH_MAX_SIZES 64

/* The command line of one benchmark run. */
struct bench_opts {
  const struct bench_coll *coll;
  size_t min_bytes, max_bytes;
  size_t sizes[BENCH_MAX_SIZES]; /* --sizes: these instead of -b/-e/-f */
  int nsizes;
  long factor, iters, warmup, tensors;
  long gap;                            /* --gap: bytes between a bucket's tensors */
  weft_dtype dtypes[WEFT_DTYPE_COUNT]; /* -d: one type, a list, or all */
  weft_op ops[WEFT_OP_COUNT];          /* -o: one op, a list, or all */
  int ndtypes, nops;
  int root, check, baseline, device, inject;
  int floor;        /* --floor: time the copy floor and every best iteration too */
  int average;      /* -a: a row's time over the ranks: 0 rank 0's, 1 mean, 2 min, 3 max */
  int blocking;     /* -z: 0 none, 1 or 3 wait and barrier after each run, 2 wait */
  double min_busbw; /* GB/s; < 0: none */
  const char *json; /* --json FILE, or NULL */
};

/* Where a collective's data lives: host memory or a GPU's. */
struct bench_mem {
  const char *name; /* "host", "device" */
  int (*alloc)(void **p, size_t bytes);
  void (*release)(void *p);
  int (*upload)(void *dst, const void *src, size_t bytes);
  int (*download)(void *dst, const void *src, size_t bytes);
  int (*sync)(void *stream);
};

/* One row's buffers and geometry: everything a collective's functions see. */
struct bench_args {
  weft_group *group;
  MPI_Comm comm; /* the same ranks, for raw MPI */
  MPI_Datatype mpi_dtype;
  MPI_Op mpi_op; /* MPI_OP_NULL when raw MPI has no such op */
  int rank, nranks, root;
  weft_dtype dtype;
  weft_op op;
  size_t esize; /* bytes per element */
  size_t bytes; /* the size column: bytes the collective moves as nccl-tests counts */
  size_t count; /* the count column: bytes / esize */
  size_t sendcount, recvcount; /* elements of the send and receive buffers */
  /* In place, the send and receive blocks lie in the receive buffer at these
   * element offsets (nccl-tests' sendInplaceOffset x rank, recvInplaceOffset
   * x rank): allgather sends from its own block, reduce_scatter keeps its
   * result at its own block. counts() sets them; 0 for the others. */
  size_t send_inplace, recv_inplace;
  int in_place;        /* this run is the in-place one: send and recv may alias */
  void *send, *recv;   /* what the collective reads and writes (host or device) */
  void *hsend, *hrecv; /* host copies, for filling and checking */
  void *stream;        /* cudaStream_t for device memory, else NULL */
  long tensors;        /* bucket: how many tensors the row is cut into */
  size_t gap;          /* bucket: bytes between one tensor and the next (--gap) */
  void *priv;          /* the collective's own state for this row */
  void *nccl;          /* raw NCCL communicator for the device baseline, or NULL */
};

/* A collective, filled by one coll-*.c and listed once in colls.c; its
 * command word, --help line and report come from here. Functions return 0 or
 * a WEFT_E* code. */
struct bench_coll {
  const char *name;       /* "allreduce": the command word */
  const char *alias;      /* "all_reduce": nccl-tests' spelling, also accepted */
  const char *help;       /* what it does, for --help */
  const char *busbw;      /* its busbw factor as --help writes it: "2(n-1)/n" */
  int reduces;            /* uses -o OP */
  int rooted;             /* uses -r ROOT */
  int tensors;            /* uses -t N */
  int pairwise;           /* one rank to one rank: scale's test of neighbouring hosts */
  int min_ranks;          /* fewest ranks it runs on */
  int in_place_only;      /* weft has no out-of-place form (its columns say N/A) */
  int out_of_place_only;  /* weft refuses in place (its in-place columns say N/A) */
  int in_place_unchecked; /* in place, the result is not defined (sendrecv on one
                               buffer, as in nccl-tests): timed, #wrong N/A */
  /* Element counts for a row of about \p bytes bytes; the count may round
   * bytes down (to a multiple of nranks elements, say). */
  void (*counts)(struct bench_args *a, size_t bytes);
  /* busbw = algbw * factor (nccl-tests, doc/PERFORMANCE.md). */
  double (*busbw_factor)(int nranks);
  /* Fill all sendcount elements of a->hsend with this rank's input (the
   * receive buffer is poisoned by the driver first; in place, hsend may lie
   * inside it); then count the elements of a->hrecv that are wrong. */
  void (*fill)(struct bench_args *a);
  size_t (*check)(const struct bench_args *a);
  int (*setup)(struct bench_args *a);     /* may be NULL; before a row */
  void (*teardown)(struct bench_args *a); /* may be NULL; after a row */
  int (*run)(struct bench_args *a);       /* once through weft */
  int (*run_raw)(struct bench_args *a);   /* once through raw MPI (host memory);
                                               in place with MPI_IN_PLACE */
  int (*run_nccl)(struct bench_args *a);  /* once through raw NCCL (device memory) */
  /* May be NULL: once through weft as one contiguous all-reduce of the same
   * elements (bucket: what fusion is held against; --floor times it). */
  int (*run_contig)(struct bench_args *a);
};

/* colls.c: the registry, NULL-terminated, in --help's order; the first is
 * the default of scale --coll. */
extern const struct bench_coll *const bench_colls[];
/* The collective called \p name (or its alias), or NULL. */
const struct bench_coll *bench_coll_find(const char *name);
/* The first pairwise collective (scale's pair test), or NULL. */
const struct bench_coll *bench_coll_pairwise(void);
/* "unknown collective 'NAME'; did you mean 'X'? (...)", or without a close one
 * "unknown collective 'NAME': use A B C[, MORE]", into why. */
void bench_coll_unknown(const char *name, const char *more, char *why, size_t whylen);
/* The names, separated by spaces, into buf. */
void bench_coll_names(char *buf, size_t len);

/* options.c: parse argv (after the collective's name) into \p o.
 * \return BENCH_EXIT_OK, BENCH_EXIT_USAGE after printing why, or -1 when
 * --help, --help-man or --version printed what was asked. */
int bench_parse(int argc, char **argv, struct bench_opts *o);
void bench_usage(FILE *f);
/* A --sizes list ("1M,16M,64M") into sizes[0..*n), at most BENCH_MAX_SIZES.
 * \return 0, or -1 with why set (why may be NULL). */
int bench_parse_sizes(const char *v, size_t *sizes, int *n, char *why, size_t whylen);
/* 1 when this process should print (rank 0, or no MPI launcher around it). */
int bench_is_first_rank(void);
/* A usage error that every rank finds before MPI starts: the first rank says why on
 * stderr; the others give it time to, then all return BENCH_EXIT_USAGE. */
int bench_usage_fail(const char *why);

/* data.c: element access for every dtype, and the expected values. */
double bench_round(weft_dtype dt, double v); /* what storing v gives back */
int bench_same(weft_dtype dt, double got, double want, int nranks);
double bench_input(weft_op op, int rank, int nranks, size_t i);        /* reduction input */
double bench_reduced(weft_op op, weft_dtype dt, int nranks, size_t i); /* its result */
double bench_value(int rank, size_t i); /* input of the moving collectives */
void bench_poison(void *buf, weft_dtype dt, size_t n);
MPI_Datatype bench_mpi_dtype(weft_dtype dt);
MPI_Op bench_mpi_op(weft_op op, weft_dtype dt);
/* Reduction input and check for n elements at \p buf whose first one has
 * global index \p first; bench_avg_fixup divides a raw MPI sum by nranks. */
void bench_fill_reduction(const struct bench_args *a, void *buf, size_t n, size_t first);
size_t bench_check_reduction(const struct bench_args *a, const void *buf, size_t n, size_t first);
void bench_avg_fixup(const struct bench_args *a, void *buf, size_t n);
/* A type by weft's name (float32) or nccl-tests' (float, half, double, ...). */
int bench_dtype_parse(const char *s, weft_dtype *dt);
/* The name nccl-tests prints for a type: "float", "half", "bfloat16", "int8". */
const char *bench_dtype_label(weft_dtype dt);
int bench_op_parse(const char *s, weft_op *op);

/* half.c: the baseline's MPI user function for float16 or bfloat16 and op
 * (AVG: its sum), NULL for other types; and AVG's division. Both follow
 * libweft's NaN rule (libweft(3)). */
MPI_User_function *bench_half_fn(weft_dtype dt, weft_op op);
void bench_half_divide(void *buf, size_t n, weft_dtype dt, int nranks);

/* memory.c and mem-cuda.c / mem-nocuda.c. */
extern const struct bench_mem bench_mem_host;
/* The device memory of this rank's GPU, or NULL with the reason in \p why. */
const struct bench_mem *bench_mem_device(int device, char *why, size_t whylen);
/* "0 [0000:04:00.0] NVIDIA H100 80GB HBM3" for \p device, or "none". */
void bench_gpu_describe(int device, int probe, char *buf, size_t len);
/* NCCL's version as "2.28.9", or "none". */
void bench_nccl_version(char *buf, size_t len);
void *bench_stream_create(void);
void bench_stream_destroy(void *stream);

/* raw-nccl.c / raw-nonccl.c: the device baseline, NCCL called directly on a
 * communicator of its own. bench_nccl_open() sets a->nccl or says why not. */
int bench_nccl_open(struct bench_args *a, MPI_Comm comm, char *why, size_t whylen);
void bench_nccl_close(struct bench_args *a);
int bench_nccl_allreduce(struct bench_args *a, const void *s, void *r, size_t count);
int bench_nccl_allgather(struct bench_args *a, const void *s, void *r, size_t sendcount);
int bench_nccl_reduce_scatter(struct bench_args *a, const void *s, void *r, size_t recvcount);
int bench_nccl_broadcast(struct bench_args *a, void *buf, size_t count);
int bench_nccl_sendrecv(struct bench_args *a, const void *s, void *r, size_t count, int to,
                        int from);
/* count elements to every rank and from every rank, grouped sends and receives. */
int bench_nccl_alltoall(struct bench_args *a, const void *s, void *r, size_t count);

/* expect.c: what the machine family should reach. */
struct bench_expect {
  const char *machine;           /* "a3-megagpu-8g" */
  const char *source;            /* "WEFT_MACHINE_TYPE", "GCE metadata" */
  double nic_gbps;               /* GPU-data line rate of one VM, Gbit/s */
  double ceiling;                /* ring busbw ceiling, GB/s (nic_gbps / 8) */
  double healthy_lo, healthy_hi; /* published healthy busbw range, GB/s; 0 when none */
  const char *note;              /* where the range comes from */
};
/* Fill \p e for this machine; 0 when the family is known, else -1. */
int bench_expect_lookup(struct bench_expect *e);
int bench_expect_for(const char *machine_type, struct bench_expect *e);

/* report.c. */
enum { BENCH_OUT_OF_PLACE, BENCH_IN_PLACE, BENCH_PLACES };

/* One placement of one row: weft's figures and the baseline's. */
struct bench_cell {
  double time_us, algbw, busbw;             /* time < 0: not measured (N/A) */
  long long wrong;                          /* -1: not checked */
  double raw_time_us, raw_algbw, raw_busbw; /* < 0: no baseline */
  /* --floor: the best iteration (the slowest rank's time in it) of every rank
   * copying the row's bytes at once, of weft and of the baseline, timed in
   * turn in one loop; < 0 when not measured. */
  double floor_us, best_us, raw_best_us;
  double contig_best_us; /* the collective's run_contig, or < 0 */
  double xchg_us;        /* the exchange floor (exchange.c), or < 0 */
};

struct bench_row {
  weft_dtype dtype;
  weft_op op;
  size_t bytes, count;
  struct bench_cell cell[BENCH_PLACES]; /* out of place, in place */
};

/* raw time / weft time (above 1: weft is faster), or -1 when either is missing. */
double bench_speedup(const struct bench_cell *c);
/* --floor: a row's copy floor (the least of its placements' floors, both
 * measured in the same way), and t / that floor; -1 when missing. */
struct bench_row;
double bench_floor(const struct bench_row *w);
double bench_over_floor(const struct bench_row *w, double t);
/* The same for the exchange floor (cell.xchg_us). */
double bench_xchg_floor(const struct bench_row *w);

/* --floor's exchange floor (exchange.c): opened when every rank of comm is
 * on this host (else *x stays NULL), collective; WEFT_EMPI, alike on every
 * rank, with why it is not measured in why, when MPI cannot make its
 * shared window. A run copies bytes of src into shared memory and the next
 * rank's into dst (WEFT_ETIMEDOUT when a rank did not come within a
 * minute). */
struct bench_xchg;
int bench_xchg_open(MPI_Comm comm, struct bench_xchg **x, char *why, size_t whylen);
int bench_xchg_run(struct bench_xchg *x, char *dst, const char *src, size_t bytes);
void bench_xchg_close(struct bench_xchg *x);

struct bench_report {
  const struct bench_opts *o;
  int nranks, nhosts;
  char **rank_lines; /* one per rank: "Rank 0 Pid ... on host GPU ... NIC ..." */
  char **hosts;      /* distinct host names */
  char **rank_host, **rank_gpu, **rank_nic;
  int *rank_pid;
  char mpi_version[128], nccl_version[32];
  int xchg;            /* --floor: the exchange floor is timed (every rank on this host) */
  char xchg_note[256]; /* --floor on one host: why the exchange is not timed, or "" */
  struct bench_expect expect;
  int have_expect;
  struct bench_row *rows;
  int nrows, cap;
  int machines; /* distinct machines (boot ids) under the hosts; 0 when unknown */
  int shared;   /* ranks share cores: hosts on one machine, or more ranks than processors */
  int shared_ranks, shared_procs; /* the busiest machine's ranks and processors */
  const char *raw_name;           /* "raw MPI", "raw NCCL", or NULL without a baseline */
  char raw_note[160];             /* why --baseline has no columns, or "" */
};

void bench_report_header(FILE *f, const struct bench_report *r);
void bench_report_row(FILE *f, const struct bench_report *r, const struct bench_row *row);
/* Prints the footer; returns the exit status the results call for. */
int bench_report_footer(FILE *f, const struct bench_report *r);
int bench_report_json(const char *path, const struct bench_report *r, int status);
void bench_fmt(char *buf, int width, double v);
/* A JSON string (quoted, escaped); a number, or null for NaN, inf and < 0. */
void bench_json_num(FILE *f, double v);

/* scale.c: `weft-bench scale ...`, a plain process that starts jobs. */
int bench_scale_main(int argc, char **argv);

#endif /* WEFT_BENCH_DRIVER_H */
