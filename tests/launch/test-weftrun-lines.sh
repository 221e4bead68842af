#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ranks' output in whole lines (issue 30), on this host: 4 print-heavy ranks
# writing 10,000 numbered lines each (and every tenth to stderr), of mixed sizes,
# in pieces cut anywhere: no line glued to another rank's, none missing, each
# rank's order kept, lines longer than weft's bound cut and marked, with and
# without --tag-output (every tagged line carries its own rank and stream), where
# plain mpirun glues hundreds; --tag-output loses nothing on short lines (mpirun's
# own drops most of 100,000 one-letter lines); --timestamp-output stamps lines;
# --output-filename keeps each rank's lines, tagged as mpirun's files; a partial
# last line comes out at the end, a prompt without a newline comes out while the
# program waits, stdin still reaches rank 0 and the program's stdout is still a
# terminal as under mpirun; weftrun | head ends the job.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
py=/usr/bin/python3
lines="$WEFT_TOPDIR/tests/launch/weftrun-lines.py"
wr() { timeout 120 "$weftrun" --oversubscribe --bind-to none "$@"; }

# the load: 0 glued, with and without --tag-output
for tag in "" --tag-output; do
  wr -np 4 $tag $py "$lines" load 10000 >"$tmp/out" 2>"$tmp/err" || fail_run "weftrun $tag: exit $?" "$tmp/err"
  cat "$tmp/out" "$tmp/err" | $py "$lines" count 4 10000 ${tag:+tag} >"$tmp/count" ||
    fail_run "weftrun $tag: $(cat "$tmp/count")" "$tmp/count"
  echo "ok 4 ranks x 10,000 lines${tag:+ with $tag}: $(cat "$tmp/count")"
done
# plain mpirun on the same load, for the record (not a verdict: it may be lucky)
timeout 120 "$MPIRUN" --oversubscribe --bind-to none -np 4 $py "$lines" load 10000 >"$tmp/out" 2>"$tmp/err" || :
echo "# plain mpirun: $(cat "$tmp/out" "$tmp/err" | $py "$lines" count 4 10000 2>/dev/null || :)"

# short lines: mpirun's --tag-output drops output when a piece holds many lines
n=$(wr -np 1 --tag-output sh -c 'yes a | head -n 100000' | grep -c '^\[[0-9]*,0\]<stdout>:a$' || :)
[ "$n" = 100000 ] || fail "--tag-output: $n of 100,000 short lines"
echo "ok --tag-output: 100,000 short lines, all tagged"

# --timestamp-output: ctime's words, then the stream
wr -np 2 --timestamp-output sh -c 'echo out; echo err >&2' >"$tmp/out" 2>"$tmp/err"
grep -qE '^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}<stdout>:out$' "$tmp/out" &&
  grep -qE '^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}<stderr>:err$' "$tmp/err" ||
  fail_run "--timestamp-output" "$tmp/out"
echo "ok --timestamp-output"

# --output-filename: each rank's own lines, whole, in its order, tagged as asked
wr -np 2 --tag-output --output-filename "$tmp/of" $py "$lines" load 2000 >/dev/null 2>&1 ||
  fail "--output-filename: weftrun exited $?"
for r in 0 1; do
  f="$tmp/of/1/rank.$r"
  cat "$f/stdout" "$f/stderr" | $py "$lines" count 2 2000 tag rank=$r >"$tmp/count" 2>&1 ||
    fail_run "--output-filename, rank $r: $(tail -n 1 "$tmp/count")" "$tmp/count"
  grep -q "^\[[0-9]*,$r\]<stdout>:R$r-O01999-" "$f/stdout" || fail "--output-filename: rank $r's last line"
done
echo "ok --output-filename: each rank's lines in DIR/1/rank.R, tagged"

# a partial last line, as it is, at the end
out=$(wr -np 1 sh -c 'echo first; printf "no end"')
[ "$out" = "first
no end" ] || fail "partial last line: '$out'"
echo "ok a partial last line at the end"

# a prompt without a newline comes out while the program waits for an answer (a file
# the test makes once it has seen the prompt; 30 s at most)
cat >"$tmp/prompt.py" <<'EOP'
import os, subprocess, sys, time
flag = sys.argv[1]
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE)
got, t0 = b"", time.time()
while b"answer? " not in got and time.time() - t0 < 30:
    d = os.read(p.stdout.fileno(), 100)
    if not d:
        break
    got += d
open(flag, "w").close()
rest = p.stdout.read()
p.wait()
print("seen: %r, then %r" % (got, rest))
sys.exit(0 if got.endswith(b"answer? ") and rest == b"thanks\n" else 1)
EOP
$py "$tmp/prompt.py" "$tmp/flag" timeout 60 "$weftrun" -np 1 sh -c \
  "printf 'answer? '; i=0; while [ ! -e '$tmp/flag' ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done; echo thanks" \
  >"$tmp/prompt" 2>&1 || fail_run "a prompt without its newline" "$tmp/prompt"
echo "ok a prompt without a newline comes out while the program waits"

# stdin reaches rank 0; the program's stdout is a terminal as under mpirun, stderr not
[ "$(echo 42 | wr -np 1 sh -c 'read x; echo got $x')" = "got 42" ] || fail "stdin"
[ "$(wr -np 1 sh -c '[ -t 1 ] && echo tty; [ -t 2 ] || echo pipe')" = "tty
pipe" ] || fail "the program's stdout is not a terminal"
echo "ok stdin; stdout a terminal, stderr a pipe"

# a reader that goes (weftrun | head) ends the job, as mpirun's SIGPIPE does: 141
t0=$(now)
{ rc=0; timeout 60 "$weftrun" -np 2 --oversubscribe --bind-to none \
    sh -c 'yes | head -c 400000000' 2>"$tmp/err" || rc=$?; echo $rc >"$tmp/rc"; } | head -n 1 >/dev/null
t1=$(now)
[ "$(cat "$tmp/rc")" = 141 ] || fail_run "weftrun | head: exit $(cat "$tmp/rc")" "$tmp/err"
[ "$(elapsed "$t0" "$t1")" -lt 30 ] || fail "weftrun | head: $(elapsed "$t0" "$t1") s"
echo "ok weftrun | head: the job ended (exit 141) in $(elapsed "$t0" "$t1") s"
nothing_left
