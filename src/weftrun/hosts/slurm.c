/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a Slurm job adds to the facts: the GPUs it was given on each of its
 * hosts. An salloc shell has no GPU variable, a batch script only those of
 * its own node, so they are read once per job from "scontrol show job -d"
 * (GRES=gpu:2(IDX:3-4) per node). A host of the job that was given no GPU
 * while its topology has some is given none, when Slurm manages GPUs there
 * ("scontrol show node" lists gpu among its Gres): the ranks then get no
 * GPU, and --map-by gpu says why. A CUDA_VISIBLE_DEVICES of the user's own
 * (forwarded to every rank, or given with -x) narrows every host the same
 * way; one that Slurm set (a batch script's, beside SLURM_JOB_GPUS) is the
 * batch node's and is not forwarded (engine/forward.c). Without GPUs in any topology
 * nothing is asked.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "hosts.h"

#define SCONTROL_DEADLINE_S 30
#define SCONTROL_OUTPUT_MAX (64u << 20)

extern char **environ;

/* The user's CUDA_VISIBLE_DEVICES as every rank will see it: -x's value, else weftrun's
 * own when forwarded; NULL when none (or Slurm's). */
static const char *user_cvd(const wr_opts *o)
{
  static const char name[] = "CUDA_VISIBLE_DEVICES";
  const size_t n = sizeof(name) - 1;
  for (int i = o->nxvars - 1; i >= 0; i--)
    if (!strncmp(o->xvars[i], name, n) && (o->xvars[i][n] == '=' || !o->xvars[i][n]))
      return o->xvars[i][n] == '=' ? o->xvars[i] + n + 1 : getenv(name);
  return wr_slurm_cvd_is_slurms() ? NULL : getenv(name);
}

/* scontrol ARGS..., its output (free()), within the deadline. WR_EXIT_*, 128+N. */
static int scontrol(char *const *args, int stop_fd, char **out)
{
  char path[4096], why[600] = "";
  const char *look[] = {"scontrol", NULL};
  char *argv[8] = {path};
  weftx_proc_spec s;
  weftx_proc_result r;
  *out = NULL;
  if (!weftx_find_exe(look, path, sizeof(path))) {
    fprintf(stderr,
            "weftrun: this is Slurm job %s, but scontrol is not on PATH to say which GPUs "
            "it was given; add Slurm's bin directory to PATH\n",
            getenv("SLURM_JOB_ID"));
    return WR_EXIT_ENGINE;
  }
  for (int i = 0; args[i] && i < 6; i++)
    argv[i + 1] = args[i];
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_INHERIT;
  s.timeout = SCONTROL_DEADLINE_S;
  s.grace = 2;
  s.max_output = SCONTROL_OUTPUT_MAX;
  s.stop_fd = stop_fd;
  if (weftx_proc_run(&s, &r, why, sizeof(why))) {
    fprintf(stderr, "weftrun: scontrol: %s\n", why);
    return WR_EXIT_ENGINE;
  }
  if (r.stopped) {
    free(r.output);
    fprintf(stderr, "weftrun: got signal %d while asking Slurm; nothing was started (exit %d)\n",
            r.stopped, 128 + r.stopped);
    return 128 + r.stopped;
  }
  if (r.status || !r.output) {
    free(r.output);
    fprintf(stderr,
            "weftrun: scontrol %s %s failed (%s); weftrun needs it to learn the GPUs of "
            "Slurm job %s\n",
            args[0], args[1] ? args[1] : "",
            r.timed_out ? "no answer within 30 s"
            : why[0]    ? why
                        : "see its message above",
            getenv("SLURM_JOB_ID"));
    return WR_EXIT_ENGINE;
  }
  *out = r.output;
  return 0;
}

/* Does node \p name have GPUs as Slurm GRES? From "scontrol -o show node" text. */
static int node_has_gpu_gres(const char *text, const char *name)
{
  size_t n = strlen(name);
  for (const char *l = text; *l;) {
    size_t len = strcspn(l, "\n");
    if (!strncmp(l, "NodeName=", 9) && !strncmp(l + 9, name, n) && (l[9 + n] == ' ' || !l[9 + n])) {
      const char *g = strstr(l, " Gres=");
      char gres[512];
      weftx_slurm_gres x;
      if (!g || g > l + len)
        return 0;
      g += 6;
      snprintf(gres, sizeof(gres), "%.*s", (int)strcspn(g, " \n"), g);
      return weftx_slurm_gres_gpus("Gres", gres, &x, NULL, 0) == 0 && x.count > 0;
    }
    l += len + (l[len] == '\n');
  }
  return 0;
}

/* a AND b, both index lists, into out. */
static int intersect(const char *a, const char *b, char *out, size_t len)
{
  int x[WEFTX_SLURM_GPUS_MAX], y[WEFTX_SLURM_GPUS_MAX], z[WEFTX_SLURM_GPUS_MAX];
  int nx = 0, ny = 0, nz = 0;
  if (weftx_slurm_gpu_indices("a", a, x, WEFTX_SLURM_GPUS_MAX, &nx, NULL, 0) ||
      weftx_slurm_gpu_indices("b", b, y, WEFTX_SLURM_GPUS_MAX, &ny, NULL, 0))
    return -1;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      if (x[i] == y[j])
        z[nz++] = x[i];
  return weftx_slurm_gpu_list(z, nz, out, len);
}

/* Give host \p w the GPUs \p list (NULL: all), narrowed by the user's \p cvd. */
static int allow(wr_host *w, const char *list, const char *cvd)
{
  char both[1024];
  if (list && cvd && intersect(list, cvd, both, sizeof(both)) == 0)
    list = both;
  else if (!list)
    list = cvd;
  if (!list)
    return 0;
  free(w->gpus_allowed);
  if (!(w->gpus_allowed = strdup(list)))
    return -1;
  int idx[WEFTX_SLURM_GPUS_MAX], n = 0;
  weftx_slurm_gpu_indices("GPUs", list, idx, WEFTX_SLURM_GPUS_MAX, &n, NULL, 0);
  w->gpus = n;
  return 0;
}

/* The job's GPUs per host from scontrol. */
static int job_gpus(wr_inventory *inv, const char *cvd, int stop_fd)
{
  char *text = NULL, *nodes = NULL, why[600];
  char *show_job[] = {(char *)"show", (char *)"job", (char *)"-d", (char *)inv->slurm_job, NULL};
  char *show_node[] = {(char *)"-o", (char *)"show", (char *)"node", NULL};
  weftx_slurm_node_gpus *v = NULL;
  int n = 0, rc = scontrol(show_job, stop_fd, &text);
  if (rc)
    return rc;
  if ((rc = weftx_slurm_job_gpus(text, &v, &n, why, sizeof(why)))) {
    fprintf(stderr, "weftrun: %s\n", rc == WEFT_ENOMEM ? "out of memory" : why);
    free(text);
    return WR_EXIT_ENGINE;
  }
  for (int h = 0; h < inv->nhosts && !rc; h++) {
    wr_host *w = &inv->hosts[h];
    for (int i = 0; i < n && !rc; i++) {
      if (strcmp(v[i].name, w->name))
        continue;
      const char *list = NULL;
      if (v[i].count > 0 && v[i].idx)
        list = v[i].idx;
      else if (v[i].count == 0 && w->gpus > 0) {
        /* none given: none to use, when Slurm manages this node's GPUs */
        if (!nodes && (rc = scontrol(show_node, stop_fd, &nodes)))
          break;
        if (node_has_gpu_gres(nodes, w->name))
          list = "";
      }
      if (list && allow(w, list, cvd)) {
        fprintf(stderr, "weftrun: out of memory\n");
        rc = WR_EXIT_ENGINE;
      } else if (list)
        w->gpus_from = inv->gpus_from;
    }
  }
  weftx_slurm_job_gpus_free(v, n);
  free(text);
  free(nodes);
  return rc;
}

int wr_slurm_gpus(const wr_opts *o, wr_inventory *inv, int stop_fd)
{
  const char *cvd = user_cvd(o);
  int gpus = 0, idx[WEFTX_SLURM_GPUS_MAX], n = 0;
  for (int h = 0; h < inv->nhosts; h++)
    gpus |= inv->hosts[h].gpus > 0;
  if (!gpus)
    return 0;
  /* only a list of indices narrows the GPUs (not UUIDs or MIG names) */
  if (cvd &&
      weftx_slurm_gpu_indices("CUDA_VISIBLE_DEVICES", cvd, idx, WEFTX_SLURM_GPUS_MAX, &n, NULL, 0))
    cvd = NULL;
  if (inv->slurm_job)
    snprintf(inv->gpus_from, sizeof(inv->gpus_from), "Slurm job %s%s", inv->slurm_job,
             cvd ? " and CUDA_VISIBLE_DEVICES" : "");
  else
    snprintf(inv->gpus_from, sizeof(inv->gpus_from), "CUDA_VISIBLE_DEVICES");
  if (inv->slurm_job) {
    int rc = job_gpus(inv, cvd, stop_fd);
    if (rc)
      return rc;
  }
  for (int h = 0; cvd && h < inv->nhosts; h++)
    if (!inv->hosts[h].gpus_from) {
      if (allow(&inv->hosts[h], NULL, cvd)) {
        fprintf(stderr, "weftrun: out of memory\n");
        return WR_EXIT_ENGINE;
      }
      inv->hosts[h].gpus_from = inv->slurm_job ? "CUDA_VISIBLE_DEVICES" : inv->gpus_from;
    }
  return 0;
}

int wr_slurm_alive(const char *job, int stop_fd, wr_slurm_job *j, char *why, size_t whylen)
{
  char path[4096];
  const char *look[] = {"scontrol", NULL};
  char *argv[] = {path, (char *)"-o", (char *)"show", (char *)"job", (char *)job, NULL};
  weftx_proc_spec s;
  weftx_proc_result r;
  why[0] = '\0';
  memset(j, 0, sizeof(*j));
  if (!weftx_find_exe(look, path, sizeof(path))) {
    snprintf(why, whylen, "scontrol is not on PATH");
    return -1;
  }
  weftx_proc_spec_init(&s);
  s.argv = argv;
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_NULL;
  s.timeout = 10;
  s.grace = 1;
  s.max_output = SCONTROL_OUTPUT_MAX;
  s.stop_fd = stop_fd;
  if (weftx_proc_run(&s, &r, why, whylen) || r.stopped || r.timed_out || !r.output) {
    if (!why[0])
      snprintf(why, whylen, "scontrol %s", r.timed_out ? "gave no answer within 10 s" : "failed");
    free(r.output);
    return -1;
  }
  /* a job Slurm has forgotten is ended; else its JobState= */
  const char *p = strstr(r.output, "JobState=");
  int alive = -1;
  if (p) {
    snprintf(j->state, sizeof(j->state), "%.*s", (int)strcspn(p + 9, " \n"), p + 9);
    alive = !strcmp(j->state, "RUNNING") || !strcmp(j->state, "CONFIGURING");
    /* " NodeList=", not "ReqNodeList=" or "ExcNodeList=" */
    const char *why_end = strstr(r.output, " Reason=");
    if (why_end)
      snprintf(j->reason, sizeof(j->reason), "%.*s", (int)strcspn(why_end + 8, " \n"), why_end + 8);
    const char *l = strstr(r.output, " NodeList=");
    if (l)
      snprintf(j->nodes, sizeof(j->nodes), "%.*s", (int)strcspn(l + 10, " \n"), l + 10);
  } else if (r.status && strstr(r.output, "Invalid job id"))
    alive = 0;
  else
    snprintf(why, whylen, "scontrol exited %d without a JobState", r.status);
  free(r.output);
  return alive;
}
