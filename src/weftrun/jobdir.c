/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun's private directory for one job, $TMPDIR/weft-PID-XXXXXX (mode
 * 0700): the hostfile mpirun reads, this host's topology as hwloc XML for the
 * weft-rank instances here (so that they need not probe the hardware again),
 * the remote hosts' probed XML and the probe's hostfile. Made on first use;
 * weftrun removes it when the job ends, however it ends (signals are stop
 * requests, see signals.c); only a SIGKILL leaves it, and its name says which
 * weftrun it belonged to: the next weftrun of the same user that makes its own
 * job directory in the same $TMPDIR removes such a stale one (its weftrun's pid
 * no longer runs; the directory is the user's), with what is in it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weftrun.h"

static const char *tmpdir(void)
{
  const char *tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

void wr_jobdir_name(const wr_jobdir *d, char *buf, size_t len)
{
  if (d->path[0])
    snprintf(buf, len, "%s", d->path);
  else
    snprintf(buf, len, "%s/weft-%ld-XXXXXX", tmpdir(), (long)getpid());
}

int wr_jobdir_try(const wr_jobdir *d)
{
  char dir[sizeof(d->path)];
  if (d->path[0])
    return 0;
  wr_jobdir_name(d, dir, sizeof(dir));
  if (strlen(dir) + 1 >= sizeof(dir) || !mkdtemp(dir)) {
    fprintf(stderr, "weftrun: cannot make a private directory %s: %s; check TMPDIR\n", dir,
            strerror(errno));
    return WR_EXIT_ENGINE;
  }
  rmdir(dir);
  return 0;
}

/* "weft-PID-XXXXXX": its PID, else 0. */
static long stale_pid(const char *name)
{
  char *end;
  if (strncmp(name, "weft-", 5))
    return 0;
  long pid = strtol(name + 5, &end, 10);
  if (end == name + 5 || *end != '-' || strlen(end + 1) != 6 || pid <= 0)
    return 0;
  return pid;
}

void wr_jobdir_rmtree(int at, const char *name, int depth)
{
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (fd >= 0 && !d)
    close(fd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    if (unlinkat(fd, e->d_name, 0) && depth < 32)
      wr_jobdir_rmtree(fd, e->d_name, depth + 1);
  }
  if (d)
    closedir(d);
  unlinkat(at, name, AT_REMOVEDIR);
}

/* The job directories of weftruns that were killed (SIGKILL) before they could remove
 * them: this user's, in this $TMPDIR, whose weftrun is no longer running, with what is
 * in them (the default checkpoint directory of --restarts holds what the program
 * wrote). */
static void sweep_stale(void)
{
  DIR *d = opendir(tmpdir());
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long pid = stale_pid(e->d_name);
    struct stat sb;
    if (!pid || pid == (long)getpid() || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
      continue;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode) &&
        sb.st_uid == geteuid())
      wr_jobdir_rmtree(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

FILE *wr_jobdir_file(wr_jobdir *d, const char *name, char *path, size_t len, char *why,
                     size_t whylen)
{
  if (!d->path[0]) {
    char dir[sizeof(d->path)];
    wr_jobdir_name(d, dir, sizeof(dir));
    if (strlen(dir) + 1 >= sizeof(dir) || !mkdtemp(dir)) {
      snprintf(why, whylen, "cannot make a private directory %s: %s; check TMPDIR", dir,
               strerror(errno));
      return NULL;
    }
    memcpy(d->path, dir, sizeof(d->path));
    sweep_stale();
  }
  char **v = realloc(d->files, (size_t)(d->nfiles + 1) * sizeof(*v));
  if (!v || (size_t)snprintf(path, len, "%s/%s", d->path, name) >= len ||
      !(v[d->nfiles] = strdup(path))) {
    if (v)
      d->files = v;
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  d->files = v;
  d->nfiles++;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
  }
  return f;
}

void wr_jobdir_remove(wr_jobdir *d)
{
  for (int i = 0; i < d->nfiles; i++) {
    unlink(d->files[i]);
    free(d->files[i]);
  }
  free(d->files);
  d->files = NULL;
  d->nfiles = 0;
  if (d->path[0])
    rmdir(d->path);
  d->path[0] = '\0';
}
