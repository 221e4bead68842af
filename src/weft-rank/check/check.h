/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun --check, the agent's side ("weft-rank --check full|reach", one per
 * host; the launcher's side is src/weftrun/check/): this host's checks run
 * side by side, each with its deadline (check.c), their findings gathered
 * as facts (facts.c) and printed as the records of agent.h; the GPUs
 * (gpu.c); the network rendezvous with the other hosts' agents (net.c).
 */
#ifndef WK_CHECK_H
#define WK_CHECK_H

#include "weft-rank.h"

/* check.c: this host's facts as records (agent.h), then exit 0 whatever
 * was found: a failed check is a fact, never an exit status that would make the
 * engine end the other hosts' agents. */
int wk_check(const wt_agent_args *o, char **program);

/* facts.c: what one check found, "KEY VALUE" strings, printed as records once it is
 * done. */
typedef struct wk_facts {
  char **v;
  int n, cap;
} wk_facts;
void wk_fact(wk_facts *f, const char *key, const char *fmt, ...) WEFT_PRINTF(3, 4);
/* A fact whose value is text of many lines (the topology's XML, key "xml"): printed
 * as the record "xml BYTES" followed by the text as it is. */
void wk_fact_raw(wk_facts *f, const char *key, const char *data, size_t len);

/* gpu.c: GPUs on the PCI bus (this host's topology, also sent as XML for
 * weftrun's plan) and what NVML says of them (dlopen'ed: "gpu.nvml absent ..."
 * without it). */
void wk_check_gpus(wk_facts *f);

/* net.c: the master port, the connection to the master (the rendezvous every
 * agent makes, as a job's ranks do), the clock offset from the master's, and the TCP
 * connections of the pair rule (agent.h) on the job's interface. */
typedef struct wk_check_net {
  int me, n;               /* this host's index, the hosts */
  const char *id;          /* the check's nonce */
  const char *master_addr; /* MASTER_ADDR; NULL for a job on one host here */
  int master_port;
  const char *ifname; /* the job's interface, or NULL */
  double skew;        /* seconds added to this host's clock (tests only) */
  double deadline;    /* weftx_monotonic() by which it has ended */
} wk_check_net;
void wk_check_net_run(const wk_check_net *a, wk_facts *f);
/* The job's interface \p ifname among \p ifs: the index of its first IPv4 address, else
 * of its first address; -1 when it has none. */
int wk_check_ifaddr(const weftx_netif *ifs, int nifs, const char *ifname);

#endif /* WK_CHECK_H */
