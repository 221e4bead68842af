/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libcurl, opened with dlopen() the first time a metadata request is about to
 * be made: weftrun and weft-rank start once per job and per rank, and off
 * Google Cloud they must not pay for loading libcurl and its 30 libraries.
 * The build still needs curl's headers (WEFT_HAVE_CURL); the calls below go
 * through a table filled by weft__curl_load().
 */
#ifndef WEFT_GCP_CURL_DL_H
#define WEFT_GCP_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct weft__curl_api {
  CURLcode (*global_init)(long flags);
  CURL *(*easy_init)(void);
  void (*easy_reset)(CURL *h);
  CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
  CURLcode (*easy_perform)(CURL *h);
  CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
  void (*easy_cleanup)(CURL *h);
  const char *(*easy_strerror)(CURLcode cc);
  struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
  void (*slist_free_all)(struct curl_slist *l);
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
  CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
  CURLMcode (*multi_perform)(CURLM *m, int *running);
  CURLMsg *(*multi_info_read)(CURLM *m, int *left);
  CURLMcode (*multi_wait)(CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *numfds);
  CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *numfds);
  CURLMcode (*multi_wakeup)(CURLM *m);
  CURLMcode (*multi_cleanup)(CURLM *m);
};

extern struct weft__curl_api weft__curl;

/* Open libcurl once (thread-safe) and curl_global_init() it.
 * 0, or WEFT_ENOCURL when libcurl.so.4 cannot be loaded. */
int weft__curl_load(void);

#undef curl_global_init
#define curl_global_init weft__curl.global_init
#undef curl_easy_init
#define curl_easy_init weft__curl.easy_init
#undef curl_easy_reset
#define curl_easy_reset weft__curl.easy_reset
#undef curl_easy_setopt
#define curl_easy_setopt weft__curl.easy_setopt
#undef curl_easy_perform
#define curl_easy_perform weft__curl.easy_perform
#undef curl_easy_getinfo
#define curl_easy_getinfo weft__curl.easy_getinfo
#undef curl_easy_cleanup
#define curl_easy_cleanup weft__curl.easy_cleanup
#undef curl_easy_strerror
#define curl_easy_strerror weft__curl.easy_strerror
#undef curl_slist_append
#define curl_slist_append weft__curl.slist_append
#undef curl_slist_free_all
#define curl_slist_free_all weft__curl.slist_free_all
#undef curl_multi_init
#define curl_multi_init weft__curl.multi_init
#undef curl_multi_add_handle
#define curl_multi_add_handle weft__curl.multi_add_handle
#undef curl_multi_remove_handle
#define curl_multi_remove_handle weft__curl.multi_remove_handle
#undef curl_multi_perform
#define curl_multi_perform weft__curl.multi_perform
#undef curl_multi_info_read
#define curl_multi_info_read weft__curl.multi_info_read
#undef curl_multi_wait
#define curl_multi_wait weft__curl.multi_wait
#undef curl_multi_poll
#define curl_multi_poll weft__curl.multi_poll
#undef curl_multi_wakeup
#define curl_multi_wakeup weft__curl.multi_wakeup
#undef curl_multi_cleanup
#define curl_multi_cleanup weft__curl.multi_cleanup

#endif /* WEFT_GCP_CURL_DL_H */
