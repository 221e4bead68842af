/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The option-table engine: parse mpirun-style command lines (single-dash long
 * options, "--name=value", "--"), suggest the closest option for a typo, and
 * render the table as --help text or man page entries.
 */
#include "config.h"

#include <string.h>

#include <weftx.h>

#include "opt.h"

#define NAME_MAX_LEN 64

/* Copy the i-th spelling of o->names into buf; 0 when there is no i-th. */
static int spelling(const wt_opt *o, int i, char *buf, size_t len)
{
  const char *p = o->names;
  while (i-- > 0) {
    p = strchr(p, '|');
    if (!p)
      return 0;
    p++;
  }
  size_t n = strcspn(p, "|");
  if (n == 0 || n >= len)
    return 0;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return 1;
}

static const char *dashes(const char *name) { return name[1] ? "--" : "-"; }

const wt_opt *wt_opt_find(const wt_opt *tab, const char *name)
{
  char s[NAME_MAX_LEN];
  for (const wt_opt *o = tab; o->id; o++)
    for (int i = 0; spelling(o, i, s, sizeof(s)); i++)
      if (!strcmp(s, name))
        return o;
  return NULL;
}

/* Do \p a and \p b mean the opposite (one is the other with "no"/"no-"/"not-" in
 * front, or "enable"/"disable")? A suggestion must never turn one into the other. */
static int opposite(const char *a, const char *b)
{
  static const char *const neg[] = {"no-", "not-", "no", NULL};
  for (int k = 0; neg[k]; k++) {
    size_t n = strlen(neg[k]);
    if ((!strncmp(a, neg[k], n) && !strcmp(a + n, b)) ||
        (!strncmp(b, neg[k], n) && !strcmp(b + n, a)))
      return 1;
  }
  if ((!strncmp(a, "enable", 6) && !strncmp(b, "disable", 7) && !strcmp(a + 6, b + 7)) ||
      (!strncmp(a, "disable", 7) && !strncmp(b, "enable", 6) && !strcmp(a + 7, b + 6)))
    return 1;
  return 0;
}

const char *wt_opt_suggest(const wt_opt *tab, const char *word, char *buf, size_t len)
{
  char s[NAME_MAX_LEN], best[NAME_MAX_LEN] = "";
  int bestd = 1 << 20;
  while (*word == '-')
    word++;
  char bare[NAME_MAX_LEN];
  size_t n = strcspn(word, "=");
  if (n >= sizeof(bare))
    n = sizeof(bare) - 1;
  memcpy(bare, word, n);
  bare[n] = '\0';
  for (const wt_opt *o = tab; o->id; o++) {
    if (o->flags & WT_OPT_HIDDEN)
      continue;
    for (int i = 0; spelling(o, i, s, sizeof(s)); i++) {
      if (opposite(bare, s))
        continue;
      int d = weftx_edit_distance(bare, s, 0);
      /* a prefix of a long name is a likely abbreviation */
      if (n >= 3 && !strncmp(s, bare, n) && d > 1)
        d = 1;
      if (d < bestd) {
        bestd = d;
        memcpy(best, s, strlen(s) + 1);
      }
    }
  }
  int allowed = n <= 2 ? 1 : n <= 5 ? 2 : 3;
  if (!best[0] || bestd > allowed)
    return NULL;
  if ((size_t)snprintf(buf, len, "%s%s", dashes(best), best) >= len)
    return NULL;
  return buf;
}

static int unknown(const wt_opt *tab, const char *word, char *why, size_t whylen)
{
  char sug[NAME_MAX_LEN + 2];
  if (wt_opt_suggest(tab, word, sug, sizeof(sug)))
    snprintf(why, whylen, "unknown option '%s'; did you mean '%s'? (--help lists them all)", word,
             sug);
  else
    snprintf(why, whylen,
             "unknown option '%s' (--help lists them all; put '--' before a "
             "program whose name starts with '-')",
             word);
  return -1;
}

/* The argument's name as --help and the man page show it: argname up to a
 * "{...}" that lists the completion's choices ("POLICY{gpu slot core}"). */
static int metavar_len(const wt_opt *o) { return o->argname ? (int)strcspn(o->argname, "{") : 0; }

int wt_opt_parse(const wt_opt *tab, int argc, char **argv, wt_opt_cb cb, void *ud, int *first,
                 char *why, size_t whylen)
{
  int i = 1;
  why[0] = '\0';
  while (i < argc) {
    const char *w = argv[i];
    if (!strcmp(w, "--")) {
      i++;
      break;
    }
    if (w[0] != '-' || w[1] == '\0')
      break;
    int ndash = w[1] == '-' ? 2 : 1;
    const char *name = w + ndash;
    char bare[NAME_MAX_LEN];
    const char *eq = ndash == 2 ? strchr(name, '=') : NULL;
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if (n == 0 || n >= sizeof(bare))
      return unknown(tab, w, why, whylen);
    memcpy(bare, name, n);
    bare[n] = '\0';
    const wt_opt *o = wt_opt_find(tab, bare);
    const char *joined = NULL;
    if (!o && ndash == 1 && n > 1) {
      char letter[2] = {bare[0], '\0'};
      const wt_opt *j = wt_opt_find(tab, letter);
      if (j && j->kind == WT_OPT_ARG && (j->flags & WT_OPT_JOINED)) {
        o = j;
        joined = name + 1;
        bare[1] = '\0';
      }
    }
    /* one-letter options take one dash, long ones one or two */
    if (!o || (n == 1 && ndash == 2))
      return unknown(tab, w, why, whylen);
    char buf[NAME_MAX_LEN + 2];
    snprintf(buf, sizeof(buf), "%.*s%s", ndash, "--", bare);
    const char *spelled = eq || joined ? buf : w;
    const char *a1 = NULL, *a2 = NULL;
    int need = o->kind == WT_OPT_ARG ? 1 : o->kind == WT_OPT_ARG2 ? 2 : 0;
    if (eq && (o->flags & WT_OPT_PASS)) {
      snprintf(why, whylen,
               "option '%s' is passed to mpirun: give its argument as a separate "
               "word ('%s %s')",
               buf, buf, eq + 1);
      return -1;
    }
    if (eq && need != 1 && o->kind != WT_OPT_OPTARG) {
      snprintf(why, whylen, "option '%s' takes %s, not '=%s'", spelled,
               need ? "two arguments" : "no argument", eq + 1);
      return -1;
    }
    i++;
    if (eq) {
      a1 = eq + 1;
    } else if (joined) {
      a1 = joined;
    } else if (need) {
      if (i + need > argc) {
        snprintf(why, whylen, "option '%s' needs %s (%.*s)", spelled,
                 need == 1 ? "an argument" : "two arguments", metavar_len(o),
                 o->argname ? o->argname : "");
        return -1;
      }
      a1 = argv[i++];
      if (need == 2)
        a2 = argv[i++];
    }
    if (cb && cb(ud, o, spelled, a1, a2, why, whylen)) {
      if (!why[0])
        snprintf(why, whylen, "bad use of option '%s'", spelled);
      return -1;
    }
  }
  *first = i;
  return 0;
}

int wt_opt_spellings(const wt_opt *o, char *buf, size_t len)
{
  char s[NAME_MAX_LEN];
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; spelling(o, i, s, sizeof(s)); i++) {
    int r = snprintf(buf + off, len - off, "%s%s%s", i ? ", " : "", dashes(s), s);
    if (r < 0 || (size_t)r >= len - off)
      return -1;
    off += (size_t)r;
  }
  if (o->argname) {
    int r = snprintf(buf + off, len - off, "%s%.*s", o->kind == WT_OPT_OPTARG ? "" : " ",
                     metavar_len(o), o->argname);
    if (r < 0 || (size_t)r >= len - off)
      return -1;
  }
  return 0;
}

/* Sections in the order they first appear in the table. */
static int first_of_section(const wt_opt *tab, const wt_opt *o)
{
  for (const wt_opt *p = tab; p != o; p++)
    if (!(p->flags & WT_OPT_HIDDEN) && !strcmp(p->section, o->section))
      return 0;
  return 1;
}

void wt_opt_help(FILE *out, const wt_opt *tab)
{
  char sp[1024];
  for (const wt_opt *s = tab; s->id; s++) {
    if ((s->flags & WT_OPT_HIDDEN) || !first_of_section(tab, s))
      continue;
    fprintf(out, "\n%s:\n", s->section);
    for (const wt_opt *o = s; o->id; o++) {
      if ((o->flags & WT_OPT_HIDDEN) || strcmp(o->section, s->section))
        continue;
      if (wt_opt_spellings(o, sp, sizeof(sp)))
        continue;
      if (strlen(sp) <= 28) {
        fprintf(out, "  %-28s %s\n", sp, o->help);
        continue;
      }
      /* long lists of spellings: wrap after a comma before column 78 */
      const char *p = sp;
      while (strlen(p) > 76) {
        int cut = 76;
        while (cut > 0 && p[cut] != ',')
          cut--;
        if (cut == 0)
          break;
        fprintf(out, "  %.*s\n", cut + 1, p);
        p += cut + 1;
        while (*p == ' ')
          p++;
      }
      fprintf(out, "  %s\n  %-28s %s\n", p, "", o->help);
    }
  }
}

void wt_roff(FILE *out, const char *s)
{
  if (*s == '.' || *s == '\'')
    fputs("\\&", out);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\e", out);
    else if (*s == '-')
      fputs("\\-", out);
    else
      fputc(*s, out);
  }
}

void wt_opt_man(FILE *out, const wt_opt *tab)
{
  char s[NAME_MAX_LEN];
  for (const wt_opt *h = tab; h->id; h++) {
    if ((h->flags & WT_OPT_HIDDEN) || !first_of_section(tab, h))
      continue;
    fputs(".SS ", out);
    wt_roff(out, h->section);
    fputc('\n', out);
    for (const wt_opt *o = h; o->id; o++) {
      if ((o->flags & WT_OPT_HIDDEN) || strcmp(o->section, h->section))
        continue;
      fputs(".TP\n", out);
      for (int i = 0; spelling(o, i, s, sizeof(s)); i++) {
        fputs(i ? ", " : "", out);
        fputs("\\fB", out);
        wt_roff(out, dashes(s));
        wt_roff(out, s);
        fputs("\\fR", out);
      }
      if (o->argname) {
        char mv[NAME_MAX_LEN];
        fputs(o->kind == WT_OPT_OPTARG ? "\\fI" : " \\fI", out);
        snprintf(mv, sizeof(mv), "%.*s", metavar_len(o), o->argname);
        wt_roff(out, mv);
        fputs("\\fR", out);
      }
      fputc('\n', out);
      wt_roff(out, o->help);
      fputc('\n', out);
    }
  }
}

/* KIND and WORDS of an option's argument, from its argname: the lower-case
 * words of "all|own|none" are its choices, FILE and PATH a file (a topology
 * for --topology), DIR a directory. */
static void arg_kind(const wt_opt *o, char *kind, size_t klen, char *words, size_t wlen)
{
  char tok[NAME_MAX_LEN], first[NAME_MAX_LEN] = "";
  int file = 0, dir = 0, choices = 0;
  size_t used = 0;

  words[0] = '\0';
  spelling(o, 0, first, sizeof(first));
  if (o->kind != WT_OPT_ARG) {
    /* an optional argument comes only as --name=value: completed as a flag */
    snprintf(kind, klen, "%s",
             o->kind == WT_OPT_FLAG || o->kind == WT_OPT_OPTARG ? "none" : "value2");
    return;
  }
  for (const char *p = o->argname ? o->argname : ""; *p && *p != '{';) {
    size_t n = strcspn(p, "|={");
    int lower = n > 0;

    snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) ? n : sizeof(tok) - 1), p);
    for (size_t i = 0; tok[i]; i++)
      lower &=
        (tok[i] >= 'a' && tok[i] <= 'z') || (tok[i] >= '0' && tok[i] <= '9') || tok[i] == '-';
    file |= !strcmp(tok, "FILE") || !strcmp(tok, "PATH");
    dir |= !strcmp(tok, "DIR");
    if (lower && used < wlen) {
      int r = snprintf(words + used, wlen - used, "%s%s", used ? " " : "", tok);

      used = r > 0 && (size_t)r < wlen - used ? used + (size_t)r : wlen;
      choices = 1;
    }
    p += n;
    p += *p && *p != '{' ? 1 : 0;
  }
  /* the completion's own choices, which --help and the man page leave out */
  for (const char *p = o->argname ? strchr(o->argname, '{') : NULL; p && *++p && *p != '}';) {
    size_t n = strcspn(p, " }");
    if (n && used < wlen) {
      int r = snprintf(words + used, wlen - used, "%s%.*s", used ? " " : "", (int)n, p);

      used = r > 0 && (size_t)r < wlen - used ? used + (size_t)r : wlen;
      choices = 1;
    }
    p += n;
    if (*p != ' ')
      break; /* '}' or the end */
  }
  if (file && strstr(first, "topology"))
    snprintf(kind, klen, "topology");
  else if (choices)
    snprintf(kind, klen, "words%s", file ? ",file" : "");
  else
    snprintf(kind, klen, "%s", file ? "file" : dir ? "dir" : "value");
}

void wt_opt_completion(FILE *out, const wt_opt *tab, const char *context)
{
  char s[NAME_MAX_LEN], kind[32], words[1024];

  for (const wt_opt *o = tab; o->id; o++) {
    if (o->flags & WT_OPT_HIDDEN)
      continue;
    fprintf(out, "%s\t", context);
    for (int i = 0; spelling(o, i, s, sizeof(s)); i++)
      fprintf(out, "%s%s%s", i ? " " : "", dashes(s), s);
    arg_kind(o, kind, sizeof(kind), words, sizeof(words));
    fprintf(out, "\t%s\t%s\n", kind, words);
  }
}
