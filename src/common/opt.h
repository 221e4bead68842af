/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One option table drives a tool's parsing, its --help text and the OPTIONS
 * section of its man page.
 *
 * Each row lists every spelling of an option ("np|n|c"): one-letter names take
 * one dash ("-n"), longer names take one or two ("-np", "--np"), as Open MPI's
 * mpirun does, and "--name=value" is accepted for options with one argument.
 * Parsing stops at "--" or at the first word that is not an option (the
 * program to run). An unknown option is an error naming the closest known one.
 */
#ifndef WT_OPT_H
#define WT_OPT_H

#include <stdio.h>

typedef enum wt_opt_kind {
  WT_OPT_FLAG = 0, /* no argument */
  WT_OPT_ARG,      /* one argument */
  WT_OPT_ARG2,     /* two arguments (--mca KEY VALUE) */
  WT_OPT_OPTARG,   /* an optional argument, only as "--name=value" (--monitor[=SECONDS]);
                        the handler gets NULL without one; argname is written "[=VALUE]" */
} wt_opt_kind;

/* wt_opt.flags */
#define WT_OPT_HIDDEN 0x1 /* parsed, but neither in --help nor in the man page */
#define WT_OPT_PASS 0x2   /* passed through to the engine unchanged */
#define WT_OPT_JOINED                                                                              \
  0x4 /* its one-letter spelling also takes the argument in the
                                same word, as getopt does ("-b1K" for "-b 1K") */

typedef struct wt_opt {
  int id;            /* given back to the handler; 0 ends the table */
  const char *names; /* "np|n|c": every spelling, the first is the one shown */
  wt_opt_kind kind;
  const char *argname; /* "N", "KEY VALUE", "WHAT{none core numa}" (braces: choices for
                           completion only); NULL for flags */
  const char *section; /* heading in --help and the man page */
  const char *help;    /* one sentence */
  unsigned flags;
} wt_opt;

/* Called once per option met, in command-line order. \p spelled is the word
 * as the user typed it: the argv word itself, or without "=value" (then only
 * valid during the call). Returns 0, or non-zero after
 * writing a one-line reason into why (parsing stops). */
typedef int (*wt_opt_cb)(void *ud, const wt_opt *o, const char *spelled, const char *a1,
                         const char *a2, char *why, size_t whylen);

/** \brief Parse argv[1..] against \p tab.
 * \param first set to the index of the first word after the options (argc when none).
 * \return 0, or -1 with a one-line reason in \p why (unknown option with the
 *         closest known one, missing argument, or the handler's reason). */
int wt_opt_parse(const wt_opt *tab, int argc, char **argv, wt_opt_cb cb, void *ud, int *first,
                 char *why, size_t whylen);

/** \brief The row whose spellings include \p name (bare, without dashes), or NULL. */
const wt_opt *wt_opt_find(const wt_opt *tab, const char *name);

/** \brief The closest spelling to \p word (dashes ignored) within a small edit
 * distance, written as the user would type it ("--bind-to"), or NULL. */
const char *wt_opt_suggest(const wt_opt *tab, const char *word, char *buf, size_t len);

/** \brief Write the options part of --help: one line per option under its section. */
void wt_opt_help(FILE *out, const wt_opt *tab);

/** \brief Write the man page OPTIONS entries (roff: .SS per section, .TP per option). */
void wt_opt_man(FILE *out, const wt_opt *tab);

/** \brief Write \p s escaped for roff: backslashes as \e, dashes as \-, no leading '.'. */
void wt_roff(FILE *out, const char *s);

/** \brief Write all spellings of \p o as the user types them ("-np, -n, --np N") into buf. */
int wt_opt_spellings(const wt_opt *o, char *buf, size_t len);

/** \brief Write the table for shell completion (the hidden --help-completion):
 * one line per option that --help shows, "CONTEXT<tab>SPELLINGS<tab>KIND<tab>WORDS",
 * SPELLINGS as typed ("-np -n --np"), KIND what its argument is, read from its
 * argname: none (a flag), file, dir, topology (a file or a name of
 * $(datadir)/weft/topologies), words (WORDS: the lower-case choices of
 * "host|device", and those listed in braces after the name, which --help and the
 * man page leave out: "POLICY{gpu slot core}"; "words,file" when a FILE or PATH
 * is one of them too), value
 * (anything else) or value2 (two arguments). CONTEXT is the caller's ("-"
 * for options before any other word); contrib/completion reads it. */
void wt_opt_completion(FILE *out, const wt_opt *tab, const char *context);

#endif /* WT_OPT_H */
