#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# An MPICH program under weftrun on 2 nodes of a virtual cluster (issue 33):
# weftrun starts it through MPICH's mpiexec.hydra, which reaches the nodes
# through weft-vcluster's rsh (HYDRA_LAUNCHER_EXEC, set by "weft-vcluster
# run"); "rank 0 of 2" and "rank 1 of 2" come from two nodes; ranks by slot
# and by node land where the plan says (each agent checks Hydra's local rank);
# a rank failing on vnode1 ends the job with its status, named, nothing left.
# Skipped without mpicc.mpich and mpiexec.hydra (Debian's mpich, libmpich-dev).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
command -v mpicc.mpich >/dev/null 2>&1 || skip "no mpicc.mpich (apt-get install mpich libmpich-dev)"
command -v mpiexec.hydra >/dev/null 2>&1 || skip "no mpiexec.hydra (apt-get install mpich)"
need_mpirun
unique_name
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
  char host[256];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  gethostname(host, sizeof(host));
  if (argc > 1 && r == atoi(argv[1])) { /* the failing rank */
    usleep(300000);
    exit(3);
  }
  if (argc > 1)
    sleep(30);
  printf("rank %d of %d on %s\n", r, n, host);
  MPI_Finalize();
  return 0;
}
C
mpicc.mpich -o "$hello" "$tmp/hello.c"
vc_up 2
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- "$weftrun" "$@"; }

set +e
vrun -H vnode0,vnode1 -np 2 "$hello" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc != 0 ] || [ "$(sort "$tmp/out")" != "$(printf 'rank 0 of 2 on vnode0\nrank 1 of 2 on vnode1')" ]; then
  echo "FAIL: weftrun -np 2 mpich_hello on 2 nodes: exit $rc"; cat "$tmp/out" "$tmp/err"; fail=1
else
  echo "ok: $(sort "$tmp/out" | tr '\n' ';')"
fi
nothing_left || fail=1

for by in slot node; do
  set +e
  vrun -H vnode0:2,vnode1:2 -np 4 --map-by $by "$hello" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  if [ $by = slot ]; then want='rank 0 of 4 on vnode0\nrank 1 of 4 on vnode0\nrank 2 of 4 on vnode1\nrank 3 of 4 on vnode1'
  else want='rank 0 of 4 on vnode0\nrank 1 of 4 on vnode1\nrank 2 of 4 on vnode0\nrank 3 of 4 on vnode1'; fi
  if [ $rc != 0 ] || [ "$(sort "$tmp/out")" != "$(printf "$want")" ]; then
    echo "FAIL: --map-by $by on 2 nodes: exit $rc"; cat "$tmp/out" "$tmp/err"; fail=1
  else
    echo "ok: --map-by $by"
  fi
  nothing_left || fail=1
done

set +e
vrun -H vnode0,vnode1 -np 2 "$hello" 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc != 3 ] || ! grep -q '^weftrun: job failed: rank 1 host vnode1 gpu none: exited with status 3 (exit 3)$' "$tmp/err"; then
  echo "FAIL: rank 1 on vnode1 exits 3: exit $rc"; cat "$tmp/err"; fail=1
else
  echo "ok: $(grep '^weftrun: job failed' "$tmp/err")"
fi
nothing_left || fail=1
exit $fail
