/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Preemption watch. One thread long-polls instance/preempted and
 * instance/maintenance-event together on a curl multi handle: each key is
 * read once for its value and ETag, then waited on with
 * wait_for_change=true&last_etag=E, so that no change between two requests
 * is missed. The first notice (preempted TRUE, or a maintenance event that
 * stops the VM) calls the callback once. Errors back off and retry; a key the
 * server does not have (404: no maintenance-event on VMs without GPUs and
 * without migration) is dropped. Stopping wakes the thread at once.
 */
#include "gcp_private.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_WAIT_SEC 60
#define WATCH_BACKOFF_MIN_MS 500L
#define WATCH_BACKOFF_MAX_MS 5000L

struct watch_key {
  const char *path;
  const char *what;
  CURL *h;
  struct weft__gcp_resp r;
  char etag[128]; /* "" before the first answer, or when the server sends none */
  int read_once;
  int active; /* a transfer is in the multi handle */
  int dropped;
  long retry_at; /* monotonic ms before which no new transfer starts */
  long backoff;
};

struct weftx_gcp_watch {
  pthread_t thread;
  CURLM *multi;
  struct curl_slist *hdrs;
  char base[256];
  atomic_int stop;
  weftx_gcp_preempt_fn cb;
  void *arg;
  struct watch_key keys[2];
};

static long now_ms(void) { return (long)(weftx_monotonic() * 1000); }

/* A value that means the VM is going away. */
static int is_notice(const struct watch_key *k, const char *v)
{
  size_t n = strcspn(v, " \t\r\n");

  if (!strcmp(k->what, "preempted"))
    return n == 4 && !strncmp(v, "TRUE", 4);
  /* MIGRATE_ON_HOST_MAINTENANCE is a live migration the job survives. */
  return n > 0 && strncmp(v, "NONE", n) != 0 && strncmp(v, "MIGRATE_ON_HOST_MAINTENANCE", n) != 0;
}

static int start_key(weftx_gcp_watch *w, struct watch_key *k)
{
  char url[1024];
  int rc;

  if (k->read_once)
    rc = weft__snprintf(url, sizeof(url), "%s%s?wait_for_change=true&timeout_sec=%d%s%s", w->base,
                        k->path, WATCH_WAIT_SEC, k->etag[0] ? "&last_etag=" : "", k->etag);
  else
    rc = weft__snprintf(url, sizeof(url), "%s%s", w->base, k->path);
  if (rc != 0)
    return rc;
  weft__gcp_resp_reset(&k->r);
  rc = weft__gcp_md_setup(k->h, url, w->hdrs, &k->r, 2000L, (WATCH_WAIT_SEC + 10) * 1000L);
  if (rc != 0)
    return rc;
  if (curl_multi_add_handle(w->multi, k->h) != CURLM_OK)
    return WEFT_EHTTP;
  k->active = 1;
  return 0;
}

/* A transfer of k ended with cc. Returns 1 when it was the notice. */
static int finish_key(weftx_gcp_watch *w, struct watch_key *k, CURLcode cc)
{
  int retry, rc;

  curl_multi_remove_handle(w->multi, k->h);
  k->active = 0;
  rc = weft__gcp_md_result(k->h, cc, &k->r, &retry);
  if (rc == WEFT_ENOENT) {
    WEFT__LOG(GCP, "watch: %s absent, not watched", k->path);
    k->dropped = 1;
    return 0;
  }
  if (rc != 0) {
    WEFT__LOG(GCP, "watch: %s: %s, retry in %ld ms", k->path, weft_strerror(rc), k->backoff);
    k->retry_at = now_ms() + k->backoff;
    k->backoff = k->backoff * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS : k->backoff * 2;
    return 0;
  }
  k->backoff = WATCH_BACKOFF_MIN_MS;
  weft__snprintf(k->etag, sizeof(k->etag), "%s", k->r.etag);
  k->read_once = 1;
  WEFT__LOG(GCP, "watch: %s = %s (etag %s)", k->path, k->r.body ? k->r.body : "", k->etag);
  if (k->r.body && is_notice(k, k->r.body)) {
    char value[128];
    size_t n = strcspn(k->r.body, "\r\n");
    if (n >= sizeof(value))
      n = sizeof(value) - 1;
    memcpy(value, k->r.body, n);
    value[n] = '\0';
    w->cb(w->arg, k->what, value);
    return 1;
  }
  return 0;
}

static void *watch_main(void *arg)
{
  weftx_gcp_watch *w = arg;
  int fired = 0;

  while (!atomic_load(&w->stop) && !fired) {
    long t = now_ms(), wait = 1000;
    int running, live = 0, msgs, finished = 0;
    CURLMsg *m;

    for (int i = 0; i < 2; i++) {
      struct watch_key *k = &w->keys[i];
      if (k->dropped)
        continue;
      live = 1;
      if (!k->active && t >= k->retry_at && start_key(w, k) != 0)
        k->retry_at = t + WATCH_BACKOFF_MAX_MS;
      if (!k->active && k->retry_at - t < wait)
        wait = k->retry_at - t;
    }
    if (!live) {
      WEFT__LOG(GCP,
                "watch: neither instance/preempted nor maintenance-event exists; nothing to watch");
      break;
    }
    if (curl_multi_perform(w->multi, &running) != CURLM_OK) {
      /* Said once, on stderr: the job goes on, but no longer protected. */
      fprintf(stderr, "weft: the preemption watch stopped (libcurl failed); this job will not "
                      "see a preemption notice: check instance/preempted yourself\n");
      break;
    }
    while ((m = curl_multi_info_read(w->multi, &msgs)) != NULL && !fired) {
      if (m->msg != CURLMSG_DONE)
        continue;
      for (int i = 0; i < 2; i++)
        if (w->keys[i].h == m->easy_handle)
          fired = finish_key(w, &w->keys[i], m->data.result);
      finished = 1;
    }
    if (fired || atomic_load(&w->stop))
      break;
    if (finished)
      continue; /* start the next requests before sleeping */
    /* Without curl_multi_wakeup (curl < 7.68) stop is seen within 100 ms. */
    if (weft__curl.multi_poll && weft__curl.multi_wakeup)
      curl_multi_poll(w->multi, NULL, 0, (int)(wait > 0 ? wait : 1), NULL);
    else
      curl_multi_wait(w->multi, NULL, 0, (int)(wait > 100 || wait <= 0 ? 100 : wait), NULL);
  }
  return NULL;
}

static void watch_free(weftx_gcp_watch *w)
{
  for (int i = 0; i < 2; i++) {
    struct watch_key *k = &w->keys[i];
    if (k->h) {
      if (k->active)
        curl_multi_remove_handle(w->multi, k->h);
      curl_easy_cleanup(k->h);
    }
    weft__gcp_resp_reset(&k->r);
  }
  if (w->multi)
    curl_multi_cleanup(w->multi);
  if (w->hdrs)
    curl_slist_free_all(w->hdrs);
  free(w);
}

int weftx_gcp_watch_start(weftx_gcp_watch **out, weftx_gcp_preempt_fn cb, void *arg)
{
  weftx_gcp_watch *w;
  int rc;

  *out = NULL;
  if (!cb)
    return WEFT_EINVAL;
  w = calloc(1, sizeof(*w));
  if (!w)
    return WEFT_ENOMEM;
  w->cb = cb;
  w->arg = arg;
  atomic_init(&w->stop, 0);
  w->keys[0].path = "instance/preempted";
  w->keys[0].what = "preempted";
  w->keys[1].path = "instance/maintenance-event";
  w->keys[1].what = "maintenance-event";
  rc = weft__gcp_md_base(w->base, sizeof(w->base));
  if (rc == 0)
    rc = weft__curl_load();
  if (rc == 0) {
    w->multi = curl_multi_init();
    w->hdrs = weft__gcp_md_headers();
    for (int i = 0; i < 2; i++) {
      w->keys[i].h = curl_easy_init();
      w->keys[i].backoff = WATCH_BACKOFF_MIN_MS;
      if (!w->keys[i].h)
        rc = WEFT_ENOMEM;
    }
    if (!w->multi || !w->hdrs)
      rc = WEFT_ENOMEM;
  }
  if (rc == 0 && pthread_create(&w->thread, NULL, watch_main, w) != 0)
    rc = WEFT_ESYS;
  if (rc != 0) {
    watch_free(w);
    return rc;
  }
  WEFT__LOG(GCP, "watching %spreempted and maintenance-event", w->base);
  *out = w;
  return 0;
}

void weftx_gcp_watch_stop(weftx_gcp_watch *w)
{
  if (!w)
    return;
  atomic_store(&w->stop, 1);
  if (weft__curl.multi_wakeup)
    curl_multi_wakeup(w->multi);
  pthread_join(w->thread, NULL);
  watch_free(w);
}
