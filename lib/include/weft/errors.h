/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error codes of libweft, from one table.
 *
 * Every int-returning function of libweft returns 0 on success and one of
 * these negative codes on failure. Codes are stable: append, never renumber.
 * weft_strerror() gives the sentence, weft_err_name() the symbol ("WEFT_EINVAL").
 */
#ifndef WEFT_ERRORS_H
#define WEFT_ERRORS_H

#include <weft/common.h>

/* XX(NAME, VALUE, MESSAGE) */
#define WEFT_ERRNO_MAP(XX)                                                                         \
  XX(INVAL, -1, "invalid argument")                                                                \
  XX(NOMEM, -2, "out of memory")                                                                   \
  XX(NOENT, -3, "no such file or object")                                                          \
  XX(IO, -4, "input/output error")                                                                 \
  XX(PARSE, -5, "malformed input")                                                                 \
  XX(RANGE, -6, "value out of range")                                                              \
  XX(NOTSUP, -7, "not supported by this build or machine")                                         \
  XX(NOGPU, -8, "no GPU where one is needed")                                                      \
  XX(NOCUDA, -9, "CUDA is not available")                                                          \
  XX(NONCCL, -10, "NCCL is not available")                                                         \
  XX(TOPO, -11, "topology could not be loaded")                                                    \
  XX(NOFIT, -12, "placement request cannot be met")                                                \
  XX(MPI, -13, "MPI call failed")                                                                  \
  XX(NCCL, -14, "NCCL call failed")                                                                \
  XX(CUDA, -15, "CUDA call failed")                                                                \
  XX(TIMEDOUT, -16, "operation timed out")                                                         \
  XX(HTTP, -17, "HTTP request failed")                                                             \
  XX(NOTGCE, -18, "not running on Google Compute Engine")                                          \
  XX(VERSION, -19, "library version mismatch")                                                     \
  XX(STATE, -20, "call not allowed in this state")                                                 \
  XX(OVERFLOW, -21, "count too large")                                                             \
  XX(DTYPE, -22, "data type and operation do not go together")                                     \
  XX(PEER, -23, "a peer rank failed or is unreachable")                                            \
  XX(NAME, -24, "invalid or unknown name")                                                         \
  XX(EXIST, -25, "already exists")                                                                 \
  XX(SYS, -26, "system call failed")                                                               \
  XX(NOCURL, -27, "built without libcurl")                                                         \
  XX(DISAGREE, -28, "ranks disagree on a setting")

typedef enum weft_errno {
#define WEFT__XX(name, value, msg) WEFT_E##name = (value),
  WEFT_ERRNO_MAP(WEFT__XX)
#undef WEFT__XX
    WEFT_ERRNO_LAST = -29
} weft_errno;

WEFT_BEGIN_DECLS

/** \brief The sentence for \p err ("invalid argument"); "success" for 0.
 * The string belongs to libweft; never NULL, also for unknown codes. */
WEFT_EXPORT const char *weft_strerror(int err);

/** \brief The symbol for \p err ("WEFT_EINVAL"); "WEFT_EUNKNOWN" for unknown codes. */
WEFT_EXPORT const char *weft_err_name(int err);

WEFT_END_DECLS

#endif /* WEFT_ERRORS_H */
