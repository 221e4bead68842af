#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Launch overhead (a measurement, not a test): mean wall time of RUNS short
# jobs under plain mpirun and under weftrun with the same placement (ranks on
# this host, Open MPI's binding off), as a ratio.
#   weftrun-overhead.sh NP RUNS WEFTRUN [PROGRAM ARGS...]   (default program /bin/true)
# Over a virtual cluster, one rank per vnode (-H vnode0:1,...):
#   weft-vcluster up 4; weft-vcluster run -- weftrun-overhead.sh 4 10 WEFTRUN --vnodes
set -eu
np=$1 runs=$2 w=$3
shift 3
hosts="$(hostname):$np"
if [ "${1:-}" = --vnodes ]; then
  shift
  hosts=$(i=0; while [ $i -lt "$np" ]; do printf '%svnode%d:1' "$([ $i = 0 ] || echo ,)" $i; i=$((i + 1)); done)
fi
[ $# -gt 0 ] || set -- /bin/true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tm=0 tw=0 i=0
while [ $i -lt "$runs" ]; do
  a=$(date +%s.%N); mpirun -np "$np" -H "$hosts" --map-by slot --bind-to none "$@" >/dev/null 2>&1
  b=$(date +%s.%N); "$w" -np "$np" -H "$hosts" --bind-to none "$@" >/dev/null 2>&1
  c=$(date +%s.%N)
  tm=$(echo "$tm + $b - $a" | bc) tw=$(echo "$tw + $c - $b" | bc) i=$((i + 1))
done
echo "np=$np runs=$runs hosts=$hosts [$*]: mpirun $(echo "scale=3; $tm / $runs" | bc) s," \
     "weftrun $(echo "scale=3; $tw / $runs" | bc) s, ratio $(echo "scale=3; $tw / $tm" | bc)"
