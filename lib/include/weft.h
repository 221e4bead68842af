/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libweft: the job runtime that MPI and NCCL programs link: bootstrap across
 * VMs, parallel groups and meshes, collectives on host and device memory,
 * fusion buckets.
 *
 * Error convention: every function that returns int returns 0 on success and
 * a negative WEFT_E* code from <weft/errors.h> on failure; functions that
 * return a pointer return NULL on failure. Strings returned by libweft belong
 * to libweft unless the function says "the caller frees".
 *
 * Topic headers:
 *   weft/errors.h  error codes          weft/log.h   WEFT_VERBOSE logging
 *   weft/core.h    library version      weft/rt.h    runtime: init, groups,
 *                                                    mesh, collectives, buckets
 *
 * This header needs neither hwloc's nor CUDA's headers: handles are opaque and
 * streams are void pointers. Placement, topology, host lists and Google Cloud
 * support are weft's own tools' business (weftrun, weft-topo): they live in an
 * internal tier (lib/weftx.h, prefix weftx_) that is not installed and has no
 * ABI promise. libweft.so exports exactly the functions declared here.
 */
#ifndef WEFT_H
#define WEFT_H

#include <weft/common.h>
#include <weft/version.h>
#include <weft/errors.h>
#include <weft/log.h>
#include <weft/core.h>
#include <weft/rt.h>

#endif /* WEFT_H */
