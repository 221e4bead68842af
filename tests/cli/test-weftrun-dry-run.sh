#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Golden plans: weftrun --dry-run --json for 2 hosts of each topology file
# (-H a,b --topology FILE), and one with a different topology per host.
# WEFT_UPDATE_GOLDEN=1 rewrites the expected files.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
golden="$WEFT_TOPDIR/tests/cli/weftrun-golden"
# hosts come from the command line below, not from the machine's setting
no_host_defaults
fail=0

check() { # name, weftrun args...
  name=$1
  shift
  if ! timeout 30 "$weftrun" --dry-run --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    echo "FAIL $name: weftrun $*: $(cat "$tmp/$name.err")"
    fail=1
    return
  fi
  if golden_check "$golden/$name.json" "$tmp/$name.json"; then
    echo "ok $name"
  else
    fail=1
  fi
}

for f in "$topos"/*.xml; do
  t=$(basename "$f" .xml)
  check "$t" -H a,b --topology "$f"
done
# hosts that differ: a3 and a2 side by side, explicit slots, rank-by node
check mixed -H a3,a2:4 --topology "a3=$topos/a3-highgpu-8g.xml" \
  --topology "a2=$topos/a2-highgpu-8g.xml" --rank-by node
check own-np -np 6 -H a,b --topology "$topos/a3-highgpu-8g.xml" --gpu-visibility own \
  -x NCCL_DEBUG=INFO
# hosts from a hostfile (Open MPI grammar) and from a Slurm allocation
printf '# two hosts\nnode01 slots=2\nnode02 slots=3 max_slots=4\n' >"$tmp/hosts"
check hostfile --hostfile "$tmp/hosts" --topology "$topos/a3-highgpu-8g.xml"
export SLURM_JOB_NODELIST='gpu[07-08]' SLURM_TASKS_PER_NODE='4(x2)'
check slurm --topology "$topos/a3-highgpu-8g.xml"
unset SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE
exit $fail
