#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun's errors before launch: each one line saying what is wrong and what
# to do, with its documented exit code (weftrun(1), EXIT STATUS).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
no_host_defaults
fail=0

expect() { # code, pattern, weftrun args...
  code=$1 pattern=$2
  shift 2
  set +e
  timeout 30 "$weftrun" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  if [ "$rc" != "$code" ] || ! grep -q -e "$pattern" "$tmp/err"; then
    echo "FAIL: weftrun $*: exit $rc (want $code), stderr:"
    cat "$tmp/err"
    echo "(wanted a line matching '$pattern')"
    fail=1
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    echo "FAIL: weftrun $*: more than one line:"
    cat "$tmp/err"
    fail=1
  else
    echo "ok ($rc): $(cat "$tmp/err")"
  fi
}

a3="$topos/a3-highgpu-8g.xml"
expect 2 "unknown option '--bind-too'; did you mean '--bind-to'" --bind-too core ./a.out
expect 2 "unknown option '-hostfil'; did you mean '--hostfile'" -hostfil h ./a.out
expect 2 "no program to run" -np 2
expect 2 "'-np' needs an argument" -np
expect 2 "expected a whole number" -np two ./a.out
expect 2 "'abc': expected a whole number from 0 to 86400" --launch-timeout abc ./a.out
expect 2 "'-1': expected a whole number from 0 to 86400" --launch-timeout -1 ./a.out
expect 2 "'90000': expected a whole number from 0 to 86400" --launch-timeout 90000 ./a.out
expect 2 "'--launch-timeout' needs an argument" --launch-timeout
expect 2 "map" --dry-run --map-by gpux --topology "$a3"
# -x takes a variable's name: the program or an option after it is a usage error (issue 31)
expect 2 "-x '/bin/true': not a variable name; write -x VAR or -x VAR=VALUE" -x /bin/true
expect 2 "-x '-np': not a variable name (an option? -x takes the name of a variable)" -x -np 2 ./a.out
expect 2 "-x '1A=2': not a variable name" -x 1A=2 ./a.out
# a dry run refuses what the launch refuses (issue 31): '--' and no program after it, a
# TMPDIR where the job's private directory cannot be made
expect 2 "no program after '--'; write 'weftrun \[options\] -- PROGRAM \[ARGS\]'" --dry-run --prefix , --prefix , --
expect 2 "no program after '--'" --prefix , --prefix , --
(export TMPDIR="$tmp/no,such"
 expect 70 "cannot make a private directory $tmp/no,such/weft-[0-9]*-.*; check TMPDIR" --dry-run -H a --topology "$a3" ./a.out
 expect 70 "cannot make a private directory .*; check TMPDIR" --dry-run ./a.out
 exit $fail) || fail=1
# and up to 4096 of them (mpirun has no bound; 256 was weftrun's)
xs=$(i=0; while [ $i -lt 4096 ]; do printf -- '-x V%d=%d ' $i $i; i=$((i + 1)); done)
# shellcheck disable=SC2086
"$weftrun" --dry-run -H a --topology "$a3" $xs ./a.out >"$tmp/out" 2>&1 &&
  grep -q 'V4095=4095' "$tmp/out" || { echo "FAIL: 4096 -x:"; tail -3 "$tmp/out"; fail=1; }
# shellcheck disable=SC2086
expect 2 "-x given more than 4096 times" --dry-run -H a --topology "$a3" $xs -x W ./a.out
printf 'a slots=2\nb slots=x\n' >"$tmp/hosts"
expect 65 "hosts:2" --dry-run --hostfile "$tmp/hosts" --topology "$a3"
expect 65 "a;b" --dry-run -H 'a;b' --topology "$a3"
expect 66 "nosuch" --dry-run --hostfile "$tmp/nosuch" --topology "$a3"
expect 66 "nosuch.xml" --dry-run -H a --topology "$tmp/nosuch.xml"
expect 67 "oversubscribe" --dry-run -np 17 -H a,b --topology "$a3"
expect 68 "'c' is not one of the job's hosts" --dry-run -H a,b --topology "c=$a3"
# this host's names for the job's host that is this one (issue 31): localhost, its name,
# its loopback address, whichever the job was given
for n in localhost "$(hostname)" 127.0.0.1; do
  for hosts in "" "-H localhost" "-H $(hostname)"; do
    # shellcheck disable=SC2086
    "$weftrun" --dry-run $hosts --topology "$n=$a3" ./a.out >"$tmp/out" 2>&1 &&
      grep -q "^# host .*, topology $a3\$" "$tmp/out" ||
      { echo "FAIL: --topology $n=FILE $hosts:"; cat "$tmp/out"; fail=1; }
  done
done
expect 69 "has no GPU" --dry-run -H a --map-by gpu --topology "$topos/n2-standard-16.xml"
# (as root, and only where mpirun is: without it weftrun says that first)
if [ "$(id -u)" = 0 ] && command -v "$MPIRUN" >/dev/null 2>&1; then
  (unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
   expect 70 "running as root, which mpirun refuses; add --allow-run-as-root" -np 1 true
   exit $fail) || fail=1
fi
expect 2 "no help topic 'foo'; the topics are placement" --help foo
# Open MPI options weftrun does not support: named, said so, what to use instead
expect 2 "'-rf' is an Open MPI option that weftrun does not support; use --map-by" -rf rf ./a.out
expect 2 "'--app' is an Open MPI option that weftrun does not support; write the programs" \
  --app f
expect 2 "'--do-not-launch' is an Open MPI option that weftrun does not support; use weftrun --dry-run" \
  --do-not-launch ./a.out
# a typo next to an option of the opposite meaning is not "corrected" into it
set +e
"$weftrun" --no-oversubscribe ./a.out 2>"$tmp/err"
set -e
grep -q "did you mean '--oversubscribe'" "$tmp/err" &&
  { echo "FAIL: --no-oversubscribe suggested --oversubscribe"; fail=1; } || echo "ok: no opposite suggestion"
# what Open MPI 4.1 cannot launch on, or refuses in a hostfile (measured), is refused first
expect 65 "IPv6 address, which Open MPI 4.1 cannot launch on" --dry-run -H ::1 ./a.out
printf 'a slots=2\na slots=2\n' >"$tmp/dup"
expect 65 "dup:2: host 'a' is already listed" --dry-run --hostfile "$tmp/dup" --topology "$a3" ./a.out
# hosts that do not resolve: a launch stops (exit 68) before anything starts, and so does a
# dry run that would have to probe them; one planned from a topology file says so
expect 68 "cannot resolve host 'no-such-host.invalid'" -H no-such-host.invalid ./a.out
expect 68 "cannot resolve host 'no-such-host.invalid'" --dry-run -H no-such-host.invalid ./a.out
"$weftrun" --dry-run -H no-such-host.invalid --topology "$a3" ./a.out >"$tmp/out" 2>&1 &&
  grep -q "^# host no-such-host: the name does not resolve (.*); a launch stops there (exit 68)$" \
    "$tmp/out" || { echo "FAIL: dry run of an unknown host with a topology file:"; cat "$tmp/out"; fail=1; }
# --dry-run shows the engine command: exact counts per host in a hostfile of the job's
# private directory, Open MPI's binding off, every rank through weft-rank with the
# layout, the program's own options after "--"; -v shows the hostfile
"$weftrun" --dry-run -v -H a,b:3 -np 10 --topology "$a3" ./prog -np 2 >"$tmp/out" 2>&1 &&
  grep -q '^# command: .*mpirun -np 10 --hostfile [^ ]*/weft-[0-9]*-XXXXXX/hostfile --map-by slot --bind-to none .*weft-rank --layout 8,2 .* -- ./prog -np 2$' "$tmp/out" &&
  grep -q '^# hostfile: a slots=8$' "$tmp/out" && grep -q '^# hostfile: b slots=2$' "$tmp/out" ||
  { echo "FAIL: weftrun --dry-run command:"; cat "$tmp/out"; fail=1; }
# SIGTERM while the remote hosts are probed: the probe's mpirun ends with it, weftrun
# says so and exits 143, and its job directory is gone
cp "$(command -v sleep)" "$tmp/probe-sleep-$$"
printf '#!/bin/sh\nexec %s 30\n' "$tmp/probe-sleep-$$" >"$tmp/fake-mpirun"
chmod +x "$tmp/fake-mpirun"
mkdir "$tmp/t"
TMPDIR="$tmp/t" WEFT_MPIRUN="$tmp/fake-mpirun" timeout 30 "$weftrun" --dry-run -H 198.51.100.1,198.51.100.2 ./prog \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while ! pgrep -f "$tmp/probe-sleep-$$" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
sleep 0.2
if [ $rc != 143 ] || ! grep -q '^weftrun: got signal 15 while probing the hosts; nothing was started (exit 143)$' "$tmp/err" ||
   [ -n "$(ls -A "$tmp/t")" ] || pgrep -f "$tmp/probe-sleep-$$" >/dev/null; then
  echo "FAIL: SIGTERM during the probe: exit $rc, left in TMPDIR: $(ls -A "$tmp/t")"; cat "$tmp/err"
  pkill -KILL -f "$tmp/probe-sleep-$$" || true
  fail=1
else
  echo "ok (143): SIGTERM during the probe"
fi
# --version names weftrun and the Open MPI it runs
# and ends with weft's own bug-report line, not Open MPI's; without mpirun it says so
if command -v "$MPIRUN" >/dev/null 2>&1; then
  "$weftrun" --version >"$tmp/out" 2>&1 && grep -q '^weftrun (weft) ' "$tmp/out" &&
    grep -qi 'open mpi' "$tmp/out" && ! grep -q 'open-mpi.org' "$tmp/out" &&
    tail -n 2 "$tmp/out" | grep -q "^Report bugs in weftrun to weft's maintainers" ||
    { echo "FAIL: weftrun --version:"; cat "$tmp/out"; fail=1; }
else
  "$weftrun" --version >"$tmp/out" 2>&1 && grep -q '^weftrun (weft) ' "$tmp/out" &&
    grep -q '^mpirun: not found on PATH$' "$tmp/out" ||
    { echo "FAIL: weftrun --version without mpirun:"; cat "$tmp/out"; fail=1; }
fi
# the help topics exist and print
for t in placement environment exit-status; do
  "$weftrun" --help $t | grep -q . || { echo "FAIL: weftrun --help $t printed nothing"; fail=1; }
done
exit $fail
