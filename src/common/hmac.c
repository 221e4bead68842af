/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 (FIPS 180-4, section 6.2) and HMAC (RFC 2104); see hmac.h. */
#include "config.h"

#include <string.h>

#include "hmac.h"

static const uint32_t K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress(uint32_t h[8], const unsigned char *p)
{
  uint32_t w[64], a, b, c, d, e, f, g, hh;
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 |
           (uint32_t)p[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = ROR(w[t - 15], 7) ^ ROR(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = ROR(w[t - 2], 17) ^ ROR(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
    uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void wt_sha256_init(wt_sha256 *s)
{
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof(iv));
  s->bytes = 0;
  s->used = 0;
}

void wt_sha256_update(wt_sha256 *s, const void *data, size_t len)
{
  const unsigned char *p = data;
  s->bytes += len;
  while (len > 0) {
    size_t n = 64 - s->used < len ? 64 - s->used : len;
    memcpy(s->block + s->used, p, n);
    s->used += n;
    p += n;
    len -= n;
    if (s->used == 64) {
      compress(s->h, s->block);
      s->used = 0;
    }
  }
}

void wt_sha256_final(wt_sha256 *s, unsigned char out[WT_SHA256_LEN])
{
  uint64_t bits = s->bytes * 8;
  unsigned char pad[72] = {0x80};
  size_t n = (s->used < 56 ? 56 : 120) - s->used;
  for (int i = 0; i < 8; i++)
    pad[n + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
  wt_sha256_update(s, pad, n + 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (unsigned char)(s->h[i] >> 24);
    out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
    out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
    out[4 * i + 3] = (unsigned char)s->h[i];
  }
  memset(s, 0, sizeof(*s));
}

void wt_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                    unsigned char out[WT_SHA256_LEN])
{
  unsigned char k[64] = {0}, ipad[64], opad[64], inner[WT_SHA256_LEN];
  wt_sha256 s;
  if (keylen > 64) {
    wt_sha256_init(&s);
    wt_sha256_update(&s, key, keylen);
    wt_sha256_final(&s, k);
  } else if (keylen > 0) {
    memcpy(k, key, keylen);
  }
  for (int i = 0; i < 64; i++) {
    ipad[i] = k[i] ^ 0x36;
    opad[i] = k[i] ^ 0x5c;
  }
  wt_sha256_init(&s);
  wt_sha256_update(&s, ipad, 64);
  wt_sha256_update(&s, msg, msglen);
  wt_sha256_final(&s, inner);
  wt_sha256_init(&s);
  wt_sha256_update(&s, opad, 64);
  wt_sha256_update(&s, inner, sizeof(inner));
  wt_sha256_final(&s, out);
  memset(k, 0, sizeof(k));
  memset(ipad, 0, sizeof(ipad));
  memset(opad, 0, sizeof(opad));
  memset(inner, 0, sizeof(inner));
}

int wt_same_bytes(const void *a, const void *b, size_t n)
{
  const volatile unsigned char *x = a, *y = b;
  unsigned char d = 0;
  for (size_t i = 0; i < n; i++)
    d |= x[i] ^ y[i];
  return d == 0;
}

void wt_hex(const unsigned char *b, size_t n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
}
