/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel's wire format (ctl.h): frames of typed fields, written
 * into a fixed buffer and read back with every length checked against the
 * frame, so that nothing an agent or a stray connection sends can make a
 * reader go past what it received. Pure: no I/O.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "hmac.h"

static void put_be(unsigned char *p, uint64_t v, int n)
{
  for (int i = n - 1; i >= 0; i--, v >>= 8)
    p[i] = (unsigned char)(v & 0xff);
}

static uint64_t get_be(const unsigned char *p, int n)
{
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

void wt_ctl_begin(wt_ctl_out *m, int type)
{
  m->buf[0] = 'w';
  m->buf[1] = 'f';
  m->buf[2] = WT_CTL_VERSION;
  m->buf[3] = (unsigned char)type;
  put_be(m->buf + 4, 0, 4);
  m->len = WT_CTL_HEADER;
  m->full = 0;
}

static void put_field(wt_ctl_out *m, int tag, const void *v, size_t n)
{
  if (m->len + 3 + n > sizeof(m->buf)) {
    m->full = 1;
    return;
  }
  m->buf[m->len] = (unsigned char)tag;
  put_be(m->buf + m->len + 1, n, 2);
  memcpy(m->buf + m->len + 3, v, n);
  m->len += 3 + n;
  put_be(m->buf + 4, m->len - WT_CTL_HEADER, 4);
}

void wt_ctl_put_int(wt_ctl_out *m, int tag, int64_t v)
{
  unsigned char b[8];
  put_be(b, (uint64_t)v, 8);
  put_field(m, tag, b, 8);
}

void wt_ctl_put_str(wt_ctl_out *m, int tag, const char *s)
{
  size_t n = s ? strlen(s) : 0, room = sizeof(m->buf) - m->len;
  if (n > WT_CTL_MAX_TEXT)
    n = WT_CTL_MAX_TEXT;
  if (room < 3) {
    m->full = 1;
    return;
  }
  if (n > room - 3) {
    n = room - 3;
    m->full = 1;
  }
  put_field(m, tag, s ? s : "", n);
}

long wt_ctl_frame(const unsigned char *buf, size_t len, char *why, size_t whylen)
{
  if (len >= 1 && buf[0] != 'w')
    goto bad_magic;
  if (len >= 2 && buf[1] != 'f')
    goto bad_magic;
  if (len >= 3 && buf[2] != WT_CTL_VERSION) {
    snprintf(why, whylen,
             "control message of version %d; this weft speaks version %d (mixed "
             "weft installations?)",
             buf[2], WT_CTL_VERSION);
    return -1;
  }
  if (len < WT_CTL_HEADER)
    return 0;
  uint64_t n = get_be(buf + 4, 4);
  if (n > WT_CTL_MAX_PAYLOAD) {
    snprintf(why, whylen, "control message of %llu bytes; the most is %d", (unsigned long long)n,
             WT_CTL_MAX_PAYLOAD);
    return -1;
  }
  return len >= WT_CTL_HEADER + n ? (long)(WT_CTL_HEADER + n) : 0;
bad_magic:
  snprintf(why, whylen, "not a weft control message (a stray connection?)");
  return -1;
}

int wt_ctl_decode(const unsigned char *frame, size_t len, wt_ctl_msg *m, char *why, size_t whylen)
{
  char w[160];
  long n = wt_ctl_frame(frame, len, w, sizeof(w));
  if (n <= 0 || (size_t)n != len) {
    snprintf(why, whylen, "%s", n < 0 ? w : "incomplete control message");
    return -1;
  }
  m->version = frame[2];
  m->type = frame[3];
  m->nfields = 0;
  for (size_t off = WT_CTL_HEADER; off < len;) {
    if (len - off < 3) {
      snprintf(why, whylen, "control message %s: a field cut short", wt_ctl_type_name(m->type));
      return -1;
    }
    size_t flen = (size_t)get_be(frame + off + 1, 2);
    if (flen > len - off - 3) {
      snprintf(why, whylen, "control message %s: field %d says %zu bytes, %zu are left",
               wt_ctl_type_name(m->type), frame[off], flen, len - off - 3);
      return -1;
    }
    if (m->nfields >= WT_CTL_MAX_FIELDS) {
      snprintf(why, whylen, "control message %s: more than %d fields", wt_ctl_type_name(m->type),
               WT_CTL_MAX_FIELDS);
      return -1;
    }
    m->f[m->nfields].tag = frame[off];
    m->f[m->nfields].v = frame + off + 3;
    m->f[m->nfields++].len = flen;
    off += 3 + flen;
  }
  return 0;
}

static const wt_ctl_field *find(const wt_ctl_msg *m, int tag)
{
  for (int i = 0; i < m->nfields; i++)
    if (m->f[i].tag == tag)
      return &m->f[i];
  return NULL;
}

int wt_ctl_get_int(const wt_ctl_msg *m, int tag, int64_t *v)
{
  const wt_ctl_field *f = find(m, tag);
  if (!f || f->len != 8)
    return -1;
  *v = (int64_t)get_be(f->v, 8);
  return 0;
}

int64_t wt_ctl_int_or(const wt_ctl_msg *m, int tag, int64_t def)
{
  int64_t v;
  return wt_ctl_get_int(m, tag, &v) ? def : v;
}

int wt_ctl_get_str(const wt_ctl_msg *m, int tag, char *buf, size_t len)
{
  const wt_ctl_field *f = find(m, tag);
  if (!len)
    return -1;
  buf[0] = '\0';
  if (!f)
    return -1;
  size_t n = f->len < len - 1 ? f->len : len - 1;
  memcpy(buf, f->v, n);
  buf[n] = '\0';
  /* a NUL inside ends the text: it is shown, never trusted past that */
  return 0;
}

const char *wt_ctl_type_name(int type)
{
  static const char *const names[] = {"?",         "HELLO",  "WELCOME",   "REFUSE",   "PLACED",
                                      "STARTED",   "EXITED", "HEARTBEAT", "PONG",     "END",
                                      "STACK_REQ", "STACK",  "SAMPLE",    "CHALLENGE"};
  return type > 0 && type < WT_CTL_TYPE_MAX ? names[type] : "?";
}

void wt_ctl_proof(const char *secret, const char *challenge, int64_t rank, const char *host,
                  char out[WT_CTL_PROOF_LEN + 1])
{
  char msg[64 + WT_CTL_MAX_TEXT + WT_CTL_CHALLENGE_LEN], num[24];
  unsigned char mac[WT_SHA256_LEN];
  size_t n = 0;
  const char *part[4] = {"weft-ctl-hello", challenge, num, host ? host : ""};
  snprintf(num, sizeof(num), "%lld", (long long)rank);
  for (int i = 0; i < 4; i++) {
    size_t l = strnlen(part[i], WT_CTL_MAX_TEXT);
    if (l >= sizeof(msg) - n)
      l = sizeof(msg) - n - 1;
    memcpy(msg + n, part[i], l);
    n += l;
    msg[n++] = '\0';
  }
  wt_hmac_sha256(secret, strlen(secret), msg, n, mac);
  wt_hex(mac, sizeof(mac), out);
  memset(msg, 0, sizeof(msg));
  memset(mac, 0, sizeof(mac));
}
