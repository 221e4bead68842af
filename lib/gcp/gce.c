/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Is this a GCE VM, and what does the metadata server say about it. DMI is
 * asked first so that a laptop or an on-premises cluster never sends a single
 * request (nor waits for a DNS name that does not resolve).
 */
#include "gcp_private.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int weftx_gcp_dmi_is_gce(void)
{
  char path[4096], name[128];

  if (weft__gcp_path(path, sizeof(path), "/sys/class/dmi/id/product_name") != 0 ||
      weft__gcp_read_line(path, name, sizeof(name)) != 0)
    return 0;
  /* Go's metadata client accepts both spellings (syscheck_linux.go). */
  return !strcmp(name, "Google Compute Engine") || !strcmp(name, "Google");
}

/* GET path into buf, whitespace-trimmed, keeping only what follows the last '/'
 * when base_only ("projects/1/zones/us-central1-a" -> "us-central1-a"). */
static int get_str(weftx_gcp_md *md, const char *path, char *buf, size_t len, int base_only)
{
  char *v, *s, *e;
  int rc = weftx_gcp_md_get(md, path, &v, NULL, 0);

  if (rc != 0)
    return rc;
  s = v;
  while (isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  if (base_only && strrchr(s, '/'))
    s = strrchr(s, '/') + 1;
  rc = weft__snprintf(buf, len, "%s", s);
  free(v);
  return rc;
}

static int read_nics(weftx_gcp_md *md, weftx_gcp_info *info, char *why, size_t whylen)
{
  char *list, *line, *save = NULL, path[128];
  int rc = weftx_gcp_md_get(md, "instance/network-interfaces/", &list, NULL, 0);

  if (rc != 0) {
    weft__snprintf(why, whylen, "metadata instance/network-interfaces/: %s", weft_strerror(rc));
    return rc;
  }
  /* A directory listing: "0/\n1/\n". */
  for (line = strtok_r(list, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
    weftx_gcp_nic *n;
    long idx;
    char *slash = strchr(line, '/');

    if (slash)
      *slash = '\0';
    if (weftx_parse_long(line, 0, 1000, &idx) != 0)
      continue;
    if (info->nnics == WEFTX_GCP_MAX_NICS)
      break;
    n = &info->nics[info->nnics];
    memset(n, 0, sizeof(*n));
    n->index = (int)idx;
    n->mtu = -1;
    n->gvnic = -1;
    weft__snprintf(path, sizeof(path), "instance/network-interfaces/%ld/mac", idx);
    rc = get_str(md, path, n->mac, sizeof(n->mac), 0);
    for (char *c = n->mac; *c; c++)
      *c = (char)tolower((unsigned char)*c);
    if (rc == 0) {
      weft__snprintf(path, sizeof(path), "instance/network-interfaces/%ld/ip", idx);
      rc = get_str(md, path, n->ip, sizeof(n->ip), 0);
      if (rc == WEFT_ENOENT)
        rc = 0;
    }
    if (rc == 0) {
      weft__snprintf(path, sizeof(path), "instance/network-interfaces/%ld/network", idx);
      rc = get_str(md, path, n->network, sizeof(n->network), 0);
      if (rc == WEFT_ENOENT)
        rc = 0;
    }
    if (rc != 0)
      weft__snprintf(why, whylen, "metadata %s: %s", path, weft_strerror(rc));
    else
      info->nnics++;
  }
  free(list);
  return rc;
}

/* What weftx_gcp_detect() and weftx_gcp_identify() share: open the server and
 * read machine-type and physical_host. *md stays NULL off GCE (0 returned)
 * and on an error to open it; otherwise the caller closes it. */
static int identify(weftx_gcp_info *info, weftx_gcp_md **md, char *why, size_t whylen)
{
  int rc;

  memset(info, 0, sizeof(*info));
  if (why && whylen)
    why[0] = '\0';
  rc = weftx_gcp_md_open(md);
  if (rc == WEFT_ENOTGCE) {
    WEFT__LOG(GCP, "not on GCE (DMI) and GCE_METADATA_HOST unset: no metadata request");
    return 0;
  }
  if (rc != 0) {
    weft__snprintf(why, whylen, "GCE metadata: %s", weft_strerror(rc));
    return rc;
  }
  rc = get_str(*md, "instance/machine-type", info->machine_type, sizeof(info->machine_type), 1);
  if (rc != 0) {
    weft__snprintf(why, whylen,
                   "GCE metadata server %s: instance/machine-type: %s "
                   "(check GCE_METADATA_HOST, or unset it off GCE)",
                   weftx_gcp_md_base(*md), weft_strerror(rc));
    return rc;
  }
  info->on_gce = 1;
  info->family = weftx_gcp_family(info->machine_type);
  (void)get_str(*md, "instance/attributes/physical_host", info->physical_host,
                sizeof(info->physical_host), 0);
  return 0;
}

int weftx_gcp_detect(weftx_gcp_info *info, char *why, size_t whylen)
{
  weftx_gcp_md *md = NULL;
  char flag[16];
  int rc;

  rc = identify(info, &md, why, whylen);
  if (rc != 0 || !md)
    goto out;
  /* The rest is informative; a key the server lacks is left empty. */
  (void)get_str(md, "instance/zone", info->zone, sizeof(info->zone), 1);
  (void)get_str(md, "instance/hostname", info->hostname, sizeof(info->hostname), 0);
  if (get_str(md, "instance/scheduling/preemptible", flag, sizeof(flag), 0) == 0)
    info->preemptible = !strcmp(flag, "TRUE");
  rc = read_nics(md, info, why, whylen);
  if (rc == 0)
    rc = weftx_gcp_nics_match(info);
out:
  weftx_gcp_md_close(md);
  return rc;
}

int weftx_gcp_identify(weftx_gcp_info *info, char *why, size_t whylen)
{
  weftx_gcp_md *md = NULL;
  int rc = identify(info, &md, why, whylen);

  weftx_gcp_md_close(md);
  return rc;
}
