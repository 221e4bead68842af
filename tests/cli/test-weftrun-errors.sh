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
expect 2 "map" --dry-run --map-by gpux --topology "$a3"
printf 'a slots=2\nb slots=x\n' >"$tmp/hosts"
expect 65 "hosts:2" --dry-run --hostfile "$tmp/hosts" --topology "$a3"
expect 65 "a;b" --dry-run -H 'a;b' --topology "$a3"
expect 66 "nosuch" --dry-run --hostfile "$tmp/nosuch" --topology "$a3"
expect 66 "nosuch.xml" --dry-run -H a --topology "$tmp/nosuch.xml"
expect 67 "oversubscribe" --dry-run -np 17 -H a,b --topology "$a3"
expect 68 "'c' is not one of the job's hosts" --dry-run -H a,b --topology "c=$a3"
expect 69 "has no GPU" --dry-run -H a --map-by gpu --topology "$topos/n2-standard-16.xml"
if [ "$(id -u)" = 0 ]; then
  (unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
   expect 70 "running as root, which mpirun refuses; add --allow-run-as-root" -np 1 true
   exit $fail) || fail=1
fi
expect 2 "no help topic 'foo'; the topics are placement" --help foo
# --dry-run shows the engine command: exact counts per host, Open MPI's binding off,
# every rank through weft-rank, the program's own options after "--"
"$weftrun" --dry-run -H a,b:3 -np 10 --topology "$a3" ./prog -np 2 >"$tmp/out" 2>&1 &&
  grep -q '^# command: .*mpirun -np 10 -H a:8,b:2 --map-by slot --bind-to none .*weft-rank --hosts a,b --counts 8,2 .* -- ./prog -np 2$' "$tmp/out" ||
  { echo "FAIL: weftrun --dry-run command:"; cat "$tmp/out"; fail=1; }
# --version names weftrun and the Open MPI it runs
"$weftrun" --version >"$tmp/out" 2>&1 && grep -q '^weftrun (weft) ' "$tmp/out" &&
  grep -qi 'open mpi' "$tmp/out" || { echo "FAIL: weftrun --version:"; cat "$tmp/out"; fail=1; }
# the help topics exist and print
for t in placement environment exit-status; do
  "$weftrun" --help $t | grep -q . || { echo "FAIL: weftrun --help $t printed nothing"; fail=1; }
done
exit $fail
