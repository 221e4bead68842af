#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Failures end the whole job quickly, with weftrun's documented exit status,
# one summary line naming the rank, its host and GPU, and nothing left running:
# a rank exits 3; a rank is killed by SIGKILL; --timeout; SIGTERM to weftrun;
# a program that does not exist.
set -eu
. "$WEFT_TOPDIR/tests/launch/weftrun-lib.sh"
fail=0
s="$tmp/$uniq-sleep"

run() { # expected-code max-seconds summary-pattern weftrun-args...
  want=$1 max=$2 pattern=$3
  shift 3
  t0=$(now)
  set +e
  timeout 60 "$weftrun" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  dt=$(elapsed "$t0" "$(now)")
  if [ "$rc" != "$want" ] || ! grep -q -e "$pattern" "$tmp/err" || [ "$dt" -gt "$max" ]; then
    echo "FAIL: weftrun $*: exit $rc (want $want) after ${dt}s (max $max); stderr:"
    cat "$tmp/err"
    fail=1
  else
    echo "ok ($rc, ${dt}s): $(grep -e "$pattern" "$tmp/err")"
  fi
  nothing_left || fail=1
}

run 3 15 '^weftrun: job failed: rank 2 host .* gpu none: exited with status 3 (exit 3)$' \
  -np 4 --oversubscribe sh -c "if [ \$RANK = 2 ]; then $s 0.5; exit 3; fi; exec $s 30"
run 137 15 '^weftrun: job failed: rank 1 host .* gpu none: killed by signal 9 (Killed) (exit 137)$' \
  -np 3 --oversubscribe sh -c "if [ \$RANK = 1 ]; then $s 0.5; kill -9 \$\$; fi; exec $s 30"
run 124 16 '^weftrun: job ended: --timeout 2 s expired (exit 124)$' \
  -np 2 --oversubscribe --timeout 2 "$s" 30
run 127 15 "^weftrun: job failed: rank [01] host .*: cannot run '$tmp/$uniq-nosuch'" \
  -np 2 --oversubscribe "$tmp/$uniq-nosuch"
# a GPU rank is named with its GPU (placement from a topology file)
run 3 15 '^weftrun: job failed: rank 1 host .* gpu [0-9] (0000:[0-9a-f:.]*): exited with status 3' \
  -np 2 --oversubscribe --topology "$WEFT_TOPDIR/share/weft/topologies/a3-highgpu-8g.xml" \
  sh -c "if [ \$RANK = 1 ]; then exit 3; fi; exec $s 30"

# SIGTERM to weftrun ends every rank
t0=$(now)
timeout 60 "$weftrun" -np 3 --oversubscribe "$s" 30 >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ "$(pgrep -f "$s 30" | wc -l)" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
dt=$(elapsed "$t0" "$(now)")
if [ "$rc" != 143 ] || [ "$dt" -gt 20 ] || ! grep -q 'job ended by signal 15 (exit 143)' "$tmp/err"; then
  echo "FAIL: SIGTERM: exit $rc after ${dt}s:"; cat "$tmp/err"; fail=1
else
  echo "ok (143, ${dt}s): SIGTERM"
fi
nothing_left || fail=1
exit $fail
