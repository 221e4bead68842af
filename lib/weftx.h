/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft's internal tier, as curl has curlx_: what weft's own tools (weftrun,
 * weft-rank, weft-topo, weft-bench) and tests share with the library but
 * programs do not get. Not installed; no ABI promise; prefix weftx_/WEFTX_.
 * The tools and tests link these parts statically (the libweft-*.la
 * convenience libraries); libweft.so keeps them hidden.
 *
 *   weftx/util.h   parsing, edit distance, JSON strings, the data directory, the clock
 *   weftx/topo.h   machine topology (hwloc): GPUs, NICs, NUMA, locality
 *   weftx/map.h    rank placement (the pure weftx_map_host: the GPU rule or Open MPI's
 *                  model) and the plan JSON
 *   weftx/ompi.h   Open MPI 4.1's own placement, modelled (what mpirun will do)
 *   weftx/hosts.h  -H lists, hostfiles, Slurm node lists, host names
 *   weftx/env.h    the per-rank environment, interfaces, MASTER_ADDR/PORT
 *   weftx/gcp.h    Google Cloud: metadata, presets, checks, preemption
 *   weftx/proc.h   child processes: find one, run one with a deadline
 *   weftx/page.h   the rank's call page libweft shares with its agent
 */
#ifndef WEFTX_H
#define WEFTX_H

#include <weft.h>
#include <weftx/util.h>
#include <weftx/topo.h>
#include <weftx/map.h>
#include <weftx/ompi.h>
#include <weftx/hosts.h>
#include <weftx/env.h>
#include <weftx/gcp.h>
#include <weftx/proc.h>
#include <weftx/page.h>
#include <weftx/mpi.h>

#endif /* WEFTX_H */
