/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-topo's main(): check the library, parse the options, load the
 * topology, print the report or the placement, and return the exit status
 * weft-topo(1) documents.
 */
#include "weft-topo.h"

#include <stdio.h>
#include <stdlib.h>

/* rc, or TOPO_EXIT_INTERNAL when stdout could not be written. */
static int flushed(int rc)
{
  if (rc == TOPO_EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "weft-topo: could not write the output\n");
    return TOPO_EXIT_INTERNAL;
  }
  return rc;
}

int main(int argc, char **argv)
{
  struct topo_opts o;
  weftx_topo *t = NULL;
  char why[512];
  const char *host;
  int rc;

  if (weft_check_version(stderr, argv[0]) != 0)
    return TOPO_EXIT_INTERNAL;
  rc = topo_options(argc, argv, &o);
  if (rc != 0)
    return rc;
  if (o.help) {
    topo_usage(stdout, "weft-topo");
    return TOPO_EXIT_OK;
  }
  if (o.version) {
    printf("weft-topo %s\n", weft_version_string());
    return TOPO_EXIT_OK;
  }
  if (o.man) {
    topo_man_options(stdout);
    return TOPO_EXIT_OK;
  }
  if (o.completion) {
    topo_completion(stdout);
    return flushed(TOPO_EXIT_OK);
  }
  if (o.list)
    return flushed(topo_list(stdout));
  rc = weftx_topo_load(o.topology, 0, &t, why, sizeof(why));
  if (rc != 0) {
    fprintf(stderr, "weft-topo: %s\n", why[0] ? why : weft_strerror(rc));
    return rc == WEFT_ENOMEM ? TOPO_EXIT_INTERNAL : TOPO_EXIT_TOPOLOGY;
  }
  host = o.host ? o.host : weftx_topo_hostname(t);
  if (!host || !*host)
    host = "localhost";
  if (o.np > 0 || o.json)
    rc = topo_place(stdout, t, host, &o);
  else
    rc = topo_report(stdout, t, host);
  weftx_topo_destroy(t);
  return flushed(rc);
}
