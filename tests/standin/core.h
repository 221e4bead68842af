/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside libcuda.so.1 of the stand-in: what core.c (devices, memory) and
 * stream.c (streams, events, races) share and no other library sees.
 */
#ifndef WEFT_STANDIN_CORE_H
#define WEFT_STANDIN_CORE_H

#include "standin.h"

#include <pthread.h>

/* A vector clock: v[i] is the last operation of stream i known to be
 * ordered before whatever holds the clock. */
struct wsi_vc {
  uint64_t *v;
  size_t n;
};

void wsi__vc_join(struct wsi_vc *dst, const struct wsi_vc *src);
void wsi__vc_set(struct wsi_vc *vc, size_t i, uint64_t seq);
uint64_t wsi__vc_get(const struct wsi_vc *vc, size_t i);

/* One access of an operation to device memory, kept until every later
 * operation is known to be ordered after it. */
struct wsi_access {
  size_t off, n;
  size_t stream; /* stream index */
  uint64_t seq;  /* operation on that stream */
  int write;
  const char *what; /* the call that queued it */
};

struct wsi_alloc {
  uintptr_t addr; /* device address: a PROT_NONE reservation */
  size_t size, span;
  char *bytes; /* where the data is */
  int physical;
  enum wsi_mem kind;
  struct wsi_access *acc;
  size_t nacc, cap;
};

/* The allocation holding p (lock held), or NULL. */
struct wsi_alloc *wsi__find(const void *p);
/* Every allocation, for the stream code's pruning (lock held). */
extern pthread_mutex_t wsi__mu;

/* Contexts for the driver API (driver.c): the context current to this thread
 * (a handle, or NULL); bind one (NULL unbinds; -1 when ctx is no context of a
 * visible device); the physical device of a context, or -1. */
void *wsi__ctx_current(void);
int wsi__ctx_bind(void *ctx);
int wsi__ctx_physical(const void *ctx);
/* cuDevicePrimaryCtxRetain (creates the context, logged with by) and
 * cuDevicePrimaryCtxRelease (-1 without a retain to release; the last
 * reference, when the runtime never used it, resets it). */
void *wsi__primary_retain(int ordinal, const char *by);
int wsi__primary_release(int ordinal, const char *by);

#endif /* WEFT_STANDIN_CORE_H */
