/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metadata client and the preemption watch in a build without libcurl:
 * off GCE they behave as the real ones (nothing to ask), on GCE they say
 * what is missing.
 */
#include "gcp_private.h"

#include <stdlib.h>

static int why_not(void)
{
  const char *host = getenv("GCE_METADATA_HOST");

  return (host && *host) || weftx_gcp_dmi_is_gce() ? WEFT_ENOCURL : WEFT_ENOTGCE;
}

int weftx_gcp_md_open(weftx_gcp_md **md)
{
  *md = NULL;
  return why_not();
}

void weftx_gcp_md_close(weftx_gcp_md *md) { (void)md; }

const char *weftx_gcp_md_base(const weftx_gcp_md *md)
{
  (void)md;
  return "";
}

int weftx_gcp_md_get(weftx_gcp_md *md, const char *path, char **value, char *etag, size_t etaglen)
{
  (void)md, (void)path, (void)etag, (void)etaglen;
  *value = NULL;
  return WEFT_ENOCURL;
}

int weftx_gcp_md_wait(weftx_gcp_md *md, const char *path, const char *last_etag, int timeout_sec,
                      char **value, char *etag, size_t etaglen)
{
  (void)md, (void)path, (void)last_etag, (void)timeout_sec, (void)etag, (void)etaglen;
  *value = NULL;
  return WEFT_ENOCURL;
}

int weftx_gcp_watch_start(weftx_gcp_watch **w, weftx_gcp_preempt_fn cb, void *arg)
{
  (void)cb, (void)arg;
  *w = NULL;
  return why_not();
}

void weftx_gcp_watch_stop(weftx_gcp_watch *w) { (void)w; }
