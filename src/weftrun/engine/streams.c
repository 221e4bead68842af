/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's stdout cut into its ranks' streams, for the jobs whose output
 * weftrun reads (the probe, --check's): mpirun's --tag-output puts
 * "[J,R]<stdout>:" before every piece of rank R's output it forwards, also in
 * the middle of a line when a piece ends there (Open MPI 5: "[J,R]<stdout>: "
 * before every line), so its stream is cut at the tags, not at newlines; srun's --label starts every line with "T: " (the
 * task, padded with spaces in front) and forwards whole lines. Output comes
 * as it is read, and a read may end anywhere, in a label too.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"

void wr_streams_init(wr_streams *s, int labels, int n,
                     void (*to)(void *arg, int rank, const char *data, size_t len), void *arg)
{
  memset(s, 0, sizeof(*s));
  s->labels = labels;
  s->n = n;
  s->to = to;
  s->arg = arg;
  s->cur = -1;
  s->space = -1;
}

/* Where the output after a tag at \p at starts: Open MPI 5 puts a space after every tag
 * (4.1 none), known from the first one, as what weft-rank prints for these jobs never
 * starts with a space. */
static size_t after_tag(wr_streams *s, const char *data, size_t len, size_t at)
{
  if (at >= len) {
    s->pending = 1;
    return at;
  }
  s->pending = 0;
  if (s->space < 0)
    s->space = data[at] == ' ';
  return s->space && data[at] == ' ' ? at + 1 : at;
}

/* mpirun's: cut at its tags. */
static void tags(wr_streams *s, const char *data, size_t len)
{
  size_t start = s->pending ? after_tag(s, data, len, 0) : 0;
  for (size_t k = start; k < len; k++) {
    int job, r, used = 0;
    if (data[k] != '[' || sscanf(data + k, "[%d,%d]<stdout>:%n", &job, &r, &used) != 2 || used <= 0)
      continue;
    if (s->cur >= 0 && k > start)
      s->to(s->arg, s->cur, data + start, k - start);
    s->cur = r >= 0 && r < s->n ? r : -1;
    start = after_tag(s, data, len, k + (size_t)used);
    k = start - 1;
  }
  if (s->cur >= 0 && len > start)
    s->to(s->arg, s->cur, data + start, len - start);
}

/* The task of srun's label "T: " (padded with spaces in front), -1 when not one. */
static int label_task(const char *l, int n)
{
  long t = 0;
  int digits = 0;
  while (*l == ' ')
    l++;
  for (; *l >= '0' && *l <= '9' && digits < 9; l++, digits++)
    t = 10 * t + (*l - '0');
  return digits && !strcmp(l, ": ") && t < n ? (int)t : -1;
}

/* srun's: a line at a time, its label first; a line without one is dropped. */
static void labels(wr_streams *s, const char *data, size_t len)
{
  size_t k = 0;
  while (k < len) {
    if (!s->in_line) {
      char ch = data[k++];
      int is_label = (ch == ' ' || ch == ':' || (ch >= '0' && ch <= '9')) &&
                     s->labellen < (int)sizeof(s->label) - 1;
      if (ch == '\n' || !is_label) {
        s->cur = -1;
        s->labellen = 0;
        s->in_line = ch != '\n';
        continue;
      }
      s->label[s->labellen++] = ch;
      s->label[s->labellen] = '\0';
      if (s->labellen >= 2 && !strcmp(s->label + s->labellen - 2, ": ")) {
        s->cur = label_task(s->label, s->n);
        s->labellen = 0;
        s->in_line = 1;
      }
      continue;
    }
    const char *nl = memchr(data + k, '\n', len - k);
    size_t end = nl ? (size_t)(nl - data) + 1 : len;
    if (s->cur >= 0)
      s->to(s->arg, s->cur, data + k, end - k);
    if (nl)
      s->in_line = 0;
    k = end;
  }
}

void wr_streams_put(wr_streams *s, const char *data, size_t len)
{
  (s->labels ? labels : tags)(s, data, len);
}
