# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the runtime's MPI tests: run PROGRAM on K ranks with a bound on time.
bin=${WEFT_BUILDDIR:?run through make check}/tests/mpi
rt_mpirun() {
  np=$1
  shift
  echo "# mpirun -np $np $*"
  timeout 60 mpirun --oversubscribe --bind-to none -np "$np" "$@"
}
