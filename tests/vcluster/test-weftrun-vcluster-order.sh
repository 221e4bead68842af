#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Ranks land where the plan puts them even when the launching host is not the
# first host: Open MPI 4.1 maps mpirun's own host first whatever the -H order,
# so weftrun must then name every rank's host (its sequential mapper). Each
# rank's hostname, NODE_RANK and GPU must follow the plan (-H vnode1,vnode0
# from vnode0: ranks 0-1 on vnode1), by slot and by node.
# Exit 77 when namespaces cannot be made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-vc-lib.sh"
up
cat >"$tmp/$uniq-where" <<'EOS'
#!/bin/sh
echo "R $RANK $(hostname) $NODE_RANK $LOCAL_RANK ${WEFT_GPU:-none}"
EOS
chmod +x "$tmp/$uniq-where"

check() { # what, expected "rank host node_rank local_rank gpu" lines, output
  if ! grep '^R ' "$3" | sort -n -k2 | cut -d' ' -f2- | diff "$2" - >"$tmp/diff"; then
    echo "FAIL: $1: ranks not where the plan puts them:"; cat "$tmp/diff" "$3"; fail=1
  else
    echo "ok $1"
  fi
}

# vnode1 is a2-highgpu-8g, vnode0 a3-highgpu-8g: 2 ranks of 8 GPUs go one per socket (GPU 0, 4).
printf '%s\n' "0 vnode1 0 0 0" "1 vnode1 0 1 4" "2 vnode0 1 0 0" "3 vnode0 1 1 4" >"$tmp/want-slot"
if vrun -H vnode1:2,vnode0:2 -np 4 "$tmp/$uniq-where" >"$tmp/out" 2>"$tmp/err"; then
  check "-H vnode1:2,vnode0:2 from vnode0" "$tmp/want-slot" "$tmp/out"
else
  echo "FAIL: weftrun -H vnode1:2,vnode0:2:"; cat "$tmp/out" "$tmp/err"; fail=1
fi

printf '%s\n' "0 vnode1 0 0 0" "1 vnode0 1 0 0" "2 vnode1 0 1 4" "3 vnode0 1 1 4" >"$tmp/want-node"
if vrun -H vnode1:2,vnode0:2 -np 4 --rank-by node "$tmp/$uniq-where" >"$tmp/out" 2>"$tmp/err"; then
  check "--rank-by node from vnode0" "$tmp/want-node" "$tmp/out"
else
  echo "FAIL: weftrun --rank-by node:"; cat "$tmp/out" "$tmp/err"; fail=1
fi

# the launching host first: the plain hostfile (host slots=count, no per-rank list) is kept
vrun -H vnode0:2,vnode1:2 -np 4 --dry-run -v true >"$tmp/dry" 2>&1 || true
grep -q -- '--hostfile [^ ]*/hostfile --map-by slot' "$tmp/dry" &&
  grep -q '^# hostfile: vnode0 slots=2$' "$tmp/dry" && grep -q '^# hostfile: vnode1 slots=2$' "$tmp/dry" ||
  { echo "FAIL: launching host first should keep the hostfile of host slots=count:"; cat "$tmp/dry"; fail=1; }

nothing_left || fail=1
exit $fail
