/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --monitor on the agent's side: every interval, read what the rank's
 * process uses (/proc/PID/stat: CPU time, threads, resident memory) and the
 * byte counters of the rank's NIC (/sys/class/net/IF/statistics), and send
 * them to weftrun as one SAMPLE over the control channel. Parsing and rates
 * are sample.c's; here are only the reads, a few hundred bytes each, with
 * descriptors kept open between samples (pread at offset 0).
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample.h"
#include "weft-rank.h"

struct wk_monitor {
  double every, next, last_at;
  long hz, page;
  int stat_fd, tx_fd, rx_fd;
  char nic[32];
  int64_t ticks, tx, rx;     /* the last reading, -1 none */
  int64_t seq;
};

static int
open_ro(const char *path)
{
  return open(path, O_RDONLY | O_CLOEXEC);
}

/* The text of an open /proc or /sys file, NUL-terminated; -1 when unreadable. */
static int
read_text(int fd, char *buf, size_t len)
{
  if (fd < 0)
    return -1;
  ssize_t n = pread(fd, buf, len - 1, 0);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

static int64_t
counter(int fd)
{
  char buf[64];
  int64_t v;
  return read_text(fd, buf, sizeof(buf)) || weft_sample_parse_counter(buf, &v) ? -1 : v;
}

wk_monitor *
wk_monitor_new(long pid, double every, const char *nic, double now)
{
  char path[160];
  wk_monitor *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->every = every;
  m->next = now + every;
  m->last_at = now;
  m->hz = sysconf(_SC_CLK_TCK);
  m->page = sysconf(_SC_PAGESIZE);
  m->tx_fd = m->rx_fd = -1;
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  m->stat_fd = open_ro(path);
  if (nic && nic[0] && !strchr(nic, '/') && strlen(nic) < sizeof(m->nic)) {
    snprintf(m->nic, sizeof(m->nic), "%s", nic);
    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/tx_bytes", nic);
    m->tx_fd = open_ro(path);
    snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_bytes", nic);
    m->rx_fd = open_ro(path);
    if (m->tx_fd < 0 || m->rx_fd < 0)
      m->nic[0] = '\0';
  }
  weft_proc_stat st;
  char buf[1024];
  m->ticks = read_text(m->stat_fd, buf, sizeof(buf)) || weft_sample_parse_stat(buf, &st) ? -1
                                                                                          : st.ticks;
  m->tx = counter(m->tx_fd);
  m->rx = counter(m->rx_fd);
  return m;
}

double
wk_monitor_next(const wk_monitor *m)
{
  return m ? m->next : 0;
}

void
wk_monitor_tick(wk_monitor *m, wk_channel *ch, double now)
{
  if (!m || now < m->next)
    return;
  weft_sample s;
  weft_proc_stat st;
  char buf[1024];
  weft_sample_init(&s);
  s.seq = ++m->seq;
  s.span_ms = (int64_t)((now - m->last_at) * 1000 + 0.5);
  if (read_text(m->stat_fd, buf, sizeof(buf)) == 0 && weft_sample_parse_stat(buf, &st) == 0 &&
      st.state != 'Z') {
    s.cpu_pm = weft_sample_cpu_pm(m->ticks, st.ticks, m->hz, s.span_ms);
    s.cpu_ms = m->hz > 0 ? st.ticks * 1000 / m->hz : -1;
    s.rss = st.rss_pages * m->page;
    s.threads = st.threads;
    m->ticks = st.ticks;
  }
  if (m->nic[0]) {
    int64_t tx = counter(m->tx_fd), rx = counter(m->rx_fd);
    snprintf(s.nic, sizeof(s.nic), "%s", m->nic);
    s.nic_tx = weft_sample_rate(m->tx, tx, s.span_ms);
    s.nic_rx = weft_sample_rate(m->rx, rx, s.span_ms);
    m->tx = tx;
    m->rx = rx;
  }
  weft_ctl_out out;
  weft_sample_put(&out, &s);
  wk_channel_send(ch, &out);
  m->last_at = now;
  /* the next one on the grid, not drifting by how late this one was */
  while (m->next <= now)
    m->next += m->every;
}

void
wk_monitor_free(wk_monitor *m)
{
  if (!m)
    return;
  if (m->stat_fd >= 0)
    close(m->stat_fd);
  if (m->tx_fd >= 0)
    close(m->tx_fd);
  if (m->rx_fd >= 0)
    close(m->rx_fd);
  free(m);
}
