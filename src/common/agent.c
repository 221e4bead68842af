/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The weftrun <-> weft-rank contract (agent.h): the agent's option table with
 * its writer and parser, the failure line an agent shows, the probe's GCE
 * line, the check's records, and the exit-status table rendered for --help
 * and the man page. The control channel's wire format is ctl.c.
 */
#include "config.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <weftx.h>

#include "agent.h"
#include "help.h"

/* ---- Exit status ---------------------------------------------------------- */

#define ROW(name, code, label, brief, sentence, example)                                           \
  {code, #name, label, brief, sentence, example},
const wt_exit_row wt_exit_rows[] = {WT_EXIT_TABLE(ROW){0, NULL, NULL, NULL, NULL, NULL}};
#undef ROW

void wt_exit_help(FILE *out)
{
  /* "CODE what" items, a line broken between items only */
  int col = fprintf(out, "\nExit status:") - 1;
  for (const wt_exit_row *r = wt_exit_rows; r->name; r++) {
    int n = (int)(strlen(r->label) + 1 + strlen(r->brief) + 1);
    if (col + 1 + n > 78)
      col = fprintf(out, "\n") - 1;
    else
      col += fprintf(out, " ");
    col += fprintf(out, "%s %s%s", r->label, r->brief, r[1].name ? ";" : ".");
  }
  fputs("\nSee weftrun --help exit-status and weftrun(1).\n", out);
}

void wt_exit_topic(FILE *out)
{
  fputs("weftrun's exit status (the contract; weftrun(1) EXIT STATUS says the same):\n\n", out);
  for (const wt_exit_row *r = wt_exit_rows; r->name; r++) {
    fprintf(out, "  %-8s", r->label);
    wt_help_wrap(out, r->sentence, 10, 11, 78);
    if (r->example)
      fprintf(out, "             %s\n", r->example);
  }
}

void wt_exit_man(FILE *out)
{
  for (const wt_exit_row *r = wt_exit_rows; r->name; r++) {
    fputs(".TP\n", out);
    if (r->code < 0) {
      fputs(".I ", out);
      wt_roff(out, r->label);
    } else {
      fputs(".B ", out);
      wt_roff(out, r->label);
    }
    fputc('\n', out);
    wt_roff(out, r->sentence);
    fputc('\n', out);
    if (r->example) {
      fputs(".br\n\\fB", out);
      wt_roff(out, r->example);
      fputs("\\fR\n", out);
    }
  }
}

/* ---- The agent's arguments ----------------------------------------------- */

enum {
  A_LAYOUT = 1,
  A_RANKBY,
  A_OMPI,
  A_SLOTS,
  A_MAPBY,
  A_BINDTO,
  A_OVERSUB,
  A_REPORT,
  A_GPUVIS,
  A_NCCL,
  A_MADDR,
  A_MPORT,
  A_IFNAME,
  A_TOPO,
  A_HOSTXML,
  A_GRACE,
  A_CONTROL,
  A_MONITOR,
  A_PROM,
  A_JOB,
  A_PROBE,
  A_CHECK,
  A_CHECKID,
  A_CHECKDL,
  A_HELP,
  A_GPUS,
  A_OUTFILE,
  A_LINES,
  A_TAG,
  A_STAMP,
};

#define S "weft-rank (internal: started by weftrun)"
const wt_opt wt_agent_options[] = {
  {A_LAYOUT, "layout", WT_OPT_ARG, "C[xN],...[;...]", S,
   "Ranks on each host in weftrun's order: C ranks on each of N hosts (per program).", 0},
  {A_RANKBY, "rank-by", WT_OPT_ARG, "slot|node", S, "How ranks are numbered over hosts.", 0},
  {A_OMPI, "ompi", WT_OPT_ARG, "POLICY", S,
   "Open MPI placed and bound the ranks by POLICY: check that, do not bind.", 0},
  {A_SLOTS, "slots", WT_OPT_ARG, "S[xN],...", S, "With --ompi: every host's slots.", 0},
  {A_MAPBY, "map-by", WT_OPT_ARG, "POLICY", S, "As weftrun --map-by.", 0},
  {A_BINDTO, "bind-to", WT_OPT_ARG, "WHAT", S, "As weftrun --bind-to.", 0},
  {A_OVERSUB, "oversubscribe", WT_OPT_FLAG, NULL, S, "Allow more ranks than slots.", 0},
  {A_REPORT, "report-bindings", WT_OPT_FLAG, NULL, S, "Print this rank's placement.", 0},
  {A_GPUVIS, "gpu-visibility", WT_OPT_ARG, "all|own|none", S, "CUDA_VISIBLE_DEVICES mode.", 0},
  {A_NCCL, "nccl-preset", WT_OPT_ARG, "auto|none|FAMILY", S, "NCCL preset.", 0},
  {A_MADDR, "master-addr", WT_OPT_ARG, "ADDR", S, "MASTER_ADDR.", 0},
  {A_MPORT, "master-port", WT_OPT_ARG, "PORT", S, "MASTER_PORT.", 0},
  {A_IFNAME, "ifname", WT_OPT_ARG, "IF", S, "NCCL_SOCKET_IFNAME.", 0},
  {A_TOPO, "topology", WT_OPT_ARG, "FILE|I=FILE", S,
   "Topology of every host, or of host I of the layout.", 0},
  {A_HOSTXML, "host-xml", WT_OPT_ARG, "FILE", S,
   "weftrun's own host as hwloc XML, used in place of probing when this is that host.", 0},
  {A_GPUS, "gpus", WT_OPT_ARG, "SET[*N];...", S,
   "The GPUs the ranks of each host may have, in the layout's order (\"3-4*3\", \"all\", "
   "\"none\").",
   0},
  {A_OUTFILE, "output-filename", WT_OPT_ARG, "DIR", S,
   "The program's output into DIR/1/rank.R/stdout and stderr (engines without it).", 0},
  {A_LINES, "lines", WT_OPT_FLAG, NULL, S,
   "The program's stdout and stderr in whole lines, as records on the agent's stderr, "
   "which weftrun reads (mpirun's reads cut lines anywhere).",
   0},
  {A_TAG, "tag-output", WT_OPT_FLAG, NULL, S,
   "With --lines: each line starts with [JOB,RANK]<stdout>: or <stderr>:, as mpirun's.", 0},
  {A_STAMP, "timestamp-output", WT_OPT_FLAG, NULL, S,
   "With --lines: each line starts with the time, as mpirun's.", 0},
  {A_GRACE, "preempt-grace", WT_OPT_ARG, "SECONDS", S,
   "After a preemption notice: SECONDS from SIGTERM to SIGKILL.", 0},
  {A_CONTROL, "control", WT_OPT_ARG, "ADDR:PORT", S,
   "weftrun's control channel: connect (with $" WT_CTL_SECRET_ENV ") before starting the "
   "rank, report to it, end the rank when it is lost.",
   0},
  {A_MONITOR, "monitor", WT_OPT_ARG, "MS", S,
   "Send weftrun a sample of what the rank uses every MS milliseconds (weftrun --monitor).", 0},
  {A_PROM, "monitor-prom", WT_OPT_ARG, "DIR", S,
   "With --monitor: keep the rank in DIR/weft-JOB-HOST.prom, Prometheus's text format, "
   "shared with the host's other ranks; the last to end removes it.",
   0},
  {A_JOB, "job", WT_OPT_ARG, "ID", S, "The job's name in the Prometheus labels.", 0},
  {A_PROBE, "probe", WT_OPT_FLAG, NULL, S, "Print this host's topology as hwloc XML and exit.", 0},
  {A_CHECK, "check", WT_OPT_ARG, "full|reach", S,
   "weftrun --check: report this host's facts as records (full), or only answer (reach); "
   "the program after '--' is looked for, not run.",
   0},
  {A_CHECKID, "check-id", WT_OPT_ARG, "ID", S, "The check job's nonce.", 0},
  {A_CHECKDL, "check-deadline", WT_OPT_ARG, "SECONDS", S,
   "Seconds the check has on this host, all included.", 0},
  {A_HELP, "help|h", WT_OPT_FLAG, NULL, S, "This help.", 0},
  {0, NULL, 0, NULL, NULL, NULL, 0},
};
#undef S

void wt_agent_args_init(wt_agent_args *a)
{
  memset(a, 0, sizeof(*a));
  a->preempt_grace = -1;
}

typedef struct writer {
  int (*add)(void *ud, const char *word);
  void *ud;
  int rc;
} writer;

/* "--NAME" of option \p id (its first spelling), then \p value when not NULL. */
static void put(writer *w, int id, const char *value)
{
  char word[80];
  const wt_opt *o = wt_agent_options;
  while (o->id && o->id != id)
    o++;
  if (w->rc || !o->id)
    return;
  snprintf(word, sizeof(word), "--%.*s", (int)strcspn(o->names, "|"), o->names);
  if (!(w->rc = w->add(w->ud, word)) && value)
    w->rc = w->add(w->ud, value);
}

static void put_long(writer *w, int id, long v)
{
  char num[24];
  snprintf(num, sizeof(num), "%ld", v);
  put(w, id, num);
}

int wt_agent_args_write(const wt_agent_args *a, int (*add)(void *ud, const char *word), void *ud)
{
  writer w = {add, ud, 0};
  if (a->probe) {
    put(&w, A_PROBE, NULL);
    return w.rc;
  }
  if (a->check) {
    put(&w, A_CHECK, a->check);
    if (a->check_id)
      put(&w, A_CHECKID, a->check_id);
    if (a->check_deadline > 0)
      put_long(&w, A_CHECKDL, a->check_deadline);
  }
  if (a->layout)
    put(&w, A_LAYOUT, a->layout);
  if (a->by_node)
    put(&w, A_RANKBY, "node");
  if (a->ompi)
    put(&w, A_OMPI, a->ompi);
  if (a->slots)
    put(&w, A_SLOTS, a->slots);
  if (a->map_by)
    put(&w, A_MAPBY, a->map_by);
  if (a->bind_to)
    put(&w, A_BINDTO, a->bind_to);
  if (a->oversubscribe)
    put(&w, A_OVERSUB, NULL);
  if (a->gpu_visibility)
    put(&w, A_GPUVIS, a->gpu_visibility);
  if (a->nccl_preset)
    put(&w, A_NCCL, a->nccl_preset);
  if (a->preempt_grace >= 0)
    put_long(&w, A_GRACE, a->preempt_grace);
  if (a->report_bindings)
    put(&w, A_REPORT, NULL);
  if (a->master_addr) {
    put(&w, A_MADDR, a->master_addr);
    put_long(&w, A_MPORT, a->master_port);
  }
  if (a->ifname)
    put(&w, A_IFNAME, a->ifname);
  if (a->topology)
    put(&w, A_TOPO, a->topology);
  for (int i = 0; i < a->nhost_topology; i++)
    put(&w, A_TOPO, a->host_topology[i]);
  if (a->host_xml)
    put(&w, A_HOSTXML, a->host_xml);
  if (a->control)
    put(&w, A_CONTROL, a->control);
  if (a->monitor_ms > 0)
    put_long(&w, A_MONITOR, a->monitor_ms);
  if (a->monitor_prom)
    put(&w, A_PROM, a->monitor_prom);
  if (a->job)
    put(&w, A_JOB, a->job);
  if (a->gpus)
    put(&w, A_GPUS, a->gpus);
  if (a->output_filename)
    put(&w, A_OUTFILE, a->output_filename);
  if (a->lines)
    put(&w, A_LINES, NULL);
  if (a->tag_output)
    put(&w, A_TAG, NULL);
  if (a->timestamp_output)
    put(&w, A_STAMP, NULL);
  return w.rc;
}

static int handle(void *ud, const wt_opt *opt, const char *sp, const char *a1, const char *a2,
                  char *why, size_t len)
{
  wt_agent_args *a = ud;
  (void)a2;
  switch (opt->id) {
  case A_LAYOUT: a->layout = a1; return 0;
  case A_RANKBY:
    if (strcmp(a1, "slot") && strcmp(a1, "node")) {
      snprintf(why, len, "%s '%s': expected slot or node", sp, a1);
      return -1;
    }
    a->by_node = !strcmp(a1, "node");
    return 0;
  case A_OMPI: a->ompi = a1; return 0;
  case A_SLOTS: a->slots = a1; return 0;
  case A_MAPBY: a->map_by = a1; return 0;
  case A_BINDTO: a->bind_to = a1; return 0;
  case A_OVERSUB: a->oversubscribe = 1; return 0;
  case A_REPORT: a->report_bindings = 1; return 0;
  case A_GPUVIS: a->gpu_visibility = a1; return 0;
  case A_NCCL: a->nccl_preset = a1; return 0;
  case A_MADDR: a->master_addr = a1; return 0;
  case A_MPORT: return weftx_parse_long(a1, 1, 65535, &a->master_port) ? -1 : 0;
  case A_IFNAME: a->ifname = a1; return 0;
  case A_TOPO:
    if (!strchr(a1, '=')) {
      a->topology = a1;
      return 0;
    }
    if (a->nhost_topology >= WT_AGENT_MAX_TOPOLOGY) {
      snprintf(why, len, "%s given more than %d times", sp, WT_AGENT_MAX_TOPOLOGY);
      return -1;
    }
    a->host_topology[a->nhost_topology++] = a1;
    return 0;
  case A_HOSTXML: a->host_xml = a1; return 0;
  case A_CONTROL: a->control = a1; return 0;
  case A_MONITOR: return weftx_parse_long(a1, 100, 3600000, &a->monitor_ms) ? -1 : 0;
  case A_PROM: a->monitor_prom = a1; return 0;
  case A_JOB: a->job = a1; return 0;
  case A_GPUS: a->gpus = a1; return 0;
  case A_OUTFILE: a->output_filename = a1; return 0;
  case A_LINES: a->lines = 1; return 0;
  case A_TAG: a->tag_output = 1; return 0;
  case A_STAMP: a->timestamp_output = 1; return 0;
  case A_GRACE: return weftx_parse_long(a1, 0, 3600, &a->preempt_grace) ? -1 : 0;
  case A_PROBE: a->probe = 1; return 0;
  case A_CHECK:
    if (strcmp(a1, "full") && strcmp(a1, "reach")) {
      snprintf(why, len, "%s '%s': expected full or reach", sp, a1);
      return -1;
    }
    a->check = a1;
    return 0;
  case A_CHECKID: a->check_id = a1; return 0;
  case A_CHECKDL: return weftx_parse_long(a1, 1, 3600, &a->check_deadline) ? -1 : 0;
  case A_HELP: a->help = 1; return 0;
  }
  return -1;
}

int wt_agent_args_parse(wt_agent_args *a, int argc, char **argv, int *first, char *why,
                        size_t whylen)
{
  return wt_opt_parse(wt_agent_options, argc, argv, handle, a, first, why, whylen);
}

const char *wt_agent_topology_for(const wt_agent_args *a, int index)
{
  for (int i = 0; i < a->nhost_topology; i++) {
    const char *kv = a->host_topology[i];
    char *end;
    long idx = strtol(kv, &end, 10);
    if (end != kv && *end == '=' && idx == index)
      return end + 1;
  }
  return a->topology;
}

/* ---- The failure line (display only) -------------------------------------- */

#define FAIL_PREFIX "weft-rank: rank "

void wt_agent_fail_print(FILE *out, const wt_agent_who *who, const char *why, int code, int sig)
{
  fprintf(out, FAIL_PREFIX "%d host %s gpu %s: %s%s", who->rank, who->host, who->gpu,
          why ? why : "", why ? "; " : "");
  if (sig)
    fprintf(out, "killed by signal %d (%s)\n", sig, strsignal(sig));
  else
    fprintf(out, "exited with status %d\n", code);
  fflush(out);
}

/* ---- The probe ------------------------------------------------------------ */

void wt_agent_gce_print(FILE *out, const char *machine_type, const char *physical_host)
{
  fprintf(out, "\n" WT_AGENT_GCE_TAG " %s %s\n", machine_type,
          physical_host && physical_host[0] ? physical_host : "-");
}

size_t wt_agent_gce_parse(const char *buf, size_t len, char *mt, size_t mtlen, char *ph,
                          size_t phlen)
{
  static const char tag[] = "\n" WT_AGENT_GCE_TAG " ";
  const char *t = NULL;
  for (size_t i = 0; i + sizeof(tag) - 1 <= len; i++)
    if (buf[i] == '\n' && !memcmp(buf + i, tag, sizeof(tag) - 1)) {
      t = buf + i;
      break;
    }
  if (!t)
    return len;
  const char *f = t + sizeof(tag) - 1, *end = buf + len;
  size_t n1 = strcspn(f, " \n");
  if (f + n1 < end && f[n1] == ' ' && n1 < mtlen) {
    const char *g = f + n1 + 1;
    size_t n2 = strcspn(g, " \n");
    if (g + n2 <= end && n2 && n2 < phlen) {
      snprintf(mt, mtlen, "%.*s", (int)n1, f);
      snprintf(ph, phlen, "%.*s", (int)(n2 == 1 && *g == '-' ? 0 : n2), g);
    }
  }
  return (size_t)(t - buf) + 1;
}

/* ---- The check's records -------------------------------------------------- */

void wt_agent_check_print(FILE *out, int host, const char *key, const char *fmt, ...)
{
  char value[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(value, sizeof(value), fmt, ap);
  va_end(ap);
  for (char *c = value; *c; c++)
    if (*c == '\n' || *c == '\r')
      *c = ' ';
  fprintf(out, WT_AGENT_CHECK_TAG " %d %s %s\n", host, key, value);
}

int wt_agent_check_parse(const char *line, int *host, char *key, size_t keylen, const char **value,
                         size_t *vlen)
{
  static const char tag[] = WT_AGENT_CHECK_TAG " ";
  const char *p = strstr(line, tag), *k, *v;
  char *end;
  if (!p || keylen < 2)
    return 0;
  p += sizeof(tag) - 1;
  long h = strtol(p, &end, 10);
  if (end == p || *end != ' ' || h < 0 || h >= WT_AGENT_MAX_HOSTS)
    return 0;
  k = end + 1;
  size_t kn = strcspn(k, " \r\n");
  if (!kn || kn >= keylen)
    return 0;
  memcpy(key, k, kn);
  key[kn] = '\0';
  v = k + kn + (k[kn] == ' ');
  *host = (int)h;
  *value = v;
  *vlen = strcspn(v, "\r\n");
  return 1;
}
