#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The model-parallel examples through weftrun on a virtual cluster of 4
# nodes, one rank on each (so every collective crosses "hosts": MPI over TCP,
# no shared memory): tp_mlp on tp=4, pp_1f1b with its 4 stages on 4 nodes, moe
# on ep=2 x dp=2 (all-to-all across nodes); each must equal its model on one
# rank. Exits 77 where weft-vcluster cannot make namespaces.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
examples=$WEFT_BUILDDIR/examples
for prog in tp_mlp pp_1f1b moe; do
  [ -x "$examples/$prog" ] || make -C "$WEFT_BUILDDIR/examples" $prog >/dev/null
done
vc_up 4
fail=0
for prog in tp_mlp pp_1f1b moe; do
  if timeout 120 "$vc" --prefix "$prefix" run -- "$weftrun" -N 1 --bind-to none \
      -x WEFT_VERBOSE=rt "$examples/$prog" >"$tmp/$prog" 2>"$tmp/$prog.err" &&
     grep -q "^$prog: OK$" "$tmp/$prog"; then
    # one rank per vnode, each a host of its own
    hosts=$(grep -c 'rt: rank 0/4 local 0/1 host 0/4\|rt: rank [1-3]/4 local 0/1 host [1-3]/4' \
      "$tmp/$prog.err" || true)
    if [ "$hosts" != 4 ]; then
      echo "FAIL: $prog: not 4 ranks on 4 hosts:"; grep 'local' "$tmp/$prog.err"; fail=1
    else
      echo "ok: $prog on 4 vnodes through weftrun: $(grep -m1 "$prog: [0-9]" "$tmp/$prog")"
    fi
  else
    echo "FAIL: $prog on 4 vnodes through weftrun:"; cat "$tmp/$prog" "$tmp/$prog.err"; fail=1
  fi
done
nothing_left || fail=1
[ $fail -eq 0 ] || exit 1
echo "PASS: tp_mlp, pp_1f1b and moe across 4 vnodes equal their models on one rank"
