/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Processes a child left behind when it died: this process adopts them (a
 * child subreaper) and ends them. Open MPI's mpirun starts srun (its daemons'
 * launcher under Slurm) in a process group of its own, so that killing
 * mpirun's group leaves srun running, waiting for a node that is gone, its job
 * step holding the allocation's CPUs.
 */
#include "weft_private.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weftx/proc.h>
#include <weftx/util.h>

#define ORPHANS_MAX 256

int weftx_proc_adopt(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) ? WEFT_ESYS : 0; }

int weftx_proc_stat(pid_t pid, pid_t *ppid, char *state)
{
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  long pp;
  if (!p || sscanf(p + 1, " %c %ld", state, &pp) != 2)
    return -1;
  *ppid = (pid_t)pp;
  return 0;
}

/* This process's children, at most max, into out; their number. */
static int children(pid_t *out, int max)
{
  DIR *d = opendir("/proc");
  struct dirent *e;
  pid_t me = getpid();
  int n = 0;
  if (!d)
    return 0;
  while (n < max && (e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    char *end, st;
    long v = strtol(e->d_name, &end, 10);
    pid_t pp;
    if (!*end && v > 0 && !weftx_proc_stat((pid_t)v, &pp, &st) && pp == me)
      out[n++] = (pid_t)v;
  }
  closedir(d);
  return n;
}

/* Reap what of pid[0..n) has ended (pid[i] becomes 0); how many are left. */
static int reap(pid_t *pid, int n)
{
  int left = 0;
  for (int i = 0; i < n; i++) {
    if (!pid[i])
      continue;
    pid_t w = waitpid(pid[i], NULL, WNOHANG);
    if (w == pid[i] || (w < 0 && errno == ECHILD))
      pid[i] = 0;
    else
      left++;
  }
  return left;
}

static void nap_ms(long ms)
{
  struct timespec ts = {0, ms * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

int weftx_proc_end_orphans(double grace)
{
  pid_t pid[ORPHANS_MAX];
  int n = children(pid, ORPHANS_MAX), left;
  if (!n)
    return 0;
  for (int i = 0; i < n; i++)
    kill(pid[i], SIGTERM);
  double until = weftx_monotonic() + grace;
  while ((left = reap(pid, n)) && weftx_monotonic() < until)
    nap_ms(20);
  for (int i = 0; left && i < n; i++)
    if (pid[i])
      kill(pid[i], SIGKILL);
  /* SIGKILL ends anything but a process stuck in the kernel: a second more at most */
  for (int k = 0; left && k < 50; k++) {
    nap_ms(20);
    left = reap(pid, n);
  }
  return n;
}
