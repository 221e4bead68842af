/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-topo's option table: it drives parsing, --help, the OPTIONS section
 * of weft-topo(1) (the hidden --man-options writes it) and shell completion
 * (the hidden --help-completion).
 */
#include "weft-topo.h"

#include <stdio.h>
#include <string.h>

#include "opt.h"

enum {
  O_TOPOLOGY = 1,
  O_LIST,
  O_HOST,
  O_NP,
  O_MAP_BY,
  O_BIND_TO,
  O_PE,
  O_OVERSUB,
  O_HWT,
  O_RESERVED,
  O_PRESET,
  O_JSON,
  O_HELP,
  O_VERSION,
  O_MAN,
  O_COMPLETION,
};

static const wt_opt options[] = {
  {O_TOPOLOGY, "topology|input|i", WT_OPT_ARG, "FILE|NAME", "Topology",
   "read this hwloc XML file, or the topology NAME of --list-topologies, not this machine "
   "(default: $WEFT_TOPOLOGY)",
   0},
  {O_LIST, "list-topologies", WT_OPT_FLAG, NULL, "Topology",
   "list the topology names --topology takes, with their descriptions, and exit", 0},
  {O_HOST, "host", WT_OPT_ARG, "NAME", "Topology",
   "call the host NAME (default: the topology's host name)", 0},
  {O_NP, "np|n", WT_OPT_ARG, "N", "Placement", "place N ranks and print where each goes", 0},
  {O_MAP_BY, "map-by", WT_OPT_ARG,
   "POLICY{gpu slot hwthread core l1cache l2cache l3cache socket numa board node}", "Placement",
   "gpu or ppr:N:gpu (weft's), or Open MPI's slot, hwthread, core, l1cache, l2cache, l3cache, "
   "socket, numa, board, node, ppr:N:OBJ, with :PE=N, :OVERSUBSCRIBE, :NOOVERSUBSCRIBE",
   0},
  {O_BIND_TO, "bind-to", WT_OPT_ARG,
   "WHAT{gpu-local none hwthread core l1cache l2cache l3cache socket numa board}", "Placement",
   "gpu-local (weft's), or Open MPI's none, hwthread, core, l1cache, l2cache, l3cache, socket, "
   "numa, board",
   0},
  {O_PE, "pe|cpus-per-rank", WT_OPT_ARG, "N", "Placement",
   "give each rank N cores (as :PE=N; Open MPI's --cpus-per-proc N for a CPU layout)", 0},
  {O_OVERSUB, "oversubscribe", WT_OPT_FLAG, NULL, "Placement",
   "allow more ranks than GPUs or cores (ranks share GPUs; Open MPI leaves its ranks unbound)", 0},
  {O_HWT, "use-hwthread-cpus", WT_OPT_FLAG, NULL, "Placement", "count hardware threads as cores",
   0},
  {O_RESERVED, "reserved-cpus", WT_OPT_ARG, "LIST", "Placement",
   "never give processors LIST (\"8-21,112-125\") to ranks next to a GPU (instead of the preset's)",
   0},
  {O_PRESET, "nccl-preset", WT_OPT_ARG,
   "auto|none|FAMILY{n1 a2 g2 a3-highgpu-small a3-highgpu-8g a3-edgegpu-8g a3-megagpu-8g "
   "a3-ultragpu-8g a4-highgpu-8g}",
   "Placement",
   "keep ranks off the cores this NCCL preset reserves, as weftrun does (auto: the preset of the "
   "machine type the topology models, which weftrun applies to jobs of more than one VM)",
   0},
  {O_JSON, "json", WT_OPT_FLAG, NULL, "Output",
   "print the placement as plan JSON (one rank per slot without -np)", 0},
  {O_HELP, "help|h", WT_OPT_FLAG, NULL, "Output", "print this help and exit", 0},
  {O_VERSION, "version|V", WT_OPT_FLAG, NULL, "Output", "print the version and exit", 0},
  {O_MAN, "man-options", WT_OPT_FLAG, NULL, "Output", "write the man page's OPTIONS",
   WT_OPT_HIDDEN},
  {O_COMPLETION, "help-completion", WT_OPT_FLAG, NULL, "Output",
   "write the options for shell completion", WT_OPT_HIDDEN},
  {0, NULL, WT_OPT_FLAG, NULL, NULL, NULL, 0},
};

static int count(const char *spelled, const char *arg, long *out, char *why, size_t whylen)
{
  int rc = weftx_parse_long(arg, 1, 65536, out);

  if (rc != 0)
    snprintf(why, whylen, "%s needs a whole number from 1 to 65536, not '%s'", spelled, arg);
  return rc;
}

static int on_option(void *ud, const wt_opt *opt, const char *spelled, const char *a1,
                     const char *a2, char *why, size_t whylen)
{
  struct topo_opts *o = ud;

  (void)a2;
  switch (opt->id) {
  case O_TOPOLOGY: o->topology = a1; break;
  case O_LIST: o->list = 1; break;
  case O_HOST: o->host = a1; break;
  case O_NP: return count(spelled, a1, &o->np, why, whylen);
  case O_MAP_BY: o->map_by = a1; break;
  case O_BIND_TO: o->bind_to = a1; break;
  case O_PE: return count(spelled, a1, &o->pe, why, whylen);
  case O_OVERSUB: o->oversubscribe = 1; break;
  case O_HWT: o->hwthreads = 1; break;
  case O_RESERVED: o->reserved = a1; break;
  case O_PRESET: o->preset = a1; break;
  case O_JSON: o->json = 1; break;
  case O_HELP: o->help = 1; break;
  case O_VERSION: o->version = 1; break;
  case O_MAN: o->man = 1; break;
  case O_COMPLETION: o->completion = 1; break;
  default: break;
  }
  return 0;
}

int topo_options(int argc, char **argv, struct topo_opts *o)
{
  char why[256];
  int first = argc;

  memset(o, 0, sizeof(*o));
  if (wt_opt_parse(options, argc, argv, on_option, o, &first, why, sizeof(why)) != 0) {
    fprintf(stderr, "weft-topo: %s\n", why);
    return TOPO_EXIT_USAGE;
  }
  if (first < argc) {
    fprintf(stderr,
            "weft-topo: unexpected argument '%s' (weft-topo runs no program; "
            "--help lists the options)\n",
            argv[first]);
    return TOPO_EXIT_USAGE;
  }
  return 0;
}

void topo_usage(FILE *out, const char *prog)
{
  fprintf(out,
          "Usage: %s [--topology FILE|NAME] [-np N [--map-by POLICY] [--bind-to WHAT]] [--json]\n"
          "       %s --list-topologies\n"
          "Show the GPUs, NICs and NUMA nodes of a machine, how near they are to each other,\n"
          "and where -np N ranks would be placed.\n",
          prog, prog);
  wt_opt_help(out, options);
}

void topo_man_options(FILE *out) { wt_opt_man(out, options); }

void topo_completion(FILE *out) { wt_opt_completion(out, options, "-"); }
