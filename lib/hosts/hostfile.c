/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Open MPI hostfiles (the grammar of ORTE's hostfile_lex.l, as far as jobs use
 * it): one host per line, "[user@]host [slots=N] [max_slots=M] [username=U]",
 * the synonyms count= and cpu= for slots and max-slots=, slots_max=,
 * slots-max=, cpu_max=, max_cpu=, count_max= for max_slots, spaces allowed
 * around '=', '#' comments, blank lines; a host named again gets one more slot
 * (a slot count then is an error, as in mpirun 4.1). Every error names
 * FILE:LINE and says what to write instead; a NUL byte (a binary file,
 * /dev/zero) is refused at once, never read on.
 */
#include "hosts-private.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* One line being parsed: where it is and what it said. */
struct line {
  const char *file;
  int lineno;
  char *p; /* cursor */
  long slots, max_slots;
  const char *user; /* from username=, points into the line */
  int keep_fqdn;    /* Open MPI's orte_keep_fqdn_hostnames */
};

static int line_error(const struct line *l, char *why, size_t whylen, int rc, const char *fmt, ...)
  WEFT_PRINTF(5, 6);

static int line_error(const struct line *l, char *why, size_t whylen, int rc, const char *fmt, ...)
{
  char what[1024]; /* hostname.c quotes a refused name whole (up to 316 bytes) */
  va_list ap;

  if (why) {
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    weft__snprintf(why, whylen, "%s:%d: %s", l->file, l->lineno, what);
  }
  return rc;
}

static void skip_space(struct line *l)
{
  while (isspace((unsigned char)*l->p))
    l->p++;
}

static int is_key(const char *k, const char *const *names)
{
  for (; *names; names++)
    if (strcasecmp(k, *names) == 0)
      return 1;
  return 0;
}

static const char *const slots_keys[] = {"slots", "count", "cpu", NULL};
static const char *const max_keys[] = {"max_slots", "max-slots", "slots_max", "slots-max",
                                       "cpu_max",   "max_cpu",   "count_max", NULL};

static int parse_number(struct line *l, const char *key, const char *val, long *out, char *why,
                        size_t whylen)
{
  char arg[160];
  int rc;

  if (*out != 0) {
    weft__snprintf(arg, sizeof(arg), "%s", key);
    return line_error(l, why, whylen, WEFT_EPARSE, "'%s' given twice on one line; keep one", arg);
  }
  rc = weftx_parse_long(val, 1, WEFTX_HOSTS_SLOTS_MAX, out);
  if (rc == 0)
    return 0;
  weft__snprintf(arg, sizeof(arg), "%.40s=%.60s", key, val);
  if (strcmp(val, "0") == 0)
    return line_error(l, why, whylen, WEFT_ERANGE,
                      "'%s': a host needs at least one slot; delete the line to leave it out", arg);
  if (rc == WEFT_ERANGE)
    return line_error(l, why, whylen, rc, "'%s' is too large; the most is 100000", arg);
  return line_error(l, why, whylen, rc,
                    "'%s' is not a number; write KEY=N with N from 1 to "
                    "100000",
                    arg);
}

/* One "key=value" (spaces allowed around '='). */
static int parse_keyword(struct line *l, char *why, size_t whylen)
{
  char *key, *val;

  key = l->p;
  while (*l->p && !isspace((unsigned char)*l->p) && *l->p != '=')
    l->p++;
  if (*l->p != '=') {
    char *end = l->p;
    skip_space(l);
    if (*l->p != '=') {
      *end = '\0';
      return line_error(l, why, whylen, WEFT_EPARSE,
                        "'%.200s' is not KEY=VALUE; a line is: host [slots=N] [max_slots=M]", key);
    }
    *end = '\0';
  } else {
    *l->p = '\0';
  }
  if (!*key)
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "'=' without a keyword before it; write slots=N or max_slots=M");
  l->p++;
  skip_space(l);
  val = l->p;
  while (*l->p && !isspace((unsigned char)*l->p))
    l->p++;
  if (*l->p)
    *l->p++ = '\0';
  if (!*val)
    return line_error(l, why, whylen, WEFT_EPARSE, "'%.200s=' has no value; write %.200s=N", key,
                      key);
  if (is_key(key, slots_keys))
    return parse_number(l, key, val, &l->slots, why, whylen);
  if (is_key(key, max_keys))
    return parse_number(l, key, val, &l->max_slots, why, whylen);
  if (strcasecmp(key, "username") == 0 || strcasecmp(key, "user") == 0) {
    l->user = val;
    return 0;
  }
  return line_error(
    l, why, whylen, WEFT_EPARSE,
    "unknown keyword '%.200s'; weft understands slots=, max_slots= and username=", key);
}

/* Forms of Open MPI or MPICH that weft does not take, each with a hint. */
static int check_host_form(const struct line *l, const char *host, char *why, size_t whylen)
{
  const char *colon = strchr(host, ':');

  if (host[0] == '+')
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "relative host '%.200s' is not supported; name the host", host);
  if (host[0] == '^')
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "excluding a host ('%.200s') is not supported; delete its line", host);
  if (colon && colon == strrchr(host, ':') && colon[1] &&
      strspn(colon + 1, "0123456789") == strlen(colon + 1))
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "'%.200s' is MPICH's host:N; write 'host slots=N' in an Open MPI hostfile",
                      host);
  return 0;
}

static int parse_line(weftx_hostlist *hl, struct line *l, char *why, size_t whylen)
{
  char *hash = strchr(l->p, '#'), *host;
  char name[WEFTX_HOSTNAME_MAX + 64], src[300], reason[400];
  int rc;

  if (hash)
    *hash = '\0';
  skip_space(l);
  if (!*l->p)
    return 0;
  host = l->p;
  while (*l->p && !isspace((unsigned char)*l->p))
    l->p++;
  if (*l->p)
    *l->p++ = '\0';
  if (strchr(host, '='))
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "'%.200s' where a host name should come first; a line is: host [slots=N]",
                      host);
  rc = check_host_form(l, host, why, whylen);
  if (rc)
    return rc;
  for (skip_space(l); *l->p; skip_space(l)) {
    rc = parse_keyword(l, why, whylen);
    if (rc)
      return rc;
  }
  if (l->user && strchr(host, '@'))
    return line_error(l, why, whylen, WEFT_EPARSE,
                      "'%.200s' has a user and username= too; keep one", host);
  if (weft__snprintf(name, sizeof(name), "%s%s%s", l->user ? l->user : "", l->user ? "@" : "",
                     host))
    return line_error(l, why, whylen, WEFT_ENAME, "host name too long");
  weft__snprintf(src, sizeof(src), "%s:%d", l->file, l->lineno);
  rc = weftx_hostlist_add_ompi(hl, name, WEFTX_HOST_LINE, (int)l->slots, (int)l->max_slots,
                               l->keep_fqdn, src, reason, sizeof(reason));
  if (rc)
    return line_error(l, why, whylen, rc, "%s", reason);
  return 0;
}

/* One line into \p buf (at most \p size - 1 bytes, NUL-terminated); its length in *len.
 * 1 for a line, 0 at the end, -1 when it is longer, -2 when it holds a NUL byte
 * (*len: its column), -3 on a read error. Unlike fgets() this sees NUL bytes, so a
 * binary file or /dev/zero is refused at its first line instead of read forever.
 * A line ends at LF, CRLF or a CR alone (old Mac line ends): each is stored as LF,
 * so a file of CR-only ends is read line by line, not as one line whose first '#'
 * would hide the rest. */
static int read_line(FILE *f, char *buf, size_t size, size_t *len)
{
  size_t n = 0;
  int c;

  while ((c = getc(f)) != EOF) {
    if (c == '\0') {
      *len = n + 1;
      return -2;
    }
    if (n + 1 >= size)
      return -1;
    if (c == '\r') {
      int next = getc(f);
      if (next != '\n' && next != EOF)
        ungetc(next, f);
      c = '\n';
    }
    buf[n++] = (char)c;
    if (c == '\n')
      break;
  }
  buf[n] = '\0';
  *len = n;
  if (c == EOF && ferror(f))
    return -3;
  return n > 0 ? 1 : 0;
}

int weftx_hostfile_read(weftx_hostlist *hl, FILE *f, const char *name, char *why, size_t whylen)
{
  char buf[WEFTX_HOSTFILE_LINE_MAX + 2];
  struct line l = {name ? name : "hostfile", 0, NULL, 0, 0, NULL, hl ? weft__hostlist_fqdn(hl) : 0};
  size_t len;
  int before, rc, got;

  if (!hl || !f)
    return WEFT_EINVAL;
  before = weftx_hostlist_count(hl);
  while ((got = read_line(f, buf, sizeof(buf), &len)) > 0 || got == -1 || got == -2) {
    l.lineno++;
    if (got == -1)
      return line_error(&l, why, whylen, WEFT_EPARSE,
                        "line longer than %d characters; one host per line",
                        WEFTX_HOSTFILE_LINE_MAX);
    if (got == -2)
      return line_error(&l, why, whylen, WEFT_EPARSE,
                        "a NUL byte at column %zu: this is not a text file; give a hostfile of "
                        "'host slots=N' lines",
                        len);
    l.p = buf;
    if (l.lineno == 1 && strncmp(buf, "\xef\xbb\xbf", 3) == 0)
      l.p += 3;
    l.slots = l.max_slots = 0;
    l.user = NULL;
    rc = parse_line(hl, &l, why, whylen);
    if (rc)
      return rc;
  }
  if (got == -3) {
    if (why)
      weft__snprintf(why, whylen, "%s: read error: %s", l.file, strerror(errno));
    return WEFT_EIO;
  }
  if (weftx_hostlist_count(hl) == before) {
    if (why)
      weft__snprintf(why, whylen,
                     "%s: no host in the file; write one host per line, "
                     "e.g. 'node1 slots=8'",
                     l.file);
    return WEFT_EPARSE;
  }
  weft__hostlist_set_origin(hl, WEFTX_HOSTS_HOSTFILE);
  return 0;
}

int weftx_hostfile_load(weftx_hostlist *hl, const char *path, char *why, size_t whylen)
{
  FILE *f;
  int rc;

  if (!hl || !path)
    return WEFT_EINVAL;
  f = fopen(path, "r");
  if (!f) {
    int e = errno;
    if (why)
      weft__snprintf(why, whylen, "%.200s: cannot open hostfile: %s; check the --hostfile path",
                     path, strerror(e));
    return e == ENOENT ? WEFT_ENOENT : WEFT_EIO;
  }
  rc = weftx_hostfile_read(hl, f, path, why, whylen);
  fclose(f);
  return rc;
}
