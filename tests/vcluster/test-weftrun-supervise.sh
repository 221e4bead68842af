#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The quick cases of the failure matrix (failure-matrix.sh --quick): rank exit
# and signal, MPI_Abort, the collective watchdog, --timeout, SIGINT and SIGKILL
# of weftrun, SIGKILL of mpirun, a vnode killed, its Open MPI daemon killed, a link cut, an agent that never
# comes (--launch-timeout), a missing program,
# an unknown host, forged failure lines; each with its exit status, its time
# from the fault, its summary line and nothing left on any vnode.
# Exit 77 when namespaces cannot be made here.
set -eu
exec "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/vcluster/failure-matrix.sh" --quick
