/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --check's result as people read it (a row per host, a column per check,
 * each cell OK / WARN / FAIL with its value, then one line per problem and
 * the verdict; every line but the table's starts with '#' or a status word)
 * and as programs do (--json: the cells, every fact each agent reported, and
 * the problems).
 */
#include "config.h"

#include <string.h>

#include "check.h"

static void cell_text(const wr_check_cell *c, char *buf, size_t len)
{
  if (c->status == WR_CHECK_NONE)
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%s %s", wr_check_status_name(c->status), c->value);
}

static void header(const wr_check_report *r, FILE *out)
{
  const wr_check_input *in = r->in;
  fprintf(out, "# weftrun --check: %d host%s through %s", in->nhosts, in->nhosts == 1 ? "" : "s",
          in->engine);
  if (in->ifname && in->ifname[0])
    fprintf(out, ", interface %s", in->ifname);
  if (in->master >= 0)
    fprintf(out, ", master %s port %d", in->hosts[in->master].name, in->master_port);
  if (in->nhosts > 1)
    fprintf(out, "; pairs tested: %s", r->pair_rule);
  fputc('\n', out);
}

void wr_check_print(const wr_check_report *r, FILE *out)
{
  const wr_check_input *in = r->in;
  const wr_check_result *res = r->res;
  int w[WR_CHECK_NCOLS + 1];
  char buf[80];
  header(r, out);
  w[0] = 4;
  for (int h = 0; h < in->nhosts; h++)
    if ((int)strlen(in->hosts[h].name) > w[0])
      w[0] = (int)strlen(in->hosts[h].name);
  for (int c = 0; c < WR_CHECK_NCOLS; c++) {
    w[c + 1] = (int)strlen(wr_check_col_name(c));
    for (int h = 0; h < in->nhosts; h++) {
      cell_text(wr_check_cell_at(res, h, c), buf, sizeof(buf));
      if ((int)strlen(buf) > w[c + 1])
        w[c + 1] = (int)strlen(buf);
    }
  }
  fprintf(out, "%-*s", w[0], "HOST");
  for (int c = 0; c < WR_CHECK_NCOLS; c++) {
    char up[32];
    snprintf(up, sizeof(up), "%s", wr_check_col_name(c));
    for (char *p = up; *p; p++)
      *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    fprintf(out, "  %-*s", c == WR_CHECK_NCOLS - 1 ? 0 : w[c + 1], up);
  }
  fputc('\n', out);
  for (int h = 0; h < in->nhosts; h++) {
    fprintf(out, "%-*s", w[0], in->hosts[h].name);
    for (int c = 0; c < WR_CHECK_NCOLS; c++) {
      cell_text(wr_check_cell_at(res, h, c), buf, sizeof(buf));
      fprintf(out, "  %-*s", c == WR_CHECK_NCOLS - 1 ? 0 : w[c + 1], buf);
    }
    fputc('\n', out);
  }
  int nfail = 0, nwarn = 0;
  for (int i = 0; i < res->nproblems; i++)
    res->problems[i].status == WR_CHECK_FAIL ? nfail++ : nwarn++;
  if (res->nproblems)
    fprintf(out, "# %d problem%s (%d FAIL, %d WARN), each with what to change:\n", res->nproblems,
            res->nproblems == 1 ? "" : "s", nfail, nwarn);
  for (int i = 0; i < res->nproblems; i++) {
    const wr_check_problem *p = &res->problems[i];
    fprintf(out, "%-4s [%s] %s\n", wr_check_status_name(p->status), wr_check_col_name(p->col),
            p->text);
  }
  fprintf(out, "# check: %s (exit %d) in %.1f s\n",
          res->worst == WR_CHECK_OK ? "all OK" : wr_check_status_name(res->worst), r->exit_code,
          r->seconds);
}

void wr_check_print_json(const wr_check_report *r, FILE *out)
{
  const wr_check_input *in = r->in;
  const wr_check_result *res = r->res;
  fprintf(out, "{ \"version\": 1, \"status\": ");
  weftx_json_string(out, wr_check_status_name(res->worst));
  fprintf(out, ", \"exit\": %d, \"seconds\": %.3f,\n  \"engine\": ", r->exit_code, r->seconds);
  weftx_json_string(out, in->engine);
  fprintf(out, ", \"weft\": ");
  weftx_json_string(out, in->version);
  fprintf(out, ", \"interface\": ");
  if (in->ifname && in->ifname[0])
    weftx_json_string(out, in->ifname);
  else
    fputs("null", out);
  fprintf(out, ", \"master\": ");
  if (in->master >= 0) {
    fprintf(out, "{ \"host\": ");
    weftx_json_string(out, in->hosts[in->master].name);
    fprintf(out, ", \"port\": %d }", in->master_port);
  } else {
    fputs("null", out);
  }
  fprintf(out, ", \"pairs\": ");
  weftx_json_string(out, r->pair_rule);
  fprintf(out, ",\n  \"hosts\": [");
  for (int h = 0; h < in->nhosts; h++) {
    const wr_check_host *w = &in->hosts[h];
    fprintf(out, "%s\n    { \"name\": ", h ? "," : "");
    weftx_json_string(out, w->name);
    fprintf(out, ", \"answered\": %s, \"complete\": %s", w->answered ? "true" : "false",
            w->complete ? "true" : "false");
    if (w->start_s >= 0)
      fprintf(out, ", \"start_s\": %.3f", w->start_s);
    if (w->planned >= 0)
      fprintf(out, ", \"planned_ranks\": %d, \"planned_gpus\": %d", w->planned, w->planned_gpus);
    if (w->engine_why) {
      fprintf(out, ", \"engine\": ");
      weftx_json_string(out, w->engine_why);
    }
    fprintf(out, ",\n      \"checks\": {");
    for (int c = 0; c < WR_CHECK_NCOLS; c++) {
      const wr_check_cell *cl = wr_check_cell_at(res, h, c);
      fprintf(out, "%s \"%s\": { \"status\": ", c ? "," : "", wr_check_col_name(c));
      weftx_json_string(out, wr_check_status_name(cl->status));
      fprintf(out, ", \"value\": ");
      weftx_json_string(out, cl->status == WR_CHECK_NONE ? NULL : cl->value);
      fputs(" }", out);
    }
    fprintf(out, " },\n      \"facts\": [");
    for (int f = 0; f < w->nfacts; f++) {
      fputs(f ? ", [" : "[", out);
      weftx_json_string(out, w->facts[f].key);
      fputs(", ", out);
      weftx_json_string(out, w->facts[f].value);
      fputs("]", out);
    }
    fputs("] }", out);
  }
  fprintf(out, " ],\n  \"problems\": [");
  for (int i = 0; i < res->nproblems; i++) {
    const wr_check_problem *p = &res->problems[i];
    fprintf(out, "%s\n    { \"status\": ", i ? "," : "");
    weftx_json_string(out, wr_check_status_name(p->status));
    fprintf(out, ", \"check\": \"%s\", \"host\": ", wr_check_col_name(p->col));
    if (p->host >= 0)
      weftx_json_string(out, in->hosts[p->host].name);
    else
      fputs("null", out);
    fprintf(out, ", \"text\": ");
    weftx_json_string(out, p->text);
    fputs(" }", out);
  }
  fprintf(out, " ] }\n");
}
