/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The restart policy, pure (times are passed in): whether an attempt's end is
 * restarted, the cooldown of hosts that failed (doubled at each failure, as
 * Horovod's elastic blacklist), the backoff between attempts that fail fast
 * (no restart storm), the hosts of the next attempt, and the discovery
 * command's output read with the hostfile grammar (lib/hosts/hostfile.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hosts/hosts.h"
#include "restart/restart.h"
#include "supervise/supervise.h"

double wr_rs_cooldown(int fails)
{
  double c = WR_COOLDOWN_S;
  for (int i = 1; i < fails && c < WR_COOLDOWN_MAX_S; i++)
    c *= 2;
  return c < WR_COOLDOWN_MAX_S ? c : WR_COOLDOWN_MAX_S;
}

double wr_rs_backoff(int fast)
{
  if (fast <= 0)
    return 0;
  double b = WR_BACKOFF_S;
  for (int i = 1; i < fast && b < WR_BACKOFF_MAX_S; i++)
    b *= 2;
  return b < WR_BACKOFF_MAX_S ? b : WR_BACKOFF_MAX_S;
}

int wr_rs_restartable(const wr_attempt *a, int code, int restart_on)
{
  if (code == 0)
    return 0;
  if (code == WR_EXIT_HOSTLOST || code == WR_EXIT_PREEMPTED)
    return 1;
  if (restart_on != WR_RESTART_ON_ANY || !a->ran)
    return 0;
  /* the job ran and failed; not when weftrun was asked to stop or --timeout ended it */
  return a->end != WR_END_SIGNAL && a->end != WR_END_TIMEOUT;
}

static wr_rs_host *find(const wr_rs_state *st, const char *name)
{
  for (int i = 0; i < st->nbad; i++)
    if (wr_same_host(st->bad[i].name, name))
      return &st->bad[i];
  return NULL;
}

int wr_rs_note(wr_rs_state *st, const wr_attempt *a, double now)
{
  for (int i = 0; i < a->nlost; i++) {
    wr_rs_host *h = find(st, a->lost[i]);
    if (!h) {
      wr_rs_host *v = realloc(st->bad, (size_t)(st->nbad + 1) * sizeof(*v));
      if (!v)
        return WEFT_ENOMEM;
      st->bad = v;
      h = &v[st->nbad++];
      memset(h, 0, sizeof(*h));
      snprintf(h->name, sizeof(h->name), "%s", a->lost[i]);
    }
    h->fails++;
    h->until = now + wr_rs_cooldown(h->fails);
  }
  int fast = !a->running || (a->ended - a->running) < WR_FAST_S;
  st->fast = fast ? st->fast + 1 : 0;
  return 0;
}

int wr_rs_left_out(const wr_rs_state *st, const char *name, double now, double *until)
{
  const wr_rs_host *h = find(st, name);
  if (!h || h->until <= now)
    return 0;
  if (until)
    *until = h->until;
  return 1;
}

int wr_rs_select(const wr_rs_state *st, const wr_given_host *in, int n, double now, long max,
                 wr_given_host *out)
{
  int k = 0;
  for (int i = 0; i < n && (max <= 0 || k < max); i++)
    if (!wr_rs_left_out(st, in[i].name, now, NULL))
      out[k++] = in[i];
  return k;
}

double wr_rs_next_back(const wr_rs_state *st, double now)
{
  double next = 0;
  for (int i = 0; i < st->nbad; i++)
    if (st->bad[i].until > now && (!next || st->bad[i].until < next))
      next = st->bad[i].until;
  return next;
}

void wr_rs_state_free(wr_rs_state *st)
{
  free(st->bad);
  st->bad = NULL;
  st->nbad = 0;
}

int wr_rs_parse_hosts(const char *text, size_t len, wr_given_host **out, int *n, char *why,
                      size_t whylen)
{
  weftx_hostlist *hl = NULL;
  *out = NULL;
  *n = 0;
  /* nothing but blank lines and comments: no host now (the hostfile parser refuses it) */
  int any = 0;
  for (size_t i = 0; i < len && !any;) {
    size_t e = i;
    while (e < len && text[e] != '\n')
      e++;
    size_t b = i;
    while (b < e && (text[b] == ' ' || text[b] == '\t' || text[b] == '\r'))
      b++;
    any = b < e && text[b] != '#';
    i = e + 1;
  }
  if (!any)
    return 0;
  FILE *f = fmemopen((void *)text, len, "r");
  int rc = f ? weftx_hostlist_create(&hl) : WEFT_ENOMEM;
  if (!rc)
    rc = weftx_hostfile_read(hl, f, "output", why, whylen);
  if (f)
    fclose(f);
  int count = rc ? 0 : weftx_hostlist_count(hl);
  wr_given_host *v = count ? calloc((size_t)count, sizeof(*v)) : NULL;
  if (!rc && count && !v)
    rc = WEFT_ENOMEM;
  for (int i = 0; !rc && i < count; i++) {
    const weftx_host *h = weftx_hostlist_host(hl, i);
    snprintf(v[i].name, sizeof(v[i].name), "%s", h->name);
    v[i].slots = h->slots;
    v[i].max_slots = h->max_slots;
  }
  weftx_hostlist_destroy(hl);
  if (rc) {
    free(v);
    if (rc == WEFT_ENOMEM)
      snprintf(why, whylen, "out of memory");
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

void wr_rs_write_hosts(FILE *f, const wr_given_host *h, int n)
{
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s", h[i].name);
    if (h[i].slots > 0)
      fprintf(f, " slots=%d", h[i].slots);
    if (h[i].max_slots > 0)
      fprintf(f, " max_slots=%d", h[i].max_slots);
    fputc('\n', f);
  }
}
