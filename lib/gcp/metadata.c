/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GCE metadata client on libcurl. Every request carries Metadata-Flavor:
 * Google, bypasses any proxy (the server rejects X-Forwarded-For), has short
 * timeouts, and is retried with backoff on 5xx, 429 and connection failures:
 * the server may be away for under a second during host maintenance. The
 * server's reply must carry Metadata-Flavor: Google too, so that a captive
 * portal or a stray web server is never taken for it.
 */
#include "gcp_private.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MD_TRIES 5
#define MD_BACKOFF_MS 100
#define MD_CONNECT_MS 2000L
#define MD_TOTAL_MS 5000L
#define MD_MAX_BODY (1 << 20)

struct weftx_gcp_md {
  CURL *h;
  struct curl_slist *hdrs;
  char base[256];
};

int weft__gcp_md_base(char *buf, size_t len)
{
  const char *host = getenv("GCE_METADATA_HOST");

  if (host && *host)
    return weft__snprintf(buf, len, "http://%s/computeMetadata/v1/", host);
  if (!weftx_gcp_dmi_is_gce())
    return WEFT_ENOTGCE;
  return weft__snprintf(buf, len, "http://metadata.google.internal/computeMetadata/v1/");
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
  struct weft__gcp_resp *r = arg;
  size_t add = size * n;
  char *nb;

  if (r->len + add > MD_MAX_BODY) {
    r->too_big = 1;
    return 0;
  }
  nb = realloc(r->body, r->len + add + 1);
  if (!nb)
    return 0;
  r->body = nb;
  memcpy(r->body + r->len, data, add);
  r->len += add;
  r->body[r->len] = '\0';
  return add;
}

/* Header lines arrive one per call, "Name: value\r\n". */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
  struct weft__gcp_resp *r = arg;
  size_t len = size * n, vlen;
  const char *v;

  if (len > 5 && !strncasecmp(data, "ETag:", 5)) {
    v = data + 5;
  } else if (len > 16 && !strncasecmp(data, "Metadata-Flavor:", 16)) {
    v = data + 16;
    while (v < data + len && *v == ' ')
      v++;
    if ((size_t)(data + len - v) >= 6 && !strncmp(v, "Google", 6))
      r->flavor = 1;
    return len;
  } else {
    return len;
  }
  while (v < data + len && *v == ' ')
    v++;
  vlen = (size_t)(data + len - v);
  while (vlen > 0 && isspace((unsigned char)v[vlen - 1]))
    vlen--;
  /* The ETag goes back in a query string: drop the quotes of an HTTP entity tag. */
  if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
    v++;
    vlen -= 2;
  }
  for (size_t i = 0; i < vlen; i++)
    if (!isalnum((unsigned char)v[i]) && v[i] != '-' && v[i] != '_')
      return len; /* not a token we can send back: keep none */
  if (vlen >= sizeof(r->etag))
    vlen = sizeof(r->etag) - 1;
  memcpy(r->etag, v, vlen);
  r->etag[vlen] = '\0';
  return len;
}

void weft__gcp_resp_reset(struct weft__gcp_resp *r)
{
  free(r->body);
  memset(r, 0, sizeof(*r));
}

struct curl_slist *weft__gcp_md_headers(void)
{
  struct curl_slist *l = curl_slist_append(NULL, "Metadata-Flavor: Google");
  struct curl_slist *l2;

  if (!l)
    return NULL;
  /* No "Expect:" or proxy headers; say nothing that the server might reject. */
  l2 = curl_slist_append(l, "Accept: */*");
  if (!l2) {
    curl_slist_free_all(l);
    return NULL;
  }
  return l2;
}

int weft__gcp_md_setup(CURL *h, const char *url, struct curl_slist *hdrs, struct weft__gcp_resp *r,
                       long connect_ms, long total_ms)
{
  curl_easy_reset(h);
  if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total_ms) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_WRITEDATA, r) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_HEADERDATA, r) != CURLE_OK ||
      curl_easy_setopt(h, CURLOPT_PRIVATE, r) != CURLE_OK)
    return WEFT_EHTTP;
  return 0;
}

int weft__gcp_md_result(CURL *h, CURLcode cc, const struct weft__gcp_resp *r, int *retry)
{
  long code = 0;

  *retry = 0;
  if (cc == CURLE_OPERATION_TIMEDOUT)
    return WEFT_ETIMEDOUT;
  if (cc != CURLE_OK) {
    *retry = (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
              cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING);
    WEFT__LOG(GCP, "metadata: %s", curl_easy_strerror(cc));
    return WEFT_EHTTP;
  }
  if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
    return WEFT_EHTTP;
  if (code >= 500 || code == 429) {
    *retry = 1;
    return WEFT_EHTTP;
  }
  if (code == 404)
    return WEFT_ENOENT;
  if (code != 200 || !r->flavor)
    return WEFT_EHTTP;
  return 0;
}

int weftx_gcp_md_open(weftx_gcp_md **out)
{
  weftx_gcp_md *md;
  int rc;

  *out = NULL;
  md = calloc(1, sizeof(*md));
  if (!md)
    return WEFT_ENOMEM;
  rc = weft__gcp_md_base(md->base, sizeof(md->base));
  if (rc == 0)
    rc = weft__curl_load();
  if (rc == 0) {
    md->h = curl_easy_init();
    md->hdrs = weft__gcp_md_headers();
    if (!md->h || !md->hdrs)
      rc = WEFT_ENOMEM;
  }
  if (rc != 0) {
    weftx_gcp_md_close(md);
    return rc;
  }
  WEFT__LOG(GCP, "metadata server %s", md->base);
  *out = md;
  return 0;
}

void weftx_gcp_md_close(weftx_gcp_md *md)
{
  if (!md)
    return;
  /* Before libcurl is loaded (off GCE) there is nothing to free with it. */
  if (md->h)
    curl_easy_cleanup(md->h);
  if (md->hdrs)
    curl_slist_free_all(md->hdrs);
  free(md);
}

const char *weftx_gcp_md_base(const weftx_gcp_md *md) { return md->base; }

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  while (nanosleep(&ts, &ts) != 0)
    ;
}

static int request(weftx_gcp_md *md, const char *url, long total_ms, char **value, char *etag,
                   size_t etaglen)
{
  struct weft__gcp_resp r;
  long backoff = MD_BACKOFF_MS;
  int rc = WEFT_EHTTP, retry = 0;

  memset(&r, 0, sizeof(r));
  for (int t = 0; t < MD_TRIES; t++) {
    if (t > 0) {
      WEFT__LOG(GCP, "metadata %s: retry %d in %ld ms", url, t, backoff);
      sleep_ms(backoff);
      backoff *= 2;
    }
    weft__gcp_resp_reset(&r);
    rc = weft__gcp_md_setup(md->h, url, md->hdrs, &r, MD_CONNECT_MS, total_ms);
    if (rc != 0)
      break;
    rc = weft__gcp_md_result(md->h, curl_easy_perform(md->h), &r, &retry);
    if (r.too_big)
      rc = WEFT_ERANGE;
    if (rc == 0 || !retry)
      break;
  }
  if (rc == 0) {
    *value = r.body ? r.body : strdup("");
    r.body = NULL;
    if (!*value)
      rc = WEFT_ENOMEM;
    if (rc == 0 && etag && weft__snprintf(etag, etaglen, "%s", r.etag) != 0)
      etag[0] = '\0';
  }
  weft__gcp_resp_reset(&r);
  WEFT__LOG(GCP, "GET %s: %s", url, weft_strerror(rc));
  return rc;
}

int weftx_gcp_md_get(weftx_gcp_md *md, const char *path, char **value, char *etag, size_t etaglen)
{
  char url[1024];

  *value = NULL;
  if (weft__snprintf(url, sizeof(url), "%s%s", md->base, path) != 0)
    return WEFT_ERANGE;
  return request(md, url, MD_TOTAL_MS, value, etag, etaglen);
}

int weftx_gcp_md_wait(weftx_gcp_md *md, const char *path, const char *last_etag, int timeout_sec,
                      char **value, char *etag, size_t etaglen)
{
  char url[1024];

  *value = NULL;
  if (timeout_sec < 1 || timeout_sec > 3600)
    return WEFT_EINVAL;
  if (weft__snprintf(url, sizeof(url), "%s%s?wait_for_change=true&timeout_sec=%d%s%s", md->base,
                     path, timeout_sec, last_etag ? "&last_etag=" : "",
                     last_etag ? last_etag : "") != 0)
    return WEFT_ERANGE;
  /* The server answers after timeout_sec at the latest; allow for a slow reply. */
  return request(md, url, (timeout_sec + 5) * 1000L, value, etag, etaglen);
}
