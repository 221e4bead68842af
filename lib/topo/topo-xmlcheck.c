/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A light check of an hwloc XML file before hwloc parses it. hwloc 2.9
 * dereferences missing sets of damaged files (a PU without complete_cpuset
 * crashes hwloc_topology_load), so every CPU-side object must carry its four
 * sets, each a well-formed hwloc bitmap, before the file goes to hwloc.
 * This is not an XML validator: what is left to hwloc is reported by hwloc.
 */
#include "topo_private.h"

#include <stdio.h>
#include <string.h>

/* Objects that hwloc gives no sets: I/O and Misc. Everything else needs them. */
static int is_setless(const char *type, size_t len)
{
  static const char *const names[] = {"Bridge", "PCIDev", "OSDev", "Misc"};
  for (size_t i = 0; i < WEFT__ARRAY_SIZE(names); i++)
    if (strlen(names[i]) == len && !memcmp(names[i], type, len))
      return 1;
  return 0;
}

/* The value of attribute \p name in the tag [tag, end), or NULL. */
static const char *attr(const char *tag, const char *end, const char *name, size_t *vlen)
{
  size_t nlen = strlen(name);
  const char *p = tag;

  while (p < end) {
    const char *q;
    char quote;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
      p++;
    q = p;
    while (p < end && *p != '=' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
      p++;
    if (p >= end || *p != '=' || p + 1 >= end || (p[1] != '"' && p[1] != '\''))
      return NULL; /* not a name="value" list: leave the diagnosis to hwloc */
    quote = p[1];
    if ((size_t)(p - q) == nlen && !memcmp(q, name, nlen)) {
      const char *v = p + 2, *ve = memchr(v, quote, (size_t)(end - v));
      if (!ve)
        return NULL;
      *vlen = (size_t)(ve - v);
      return v;
    }
    p = memchr(p + 2, quote, (size_t)(end - p - 2));
    if (!p)
      return NULL;
    p++;
  }
  return NULL;
}

/* What hwloc_bitmap_sscanf() takes without tripping its assertion: comma-separated
 * words of up to 16 hex digits ("0x" optional), most significant first, where a
 * zero word may be empty as hwloc writes it ("0x00000100,,,0x00000001"), after an
 * optional "0xf...f" (infinite) head. The string must not start with a comma:
 * hwloc miscounts the words then and asserts. */
static int is_bitmap(const char *v, size_t len)
{
  size_t i = 0;

  if (len >= 7 && !memcmp(v, "0xf...f", 7)) {
    i = 7;
    if (i == len)
      return 1;
    if (v[i++] != ',')
      return 0;
  } else if (len == 0 || v[0] == ',') {
    return 0;
  }
  for (;;) {
    size_t digits = 0;
    if (i + 1 < len && v[i] == '0' && (v[i + 1] == 'x' || v[i + 1] == 'X')) {
      i += 2;
      if (i == len || v[i] == ',')
        return 0; /* "0x" alone */
    }
    while (i < len && v[i] && strchr("0123456789abcdefABCDEF", v[i])) {
      i++;
      digits++;
    }
    if (digits > 16)
      return 0;
    if (i == len)
      return 1;
    if (v[i++] != ',')
      return 0;
  }
}

/* Up to 31 characters of a name from the file, control characters shown as '?'. */
static const char *printable(char *dst, size_t size, const char *src, size_t len)
{
  size_t i;
  for (i = 0; i < len && i + 1 < size; i++)
    dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
  dst[i] = '\0';
  return dst;
}

static int line_of(const char *buf, const char *at)
{
  int line = 1;
  for (const char *p = buf; p < at; p++)
    line += *p == '\n';
  return line;
}

/* End of the tag that starts at \p p ('<'), quotes respected; NULL when unterminated. */
static const char *tag_end(const char *p, const char *end)
{
  char quote = 0;
  for (; p < end; p++) {
    if (quote) {
      if (*p == quote)
        quote = 0;
    } else if (*p == '"' || *p == '\'') {
      quote = *p;
    } else if (*p == '>') {
      return p;
    }
  }
  return NULL;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
  size_t n = strlen(suffix);
  return len >= n && !memcmp(s + len - n, suffix, n);
}

/* Every *cpuset and *nodeset attribute of the tag [p, te) must be a valid bitmap. */
static int check_set_attrs(const char *buf, const char *p, const char *te, const char *path,
                           char *why, size_t whylen)
{
  const char *q = p;

  while (q < te && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
    q++; /* the element name */
  while (q < te) {
    const char *name, *v, *ve;
    size_t nlen;
    while (q < te && strchr(" \t\r\n/", *q))
      q++;
    name = q;
    while (q < te && *q != '=' && !strchr(" \t\r\n", *q))
      q++;
    nlen = (size_t)(q - name);
    if (q >= te || *q != '=' || q + 1 >= te || (q[1] != '"' && q[1] != '\''))
      return 0; /* not name="value": hwloc diagnoses that */
    v = q + 2;
    ve = memchr(v, q[1], (size_t)(te - v));
    if (!ve)
      return 0;
    if ((ends_with(name, nlen, "cpuset") || ends_with(name, nlen, "nodeset")) &&
        !is_bitmap(v, (size_t)(ve - v))) {
      char pname[32];
      weft__snprintf(why, whylen,
                     "%s:%d: attribute %s is not an hwloc bitmap; not a valid hwloc "
                     "XML topology",
                     path, line_of(buf, p), printable(pname, sizeof(pname), name, nlen));
      return WEFT_EPARSE;
    }
    q = ve + 1;
  }
  return 0;
}

int weft__topo_xml_check(const char *buf, size_t len, const char *path, char *why, size_t whylen)
{
  static const char *const sets[] = {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"};
  const char *end = buf + len, *p = buf;
  int nobjects = 0;

  while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
    const char *te, *type;
    size_t tlen;
    if (end - p >= 4 && !memcmp(p, "<!--", 4)) {
      const char *ce = strstr(p + 4, "-->");
      if (!ce)
        break; /* unterminated comment: hwloc reports it */
      p = ce + 3;
      continue;
    }
    te = tag_end(p, end);
    if (!te) {
      weft__snprintf(why, whylen, "%s:%d: unterminated tag; not a valid hwloc XML topology", path,
                     line_of(buf, p));
      return WEFT_EPARSE;
    }
    if (check_set_attrs(buf, p, te, path, why, whylen) != 0)
      return WEFT_EPARSE;
    if (te - p < 8 || memcmp(p, "<object", 7) != 0 || !strchr(" \t\r\n", p[7])) {
      p = te;
      continue;
    }
    type = attr(p + 7, te, "type", &tlen);
    if (nobjects++ == 0 && !(type && ((tlen == 7 && !memcmp(type, "Machine", 7)) ||
                                      (tlen == 6 && !memcmp(type, "System", 6))))) {
      weft__snprintf(why, whylen,
                     "%s:%d: the first object is not the Machine; not a valid hwloc XML "
                     "topology",
                     path, line_of(buf, p));
      return WEFT_EPARSE;
    }
    if (type && !is_setless(type, tlen)) {
      size_t ilen;
      const char *idx = attr(p + 7, te, "os_index", &ilen);
      if (idx && ilen > 0 && strspn(idx, "0123456789") >= ilen) {
        unsigned long long v = 0;
        for (size_t i = 0; i < ilen && v <= 0xffffffffULL; i++)
          v = v * 10 + (unsigned long long)(idx[i] - '0');
        if (v > (unsigned long long)WEFT__TOPO_INDEX_MAX && v != 0xffffffffULL) {
          char ptype[32], pidx[32];
          weft__snprintf(why, whylen,
                         "%s:%d: %s object numbered %s%s (os_index), over %ld: no "
                         "machine numbers its processors or NUMA nodes so high; not a valid hwloc "
                         "XML topology",
                         path, line_of(buf, p), printable(ptype, sizeof(ptype), type, tlen),
                         printable(pidx, sizeof(pidx), idx, ilen),
                         ilen >= sizeof(pidx) ? "..." : "", WEFT__TOPO_INDEX_MAX);
          return WEFT_EPARSE;
        }
      }
      for (size_t i = 0; i < WEFT__ARRAY_SIZE(sets); i++) {
        size_t vlen;
        if (!attr(p + 7, te, sets[i], &vlen)) {
          char ptype[32];
          weft__snprintf(why, whylen, "%s:%d: %s object has no %s; not a valid hwloc XML topology",
                         path, line_of(buf, p), printable(ptype, sizeof(ptype), type, tlen),
                         sets[i]);
          return WEFT_EPARSE;
        }
      }
    }
    p = te;
  }
  return 0;
}
