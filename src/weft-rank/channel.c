/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's end of the control channel (ctl.h): connect to weftrun before
 * the rank starts, prove the job's secret (an HMAC of weftrun's challenge
 * keyed by it: the secret never leaves the host), take weftrun's bounds from its
 * WELCOME (waited for only when the rank is about to start: the rank's setup
 * overlaps weftrun's answer); then send what happens to the rank, heartbeats
 * with the rank's current weft call, and read weftrun's answers (PONG, END,
 * STACK_REQ). The secret comes from the environment and is wiped from it (and
 * from this process's memory image, /proc/PID/environ) before anything else
 * runs.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft-rank.h"

struct wk_channel {
  wt_ctl_conn conn;
  const wt_agent_who *who;
  double hb_s, lost_s, grace_s;
  double heard;      /* last message from weftrun */
  double welcome_by; /* the open's deadline, for the WELCOME */
  int welcomed;
  const char *addr; /* weftrun's (the caller's string), for the reasons */
  double next_hb;
  long seq;
  int lost;                                 /* the connection is gone */
  wk_channel_event ev;                      /* what the last pump brought */
  char challenge[WT_CTL_CHALLENGE_LEN + 8]; /* weftrun's, for this connection */
};

/* The secret, taken out of the environment for good. */
static int take_secret(char *buf, size_t len)
{
  char *s = getenv(WT_CTL_SECRET_ENV);
  if (!s || strlen(s) != WT_CTL_SECRET_LEN || strlen(s) >= len)
    return -1;
  memcpy(buf, s, strlen(s) + 1);
  memset(s, 'x', strlen(s)); /* the bytes /proc/PID/environ shows */
  unsetenv(WT_CTL_SECRET_ENV);
  return 0;
}

void wk_channel_scrub(void)
{
  char s[WT_CTL_SECRET_LEN + 1];
  take_secret(s, sizeof(s));
}

static int on_welcome(void *arg, const wt_ctl_msg *m)
{
  wk_channel *c = arg;
  c->ev.type = m->type;
  if (m->type == WT_CTL_WELCOME) {
    c->hb_s = (double)wt_ctl_int_or(m, WT_CTL_T_HB_MS, 1000) / 1000.0;
    c->lost_s = (double)wt_ctl_int_or(m, WT_CTL_T_LOST_MS, 5000) / 1000.0;
    c->grace_s = (double)wt_ctl_int_or(m, WT_CTL_T_GRACE_MS, 2000) / 1000.0;
  } else if (m->type == WT_CTL_REFUSE) {
    wt_ctl_get_str(m, WT_CTL_T_WHY, c->ev.why, sizeof(c->ev.why));
  } else if (m->type == WT_CTL_CHALLENGE) {
    if (wt_ctl_get_str(m, WT_CTL_T_CHALLENGE, c->challenge, sizeof(c->challenge)) ||
        strlen(c->challenge) != WT_CTL_CHALLENGE_LEN)
      c->challenge[0] = '\0';
  }
  return 1;
}

/* weftrun's first message, the challenge HELLO answers. */
static int await_challenge(wk_channel *c, const char *addr, double deadline, char *why, size_t len)
{
  char w[300];
  memset(&c->ev, 0, sizeof(c->ev));
  while (c->ev.type != WT_CTL_CHALLENGE) {
    double left = deadline - weftx_monotonic();
    struct pollfd pf = {c->conn.fd, POLLIN, 0};
    if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
      snprintf(why, len,
               "weftrun at %s sent no challenge within %.0f s (a weftrun of weft "
               "before control protocol %d sends none: install the same weft on every host)",
               addr, WT_CTL_CONNECT_S, WT_CTL_VERSION);
      return -1;
    }
    int rc = wt_ctl_conn_read(&c->conn, on_welcome, c, w, sizeof(w));
    if (c->ev.type == WT_CTL_REFUSE) {
      snprintf(why, len, "weftrun at %s refused this agent: %s", addr, c->ev.why);
      return -1;
    }
    if (c->ev.type != 0 && c->ev.type != WT_CTL_CHALLENGE) {
      snprintf(why, len, "weftrun at %s sent %s before its challenge (mixed weft installations?)",
               addr, wt_ctl_type_name(c->ev.type));
      return -1;
    }
    if (rc < 0) {
      snprintf(why, len,
               "weftrun at %s: %s before its challenge (a weftrun of weft before "
               "control protocol %d sends none: install the same weft on every host)",
               addr, w, WT_CTL_VERSION);
      return -1;
    }
  }
  c->ev.type = 0;
  if (!c->challenge[0]) {
    snprintf(why, len, "weftrun at %s sent a challenge that is not %d hex digits", addr,
             WT_CTL_CHALLENGE_LEN);
    return -1;
  }
  return 0;
}

int wk_channel_open(wk_channel **out, const char *addr, const wt_agent_who *who, char *why,
                    size_t len)
{
  char secret[WT_CTL_SECRET_LEN + 1], w[300];
  double deadline = weftx_monotonic() + WT_CTL_CONNECT_S;
  wk_channel *c = calloc(1, sizeof(*c));

  *out = NULL;
  if (!c) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  wt_ctl_conn_init(&c->conn, -1, 0);
  c->who = who;
  if (take_secret(secret, sizeof(secret))) {
    snprintf(why, len,
             "%s is not set (or not %d hex digits): weft-rank --control runs under "
             "weftrun, which sets it",
             WT_CTL_SECRET_ENV, WT_CTL_SECRET_LEN);
    free(c);
    return -1;
  }
  int fd = wt_ctl_connect(addr, deadline, w, sizeof(w));
  if (fd < 0) {
    snprintf(why, len,
             "cannot reach weftrun's control channel at %s within %.0f s: %s; the "
             "hosts must reach weftrun's host on that address (a firewall?)",
             addr, WT_CTL_CONNECT_S, w);
    free(c);
    return -1;
  }
  wt_ctl_conn_init(&c->conn, fd, 4 * WT_CTL_FRAME_MAX);
  /* weftrun's machine gone or cut off is noticed in WT_CTL_UNANSWERED_S, before
   * the silence of --host-timeout (without keepalive, only that) */
  if (wt_ctl_keepalive(fd))
    fprintf(stderr,
            "weft-rank: warning: no TCP keepalive on the control channel (%s): a cut "
            "network is noticed after --host-timeout only\n",
            strerror(errno));
  if (await_challenge(c, addr, deadline, why, len)) {
    memset(secret, 0, sizeof(secret));
    wt_ctl_conn_close(&c->conn);
    free(c);
    return -1;
  }
  char proof[WT_CTL_PROOF_LEN + 1];
  wt_ctl_proof(secret, c->challenge, who->rank, who->host, proof);
  memset(secret, 0, sizeof(secret));
  wt_ctl_out m;
  wt_ctl_begin(&m, WT_CTL_HELLO);
  wt_ctl_put_str(&m, WT_CTL_T_PROOF, proof);
  wt_ctl_put_int(&m, WT_CTL_T_RANK, who->rank);
  wt_ctl_put_int(&m, WT_CTL_T_PID, getpid());
  wt_ctl_put_str(&m, WT_CTL_T_HOST, who->host);
  if (wt_ctl_conn_queue(&c->conn, &m) || wt_ctl_conn_drain(&c->conn, deadline)) {
    snprintf(why, len, "cannot talk to weftrun at %s", addr);
    wt_ctl_conn_close(&c->conn);
    free(c);
    return -1;
  }
  c->addr = addr;
  c->welcome_by = deadline;
  /* until the WELCOME: no heartbeat due, no silence judged */
  c->heard = c->next_hb = deadline;
  *out = c;
  return 0;
}

int wk_channel_welcomed(wk_channel *c, char *why, size_t len)
{
  char w[300];
  if (c->welcomed)
    return 0;
  while (c->ev.type != WT_CTL_WELCOME) {
    double left = c->welcome_by - weftx_monotonic();
    struct pollfd pf = {c->conn.fd, POLLIN, 0};
    if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
      snprintf(why, len, "weftrun at %s did not answer within %.0f s", c->addr, WT_CTL_CONNECT_S);
      return -1;
    }
    int rc = wt_ctl_conn_read(&c->conn, on_welcome, c, w, sizeof(w));
    if (c->ev.type == WT_CTL_REFUSE) {
      snprintf(why, len, "weftrun at %s refused this agent: %s", c->addr, c->ev.why);
      return -1;
    }
    if (rc < 0) {
      snprintf(why, len, "weftrun at %s: %s before welcoming this agent", c->addr, w);
      return -1;
    }
  }
  c->ev.type = 0;
  c->welcomed = 1;
  c->heard = weftx_monotonic();
  c->next_hb = c->heard + c->hb_s;
  return 0;
}

int wk_channel_fd(const wk_channel *c) { return c && !c->lost ? c->conn.fd : -1; }

double wk_channel_grace(const wk_channel *c) { return c ? c->grace_s : 2.0; }

double wk_channel_lost(const wk_channel *c) { return c ? c->lost_s : 30.0; }

void wk_channel_send(wk_channel *c, const wt_ctl_out *m)
{
  if (!c || c->lost)
    return;
  if (wt_ctl_conn_queue(&c->conn, m) || wt_ctl_conn_flush(&c->conn))
    c->lost = 1;
}

static int on_msg(void *arg, const wt_ctl_msg *m)
{
  wk_channel *c = arg;
  switch (m->type) {
  case WT_CTL_END:
    c->ev.type = WT_CTL_END;
    c->ev.signal = (int)wt_ctl_int_or(m, WT_CTL_T_SIGNAL, 15);
    wt_ctl_get_str(m, WT_CTL_T_WHY, c->ev.why, sizeof(c->ev.why));
    return 1;
  case WT_CTL_STACK_REQ: c->ev.type = WT_CTL_STACK_REQ; return 1;
  default: /* PONG, and what a newer weftrun may send */ return 0;
  }
}

const wk_channel_event *wk_channel_pump(wk_channel *c, double now, const weftx_page *page,
                                        char *why, size_t len)
{
  memset(&c->ev, 0, sizeof(c->ev));
  if (c->lost) {
    c->ev.type = -1;
    snprintf(why, len, "the connection broke");
    return &c->ev;
  }
  unsigned long before = c->conn.frames;
  if (wt_ctl_conn_read(&c->conn, on_msg, c, why, len) < 0) {
    c->lost = 1;
    c->ev.type = -1;
    return &c->ev;
  }
  if (c->conn.frames != before)
    c->heard = now;
  if (now - c->heard > c->lost_s) {
    c->lost = 1;
    c->ev.type = -1;
    snprintf(why, len, "no word from it for %.1f s", now - c->heard);
    return &c->ev;
  }
  if (now >= c->next_hb) {
    wt_ctl_out m;
    wt_ctl_begin(&m, WT_CTL_HEARTBEAT);
    wt_ctl_put_int(&m, WT_CTL_T_SEQ, ++c->seq);
    wk_page_put(&m, page, now);
    wk_channel_send(c, &m);
    c->next_hb = now + c->hb_s;
  }
  return &c->ev;
}

void wk_channel_heard(wk_channel *c, double now)
{
  if (c)
    c->heard = now;
}

double wk_channel_next(const wk_channel *c)
{
  if (!c || c->lost)
    return 0;
  double lost_at = c->heard + c->lost_s;
  return c->next_hb < lost_at ? c->next_hb : lost_at;
}

void wk_channel_flush(wk_channel *c, double seconds)
{
  if (c && !c->lost && wt_ctl_conn_drain(&c->conn, weftx_monotonic() + seconds))
    c->lost = 1;
}

void wk_channel_close(wk_channel *c, double deadline)
{
  if (!c)
    return;
  /* The last messages out, then our end shut and weftrun's answers read until it
   * closes its end (it does on our end-of-file): a close with unread data (a PONG
   * on its way) resets the connection, and the reset can overtake the EXITED still
   * in flight, which weftrun then never reads. */
  if (!c->lost && !wt_ctl_conn_drain(&c->conn, deadline) && shutdown(c->conn.fd, SHUT_WR) == 0) {
    char junk[512];
    for (;;) {
      double left = deadline - weftx_monotonic();
      struct pollfd pf = {c->conn.fd, POLLIN, 0};
      if (left <= 0 || (poll(&pf, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR))
        break;
      ssize_t n = read(c->conn.fd, junk, sizeof(junk));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        break;
    }
  }
  wt_ctl_conn_close(&c->conn);
  free(c);
}
