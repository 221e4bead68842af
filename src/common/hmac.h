/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the control channel's
 * challenge (ctl.h): the per-job secret proves itself without travelling.
 * Written from the specifications so that weft needs no crypto library; the
 * unit test checks RFC 4231's test vectors. Not for bulk data: it is small,
 * not fast.
 */
#ifndef WT_HMAC_H
#define WT_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define WT_SHA256_LEN 32

typedef struct wt_sha256 {
  uint32_t h[8];
  uint64_t bytes; /* message length so far */
  unsigned char block[64];
  size_t used; /* bytes in block */
} wt_sha256;

void wt_sha256_init(wt_sha256 *s);
void wt_sha256_update(wt_sha256 *s, const void *data, size_t len);
void wt_sha256_final(wt_sha256 *s, unsigned char out[WT_SHA256_LEN]);

/** \brief HMAC-SHA256 of \p msg keyed by \p key (any length). */
void wt_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                    unsigned char out[WT_SHA256_LEN]);

/** \brief 1 when the \p n bytes of \p a and \p b are equal, in a time that does not
 * depend on where they differ. */
int wt_same_bytes(const void *a, const void *b, size_t n);

/** \brief \p n bytes as 2n lower-case hex digits and a NUL into \p out (2n+1 bytes). */
void wt_hex(const unsigned char *b, size_t n, char *out);

#endif /* WT_HMAC_H */
