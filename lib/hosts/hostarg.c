/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * -H/--host arguments as mpirun 4.1 reads them: "a,b:4,user@c,d:*". An entry
 * is host[:slots]; ":*" and ":auto" leave the count to the host's cores. Open
 * MPI splits an entry at its first ':', so it cannot take IPv6 addresses:
 * they are refused with the reason.
 */
#include "hosts-private.h"

#include <string.h>

#define ENTRY_MAX (WEFTX_HOSTNAME_MAX + 64)

static int arg_error(const char *arg, const char *entry, const char *what, char *why, size_t whylen,
                     int rc)
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
  *host = entry;
  if (entry[0] == '[')
    return WEFT_EPARSE;
  colon = strchr(entry, ':');
  if (colon) {
    if (strchr(colon + 1, ':'))
      return WEFT_ENAME;
    *colon = '\0';
    *count = colon + 1;
  }
  return 0;
}

static int add_entry(weftx_hostlist *hl, const char *arg, const char *entry, size_t len,
                     int keep_fqdn, char *why, size_t whylen)
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
  if ((rc = split_entry(buf, &host, &count)))
    return arg_error(arg, buf,
                     "an IPv6 address, which Open MPI 4.1 cannot launch on (it splits "
                     "-H entries at ':'); use the host's name or IPv4 address",
                     why, whylen, WEFT_ENAME);
  if (count && (!strcmp(count, "*") || !strcmp(count, "auto"))) {
    slots = -1;
  } else if (count) {
    rc = weftx_parse_long(count, 1, WEFTX_HOSTS_SLOTS_MAX, &slots);
    if (rc) {
      weft__snprintf(reason, sizeof(reason),
                     "'%s' is not a slot count; write host:N with N from 1 to %d, or host:*", count,
                     WEFTX_HOSTS_SLOTS_MAX);
      return arg_error(arg, buf, reason, why, whylen, rc);
    }
  }
  rc = weftx_hostlist_add_ompi(hl, host, WEFTX_HOST_DASH, (int)slots, 0, keep_fqdn, "-H", reason,
                               sizeof(reason));
  if (rc) {
    if (why)
      weft__snprintf(why, whylen, "-H '%.200s': %s", arg, reason);
    return rc;
  }
  return 0;
}

int weftx_hosts_parse_arg_ompi(weftx_hostlist *hl, const char *arg, int keep_fqdn, char *why,
                               size_t whylen)
{
  const char *p, *comma;
  int rc;

  if (!hl || !arg)
    return WEFT_EINVAL;
  for (p = arg;; p = comma + 1) {
    comma = strchr(p, ',');
    rc = add_entry(hl, arg, p, comma ? (size_t)(comma - p) : strlen(p), keep_fqdn, why, whylen);
    if (rc)
      return rc;
    if (!comma)
      break;
  }
  weft__hostlist_set_origin(hl, WEFTX_HOSTS_CMDLINE);
  return 0;
}

int weftx_hosts_parse_arg(weftx_hostlist *hl, const char *arg, char *why, size_t whylen)
{
  return weftx_hosts_parse_arg_ompi(hl, arg, 0, why, whylen);
}
