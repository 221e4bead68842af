/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the files of lib/gcp: the test root for files the code
 * reads (sysfs, plugin libraries, profile scripts) and the request set-up that
 * the metadata client and the preemption watcher share.
 */
#ifndef WEFT_GCP_PRIVATE_H
#define WEFT_GCP_PRIVATE_H

#include "weft_private.h"

#include <weftx/gcp.h>
#include <weftx/proc.h>

/* "$WEFT_GCP_SYSROOT" + abs into buf; WEFT_ERANGE when it does not fit (sysroot.c). */
int weft__gcp_path(char *buf, size_t len, const char *abs);

/* Read the first line of a small file (newline stripped). 0, WEFT_ENOENT or WEFT_ERANGE. */
int weft__gcp_read_line(const char *path, char *buf, size_t len);

/* What the checks need to know of a preset. */
int weft__preset_nplugins(const weftx_preset *p);
const char *weft__preset_plugin(const weftx_preset *p, int i);
int weft__preset_gvnic_all(const weftx_preset *p);

#ifdef WEFT_HAVE_CURL
#include <string.h>

#include "curl-dl.h"

/* A response being received: body (NUL-terminated, capped) and ETag. */
struct weft__gcp_resp {
  char *body;
  size_t len;
  int too_big;
  char etag[128];
  int flavor; /* the reply carried Metadata-Flavor: Google */
};

/* The base URL ("http://metadata.google.internal/computeMetadata/v1/") or an
 * override from GCE_METADATA_HOST. 0, WEFT_ENOTGCE, WEFT_ERANGE. */
int weft__gcp_md_base(char *buf, size_t len);

/* Set up easy handle h for GET url into r, with the Metadata-Flavor header
 * list hdrs, no proxy and the given timeouts (ms). */
int weft__gcp_md_setup(CURL *h, const char *url, struct curl_slist *hdrs, struct weft__gcp_resp *r,
                       long connect_ms, long total_ms);

/* The request headers every metadata request carries; NULL when out of memory. */
struct curl_slist *weft__gcp_md_headers(void);

/* Map a finished transfer to 0 / WEFT_ENOENT / WEFT_EHTTP / WEFT_ETIMEDOUT;
 * *retry set when another try may help (5xx, 429, connection failure). */
int weft__gcp_md_result(CURL *h, CURLcode cc, const struct weft__gcp_resp *r, int *retry);

void weft__gcp_resp_reset(struct weft__gcp_resp *r);
#endif

#endif /* WEFT_GCP_PRIVATE_H */
