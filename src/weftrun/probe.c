/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Probe remote hosts' topologies once per job, through the engine itself:
 * one "weft-rank --probe" per host, started by mpirun (so it reaches the
 * hosts exactly as the job will), prints its host's hwloc XML; mpirun's
 * --tag-output tells the hosts' lines apart. Each XML lands in a temporary
 * file for weftx_topo_load(). The probe has a deadline like every wait.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weftrun.h"

#define PROBE_DEADLINE_S 60

static double
mono(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Split off the line weft-rank --probe adds after a GCE host's XML; returns the XML's length. */
static size_t
gce_facts(char *buf, size_t len, wr_gce *gce)
{
  char *tag = strstr(buf, "\n" WEFTX_GCE_PROBE_TAG " ");
  if (!tag)
    return len;
  char mt[sizeof(gce->machine_type)] = "", ph[sizeof(gce->physical_host)] = "";
  if (gce && sscanf(tag + 1 + strlen(WEFTX_GCE_PROBE_TAG), " %63s %255s", mt, ph) == 2) {
    snprintf(gce->machine_type, sizeof(gce->machine_type), "%s", mt);
    snprintf(gce->physical_host, sizeof(gce->physical_host), "%s", strcmp(ph, "-") ? ph : "");
  }
  return (size_t)(tag - buf) + 1;
}

int
wr_probe(const wr_opts *o, const char *const *hosts, int n, char **paths, wr_gce *gce)
{
  char mpirun[4096], agent[4096];
  int rc = WR_EXIT_ENGINE;
  FILE **out = calloc((size_t)n, sizeof(*out));
  char **buf = calloc((size_t)n, sizeof(*buf));
  size_t *len = calloc((size_t)n, sizeof(*len));
  wr_argv a = { NULL, 0, 0 };
  char *list = NULL;
  size_t listlen = 0;
  FILE *lf = NULL;
  pid_t pid = -1;
  int pfd = -1, said = 0;

  if (!out || !buf || !len)
    goto out;
  if (!wr_find_mpirun(mpirun, sizeof(mpirun)) || !wr_find_rank_agent(agent, sizeof(agent))) {
    fprintf(stderr, "weftrun: cannot probe the hosts: mpirun or weft-rank not found; give "
            "--topology HOST=FILE or --gpus-per-node N\n");
    said = 1;
    goto out;
  }
  if (!(lf = open_memstream(&list, &listlen)))
    goto out;
  for (int i = 0; i < n; i++)
    fprintf(lf, "%s%s:1", i ? "," : "", hosts[i]);
  if (fclose(lf)) {
    lf = NULL;
    goto out;
  }
  lf = NULL;
  char np[16];
  snprintf(np, sizeof(np), "%d", n);
  if (wr_argv_add(&a, mpirun) || (o->allow_run_as_root && wr_argv_add(&a, "--allow-run-as-root")) ||
      wr_argv_add(&a, "-np") || wr_argv_add(&a, np) || wr_argv_add(&a, "-H") ||
      wr_argv_add(&a, list) || wr_argv_add(&a, "--map-by") || wr_argv_add(&a, "slot") ||
      wr_argv_add(&a, "--bind-to") || wr_argv_add(&a, "none") || wr_argv_add(&a, "--tag-output"))
    goto out;
  for (int i = 0; i < o->nmca; i++)
    if (wr_argv_add(&a, "--mca") || wr_argv_add(&a, o->mca[i].key) || wr_argv_add(&a, o->mca[i].value))
      goto out;
  for (int i = 0; i < o->npass; i++)
    if (wr_argv_add(&a, o->pass[i]))
      goto out;
  /* a metadata server named for the job (off GCE: tests) is asked on every host */
  const char *md = getenv("GCE_METADATA_HOST");
  if (md && *md && (wr_argv_add(&a, "-x") || wr_argv_add(&a, "GCE_METADATA_HOST")))
    goto out;
  if (wr_argv_add(&a, agent) || wr_argv_add(&a, "--probe"))
    goto out;
  if (o->verbose) {
    fputs("weftrun: probing hosts:", stderr);
    for (int i = 0; i < a.n; i++)
      fprintf(stderr, " %s", a.v[i]);
    fputc('\n', stderr);
  }

  int p[2];
  if (pipe(p))
    goto out;
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    goto out;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(p[1], STDOUT_FILENO);
    close(p[0]);
    close(p[1]);
    execvp(a.v[0], a.v);
    fprintf(stderr, "weftrun: cannot run %s: %s\n", a.v[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(p[1]);
  pfd = p[0];
  fcntl(pfd, F_SETFL, O_NONBLOCK);
  for (int i = 0; i < n; i++)
    if (!(out[i] = open_memstream(&buf[i], &len[i])))
      goto out;

  /* All of mpirun's stdout, then split by tags: --tag-output puts "[J,R]<stdout>:"
   * before every piece it forwards, also in the middle of a line when a piece
   * ends there, so the stream is cut at tags, not at newlines. */
  char *all = NULL;
  size_t alllen = 0;
  FILE *af = open_memstream(&all, &alllen);
  if (!af)
    goto out;
  double deadline = mono() + PROBE_DEADLINE_S;
  char part[65536];
  for (;;) {
    int ms = (int)((deadline - mono()) * 1000);
    if (ms <= 0) {
      fprintf(stderr, "weftrun: probing the hosts' topologies took longer than %d s; check that "
              "mpirun reaches them, or give --topology HOST=FILE or --gpus-per-node N\n",
              PROBE_DEADLINE_S);
      said = 1;
      fclose(af);
      free(all);
      goto out;
    }
    struct pollfd pf = { pfd, POLLIN, 0 };
    if (poll(&pf, 1, ms) < 0 && errno != EINTR)
      break;
    ssize_t r = read(pfd, part, sizeof(part));
    if (r > 0)
      fwrite(part, 1, (size_t)r, af);
    else if (r == 0 || (errno != EAGAIN && errno != EINTR))
      break;
  }
  if (fclose(af)) {
    free(all);
    goto out;
  }
  int cur = -1;
  for (size_t k = 0; k < alllen; k++) {
    int job, r, used = 0;
    if (all[k] == '[' && sscanf(all + k, "[%d,%d]<stdout>:%n", &job, &r, &used) == 2 && used > 0) {
      cur = r >= 0 && r < n ? r : -1;
      k += (size_t)used - 1;
      continue;
    }
    if (cur >= 0)
      fputc(all[k], out[cur]);
  }
  free(all);
  int status = 0;
  if (waitpid(pid, &status, 0) == pid)
    pid = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "weftrun: probing the hosts' topologies failed (mpirun exit %d; see above); "
            "check the hosts, or give --topology HOST=FILE or --gpus-per-node N\n",
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    said = 1;
    goto out;
  }
  for (int i = 0; i < n; i++) {
    if (fclose(out[i])) {
      out[i] = NULL;
      goto out;
    }
    out[i] = NULL;
    if (!len[i] || !strstr(buf[i], "</topology>")) {
      fprintf(stderr, "weftrun: host %s sent no topology when probed; give --topology %s=FILE\n",
              hosts[i], hosts[i]);
      said = 1;
      goto out;
    }
    char tmpl[] = "/tmp/weftrun-probe-XXXXXX";
    int fd = mkstemp(tmpl);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
      if (fd >= 0) {
        close(fd);
        unlink(tmpl);
      }
      goto out;
    }
    /* hwloc writes a zero word of a bitmap as nothing ("0x1,,0x2"); spell it out
     * for lib/topo's XML check, which wants a number between the commas */
    len[i] = gce_facts(buf[i], len[i], gce ? &gce[i] : NULL);
    for (size_t k = 0; k < len[i]; k++) {
      if (buf[i][k] == ',' && k + 1 < len[i] && buf[i][k + 1] == ',')
        fputs(",0x0", f);
      else
        fputc(buf[i][k], f);
    }
    if (fclose(f) || !(paths[i] = strdup(tmpl))) {
      unlink(tmpl);
      goto out;
    }
  }
  rc = 0;
out:
  if (pid > 0) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  if (pfd >= 0)
    close(pfd);
  if (lf)
    fclose(lf);
  for (int i = 0; out && buf && i < n; i++) {
    if (out[i])
      fclose(out[i]);
    free(buf[i]);
  }
  free(out);
  free(buf);
  free(len);
  free(list);
  wr_argv_free(&a);
  if (rc) {
    for (int i = 0; i < n; i++) {
      if (paths[i])
        unlink(paths[i]);
      free(paths[i]);
      paths[i] = NULL;
    }
    if (!said)
      fprintf(stderr, "weftrun: could not probe the hosts: %s\n", strerror(errno));
  }
  return rc;
}
