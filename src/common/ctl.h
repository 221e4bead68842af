/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel between weftrun and its agents: the wire format, part
 * of the weftrun <-> weft-rank contract (agent.h). Every agent connects to
 * weftrun (TCP, the address weft-rank's --control names) before it starts its
 * rank, proves it belongs to the job with the per-job secret (the environment
 * variable WEFT_CONTROL_SECRET, never a command line; the secret itself never
 * crosses the channel: HELLO answers weftrun's CHALLENGE, see WT_CTL_VERSION), and from then on
 * reports what happens to its rank; weftrun answers heartbeats and may tell
 * it to end the job. Failure attribution comes from these messages only.
 *
 * A frame is an 8-byte header, then up to WT_CTL_MAX_PAYLOAD bytes:
 *
 *   'w' 'f'  version (WT_CTL_VERSION)  type (WT_CTL_*)  payload length (u32, big-endian)
 *
 * and the payload a sequence of fields: tag (u8), length (u16, big-endian),
 * value. A number is 8 bytes (int64, big-endian), a text its bytes (no NUL,
 * cut at WT_CTL_MAX_TEXT). A receiver skips tags it does not know, so new
 * fields (monitoring samples, issue 17) are added without a new version; a
 * frame of another version, another magic or a length over the bound ends
 * the connection. Encoding and decoding here are pure (no I/O).
 */
#ifndef WT_CTL_H
#define WT_CTL_H

#include <stddef.h>
#include <stdint.h>

/* 2: the secret no longer travels. weftrun sends a CHALLENGE (16 random bytes,
 * new for every connection) as soon as it accepts one; the agent's HELLO
 * carries PROOF, HMAC-SHA256 keyed by the secret of the challenge, the rank and
 * the host (wt_ctl_proof()), which weftrun checks in constant time. A HELLO
 * captured on the network proves nothing to another connection. Version 1
 * sent the secret itself in HELLO. */
#define WT_CTL_VERSION 2
#define WT_CTL_HEADER 8
#define WT_CTL_MAX_PAYLOAD 16384
#define WT_CTL_MAX_TEXT 4096
#define WT_CTL_MAX_FIELDS 64
#define WT_CTL_SECRET_ENV "WEFT_CONTROL_SECRET"
#define WT_CTL_SECRET_LEN 32    /* hex digits: 16 bytes from getrandom() */
#define WT_CTL_CHALLENGE_LEN 32 /* hex digits: 16 bytes from getrandom() */
#define WT_CTL_PROOF_LEN 64     /* hex digits of an HMAC-SHA256 */
#define WT_CTL_CONNECT_S 10.0   /* an agent's bound to reach weftrun and be welcomed */
/* A peer machine whose kernel has acknowledged nothing for this long is gone (a machine
 * down, a network cut), however long its agent or weftrun may be starved (keepalive). */
#define WT_CTL_UNANSWERED_S 5

/* Message types. A = agent to weftrun, W = weftrun to agent. */
enum wt_ctl_type {
  WT_CTL_HELLO = 1, /* A: proof, rank, agent pid, host */
  WT_CTL_WELCOME,   /* W: heartbeat and lost bounds, grace */
  WT_CTL_REFUSE,    /* W: why (then weftrun closes) */
  WT_CTL_PLACED,    /* A: gpu, cpus, nic of the rank */
  WT_CTL_STARTED,   /* A: pid of the rank */
  WT_CTL_EXITED,    /* A: how the rank ended, its last weft call */
  WT_CTL_HEARTBEAT, /* A: seq, the rank's current weft call (and later samples) */
  WT_CTL_PONG,      /* W: seq of the heartbeat answered */
  WT_CTL_END,       /* W: end the rank now (signal, why) */
  WT_CTL_STACK_REQ, /* W: send the rank's stack */
  WT_CTL_STACK,     /* A: text of the rank's stack (or why there is none) */
  WT_CTL_SAMPLE,    /* A: what the rank uses (--monitor; sample.h) */
  WT_CTL_CHALLENGE, /* W: challenge, the first message of every connection */
  WT_CTL_TYPE_MAX
};

/* Field tags; a tag means the same in every message. */
enum wt_ctl_tag {
  WT_CTL_T_PROOF = 1,   /* text: wt_ctl_proof()'s hex digits (version 1: the secret) */
  WT_CTL_T_RANK,        /* number */
  WT_CTL_T_PID,         /* number: the agent's (HELLO) or the rank's (STARTED) */
  WT_CTL_T_HOST,        /* text: gethostname() of the agent's host */
  WT_CTL_T_HB_MS,       /* number: heartbeat interval */
  WT_CTL_T_LOST_MS,     /* number: silence after which the other end is lost */
  WT_CTL_T_GRACE_MS,    /* number: SIGTERM to SIGKILL after END */
  WT_CTL_T_WHY,         /* text */
  WT_CTL_T_GPU,         /* text: "2 (0000:0a:00.0)" or "none" */
  WT_CTL_T_CPUS,        /* text: "0-12,104-116" */
  WT_CTL_T_NIC,         /* text */
  WT_CTL_T_CODE,        /* number: exit status, 128+N for signal N */
  WT_CTL_T_SIGNAL,      /* number: the signal that ended the rank, 0 none */
  WT_CTL_T_STOPPED,     /* number: WT_CTL_STOP_* (why the agent stopped it) */
  WT_CTL_T_SEQ,         /* number */
  WT_CTL_T_WSTATE,      /* number: weftx_page_state of the rank's libweft */
  WT_CTL_T_OP,          /* number: weftx_page_op of its current weft call, 0 none */
  WT_CTL_T_GROUP,       /* text: the call's group name */
  WT_CTL_T_GROUP_FIRST, /* number: world rank of the group's rank 0 */
  WT_CTL_T_GROUP_SIZE,  /* number */
  WT_CTL_T_BYTES,       /* number: bytes of the call */
  WT_CTL_T_IN_MS,       /* number: ms since the call began (or since the last one ended) */
  WT_CTL_T_CALLS,       /* number: weft calls completed */
  WT_CTL_T_MEMBERS,     /* text: a timed-out call's group, world ranks "0-3,8" */
  WT_CTL_T_TEXT,        /* text: stack trace */
  WT_CTL_T_LAST,        /* number: 1 on the last piece of a text sent in pieces */
  WT_CTL_T_RUN_MS,      /* number: ms the rank has run */
  /* SAMPLE's (sample.h), and EXITED's CPU_MS and RSS: the rank's totals */
  WT_CTL_T_SPAN_MS,    /* number: ms the sample's rates cover */
  WT_CTL_T_CPU_PM,     /* number: CPU use in thousandths of one core */
  WT_CTL_T_CPU_MS,     /* number: CPU time used, ms */
  WT_CTL_T_RSS,        /* number: resident memory, bytes (EXITED: the peak) */
  WT_CTL_T_THREADS,    /* number */
  WT_CTL_T_PROCS,      /* number: processes of the rank */
  WT_CTL_T_GPU_UTIL,   /* number: the rank's GPU's utilisation, percent (NVML) */
  WT_CTL_T_GPU_MEM,    /* number: its memory used, bytes */
  WT_CTL_T_GPU_POWER,  /* number: its power draw, milliwatts */
  WT_CTL_T_GPU_TEMP,   /* number: its temperature, degrees C */
  WT_CTL_T_NIC_TX,     /* number: bytes per second sent through the NIC */
  WT_CTL_T_NIC_RX,     /* number: bytes per second received */
  WT_CTL_T_CHALLENGE,  /* text: WT_CTL_CHALLENGE_LEN hex digits */
  WT_CTL_T_KILLED,     /* number: EXITED's 1 when SIGTERM was not enough: the agent sent
                          SIGKILL after the grace period */
  WT_CTL_T_STOPPED_MS, /* number: EXITED's with WT_CTL_STOP_STOPPED: ms the program was
                          stopped (state T or t) */
  WT_CTL_T_MAX
};

/* Why an agent stopped its rank (EXITED's STOPPED): NONE means the rank ended
 * on its own, which is what a failure is. */
enum wt_ctl_stop {
  WT_CTL_STOP_NONE = 0,
  WT_CTL_STOP_ENGINE,  /* a signal from the engine (mpirun's teardown) or the user */
  WT_CTL_STOP_END,     /* weftrun's END */
  WT_CTL_STOP_LOST,    /* the dead man's switch: weftrun lost */
  WT_CTL_STOP_PREEMPT, /* a Google Cloud preemption notice */
  WT_CTL_STOP_SETUP,   /* never started: the agent could not set the rank up */
  WT_CTL_STOP_DAEMON,  /* its host's engine daemon (orted, slurmstepd) died under it */
  WT_CTL_STOP_STOPPED, /* the program was stopped (SIGSTOP, Ctrl-Z: state T or t) for
                            longer than the lost bound (--host-timeout): lost, not slow */
};

/* A message being written: the whole frame in buf. */
typedef struct wt_ctl_out {
  unsigned char buf[WT_CTL_HEADER + WT_CTL_MAX_PAYLOAD];
  size_t len;
  int full; /* a field did not fit and was left out */
} wt_ctl_out;

/* A message read: fields point into the frame it was decoded from. */
typedef struct wt_ctl_field {
  int tag;
  const unsigned char *v;
  size_t len;
} wt_ctl_field;

typedef struct wt_ctl_msg {
  int version, type;
  int nfields;
  wt_ctl_field f[WT_CTL_MAX_FIELDS];
} wt_ctl_msg;

void wt_ctl_begin(wt_ctl_out *m, int type);
void wt_ctl_put_int(wt_ctl_out *m, int tag, int64_t v);
/* Text, cut at WT_CTL_MAX_TEXT bytes (and at what is left of the frame). */
void wt_ctl_put_str(wt_ctl_out *m, int tag, const char *s);

/** \brief How much of \p buf (\p len bytes read so far) the first frame takes.
 * \return its whole length when it is complete, 0 when more bytes are needed,
 * -1 when it cannot be a frame of this version (\p why says so). */
long wt_ctl_frame(const unsigned char *buf, size_t len, char *why, size_t whylen);

/** \brief Decode a complete frame (wt_ctl_frame() > 0). 0, or -1 with \p why. */
int wt_ctl_decode(const unsigned char *frame, size_t len, wt_ctl_msg *m, char *why, size_t whylen);

/* A field's value; 0 when found (and of the right kind), -1 otherwise. A text
 * is copied NUL-terminated (cut to fit). */
int wt_ctl_get_int(const wt_ctl_msg *m, int tag, int64_t *v);
int wt_ctl_get_str(const wt_ctl_msg *m, int tag, char *buf, size_t len);
int64_t wt_ctl_int_or(const wt_ctl_msg *m, int tag, int64_t def);

/** \brief The proof an agent's HELLO carries: HMAC-SHA256, keyed by \p secret, of
 * "weft-ctl-hello", \p challenge, \p rank and \p host (each ended by a NUL), as
 * WT_CTL_PROOF_LEN hex digits and a NUL in \p out. */
void wt_ctl_proof(const char *secret, const char *challenge, int64_t rank, const char *host,
                  char out[WT_CTL_PROOF_LEN + 1]);

/** \brief The message type's name ("HELLO"), "?" when unknown. */
const char *wt_ctl_type_name(int type);

#endif /* WT_CTL_H */
