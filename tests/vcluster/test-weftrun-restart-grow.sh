#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --restarts after a preemption, then growth back (weftrun(1) RESTARTS): hosts
# from --host-discovery with share/weft/discovery/file.sh on a file the test edits as
# an operator would (a new file renamed over the old). A fake metadata server per vnode
# (tests/cli/gcp-fake-metadata.py). The job starts on vnode0-3 (4 hosts, --min-hosts 4);
# the notice on vnode1 gives its rank SIGTERM and the grace (it writes its checkpoint
# marker then); the file then lists vnode0, vnode2 and vnode3 only, so the restart
# waits for a 4th host; vnode4, a "recreated VM" (started with the cluster, killed
# before the job, brought up again now: vnode1 itself is in its cooldown), is added to
# the file, and the job runs again on 4 hosts, world size 4, whose ranks see the
# marker, and ends 0. Exit 77 without namespaces, python3 or libcurl.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
need_root
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3 for the fake metadata server"
grep -q "define WEFT_HAVE_CURL 1" "$WEFT_BUILDDIR/config.h" || skip "weft is built without libcurl"
unique_name
# 5 vnodes, so that every vnode's /etc/hosts names vnode4; vnode4 is down until it is
# "recreated"
vc_up 5
"$vc" --prefix "$prefix" kill vnode4 >/dev/null 2>&1 || fail "cannot kill vnode4"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
port=8089
pids=
at_exit 'for p in $pids; do kill "$p" 2>/dev/null; done'
server() { # N: the fake metadata server on vnodeN, running once this returns
  printf '{"instance": {"machine-type": "projects/1/machineTypes/n2-standard-4", "zone": "projects/1/zones/us-east4-a", "hostname": "vnode%d.c.test.internal", "preempted": "FALSE", "maintenance-event": "NONE", "network-interfaces": {}}}\n' "$1" >"$tmp/tree$1.json"
  rm -f "$tmp/port$1"
  "$vc" --prefix "$prefix" exec "vnode$1" /usr/bin/python3 "$WEFT_TOPDIR/tests/cli/gcp-fake-metadata.py" \
    --data "$tmp/tree$1.json" --port "$port" --port-file "$tmp/port$1" >"$tmp/server$1.log" 2>&1 &
  pids="$pids $!"
  _i=0
  while [ ! -s "$tmp/port$1" ]; do
    _i=$((_i + 1))
    [ $_i -lt 300 ] || { cat "$tmp/server$1.log"; fail "fake metadata server on vnode$1 did not start"; }
    sleep 0.1
  done
}
for n in 0 1 2 3; do server $n; done
control() { on "$1" /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/control/set?path=%s&value=%s" % tuple(sys.argv[1:]), timeout=5).read()' "$port" "$2" "$3"; }
# the operator's host file: written whole, then renamed over the last one
hosts=$tmp/hosts
edit() { for h in "$@"; do echo "$h slots=1"; done >"$hosts.new" && mv "$hosts.new" "$hosts"; }
edit vnode0 vnode1 vnode2 vnode3
waitfor() { # SECONDS WHAT CONDITION...: polls CONDITION every 0.1 s
  _n=$(($1 * 10)) _what=$2 _i=0
  shift 2
  until "$@"; do
    _i=$((_i + 1))
    [ $_i -lt $_n ] || { cat "$tmp/out" "$tmp/err"; fail "no $_what within $((_n / 10)) s"; }
    sleep 0.1
  done
}

ck=$tmp/ck
mkdir "$ck"
prog=$tmp/$uniq-prog.sh
cat >"$prog" <<PROG
#!/bin/sh
echo "rank \$RANK of \$WORLD_SIZE attempt \$WEFT_RESTART_COUNT on \$(hostname) sees: \$(ls "\$WEFT_CHECKPOINT_DIR" | tr '\n' ' ')"
if [ "\$WEFT_RESTART_COUNT" = 0 ]; then
  trap 'touch "\$WEFT_CHECKPOINT_DIR/ckpt.rank\$RANK"; exit 0' TERM
  touch "\$WEFT_CHECKPOINT_DIR/started.rank\$RANK"
  "$tmp/$uniq-sleep" 90 &
  wait
fi
PROG
chmod +x "$prog"
t0=$(now)
timeout 150 "$vc" --prefix "$prefix" run -- "$weftrun" -q --restarts 1 --min-hosts 4 --restart-wait 100 \
  --host-discovery "$WEFT_TOPDIR/share/weft/discovery/file.sh $hosts" \
  --checkpoint-dir "$ck" --preempt-grace 3 -N 1 -x GCE_METADATA_HOST="127.0.0.1:$port" "$prog" \
  >"$tmp/out" 2>"$tmp/err" &
job=$!
started() { [ "$(ls "$ck" | grep -c '^started')" -ge 4 ]; }
waitfor 60 "4 ranks started" started
sleep 1
# the notice for vnode1; the group will recreate a VM, not yet there
edit vnode0 vnode2 vnode3
control vnode1 instance/preempted TRUE
waiting() { grep -q '^weftrun: 3 hosts available, --min-hosts is 4; waiting up to 100 s for more' "$tmp/err"; }
waitfor 60 "wait for a 4th host" waiting
# the recreated VM: up, its metadata server running, then in the file
"$vc" --prefix "$prefix" up 5 >/dev/null 2>"$tmp/up.err" || { cat "$tmp/up.err"; fail "vnode4 does not come up"; }
server 4
edit vnode0 vnode2 vnode3 vnode4
rc=0
wait $job || rc=$?
t1=$(now)
bad=0
[ $rc -eq 0 ] || { echo "FAIL: exit $rc, not 0"; bad=1; }
grep -q '^weftrun: restart 1 of 1: vnode1 preempted (79); running again on 4 hosts (vnode0, vnode2, vnode3, vnode4), world size 4; the job was down [0-9.]* s$' "$tmp/err" ||
  { echo "FAIL: no restart line for the preemption and the growth back to 4 hosts"; bad=1; }
[ -e "$ck/ckpt.rank1" ] || { echo "FAIL: the preempted rank did not write its checkpoint in its grace"; bad=1; }
[ "$(grep -c '^rank [0-3] of 4 attempt 1 on vnode[0234] sees: .*ckpt.rank1' "$tmp/out")" -eq 4 ] ||
  { echo "FAIL: the restart's 4 ranks do not see the checkpoint"; bad=1; }
grep -q '^rank [0-3] of 4 attempt 1 on vnode4 ' "$tmp/out" || { echo "FAIL: no rank on the recreated vnode4"; bad=1; }
! grep -q '^rank [0-3] of 4 attempt 1 on vnode1 ' "$tmp/out" || { echo "FAIL: a rank on the preempted vnode1"; bad=1; }
[ $bad -eq 0 ] || { cat "$tmp/out" "$tmp/err"; exit 1; }
grep "^weftrun: " "$tmp/err"
echo "# the whole job: $(elapsed "$t0" "$t1") s"
nothing_left
