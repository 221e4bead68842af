/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host list: an ordered set of hosts with their slots, merged as mpirun
 * merges them (a host named twice adds up its slots). Each entry keeps what
 * the input said (numbered slots, unnumbered listings) so that "a" alone
 * means "the machine decides" while "a,a" means two slots.
 */
#include "hosts-private.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct entry {
  weftx_host h;   /* what callers see; its strings are owned here */
  long numbered;  /* sum of the slots the input gave */
  int unnumbered; /* listings that gave no count */
};

/* Names are found through an open-addressing hash index of the entries (slots hold
 * entry index + 1, 0 for empty), kept at most half full, so that adding n hosts (a
 * 100,000-line hostfile) takes time linear in n. Names compare case-insensitively,
 * so they hash case-folded. */
struct weftx_hostlist {
  struct entry *v;
  int n, cap;
  int *index;
  size_t nindex; /* a power of two, or 0 before the first host */
  weftx_hosts_origin origin;
  int keep_fqdn;
};

int weft__hostlist_fqdn(const weftx_hostlist *hl) { return hl->keep_fqdn; }

void weft__hostlist_set_fqdn(weftx_hostlist *hl, int keep) { hl->keep_fqdn = keep; }

int weftx_hostlist_create(weftx_hostlist **out)
{
  *out = calloc(1, sizeof(**out));
  return *out ? 0 : WEFT_ENOMEM;
}

static void entry_free(struct entry *e)
{
  free((char *)e->h.name);
  free((char *)e->h.user);
  free((char *)e->h.source);
  free((char *)e->h.typed);
}

void weftx_hostlist_destroy(weftx_hostlist *hl)
{
  if (!hl)
    return;
  for (int i = 0; i < hl->n; i++)
    entry_free(&hl->v[i]);
  free(hl->v);
  free(hl->index);
  free(hl);
}

/* FNV-1a over the case-folded name, then a mix of the high bits into the low ones
 * (the index keeps the low bits, which FNV's multiply alone leaves poorly mixed:
 * "node000001".."node099999" would probe long runs). */
static size_t name_hash(const char *name)
{
  unsigned long long h = 0xcbf29ce484222325ULL;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    h ^= (unsigned long long)(*c >= 'A' && *c <= 'Z' ? *c + ('a' - 'A') : *c);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h;
}

/* The index slot where \p name is, or the empty slot where it would go. */
static size_t slot_of(const weftx_hostlist *hl, const char *name)
{
  size_t mask = hl->nindex - 1, i = name_hash(name) & mask;
  while (hl->index[i] && strcasecmp(hl->v[hl->index[i] - 1].h.name, name) != 0)
    i = (i + 1) & mask;
  return i;
}

/* Room in the index for one more name. */
static int index_grow(weftx_hostlist *hl)
{
  size_t n = hl->nindex ? hl->nindex : 16;
  int *old = hl->index;

  if ((size_t)(hl->n + 1) * 2 <= hl->nindex)
    return 0;
  while ((size_t)(hl->n + 1) * 2 > n)
    n *= 2;
  if (!(hl->index = calloc(n, sizeof(*hl->index)))) {
    hl->index = old;
    return WEFT_ENOMEM;
  }
  hl->nindex = n;
  for (int i = 0; i < hl->n; i++)
    hl->index[slot_of(hl, hl->v[i].h.name)] = i + 1;
  free(old);
  return 0;
}

int weftx_hostlist_count(const weftx_hostlist *hl) { return hl ? hl->n : 0; }

const weftx_host *weftx_hostlist_host(const weftx_hostlist *hl, int i)
{
  if (!hl || i < 0 || i >= hl->n)
    return NULL;
  return &hl->v[i].h;
}

int weftx_hostlist_find(const weftx_hostlist *hl, const char *name)
{
  if (!hl || !name || !hl->nindex)
    return -1;
  return hl->index[slot_of(hl, name)] - 1;
}

long weftx_hostlist_total_slots(const weftx_hostlist *hl)
{
  long sum = 0;

  for (int i = 0; hl && i < hl->n; i++)
    sum += hl->v[i].h.slots;
  return sum;
}

weftx_hosts_origin weftx_hostlist_origin(const weftx_hostlist *hl)
{
  return hl ? hl->origin : WEFTX_HOSTS_NONE;
}

const char *weftx_hosts_origin_name(weftx_hosts_origin o)
{
  switch (o) {
  case WEFTX_HOSTS_CMDLINE: return "-H";
  case WEFTX_HOSTS_HOSTFILE: return "hostfile";
  case WEFTX_HOSTS_SLURM: return "SLURM_JOB_NODELIST";
  case WEFTX_HOSTS_LOCAL: return "local host";
  default: return "none";
  }
}

void weft__hostlist_set_origin(weftx_hostlist *hl, weftx_hosts_origin o) { hl->origin = o; }

/* Slots from the listings: one listing without a count leaves the machine to
 * decide (0); otherwise counts add up and each unnumbered listing is one. */
static void entry_settle(struct entry *e)
{
  long s;

  if (e->numbered == 0 && e->unnumbered <= 1) {
    s = 0;
    e->h.slots_given = 0;
  } else {
    s = e->numbered + e->unnumbered;
    e->h.slots_given = 1;
  }
  if (s == 0 && e->h.max_slots > 0) {
    s = e->h.max_slots;
    e->h.slots_given = 1;
  }
  e->h.slots = s > INT_MAX ? INT_MAX : (int)s;
}

static int grow(weftx_hostlist *hl)
{
  struct entry *v;
  int cap;

  if (hl->n < hl->cap)
    return 0;
  cap = hl->cap ? 2 * hl->cap : 8;
  v = realloc(hl->v, (size_t)cap * sizeof(*v));
  if (!v)
    return WEFT_ENOMEM;
  hl->v = v;
  hl->cap = cap;
  return 0;
}

static int entry_new(weftx_hostlist *hl, const char *name, const char *source)
{
  const char *at = strchr(name, '@');
  struct entry *e;
  int rc = grow(hl);

  if (!rc)
    rc = index_grow(hl);
  if (rc)
    return rc;
  e = &hl->v[hl->n];
  memset(e, 0, sizeof(*e));
  e->h.name = strdup(at ? at + 1 : name);
  e->h.user = at ? strndup(name, (size_t)(at - name)) : NULL;
  e->h.source = strdup(source ? source : "");
  if (!e->h.name || (at && !e->h.user) || !e->h.source) {
    entry_free(e);
    return WEFT_ENOMEM;
  }
  size_t slot = slot_of(hl, e->h.name);
  hl->index[slot] = ++hl->n;
  return 0;
}

/* A host named again with "user@": the user must agree with the first naming. */
static int merge_user(struct entry *e, const char *name, const char *at, char *why, size_t whylen)
{
  size_t len = at ? (size_t)(at - name) : 0;

  if (!at || (e->h.user && strlen(e->h.user) == len && strncmp(e->h.user, name, len) == 0))
    return 0;
  if (e->h.user) {
    if (why)
      weft__snprintf(why, whylen,
                     "'%s': host '%s' is already listed with user '%s'; use one "
                     "user per host",
                     name, e->h.name, e->h.user);
    return WEFT_ENAME;
  }
  e->h.user = strndup(name, len);
  return e->h.user ? 0 : WEFT_ENOMEM;
}

int weftx_hostlist_add(weftx_hostlist *hl, const char *name, int slots, int max_slots,
                       const char *source, char *why, size_t whylen)
{
  const char *at;
  struct entry *e;
  int i, rc;

  if (!hl || !name)
    return WEFT_EINVAL;
  rc = weftx_hostname_check(name, why, whylen);
  if (rc)
    return rc;
  if (slots < 0 || slots > WEFTX_HOSTS_SLOTS_MAX || max_slots < 0 ||
      max_slots > WEFTX_HOSTS_SLOTS_MAX) {
    if (why)
      weft__snprintf(why, whylen, "'%s': slots must be from 1 to %d", name, WEFTX_HOSTS_SLOTS_MAX);
    return WEFT_ERANGE;
  }
  if (slots > 0 && max_slots > 0 && slots > max_slots) {
    if (why)
      weft__snprintf(why, whylen,
                     "'%s': slots=%d is more than max_slots=%d; raise max_slots "
                     "or lower slots",
                     name, slots, max_slots);
    return WEFT_ERANGE;
  }
  at = strchr(name, '@');
  i = weftx_hostlist_find(hl, at ? at + 1 : name);
  if (i < 0) {
    rc = entry_new(hl, name, source);
    if (rc)
      return rc;
    i = hl->n - 1;
  }
  e = &hl->v[i];
  rc = merge_user(e, name, at, why, whylen);
  if (rc)
    return rc;
  e->h.listed++;
  if (slots > 0)
    e->numbered += slots;
  else
    e->unnumbered++;
  if (max_slots > e->h.max_slots)
    e->h.max_slots = max_slots;
  entry_settle(e);
  /* Open MPI's view, for inputs it reads this way (Slurm's counts); the -H and
   * hostfile parsers set their own with weftx_hostlist_add_ompi() */
  e->h.ompi_slots = e->h.slots;
  e->h.ompi_given = e->h.slots_given;
  return 0;
}

int weftx_hostlist_default_slots(weftx_hostlist *hl, int i, int slots)
{
  if (!hl || i < 0 || i >= hl->n || slots < 1)
    return WEFT_EINVAL;
  if (hl->v[i].h.slots == 0)
    hl->v[i].h.slots = slots;
  return 0;
}

/* Open MPI shortens a host name to its first label unless it is an address. */
static int shorten(const char *name, int keep_fqdn, char *out, size_t len)
{
  const char *at = strchr(name, '@'), *host = at ? at + 1 : name, *dot = strchr(host, '.');
  unsigned char bin[4];

  if (keep_fqdn || !dot || inet_pton(AF_INET, host, bin) == 1)
    return weft__snprintf(out, len, "%s", name);
  return weft__snprintf(out, len, "%.*s", (int)(dot - name), name);
}

int weftx_hostlist_add_ompi(weftx_hostlist *hl, const char *name, weftx_host_form form, int slots,
                            int max_slots, int keep_fqdn, const char *source, char *why,
                            size_t whylen)
{
  char shortname[WEFTX_HOSTNAME_MAX + 64];
  const char *at;
  struct entry *e;
  int i, before, rc;

  if (!hl || !name)
    return WEFT_EINVAL;
  if ((rc = weftx_hostname_check(name, why, whylen)))
    return rc;
  if (shorten(name, keep_fqdn, shortname, sizeof(shortname)))
    return WEFT_ENAME;
  at = strchr(shortname, '@');
  i = weftx_hostlist_find(hl, at ? at + 1 : shortname);
  before = i >= 0;
  if (before && form == WEFTX_HOST_LINE && slots > 0) {
    if (why)
      weft__snprintf(why, whylen,
                     "host '%s' is already listed (%s) and Open MPI refuses a slot "
                     "count on a host listed twice; give it one line with slots=N, or list it "
                     "once per slot",
                     hl->v[i].h.name, hl->v[i].h.source);
    return WEFT_EPARSE;
  }
  {
    /* weftx_hostlist_add() resets Open MPI's count: keep the one so far */
    int os = before ? hl->v[i].h.ompi_slots : 0, og = before ? hl->v[i].h.ompi_given : 0;
    rc = weftx_hostlist_add(hl, shortname, slots > 0 ? slots : 0, max_slots, source, why, whylen);
    if (rc)
      return rc;
    i = weftx_hostlist_find(hl, at ? at + 1 : shortname);
    e = &hl->v[i];
    e->h.ompi_slots = os;
    e->h.ompi_given = og;
  }
  if (!before && strcmp(shortname, name) && !(e->h.typed = strdup(name)))
    return WEFT_ENOMEM;
  if (before) {
    /* named again: one more slot, or the count given (-H) */
    e->h.ompi_slots += form == WEFTX_HOST_DASH && slots > 0 ? slots : 1;
    e->h.ompi_given = 1;
  } else if (form == WEFTX_HOST_DASH) {
    e->h.ompi_slots = slots > 0 ? slots : slots < 0 ? 0 : 1;
    e->h.ompi_given = slots >= 0;
  } else {
    e->h.ompi_slots = slots > 0 ? slots : 1;
    e->h.ompi_given = slots > 0;
  }
  return 0;
}
