/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One child job of weft-bench scale: the launcher (weftrun or mpirun) runs
 * weft-bench in its own process group, its stdout is copied to a file and its
 * table rows are parsed as they come (a repeat adds its times to the points
 * of the first run), its stderr goes to a file, and the whole group is ended
 * (SIGTERM, then SIGKILL) when the deadline passes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weftx/proc.h>

#include "driver.h"
#include "scale.h"

static double number(const char *s)
{
  char *end;
  double v = strtod(s, &end);

  return end == s ? -1 : v;
}

/* The larger of two #wrong counts, "N/A" (-1) below any count. */
static long long worse(long long a, const char *w)
{
  long long b = strcmp(w, "N/A") ? (long long)number(w) : -1;

  return b > a ? b : a;
}

/* A table row in nccl-tests' layout: size count type redop root, then time
 * algbw busbw #wrong out of place and in place [, the baseline]. The time is
 * the out-of-place one, or the in-place one where there is none (N/A). The
 * header line "#  memory: device ..." says where the buffers were. */
static void parse_row(const char *line, struct scale_job *job)
{
  char t[2][64], w[2][64];
  size_t bytes;
  double time;
  int i;

  if (!strncmp(line, "#  memory: device ", 18))
    job->device = 1;
  if (!strncmp(line, "# sharing: ", 11))
    job->shared = 1;
  if (line[0] == '#')
    return;
  if (sscanf(line, "%zu %*s %*s %*s %*s %63s %*s %*s %63s %63s %*s %*s %63s", &bytes, t[0], w[0],
             t[1], w[1]) != 5)
    return;
  time = number(t[0]) >= 0 ? number(t[0]) : number(t[1]);
  i = job->row++;
  if (i == job->npts && i < BENCH_MAX_SIZES) {
    memset(&job->pts[i], 0, sizeof(job->pts[i]));
    job->pts[i].bytes = bytes;
    job->pts[i].wrong = -1;
    job->npts++;
  }
  if (i >= job->npts || job->pts[i].bytes != bytes)
    return;
  job->pts[i].wrong = worse(worse(job->pts[i].wrong, w[0]), w[1]);
  if (time >= 0 && job->pts[i].nrep < SCALE_MAX_REPEAT)
    job->pts[i].times[job->pts[i].nrep++] = time;
}

struct run_ctx {
  FILE *out;
  struct scale_job *job;
};

/* The job's stdout as it comes (whole lines, one or more): copied to its file,
 * each line parsed when it is a table row. */
static void on_output(void *arg, int stream, const char *data, size_t len)
{
  struct run_ctx *c = arg;

  (void)stream;
  fwrite(data, 1, len, c->out);
  while (len) {
    const char *nl = memchr(data, '\n', len);
    size_t n = nl ? (size_t)(nl - data) : len;
    char line[4096];
    size_t k = n < sizeof(line) - 1 ? n : sizeof(line) - 1;

    memcpy(line, data, k);
    line[k] = '\0';
    parse_row(line, c->job);
    n += nl ? 1 : 0;
    data += n;
    len -= n;
  }
}

int scale_run_job(char *const *argv, const char *out_path, const char *err_path, int timeout_s,
                  struct scale_job *job)
{
  weftx_proc_spec spec;
  weftx_proc_result r;
  struct run_ctx c = {NULL, job};
  char why[256];
  int err, rc;

  if (!(c.out = fopen(out_path, "w")))
    return -1;
  job->row = 0;
  err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) {
    fclose(c.out);
    return -1;
  }
  /* The whole job (the launcher and what it starts) is one process group,
   * ended with SIGTERM at the deadline and SIGKILL 3 s later. */
  weftx_proc_spec_init(&spec);
  spec.argv = argv;
  spec.in = WEFTX_PROC_NULL;
  spec.out = WEFTX_PROC_PIPE;
  spec.err = WEFTX_PROC_FD;
  spec.err_fd = err;
  spec.timeout = timeout_s;
  spec.stop_group = 1;
  spec.grace = 3;
  spec.on_output = on_output;
  spec.arg = &c;
  rc = weftx_proc_run(&spec, &r, why, sizeof(why));
  close(err);
  fclose(c.out);
  free(r.output);
  if (rc)
    return -1;
  if (job->runs++ == 0 || (job->status == 0 && r.status != 0))
    job->status = r.status;
  job->seconds += r.seconds;
  return 0;
}
