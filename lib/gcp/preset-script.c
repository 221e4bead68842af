/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A preset's profile script (Google's nccl-env-profile.sh): run it with bash
 * in a clean environment, with a deadline and a cap on its output, and give
 * back what `env` printed after sourcing it. preset-env.c decides which of
 * those variables count.
 */
#include "preset_private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCRIPT_TIMEOUT_MS 10000
#define SCRIPT_MAX_OUTPUT (256 * 1024)

/* Run "source SCRIPT; env" in a clean environment and read what it exported.
 * Returns the output (allocated) or NULL on failure with why set. */
char *weft__preset_script_run(const weftx_preset *p, const char *path, char *why, size_t whylen)
{
  char **envp, *out = NULL;
  size_t len = 0;
  int fds[2], status = 0, n = 0, done = 0;
  struct timespec t0, t;
  pid_t pid;

  envp = calloc((size_t)p->nscript_env + 3, sizeof(char *));
  if (!envp)
    return NULL;
  envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
  envp[n++] = "LD_LIBRARY_PATH=";
  for (int i = 0; i < p->nscript_env; i++)
    envp[n++] = p->script_env[i];
  if (pipe(fds) != 0) {
    free(envp);
    return NULL;
  }
  pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 2);
    }
    dup2(fds[1], 1);
    close(fds[0]);
    execle("/bin/bash", "bash", "-c", ". \"$0\" >/dev/null 2>&1; env", path, (char *)NULL, envp);
    _exit(127);
  }
  free(envp);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return NULL;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!done) {
    struct pollfd pfd = { fds[0], POLLIN, 0 };
    char buf[4096];
    long left;
    ssize_t r;
    int ready = 0;

    clock_gettime(CLOCK_MONOTONIC, &t);
    left = SCRIPT_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0 || (ready = poll(&pfd, 1, (int)left)) == 0) {
      weft__snprintf(why, whylen, "%s did not finish within %d s", path, SCRIPT_TIMEOUT_MS / 1000);
      kill(pid, SIGKILL);
      break;
    }
    if (ready < 0 && errno == EINTR)
      continue; /* a blocking read now would wait past the deadline */
    r = read(fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      done = 1;
    } else if (len + (size_t)r >= SCRIPT_MAX_OUTPUT) {
      /* Cut output would be merged as if whole. */
      weft__snprintf(why, whylen, "%s exported more than %d KiB of variables; export only "
                     "NCCL settings there", path, SCRIPT_MAX_OUTPUT / 1024);
      kill(pid, SIGKILL);
      break;
    } else {
      char *nb = realloc(out, len + (size_t)r + 1);
      if (!nb) {
        weft__snprintf(why, whylen, "out of memory reading the output of %s", path);
        kill(pid, SIGKILL);
        break;
      }
      out = nb;
      memcpy(out + len, buf, (size_t)r);
      len += (size_t)r;
      out[len] = '\0';
    }
  }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (done)
      weft__snprintf(why, whylen, "%s failed (bash exit status %d)", path,
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    free(out);
    return NULL;
  }
  return out ? out : strdup("");
}
