#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# MPICH programs under weftrun (issue 33): never N singletons. An MPI hello
# built with mpicc.mpich runs through MPICH's mpiexec.hydra ("rank 0 of 2",
# "rank 1 of 2"), --dry-run shows Hydra's command; without Hydra (WEFT_HYDRA
# naming nothing) one line names the MPI and what to install, exit 70 as for
# a missing mpirun; --engine mpirun with it, and an Open MPI program with
# --engine hydra (or a script using an Open MPI mpi4py) are refused in one line
# (exit 2), and --check says so in its program column; a rank failing under
# Hydra ends the job as under mpirun (its exit status, the summary naming the
# rank, nothing left running), and so does --timeout; an Open MPI program
# under plain weftrun runs as before. Skipped without mpicc.mpich (Debian's
# mpich and libmpich-dev, which contrib/quickstart.sh installs beside Open MPI).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
command -v mpicc.mpich >/dev/null 2>&1 || skip "no mpicc.mpich (apt-get install mpich libmpich-dev)"
command -v mpiexec.hydra >/dev/null 2>&1 || skip "no mpiexec.hydra (apt-get install mpich)"
fail=0
hello=$tmp/$uniq-mpich_hello
cat >"$tmp/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
  int r, n;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc > 1 && r == atoi(argv[1])) { /* the failing rank */
    usleep(300000);
    exit(3);
  }
  if (argc > 1)
    sleep(30);
  printf("rank %d of %d\n", r, n);
  MPI_Finalize();
  return 0;
}
C
mpicc.mpich -o "$hello" "$tmp/hello.c"
mpicc.openmpi -o "$tmp/$uniq-ompi_hello" "$tmp/hello.c"

check() { # want-rc weftrun-args... ; stdout $tmp/out, stderr $tmp/err; $penv: VAR=VALUE for weftrun
  want=$1
  shift
  set +e
  timeout 60 env ${penv:-} "$weftrun" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  if [ "$rc" != "$want" ]; then
    echo "FAIL: weftrun $*: exit $rc, want $want; stdout:"
    cat "$tmp/out"
    echo "stderr:"
    cat "$tmp/err"
    fail=1
    return 1
  fi
  nothing_left || fail=1
}

# through Hydra, chosen for the program
if check 0 -np 2 "$hello"; then
  if [ "$(sort "$tmp/out")" != "$(printf 'rank 0 of 2\nrank 1 of 2')" ]; then
    echo "FAIL: weftrun -np 2 mpich_hello printed:"
    cat "$tmp/out" "$tmp/err"
    fail=1
  else
    echo "ok: weftrun -np 2 mpich_hello ran through Hydra"
  fi
fi
# the agents' variables are there, and Hydra's rank is weft's (a shell is no MPI
# program: --engine hydra asks for Hydra)
if check 0 --engine hydra -np 2 sh -c 'echo "$RANK $PMI_RANK $LOCAL_RANK $WORLD_SIZE"'; then
  [ "$(sort "$tmp/out")" = "$(printf '0 0 0 2\n1 1 1 2')" ] ||
    { echo "FAIL: rank variables under Hydra:"; cat "$tmp/out" "$tmp/err"; fail=1; }
fi
# --dry-run shows Hydra's command
if check 0 --dry-run -np 2 "$hello"; then
  grep -q "mpiexec.hydra -f .* -np 2 -bind-to none .*weft-rank .* -- $hello" "$tmp/out" ||
    { echo "FAIL: --dry-run shows no Hydra command:"; cat "$tmp/out"; fail=1; }
fi
# without Hydra: one line, naming the MPI and what to install; nothing ran
WEFT_HYDRA=$tmp/nosuch-hydra
export WEFT_HYDRA
if check 70 -np 2 "$hello"; then
  if [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q "built with MPICH (libmpich.so.12).*apt-get install mpich" "$tmp/err" ||
     [ -s "$tmp/out" ]; then
    echo "FAIL: no one-line refusal without Hydra:"
    cat "$tmp/out" "$tmp/err"
    fail=1
  else
    echo "ok: without Hydra: $(cat "$tmp/err")"
  fi
fi
unset WEFT_HYDRA
penv=PATH=/nonexistent
if check 70 -np 2 "$hello"; then
  grep -q "which is not on PATH; install it (apt-get install mpich)" "$tmp/err" ||
    { echo "FAIL: no refusal without Hydra on PATH:"; cat "$tmp/out" "$tmp/err"; fail=1; }
fi
penv=
# --engine hydra without Hydra: one line, exit 70
WEFT_HYDRA=$tmp/nosuch-hydra
export WEFT_HYDRA
if check 70 --engine hydra -np 2 true; then
  grep -q "^weftrun: mpiexec.hydra not found on PATH (WEFT_HYDRA is not executable); install MPICH's (apt-get install mpich)" "$tmp/err" ||
    { echo "FAIL: --engine hydra without Hydra:"; cat "$tmp/err"; fail=1; }
fi
unset WEFT_HYDRA
# an engine of the other MPI, either way
if check 2 --engine mpirun -np 2 "$hello"; then
  grep -q "singletons.*--engine hydra" "$tmp/err" || { echo "FAIL: --engine mpirun:"; cat "$tmp/err"; fail=1; }
fi
if check 2 --engine hydra -np 2 "$tmp/$uniq-ompi_hello"; then
  grep -q "built with Open MPI (libmpi.so.40).*--engine mpirun" "$tmp/err" ||
    { echo "FAIL: --engine hydra with Open MPI:"; cat "$tmp/err"; fail=1; }
fi
# --check: through Hydra all OK; through mpirun the program column says it
if check 0 --check -np 2 "$hello"; then
  grep -q "through mpiexec.hydra" "$tmp/out" || { echo "FAIL: --check not through Hydra:"; cat "$tmp/out"; fail=1; }
fi
if check 81 --check --engine mpirun -np 2 "$hello"; then
  grep -q "FAIL MPICH build" "$tmp/out" && grep -q "built with MPICH (libmpich.so.12), which mpirun would start as singletons" "$tmp/out" ||
    { echo "FAIL: --check --engine mpirun says no MPI mismatch:"; cat "$tmp/out"; fail=1; }
fi
# Open MPI's parameters mean nothing to Hydra: refused, not dropped
if check 2 --mca btl tcp,self -np 2 "$hello"; then
  grep -q "^weftrun: --mca btl: Open MPI's parameters mean nothing" "$tmp/err" ||
    { echo "FAIL: --mca under Hydra:"; cat "$tmp/err"; fail=1; }
fi
# an mpi4py built with Open MPI (Debian's python3-mpi4py), its script given to Hydra
if /usr/bin/python3 -c 'import mpi4py' 2>/dev/null &&
   check 2 --engine hydra -np 2 /usr/bin/python3 "$WEFT_TOPDIR/tests/launch/weftrun-mpi4py.py"; then
  grep -q "imports an mpi4py built with Open MPI (libmpi.so.40).*--engine mpirun" "$tmp/err" ||
    { echo "FAIL: --engine hydra with an Open MPI mpi4py:"; cat "$tmp/err"; fail=1; }
fi
# an Open MPI program as before
if check 0 -np 2 "$tmp/$uniq-ompi_hello"; then
  [ "$(sort "$tmp/out")" = "$(printf 'rank 0 of 2\nrank 1 of 2')" ] ||
    { echo "FAIL: Open MPI hello:"; cat "$tmp/out" "$tmp/err"; fail=1; }
fi
# a rank failing under Hydra ends the job, named, nothing left
if check 3 -np 3 --oversubscribe "$hello" 1; then
  if grep -q '^weftrun: job failed: rank 1 host .*: exited with status 3 (exit 3)$' "$tmp/err"; then
    echo "ok: $(grep '^weftrun: job failed' "$tmp/err")"
  else
    echo "FAIL: rank failure under Hydra not named:"
    cat "$tmp/err"
    fail=1
  fi
fi
# --timeout under Hydra: ended, named, nothing left
if check 124 -np 2 --timeout 2 "$hello" 9; then
  grep -q '^weftrun: job ended: --timeout 2 s expired; 2 of 2 ranks were still running (exit 124)$' "$tmp/err" ||
    { echo "FAIL: --timeout under Hydra:"; cat "$tmp/err"; fail=1; }
fi
exit $fail
