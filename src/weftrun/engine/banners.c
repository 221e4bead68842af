/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpirun's stderr on its way to weftrun's, with the accounts of a failure that
 * weftrun's summary gives in its own words held back: Open MPI writes each of
 * its messages (show_help) as one block between two rules of 74 dashes, in one
 * write, and its ranks' output between them. A block that tells how the job
 * ended ("Primary job terminated normally, but 1 process returned a non-zero
 * exit code", "mpirun detected that one or more processes exited with non-zero
 * status", a daemon that failed or could not be started) is held until the job
 * has ended; weftrun then drops it when its summary names the cause, or writes
 * it before the summary when it does not. Everything else, the ranks' output
 * first, passes as it comes: a partial line at once (a prompt, a progress bar),
 * only a line that starts with dashes waits until it is not a rule any more.
 * Pure but for the writer it is given (tests/unit/test-weftrun-banners.c).
 */
#define _GNU_SOURCE /* memmem */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define RULE_LEN 74           /* Open MPI's show_help rule */
#define BLOCK_MAX (64 * 1024) /* a longer "block" is not one of Open MPI's */

enum { TEXT = 0, RULE, BLOCK };

/* The accounts of how the job ended; weftrun(1) SUPERVISION says which. */
static const char *const ended[] = {
  "terminated normally, but", /* a rank exited non-zero */
  "mpirun detected that one or more processes exited with non-zero status",
  "mpirun noticed that process rank",      /* killed by a signal */
  "mpirun has exited due to process rank", /* exit 0 without finalize */
  "MPI_ABORT was invoked on rank", "ORTE was unable to reliably start one or more daemons",
  "ORTE does not know how to route a message to the specified daemon",
  "ORTE has lost communication with a remote daemon",
  "An ORTE daemon has unexpectedly failed after launch",
  "mpirun was unable to start the specified application",
  /* Open MPI 5's (PRRTE's prterun) */
  "prterun detected that one or more processes exited with non-zero status",
  "prterun noticed that process rank", "prterun has exited due to process rank",
  "prterun was unable to start the specified application", NULL};

void wr_banners_init(wr_banners *b, void (*put)(void *arg, const char *data, size_t len), void *arg)
{
  memset(b, 0, sizeof(*b));
  b->put = put;
  b->arg = arg;
  b->bol = 1;
}

/* Keep \p n bytes of \p data at the end of the block; -1 when out of memory. */
static int keep(wr_banners *b, const char *data, size_t n)
{
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n)
      cap *= 2;
    char *nb = realloc(b->buf, cap);
    if (!nb)
      return -1;
    b->buf = nb;
    b->cap = cap;
  }
  memcpy(b->buf + b->len, data, n);
  b->len += n;
  return 0;
}

static void emit_kept(wr_banners *b)
{
  if (b->len)
    b->put(b->arg, b->buf, b->len);
  b->len = 0;
}

static int is_ending(const char *block, size_t len)
{
  for (int i = 0; ended[i]; i++) {
    size_t n = strlen(ended[i]);
    for (size_t k = 0; k + n <= len; k++)
      if (block[k] == ended[i][0] && !memcmp(block + k, ended[i], n))
        return 1;
  }
  return 0;
}

/* A whole block (both rules) is in buf: held when it tells how the job ended. */
static void block_done(wr_banners *b)
{
  if (!is_ending(b->buf, b->len)) {
    emit_kept(b);
    return;
  }
  char *h = realloc(b->held, b->nheld + b->len);
  if (!h) { /* out of memory: shown, never lost */
    emit_kept(b);
    return;
  }
  memcpy(h + b->nheld, b->buf, b->len);
  b->held = h;
  b->nheld += b->len;
  b->nblocks++;
  b->len = 0;
}

void wr_banners_put(wr_banners *b, const char *data, size_t len)
{
  size_t i = 0;
  while (i < len) {
    if (b->mode == TEXT) {
      if (b->bol && data[i] == '-') {
        b->mode = RULE;
        b->dashes = 0;
        continue;
      }
      /* up to and with the next newline at once */
      const char *nl = memchr(data + i, '\n', len - i);
      size_t n = nl ? (size_t)(nl - (data + i)) + 1 : len - i;
      b->put(b->arg, data + i, n);
      b->bol = nl != NULL;
      i += n;
    } else if (b->mode == RULE) {
      /* a line of dashes so far, kept: the rule that opens a block, or text */
      char c = data[i];
      if (c == '-' && b->dashes < RULE_LEN) {
        b->dashes++;
        if (keep(b, &c, 1)) {
          b->put(b->arg, &c, 1);
          b->mode = TEXT;
          b->bol = 0;
        }
        i++;
      } else if (c == '\n' && b->dashes == RULE_LEN && b->len == RULE_LEN) {
        if (keep(b, &c, 1)) {
          emit_kept(b);
          b->put(b->arg, &c, 1);
          b->mode = TEXT;
          b->bol = 1;
        } else {
          b->mode = BLOCK;
          b->line = b->len;
          b->dashes = 0;
        }
        i++;
      } else {
        emit_kept(b);
        b->mode = TEXT;
        b->bol = 0;
      }
    } else {
      /* BLOCK: lines kept until a rule closes it */
      const char *nl = memchr(data + i, '\n', len - i);
      size_t n = nl ? (size_t)(nl - (data + i)) + 1 : len - i;
      if (keep(b, data + i, n)) {
        emit_kept(b);
        b->put(b->arg, data + i, n);
        b->mode = TEXT;
        b->bol = nl != NULL;
        i += n;
        continue;
      }
      i += n;
      if (!nl)
        continue;
      size_t l = b->line, ll = b->len - l; /* the line just completed, with its newline */
      b->line = b->len;
      if (ll == RULE_LEN + 1 && strspn(b->buf + l, "-") == RULE_LEN) {
        block_done(b);
        b->mode = TEXT;
        b->bol = 1;
      } else if (b->len > BLOCK_MAX) {
        emit_kept(b);
        b->mode = TEXT;
        b->bol = 1;
      }
    }
  }
}

void wr_banners_end(wr_banners *b, int drop_held)
{
  emit_kept(b); /* a block never closed: not one of Open MPI's */
  b->mode = TEXT;
  b->bol = 1;
  if (b->nheld && !drop_held)
    b->put(b->arg, b->held, b->nheld);
  free(b->held);
  free(b->buf);
  b->held = b->buf = NULL;
  b->nheld = b->len = b->cap = 0;
}

char *wr_banners_take(wr_banners *b, size_t *len)
{
  char *h = b->held;
  emit_kept(b);
  b->mode = TEXT;
  b->bol = 1;
  *len = b->nheld;
  free(b->buf);
  b->held = b->buf = NULL;
  b->nheld = b->len = b->cap = 0;
  return h;
}

/* \p n bytes at \p p: where \p what starts in them, or NULL. */
static const char *find_in(const char *p, size_t n, const char *what)
{
  return memmem(p, n, what, strlen(what));
}

int wr_banners_lost_node(const wr_banners *b, char *node, size_t len)
{
  const char *lost = "ORTE has lost communication with a remote daemon", *on = " on node ";
  if (!b->held || !len)
    return 0;
  const char *end = b->held + b->nheld, *at = find_in(b->held, b->nheld, lost);
  const char *r = at ? find_in(at, (size_t)(end - at), "Remote daemon:") : NULL;
  const char *h = r ? find_in(r, (size_t)(end - r), on) : NULL;
  if (!h)
    return 0;
  h += strlen(on);
  size_t n = 0;
  while (h + n < end && h[n] != '\n' && h[n] != ' ' && h[n] != '\r' && h[n] != '\t')
    n++;
  if (!n || n >= len)
    return 0;
  memcpy(node, h, n);
  node[n] = '\0';
  return 1;
}
