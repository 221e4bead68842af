/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-user cache of this machine's topology. A live probe reads every
 * PCI device's configuration space, which a virtual machine traps one read
 * at a time (about 2 ms a device on the VMs weft was measured on), and loads
 * hwloc's plugins; the XML of the same machine loads in a fraction of that.
 * So weftrun and weft-rank keep the probe as hwloc XML in
 * $XDG_CACHE_HOME/weft/topology-HOST.xml (else ~/.cache/weft/...), with the
 * key it was made under (topo-cache-key.c) in a comment after </topology>.
 *
 * The file is used only when it is the user's own regular file (not a link,
 * mode 0600) in the user's own 0700 directory, its key equals the key of the
 * machine now, and it passes the checks every XML file passes; anything else
 * means a live probe, after which the file is written again: into a
 * temporary file in the same directory, then renamed over the old one, so
 * that a reader sees the old file or the new one, never a mix. Several
 * processes writing at once (the ranks of a host) each write a whole file.
 * WEFT_TOPOLOGY_CACHE=0 turns the cache off; HWLOC_XMLFILE, HWLOC_SYNTHETIC,
 * HWLOC_FSROOT and HWLOC_CPUID_PATH make hwloc read other inputs than this
 * machine, whose changes the key cannot see, so they turn it off too.
 * WEFT_VERBOSE=topo says what the cache did and why.
 */
#include "topo_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARK "<!-- weft-topology-cache "
#define MARK_END " -->\n"
#define KEY_MAX 512

/* Off, and why, for the log. */
static const char *off_reason(void)
{
  static const char *const inputs[] = {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT",
                                       "HWLOC_CPUID_PATH", NULL};
  const char *v = getenv("WEFT_TOPOLOGY_CACHE");

  if (v && !strcmp(v, "0"))
    return "WEFT_TOPOLOGY_CACHE=0";
  if (v && *v && strcmp(v, "1"))
    return "WEFT_TOPOLOGY_CACHE is neither 0 nor 1";
  for (int i = 0; inputs[i]; i++)
    if (getenv(inputs[i]))
      return inputs[i];
  return NULL;
}

/* A directory that must be the user's alone: made 0700 when missing. */
static int private_dir(const char *dir, int make)
{
  struct stat st;

  if (make && mkdir(dir, 0700) != 0 && errno != EEXIST) {
    WEFT__LOG(TOPO, "topology cache: cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    WEFT__LOG(TOPO,
              "topology cache: %s is not a directory of this user's alone (mode 0700); "
              "not used",
              dir);
    return -1;
  }
  return 0;
}

/* A directory of this user's, \p base, made (0700, as XDG asks) when missing. */
static int own_dir(const char *base)
{
  struct stat st;

  if (stat(base, &st) != 0 && (mkdir(base, 0700) != 0 || stat(base, &st) != 0))
    return -1;
  return S_ISDIR(st.st_mode) && st.st_uid == geteuid() ? 0 : -1;
}

/* $XDG_CACHE_HOME/weft, else ~/.cache/weft (made when missing). A base that is not
 * this user's (HOME kept across sudo) gives way to the home of the user's passwd
 * entry, so that root never fills another user's directory with files that user
 * could not replace. */
static int cache_dir(char *dir, size_t len)
{
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  struct passwd *pw = NULL;
  char base[4096];
  int ok = 0;

  if (xdg && xdg[0] == '/' && weft__snprintf(base, sizeof(base), "%s", xdg) == 0)
    ok = own_dir(base) == 0;
  if (!ok && home && home[0] == '/' && weft__snprintf(base, sizeof(base), "%s/.cache", home) == 0)
    ok = own_dir(home) == 0 && own_dir(base) == 0;
  if (!ok && (pw = getpwuid(geteuid())) && pw->pw_dir && pw->pw_dir[0] == '/' &&
      weft__snprintf(base, sizeof(base), "%s/.cache", pw->pw_dir) == 0)
    ok = own_dir(pw->pw_dir) == 0 && own_dir(base) == 0;
  if (!ok) {
    WEFT__LOG(TOPO, "topology cache: no cache directory of this user's (XDG_CACHE_HOME, "
                    "HOME/.cache); not used");
    return -1;
  }
  if (weft__snprintf(dir, len, "%s/weft", base) != 0)
    return -1;
  return private_dir(dir, 1);
}

/* The cache file's text when it is the user's own private regular file. */
static char *read_cached(const char *path, size_t *n)
{
  struct stat st;
  char *buf;
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

  if (fd < 0) {
    WEFT__LOG(TOPO, "topology cache: %s: %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0 || st.st_size > WEFT__TOPO_XML_MAX ||
      !(buf = malloc((size_t)st.st_size + 1))) {
    WEFT__LOG(TOPO, "topology cache: %s is not this user's private regular file; not used", path);
    close(fd);
    return NULL;
  }
  while (got < (size_t)st.st_size) {
    ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(fd);
  buf[got] = '\0';
  *n = got;
  return buf;
}

/* The key in the comment after </topology>, into \p key; 0 or -1 when there is none.
 * (A NUL byte ends the search early: such a file is refused as XML anyway.) */
static int stored_key(const char *buf, char *key, size_t len)
{
  const char *m = NULL, *c = buf, *e, *top = strstr(buf, "</topology>");

  while ((c = strstr(c, MARK)) != NULL)
    m = c++;
  if (!m || !top || top > m)
    return -1;
  m += sizeof(MARK) - 1;
  if (!(e = strstr(m, MARK_END)) || (size_t)(e - m) >= len)
    return -1;
  memcpy(key, m, (size_t)(e - m));
  key[e - m] = '\0';
  return 0;
}

/* The names of the parts of two keys that differ ("pci cpu"), for the log. */
static void differing(const char *a, const char *b, char *out, size_t len)
{
  size_t used = 0;

  out[0] = '\0';
  while (*a || *b) {
    size_t na = strcspn(a, " "), nb = strcspn(b, " "), name = strcspn(a, "=");
    if (na != nb || memcmp(a, b, na)) {
      int k = snprintf(out + used, len - used, "%s%.*s", used ? " " : "",
                       (int)(name < na ? name : na), a);
      if (k < 0 || (size_t)k >= len - used)
        return;
      used += (size_t)k;
    }
    a += na + (a[na] == ' ');
    b += nb + (b[nb] == ' ');
  }
}

/* \p n bytes of \p text into a temporary file .NAME.XXXXXX of \p dir, renamed over \p path:
 * a reader sees the old file or the whole new one. 0 or -1 (said in the log). */
static int write_whole(const char *dir, const char *name, const char *path, const char *text,
                       size_t n)
{
  char tmp[4300];
  size_t done = 0;
  int fd, rc = -1;

  if (weft__snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) != 0 ||
      (fd = mkstemp(tmp)) < 0) {
    WEFT__LOG(TOPO, "cache: cannot write in %s: %s", dir, strerror(errno));
    return -1;
  }
  while (done < n) {
    ssize_t k = write(fd, text + done, n - done);
    if (k <= 0)
      break;
    done += (size_t)k;
  }
  if (close(fd) == 0 && done == n && rename(tmp, path) == 0)
    rc = 0;
  else
    WEFT__LOG(TOPO, "cache: cannot write %s: %s", path, strerror(errno));
  if (rc)
    unlink(tmp);
  return rc;
}

/* The live probe's XML with the key after it, into a temporary file, renamed over
 * \p path. The text is kept in \p t for weftx_topo_export_xml(). */
static int write_cached(weftx_topo *t, const char *dir, const char *path, const char *key)
{
  char *xml = NULL;
  int len = 0;
  size_t klen = strlen(key), n;

  if (hwloc_topology_export_xmlbuffer(t->h, &xml, &len, 0) != 0 || !xml || len < 1)
    return -1;
  n = (size_t)len - 1 + sizeof(MARK) - 1 + klen + sizeof(MARK_END) - 1;
  if (!(t->xml = malloc(n + 1))) {
    hwloc_free_xmlbuffer(t->h, xml);
    return -1;
  }
  memcpy(t->xml, xml, (size_t)len - 1);
  hwloc_free_xmlbuffer(t->h, xml);
  snprintf(t->xml + len - 1, n + 1 - ((size_t)len - 1), MARK "%s" MARK_END, key);
  t->xmllen = n;
  return write_whole(dir, "topology", path, t->xml, n);
}

/* The cache file of this host: topology-HOST.xml, the name's odd characters as '_'. */
static int cache_file(const char *dir, char *path, size_t len)
{
  char host[256];

  if (gethostname(host, sizeof(host)) != 0)
    return -1;
  host[sizeof(host) - 1] = '\0';
  for (char *c = host; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '-' || *c == '.'))
      *c = '_';
  return weft__snprintf(path, len, "%s/topology-%s.xml", dir, host) ? -1 : 0;
}

/* The cached topology, or NULL (and why, in the log). */
static weftx_topo *try_cached(const char *path, const char *key, unsigned flags)
{
  char stored[KEY_MAX], why[600] = "";
  size_t n = 0;
  char *buf = read_cached(path, &n);
  weftx_topo *t;

  if (!buf)
    return NULL;
  if (stored_key(buf, stored, sizeof(stored)) != 0) {
    WEFT__LOG(TOPO, "topology cache: %s has no key; probing", path);
  } else if (strcmp(stored, key) != 0) {
    char parts[KEY_MAX];
    differing(stored, key, parts, sizeof(parts));
    WEFT__LOG(TOPO, "topology cache: %s was made under another %s; probing", path, parts);
  } else if (weft__topo_xml_sane(buf, n, path, why, sizeof(why)) != 0) {
    WEFT__LOG(TOPO, "topology cache: %s; probing", why);
  } else if (!(t = weft__topo_new(path))) {
    WEFT__LOG(TOPO, "topology cache: out of memory");
  } else if (weft__topo_fill(t, buf, n, flags | WEFTX_TOPO_THIS_SYSTEM, why, sizeof(why)) != 0 ||
             !t->live) {
    WEFT__LOG(TOPO, "topology cache: %s; probing",
              why[0] ? why : "hwloc did not take it as this machine");
    weftx_topo_destroy(t);
  } else {
    t->cache = WEFTX_TOPO_CACHE_HIT;
    t->xml = buf;
    t->xmllen = n;
    WEFT__LOG(TOPO, "topology cache: loaded %s", path);
    return t;
  }
  free(buf);
  return NULL;
}

int weft__topo_cache_load(unsigned flags, weftx_topo **out, char *why, size_t whylen)
{
  char key[KEY_MAX], dir[4096], path[4200];
  const char *off = off_reason();
  weftx_topo *t = NULL;
  int use = 0, rc;

  if (off)
    WEFT__LOG(TOPO, "topology cache: off (%s)", off);
  else if ((rc = weft__topo_cache_key("", key, sizeof(key))) != 0)
    WEFT__LOG(TOPO, "topology cache: no key for this machine (%s); not used", weft_strerror(rc));
  else
    use = cache_dir(dir, sizeof(dir)) == 0 && cache_file(dir, path, sizeof(path)) == 0;
  if (use && (t = try_cached(path, key, flags)) != NULL) {
    *out = t;
    return 0;
  }
  /* the key was taken before the probe: a change while probing makes the next run probe */
  if (!(t = weft__topo_new("live"))) {
    weft__topo_why(why, whylen, "out of memory loading a topology");
    return WEFT_ENOMEM;
  }
  if ((rc = weft__topo_fill(t, NULL, 0, flags, why, whylen)) != 0) {
    weftx_topo_destroy(t);
    return rc;
  }
  if (use) {
    t->cache =
      write_cached(t, dir, path, key) == 0 ? WEFTX_TOPO_CACHE_WRITTEN : WEFTX_TOPO_CACHE_UNWRITTEN;
    if (t->cache == WEFTX_TOPO_CACHE_WRITTEN)
      WEFT__LOG(TOPO, "topology cache: wrote %s", path);
  }
  *out = t;
  return 0;
}

/* ---- small texts beside the topology ------------------------------------------------ */

static int small_path(const char *name, char *dir, size_t dlen, char *path, size_t plen)
{
  const char *off = off_reason();

  if (off || !name || !*name || strchr(name, '/')) {
    if (off)
      WEFT__LOG(TOPO, "cache: off (%s)", off);
    return -1;
  }
  if (cache_dir(dir, dlen) != 0 || weft__snprintf(path, plen, "%s/%s", dir, name) != 0)
    return -1;
  return 0;
}

int weftx_cache_get(const char *name, char *buf, size_t len)
{
  char dir[4096], path[4200], *text;
  size_t n = 0;

  if (!buf || len == 0 || small_path(name, dir, sizeof(dir), path, sizeof(path)))
    return -1;
  if (access(path, F_OK) != 0 || !(text = read_cached(path, &n)))
    return -1;
  if (n >= len) {
    free(text);
    return -1;
  }
  memcpy(buf, text, n + 1);
  free(text);
  return 0;
}

int weftx_cache_put(const char *name, const char *text)
{
  char dir[4096], path[4200];

  if (!text || small_path(name, dir, sizeof(dir), path, sizeof(path)))
    return -1;
  return write_whole(dir, name, path, text, strlen(text));
}
