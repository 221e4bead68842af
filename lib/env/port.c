/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MASTER_PORT: a TCP port free on the launching host. Either the kernel's
 * choice (bind port 0) or the first free one of a few candidates derived
 * from a job id, so that every launcher of one job computes the same port.
 * The check is local: when the first host is another machine, the port was
 * only seen free here.
 */
#include "weft_private.h"

#include <weftx/env.h>

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int weftx_port_candidate(unsigned long jobid, int attempt)
{
  return WEFTX_PORT_BASE + (int)((jobid + (unsigned long)attempt) % WEFTX_PORT_SPAN);
}

/* Bind \p port (0: any) on all addresses; the port bound, or a negative code. */
static int try_bind(int port)
{
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), got = WEFT_ESYS;

  if (fd < 0)
    return WEFT_ESYS;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  sa.sin_port = htons((unsigned short)port);
  if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
    got = ntohs(sa.sin_port);
  else if (errno == EADDRINUSE || errno == EACCES)
    got = WEFT_ENOENT;
  close(fd);
  return got;
}

int weftx_master_port(unsigned long jobid, int *port, char *why, size_t whylen)
{
  int p;

  if (!port)
    return WEFT_EINVAL;
  if (jobid == 0) {
    p = try_bind(0);
    if (p < 0) {
      if (why)
        weft__snprintf(why, whylen, "cannot bind a TCP socket for MASTER_PORT: %s",
                       strerror(errno));
      return p;
    }
    *port = p;
    return 0;
  }
  for (int i = 0; i < WEFTX_PORT_TRIES; i++) {
    p = try_bind(weftx_port_candidate(jobid, i));
    if (p > 0) {
      *port = p;
      return 0;
    }
    if (p != WEFT_ENOENT)
      break;
  }
  if (why)
    weft__snprintf(why, whylen,
                   "no free TCP port among %d candidates from %d for MASTER_PORT; "
                   "set MASTER_PORT yourself",
                   WEFTX_PORT_TRIES, weftx_port_candidate(jobid, 0));
  return WEFT_ENOENT;
}
