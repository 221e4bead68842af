/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stack of a stuck rank, for weftrun --get-stack-traces: eu-stack when it
 * is installed, else gdb in batch mode, run on the rank's pid with a deadline
 * (the agent is the rank's parent, so the kernel lets it look); sent to
 * weftrun as STACK messages in pieces. Without either tool the one message
 * says so.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft-rank.h"

#define STACK_DEADLINE_S 15
#define STACK_MAX (64 * 1024)

static void send_text(wk_channel *ch, const char *text, const char *why)
{
  size_t len = text ? strlen(text) : 0, off = 0;
  do {
    wt_ctl_out m;
    char piece[WT_CTL_MAX_TEXT + 1];
    size_t n = len - off < WT_CTL_MAX_TEXT ? len - off : WT_CTL_MAX_TEXT;
    memcpy(piece, text ? text + off : "", n);
    piece[n] = '\0';
    off += n;
    wt_ctl_begin(&m, WT_CTL_STACK);
    wt_ctl_put_str(&m, WT_CTL_T_TEXT, piece);
    if (why)
      wt_ctl_put_str(&m, WT_CTL_T_WHY, why);
    wt_ctl_put_int(&m, WT_CTL_T_LAST, off >= len);
    wk_channel_send(ch, &m);
    /* pieces go out as the socket takes them: do not overrun the outbox */
    wk_channel_flush(ch, 5.0);
  } while (off < len);
}

void wk_stack_send(wk_channel *ch, long pid, const wt_agent_who *who)
{
  char path[4096], why[600], pidarg[32];
  const char *eu[] = {"eu-stack", NULL}, *gdb[] = {"gdb", NULL};
  weftx_proc_spec s;
  weftx_proc_result r;

  snprintf(pidarg, sizeof(pidarg), "%ld", pid);
  char *const eu_argv[] = {path, (char *)"-p", pidarg, NULL};
  char *const gdb_argv[] = {
    path,          (char *)"-p", pidarg,        (char *)"-batch",
    (char *)"-nx", (char *)"-q", (char *)"-ex", (char *)"thread apply all bt",
    NULL};
  weftx_proc_spec_init(&s);
  if (weftx_find_exe(eu, path, sizeof(path)))
    s.argv = eu_argv;
  else if (weftx_find_exe(gdb, path, sizeof(path)))
    s.argv = gdb_argv;
  if (!s.argv) {
    snprintf(why, sizeof(why), "no stack: neither eu-stack (elfutils) nor gdb is installed on %s",
             who->host);
    send_text(ch, NULL, why);
    return;
  }
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_NULL;
  s.in = WEFTX_PROC_NULL;
  s.timeout = STACK_DEADLINE_S;
  s.grace = 1;
  s.max_output = STACK_MAX;
  if (weftx_proc_run(&s, &r, why, sizeof(why))) {
    send_text(ch, NULL, why);
    return;
  }
  if (!r.output || !r.len) {
    snprintf(why, sizeof(why), "no stack: %.200s -p %ld printed nothing (exit %d%s)", path, pid,
             r.status, r.timed_out ? ", timed out" : "");
    send_text(ch, NULL, why);
  } else {
    send_text(ch, r.output, r.capped ? "cut at 64 KiB" : NULL);
  }
  free(r.output);
}
