/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The libcurl loader: dlopen("libcurl.so.4") on first use, look every
 * function up, run curl_global_init() once. multi_poll and multi_wakeup
 * (curl >= 7.68) may be missing; the watcher falls back to multi_wait then.
 */
#include "gcp_private.h"

#include <dlfcn.h>
#include <pthread.h>

struct weft__curl_api weft__curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = WEFT_ENOCURL;

/* Assign a dlsym() result to a function pointer without a pedantic cast warning. */
#define SYM(field, name, required)                                                                 \
  do {                                                                                             \
    void *s_ = dlsym(lib, name);                                                                   \
    if (!s_ && (required))                                                                         \
      goto fail;                                                                                   \
    memcpy(&weft__curl.field, &s_, sizeof(s_));                                                    \
  } while (0)

static void load(void)
{
  void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

  if (!lib)
    lib = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    WEFT__LOG(GCP, "libcurl cannot be loaded: %s", dlerror());
    return;
  }
  SYM(global_init, "curl_global_init", 1);
  SYM(easy_init, "curl_easy_init", 1);
  SYM(easy_reset, "curl_easy_reset", 1);
  SYM(easy_setopt, "curl_easy_setopt", 1);
  SYM(easy_perform, "curl_easy_perform", 1);
  SYM(easy_getinfo, "curl_easy_getinfo", 1);
  SYM(easy_cleanup, "curl_easy_cleanup", 1);
  SYM(easy_strerror, "curl_easy_strerror", 1);
  SYM(slist_append, "curl_slist_append", 1);
  SYM(slist_free_all, "curl_slist_free_all", 1);
  SYM(multi_init, "curl_multi_init", 1);
  SYM(multi_add_handle, "curl_multi_add_handle", 1);
  SYM(multi_remove_handle, "curl_multi_remove_handle", 1);
  SYM(multi_perform, "curl_multi_perform", 1);
  SYM(multi_info_read, "curl_multi_info_read", 1);
  SYM(multi_wait, "curl_multi_wait", 1);
  SYM(multi_cleanup, "curl_multi_cleanup", 1);
  SYM(multi_poll, "curl_multi_poll", 0);
  SYM(multi_wakeup, "curl_multi_wakeup", 0);
  if (weft__curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    goto fail;
  load_rc = 0;
  return; /* the library stays loaded for the life of the process */
fail:
  WEFT__LOG(GCP, "libcurl is unusable: a function is missing or curl_global_init failed");
  memset(&weft__curl, 0, sizeof(weft__curl));
  dlclose(lib);
}

int weft__curl_load(void)
{
  if (pthread_once(&once, load) != 0)
    return WEFT_ENOCURL;
  return load_rc;
}
