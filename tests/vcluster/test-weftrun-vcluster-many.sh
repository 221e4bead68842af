#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A launch on more than 64 hosts: 66 vnodes, -N 1 with --topology FILE (which
# once became one --topology per host for every rank, and weft-rank took 64).
# Every rank must run on its own vnode with NODE_RANK = its index, weftrun's
# job directory must be gone afterwards, and nothing left running. About 20 s.
# Exit 77 when namespaces cannot be made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-vc-lib.sh"
n=66
vc_up $n --topology "$topos/a3-highgpu-8g.xml"
cat >"$tmp/$uniq-where" <<'EOS'
#!/bin/sh
echo "R $RANK $(hostname) $NODE_RANK $LOCAL_RANK $WORLD_SIZE ${WEFT_GPU:-none}"
EOS
chmod +x "$tmp/$uniq-where"
mkdir "$tmp/t"
t0=$(date +%s)
if TMPDIR="$tmp/t" timeout 240 "$vc" --prefix "$prefix" run -- "$weftrun" -N 1 \
     --topology "$topos/a3-highgpu-8g.xml" "$tmp/$uniq-where" >"$tmp/out" 2>"$tmp/err"; then
  dt=$(($(date +%s) - t0))
  if awk -v n=$n '/^R / { seen[$2]++; k++
         if ($3 != "vnode" $2 || $4 != $2 || $5 != 0 || $6 != n || $7 != 0) { print "bad: " $0; bad = 1 } }
       END { for (r = 0; r < n; r++) if (seen[r] != 1) { print "rank " r " ran " seen[r] + 0 " times"; bad = 1 }
             exit bad || k != n }' "$tmp/out"; then
    echo "ok $n ranks on $n vnodes, each on its own, in ${dt}s"
  else
    echo "FAIL: ranks over $n vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
else
  echo "FAIL: weftrun on $n vnodes:"; cat "$tmp/out" "$tmp/err"; fail=1
fi
[ -z "$(ls -A "$tmp/t")" ] || { echo "FAIL: left in TMPDIR: $(ls -A "$tmp/t")"; fail=1; }
nothing_left || fail=1
exit $fail
