#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --restarts on 4 vnodes (weftrun(1) RESTARTS): a vnode killed mid-run, the
# job restarts on the other 3 with WEFT_RESTART_COUNT, TORCHELASTIC_*, WEFT_PREV_WORLD_SIZE
# and the same WEFT_CHECKPOINT_DIR, and ends 0 (the time from the kill to the ranks
# running again is printed); a discovery command that hangs, fails, prints nothing or
# garbage is refused within its deadline; a program that always fails under
# --restart-on any stops after N restarts with a backoff; weftrun SIGKILLed while it
# waits for --min-hosts leaves nothing behind. Exit 77 without namespaces.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
vc_up 4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
vrun() { timeout 120 "$vc" --prefix "$prefix" run -- "$weftrun" -q "$@"; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# a rank: its attempt in a line and a marker in the checkpoint directory; the first
# attempt runs until its vnode dies, the next ones end after 2 s
prog=$tmp/$uniq-prog.sh
cat >"$prog" <<PROG
#!/bin/sh
echo "rank \$RANK of \$WORLD_SIZE attempt \$WEFT_RESTART_COUNT/\$WEFT_MAX_RESTARTS torch \$TORCHELASTIC_RESTART_COUNT/\$TORCHELASTIC_MAX_RESTARTS prev \${WEFT_PREV_WORLD_SIZE:-none} at \$(date +%s.%N)"
touch "\$WEFT_CHECKPOINT_DIR/attempt\$WEFT_RESTART_COUNT.rank\$RANK"
[ "\$WEFT_RESTART_COUNT" = 0 ] && exec "$tmp/$uniq-sleep" 60
"$tmp/$uniq-sleep" 2
PROG
chmod +x "$prog"

# 1. a vnode killed once the 4 ranks run (after RUN_S: a job that ran that long is
#    restarted without a backoff)
ck=$tmp/ck
mkdir "$ck"
(
  i=0
  while [ "$(ls "$ck" | grep -c '^attempt0')" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  sleep "${RUN_S:-11}"
  date +%s.%N >"$tmp/killed"
  "$vc" --prefix "$prefix" kill vnode2 >/dev/null 2>&1
) &
rc=0
vrun --restarts 2 --min-hosts 2 --checkpoint-dir "$ck" -N 1 "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
wait
[ $rc -eq 0 ] || bad "a vnode killed: exit $rc, not 0"
grep -q '^weftrun: restart 1 of 2: vnode2 lost (75); running again on 3 hosts (vnode0, vnode1, vnode3), world size 3 (was 4); the job was down [0-9.]* s$' "$tmp/err" ||
  bad "no restart line"
[ "$(grep -c '^rank [0-2] of 3 attempt 1/2 torch 1/2 prev 4 ' "$tmp/out")" -eq 3 ] || bad "the restart's ranks did not get the variables"
[ "$(grep -c '^rank [0-3] of 4 attempt 0/2 torch 0/2 prev none ' "$tmp/out")" -eq 4 ] || bad "the first attempt's ranks did not get the variables"
[ "$(ls "$ck" | grep -c '^attempt1')" -eq 3 ] || bad "the restart's markers are not in the same checkpoint directory"
grep -q '^weftrun: attempt 2 of 2: 3 ranks on 3 hosts, [0-9.]* s, exit 0$' "$tmp/err" || bad "no closing list"
if [ $fail -eq 0 ]; then
  started=$(sed -n 's/^rank .* attempt 1\/2 .* at \([0-9.]*\)$/\1/p' "$tmp/out" | sort -n | tail -n 1)
  awk -v k="$(cat "$tmp/killed")" -v s="$started" 'BEGIN { printf "# from the kill to the last rank running again: %.2f s\n", s - k }'
else
  cat "$tmp/out" "$tmp/err"
fi
"$vc" --prefix "$prefix" up 4 >/dev/null 2>&1 || fail "vnode2 does not come back"

# 2. discovery commands that hang, fail, print nothing or garbage: one line each, within
#    the deadline, nothing started
disc()
{
  want=$1 line=$2
  shift 2
  t0=$(now)
  rc=0
  vrun --host-discovery-timeout 2 "$@" "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
  t1=$(now)
  [ $rc -eq "$want" ] || bad "$*: exit $rc, not $want"
  grep -q "$line" "$tmp/err" || { bad "$*: no line '$line'"; cat "$tmp/err"; }
  [ "$(elapsed "$t0" "$t1")" -le 6 ] || bad "$*: took $(elapsed "$t0" "$t1") s"
  [ ! -s "$tmp/out" ] || bad "$*: the program ran"
}
disc 65 "did not end within 2 s (--host-discovery-timeout); it was killed" --host-discovery "$tmp/$uniq-sleep 100"
disc 65 "failed (exit 3)" --host-discovery 'echo vnode0 slots=1; exit 3'
disc 65 "printed no host" --host-discovery 'echo "# none now"'
disc 65 "printed what is not a host list: output:2: " --host-discovery 'printf "vnode0 slots=1\nvnode1 slots=two\n"'
nothing_left || fail=1

# 3. a restart storm: a program that always fails, --restart-on any: 3 attempts, backoffs
#    of 1 and 2 s, the last attempt's exit status
t0=$(now)
rc=0
vrun --restarts 2 --restart-on any -np 2 sh -c 'exit 5' >"$tmp/out" 2>"$tmp/err" || rc=$?
t1=$(now)
[ $rc -eq 5 ] || bad "storm: exit $rc, not 5"
grep -q '^weftrun: all 2 restarts used; exit 5, the last attempt.s$' "$tmp/err" || bad "storm: restarts not said exhausted"
grep -q 'waiting 1 s before the next$' "$tmp/err" && grep -q 'waiting 2 s before the next$' "$tmp/err" || bad "storm: no backoff"
[ "$(grep -c '^weftrun: attempt [1-3] of 3: ' "$tmp/err")" -eq 3 ] || bad "storm: not 3 attempts"
[ "$(elapsed "$t0" "$t1")" -ge 3 ] || bad "storm: ended in $(elapsed "$t0" "$t1") s, faster than its backoffs"
[ $fail -eq 0 ] || cat "$tmp/err"

# 4. weftrun SIGKILLed while it waits for --min-hosts 4 (hosts from a file an operator
#    edits; vnode1 killed is left out): nothing left behind on any vnode
sed 's/slots=[0-9]*/slots=1/' "$hostfile" >"$tmp/hosts"
rm -f "$ck"/*
(
  i=0
  while [ "$(ls "$ck" | grep -c '^attempt0')" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  "$vc" --prefix "$prefix" kill vnode1 >/dev/null 2>&1
) &
killer=$!
vrun --restarts 2 --min-hosts 4 --restart-wait 60 --host-discovery "cat $tmp/hosts" \
  --checkpoint-dir "$ck" "$prog" >"$tmp/out" 2>"$tmp/err" &
i=0
while ! grep -q 'waiting up to 60 s for more' "$tmp/err" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
wait $killer || true
grep -q '^weftrun: 3 hosts available, --min-hosts is 4; waiting up to 60 s for more (--restart-wait)$' "$tmp/err" ||
  { bad "no wait for --min-hosts"; cat "$tmp/err"; }
pkill -KILL -f "^$weftrun .*$uniq" || bad "no weftrun to kill"
wait || true
nothing_left || fail=1
exit $fail
