#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun under Open MPI 5: a Debian 13 root with Open MPI 5.0 (contrib/trixie-root,
# made once and cached in /var/cache/weft-trixie), weft built inside it, then
#   - weftrun finds that its mpirun is Open MPI 5 (and says so with --dry-run -v's plan);
#   - the issue's lines: --map-by ppr:1:package runs, --map-by ppr:2:socket binds each
#     rank to the package with no plan warning;
#   - the quick set of the drop-in corpus, here (local lines), under Open MPI 5's mpirun:
#     no silent difference, no broken line, no plan warning.
# Exit 77 without root, debootstrap or Debian's archive. The first run makes the root
# (minutes: the archive's speed); later ones reuse it and the build.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "not root: the root needs debootstrap, chroot and mounts"
command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is not installed (contrib/quickstart.sh installs it)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
[ -x "$WEFT_TOPDIR/configure" ] || skip "no configure in $WEFT_TOPDIR (run ./autogen.sh)"
root="$WEFT_TOPDIR/contrib/trixie-root"
rc=0
"$root" make >"$tmp/make.out" 2>&1 || rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$tmp/make.out")"
[ $rc -eq 0 ] || fail_run "making the Debian 13 root" "$tmp/make.out"
"$root" build >"$tmp/build.out" 2>&1 || fail_run "building weft in the Debian 13 root" "$tmp/build.out"

# which Open MPI, and the plan of the issue's line
"$root" run sh -c 'mpirun --version | head -1; src/weftrun/weftrun --dry-run -np 2 --map-by ppr:2:socket true' \
  >"$tmp/plan.out" 2>&1 || fail_run "weftrun --dry-run in the root" "$tmp/plan.out"
grep -q '(Open MPI) 5\.' "$tmp/plan.out" || fail_run "the root's mpirun is not Open MPI 5" "$tmp/plan.out"

# the issue's two lines, run: ppr:1:package runs, ppr:2:socket binds without a warning
"$root" run sh -c 'cd /tmp && /build/src/weftrun/weftrun --map-by ppr:1:package true &&
  /build/src/weftrun/weftrun -np 2 --map-by ppr:2:socket cat /proc/self/status' \
  >"$tmp/run.out" 2>&1 || fail_run "weftrun --map-by ppr:N:package|socket under Open MPI 5" "$tmp/run.out"
grep -q "report this" "$tmp/run.out" && fail_run "a plan warning under Open MPI 5" "$tmp/run.out"
[ "$(grep -c '^Cpus_allowed_list:' "$tmp/run.out")" -eq 2 ] ||
  fail_run "--map-by ppr:2:socket did not run 2 ranks" "$tmp/run.out"

# the quick set of the corpus, here
"$root" run env WEFT_TOPDIR=/weft WEFT_BUILDDIR=/build python3 /weft/tests/vcluster/dropin-compare.py \
  --quick --only local /weft/tests/vcluster/dropin-corpus.txt >"$tmp/corpus.out" 2>&1 ||
  fail_run "weftrun differs from Open MPI 5's mpirun" "$tmp/corpus.out"
cat "$tmp/corpus.out"
grep -Eq ': [1-9][0-9]* identical' "$tmp/corpus.out" || fail "no line compared"
