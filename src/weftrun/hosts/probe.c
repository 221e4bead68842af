/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Probe remote hosts' topologies once per job, through the engine itself (so
 * that it reaches the hosts exactly as the job will): one "weft-rank --probe"
 * per host, rank i on the i-th line of the probe's hostfile whatever host
 * weftrun itself is on (mpirun's sequential mapper, srun's arbitrary
 * distribution). Each prints its host's hwloc XML (and, on Google Cloud, the
 * line agent.h defines); mpirun's --tag-output or srun's --label tells the
 * hosts' output apart. Each XML lands in the job directory for
 * weftx_topo_load(). The probe has a deadline like every wait, and stops on
 * weftrun's stop requests.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "hosts.h"

#define PROBE_DEADLINE_S 60

/* The probe's output, cut into each host's (engine/streams.c): into out[rank]. */
typedef struct split {
  FILE **out;
  int bad; /* a write failed (out of memory) */
} split;

static void to_host(void *arg, int rank, const char *data, size_t len)
{
  split *sp = arg;
  sp->bad |= fwrite(data, 1, len, sp->out[rank]) != len;
}

/* One host's XML into the job directory; its GCE line into its facts. */
int wr_probe_save(wr_host *h, int i, const char *buf, size_t len, wr_jobdir *dir, char **path)
{
  char name[64], p[4096], why[600];
  len = wt_agent_gce_parse(buf, len, h->machine_type, sizeof(h->machine_type), h->physical_host,
                           sizeof(h->physical_host));
  snprintf(name, sizeof(name), "probe-%d.xml", i);
  FILE *f = wr_jobdir_file(dir, name, p, sizeof(p), why, sizeof(why));
  if (!f) {
    fprintf(stderr, "weftrun: %s\n", why);
    return -1;
  }
  /* hwloc writes a zero word of a bitmap as nothing ("0x1,,0x2"); spell it out
   * for lib/topo's XML check, which wants a number between the commas */
  for (size_t k = 0; k < len; k++) {
    if (buf[k] == ',' && k + 1 < len && buf[k + 1] == ',')
      fputs(",0x0", f);
    else
      fputc(buf[k], f);
  }
  if (fclose(f) || !(*path = strdup(p))) {
    fprintf(stderr, "weftrun: cannot write %s: %s\n", p, strerror(errno));
    return -1;
  }
  return 0;
}

static int command(const wr_opts *o, const wr_engine *e, int n, const char *hostfile, wr_argv *a,
                   wr_argv *env)
{
  if (!e->found) {
    fprintf(stderr,
            "weftrun: cannot probe the hosts: %s not found; give --topology HOST=FILE or "
            "--gpus-per-node N\n",
            e->name);
    return WR_EXIT_ENGINE;
  }
  /* what would stop the job's launch stops the probe's, said as the launch says it
   * (mpirun refusing root would read as every host unreachable) */
  int rc = wr_engine_ready(o, e);
  if (rc)
    return rc;
  rc = wr_engine_probe_argv(o, e, n, hostfile, a, env);
  wt_agent_args probe;
  wt_agent_args_init(&probe);
  probe.probe = 1;
  if (!rc)
    rc = wr_argv_add(a, e->agent) || wt_agent_args_write(&probe, wr_argv_add_cb, a);
  if (rc) {
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  if (o->verbose)
    wr_argv_print(stderr, "weftrun: probing hosts:", a);
  return 0;
}

/* The probe's output as it comes: stdout kept, stderr passed on with the engine's
 * accounts of a failure held (engine/banners.c). */
typedef struct reading {
  FILE *out;
  char *buf;
  size_t len;
  wr_banners ban;
} reading;

static void to_stderr(void *arg, const char *data, size_t len)
{
  (void)arg;
  fwrite(data, 1, len, stderr);
}

static void on_output(void *arg, int stream, const char *data, size_t len)
{
  reading *rd = arg;
  if (stream == 2)
    wr_banners_put(&rd->ban, data, len);
  else if (rd->out && fwrite(data, 1, len, rd->out) != len) {
    fclose(rd->out);
    rd->out = NULL;
  }
}

/* The engine's held accounts and weftrun's line \p line, into \p said. */
static void hold(reading *rd, const char *line, char **said)
{
  size_t n = 0;
  char *held = wr_banners_take(&rd->ban, &n), *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f) {
    if (held)
      fwrite(held, 1, n, f);
    fputs(line, f);
  }
  if (!f || fclose(f)) {
    if (held)
      fwrite(held, 1, n, stderr);
    fputs(line, stderr);
    free(text);
    text = NULL;
  }
  free(held);
  *said = text;
}

static int run(const wr_opts *o, const wr_engine *e, wr_argv *a, const wr_argv *env, int stop_fd,
               weftx_proc_result *r, char **said)
{
  weftx_proc_spec s;
  char why[600];
  char **envp = wr_env_build(env);
  reading rd;
  memset(&rd, 0, sizeof(rd));
  wr_banners_init(&rd.ban, to_stderr, NULL);
  if (!envp || !(rd.out = open_memstream(&rd.buf, &rd.len))) {
    free(envp);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  weftx_proc_spec_init(&s);
  s.argv = a->v;
  s.envp = envp;
  s.out = WEFTX_PROC_PIPE;
  /* -v: the engine's stderr straight through, all of it */
  s.err = o->verbose ? WEFTX_PROC_INHERIT : WEFTX_PROC_PIPE;
  s.raw = 1;
  s.on_output = on_output;
  s.arg = &rd;
  s.timeout = PROBE_DEADLINE_S;
  s.grace = 3;
  s.stop_fd = stop_fd;
  int failed = weftx_proc_run(&s, r, why, sizeof(why));
  free(envp);
  int bad = !rd.out || fclose(rd.out);
  r->output = rd.buf;
  r->len = rd.len;
  if (bad && !failed) {
    wr_banners_end(&rd.ban, 0);
    fprintf(stderr, "weftrun: out of memory\n");
    return WR_EXIT_ENGINE;
  }
  if (r->status && !failed && !r->stopped && !r->timed_out &&
      !(r->status == WEFTX_PROC_NOEXEC && why[0])) {
    char line[600];
    snprintf(line, sizeof(line),
             "weftrun: probing the hosts' topologies failed (%s exit %d; "
             "see above); check the hosts, or give --topology HOST=FILE or --gpus-per-node N\n",
             e->name, r->status);
    hold(&rd, line, said);
    return WR_EXIT_ENGINE;
  }
  wr_banners_end(&rd.ban, 0);
  if (failed) {
    fprintf(stderr, "weftrun: cannot probe the hosts: %s\n", why);
    return WR_EXIT_ENGINE;
  }
  if (r->stopped) {
    fprintf(stderr,
            "weftrun: got signal %d while probing the hosts; nothing was started "
            "(exit %d)\n",
            r->stopped, 128 + r->stopped);
    return 128 + r->stopped;
  }
  if (r->timed_out) {
    fprintf(stderr,
            "weftrun: probing the hosts' topologies took longer than %d s; check that "
            "%s reaches them, or give --topology HOST=FILE or --gpus-per-node N\n",
            PROBE_DEADLINE_S, e->name);
    return WR_EXIT_ENGINE;
  }
  if (r->status == WEFTX_PROC_NOEXEC && why[0]) {
    fprintf(stderr, "weftrun: cannot probe the hosts: %s\n", why);
    return WR_EXIT_ENGINE;
  }
  return 0;
}

int wr_probe(const wr_opts *o, const wr_engine *e, wr_host *const *hosts, int n, wr_jobdir *dir,
             int stop_fd, char **paths, char **said)
{
  char hostfile[4096], why[600];
  FILE **out = calloc((size_t)n, sizeof(*out));
  char **buf = calloc((size_t)n, sizeof(*buf));
  size_t *len = calloc((size_t)n, sizeof(*len));
  wr_argv a = {NULL, 0, 0}, env = {NULL, 0, 0};
  weftx_proc_result r;
  int rc = WR_EXIT_ENGINE;

  memset(&r, 0, sizeof(r));
  if (!out || !buf || !len) {
    fprintf(stderr, "weftrun: out of memory\n");
    goto out;
  }
  /* one line per rank: the sequential mapper's hostfile, srun's SLURM_HOSTFILE */
  FILE *hf = wr_jobdir_file(dir, "probe-hosts", hostfile, sizeof(hostfile), why, sizeof(why));
  if (!hf) {
    fprintf(stderr, "weftrun: cannot probe the hosts: %s\n", why);
    goto out;
  }
  for (int i = 0; i < n; i++)
    fprintf(hf, "%s\n", hosts[i]->name);
  if (fclose(hf)) {
    fprintf(stderr, "weftrun: cannot write %s: %s\n", hostfile, strerror(errno));
    goto out;
  }
  if ((rc = command(o, e, n, hostfile, &a, &env)) ||
      (rc = run(o, e, &a, &env, stop_fd, &r, said))) {
    /* a host that does not resolve is the likeliest cause: say which (68) */
    for (int i = 0; rc == WR_EXIT_ENGINE && !r.stopped && i < n; i++) {
      weftx_netaddr na;
      if (weftx_host_resolve(hosts[i]->name, &na, why, sizeof(why)) == WEFT_ENAME) {
        fprintf(stderr, "weftrun: unknown host: %s (from %s)\n", why,
                o->hostfile ? o->hostfile : "-H");
        rc = WR_EXIT_NOHOST;
      }
    }
    if (rc == WR_EXIT_NOHOST) {
      free(*said);
      *said = NULL;
    }
    goto out;
  }
  rc = WR_EXIT_ENGINE;
  for (int i = 0; i < n; i++)
    if (!(out[i] = open_memstream(&buf[i], &len[i]))) {
      fprintf(stderr, "weftrun: out of memory\n");
      goto out;
    }
  split sp = {out, 0};
  wr_streams st;
  wr_streams_init(&st, e->kind != WR_ENGINE_MPIRUN, n, to_host, &sp);
  wr_streams_put(&st, r.output ? r.output : "", r.len);
  for (int i = 0; i < n; i++) {
    sp.bad |= fclose(out[i]) != 0;
    out[i] = NULL;
  }
  if (sp.bad) {
    fprintf(stderr, "weftrun: out of memory\n");
    goto out;
  }
  for (int i = 0; i < n; i++) {
    if (!len[i] || !strstr(buf[i], "</topology>")) {
      fprintf(stderr, "weftrun: host %s sent no topology when probed; give --topology %s=FILE\n",
              hosts[i]->name, hosts[i]->name);
      goto out;
    }
    if (wr_probe_save(hosts[i], i, buf[i], len[i], dir, &paths[i]))
      goto out;
  }
  rc = 0;
out:
  for (int i = 0; out && buf && i < n; i++) {
    if (out[i])
      fclose(out[i]);
    free(buf[i]);
  }
  free(out);
  free(buf);
  free(len);
  free(r.output);
  wr_argv_free(&a);
  wr_argv_free(&env);
  if (rc)
    for (int i = 0; i < n; i++) {
      free(paths[i]);
      paths[i] = NULL;
    }
  return rc;
}
