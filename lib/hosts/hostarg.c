/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * -H/--host arguments as mpirun reads them: "a,b:4,user@c,[fe80::1]:2".
 * An entry is host[:slots]; an IPv6 literal takes a count only in brackets,
 * since "fe80::1" would otherwise end in one.
 */
#include "hosts-private.h"

#include <string.h>

#define ENTRY_MAX (WEFTX_HOSTNAME_MAX + 64)

static int arg_error(const char *arg, const char *entry, const char *what, char *why,
                     size_t whylen, int rc)
{
  if (why)
    weft__snprintf(why, whylen, "-H '%.200s': '%.200s': %s", arg, entry, what);
  return rc;
}

/* Split \p entry (modified) into host and count text; count is NULL when none. */
static int split_entry(char *entry, char **host, char **count)
{
  char *colon;

  *count = NULL;
  if (entry[0] == '[') {
    char *close = strchr(entry, ']');
    if (!close)
      return WEFT_EPARSE;
    *close = '\0';
    *host = entry + 1;
    if (close[1] == ':')
      *count = close + 2;
    else if (close[1] != '\0')
      return WEFT_EPARSE;
    return 0;
  }
  *host = entry;
  colon = strchr(entry, ':');
  if (colon && colon == strrchr(entry, ':')) {
    *colon = '\0';
    *count = colon + 1;
  }
  return 0;
}

static int add_entry(weftx_hostlist *hl, const char *arg, const char *entry, size_t len,
                     char *why, size_t whylen)
{
  char buf[ENTRY_MAX + 1], reason[384];
  char *host, *count;
  long slots = 0;
  int rc;

  if (len == 0)
    return arg_error(arg, "", "empty host name; write -H host[:slots][,host[:slots]...]", why,
                     whylen, WEFT_EPARSE);
  if (len > ENTRY_MAX)
    return arg_error(arg, "...", "host entry too long", why, whylen, WEFT_EPARSE);
  memcpy(buf, entry, len);
  buf[len] = '\0';
  if (split_entry(buf, &host, &count))
    return arg_error(arg, buf, "unbalanced '[' ']'; write an IPv6 address as [addr]:slots", why,
                     whylen, WEFT_EPARSE);
  if (count) {
    rc = weftx_parse_long(count, 1, WEFTX_HOSTS_SLOTS_MAX, &slots);
    if (rc) {
      weft__snprintf(reason, sizeof(reason),
                     "'%s' is not a slot count; write host:N with N from 1 to %d", count,
                     WEFTX_HOSTS_SLOTS_MAX);
      return arg_error(arg, buf, reason, why, whylen, rc);
    }
  }
  rc = weftx_hostlist_add(hl, host, (int)slots, 0, "-H", reason, sizeof(reason));
  if (rc) {
    if (why)
      weft__snprintf(why, whylen, "-H '%.200s': %s", arg, reason);
    return rc;
  }
  return 0;
}

int weftx_hosts_parse_arg(weftx_hostlist *hl, const char *arg, char *why, size_t whylen)
{
  const char *p, *comma;
  int rc;

  if (!hl || !arg)
    return WEFT_EINVAL;
  for (p = arg;; p = comma + 1) {
    comma = strchr(p, ',');
    rc = add_entry(hl, arg, p, comma ? (size_t)(comma - p) : strlen(p), why, whylen);
    if (rc)
      return rc;
    if (!comma)
      break;
  }
  weft__hostlist_set_origin(hl, WEFTX_HOSTS_CMDLINE);
  return 0;
}
