#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/gpu/run.sh cut off, as the device tool cuts off a command that runs
# past its limit, leaves what it did in its output folder ($OUT): the summary
# with one line per step that ended, the log with every step begun and the
# output of the step it was in. run.sh runs here as a dry run on the CUDA/NCCL
# stand-in (WEFT_GPU_DRY_RUN=standin), with this build as its carried folder,
# and is killed three times:
#   1. SIGKILL right after a step ended (rt-1's result is in the summary);
#   2. SIGKILL in the middle of a step (rt-2-one-gpu's ranks have printed);
#   3. SIGTERM in the middle of a step: it stops that step's command, says so,
#      and ends with its last line within seconds.
# Nothing it started may be left running. Takes 20 to 30 s.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/gpu/standin-lib.sh"
command -v setsid >/dev/null 2>&1 || skip "no setsid here (util-linux)"
# run.sh takes mpirun from PATH, and its budget from WEFT_GPU_BUDGET (default).
PATH=$(dirname "$(command -v "$MPIRUN")"):$PATH
export PATH
unset WEFT_GPU_BUDGET WEFT_GPU_DRY_TOPOLOGY
# run.sh line-buffers programs with stdbuf, which preloads libstdbuf.so ahead of
# AddressSanitizer's runtime in the sanitizer build: tell ASan that is fine.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export ASAN_OPTIONS

# This build as run.sh's carried folder: configure.txt and bin/ (the steps
# killed here need test-rt-device-faults and test-rt-gpu).
carry=$tmp/carry
mkdir -p "$carry/bin"
grep '^#define WEFT_' "$WEFT_BUILDDIR/config.h" >"$carry/configure.txt"
for p in tests/gpu/test-rt-gpu tests/gpu/test-rt-device-faults; do
  [ -x "$WEFT_BUILDDIR/$p" ] || skip "$p is not built"
  ln -s "$WEFT_BUILDDIR/$p" "$carry/bin/"
done

# start NAME: run.sh in a session of its own, output in $tmp/NAME; its pid
# (and session id) in $pid.
pid=
start()
{
  out=$tmp/$1
  rm -f "$tmp/pid"
  OUT=$out TMPDIR=$tmp WEFT_GPU_DRY_RUN=standin setsid sh -c 'echo $$ >"$0"; exec sh "$1" "$2"' \
    "$tmp/pid" "$WEFT_TOPDIR/tests/gpu/run.sh" "$carry" >"$tmp/$1.out" 2>&1 &
  _i=0
  until [ -s "$tmp/pid" ]; do
    _i=$((_i + 1))
    [ $_i -le 100 ] || fail "run.sh did not start within 10 s"
    sleep 0.1
  done
  pid=$(cat "$tmp/pid")
}

# left: the processes of run.sh's session.
left() { ps -e -o pid= -o sid= | awk -v s="$pid" '$2 == s { print $1 }'; }

# clean: kills what is left of run.sh's session, within 10 s.
clean()
{
  [ -n "$pid" ] || return 0
  _i=0
  while [ -n "$(left)" ]; do
    # shellcheck disable=SC2046
    kill -KILL $(left) 2>/dev/null || true
    _i=$((_i + 1))
    [ $_i -le 100 ] || { echo "FAIL: processes of run.sh left running:"; ps -s "$pid" -o pid,args; return 1; }
    sleep 0.1
  done
  pid=
}
at_exit clean

# wait_for FILE PATTERN: until a line of FILE matches PATTERN (grep -E), 90 s at most.
wait_for()
{
  _i=0
  until grep -Eq "$2" "$1" 2>/dev/null; do
    _i=$((_i + 1))
    if [ $_i -gt 900 ]; then
      cat "$tmp/$run.out"
      fail "$run: no line '$2' in $(basename "$1") within 90 s"
    fi
    sleep 0.1
  done
}

# has FILE PATTERN: FILE has a line matching PATTERN, else the test fails.
has()
{
  grep -Eq "$2" "$1" || { cat "$1"; fail "$run: $(basename "$1") has no line '$2'"; }
}
hasnt()
{
  ! grep -Eq "$2" "$1" || { cat "$1"; fail "$run: $(basename "$1") has a line '$2'"; }
}

# 1. SIGKILL at a step's end (whether the step passed or not is not this
# test's business: test-rt-device.sh has the device tests).
run=boundary
start $run
wait_for "$out/gpu-summary.txt" '^gpu: [a-z]+: rt-1: '
kill -KILL "$pid"
clean
has "$out/gpu-summary.txt" '^gpu: dry: configure: '
has "$out/gpu-summary.txt" '^gpu: dry: mpi: '
hasnt "$out/gpu-summary.txt" ' passed, [0-9]+ failed'
has "$out/gpu-log.txt" '^==== rt-1: started'
has "$out/gpu-log.txt" '^# .*/test-rt-gpu \(limit [0-9]+ s\)$'
awk '/^==== rt-1: / { s = 1 } s && /^# exit [0-9]+ after [0-9]+ s/ { e = 1 }
     e && /^gpu: [a-z]+: rt-1: / { r = 1 } END { exit !r }' "$out/gpu-log.txt" ||
  { cat "$out/gpu-log.txt"; fail "$run: gpu-log.txt has not rt-1's header, its command's end and its result, in that order"; }
[ -f "$out/gpu-figures.txt" ] || fail "$run: no gpu-figures.txt"
echo "ok: killed at the end of rt-1: the summary and the log hold configure, mpi and rt-1 ($(grep '^gpu: [a-z]*: rt-1: ' "$out/gpu-summary.txt" | cut -c1-60))"

# 2. SIGKILL in the middle of a step, once its ranks have printed.
run=middle
start $run
wait_for "$out/gpu-log.txt" '^==== rt-2-one-gpu: started'
wait_for "$out/gpu-log.txt" '^one-gpu: rank 1: NCCL_HOSTID=weft-gpu-run-1 '
kill -KILL "$pid"
clean
has "$out/gpu-summary.txt" '^gpu: [a-z]+: rt-1: '
hasnt "$out/gpu-summary.txt" 'rt-2-one-gpu'
hasnt "$out/gpu-summary.txt" ' passed, [0-9]+ failed'
has "$out/gpu-log.txt" '^# env CUDA_VISIBLE_DEVICES=0 .* -np 2 .*/test-rt-gpu \(limit [0-9]+ s\)$'
has "$out/gpu-log.txt" '^one-gpu: rank 0: NCCL_HOSTID=weft-gpu-run-0 '
echo "ok: killed in rt-2-one-gpu: the summary holds rt-1, the log rt-2-one-gpu's command and its ranks' first lines"

# 3. SIGTERM in the middle of a step: run.sh ends it and itself.
run=term
start $run
wait_for "$out/gpu-log.txt" '^one-gpu: rank 1: NCCL_HOSTID=weft-gpu-run-1 '
t0=$(now)
kill -TERM "$pid"
_i=0
while kill -0 "$pid" 2>/dev/null; do
  _i=$((_i + 1))
  [ $_i -le 150 ] || { cat "$tmp/$run.out"; fail "$run: run.sh still runs 15 s after SIGTERM"; }
  sleep 0.1
done
t1=$(now)
clean
has "$out/gpu-summary.txt" '^gpu: fail: rt-2-one-gpu: stopped by SIGTERM at [0-9]+ s$'
has "$out/gpu-summary.txt" '^gpu: 0 passed, [1-9][0-9]* failed, .*in [0-9]+ s of a 420 s budget \(dry run'
tar tzf "$out/gpu-logs.tar.gz" >/dev/null || fail "$run: no gpu-logs.tar.gz"
echo "ok: SIGTERM in rt-2-one-gpu: the step failed, the last line written, ended in $(elapsed "$t0" "$t1") s"
echo "PASS: run.sh killed at a step's end and in a step leaves its summary and log in \$OUT"
