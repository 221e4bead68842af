/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strict stand-in of the CUDA driver, the CUDA runtime and NCCL, for
 * tests on machines without a GPU. Three libraries with the real sonames
 * (libcuda.so.1, libcudart.so.13, libnccl.so.2), built against the real
 * headers and selected only by tests through LD_LIBRARY_PATH. It never counts
 * as a GPU: every device is named "weft stand-in (not a GPU)".
 *
 * libcuda.so.1 holds the state every library shares: the devices, the
 * per-device contexts (counted), device memory (host memory behind an
 * address range the host cannot touch), streams run by worker threads, events,
 * the happens-before bookkeeping that reports races between streams, and the
 * rule checker. libcudart and libnccl reach it through the wsi_ functions
 * below (version node WEFT_STANDIN_1, never a CUDA name). README in this
 * directory lists the environment variables and the rules.
 */
#ifndef WEFT_STANDIN_H
#define WEFT_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#define WSI_MAX_DEVICES 64
#define WSI_NAME "weft stand-in (not a GPU)"

#if defined(__GNUC__)
#define WSI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define WSI_NORETURN __attribute__((noreturn))
#else
#define WSI_PRINTF(a, b)
#define WSI_NORETURN
#endif

/* Exported from libcuda.so.1 for libcudart and libnccl (cuda.map). */
#pragma GCC visibility push(default)

/* "weft stand-in, not a GPU" in each of the three libraries, so that a
 * script can tell which libraries a program would load (tests/gpu/run.sh
 * refuses them). */
extern const char weft_standin_marker[];

/* ---- process, devices, contexts, rules (core.c) ---- */

/* Read the environment once (WEFT_STANDIN_DEVICES, CUDA_VISIBLE_DEVICES...). */
void wsi_init(void);
/* 1 when WEFT_STANDIN_NO_DRIVER asks to play a machine without a driver. */
int wsi_no_driver(void);
/* Number of devices this process sees (after CUDA_DEVICE_ORDER and
 * CUDA_VISIBLE_DEVICES). */
int wsi_ndevices(void);
/* Physical index of visible device ordinal, or -1. Physical devices are
 * numbered in the stand-in's own order (CUDA's FASTEST_FIRST order). */
int wsi_physical(int ordinal);
/* Visible ordinal of a physical device, or -1 when it is hidden. */
int wsi_ordinal(int physical);
/* 1 when visible device ordinal is the MIG instance of its physical device
 * (CUDA_VISIBLE_DEVICES=MIG-...). */
int wsi_is_mig(int ordinal);
/* The UUID of visible device ordinal: its MIG instance's when mig_uuid and it
 * is one, else its GPU's (pci.h); -1 when there is no such device. */
int wsi_device_uuid(int ordinal, int mig_uuid, unsigned char uuid[16]);
/* The PCI bus of a physical device (domain 0, device 0, function 0). */
unsigned wsi_pci_bus(int physical);
/* The visible ordinal at PCI bus id id (the forms cuDeviceGetByPCIBusId
 * takes); -1 when id is not a bus id, -2 when no visible device is there. */
int wsi_by_bus_id(const char *id);
/* The runtime's current device (ordinal): the device of the context current
 * to this thread, or when none is, the one cudaSetDevice last chose on this
 * thread (0 until it does). */
int wsi_current(void);
/* cudaSetDevice: ordinal becomes this thread's device and its primary
 * context the current one (call wsi_context next to initialise it). */
void wsi_set_current(int ordinal);
/* A runtime call needs a context on device ordinal: its primary context
 * exists after this (its creation counted and logged, WEFT_STANDIN_LOG, with
 * the name of the call), and is made current when the thread has none. */
void wsi_context(int ordinal, const char *by);
int wsi_has_context(int ordinal);
/* Bytes of memory each device reports (WEFT_STANDIN_MEMORY, default 16 GiB). */
size_t wsi_memory(void);
/* The MPI world rank of this process from the launcher's variables, or -1. */
int wsi_world_rank(void);

/* A line in the WEFT_STANDIN_LOG file, if set ("pid=N rank=R " first). */
void wsi_log(const char *fmt, ...) WSI_PRINTF(1, 2);
/* A broken rule: "weft-standin: RULE: detail" on stderr and in the log,
 * then abort() (without a core file). */
void wsi_violation(const char *rule, const char *fmt, ...) WSI_PRINTF(2, 3) WSI_NORETURN;
/* Every API entry: refuses calls from inside a host function. */
void wsi_api(const char *fn);

/* The one lock of the stand-in's shared state, and its condition. */
void wsi_lock(void);
void wsi_unlock(void);
void wsi_wait(void);     /* wait on the condition, lock held */
int wsi_wait_ms(int ms); /* the same with a time limit; 0 on timeout */
void wsi_broadcast(void);

/* ---- memory (core.c) ---- */

enum wsi_mem { WSI_HOST = 0, WSI_DEVICE = 1, WSI_PINNED = 2 };

/* Device memory of ordinal: an address range the host cannot touch (PROT_NONE),
 * the bytes elsewhere. NULL when the device's memory would be exceeded. */
void *wsi_malloc_device(int ordinal, size_t bytes);
/* Page-locked host memory (cudaMallocHost): ordinary host memory, known. */
void *wsi_malloc_pinned(size_t bytes);
/* Free what the two above returned (kind must match); -1 when p is not the
 * start of such an allocation. Waits for the device to be idle first. */
int wsi_free(void *p, enum wsi_mem kind);
/* What p is: WSI_DEVICE (with *physical and *ordinal set, ordinal -1 when
 * hidden), WSI_PINNED or WSI_HOST. */
enum wsi_mem wsi_kind(const void *p, int *physical, int *ordinal);
/* The host address of bytes [p, p+n) of device or pinned memory; violation
 * when the range leaves its allocation. Host memory comes back as it is. */
char *wsi_bytes(const void *p, size_t n, const char *fn, const char *what);
/* The context handle of device memory (for cuPointerGetAttributes). */
void *wsi_context_handle(int physical);

/* ---- streams and events (stream.c) ---- */

typedef struct wsi_stream wsi_stream;
typedef struct wsi_event wsi_event;

/* A cudaStream_t as given (NULL, cudaStreamLegacy, cudaStreamPerThread, or a
 * created stream) resolved for the current device; violation when it was
 * destroyed or never was a stream. */
wsi_stream *wsi_stream_get(void *handle, const char *fn);
wsi_stream *wsi_stream_create(int ordinal, int nonblocking);
void wsi_stream_destroy(wsi_stream *s, const char *fn);
int wsi_stream_physical(const wsi_stream *s);
int wsi_stream_is_legacy(const wsi_stream *s);
/* "the legacy default stream of device 0", "non-blocking stream 3 of device 1" */
const char *wsi_stream_name(const wsi_stream *s, char *buf, size_t len);
/* 1 when everything enqueued so far has run (the host learns that). */
int wsi_stream_done(wsi_stream *s);
void wsi_stream_sync(wsi_stream *s);
/* Every stream of device ordinal. */
void wsi_device_sync(int ordinal);

/* Memory an operation reads or writes (device ranges are race-checked). */
struct wsi_range {
  const void *p;
  size_t n;
  int write;
};

/* Work for a stream: run(arg) in the stream's worker thread, in stream order;
 * done(arg), if not NULL, in the same thread afterwards. */
typedef void (*wsi_fn)(void *arg);
/* Enqueue on s. The ranges are checked against every unfinished or unordered
 * access from other streams (a race is a violation). Returns the operation's
 * sequence number on s. */
uint64_t wsi_enqueue(wsi_stream *s, const char *what, const struct wsi_range *r, int nr, wsi_fn run,
                     void *arg);
/* Wait until operation seq of s has run; the host then knows it. */
void wsi_wait_op(wsi_stream *s, uint64_t seq);

/* The errors of stream capture, for libcudart to say as cudaError_t. */
enum wsi_capture_error {
  WSI_OK = 0,
  WSI_E_UNSUPPORTED,    /* cudaErrorStreamCaptureUnsupported */
  WSI_E_INVALIDATED,    /* cudaErrorStreamCaptureInvalidated */
  WSI_E_IMPLICIT,       /* cudaErrorStreamCaptureImplicit */
  WSI_E_ISOLATION,      /* cudaErrorStreamCaptureIsolation */
  WSI_E_MERGE,          /* cudaErrorStreamCaptureMerge */
  WSI_E_UNMATCHED,      /* cudaErrorStreamCaptureUnmatched */
  WSI_E_UNJOINED,       /* cudaErrorStreamCaptureUnjoined */
  WSI_E_WRONG_THREAD,   /* cudaErrorStreamCaptureWrongThread */
  WSI_E_CAPTURED_EVENT, /* cudaErrorCapturedEvent */
  WSI_E_ILLEGAL_STATE,  /* cudaErrorIllegalState */
  WSI_E_INVALID_VALUE   /* cudaErrorInvalidValue */
};

wsi_event *wsi_event_create(int ordinal, int timing);
wsi_event *wsi_event_get(void *handle, const char *fn);
void wsi_event_destroy(wsi_event *e);
/* In a capturing stream the event becomes a captured event (it stands for the
 * stream's nodes so far; the graph does not record it). WSI_OK, or
 * WSI_E_INVALIDATED when the stream's capture was invalidated. */
int wsi_event_record(wsi_event *e, wsi_stream *s);
/* WSI_E_CAPTURED_EVENT (and the capture invalidated) when the event was last
 * recorded in a capturing stream: it cannot be queried or waited for. */
int wsi_event_check(wsi_event *e, const char *fn);
/* 1 done (or never recorded), 0 not yet. */
int wsi_event_done(wsi_event *e);
void wsi_event_sync(wsi_event *e);
/* Milliseconds between two completed timing events; -1 when one is not done,
 * -2 when one has no timing. */
double wsi_event_elapsed(wsi_event *a, wsi_event *b);
/* cudaStreamWaitEvent: a captured event forks s into its capture or joins
 * it; external (cudaEventWaitExternal) lets a capturing stream wait for an
 * event recorded outside (an external event wait node). A WSI_E_ code. */
int wsi_stream_wait_event(wsi_stream *s, wsi_event *e, int external, const char *fn);

/* ---- CUDA graphs: stream capture and replay (stream.c) ---- */

/* Work that a captured graph can replay. At each cudaGraphLaunch, make(tmpl)
 * is called on the launching thread, in launch order, and returns the
 * argument of that replay's run (which frees it as usual, so make copies the
 * template and can take fresh sequence numbers then); drop(tmpl) frees the
 * template when the graph is destroyed. */
struct wsi_replay {
  void *(*make)(void *tmpl);
  void (*drop)(void *tmpl);
};
/* wsi_enqueue for work a graph can replay: when s is capturing
 * (cudaStreamBeginCapture), the work becomes a node of the capture (arg is
 * its template, run(make(arg)) at each launch, the ranges checked then) and
 * 0 is returned; otherwise it is wsi_enqueue(s, what, r, nr, run, arg). */
uint64_t wsi_enqueue_replayable(wsi_stream *s, const char *what, const struct wsi_range *r, int nr,
                                wsi_fn run, void *arg, const struct wsi_replay *rp);
/* 1 while s is capturing (cudaStreamBeginCapture to cudaStreamEndCapture,
 * including a stream forked into a capture, and a capture that was
 * invalidated: work queued then is dropped, its template too). It takes no
 * lock (a caller may hold wsi_lock). Plain wsi_enqueue on a capturing stream
 * is a violation ("work the stand-in cannot capture"). */
int wsi_stream_capturing(const wsi_stream *s);

/* How a call uses a stream, for the capture rules below. */
enum wsi_use { WSI_USE_ENQUEUE, WSI_USE_SYNC, WSI_USE_INFO };
/* Before a call uses s: the legacy stream while a blocking stream of its
 * device captures is WSI_E_IMPLICIT (and the capture invalidated, but for
 * WSI_USE_INFO); synchronising or querying a capturing stream is
 * WSI_E_UNSUPPORTED (invalidated); queuing on one whose capture was
 * invalidated is WSI_E_INVALIDATED. Each error is a line in the log. */
int wsi_capture_use(wsi_stream *s, const char *fn, enum wsi_use use);
/* s's capture (if any) cannot take this call (why): WSI_E_UNSUPPORTED and
 * the capture invalidated; WSI_OK when s is not capturing. */
int wsi_capture_refuse(wsi_stream *s, const char *fn, const char *why);
/* A potentially unsafe call (cudaMalloc...): WSI_E_UNSUPPORTED, and the
 * captures that forbid it invalidated, as cudaThreadExchangeStreamCaptureMode
 * describes the thread's mode. */
int wsi_capture_unsafe(const char *fn);
/* A call that synchronises a whole device (physical; -1 every device):
 * WSI_E_UNSUPPORTED while any stream of it captures (any mode). */
int wsi_capture_device(int physical, const char *fn);
/* cudaThreadExchangeStreamCaptureMode (0 global, 1 thread-local, 2 relaxed). */
int wsi_capture_exchange_mode(int *mode);

typedef struct wsi_graph wsi_graph;
typedef struct wsi_exec wsi_exec;
int wsi_capture_begin(wsi_stream *s, int mode, const char *fn);
/* *g the graph, or NULL with the error. */
int wsi_capture_end(wsi_stream *s, wsi_graph **g, const char *fn);
/* *status 0 none, 1 active, 2 invalidated; the rest only when active (deps:
 * the nodes the next one depends on, valid until the next call on s). */
int wsi_capture_info(wsi_stream *s, int *status, unsigned long long *id, wsi_graph **graph,
                     void *const **deps, size_t *ndeps);
wsi_graph *wsi_graph_get(void *handle, const char *fn);
int wsi_graph_destroy(wsi_graph *g, const char *fn);
/* Its number of nodes; the first max of them into out (when not NULL). */
size_t wsi_graph_nodes(wsi_graph *g, void **out, size_t max);
wsi_exec *wsi_graph_instantiate(wsi_graph *g);
wsi_exec *wsi_exec_get(void *handle, const char *fn);
void wsi_exec_destroy(wsi_exec *x);
/* Every node on s in capture order, each made (wsi_replay.make) now. */
int wsi_graph_launch(wsi_exec *x, wsi_stream *s, const char *fn);

/* The worker thread of a stream marks itself: CUDA calls from a host
 * function running there are refused. */
int wsi_in_host_fn(void);
void wsi_set_in_host_fn(int on);

#pragma GCC visibility pop

#endif /* WEFT_STANDIN_H */
