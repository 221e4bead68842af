#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Host discovery for weftrun --host-discovery inside a Slurm allocation: the
# nodes the job holds now, one "NODE slots=N" line each (the hostfile
# grammar). In an allocation made with --no-kill a failed node leaves the job
# and is left out here; SLURM_JOB_NODELIST, fixed when the job started, still
# names it, so the list is asked of slurmctld (scontrol show job), and nodes
# that Slurm marks down, drained, failed or not responding are left out.
#
#   slurm.sh [--slots N]
#
# Slots per node: --slots, else WEFT_DISCOVERY_SLOTS, else SLURM_NTASKS_PER_NODE,
# else the node's count in SLURM_TASKS_PER_NODE ("2(x3),1"). Exit 0 with the
# list, or 1 with one line on stderr outside a job, when scontrol is missing or
# fails, or when no slot count is known.
set -u
prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }
slots=${WEFT_DISCOVERY_SLOTS-}
while [ $# -gt 0 ]; do
  case $1 in
    --slots) [ $# -ge 2 ] || die "--slots needs a value"; slots=$2; shift 2 ;;
    --slots=*) slots=${1#--slots=}; shift ;;
    -h | --help) sed -n '3,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument '$1'; see $prog --help" ;;
  esac
done
[ -n "$slots" ] || slots=${SLURM_NTASKS_PER_NODE-}
case $slots in
  '' | *[!0-9]* | 0*)
    [ -z "$slots" ] || die "slots '$slots' is not a whole number from 1 up"
    [ -n "${SLURM_TASKS_PER_NODE-}" ] ||
      die "how many slots per node? give --slots N, or allocate with --ntasks-per-node" ;;
esac
[ -n "${SLURM_JOB_ID-}" ] || die "SLURM_JOB_ID is not set: run inside an allocation (salloc, sbatch)"
command -v scontrol >/dev/null 2>&1 || die "scontrol is not on PATH"

err=$(mktemp) || die "cannot make a temporary file"
trap 'rm -f "$err"' EXIT
job=$(scontrol show job -o "$SLURM_JOB_ID" 2>"$err") ||
  die "scontrol show job $SLURM_JOB_ID failed: $(tr '\n' ' ' <"$err")"
list=$(printf '%s\n' "$job" | tr ' ' '\n' | sed -n 's/^NodeList=//p' | head -n 1)
case $list in
  '' | '(null)') die "job $SLURM_JOB_ID holds no node now (scontrol show job: no NodeList)" ;;
esac
nodes=$(scontrol show hostnames "$list" 2>"$err") ||
  die "scontrol show hostnames $list failed: $(tr '\n' ' ' <"$err")"
# One scontrol call for the states of all the job's nodes: "NodeName=n ... State=IDLE+DRAIN ...".
states=$(scontrol show node -o "$list" 2>"$err") ||
  die "scontrol show node $list failed: $(tr '\n' ' ' <"$err")"
# The original list, in the order SLURM_TASKS_PER_NODE counts it.
orig=
if [ -z "$slots" ]; then
  orig=$(scontrol show hostnames "${SLURM_JOB_NODELIST:?}" 2>"$err") ||
    die "scontrol show hostnames $SLURM_JOB_NODELIST failed: $(tr '\n' ' ' <"$err")"
fi
{
  printf '%s\n' "$states" | sed 's/^/S /'
  printf '%s\n' "$orig" | sed 's/^/O /'
  printf '%s\n' "$nodes" | sed 's/^/N /'
} | awk -v slots="$slots" -v tpn="${SLURM_TASKS_PER_NODE-}" -v prog="$prog" '
  function fail(msg) { printf "%s: %s\n", prog, msg > "/dev/stderr"; bad = 1; exit 1 }
  BEGIN {
    # "2(x3),1" -> 2 2 2 1
    n = split(tpn, part, ",")
    for (i = 1; i <= n; i++) {
      c = part[i]; r = 1
      if (c ~ /^[0-9]+\(x[0-9]+\)$/) { r = c; sub(/^[0-9]+\(x/, "", r); sub(/\)$/, "", r); sub(/\(.*/, "", c) }
      if (c !~ /^[1-9][0-9]*$/) { if (slots == "") fail("cannot read SLURM_TASKS_PER_NODE=" tpn); continue }
      for (k = 0; k < r; k++) count[++ncount] = c
    }
  }
  $1 == "S" {
    name = ""; st = ""
    for (i = 2; i <= NF; i++) {
      if ($i ~ /^NodeName=/) name = substr($i, 10)
      if ($i ~ /^State=/) st = substr($i, 7)
    }
    if (name != "") state[name] = st
    next
  }
  $1 == "O" && NF == 2 { at[$2] = ++norig; next }
  $1 == "N" && NF == 2 {
    node = $2
    if (!(node in state)) fail("scontrol show node says nothing of " node)
    if (state[node] ~ /DOWN|DRAIN|FAIL|NOT_RESPONDING|POWER/) next
    s = slots
    if (s == "") {
      if (!(node in at) || !(at[node] in count)) fail("no task count for " node " in SLURM_TASKS_PER_NODE=" tpn "; give --slots N")
      s = count[at[node]]
    }
    print node " slots=" s
  }
  END { exit bad }'
