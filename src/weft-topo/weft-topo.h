/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft-topo: what a machine looks like (GPUs, NICs, NUMA nodes and how near
 * they are to each other) and how ranks would be placed on it. The options
 * (options.c) fill one struct; the report (report.c) prints it; list.c lists
 * the topologies known by name; preset.c applies an NCCL preset's reserved cores.
 */
#ifndef WEFT_TOPO_TOOL_H
#define WEFT_TOPO_TOOL_H

#include <stdio.h>

#include <weftx.h>

/* Exit status, as weft-topo(1) documents it. */
enum {
  TOPO_EXIT_OK = 0,
  TOPO_EXIT_NOFIT = 1,    /* the placement request cannot be met */
  TOPO_EXIT_USAGE = 2,    /* bad option or argument */
  TOPO_EXIT_TOPOLOGY = 3, /* the topology could not be loaded */
  TOPO_EXIT_INTERNAL = 4, /* out of memory, output error */
};

struct topo_opts {
  const char *topology; /* --topology FILE, or NULL */
  const char *host;     /* --host NAME, or NULL for the topology's host name */
  const char *map_by;
  const char *bind_to;
  const char *reserved; /* --reserved-cpus, or NULL */
  const char *preset;   /* --nccl-preset, or NULL for auto */
  long np;              /* 0: no placement */
  long pe;              /* 0: not given */
  int oversubscribe;
  int hwthreads;
  int json;
  int list;               /* --list-topologies */
  int help, version, man; /* --help, --version, the hidden --man-options */
  int completion;         /* the hidden --help-completion */
};

/* Parse argv into \p o. Returns 0, or TOPO_EXIT_USAGE after printing one line. */
int topo_options(int argc, char **argv, struct topo_opts *o);
void topo_usage(FILE *out, const char *prog);
void topo_man_options(FILE *out);
void topo_completion(FILE *out);

/* --list-topologies: the names of weftx_topo_dir() with their descriptions; an exit status. */
int topo_list(FILE *out);
/* The summary, the affinity matrix and legend, and the warnings. */
int topo_report(FILE *out, const weftx_topo *t, const char *host);
/* The NCCL preset weft-topo applies (preset.c): its reserved cores keep ranks off them. */
struct topo_preset {
  weftx_preset *preset; /* NULL: none */
  const char *reserved; /* the preset's reserve-cpus, NULL when none */
  int automatic;        /* chosen by auto from the machine type */
};
/* Choose the preset for \p o's --nccl-preset; 0 or an exit status after one line. */
int topo_preset(const weftx_topo *t, const struct topo_opts *o, struct topo_preset *p);
/* One line saying which cores the preset keeps ranks off and when weftrun does the same. */
void topo_preset_line(FILE *out, const struct topo_preset *p, const char *prefix);
void topo_preset_clear(struct topo_preset *p);

/* Place \p np ranks and print the table (or the plan JSON); returns an exit status. */
int topo_place(FILE *out, const weftx_topo *t, const char *host, const struct topo_opts *o);

#endif /* WEFT_TOPO_TOOL_H */
