#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The failure matrix's cases marked q (failure-matrix.sh --quick, 34 of 43): a
# rank's exit, SIGSEGV, MPI_Abort and exit without finalizing; collective
# deadline and watchdog, weft_init's deadline, --timeout, also with ranks that
# ignore SIGTERM (named); SIGINT and SIGKILL of weftrun, SIGTERM and SIGKILL of
# mpirun (also with MPI ranks: their shared memory removed); a vnode killed, one
# gone silent, its Open MPI daemon killed, a link cut (with --host-timeout and
# without), an agent stopped, a rank's program stopped, a daemon a rank left
# running, an agent that never comes (--launch-timeout); a missing and a
# non-executable program, an unknown host, a bad hostfile and /dev/zero as one,
# too many ranks, an mpirun that runs nothing; floods of output, forged failure
# lines; each with its exit status, its time from the fault, its summary line
# and nothing left on any vnode. The other 9 run by hand (failure-matrix.sh says
# why next to each).
# Exit 77 when namespaces cannot be made here.
set -eu
exec "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/vcluster/failure-matrix.sh" --quick
