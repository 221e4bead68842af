#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --restarts on this host (weftrun(1) RESTARTS): the policy --dry-run prints;
# the variables every rank is given without --restarts (count 0, max 0, a checkpoint
# directory that exists while the job runs and is gone after); a job that fails once
# under --restart-on any and resumes (WEFT_PREV_WORLD_SIZE, the first attempt's marker
# in the same WEFT_CHECKPOINT_DIR); each attempt's --monitor-out timeline; a restart storm bounded by the count, with its
# backoffs; a discovery command that hangs or prints garbage refused within its
# deadline; SIGTERM while weftrun waits for --min-hosts: exit 143 at once, nothing left.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { timeout 60 "$weftrun" -q --oversubscribe "$@"; }

# the policy, at --dry-run
"$weftrun" --dry-run --restarts 2 --min-hosts 1 -np 1 true >"$tmp/out" 2>"$tmp/err" || bad "--dry-run --restarts failed"
grep -q '^# restarts: up to 2 whole-job restarts after a lost host (75) or a preemption (79)$' "$tmp/out" ||
  bad "--dry-run does not print the policy"

# without --restarts: count 0, max 0, a checkpoint directory
run -np 2 sh -c 'echo "V $WEFT_RESTART_COUNT $WEFT_MAX_RESTARTS $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS ${WEFT_PREV_WORLD_SIZE:-none}"; [ -d "$WEFT_CHECKPOINT_DIR" ] && echo "D $WEFT_CHECKPOINT_DIR"' \
  >"$tmp/out" 2>"$tmp/err" || bad "a plain job failed"
[ "$(grep -c '^V 0 0 0 0 none$' "$tmp/out")" -eq 2 ] || { bad "the variables without --restarts"; cat "$tmp/out"; }
d=$(sed -n 's/^D //p' "$tmp/out" | head -n 1)
[ -n "$d" ] || bad "no WEFT_CHECKPOINT_DIR directory during the job"
[ -z "$d" ] || [ ! -e "$d" ] || bad "the default WEFT_CHECKPOINT_DIR $d outlived weftrun"

# fails once, then resumes with what the first attempt left
ck=$tmp/ck
prog='touch "$WEFT_CHECKPOINT_DIR/a$WEFT_RESTART_COUNT.r$RANK"; echo "A $WEFT_RESTART_COUNT/$WEFT_MAX_RESTARTS $TORCHELASTIC_RESTART_COUNT ${WEFT_PREV_WORLD_SIZE:-none} $(ls "$WEFT_CHECKPOINT_DIR" | tr "\n" " ")"; [ "$WEFT_RESTART_COUNT" != 0 ] || exit 3'
rc=0
run --restarts 1 --restart-on any --checkpoint-dir "$ck" -np 2 sh -c "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] || bad "fail once, resume: exit $rc"
[ "$(grep -c '^A 1/1 1 2 a0.r0 a0.r1 ' "$tmp/out")" -eq 2 ] || { bad "the restart's ranks"; cat "$tmp/out"; }
grep -q '^weftrun: restart 1 of 1: the job failed (exit 3); running again on 1 host ([^)]*), world size 2; the job was down [0-9.]* s$' "$tmp/err" ||
  { bad "the restart line"; cat "$tmp/err"; }

# --monitor-out: one timeline for the job, on one clock: the first attempt's records,
# the restart's line (the gap), the restart's records marked attempt 1 and later; one
# picture of both, the gap shaded
rc=0
run --restarts 1 --restart-on any --monitor=0.2 --monitor-out "$tmp/mon" -np 1 \
  sh -c 'sleep 1.5; [ "$WEFT_RESTART_COUNT" = 1 ]' >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] || [ -e "$tmp/mon/restart-1" ] || ! awk '
    /"restart":1,/ { gap = NR; match($0, /"down_since":[0-9.]*/); from = substr($0, RSTART + 13, RLENGTH - 13)
                     match($0, /"t":[0-9.]*/); to = substr($0, RSTART + 4, RLENGTH - 4); next }
    /"rank":0,/ { match($0, /"t":[0-9.]*/); t = substr($0, RSTART + 4, RLENGTH - 4)
                  if (/"attempt":1,/) { if (!gap || t < to) bad = 1; after++ } else { if (gap) bad = 1; before++ } }
    END { exit !(gap && before && after && !bad && from <= to) }' "$tmp/mon/timeline.jsonl" ||
   ! grep -q '<title>restart 1: the job failed (exit 1); the job was down' "$tmp/mon/timeline.html"; then
  bad "--monitor-out with a restart: exit $rc"; cat "$tmp/err" "$tmp/mon/timeline.jsonl"
fi

# a storm: 3 attempts, backoffs of 1 and 2 s, the last attempt's status
t0=$(now)
rc=0
run --restarts 2 --restart-on any -np 1 sh -c 'exit 5' >"$tmp/out" 2>"$tmp/err" || rc=$?
t1=$(now)
[ $rc -eq 5 ] || bad "storm: exit $rc"
grep -q '^weftrun: all 2 restarts used; exit 5, the last attempt.s$' "$tmp/err" || bad "storm: not said exhausted"
grep -q 'waiting 2 s before the next$' "$tmp/err" || bad "storm: no backoff"
[ "$(elapsed "$t0" "$t1")" -ge 3 ] || bad "storm: faster than its backoffs"
[ "$(grep -c '^weftrun: attempt [123] of 3: 1 rank on 1 host, ' "$tmp/err")" -eq 3 ] || { bad "storm: the closing list"; cat "$tmp/err"; }

# discovery that hangs, or prints garbage: one line, within the deadline
t0=$(now)
rc=0
run --host-discovery "$tmp/$uniq-sleep 50" --host-discovery-timeout 1 true 2>"$tmp/err" || rc=$?
t1=$(now)
[ $rc -eq 65 ] && [ "$(elapsed "$t0" "$t1")" -le 4 ] || bad "a hanging discovery: exit $rc after $(elapsed "$t0" "$t1") s"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'did not end within 1 s' "$tmp/err" || { bad "a hanging discovery's line"; cat "$tmp/err"; }
rc=0
run --host-discovery 'echo "NAME ZONE STATUS"' true 2>"$tmp/err" || rc=$?
[ $rc -eq 65 ] && grep -q "printed what is not a host list: output:1: " "$tmp/err" || { bad "garbage from discovery: exit $rc"; cat "$tmp/err"; }
rc=0
run --host-discovery "echo $(hostname) slots=1" -np 1 sh -c 'echo ok' >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] && grep -q '^ok$' "$tmp/out" || { bad "discovery of this host: exit $rc"; cat "$tmp/err"; }

# discovery that fails while weftrun waits to restart (a cloud API down for a moment):
# said once, asked again, the restart goes on when it answers
touch "$tmp/api-up"
rc=0
(
  i=0
  while [ -e "$tmp/api-up" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 3.5
  touch "$tmp/api-up"
) &
run --restarts 1 --restart-on any --restart-wait 30 \
  --host-discovery "test -e $tmp/api-up || exit 3; echo $(hostname) slots=1" -np 1 \
  sh -c "[ \"\$WEFT_RESTART_COUNT\" = 1 ] && echo resumed || { rm $tmp/api-up; exit 4; }" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
wait
[ $rc -eq 0 ] && grep -q '^resumed$' "$tmp/out" || { bad "discovery down for a moment: exit $rc"; cat "$tmp/err"; }
[ "$(grep -c 'failed (exit 3)' "$tmp/err")" -eq 1 ] && grep -q '^weftrun: asking --host-discovery again every 2 s' "$tmp/err" ||
  { bad "discovery down for a moment: not said once"; cat "$tmp/err"; }

# SIGTERM during the wait for --min-hosts 2 (this host alone): at once, nothing left
run --restarts 1 --restart-on any --min-hosts 2 --restart-wait 50 -np 1 sh -c "exit 3; $uniq" 2>"$tmp/err" &
job=$!
i=0
while ! grep -q 'waiting up to 50 s for more' "$tmp/err" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
t0=$(now)
pkill -TERM -f "^$weftrun .*$uniq" || bad "no weftrun waiting"
rc=0
wait $job || rc=$?
t1=$(now)
[ $rc -eq 143 ] && [ "$(elapsed "$t0" "$t1")" -le 1 ] || bad "SIGTERM in the wait: exit $rc after $(elapsed "$t0" "$t1") s"
grep -q '^weftrun: got signal 15 while waiting to restart; nothing is running (exit 143)$' "$tmp/err" || { bad "SIGTERM's line"; cat "$tmp/err"; }
nothing_left || fail=1
exit $fail
