/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ranks' output in whole lines, weftrun's half (the agents' is
 * weft-rank/output.c): under mpirun every agent hands its program's lines on
 * as records on its stderr (agent.h, WT_LINE_MARK), each record whole in
 * what mpirun forwards, so that mpirun's stderr is a sequence of whole
 * records and of mpirun's own lines. Each record's line goes to weftrun's
 * stdout or stderr as the program wrote it; anything else goes on as it
 * came. Output comes here in whole lines (weftx_proc_run's on_output); a
 * line longer than its buffer comes in pieces, of which only the first can
 * start a record. When weftrun's stdout or stderr is a pipe whose reader has
 * gone, the caller ends the job, as mpirun does on SIGPIPE.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "engine.h"

void wr_lines_init(wr_lines *l, void (*before)(void *arg), void *arg)
{
  memset(l, 0, sizeof(*l));
  l->before = before;
  l->arg = arg;
}

void wr_lines_put(wr_lines *l, int stream, const char *data, size_t len)
{
  int said = 0;
  while (len > 0) {
    const char *nl = memchr(data, '\n', len);
    size_t n = nl ? (size_t)(nl - data) + 1 : len;
    FILE *to = l->in_piece[stream] ? l->piece_to[stream] : stream == 1 ? stdout : stderr;
    const char *p = data;
    size_t k = n;
    int rec = !l->in_piece[stream] && n >= 2 && data[0] == WT_LINE_MARK && data[1] &&
              strchr("OoEe", data[1]) != NULL;
    if (rec) {
      to = data[1] == 'O' || data[1] == 'o' ? stdout : stderr;
      p += 2;
      k -= 2;
      if ((data[1] == 'o' || data[1] == 'e') && k > 0 && p[k - 1] == '\n')
        k--; /* a piece without its end of line */
    }
    if (l->last && l->last != to)
      fflush(l->last); /* the order between the two streams kept */
    l->last = to;
    if (!said && l->before) {
      l->before(l->arg);
      said = 1;
    }
    int mine = !rec && !(l->in_piece[stream] && l->piece_rec[stream]); /* mpirun's own */
    if (k > 0 && mine && to == stderr && l->rest) {
      l->rest(l->rest_arg, p, k); /* mpirun's own: its accounts of the end may be held, so
                                   * a rank's line left open stays open */
    } else if (k > 0) {
      fwrite(p, 1, k, to);
      l->open = p[k - 1] != '\n';
    }
    if (!l->in_piece[stream])
      l->piece_rec[stream] = rec; /* whether a long line's pieces are a record's */
    l->in_piece[stream] = !nl;    /* the rest of a long line: not a record's start, */
    l->piece_to[stream] = to;     /* and where its start went */
    data += n;
    len -= n;
  }
  if ((fflush(stdout) || fflush(stderr)) && errno == EPIPE && !l->broken)
    l->broken = 1; /* a reader gone (weftrun | head): mpirun would end the job */
}
