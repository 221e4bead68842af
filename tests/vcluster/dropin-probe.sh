#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The rank program of the drop-in corpus (dropin-compare.py): one record per
# rank in DIR/rank-R (where it ran, as what, bound where, with which environment)
# and one line of output on each stream. Usage: dropin-probe.sh DIR [NAME [EXIT]]:
# NAME tells the programs of an MPMD line apart; rank 1 exits EXIT (default 0).
dir=$1
name=${2:-a}
code=${3:-0}
r=${OMPI_COMM_WORLD_RANK:-x}
{
  echo "rank=$r size=${OMPI_COMM_WORLD_SIZE:-} local=${OMPI_COMM_WORLD_LOCAL_RANK:-}" \
       "lsize=${OMPI_COMM_WORLD_LOCAL_SIZE:-} nrank=${OMPI_COMM_WORLD_NODE_RANK:-}" \
       "app=$name host=$(hostname) cwd=$(pwd)"
  echo "cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
  echo "args=$*"
  env | LC_ALL=C sort | sed 's/^/env /'
} >"$dir/rank-$r.tmp" && mv "$dir/rank-$r.tmp" "$dir/rank-$r"
echo "out $name rank $r"
echo "err $name rank $r" >&2
[ "$r" = 1 ] && exit "$code"
exit 0
