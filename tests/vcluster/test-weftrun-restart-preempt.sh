#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --restarts after a Google Cloud preemption, on 3 vnodes each with its own
# fake metadata server (tests/cli/gcp-fake-metadata.py on the vnode's loopback): the
# notice on vnode1 gives its rank SIGTERM and the grace (the program writes its
# checkpoint marker then), the job ends 79 and restarts on vnode0 and vnode2, whose
# ranks see the marker in WEFT_CHECKPOINT_DIR, and ends 0. Exit 77 without namespaces,
# python3 or libcurl.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
need_root
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3 for the fake metadata server"
grep -q "define WEFT_HAVE_CURL 1" "$WEFT_BUILDDIR/config.h" || skip "weft is built without libcurl"
unique_name
vc_up 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
port=8089
pids=
at_exit 'for p in $pids; do kill "$p" 2>/dev/null; done'
for n in 0 1 2; do
  printf '{"instance": {"machine-type": "projects/1/machineTypes/n2-standard-4", "zone": "projects/1/zones/us-east4-a", "hostname": "vnode%d.c.test.internal", "preempted": "FALSE", "maintenance-event": "NONE", "network-interfaces": {}}}\n' $n >"$tmp/tree$n.json"
  "$vc" --prefix "$prefix" exec "vnode$n" /usr/bin/python3 "$WEFT_TOPDIR/tests/cli/gcp-fake-metadata.py" \
    --data "$tmp/tree$n.json" --port "$port" --port-file "$tmp/port$n" >"$tmp/server$n.log" 2>&1 &
  pids="$pids $!"
done
for n in 0 1 2; do
  i=0
  while [ ! -s "$tmp/port$n" ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || { cat "$tmp/server$n.log"; fail "fake metadata server on vnode$n did not start"; }
    sleep 0.1
  done
done
control() { on "$1" /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/control/set?path=%s&value=%s" % tuple(sys.argv[1:]), timeout=5).read()' "$port" "$2" "$3"; }

ck=$tmp/ck
mkdir "$ck"
prog=$tmp/$uniq-prog.sh
cat >"$prog" <<PROG
#!/bin/sh
echo "rank \$RANK of \$WORLD_SIZE attempt \$WEFT_RESTART_COUNT on \$(hostname) sees: \$(ls "\$WEFT_CHECKPOINT_DIR" | tr '\n' ' ')"
if [ "\$WEFT_RESTART_COUNT" = 0 ]; then
  trap 'touch "\$WEFT_CHECKPOINT_DIR/ckpt.rank\$RANK"; exit 0' TERM
  touch "\$WEFT_CHECKPOINT_DIR/started.rank\$RANK"
  "$tmp/$uniq-sleep" 60 &
  wait
fi
PROG
chmod +x "$prog"
timeout 120 "$vc" --prefix "$prefix" run -- "$weftrun" -q --restarts 1 --min-hosts 2 \
  --checkpoint-dir "$ck" --preempt-grace 3 -N 1 -x GCE_METADATA_HOST="127.0.0.1:$port" "$prog" \
  >"$tmp/out" 2>"$tmp/err" &
job=$!
i=0
while [ "$(ls "$ck" | grep -c '^started')" -lt 3 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
control vnode1 instance/preempted TRUE
rc=0
wait $job || rc=$?
bad=0
[ $rc -eq 0 ] || { echo "FAIL: exit $rc, not 0"; bad=1; }
grep -q '^weftrun: restart 1 of 1: vnode1 preempted (79); running again on 2 hosts (vnode0, vnode2), world size 2 (was 3); ' "$tmp/err" ||
  { echo "FAIL: no restart line for the preemption"; bad=1; }
[ -e "$ck/ckpt.rank1" ] || { echo "FAIL: the preempted rank did not write its checkpoint in its grace"; bad=1; }
[ "$(grep -c '^rank [01] of 2 attempt 1 on vnode[02] sees: .*ckpt.rank1' "$tmp/out")" -eq 2 ] ||
  { echo "FAIL: the restart's ranks do not see the checkpoint"; bad=1; }
[ $bad -eq 0 ] || { cat "$tmp/out" "$tmp/err"; exit 1; }
grep "^weftrun: restart" "$tmp/err"
nothing_left
