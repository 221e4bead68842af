/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a rank leaves on its host, ended with it: the processes its program
 * started and did not wait for (a setsid daemon, a double fork), and the
 * shared memory Open MPI made for it. The agent is the child subreaper
 * (PR_SET_CHILD_SUBREAPER) of everything its program starts, so an orphan
 * comes to the agent, not to init, and the agent reaps it; when the rank has
 * ended, whatever is left under the agent gets SIGTERM, a short grace, then
 * SIGKILL, and one line says what was ended. WEFT_KEEP_DAEMONS=1 opts out (a
 * program that must leave a service running): no subreaper, nothing ended.
 * Open MPI 4.1's shared-memory transport (vader) keeps each rank's segment in
 * /dev/shm/vader_segment.NODE.UID.JOBID.LOCALRANK (Debian 12's 4.1.4; older
 * releases without UID; JOBID in hex, OMPI_MCA_ess_base_jobid in decimal), which
 * Open MPI removes when the job ends in order (MPI_Finalize, its daemons'
 * cleanup) but leaves, 4 MiB each until reboot, after a SIGKILL of mpirun. The
 * agent removes it once the program has ended, however it ended.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weftx/proc.h>

#include "weft-rank.h"

#define MAX_PROCS 4096   /* processes of the host looked at (a /proc scan) */
#define MAX_NAMED 8      /* processes named in the line */
#define TERM_GRACE_S 1.0 /* SIGTERM to SIGKILL for what the program left */
#define KILL_WAIT_S 1.0  /* after SIGKILL: gone, or given up on */

static int subreaper;

int wk_leftovers_keep(void)
{
  const char *k = getenv("WEFT_KEEP_DAEMONS");
  return k && *k && strcmp(k, "0") != 0;
}

int wk_leftovers_start(void)
{
  if (wk_leftovers_keep())
    return 0;
#ifdef PR_SET_CHILD_SUBREAPER
  subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
#endif
  return subreaper;
}

void wk_leftovers_reap_except(pid_t keep)
{
  for (int i = 0; i < 64; i++) { /* a bound: the rest at the next turn */
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid <= 0 || si.si_pid == keep)
      return; /* the program's end is its own wait's (wait4 with its rusage) */
    waitpid(si.si_pid, NULL, WNOHANG);
  }
}

void wk_leftovers_reap(void)
{
  pid_t w;
  int st;
  do
    w = waitpid(-1, &st, WNOHANG);
  while (w > 0 || (w < 0 && errno == EINTR));
}

char wk_leftovers_state(pid_t pid)
{
  pid_t pp;
  char st;
  return weftx_proc_stat(pid, &pp, &st) ? '?' : st;
}

/* The live descendants of this process (zombies left out), at most max. */
static int descendants(pid_t *out, int max)
{
  static pid_t pid[MAX_PROCS], ppid[MAX_PROCS];
  static char mine[MAX_PROCS];
  int n = 0, found = 0;
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_PROCS) {
    char *end;
    long v = strtol(e->d_name, &end, 10);
    char st;
    if (*end || v <= 0 || weftx_proc_stat((pid_t)v, &ppid[n], &st) || st == 'Z' || st == 'X')
      continue;
    pid[n] = (pid_t)v;
    mine[n] = 0;
    n++;
  }
  closedir(d);
  pid_t self = getpid();
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < n; i++) {
      if (mine[i])
        continue;
      int up = ppid[i] == self;
      for (int j = 0; !up && j < n; j++)
        up = mine[j] && pid[j] == ppid[i];
      if (up) {
        mine[i] = 1;
        changed = 1;
      }
    }
  }
  for (int i = 0; i < n && found < max; i++)
    if (mine[i] && pid[i] != self)
      out[found++] = pid[i];
  return found;
}

static void comm_of(pid_t pid, char *buf, size_t len)
{
  char path[64];
  snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
  FILE *f = fopen(path, "r");
  buf[0] = '\0';
  if (f) {
    if (!fgets(buf, (int)len, f))
      buf[0] = '\0';
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = '\0';
}

/* Wait (reaping) until none is left or the deadline; how many are left. */
static int wait_gone(double deadline, pid_t *left, int max)
{
  for (;;) {
    wk_leftovers_reap();
    int n = descendants(left, max);
    if (!n)
      wk_leftovers_reap(); /* those that died during the scan: not left to init */
    if (!n || weftx_monotonic() >= deadline)
      return n;
    usleep(20000);
  }
}

int wk_leftovers_end(const wt_agent_who *who, int say)
{
  static pid_t p[MAX_PROCS];
  if (!subreaper)
    return 0;
  wk_leftovers_reap();
  int n = descendants(p, MAX_PROCS);
  if (!n)
    return 0;
  char line[1024];
  int len = 0;
  for (int i = 0; i < n; i++) {
    char comm[32];
    if (i < MAX_NAMED) {
      comm_of(p[i], comm, sizeof(comm));
      len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%ld (%s)", i ? ", " : "",
                      (long)p[i], comm);
      if (len >= (int)sizeof(line))
        len = (int)sizeof(line) - 1;
    }
    kill(p[i], SIGTERM);
    kill(p[i], SIGCONT);
  }
  if (n > MAX_NAMED)
    snprintf(line + len, sizeof(line) - (size_t)len, " and %d more", n - MAX_NAMED);
  int killed = wait_gone(weftx_monotonic() + TERM_GRACE_S, p, MAX_PROCS);
  for (int i = 0; i < killed; i++)
    kill(p[i], SIGKILL);
  int left = killed ? wait_gone(weftx_monotonic() + KILL_WAIT_S, p, MAX_PROCS) : 0;
  if (!say && !left)
    return n;
  fprintf(stderr,
          "weft-rank: rank %d host %s: ended %d process%s the program left running "
          "(WEFT_KEEP_DAEMONS=1 keeps them): %s%s%s\n",
          who->rank, who->host, n, n == 1 ? "" : "es", line, killed ? "; SIGKILL after 1 s" : "",
          left ? "; still there after SIGKILL" : "");
  fflush(stderr);
  return n;
}

void wk_leftovers_shm(void)
{
  const char *job = getenv("OMPI_MCA_ess_base_jobid");
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  char *end;
  if (!job || !lr || !*job || !*lr)
    return;
  unsigned long jobid = strtoul(job, &end, 10);
  if (*end)
    return;
  long local = strtol(lr, &end, 10);
  if (*end || local < 0)
    return;
  /* NODE is Open MPI's name for the host (short or not, as it was configured): any
   * NODE (and UID: the file must be ours) with this job's id and this local rank */
  char tail[64];
  snprintf(tail, sizeof(tail), ".%lx.%ld", jobid, local);
  size_t tl = strlen(tail);
  DIR *d = opendir("/dev/shm");
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    if (strncmp(e->d_name, "vader_segment.", 14) || nl <= 14 + tl ||
        strcmp(e->d_name + nl - tl, tail))
      continue;
    char path[512];
    struct stat sb;
    snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid())
      unlink(path);
  }
  closedir(d);
}
