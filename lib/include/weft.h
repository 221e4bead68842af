/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libweft: GPU- and NIC-aware placement and a job runtime for MPI and NCCL
 * programs across several machines.
 *
 * Error convention: every function that returns int returns 0 on success and
 * a negative WEFT_E* code from <weft/errors.h> on failure; functions that
 * return a pointer return NULL on failure. Strings returned by libweft belong
 * to libweft unless the function says "the caller frees".
 *
 * Topic headers:
 *   weft/errors.h  error codes          weft/log.h   WEFT_VERBOSE logging
 *   weft/core.h    versions, parsing     weft/topo.h  machine topology (hwloc)
 *   weft/map.h     rank placement        weft/hosts.h host lists
 *   weft/env.h     per-rank environment  weft/gcp.h   Google Cloud
 *   weft/rt.h      runtime: init, groups, mesh, collectives, buckets
 */
#ifndef WEFT_H
#define WEFT_H

#include <weft/common.h>
#include <weft/version.h>
#include <weft/errors.h>
#include <weft/log.h>
#include <weft/core.h>
#include <weft/topo.h>
#include <weft/map.h>
#include <weft/hosts.h>
#include <weft/env.h>
#include <weft/gcp.h>
#include <weft/rt.h>

#endif /* WEFT_H */
