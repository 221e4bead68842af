/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host name validation. A name accepted here is safe as one argument of ssh or
 * mpirun and in a shell command line without quoting, and is one Open MPI 4.1
 * can launch on: RFC 1123 labels of letters, digits and '-', IPv4 literals, and
 * an optional "user@" in front. Open MPI's node-name parser refuses '_' and
 * IPv6 addresses (mpirun then fails after the probe), so they are refused here
 * first. Everything else is refused with a reason that names the character.
 */
#include "weft_private.h"

#include <weftx/hosts.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

#define LABEL_MAX 63
#define USER_MAX 32

static int is_label_char(int c) { return isalnum(c) || c == '-'; }

/* First character of \p s that no host name may contain, or 0. */
static int bad_char(const char *s)
{
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (!is_label_char(c) && c != '.' && c != ':' && c != '_')
      return c;
  }
  return 0;
}

static int refuse(const char *name, char *why, size_t whylen, const char *what)
{
  char shown[WEFTX_HOSTNAME_MAX + 64];
  size_t i;

  /* The message stays one line whatever the name holds. */
  for (i = 0; name[i] && i + 1 < sizeof(shown); i++)
    shown[i] = iscntrl((unsigned char)name[i]) ? '?' : name[i];
  shown[i] = '\0';
  if (why)
    weft__snprintf(why, whylen, "'%s': %s", shown, what);
  return WEFT_ENAME;
}

static int check_user(const char *full, const char *user, size_t len, char *why, size_t whylen)
{
  size_t i;

  if (len == 0)
    return refuse(full, why, whylen, "empty user name before '@'; write user@host or just host");
  if (len > USER_MAX)
    return refuse(full, why, whylen, "user name longer than 32 characters");
  if (user[0] == '-')
    return refuse(full, why, whylen, "a user name may not start with '-'");
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)user[i];
    if (!isalnum(c) && c != '.' && c != '_' && c != '-')
      return refuse(full, why, whylen,
                    "a user name may hold only letters, digits, '.', '_' and '-'");
  }
  return 0;
}

static int check_labels(const char *full, const char *host, char *why, size_t whylen)
{
  size_t len = strlen(host), run = 0, i;

  if (len > WEFTX_HOSTNAME_MAX)
    return refuse(full, why, whylen, "host name longer than 253 characters");
  for (i = 0; i <= len; i++) {
    char c = host[i];
    if (c != '.' && c != '\0') {
      run++;
      continue;
    }
    if (run == 0)
      return refuse(full, why, whylen,
                    "empty label in host name (two dots, or a dot at either end)");
    if (run > LABEL_MAX)
      return refuse(full, why, whylen, "a label of the host name is longer than 63 characters");
    if (host[i - run] == '-' || host[i - 1] == '-')
      return refuse(full, why, whylen, "a label of a host name may not start or end with '-'");
    run = 0;
  }
  return 0;
}

int weftx_hostname_check(const char *name, char *why, size_t whylen)
{
  const char *at, *host;
  unsigned char bin[16];
  int c;

  if (!name || !*name)
    return refuse(name ? name : "", why, whylen, "empty host name");
  if (name[0] == '-')
    return refuse(name, why, whylen,
                  "a host name may not start with '-' (it would read as an option)");
  at = strchr(name, '@');
  host = at ? at + 1 : name;
  if (at) {
    int rc = check_user(name, name, (size_t)(at - name), why, whylen);
    if (rc)
      return rc;
    if (strchr(host, '@'))
      return refuse(name, why, whylen, "more than one '@'; write user@host");
  }
  if (!*host)
    return refuse(name, why, whylen, "empty host name after '@'");
  if (host[0] == '-')
    return refuse(name, why, whylen,
                  "a host name may not start with '-' (it would read as an option)");
  c = bad_char(host);
  if (c) {
    char what[160];
    if (isprint(c) && c != ' ')
      weft__snprintf(what, sizeof(what),
                     "'%c' is not allowed in a host name; use letters, digits, '-', '.' "
                     "or an IPv4 address",
                     c);
    else if (c >= 0x80)
      weft__snprintf(what, sizeof(what),
                     "a non-ASCII character (byte 0x%02x: UTF-8?) is not allowed in a host name; "
                     "write an internationalized name in its ASCII form (xn--...)",
                     c);
    else
      weft__snprintf(what, sizeof(what),
                     "a space or control character (0x%02x) is not allowed in a host name", c);
    return refuse(name, why, whylen, what);
  }
  if (strchr(host, ':')) {
    if (inet_pton(AF_INET6, host, bin) == 1)
      return refuse(name, why, whylen,
                    "an IPv6 address, which Open MPI 4.1 cannot launch on "
                    "(its node-name parser refuses ':'); use the host's name or IPv4 address");
    return refuse(name, why, whylen,
                  "':' is not allowed in a host name; use letters, digits, "
                  "'-', '.' or an IPv4 address");
  }
  if (strchr(host, '_'))
    return refuse(name, why, whylen,
                  "'_' is not allowed: Open MPI 4.1's node-name parser "
                  "takes letters, digits, '.' and '-'; use the host's DNS name or IPv4 address");
  if (inet_pton(AF_INET, host, bin) == 1)
    return 0;
  /* All digits and dots but not an address: "10.0.0.300", "1.2.3" */
  if (strspn(host, "0123456789.") == strlen(host))
    return refuse(name, why, whylen, "not a valid IPv4 address");
  return check_labels(name, host, why, whylen);
}
