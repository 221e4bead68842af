#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --monitor's live line on a terminal (issue 30): weftrun runs on a
# pseudo-terminal, its ranks printing a line every 0.2 s while the line is
# redrawn every 0.5 s; what the terminal shows in the end (the bytes played on a
# small model of one: \r, erase to the end of the line, \n) has every rank's
# line whole, none with the live line's text before or after it (never
# "...B/srank 0 done"); the live line was drawn; a prompt without its newline
# is not drawn over while the program waits for its answer.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
py=/usr/bin/python3
cat >"$tmp/term.py" <<'EOP'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
raw, t0 = b"", time.time()
while time.time() - t0 < 100:
    r, _, _ = select.select([fd], [], [], 1)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        raw += d
_, status = os.waitpid(pid, 0)
# the terminal: lines of cells; \r to the first column, ESC[K erases to the end
screen, cur, col = [], [], 0
text = raw.decode(errors="replace").replace("\r\n", "\n")
i = 0
while i < len(text):
    c = text[i]
    if text.startswith("\033[K", i):
        del cur[col:]
        i += 3
        continue
    if c == "\r":
        col = 0
    elif c == "\n":
        screen.append("".join(cur))
        cur, col = [], 0
    else:
        if col < len(cur):
            cur[col] = c
        else:
            cur.append(c)
        col += 1
    i += 1
if cur:
    screen.append("".join(cur))
sys.stdout.write("\n".join(screen) + "\n")
sys.stderr.write("raw: %d bytes, %d live lines drawn\n" % (len(raw), raw.count(b"\r\033[Kweftrun: ")))
sys.exit(os.waitstatus_to_exitcode(status))
EOP
cat >"$tmp/$uniq-job" <<'EOS'
#!/bin/sh
i=0
while [ $i -lt 20 ]; do echo "rank $OMPI_COMM_WORLD_RANK done $i"; i=$((i + 1)); sleep 0.2; done
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
  sleep 0.5; printf 'answer? '; sleep 2.5; echo ok
fi
EOS
chmod +x "$tmp/$uniq-job"
rc=0
$py "$tmp/term.py" timeout 90 "$weftrun" -np 2 --oversubscribe --bind-to none --monitor=0.5 \
  "$tmp/$uniq-job" >"$tmp/screen" 2>"$tmp/raw" || rc=$?
[ $rc = 0 ] || fail_run "weftrun --monitor on a terminal: exit $rc" "$tmp/screen"
cat "$tmp/raw"
grep -q ' [1-9][0-9]* live lines drawn' "$tmp/raw" || fail_run "no live line was drawn" "$tmp/screen"
# every rank's line whole, each on a line of its own
for r in 0 1; do
  n=$(grep -c "^rank $r done [0-9]*\$" "$tmp/screen" || :)
  [ "$n" = 20 ] || fail_run "rank $r: $n of its 20 lines whole on the screen" "$tmp/screen"
done
! grep -q 'weftrun: .*rank [01] done\|rank [01] done.*weftrun: ' "$tmp/screen" ||
  fail_run "the live line glued to a rank's line" "$tmp/screen"
echo "ok every rank's line whole on the terminal, the live line wiped first"
grep -q '^answer? ok$' "$tmp/screen" || fail_run "the prompt was drawn over" "$tmp/screen"
echo "ok a prompt without its newline not drawn over"
nothing_left
