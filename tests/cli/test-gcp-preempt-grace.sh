#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --preempt-grace: a one-rank job on this host with a fake metadata
# server on loopback (GCE_METADATA_HOST); the program ignores SIGTERM. After
# the server announces instance/preempted TRUE the rank must be SIGKILLed
# once the grace has passed (not before, not much after) and weftrun must
# exit 79 (WEFT_EXIT_PREEMPTED). Bad values are refused with exit 2.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3 for the fake metadata server"
grep -q "define WEFT_HAVE_CURL 1" "$WEFT_BUILDDIR/config.h" || skip "built without libcurl"
# this host alone; a copy of sleep under a name unique to this test, so that only its processes are found
local_jobs
server=
job=
at_exit '[ -z "$server" ] || kill "$server" 2>/dev/null'
at_exit '[ -z "$job" ] || kill "$job" 2>/dev/null'
fail() { echo "FAIL: $1"; [ $# -lt 2 ] || cat "$2"; exit 1; }

# Bad values: one line, exit 2, nothing started.
for bad in -1 3601 abc ""; do
  set +e
  "$weftrun" --preempt-grace "$bad" true >"$tmp/bad.out" 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ $rc = 2 ] || fail "--preempt-grace '$bad': exit $rc, expected 2" "$tmp/bad.err"
  [ "$(wc -l <"$tmp/bad.err")" = 1 ] || fail "--preempt-grace '$bad': not one line" "$tmp/bad.err"
  grep -q "preempt-grace" "$tmp/bad.err" || fail "--preempt-grace '$bad': option not named" "$tmp/bad.err"
done
# Longer than a Spot VM's 30 s: accepted, with a warning.
"$weftrun" --preempt-grace 60 --dry-run true >"$tmp/long.out" 2>"$tmp/long.err" ||
  fail "--preempt-grace 60 --dry-run failed" "$tmp/long.err"
grep -q "warning: --preempt-grace 60: a Spot VM powers off 30 s after" "$tmp/long.err" ||
  fail "no warning for a grace over 30 s" "$tmp/long.err"

cat >"$tmp/tree.json" <<'JSON'
{"instance": {"machine-type": "projects/1/machineTypes/g2-standard-4", "zone": "projects/1/zones/us-east4-a",
  "hostname": "g2-0.c.test.internal", "preempted": "FALSE", "maintenance-event": "NONE",
  "network-interfaces": {}}}
JSON
/usr/bin/python3 "$WEFT_TOPDIR/tests/cli/gcp-fake-metadata.py" --data "$tmp/tree.json" \
  --port-file "$tmp/port" 2>"$tmp/server.log" &
server=$!
i=0
while [ ! -s "$tmp/port" ]; do
  i=$((i + 1))
  [ $i -lt 200 ] || fail "fake metadata server did not start" "$tmp/server.log"
  sleep 0.05
done
port=$(cat "$tmp/port")
export GCE_METADATA_HOST="127.0.0.1:$port"
control() {
  /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/control/set?path=%s&value=%s" % tuple(sys.argv[1:]), timeout=5).read()' "$port" "$1" "$2"
}

# grace: a job whose program ignores SIGTERM; prints the seconds from the notice to weftrun's exit
run_grace() {
  grace=$1
  control instance/preempted FALSE
  : >"$tmp/run"
  timeout 60 "$weftrun" -np 1 --oversubscribe --bind-to none --allow-run-as-root \
    --preempt-grace "$grace" -x GCE_METADATA_HOST \
    sh -c "trap '' TERM; echo ready; exec $tmp/$uniq-sleep 60" >"$tmp/run" 2>"$tmp/run.err" &
  job=$!
  i=0
  until grep -q ready "$tmp/run" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "the job did not start" "$tmp/run.err"
    sleep 0.05
  done
  sleep 0.5 # the watcher is polling by now
  t0=$(now)
  control instance/preempted TRUE
  set +e
  wait $job
  rc=$?
  set -e
  job=
  t1=$(now)
  [ $rc = 79 ] || fail "--preempt-grace $grace: weftrun exit $rc, expected 79" "$tmp/run.err"
  grep -q "GCE notice instance/preempted = TRUE" "$tmp/run.err" ||
    fail "--preempt-grace $grace: no notice line" "$tmp/run.err"
  ! pgrep -f "$uniq" >/dev/null || fail "--preempt-grace $grace: the program is still running"
  echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}

# The job's teardown after the kill takes its own time (Open MPI's): the grace is the
# difference between a job with --preempt-grace 3 and one with 0.
dt0=$(run_grace 0)
dt=$(run_grace 3)
awk -v d="$dt" -v z="$dt0" 'BEGIN { exit !(d >= 3 && d - z >= 2.5 && d - z < 8) }' ||
  fail "--preempt-grace 3: exit ${dt}s after the notice, ${dt0}s with 0: expected 3 s more" "$tmp/run.err"
echo "PASS: --preempt-grace 3: SIGKILL and exit 79 ${dt}s after the notice, --preempt-grace 0: ${dt0}s; bad values exit 2"
